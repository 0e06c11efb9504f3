#!/usr/bin/env bash
# zram write/read speed of a fresh `zmem zram` process against the kernel's zram, as issue 20
# measures it (docs/BENCHMARKS.md, "zram against the kernel"):
#  1. cold: per algorithm and run, the kernel's zram (one `dd bs=1M oflag=direct` writer, as
#     ../shared/tools/kernel-zram-speed) and right after it a fresh `zmem zram --threads 1`;
#  2. threads: `zmem zram --threads 1` and `--threads 2`, fresh processes, alternating;
#  3. the kernel with two direct-I/O writers (and two readers) at different offsets, against
#     `zmem zram --threads 2`.
# Every zram device made here is hot-added by this script and reset and removed on exit, failure
# included; nothing else is touched. Needs root and the kernel's zram for parts 1 and 3.
# Usage: bench/zram-speed.sh PAGEFILE [ZMEM_BINARY] [RUNS] [ALGOS]
#   e.g. bench/zram-speed.sh pages.bin target/release/zmem 5 "lzo-rle lz4"
# COLD_ONLY=1 runs part 1 alone; ZMEM2=BINARY adds a second fresh `zmem zram` per part-1 run,
# against the same kernel run, the two binaries' order alternating (a build against a build).
set -euo pipefail
FILE=${1:?usage: bench/zram-speed.sh PAGEFILE [ZMEM_BINARY] [RUNS] [ALGOS]}
ZMEM=${2:-target/release/zmem}
RUNS=${3:-5}
ALGOS=${4:-lzo-rle lz4}
COLD_ONLY=${COLD_ONLY:-0}
ZMEM2=${ZMEM2:-}
DEV=
cleanup() {
  if [ -n "$DEV" ]; then
    echo 1 > "/sys/block/zram$DEV/reset" 2>/dev/null || true
    echo "$DEV" > /sys/class/zram-control/hot_remove 2>/dev/null || true
    DEV=
  fi
}
trap cleanup EXIT

now() { date +%s.%N; }

# kernel ALGO WRITERS: prints "write_MBps read_MBps" of a fresh kernel zram device written by
# WRITERS concurrent dd processes (1 MiB direct I/O), each its own contiguous share of the file
# at the same offset on the device, then read back likewise.
kernel() {
  local algo=$1 writers=$2 size mib per t0 t1 t2 w pids
  trap cleanup EXIT # this runs in a subshell (`< <(kernel ...)`), which has its own traps
  size=$(stat -c %s "$FILE"); mib=$((size / 1048576)); per=$(((mib + writers - 1) / writers))
  DEV=$(cat /sys/class/zram-control/hot_add)
  echo "$algo" > "/sys/block/zram$DEV/comp_algorithm"
  echo $((mib + 2))M > "/sys/block/zram$DEV/disksize"
  cat "$FILE" > /dev/null
  pids=(); t0=$(now)
  for ((w = 0; w < writers; w++)); do
    dd if="$FILE" of="/dev/zram$DEV" bs=1M oflag=direct skip=$((w * per)) seek=$((w * per)) \
      count=$per status=none & pids+=($!)
  done
  wait "${pids[@]}"; t1=$(now); pids=()
  for ((w = 0; w < writers; w++)); do
    dd if="/dev/zram$DEV" of=/dev/null bs=1M iflag=direct skip=$((w * per)) \
      count=$((w == writers - 1 ? mib - w * per : per)) status=none & pids+=($!)
  done
  wait "${pids[@]}"; t2=$(now)
  cleanup
  python3 -c "print(round($mib*1048576/1e6/($t1-$t0)), round($mib*1048576/1e6/($t2-$t1)))"
}

# ours ALGO THREADS [BINARY]: "write_MBps read_MBps" of a fresh `zmem zram` process.
ours() {
  "${3:-$ZMEM}" zram --algo "$1" --threads "$2" --json "$FILE" |
    python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["verified"]; print(round(r["write_mbps"]), round(r["read_mbps"]))'
}

echo "# $(date -u +%FT%TZ) $FILE, $(($(stat -c %s "$FILE") / 4096)) pages, loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# THP enabled: $(cat /sys/kernel/mm/transparent_hugepage/enabled), defrag: $(cat /sys/kernel/mm/transparent_hugepage/defrag)"
ratio() { python3 -c "print(f'{$1/$2:.2f}')"; }
for algo in $ALGOS; do
  echo "## $algo: cold, one thread (kernel one writer, then a fresh zmem zram)"
  for ((r = 1; r <= RUNS; r++)); do
    read -r kw kr < <(kernel "$algo" 1)
    if [ -z "$ZMEM2" ]; then
      read -r zw zr < <(ours "$algo" 1)
      echo "run $r: kernel $kw/$kr MB/s, zmem $zw/$zr MB/s (write/read), zmem/kernel write $(ratio "$zw" "$kw") read $(ratio "$zr" "$kr")"
    else
      if ((r % 2)); then order=("$ZMEM" "$ZMEM2"); else order=("$ZMEM2" "$ZMEM"); fi
      for bin in "${order[@]}"; do
        read -r zw zr < <(ours "$algo" 1 "$bin")
        echo "run $r: kernel $kw/$kr MB/s, $bin $zw/$zr MB/s (write/read), zmem/kernel write $(ratio "$zw" "$kw") read $(ratio "$zr" "$kr")"
      done
    fi
  done
  [ "$COLD_ONLY" = 1 ] && continue
  echo "## $algo: threads (fresh processes, alternating; kernel with as many dd writers)"
  for ((r = 1; r <= RUNS; r++)); do
    read -r w1 r1 < <(ours "$algo" 1)
    read -r w2 r2 < <(ours "$algo" 2)
    read -r k2w k2r < <(kernel "$algo" 2)
    echo "run $r: zmem t1 $w1/$r1, t2 $w2/$r2 (t2/t1 write $(ratio "$w2" "$w1") read $(ratio "$r2" "$r1")); kernel 2 writers $k2w/$k2r (zmem t2 / kernel 2 write $(ratio "$w2" "$k2w") read $(ratio "$r2" "$k2r"))"
  done
done
echo "# loadavg after: $(cut -d' ' -f1-3 /proc/loadavg)"
