#!/usr/bin/env bash
# `zmem validate lab` at scale (issue 43): at least 400 MB of real pages and a trace with at least
# 100,000 swap-outs, zram and zswap configurations, every run's JSON kept and summarised
# (bench/validate-lab-summary.py). Not part of any test suite: one run takes tens of minutes.
#
# Pages: PAGES if given, else the heaps of the compilers and cargo processes running now
# (`zmem capture`; at least 100,000 pages, retried every 20 s for 10 minutes). Trace: `zmem
# trace gen` over the pages (3,000,000 accesses, 60,000-page working sets, 6 phases, seed
# SEED). Needs root, kernel zram, zswap, a memory cgroup and no active swap area (the zswap runs
# refuse otherwise). Takes /tmp/zmem-live.lock, which the live tests take too.
# Usage: bench/validate-lab-scale.sh OUT_DIR [RUNS] [PAGES] [SEED]
set -eu
OUT=${1:?OUT_DIR}; RUNS=${2:-1}; PAGES=${3:-}; SEED=${4:-43}
ZMEM=${ZMEM:-target/debug/zmem}
mkdir -p "$OUT"
# The tool re-executes itself as the player: a copy, so a rebuild meanwhile cannot pull it away.
cp "$ZMEM" "$OUT/zmem"; ZMEM=$OUT/zmem
if [ -z "$PAGES" ]; then
  PAGES=$OUT/build.zps
  for _ in $(seq 30); do
    pids=$(ps -eo pid,comm | awk '$2=="rustc"||$2=="cargo"||$2=="clippy-driver"{printf " --pid %s", $1}')
    if [ -n "$pids" ]; then
      # shellcheck disable=SC2086
      "$ZMEM" capture $pids -o "$PAGES" 2>&1 | tail -1
      n=$(( $(stat -c %s "$PAGES") / 4096 ))
      [ "$n" -ge 100000 ] && break
    fi
    sleep 20
  done
fi
N=$(( $(stat -c %s "$PAGES") / 4096 ))
TRACE=$OUT/trace-$SEED.trc
"$ZMEM" trace gen --pages "$N" --accesses 3000000 --working-set 60000 --phases 6 --idle-ms 0 \
  --seed "$SEED" -o "$TRACE"
for r in $(seq "$RUNS"); do
  echo "run $r: $(date -u +%FT%TZ) $(uname -r) load $(cut -d' ' -f1-3 /proc/loadavg)"
  flock /tmp/zmem-live.lock "$ZMEM" validate lab --json --kernel-runs 3 --ram 200M --mount-debugfs \
    --zswap lzo --zswap lzo-rle,shrinker=on "$PAGES" "$TRACE" > "$OUT/run$r.json"
  python3 "$(dirname "$0")/validate-lab-summary.py" "$OUT/run$r.json" "run $r"
done
