#!/usr/bin/env bash
# Load benchmarks of the reference server on SQLite, each next to its anchor
# in the same run (bench/anchor: bare net/http + SQLite, no keelpay code):
#   1. GET /v1/payment_intents/{id}  vs  a primary-key read of one row
#   2. complete payments (create + confirm with 4242, events committed)
#      vs  one durable insert per request
# Usage: bash bench/run-sqlite.sh   (needs wrk: apt-get install -y wrk)
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${DUR:-10s}
CONN=${CONN:-50}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

go build -o "$work/refserver" ./cmd/refserver
go build -o "$work/anchor" ./bench/anchor
KP=127.0.0.1:18080
AN=127.0.0.1:18081
(cd "$work" && exec ./refserver -addr $KP -db "$work/keelpay.db" >/dev/null 2>"$work/refserver.log") &
(cd "$work" && exec ./anchor -addr $AN -db "$work/anchor.db" 2>"$work/anchor.log") &
for _ in $(seq 1 100); do curl -sf "http://$KP/healthz" >/dev/null && curl -sf "http://$AN/rows/pi_anchor" >/dev/null && break; sleep 0.1; done

json() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
store=$(curl -sf -X POST "http://$KP/v1/setup" -H 'Content-Type: application/json' \
  -d '{"client_id":"app_bench","client_secret":"secret_bench","webhook_url":"http://127.0.0.1:9/none"}')
SK=$(echo "$store" | json '["secret_key"]'); PK=$(echo "$store" | json '["publishable_key"]')
CUR=$(echo "$store" | json '["currency"]')
cust='{"id":"cus_bench","name":"Bench Buyer","email":"bench@shop.example","phone":"+358401234567"}'
cs=$(curl -sf -X POST "http://$KP/v1/card_sessions" -H "Authorization: Bearer $SK" -H 'Content-Type: application/json' \
  -d "{\"customer\":$cust,\"page_origins\":[\"http://localhost:9100\"]}")
CS=$(echo "$cs" | json '["id"]'); CSS=$(echo "$cs" | json '["client_secret"]')
CARD=$(curl -sf -X POST "http://$KP/v1/card_sessions/$CS/cards" -H "Authorization: Bearer $PK" -H 'Content-Type: application/json' \
  -d "{\"client_secret\":\"$CSS\",\"number\":\"4242424242424242\",\"exp_month\":12,\"exp_year\":2035,\"cvc\":\"123\"}" | json '["id"]')
PI=$(curl -sf -X POST "http://$KP/v1/payment_intents" -H "Authorization: Bearer $SK" -H 'Content-Type: application/json' \
  -d "{\"amount\":2500,\"currency\":\"$CUR\",\"customer\":$cust,\"payment_method\":\"$CARD\"}" | json '["id"]')
curl -sf -X POST "http://$KP/v1/payment_intents/$PI/confirm" -H "Authorization: Bearer $SK" >/dev/null

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(go version | cut -d' ' -f3)"
echo "== wrk -t2 -c$CONN -d$DUR --latency, server and load generator on the same cores"
echo; echo "-- anchor: GET one SQLite row by primary key"
wrk -t2 -c"$CONN" -d"$DUR" --latency -s bench/get.lua "http://$AN" -- /rows/pi_anchor | grep -E "Requests/sec|99%|Non-2xx"
echo; echo "-- keelpay: GET /v1/payment_intents/{id}"
wrk -t2 -c"$CONN" -d"$DUR" --latency -s bench/get.lua "http://$KP" -- "/v1/payment_intents/$PI" "$SK" | grep -E "Requests/sec|99%|Non-2xx"
echo; echo "-- anchor: POST one durable SQLite insert"
wrk -t2 -c"$CONN" -d"$DUR" --latency -s bench/post.lua "http://$AN" | grep -E "Requests/sec|99%|Non-2xx"
echo; echo "-- keelpay: complete payments (create + confirm 4242 with a saved card)"
wrk -t2 -c"$CONN" -d"$DUR" --latency -s bench/payment.lua "http://$KP" -- "$SK" "$CARD" "$CUR" | grep -E "Requests/sec|99%|complete payments|Non-2xx"
