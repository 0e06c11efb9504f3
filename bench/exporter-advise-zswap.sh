#!/usr/bin/env bash
# `zmem exporter --advise`'s zswap part on this machine as it is: the advisor samples the
# processes' resident anonymous pages (no swap, no zswap enabled: it reads pages in RAM) with
# its defaults (1 % of a core, a 10,000-page sample); this reports how long the sample takes to
# fill, the advisor thread's CPU against the wall clock, the process's CPU and resident memory,
# and scrape times (curl, once a second), beside the same exporter without --advise scraped in
# turn (so both see the same machine). Nothing is created or changed; run it under
# `flock /tmp/zmem-live.lock` (the advisor also samples any live zram device, whose idle marks
# another live test may be counting).
# The machine's load is recorded along (/proc/loadavg and the compilers running, every 10 s), as
# scrape tails on a shared machine are mostly its scheduling.
# Usage: bench/exporter-advise-zswap.sh [ZMEM_BINARY] [SECONDS] [extra exporter args...]
# EVERY=S: seconds between scrape pairs (default 1); ERRDIR=DIR: the exporters' stderr kept
# there (base.err, adv.err) instead of discarded: with a binary built with
# bench/exporter-scrape-timing.patch and ZMEM_SCRAPE_TIMING=1, each scrape's parts, which
# bench/exporter-scrape-parts.py sums up.
set -u
ZMEM=${1:-target/release/zmem}; SECS=${2:-300}; shift 2 2>/dev/null
EVERY=${EVERY:-1}
PORT=19903; BASE=19904; OUT=$(mktemp -d); E=; B=; L=
cleanup() { for x in $E $B $L; do kill "$x" 2>/dev/null; wait "$x" 2>/dev/null; done; rm -rf "$OUT"; }
trap cleanup EXIT
"$ZMEM" exporter --listen 127.0.0.1:$BASE 2>"${ERRDIR:-/dev/null}${ERRDIR:+/base.err}" & B=$!
"$ZMEM" exporter --listen 127.0.0.1:$PORT --advise "$@" 2>"${ERRDIR:-/dev/null}${ERRDIR:+/adv.err}" & E=$!
# load: 1-minute load average and the compilers (rustc, cc1*, ld) running, every 10 s.
while sleep 10; do
  echo "$(cut -d' ' -f1 /proc/loadavg) $(ps -eo comm= | grep -cE '^(rustc|cc1|cc1plus|ld|ld.lld|cargo)$')"
done > "$OUT/load" & L=$!
T0=$(date +%s.%N)
cpu_secs() { awk '{printf "%.3f", ($14+$15)/100}' "/proc/$1/stat"; }
FILLED=
end=$(( $(date +%s) + SECS ))
while [ "$(date +%s)" -lt "$end" ]; do
  sleep "$EVERY"
  # Both timed alike (the body to /dev/null: writing it to a file cost the timed one ~0.3 ms
  # more at the median here), first in turn (the one right after the other may pay for it);
  # whether the sample is full is asked by an untimed scrape, every 10th pair until it is.
  N=$((${N:-0} + 1))
  for who in $([ $((N % 2)) = 0 ] && echo "b t" || echo "t b"); do
    p=$PORT; [ "$who" = b ] && p=$BASE
    curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$p/metrics" >> "$OUT/$who"
  done
  if [ -z "$FILLED" ] && [ $((N % 10)) = 0 ] && curl -s "http://127.0.0.1:$PORT/metrics" |
    grep -q '^zmem_advice_sample_filled{device="zswap"} 1'; then
    FILLED=$(awk -v t0="$T0" -v t1="$(date +%s.%N)" 'BEGIN {printf "%.0f", t1-t0}')
  fi
done
T1=$(date +%s.%N); C=$(cpu_secs "$E")
M=$(curl -s "http://127.0.0.1:$PORT/metrics")
echo "$M" | grep -E '^zmem_advice_(sample_pages|population_pages|pages_read_total|read_skips_total|processes|sample_filled|recommended_info)\{device="zswap"' 
TH=$(echo "$M" | awk '/^zmem_advice_sampler_cpu_seconds_total/ {print $2}')
awk -v t0="$T0" -v t1="$T1" -v th="$TH" -v c="$C" -v f="${FILLED:-never}" 'BEGIN {
  w = t1 - t0
  printf "over %.0f s: the advisor thread %.3f s CPU = %.2f %% of one core; the process %.3f s = %.2f %%; zswap sample full after %s s\n", w, th, 100*th/w, c, 100*c/w, f }'
grep -E "VmRSS|VmHWM" "/proc/$E/status"
stats() { sort -g "$1" | awk '{v[NR]=$1*1000; if ($1 > 0.005) o++} END {printf "%d scrapes: p50 %.2f ms, p99 %.2f ms, max %.2f ms, %d over 5 ms\n", NR, v[int(NR*0.5)+1], v[int(NR*0.99)+1], v[NR], o}'; }
echo "with --advise:    $(stats "$OUT/t")"
echo "without --advise: $(stats "$OUT/b")"
echo "without --advise, the process: $(cpu_secs "$B") s CPU"
echo "load: $(cat /proc/loadavg)"
awk '{l += $1; c += $2; if ($1 > m) m = $1; if ($2 > cm) cm = $2} END {if (NR) printf "load over the run (every 10 s): 1-min average mean %.2f, max %.2f; compiler processes mean %.1f, max %d\n", l/NR, m, c/NR, cm}' "$OUT/load"
