#!/usr/bin/env bash
# A/B of complete payments on SQLite between reference-server builds, next
# to the anchor's durable insert, in interleaved rounds (the machine is
# shared: only figures of the same round compare).
#
#   bash bench/ab-pay.sh BIN_A [BIN_B...]   # ROUNDS=5 DUR=5s IDEM=0
#
# Each BIN is a build of ./cmd/refserver (go build -o /tmp/x ./cmd/refserver).
# Each round runs, one after the other: bench/anchor POST /rows
# (bench/post.lua), then bench/pay.lua against each server. Printed per
# round and as medians (range): payments/s, the ratio to the anchor's
# inserts/s, the transactions per commit, and the server's CPU µs per payment (user + system, from
# /proc/PID/stat, its webhook deliveries made meanwhile included). With
# PPROF=1 each server also serves its profiles (-pprof); their addresses
# are printed; with PROFILE=DIR as well, a CPU profile of each server's
# payments in the first round is written to DIR/sN.pprof. Every event is delivered to bench/receiver.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
ROUNDS=${ROUNDS:-5}
DUR=${DUR:-5s}
CONN=${CONN:-50}
IDEM=${IDEM:-0}
[ $# -ge 1 ] || { echo "usage: $0 BIN_A [BIN_B...]" >&2; exit 2; }
work=$(mktemp -d)
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/anchor" ./bench/anchor
go build -o "$work/receiver" ./bench/receiver


"$work/receiver" -addr 127.0.0.1:0 >"$work/receiver.out" 2>"$work/receiver.log" &
RCV=$(listening "$work/receiver.out")
post "$RCV/control/status" '{"status":204}' >/dev/null
AN=127.0.0.1:18191
(cd "$work" && exec ./anchor -addr $AN -db "$work/anchor.db" 2>"$work/anchor.log") &
AN_PID=$!
ready "http://$AN/rows/pi_anchor"


PIDS=() PROF=() URLS=() SKS=() CARDS=() CURS=() secrets=()
i=0
for bin in "$@"; do
  extra=()
  [ "${PPROF:-0}" = 1 ] || [ -n "${PROFILE:-}" ] && extra=(-pprof 127.0.0.1:0)
  "$bin" -addr 127.0.0.1:0 -db "$work/s$i.db" "${extra[@]}" >"$work/s$i.out" 2>"$work/s$i.log" &
  PIDS+=($!)
  url=$(listening "$work/s$i.out"); ready "$url/healthz"
  PROF+=("$(grep -o 'profiles (net/http/pprof) at \S*' "$work/s$i.out" | cut -d' ' -f4 || true)")
  [ "${PPROF:-0}" = 1 ] && echo "server $i ($bin): ${PROF[$i]}"
  read -r sk card cur ws _ <<<"$(setup "$url" "s$i" "${secrets[@]}")"
  secrets+=("$ws")
  URLS+=("$url") SKS+=("$sk") CARDS+=("$card") CURS+=("$cur")
  i=$((i + 1))
done

R="$work/results"
: >"$R"
idem=""; [ "$IDEM" = 1 ] && idem=idem
for r in $(seq 1 "$ROUNDS"); do
  a=$(wrk -t2 -c"$CONN" -d"$DUR" -s bench/post.lua "http://$AN" | awk '/Requests\/sec/{print $2}')
  line="round $r load $(cut -d' ' -f1 /proc/loadavg) anchor $a"
  for j in $(seq 0 $((i - 1))); do
    c0=$(cpu "${PIDS[$j]}")
    t0=$(counter "${URLS[$j]}" keelpay_storage_transactions_total); k0=$(counter "${URLS[$j]}" keelpay_storage_commits_total)
    if [ -n "${PROFILE:-}" ] && [ "$r" = 1 ]; then
      mkdir -p "$PROFILE"
      (sleep 0.5; curl -sf -o "$PROFILE/s$j.pprof" "${PROF[$j]}profile?seconds=$(( ${DUR%s} - 1 ))") &
    fi
    out=$(wrk -t2 -c"$CONN" -d"$DUR" -s bench/pay.lua "${URLS[$j]}" -- "${SKS[$j]}" "${CARDS[$j]}" "${CURS[$j]}" $idem | tail -n1)
    c1=$(cpu "${PIDS[$j]}")
    tx=$(( $(counter "${URLS[$j]}" keelpay_storage_transactions_total) - t0 )); commits=$(( $(counter "${URLS[$j]}" keelpay_storage_commits_total) - k0 ))
    read -r rate us <<<"$(echo "$out" | awk -v c="$c1" -v c0="$c0" '{ if ($4 > 0) print "failed " $4 > "/dev/stderr"; printf "%.0f %.0f\n", $2 / $6, (c - c0) * 1e6 / ($2 > 0 ? $2 : 1) }')"
    echo "$j $r $rate $a $us" >>"$R"
    line="$line | s$j $rate/s $(python3 -c "print('%.2fx %.2f tx/commit' % ($rate / $a, $tx / max($commits, 1)))") ${us}us"
  done
  echo "$line"
done
python3 - "$R" "$@" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    j, r, rate, a, us = line.split()
    rows[int(j)].append((float(rate), float(a), float(us)))
def f(xs, fmt):
    return (fmt % statistics.median(xs)) + " (" + (fmt % min(xs)) + "-" + (fmt % max(xs)) + ")"
for j, bin in enumerate(sys.argv[2:]):
    x = rows[j]
    print("s%d %s: payments/s %s; of the anchor %s; CPU us/payment %s" % (
        j, bin, f([a for a, _, _ in x], "%.0f"), f([a / b for a, b, _ in x], "%.2f"), f([c for _, _, c in x], "%.0f")))
PY
