#!/usr/bin/env bash
# The cost of one `zmem exporter` scrape (docs/BENCHMARKS.md, "zmem exporter"): hot-adds N zram
# devices (default 8), fills each with 16 MiB of mixed pages (text, noise, same-filled) with
# O_DIRECT, serves them on a free loopback port, and times SCRAPES sequential GETs of /metrics
# with curl (connection included), then reports the exporter's resident memory. As root.
# Everything it made is removed on exit, on failure too.
set -euo pipefail
ZMEM=${ZMEM:-target/release/zmem}
N=${N:-8}
SCRAPES=${SCRAPES:-500}
[ "$(id -u)" = 0 ] || { echo "needs root (hot_add)" >&2; exit 1; }
devs=()
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  for d in "${devs[@]}"; do
    echo 1 > "/sys/block/zram$d/reset" 2>/dev/null || true
    echo "$d" > /sys/class/zram-control/hot_remove 2>/dev/null || true
  done
}
trap cleanup EXIT
for _ in $(seq "$N"); do
  d=$(cat /sys/class/zram-control/hot_add)
  devs+=("$d")
  echo 64M > "/sys/block/zram$d/disksize"
  # `yes | head` ends on SIGPIPE: not a failure here.
  { head -c 4M /dev/urandom; yes "zmem exporter scrape benchmark $d" | head -c 8M || true;
    head -c 4M /dev/zero | tr '\0' '\132'; } | dd of="/dev/zram$d" bs=1M oflag=direct status=none
done
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$ZMEM" exporter --listen "127.0.0.1:$port" 2>/dev/null &
pid=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/metrics" >/dev/null && break; sleep 0.1; done
body=$(curl -fs "http://127.0.0.1:$port/metrics")
echo "zram devices scraped: $(grep -c '^zmem_zram_orig_data_bytes{' <<<"$body"), series: $(grep -vc '^#' <<<"$body"), bytes: ${#body}"
for _ in $(seq 20); do curl -fs "http://127.0.0.1:$port/metrics" >/dev/null; done
for _ in $(seq "$SCRAPES"); do
  curl -fs -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$port/metrics"
done | sort -n | awk '{t[NR]=$1; s+=$1} END {
  printf "scrape over %d: mean %.3f ms, p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
    NR, s/NR*1000, t[int(NR*0.5)]*1000, t[int(NR*0.99)]*1000, t[NR]*1000 }'
grep -E 'VmRSS|VmHWM' "/proc/$pid/status" | tr -s ' \t' ' '
# The exporter's own figure for the reading part of the last scrape.
curl -fs "http://127.0.0.1:$port/metrics" | grep '^zmem_read_duration_seconds'
