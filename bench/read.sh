#!/usr/bin/env bash
# The read of one intent on SQLite next to the anchor's bare read, in
# interleaved rounds: the first row of bench/run.sh's table, alone.
#
#   bash bench/read.sh                 # ROUNDS=5 DUR=5s
#   BASE=/path/to/refserver bash bench/read.sh
#
# Each round runs `wrk -t2 -c50 -s bench/get.lua` against the anchor
# (GET /rows/{id}), then against this tree's reference server on SQLite
# (GET /v1/payment_intents/{id} with the secret key) and, with BASE set,
# against that build of the reference server too, on a database of its
# own set up the same way. Prints req/s and the server's CPU µs per
# request (/proc/PID/stat) of each, and the medians, ranges and ratios to
# the anchor taken within each round. PPROF=1 also writes a 10 s CPU
# profile of this tree's server under the read load to read.pprof.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
ROUNDS=${ROUNDS:-5}
DUR=${DUR:-5s}
CONN=${CONN:-50}
BASE=${BASE:-}
work=$(mktemp -d)
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/refserver" ./cmd/refserver
go build -o "$work/anchor" ./bench/anchor
go build -o "$work/receiver" ./bench/receiver


"$work/receiver" -addr 127.0.0.1:0 >"$work/receiver.out" 2>"$work/receiver.log" &
RCV=$(listening "$work/receiver.out")
post "$RCV/control/status" '{"status":204}' >/dev/null

(cd "$work" && exec ./anchor -addr 127.0.0.1:18191 -db "$work/anchor.db" 2>"$work/anchor.log") &
AN_PID=$!
ready "http://127.0.0.1:18191/rows/pi_anchor"

# serve NAME BINARY [ARGS]: a reference server on a SQLite file of its own,
# with one store and one succeeded intent, as bench/run.sh's setup. Sets
# URL_NAME, PID_NAME, SK_NAME and PI_NAME.
serve() {
  local name=$1 bin=$2; shift 2
  "$bin" -addr 127.0.0.1:0 -db "$work/$name.db" "$@" >"$work/$name.out" 2>"$work/$name.log" &
  local pid=$! url
  url=$(listening "$work/$name.out"); ready "$url/healthz"
  local cust='{"id":"cus_bench","name":"Bench Buyer","email":"bench@shop.example","phone":"+358401234567"}'
  local store sk pk cur cs css card pi
  store=$(post "$url/v1/setup" "{\"client_id\":\"app_bench_$name\",\"client_secret\":\"secret_bench_$name\",\"webhook_url\":\"$RCV/hooks\"}")
  sk=$(echo "$store" | json 'd["secret_key"]'); pk=$(echo "$store" | json 'd["publishable_key"]')
  cur=$(echo "$store" | json 'd["currency"]')
  cs=$(post "$url/v1/card_sessions" "{\"customer\":$cust,\"page_origins\":[\"http://localhost:9100\"]}" -H "Authorization: Bearer $sk")
  css=$(echo "$cs" | json 'd["client_secret"]'); cs=$(echo "$cs" | json 'd["id"]')
  card=$(post "$url/v1/card_sessions/$cs/cards" "{\"client_secret\":\"$css\",\"number\":\"4242424242424242\",\"exp_month\":12,\"exp_year\":2035,\"cvc\":\"123\"}" -H "Authorization: Bearer $pk" | json 'd["id"]')
  pi=$(post "$url/v1/payment_intents" "{\"amount\":2500,\"currency\":\"$cur\",\"customer\":$cust,\"payment_method\":\"$card\"}" -H "Authorization: Bearer $sk" | json 'd["id"]')
  post "$url/v1/payment_intents/$pi/confirm" '' -H "Authorization: Bearer $sk" >/dev/null
  printf -v "URL_$name" %s "$url"; printf -v "PID_$name" %s "$pid"
  printf -v "SK_$name" %s "$sk"; printf -v "PI_$name" %s "$pi"
}
pp=()
[ "${PPROF:-0}" = 1 ] && pp=(-pprof 127.0.0.1:18192)
serve new "$work/refserver" "${pp[@]}"
[ -n "$BASE" ] && serve base "$BASE"

# measure NAME PID URL PATH [KEY]: one wrk run; records req/s and CPU µs.
R="$work/results"; : >"$R"
measure() {
  local c0 rps
  c0=$(cpu "$2")
  wrk -t2 -c"$CONN" -d"$DUR" -s bench/get.lua "$3" -- "$4" "${5:-}" >"$work/wrk.txt"
  grep -q 'Non-2xx' "$work/wrk.txt" && { echo "non-2xx answers from $1" >&2; cat "$work/wrk.txt" >&2; }
  rps=$(awk '/Requests\/sec/{print $2}' "$work/wrk.txt")
  python3 -c "print('$1 $r', $rps, ($(cpu "$2") - $c0) * 1e6 / ($rps * ${DUR%s}))" >>"$R"
  tail -n1 "$R"
}
for r in $(seq 1 "$ROUNDS"); do
  echo "-- round $r, load average $(cut -d' ' -f1 /proc/loadavg)"
  measure anchor $AN_PID "http://127.0.0.1:18191" /rows/pi_anchor
  measure new "$PID_new" "$URL_new" "/v1/payment_intents/$PI_new" "$SK_new"
  [ -n "$BASE" ] && measure base "$PID_base" "$URL_base" "/v1/payment_intents/$PI_base" "$SK_base"
done
if [ "${PPROF:-0}" = 1 ]; then
  wrk -t2 -c"$CONN" -d12s -s bench/get.lua "$URL_new" -- "/v1/payment_intents/$PI_new" "$SK_new" >/dev/null &
  sleep 1
  curl -sf -o read.pprof "http://127.0.0.1:18192/debug/pprof/profile?seconds=10"
  wait %%
  echo "profile: read.pprof"
fi
python3 - "$R" <<'PY'
import collections, statistics, sys
rps, cpu = collections.defaultdict(dict), collections.defaultdict(dict)
for line in open(sys.argv[1]):
    name, r, x, c = line.split()
    rps[name][r], cpu[name][r] = float(x), float(c)
def show(name, d, fmt):
    v = list(d[name].values())
    return fmt.format(statistics.median(v)) + " (" + "–".join(fmt.format(y) for y in (min(v), max(v))) + ")"
def ratio(a, b, d, inv=False):
    r = [(d[b][k] / d[a][k]) if inv else (d[a][k] / d[b][k]) for k in d[a] if k in d[b]]
    return "%.2f (%.2f–%.2f)" % (statistics.median(r), min(r), max(r))
for name in rps:
    line = "%-6s %s req/s, %s µs CPU/req" % (name, show(name, rps, "{:,.0f}"), show(name, cpu, "{:.1f}"))
    if name != "anchor":
        line += "; ratio to anchor: req/s %s, CPU %s" % (ratio(name, "anchor", rps), ratio(name, "anchor", cpu, inv=True))
    print(line)
PY
