#!/usr/bin/env bash
# `zmem exporter --advise` on a live zram swap device with a workload swapping into it: the
# advisor's CPU, the exporter's resident memory, scrape times while it samples (beside the same
# exporter without --advise), and its estimates against `zmem lab --source zram` on the same
# device, frozen. This script makes and removes everything it uses (a zram device as the
# highest-priority swap, a v1 memory cgroup, the workload, the exporters); nothing else is
# touched. Root, kernel zram and /sys/fs/cgroup/memory are needed; run it under
# `flock /tmp/zmem-live.lock`.
# Usage: bench/exporter-advise.sh [ZMEM_BINARY] [SECONDS]   (FREEZE=1: the workload is stopped
# once the device is filled, so the scrapes are timed while only the advisor works)
set -u
ZMEM=${1:-target/release/zmem}; SECS=${2:-180}
N=$(cat /sys/class/zram-control/hot_add) || exit 2
D=/dev/zram$N; CG=/sys/fs/cgroup/memory/zmem-advise-bench-$$; P=; E=; B=
OUT=$(mktemp -d)
cleanup() {
  for x in $E $B; do kill "$x" 2>/dev/null; wait "$x" 2>/dev/null; done
  if [ -n "$P" ]; then kill -CONT "$P" 2>/dev/null; kill -9 "$P" 2>/dev/null; wait "$P" 2>/dev/null; fi
  swapoff "$D" 2>/dev/null
  echo 1 > "/sys/block/zram$N/reset"
  echo "$N" > /sys/class/zram-control/hot_remove
  rmdir "$CG" 2>/dev/null
  rm -rf "$OUT"
}
trap cleanup EXIT
echo lzo-rle > "/sys/block/zram$N/comp_algorithm"
echo 1G > "/sys/block/zram$N/disksize"
mkswap "$D" >/dev/null && swapon -p 32000 "$D" || exit 2
mkdir "$CG" && echo 96M > "$CG/memory.limit_in_bytes" || exit 2
# ~300 MiB of Python objects (gc off), then a loop touching a random tenth of them every 2 s:
# they come back from zram and others go out, so the device swaps in and out all along.
sh -c "echo \$\$ > $CG/cgroup.procs; exec python3 -c '
import gc, random, time; gc.disable()
d = [(\"k%d\" % i, [random.random() for _ in range(12)], \"text \" * (i % 50)) for i in range(900000)]
print(\"ready\", flush=True)
while True:
    s = random.randrange(len(d) - 90000)
    for x in d[s:s + 90000]: x[1][0] += 1
    time.sleep(2)'" >/dev/null &
P=$!
for _ in $(seq 120); do
  sleep 1
  [ "$(awk '{print $1}' "/sys/block/zram$N/mm_stat")" -gt 150000000 ] && break
done
echo "device filled: mm_stat $(cat "/sys/block/zram$N/mm_stat")"
[ "${FREEZE:-0}" = 1 ] && kill -STOP "$P"

scrape() { # seconds: one scrape of each exporter a second, time_total per line
  local end=$(( $(date +%s) + $1 ))
  while [ "$(date +%s)" -lt "$end" ]; do
    curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:19901/metrics" >> "$OUT/base"
    curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:19902/metrics" >> "$OUT/adv"
    sleep 1
  done
}
stats() { # file of seconds: n, p50, p99, max in ms, and how many over 5 ms
  sort -g "$1" | awk '{v[NR]=$1*1000; if ($1 > 0.005) o++} END {printf "%d scrapes: p50 %.2f ms, p99 %.2f ms, max %.2f ms, %d over 5 ms\n", NR, v[int(NR*0.5)+1], v[int(NR*0.99)+1], v[NR], o}'
}
cpu_secs() { awk '{printf "%.3f", ($14+$15)/100}' "/proc/$1/stat"; }

# Two exporters scraped in turn, so both see the same machine: one without --advise (the
# baseline), one with it (the defaults).
"$ZMEM" exporter --listen 127.0.0.1:19901 2>/dev/null & B=$!
"$ZMEM" exporter --listen 127.0.0.1:19902 --advise 2>/dev/null & E=$!
sleep 1
T0=$(date +%s.%N); C0=$(cpu_secs "$E"); CB0=$(cpu_secs "$B")
scrape "$SECS"
T1=$(date +%s.%N); C1=$(cpu_secs "$E"); CB1=$(cpu_secs "$B")
echo "without --advise: $(stats "$OUT/base")"
echo "with --advise:    $(stats "$OUT/adv")"
M=$(curl -s http://127.0.0.1:19902/metrics)
echo "$M" | grep -E "^zmem_advice_(sample_pages|panel_slots|population_pages|slots_read_total|sample_filled|sampler_cpu_seconds_total|swap_(in|out)_pages_per_second|recommended_info)"
awk -v a="$C0" -v b="$C1" -v c="$CB0" -v d="$CB1" -v t0="$T0" -v t1="$T1" 'BEGIN {printf "process CPU over %.0f s: with --advise %.3f s = %.2f %% of one core; without %.3f s = %.2f %%\n", t1-t0, b-a, 100*(b-a)/(t1-t0), d-c, 100*(d-c)/(t1-t0)}'
grep -E "VmRSS|VmHWM" "/proc/$E/status"
grep -E "load average" /proc/loadavg 2>/dev/null; echo "load: $(cat /proc/loadavg)"

# The device frozen, the lab on it, beside the advisor's estimates.
kill -STOP "$P"; sleep 2
"$ZMEM" lab --source zram --observe 0 --json > "$OUT/lab.json" 2>/dev/null || echo "zmem lab failed"
echo "$M" | grep -E '^zmem_advice_pool_bytes' > "$OUT/adv_pool"
python3 - "$OUT/lab.json" "$OUT/adv_pool" "zram$N" <<'PY'
import json, sys, re
lab = json.load(open(sys.argv[1]))
ours = {}
for l in open(sys.argv[2]):
    m = re.match(r'zmem_advice_pool_bytes\{device="%s",config="([^"]+)"\} (\S+)' % sys.argv[3], l)
    if m: ours[m.group(1)] = float(m.group(2))
for r in (lab.get("estimates") or {}).get("rows", []):
    if r["algo"] in ours:
        p = r["pool_bytes"]; o = ours[r["algo"]]
        inside = p["low"] <= o <= p["high"]
        print(f'{r["algo"]:8} advisor pool {o:12.0f}  lab {p["estimate"]:12.0f} [{p["low"]:.0f}, {p["high"]:.0f}]  {"inside" if inside else "OUTSIDE"}')
PY
