#!/usr/bin/env bash
# zmem-fleet scaling: the same captures with 1 and with 2 Ray workers, wall time of each run
# (Ray's start included, as a user sees it) and the speedup. Re-run on a quiet machine; the
# load average before each run is printed, since other work on the cores skews the ratio.
#
#   bench/fleet-scale.sh [CAPTURES] [PAGES] [WORKERS...]     (default: 16 4096 1 2)
#
# Builds the extension in release (maturin develop --release into .venv/, which
# ./scripts/test replaces with its dev build next time) and the captures with the CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
n=${1:-16}
pages=${2:-4096}
shift $(( $# < 2 ? $# : 2 ))
workers=("$@")
[ ${#workers[@]} -gt 0 ] || workers=(1 2)
venv=$root/.venv
[ -x "$venv/bin/maturin" ] || { echo "run ./scripts/test once first (it makes .venv/)" >&2; exit 1; }
export PYO3_PYTHON=$venv/bin/python
# ZMEM_BENCH_PROFILE=dev measures the dev build ./scripts/test made instead (no release build).
if [ "${ZMEM_BENCH_PROFILE:-release}" = dev ]; then
  flag=; bin=target/debug/zmem
else
  flag=--release; bin=target/release/zmem
fi
cargo build $flag --quiet -p zmem
(cd python && VIRTUAL_ENV=$venv "$venv/bin/maturin" develop $flag --quiet)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/captures"
for i in $(seq 1 "$n"); do
  kind=mixed; [ $((i % 4)) = 0 ] && kind=perf
  "$bin" gen --kind "$kind" --pages "$pages" --seed "$i" \
    -o "$dir/captures/host$(printf %02d "$i").zpages"
done
echo "machine: $(nproc) cores, $(uname -r); $n captures of $pages pages; ${ZMEM_BENCH_PROFILE:-release} build"
declare -A secs wall
for w in "${workers[@]}"; do
  echo "loadavg before --workers $w: $(cat /proc/loadavg)"
  t0=$(date +%s.%N)
  "$venv/bin/zmem-fleet" "$dir/captures" --out "$dir/out$w" --workers "$w" --no-progress \
    2> "$dir/log$w"
  t1=$(date +%s.%N)
  cat "$dir/log$w"
  wall[$w]=$(echo "$t1 - $t0" | bc -l)
  # The tasks' own span (first submission to last result), from zmem-fleet's summary line.
  secs[$w]=$(sed -n 's/.*, \([0-9.]*\) s; wrote.*/\1/p' "$dir/log$w")
  printf 'workers %s: %.1f s of tasks, %.1f s wall (Ray start included)\n' \
    "$w" "${secs[$w]}" "${wall[$w]}"
done
first=${workers[0]}
for w in "${workers[@]:1}"; do
  printf 'speedup %s -> %s workers: %.2fx (tasks), %.2fx (wall)\n' "$first" "$w" \
    "$(echo "${secs[$first]} / ${secs[$w]}" | bc -l)" "$(echo "${wall[$first]} / ${wall[$w]}" | bc -l)"
done
