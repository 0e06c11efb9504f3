#!/usr/bin/env bash
# Runs every cargo-fuzz target for SECONDS each (default 30) and fails on the first crash,
# panic, leak, timeout or out-of-memory. Each target starts from its committed seeds
# (fuzz/seeds/<target>/, read-only) plus what earlier runs found (fuzz/corpus/<target>/, not
# committed). Targets are built with debug assertions, so integer overflow is a crash too.
# A crash leaves its input in fuzz/artifacts/<target>/ and the log in fuzz/logs/<target>.log.
#
# Needs nightly and cargo-fuzz: `rustup toolchain install nightly; cargo install cargo-fuzz`.
# Usage: fuzz/run-all.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-30}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo +nightly fuzz list)
fi
cargo +nightly fuzz build -O -a
mkdir -p logs
printf '%-16s %12s %8s %s\n' target executions corpus result
failed=0
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  seeds=()
  [ -d "seeds/$t" ] && seeds=("seeds/$t")
  log="logs/$t.log"
  if cargo +nightly fuzz run -O -a "$t" "corpus/$t" "${seeds[@]}" -- \
    -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
    result=ok
  else
    result="CRASH (see fuzz/$log)"
    failed=1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  printf '%-16s %12s %8s %s\n' "$t" "${execs:-?}" "$(find "corpus/$t" -type f | wc -l)" "$result"
done
exit $failed
