#!/usr/bin/env bash
# `zmem lab --source zram` against a live zram swap device that this script makes and removes:
# a fresh zram device (lzo-rle, 256 MiB) as the highest-priority swap, a 40 MiB v1 memory cgroup,
# and in it a Python heap of ~100 MiB (gc disabled: a collector walking the heap under the limit
# thrashes and is OOM-killed) that swaps into the device; the program is frozen (SIGSTOP), then the
# lab runs. Everything made here is undone on exit, failure included; nothing else is touched.
# Root, kernel zram and the v1 memory controller at /sys/fs/cgroup/memory are needed.
# Usage: bench/live-lab.sh [ZMEM_BINARY] [extra zmem lab arguments...]
set -u
ZMEM=${1:-target/release/zmem}; shift || true
N=$(cat /sys/class/zram-control/hot_add) || exit 2
D=/dev/zram$N; CG=/sys/fs/cgroup/memory/zmem-live-lab-$$; P=
cleanup() {
  if [ -n "$P" ]; then kill -CONT "$P" 2>/dev/null; kill -9 "$P" 2>/dev/null; wait "$P" 2>/dev/null; fi
  swapoff "$D" 2>/dev/null
  echo 1 > "/sys/block/zram$N/reset"
  echo "$N" > /sys/class/zram-control/hot_remove
  rmdir "$CG" 2>/dev/null
}
trap cleanup EXIT
echo lzo-rle > "/sys/block/zram$N/comp_algorithm"
echo 256M > "/sys/block/zram$N/disksize"
mkswap "$D" >/dev/null && swapon -p 32000 "$D" || exit 2
mkdir "$CG" && echo 40M > "$CG/memory.limit_in_bytes" || exit 2
sh -c "echo \$\$ > $CG/cgroup.procs; exec python3 -c '
import gc, random, time; gc.disable()
d = [(\"k%d\" % i, [random.random() for _ in range(20)], \"text \" * (i % 50)) for i in range(400000)]
print(\"ready\", flush=True); time.sleep(600)'" >/dev/null &
P=$!
for _ in $(seq 60); do
  sleep 0.5
  [ "$(awk '{print $1}' "/sys/block/zram$N/mm_stat")" -gt 30000000 ] && break
done
kill -STOP "$P"
echo "live mm_stat: $(cat "/sys/block/zram$N/mm_stat")"
"$ZMEM" lab --source zram "$@"
