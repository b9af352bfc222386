#!/usr/bin/env bash
# Where a PostgreSQL payment's database time goes: one reference server on
# a fresh schema, a warm-up and ANALYZE, then DUR of keyed complete payments
# (bench/pay.lua with an Idempotency-Key on each POST, every event delivered
# to bench/receiver), and per payment:
#   - each statement's calls, rows and execution time (pg_stat_statements),
#     the statements of the payments' deliveries included;
#   - each table's updates and the share of them that were HOT (no index
#     rewritten; pg_stat_user_tables.n_tup_hot_upd);
#   - the CPU of PostgreSQL's processes and of the server, and the WAL bytes.
# pg_stat_statements must be loaded by the server:
#   ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements';  -- then restart
#   CREATE EXTENSION pg_stat_statements;
# Without it the statements table is left out.
# Usage: bash bench/pgstatements.sh   (DUR=10s CONN=50; BIN=path runs that
# build of ./cmd/refserver instead of building one; POOL=n gives the server
# a pool of n connections instead of its default)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
DUR=${DUR:-10s}
CONN=${CONN:-50}
PG=${KEELPAY_BENCH_POSTGRES:-${KEELPAY_TEST_POSTGRES:-postgres://postgres:postgres@127.0.0.1:5432/test?sslmode=disable}}
work=$(mktemp -d)
schema=kp_stmts_$$
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  wait 2>/dev/null || true
  psql -q "$PG" -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

BIN=${BIN:-}
if [ -z "$BIN" ]; then go build -o "$work/refserver" ./cmd/refserver; BIN=$work/refserver; fi
# Every server on a PostgreSQL database needs an encryption key.
KEELPAY_ENCRYPTION_KEY=${KEELPAY_ENCRYPTION_KEY:-$("$BIN" -new-key)}
export KEELPAY_ENCRYPTION_KEY
go build -o "$work/receiver" ./bench/receiver
"$work/receiver" -addr 127.0.0.1:0 >"$work/receiver.out" 2>"$work/receiver.log" &
RCV=$(listening "$work/receiver.out")
psql -q "$PG" -c "CREATE SCHEMA $schema" >/dev/null
sep='?'; [[ $PG == *\?* ]] && sep='&'
pool=""; [ -n "${POOL:-}" ] && pool="&pool_max_conns=$POOL"
"$BIN" -addr 127.0.0.1:0 -db "$PG${sep}search_path=$schema$pool" -sandbox-db "$work/sandbox.db" >"$work/s.out" 2>"$work/s.log" &
PID=$!
URL=$(listening "$work/s.out"); ready "$URL/healthz"
read -r SK CARD CUR _ _ <<<"$(setup "$URL" stmts)"
run() { wrk -t2 -c"$CONN" -d"$1" -s bench/pay.lua "$URL" -- "$SK" "$CARD" "$CUR" idem | tail -n1; }

run 3s >/dev/null; quiet
psql -q "$PG" -c "ANALYZE $(psql -Atq "$PG" -c "SELECT string_agg(format('%I.%I', schemaname, tablename), ', ') FROM pg_tables WHERE schemaname = '$schema'")"
stmts=0
psql -Atq "$PG" -c "SELECT pg_stat_statements_reset()" >/dev/null 2>&1 && stmts=1
tables() {
  psql -Atq -F' ' "$PG" -c "SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables WHERE schemaname = '$schema' ORDER BY relname"
}
sleep 11  # the warm-up's counters reach the statistics views (backends flush within 10 s of going idle)
tables >"$work/t0"
indexes() {
  psql -Atq -F' ' "$PG" -c "SELECT indexrelname, idx_scan, pg_relation_size(indexrelid) FROM pg_stat_user_indexes WHERE schemaname = '$schema' ORDER BY indexrelname"
}
funcs() {
  psql -Atq -F' ' "$PG" -c "SELECT funcname, calls, self_time FROM pg_stat_user_functions WHERE schemaname = '$schema' ORDER BY funcname"
}
indexes >"$work/i0"; funcs >"$work/f0"
wal0=$(psql -Atq "$PG" -c "SELECT pg_current_wal_lsn() - '0/0'")
d0=$(ticks $(pgpids)); s0=$(ticks $PID)
line=$(run "$DUR")
quiet
d1=$(ticks $(pgpids)); s1=$(ticks $PID)
wal1=$(psql -Atq "$PG" -c "SELECT pg_current_wal_lsn() - '0/0'")
sleep 11  # backends flush their counters to the statistics views within 10 s of going idle
tables >"$work/t1"; indexes >"$work/i1"; funcs >"$work/f1"
n=$(echo "$line" | awk '{print $2}')
rate=$(echo "$line" | awk '{printf "%.0f", $2 / $6}')
hz=$(getconf CLK_TCK)
echo "== $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores; PostgreSQL $(psql -Atq "$PG" -c 'show server_version'); $n keyed payments in $DUR, $rate /s, $CONN connections, pool ${POOL:-default}"
echo "== per payment: PostgreSQL CPU $(( (d1 - d0) * 1000000 / hz / n )) µs, server CPU $(( (s1 - s0) * 1000000 / hz / n )) µs, WAL $(( (wal1 - wal0) / n )) bytes"
if [ "$stmts" = 1 ]; then
  echo
  echo "| statement | calls/payment | rows/call | ms/call | µs/payment | share |"
  echo "|---|---|---|---|---|---|"
  psql -Atq -F'|' "$PG" -c "
    WITH s AS (
      SELECT query, sum(calls) AS calls, sum(rows) AS rows, sum(total_exec_time) AS ms
      FROM pg_stat_statements
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND query NOT ILIKE '%pg_stat%' AND query NOT ILIKE 'ANALYZE%'
      GROUP BY query)
    SELECT regexp_replace(left(regexp_replace(query, '\s+', ' ', 'g'), 90), '\|', '/', 'g'),
           round(calls::numeric / $n, 2), round(rows::numeric / greatest(calls, 1), 1),
           round((ms / greatest(calls, 1))::numeric, 3), round((1000 * ms / $n)::numeric, 0),
           round((100 * ms / sum(ms) OVER ())::numeric, 1) || '%'
    FROM s WHERE calls >= $n / 20 ORDER BY ms DESC LIMIT 25" | sed 's/|/ | /g; s/^/| /; s/$/ |/'
  echo
  psql -Atq "$PG" -c "SELECT 'all statements: ' || round((1000 * sum(total_exec_time) / $n)::numeric, 0) || ' µs of execution per payment in ' || round(sum(calls)::numeric / $n, 1) || ' statements'
    FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
else
  echo "(pg_stat_statements is not loaded: statements left out)"
fi
echo
echo "| table | inserts/payment | updates/payment | HOT updates | deletes/payment |"
echo "|---|---|---|---|---|"
join "$work/t0" "$work/t1" | awk -v n="$n" '{
  i = $6 - $2; u = $7 - $3; h = $8 - $4; d = $9 - $5
  if (i + u + d == 0) next
  printf "| %s | %.2f | %.2f | %s | %.2f |\n", $1, i / n, u / n, u ? sprintf("%.0f%%", 100 * h / u) : "–", d / n }'
echo
echo "Indexes no statement read during the run (each written row still writes them):"
join "$work/i0" "$work/i1" | awk '$4 == $2 { printf "  %s (%d kB)\n", $1, $5 / 1024; n++ } END { if (!n) print "  (none)" }'
if [ -s "$work/f1" ]; then
  echo
  echo "PL/pgSQL functions (track_functions = 'pl'), time in the function itself, statements it ran excluded:"
  join -a2 "$work/f0" "$work/f1" | awk -v n="$n" 'NF == 5 { printf "  %s: %.2f calls, %.0f µs per payment\n", $1, ($4 - $2) / n, 1000 * ($5 - $3) / n }
    NF == 3 { printf "  %s: %.2f calls, %.0f µs per payment\n", $1, $2 / n, 1000 * $3 / n }'
fi
