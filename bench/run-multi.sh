#!/usr/bin/env bash
# Load benchmarks of reference servers on PostgreSQL, one and two of them on
# one database, next to one on SQLite, all in the same run:
#   - complete payments per second: create + confirm with a saved 4242 card,
#     the succeeded event committed with the outcome (bench/payments-stores.lua),
#     while the servers deliver every event to a receiver that verifies it;
#   - deliveries per second: a backlog of pending deliveries (every event of a
#     second payments run, whose first attempt the receiver refused) made due
#     at once by moving the sandbox clock 2 minutes on every server, owner
#     first, and delivered to the receiver: backlog / (last 2xx - clock move).
# Sixteen stores share the load: the dispatcher caps each store's deliveries
# in flight across all processes (events.PerStoreDefault), so with few stores
# the cap, not the servers, could set the pace. Two wrk processes, one thread and 25
# connections each, in every configuration: both against the one server, or
# one per server. Everything runs on this machine's cores, loopback only.
# Usage: bash bench/run-multi.sh   (needs wrk, python3, psql, a PostgreSQL
# server: KEELPAY_BENCH_POSTGRES, else KEELPAY_TEST_POSTGRES, else the local
# postgres://postgres:postgres@127.0.0.1:5432/test)
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${DUR:-10s}
BACKLOG_DUR=${BACKLOG_DUR:-10s}
PG=${KEELPAY_BENCH_POSTGRES:-${KEELPAY_TEST_POSTGRES:-postgres://postgres:postgres@127.0.0.1:5432/test?sslmode=disable}}
STORES=${STORES:-16}
work=$(mktemp -d)
schemas=()
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  wait 2>/dev/null || true
  for s in "${schemas[@]}"; do psql -q "$PG" -c "DROP SCHEMA IF EXISTS $s CASCADE" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/refserver" ./cmd/refserver
# Every server on one database needs the same encryption key.
KEELPAY_ENCRYPTION_KEY=$("$work/refserver" -new-key)
export KEELPAY_ENCRYPTION_KEY
go build -o "$work/receiver" ./bench/receiver
# listening FILE: the URL a process we started printed on stdout (every
# process listens on a port of its own choosing, so that nothing else on the
# machine can answer in its place).
listening() {
  for _ in $(seq 1 200); do
    url=$(grep -o -m1 'listening on http://[0-9.:]*' "$1" 2>/dev/null | cut -d' ' -f3) && [ -n "$url" ] && echo "$url" && return
    sleep 0.05
  done
  echo "no banner in $1" >&2; return 1
}
"$work/receiver" -addr 127.0.0.1:0 >"$work/receiver.out" 2>"$work/receiver.log" &
RCV=$(listening "$work/receiver.out")

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
post() { curl -sf -X POST "$1" -H 'Content-Type: application/json' "${@:3}" -d "$2"; }
ready() { for _ in $(seq 1 200); do curl -sf "$1/healthz" >/dev/null && return 0; sleep 0.05; done; echo "not ready: $1" >&2; return 1; }

# quiet waits until the receiver has had no request for 2 seconds.
quiet() {
  while :; do
    last=$(curl -sf "$RCV/control/stats" | json 'd["last_request"]')
    now=$(date +%s%N)
    [ $(( (now - last) / 1000000 )) -ge 2000 ] && return
    sleep 0.5
  done
}

# cpu prints the machine's CPU time so far and the idle part of it (ticks).
cpu() { awk '/^cpu /{print $2+$3+$4+$5+$6+$7+$8, $5+$6}' /proc/stat; }

# payments runs two wrk processes at once, against $1 and $2, for $3, and
# prints "<payments/s> <failed> <p99 ms> <CPU busy %>" over both.
payments() {
  local before
  before=$(cpu)
  wrk -t1 -c25 -d"$3" --latency -s bench/payments-stores.lua "$1" -- "$CUR" "${STORE_ARGS[@]}" >"$work/wrk1" &
  w1=$!
  wrk -t1 -c25 -d"$3" --latency -s bench/payments-stores.lua "$2" -- "$CUR" "${STORE_ARGS[@]}" >"$work/wrk2" &
  w2=$!
  wait $w1 $w2
  tail -n1 -q "$work/wrk1" "$work/wrk2" | python3 -c '
import sys
rows = [l.split() for l in sys.stdin]
ok = sum(int(r[1]) for r in rows); bad = sum(int(r[3]) for r in rows)
secs = max(float(r[5]) for r in rows); p99 = max(float(r[7]) for r in rows)
t0, i0, t1, i1 = (int(x) for x in sys.argv[1:])
print("%.0f %d %.1f %.0f" % (ok / secs, bad, p99, 100 * (1 - (i1 - i0) / (t1 - t0))))' $before $(cpu)
}

# config NAME DB SERVERS: one measurement of both figures.
config() {
  local name=$1 db=$2 n=$3
  local owner other second
  "$work/refserver" -addr 127.0.0.1:0 -db "$db" >"$work/$name-owner.out" 2>"$work/$name-owner.log" &
  local pids=($!)
  owner=$(listening "$work/$name-owner.out")
  ready $owner
  second=$owner
  if [ "$n" = 2 ]; then
    "$work/refserver" -addr 127.0.0.1:0 -db "$db" -sandbox-url $owner >"$work/$name-other.out" 2>"$work/$name-other.log" &
    pids+=($!)
    other=$(listening "$work/$name-other.out")
    ready $other
    second=$other
  fi
  post "$RCV/control/reset" '{}' >/dev/null
  post "$RCV/control/status" '{"status":204}' >/dev/null
  STORE_ARGS=()
  local secrets=() i
  for i in $(seq 1 $STORES); do
    local store sk pk cs css card
    store=$(post $owner/v1/setup "{\"client_id\":\"app_bench_${name//-/_}_$i\",\"client_secret\":\"secret_bench_${name//-/_}_$i\",\"webhook_url\":\"$RCV/hooks\"}")
    sk=$(echo "$store" | json 'd["secret_key"]'); pk=$(echo "$store" | json 'd["publishable_key"]')
    CUR=$(echo "$store" | json 'd["currency"]'); secrets+=("\"$(echo "$store" | json 'd["webhook_secret"]')\"")
    cs=$(post $owner/v1/card_sessions '{"customer":{"id":"cus_bench","name":"Bench Buyer","email":"bench@shop.example","phone":"+358401234567"},"page_origins":["http://localhost:9100"]}' -H "Authorization: Bearer $sk")
    css=$(echo "$cs" | json 'd["client_secret"]'); cs=$(echo "$cs" | json 'd["id"]')
    card=$(post $owner/v1/card_sessions/$cs/cards "{\"client_secret\":\"$css\",\"number\":\"4242424242424242\",\"exp_month\":12,\"exp_year\":2035,\"cvc\":\"123\"}" -H "Authorization: Bearer $pk" | json 'd["id"]')
    STORE_ARGS+=("$sk:$card")
  done
  post "$RCV/control/secrets" "[$(IFS=,; echo "${secrets[*]}")]" >/dev/null

  # Complete payments per second, deliveries accepted as they come.
  read -r pay failed p99 busy <<<"$(payments $owner $second "$DUR")"
  quiet

  # A backlog: the receiver refuses the first attempt of every event of a
  # shorter run; each is due again 1 minute later on the service clock.
  post "$RCV/control/reset" '{}' >/dev/null
  post "$RCV/control/status" '{"status":503}' >/dev/null
  payments $owner $second "$BACKLOG_DUR" >/dev/null
  quiet
  local backlog
  backlog=$(curl -sf "$RCV/control/stats" | json 'd["distinct_failed"]')
  post "$RCV/control/reset" '{}' >/dev/null
  post "$RCV/control/status" '{"status":204}' >/dev/null
  local t0 got st
  t0=$(date +%s%N)
  post $owner/sandbox/clock '{"advance_seconds":120}' >/dev/null
  [ "$n" = 2 ] && post $other/sandbox/clock '{"advance_seconds":120}' >/dev/null
  for _ in $(seq 1 1200); do
    st=$(curl -sf "$RCV/control/stats")
    got=$(echo "$st" | json 'd["distinct_ok"]')
    [ "$got" -ge "$backlog" ] && break
    sleep 0.1
  done
  local drain
  drain=$(echo "$st" | json "'%.0f %.2f' % ($backlog / ((d['last_ok'] - $t0) / 1e9), (d['last_ok'] - $t0) / 1e9)")
  read -r rate secs <<<"$drain"
  local invalid
  invalid=$(echo "$st" | json 'd["invalid"]')
  printf '%-12s %11s %7s %7s %9s %13s %8s %8s\n' "$name" "$pay" "$failed" "$p99" "$busy" "$rate" "$backlog" "$secs"
  [ "$invalid" = 0 ] || echo "  ($invalid deliveries failed verification)"
  RESULT_PAY[$name]=$pay; RESULT_DEL[$name]=$rate
  kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null || true
}

declare -A RESULT_PAY RESULT_DEL
pgver=$(psql -Atq "$PG" -c "select setting from pg_settings where name='server_version'")
pgdur=$(psql -Atq "$PG" -c "select string_agg(name || '=' || setting, ', ' order by name) from pg_settings where name in ('fsync','synchronous_commit')")
echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(go version | cut -d' ' -f3), PostgreSQL $pgver ($pgdur), SQLite WAL synchronous=FULL"
echo "== servers, PostgreSQL, receiver and two wrk processes (-t1 -c25 each, $DUR) share the cores"
printf '%-12s %11s %7s %7s %9s %13s %8s %8s\n' config payments/s failed 'p99 ms' 'CPU busy' deliveries/s backlog 'drain s'
config sqlite-1 "$work/keelpay.db" 1
for n in 1 2; do
  schema=kp_bench_$$_$n; schemas+=("$schema")
  psql -q "$PG" -c "CREATE SCHEMA $schema" >/dev/null
  sep='?'; [[ $PG == *\?* ]] && sep='&'
  config "postgres-$n" "$PG${sep}search_path=$schema" "$n"
done
python3 - "${RESULT_PAY[sqlite-1]}" "${RESULT_PAY[postgres-1]}" "${RESULT_PAY[postgres-2]}" \
  "${RESULT_DEL[sqlite-1]}" "${RESULT_DEL[postgres-1]}" "${RESULT_DEL[postgres-2]}" <<'EOF'
import sys
p = [float(x) for x in sys.argv[1:4]]; d = [float(x) for x in sys.argv[4:7]]
print("ratio PostgreSQL 1 server / SQLite:   payments %.2f, deliveries %.2f" % (p[1] / p[0], d[1] / d[0]))
print("ratio PostgreSQL 2 servers / 1 server: payments %.2f, deliveries %.2f" % (p[2] / p[1], d[2] / d[1]))
EOF
