#!/usr/bin/env bash
# A/B of complete payments on PostgreSQL between reference-server builds,
# next to `pgbench -N`, in interleaved rounds (the machine is shared: only
# figures of the same round compare).
#
#   bash bench/ab-pg.sh BIN_A [BIN_B...]    # ROUNDS=3 DUR=5s
#
# Each BIN is a build of ./cmd/refserver on a schema of its own, with a
# store, a saved card and a warm-up of payments, then ANALYZE (as
# bench/run.sh). Each round runs `pgbench -N -c8 -j2` and then
# bench/pay.lua with an Idempotency-Key on each POST against each server,
# and prints payments/s, the ratio to pgbench's tps and the round trips per
# payment (keelpay_storage_round_trips_total) and the server's CPU µs per
# payment (user + system from /proc/PID/stat, its deliveries and the
# sandbox provider's SQLite included; the database's own excluded), with
# the medians of the rounds at the end. DSN_EXTRA (for example
# "&pool_max_conns=16") is added to every server's DSN. PostgreSQL as in
# bench/run.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-5s}
[ $# -ge 1 ] || { echo "usage: $0 BIN_A [BIN_B...]" >&2; exit 2; }
PG=${KEELPAY_BENCH_POSTGRES:-${KEELPAY_TEST_POSTGRES:-postgres://postgres:postgres@127.0.0.1:5432/test?sslmode=disable}}
sep='?'; [[ $PG == *\?* ]] && sep='&'
work=$(mktemp -d)
schemas=(kp_abpg_$$_pgbench)
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  wait 2>/dev/null || true
  for s in "${schemas[@]}"; do psql -q "$PG" -c "DROP SCHEMA IF EXISTS $s CASCADE" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/receiver" ./bench/receiver
"$work/receiver" -addr 127.0.0.1:0 >"$work/receiver.out" 2>"$work/receiver.log" &
RCV=$(listening "$work/receiver.out")
post "$RCV/control/status" '{"status":204}' >/dev/null
psql -q "$PG" -c "CREATE SCHEMA ${schemas[0]}"
PGOPTIONS="-c search_path=${schemas[0]}" pgbench -i -q -s 1 "$PG" >/dev/null 2>&1

URLS=() SKS=() CARDS=() CURS=() PIDS=() secrets=()
i=0
for bin in "$@"; do
  s=kp_abpg_$$_$i
  schemas+=("$s")
  psql -q "$PG" -c "CREATE SCHEMA $s"
  KEELPAY_ENCRYPTION_KEY=$("$bin" -new-key) "$bin" -addr 127.0.0.1:0 -db "$PG${sep}search_path=$s${DSN_EXTRA:-}" \
    -sandbox-db "$work/s$i.sandbox.db" >"$work/s$i.out" 2>"$work/s$i.log" &
  PIDS+=($!)
  url=$(listening "$work/s$i.out"); ready "$url/healthz"
  read -r sk card cur ws _ <<<"$(setup "$url" "pg$i" "${secrets[@]}")"
  secrets+=("$ws"); URLS+=("$url"); SKS+=("$sk"); CARDS+=("$card"); CURS+=("$cur")
  wrk -t2 -c50 -d3s -s bench/pay.lua "$url" -- "$sk" "$card" "$cur" idem >/dev/null
  psql -q "$PG" -c "ANALYZE $(psql -Atq "$PG" -c "SELECT string_agg(format('%I.%I', schemaname, tablename), ', ') FROM pg_tables WHERE schemaname = '$s'")"
  i=$((i + 1))
done

: >"$work/results"
for r in $(seq 1 "$ROUNDS"); do
  tps=$(PGOPTIONS="-c search_path=${schemas[0]}" pgbench -N -c8 -j2 -T"${DUR%s}" "$PG" 2>/dev/null | grep -o 'tps = [0-9.]*' | cut -d' ' -f3)
  line="round $r, load average $(load): pgbench -N $(printf '%.0f' "$tps") tps"
  for j in "${!URLS[@]}"; do
    r0=$(counter "${URLS[$j]}" keelpay_storage_round_trips_total)
    c0=$(cpu "${PIDS[$j]}")
    wrk -t2 -c50 -d"$DUR" -s bench/pay.lua "${URLS[$j]}" -- "${SKS[$j]}" "${CARDS[$j]}" "${CURS[$j]}" idem >"$work/pay.txt"
    c1=$(cpu "${PIDS[$j]}")
    r1=$(counter "${URLS[$j]}" keelpay_storage_round_trips_total)
    tail -n1 "$work/pay.txt" | awk -v j="$j" -v c="$c1" -v c0="$c0" '{ n = $2 > 0 ? $2 : 1; printf "%d %.0f %.0f\n", j, $2 / $6, (c - c0) * 1e6 / n }' >>"$work/results"
    line="$line | server $j: $(tail -n1 "$work/pay.txt" | awk -v r=$((r1 - r0)) -v t="$tps" -v c="$c1" -v c0="$c0" \
      '{ n = $2 > 0 ? $2 : 1; printf "%.0f payments/s, %.3f of pgbench, %.2f round trips, %.0f CPU us", $2 / $6, ($2 / $6) / t, r / n, (c - c0) * 1e6 / n }')"
  done
  echo "$line"
done
python3 - "$work/results" "$@" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    j, rate, us = line.split()
    rows[int(j)].append((float(rate), float(us)))
for j, bin in enumerate(sys.argv[2:]):
    x = rows[j]
    f = lambda xs: "%.0f (%.0f-%.0f)" % (statistics.median(xs), min(xs), max(xs))
    print("server %d %s: payments/s %s; CPU us/payment %s" % (j, bin, f([a for a, _ in x]), f([b for _, b in x])))
PY
