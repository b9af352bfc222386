# Shell functions the benchmark scripts share; each script sources it:
#   . "$(dirname "$0")/lib.sh"

# listening FILE: the URL of the "listening on" banner a server (or
# bench/receiver) wrote to FILE, once it is there.
listening() {
  for _ in $(seq 1 200); do
    url=$(grep -o -m1 'listening on http://[0-9.:]*' "$1" 2>/dev/null | cut -d' ' -f3) && [ -n "$url" ] && echo "$url" && return
    sleep 0.05
  done
  echo "no banner in $1" >&2; return 1
}
# json EXPR: EXPR of the JSON document on stdin, bound to d.
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
# post URL BODY [CURL ARGS...]: a JSON POST; fails on an HTTP error.
post() { curl -sf -X POST "$1" -H 'Content-Type: application/json' "${@:3}" -d "$2"; }
# ready URL: waits until URL answers 2xx.
ready() { for _ in $(seq 1 200); do curl -sf "$1" >/dev/null && return 0; sleep 0.05; done; echo "not ready: $1" >&2; return 1; }
# cpu PID: CPU seconds (user + system) the process has used.
cpu() { awk -v t="$(getconf CLK_TCK)" '{print ($14+$15)/t}' /proc/$1/stat; }
# counter URL NAME: a counter of the server's /metrics.
counter() { curl -sf "$1/metrics" | awk -v n="$2" '$1 == n { printf "%d\n", $2 }'; }
load() { cut -d' ' -f1 /proc/loadavg; }
# quiet [MS]: waits until the receiver at $RCV has had no request for MS
# milliseconds (1500).
quiet() {
  while :; do
    last=$(curl -sf "$RCV/control/stats" | json 'd["last_request"]')
    [ $(( ($(date +%s%N) - last) / 1000000 )) -ge "${1:-1500}" ] && return
    sleep 0.3
  done
}

# setup URL NAME [SECRET...]: a store of the server at URL whose webhooks
# go to the receiver at $RCV, and a saved 4242 card; the receiver learns
# its webhook secret (with the SECRETs of stores set up before) before any
# event is sent. Prints "sk card currency webhook_secret pi" (pi: one
# succeeded intent).
setup() {
  local store sk pk cur cs css card pi cust='{"id":"cus_bench","name":"Bench Buyer","email":"bench@shop.example","phone":"+358401234567"}'
  store=$(post "$1/v1/setup" "{\"client_id\":\"app_bench_$2\",\"client_secret\":\"secret_bench_$2\",\"webhook_url\":\"$RCV/hooks\"}")
  sk=$(echo "$store" | json 'd["secret_key"]'); pk=$(echo "$store" | json 'd["publishable_key"]')
  cur=$(echo "$store" | json 'd["currency"]')
  local ws; ws=$(echo "$store" | json 'd["webhook_secret"]')
  post "$RCV/control/secrets" "[$(printf '"%s",' "${@:3}" "$ws" | sed 's/,$//')]" >/dev/null
  cs=$(post "$1/v1/card_sessions" "{\"customer\":$cust,\"page_origins\":[\"http://localhost:9100\"]}" -H "Authorization: Bearer $sk")
  css=$(echo "$cs" | json 'd["client_secret"]'); cs=$(echo "$cs" | json 'd["id"]')
  card=$(post "$1/v1/card_sessions/$cs/cards" "{\"client_secret\":\"$css\",\"number\":\"4242424242424242\",\"exp_month\":12,\"exp_year\":2035,\"cvc\":\"123\"}" -H "Authorization: Bearer $pk" | json 'd["id"]')
  pi=$(post "$1/v1/payment_intents" "{\"amount\":2500,\"currency\":\"$cur\",\"customer\":$cust,\"payment_method\":\"$card\"}" -H "Authorization: Bearer $sk" | json 'd["id"]')
  post "$1/v1/payment_intents/$pi/confirm" '' -H "Authorization: Bearer $sk" >/dev/null
  echo "$sk $card $cur $ws $pi"
}

# ticks PID...: the CPU time (user + system, ticks) the processes used so far.
ticks() {
  local t=0 p f
  for p in "$@"; do
    f=$(cut -d')' -f2 "/proc/$p/stat" 2>/dev/null) || continue
    set -- $f; t=$(( t + ${12} + ${13} ))
  done
  echo $t
}
# pgpids: every process of the PostgreSQL server (postmaster, backends,
# writers), found by the server's data directory owner's process names.
pgpids() { pgrep -d' ' -x 'postgres|postmaster' || true; }
