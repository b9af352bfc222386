#!/usr/bin/env bash
# Overload: what a burst of payments far beyond the sustainable rate does to
# a reference server with its admission limits (docs/operating.md,
# "Overload"). For SQLite, and for PostgreSQL when one is reachable:
#   1. the sustainable rate: complete payments (create + confirm with a saved
#      4242 card, an Idempotency-Key on every POST, bench/pay.lua) from
#      CONN connections for DUR;
#   2. the burst: the same from BURST connections for BURST_DUR, each
#      answered at once, admitted or shed;
# and prints for each: payments/s, the p99 of all answers (shed ones
# included), the answers that were not 2xx (wrk's count: the 429s), the
# shed count of keelpay_http_shed_total, and the server's RSS before and
# its peak (VmHWM). Extra flags for the server go in SERVER_FLAGS (for
# example "-limit-payments -1" to see the burst without a limit).
#
#   bash bench/overload.sh        # CONN=16 DUR=5s BURST=800 BURST_DUR=20s
#
# Needs wrk (apt-get install -y wrk), python3, curl; for PostgreSQL psql and
# KEELPAY_BENCH_POSTGRES or KEELPAY_TEST_POSTGRES. The test of the same
# burst with its checks (nothing answered 2xx lost, nothing charged twice)
# is TestOverloadSQLite / TestOverloadPostgreSQL in cmd/refserver.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
CONN=${CONN:-16}
DUR=${DUR:-5s}
BURST=${BURST:-800}
BURST_DUR=${BURST_DUR:-20s}
SERVER_FLAGS=${SERVER_FLAGS:-}
PG=${KEELPAY_BENCH_POSTGRES:-${KEELPAY_TEST_POSTGRES:-}}
work=$(mktemp -d)
schema=kp_overload_$$
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  wait 2>/dev/null || true
  [ -n "$PG" ] && psql -q "$PG" -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
ulimit -n 8192 2>/dev/null || true

go build -o "$work/refserver" ./cmd/refserver
go build -o "$work/receiver" ./bench/receiver
"$work/receiver" -addr 127.0.0.1:0 >"$work/receiver.out" 2>"$work/receiver.log" &
RCV=$(listening "$work/receiver.out")
post "$RCV/control/status" '{"status":204}' >/dev/null

kb() { awk -v f="$2:" '$1 == f {printf "%.0f", $2/1024}' /proc/$1/status; }

# run NAME PID URL: both phases against the server at URL.
run() {
  local name=$1 pid=$2 url=$3 sk card cur ws pi line idle
  read -r sk card cur ws pi <<<"$(setup "$url" "$name")"
  idle=$(kb "$pid" VmRSS)
  for phase in "sustainable $CONN $DUR" "burst $BURST $BURST_DUR"; do
    read -r label conns dur <<<"$phase"
    local shed0; shed0=$(curl -sf "$url/metrics" | awk '$1 == "keelpay_http_shed_total{class=\"payments\"}" {print $2}')
    wrk -t2 -c"$conns" -d"$dur" --timeout 30s --latency -s bench/pay.lua "$url" -- "$sk" "$card" "$cur" idem >"$work/wrk.txt" 2>&1
    local shed1; shed1=$(curl -sf "$url/metrics" | awk '$1 == "keelpay_http_shed_total{class=\"payments\"}" {print $2}')
    python3 - "$work/wrk.txt" "$name" "$label" "$conns" "$shed0" "$shed1" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
name, label, conns, shed0, shed1 = sys.argv[2:]
m = re.search(r"payments (\d+) failed (\d+) seconds ([\d.]+) p99_ms ([\d.]+)", t)
ok, failed, secs, p99 = int(m.group(1)), int(m.group(2)), float(m.group(3)), float(m.group(4))
reqs = int(re.search(r"(\d+) requests in", t).group(1))
non = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
non = int(non.group(1)) if non else 0
errs = re.search(r"Socket errors: (.*)", t)
shed = float(shed1 or 0) - float(shed0 or 0)
print(f"{name:9} {label:12} {conns:>4} conns: {ok/secs:7.0f} payments/s, {reqs/secs:7.0f} answers/s, p99 {p99:7.1f} ms, "
      f"non-2xx {non} ({100*non/max(reqs,1):.1f}%), shed {shed:.0f}" + (f", socket errors: {errs.group(1)}" if errs else ""))
PY
  done
  echo "$name      RSS before the load $idle MiB, peak (VmHWM) $(kb "$pid" VmHWM) MiB"
}

"$work/refserver" -addr 127.0.0.1:0 -db "$work/keelpay.db" $SERVER_FLAGS >"$work/sqlite.out" 2>/dev/null &
SQ_PID=$!
SQ=$(listening "$work/sqlite.out"); ready "$SQ/healthz"
run sqlite $SQ_PID "$SQ"
kill $SQ_PID; wait $SQ_PID 2>/dev/null || true

if [ -n "$PG" ]; then
  psql -q "$PG" -c "CREATE SCHEMA $schema" >/dev/null
  sep='?'; [[ $PG == *\?* ]] && sep='&'
  KEELPAY_ENCRYPTION_KEY=$("$work/refserver" -new-key) "$work/refserver" -addr 127.0.0.1:0 \
    -db "$PG${sep}search_path=$schema" -sandbox-db "$work/pg.sandbox.db" $SERVER_FLAGS >"$work/pg.out" 2>/dev/null &
  PG_PID=$!
  PGS=$(listening "$work/pg.out"); ready "$PGS/healthz"
  run postgres $PG_PID "$PGS"
else
  echo "postgres: skipped (set KEELPAY_BENCH_POSTGRES or KEELPAY_TEST_POSTGRES)"
fi
