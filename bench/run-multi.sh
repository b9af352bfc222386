#!/usr/bin/env bash
# Load benchmarks of reference servers on PostgreSQL, one, two and four of
# them on one database, next to one on SQLite, all in the same run:
#   - complete payments per second: create + confirm with a saved 4242 card,
#     the succeeded event committed with the outcome (bench/payments-stores.lua),
#     while the servers deliver every event to a receiver that verifies it;
#   - where the CPU went during those payments: PostgreSQL's processes and the
#     servers', as a share of the machine and in milliseconds per payment, so
#     that the database's cost per payment shows apart from the servers' own;
#   - deliveries per second: a backlog of pending deliveries (every event of a
#     second payments run, whose first attempt the receiver refused) made due
#     at once by moving the sandbox clock 2 minutes on every server, owner
#     first, and delivered to the receiver: backlog / (last 2xx - clock move).
# Sixteen stores share the load, so that the per-store delivery cap does not
# set the pace. The load is CONN connections (50) split over max(2, servers)
# wrk processes of one thread, spread over the servers. Everything runs on
# this machine's cores, loopback only: with more servers than cores, the
# figure shows what the database costs per payment, not how far several
# machines scale.
# Usage: bash bench/run-multi.sh   (SERVERS="1 2 4" DUR=10s BACKLOG_DUR=10s
# STORES=16 CONN=50; needs wrk, python3, psql and a PostgreSQL server:
# KEELPAY_BENCH_POSTGRES, else KEELPAY_TEST_POSTGRES, else the local
# postgres://postgres:postgres@127.0.0.1:5432/test)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
DUR=${DUR:-10s}
BACKLOG_DUR=${BACKLOG_DUR:-10s}
PG=${KEELPAY_BENCH_POSTGRES:-${KEELPAY_TEST_POSTGRES:-postgres://postgres:postgres@127.0.0.1:5432/test?sslmode=disable}}
STORES=${STORES:-16}
SERVERS=${SERVERS:-1 2 4}
CONN=${CONN:-50}
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
"$work/receiver" -addr 127.0.0.1:0 >"$work/receiver.out" 2>"$work/receiver.log" &
RCV=$(listening "$work/receiver.out")



# machine_cpu prints the machine's CPU time so far and the idle part of it (ticks).
machine_cpu() { awk '/^cpu /{print $2+$3+$4+$5+$6+$7+$8, $5+$6}' /proc/stat; }
# payments SECONDS URL...: runs max(2, servers) wrk processes at once, spread
# over the URLs, and prints "<payments/s> <failed> <p99 ms> <CPU busy %>
# <database CPU %> <database ms/payment> <servers ms/payment>" over all.
payments() {
  local dur=$1; shift
  local urls=("$@") procs=$(( $# > 2 ? $# : 2 )) before db0 sv0 i w=()
  local per=$(( CONN / procs ))
  before=$(machine_cpu); db0=$(ticks $(pgpids)); sv0=$(ticks "${PIDS[@]}")
  for i in $(seq 0 $((procs - 1))); do
    wrk -t1 -c"$per" -d"$dur" --latency -s bench/payments-stores.lua "${urls[$((i % $#))]}" -- "$CUR" "${STORE_ARGS[@]}" >"$work/wrk$i" &
    w+=($!)
  done
  wait "${w[@]}"
  for i in $(seq 0 $((procs - 1))); do tail -n1 "$work/wrk$i"; done | python3 -c '
import os, sys
rows = [l.split() for l in sys.stdin]
ok = sum(int(r[1]) for r in rows); bad = sum(int(r[3]) for r in rows)
secs = max(float(r[5]) for r in rows); p99 = max(float(r[7]) for r in rows)
t0, i0, t1, i1, db0, db1, sv0, sv1 = (int(x) for x in sys.argv[1:])
hz = os.sysconf("SC_CLK_TCK"); cores = os.cpu_count(); tot = t1 - t0
n = max(ok, 1)
print("%.0f %d %.1f %.0f %.0f %.2f %.2f" % (ok / secs, bad, p99, 100 * (1 - (i1 - i0) / tot),
      100 * (db1 - db0) / tot, 1000 * (db1 - db0) / hz / n, 1000 * (sv1 - sv0) / hz / n))' \
    $before $(machine_cpu) $db0 $(ticks $(pgpids)) $sv0 $(ticks "${PIDS[@]}")
}

# config NAME DB SERVERS: one measurement of both figures.
config() {
  local name=$1 db=$2 n=$3
  local owner i url
  "$work/refserver" -addr 127.0.0.1:0 -db "$db" -sandbox-db "$work/$name.sandbox.db" >"$work/$name-0.out" 2>"$work/$name-0.log" &
  PIDS=($!)
  owner=$(listening "$work/$name-0.out")
  ready $owner/healthz
  local urls=($owner)
  for i in $(seq 1 $((n - 1))); do
    "$work/refserver" -addr 127.0.0.1:0 -db "$db" -sandbox-url $owner >"$work/$name-$i.out" 2>"$work/$name-$i.log" &
    PIDS+=($!)
    url=$(listening "$work/$name-$i.out")
    ready $url/healthz
    urls+=($url)
  done
  post "$RCV/control/reset" '{}' >/dev/null
  post "$RCV/control/status" '{"status":204}' >/dev/null
  STORE_ARGS=()
  local secrets=()
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
  # As autovacuum would on a default server: statistics for the new tables.
  if [[ $db == postgres* ]]; then
    payments 3s "${urls[@]}" >/dev/null
    quiet 2000
    psql -q "$PG" -c "ANALYZE" >/dev/null
  fi

  # Complete payments per second, deliveries accepted as they come.
  local pay failed p99 busy dbcpu dbms svms
  read -r pay failed p99 busy dbcpu dbms svms <<<"$(payments "$DUR" "${urls[@]}")"
  quiet 2000

  # A backlog: the receiver refuses the first attempt of every event of a
  # shorter run; each is due again 1 minute later on the service clock.
  post "$RCV/control/reset" '{}' >/dev/null
  post "$RCV/control/status" '{"status":503}' >/dev/null
  payments "$BACKLOG_DUR" "${urls[@]}" >/dev/null
  quiet 2000
  local backlog
  backlog=$(curl -sf "$RCV/control/stats" | json 'd["distinct_failed"]')
  post "$RCV/control/reset" '{}' >/dev/null
  post "$RCV/control/status" '{"status":204}' >/dev/null
  local t0 got st
  t0=$(date +%s%N)
  for url in "${urls[@]}"; do post $url/sandbox/clock '{"advance_seconds":120}' >/dev/null; done
  for _ in $(seq 1 1200); do
    st=$(curl -sf "$RCV/control/stats")
    got=$(echo "$st" | json 'd["distinct_ok"]')
    [ "$got" -ge "$backlog" ] && break
    sleep 0.1
  done
  local rate secs
  read -r rate secs <<<"$(echo "$st" | json "'%.0f %.2f' % ($backlog / ((d['last_ok'] - $t0) / 1e9), (d['last_ok'] - $t0) / 1e9)")"
  local invalid
  invalid=$(echo "$st" | json 'd["invalid"]')
  row "$name" "$pay" "$failed" "$p99" "$busy" "$dbcpu" "$dbms" "$svms" "$rate" "$backlog" "$secs"
  [ "$invalid" = 0 ] || echo "  ($invalid deliveries failed verification)"
  RESULT_PAY[$name]=$pay; RESULT_DEL[$name]=$rate; RESULT_DBMS[$name]=$dbms
  kill "${PIDS[@]}"; wait "${PIDS[@]}" 2>/dev/null || true
}
row() { printf '%-12s %10s %6s %7s %8s %8s %10s %12s %12s %8s %7s\n' "$@"; }

declare -A RESULT_PAY RESULT_DEL RESULT_DBMS
pgver=$(psql -Atq "$PG" -c "select setting from pg_settings where name='server_version'")
pgdur=$(psql -Atq "$PG" -c "select string_agg(name || '=' || setting, ', ' order by name) from pg_settings where name in ('fsync','synchronous_commit')")
[ -n "$(pgpids)" ] || echo "(no PostgreSQL process visible on this machine: database CPU reads 0)" >&2
echo "== $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(go version | cut -d' ' -f3), PostgreSQL $pgver ($pgdur), SQLite WAL synchronous=FULL; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== servers, PostgreSQL, receiver and wrk ($CONN connections, $DUR) share the cores; CPU shares are of the whole machine; ms/pay is CPU time per payment"
row config payments/s failed 'p99 ms' 'CPU busy' 'db CPU' 'db ms/pay' 'server ms/pay' deliveries/s backlog 'drain s'
config sqlite-1 "$work/keelpay.db" 1
for n in $SERVERS; do
  schema=kp_bench_$$_$n; schemas+=("$schema")
  psql -q "$PG" -c "CREATE SCHEMA $schema" >/dev/null
  sep='?'; [[ $PG == *\?* ]] && sep='&'
  config "postgres-$n" "$PG${sep}search_path=$schema" "$n"
done
for n in $SERVERS; do
  k=postgres-$n
  python3 -c 'import sys; p, s, d, sd, dm, n, p1 = sys.argv[1:]; print("postgres-%s: payments %.2f of SQLite, %.2f of one server; deliveries %.2f of one server; %s ms of database CPU per payment: one database core carries %.0f payments/s" % (n, float(p) / float(s), float(p) / float(p1), float(d) / float(sd), dm, 1000 / max(float(dm), 1e-9)))' \
    "${RESULT_PAY[$k]}" "${RESULT_PAY[sqlite-1]}" "${RESULT_DEL[$k]}" "${RESULT_DEL[postgres-1]:-${RESULT_DEL[$k]}}" "${RESULT_DBMS[$k]}" "$n" "${RESULT_PAY[postgres-1]:-${RESULT_PAY[$k]}}"
done
