#!/usr/bin/env bash
# The replay checked against the live kernel (issue 22's goal): `zmem validate replay` on 3 page
# sets x 3 RAM budgets (25, 50 and 75 % of the pages the trace touches), one Markdown table row
# per run: kernel and zmem swap-outs, swap-ins, peak and final zram pool, and zmem's errors.
# Page sets: `mixed` (typical anonymous memory), `perf` (seed 004's val + i words) and a capture
# of a real Python heap (`zmem capture`), each at least PAGES pages, with one Zipf trace of ACCESSES
# accesses over them (`zmem trace gen`, no idle periods: the player runs flat out).
# Needs root, kernel zram and a memory cgroup (`zmem validate replay` refuses otherwise); every
# run cleans up after itself, and this script removes its temporary files.
# The kernel's side is the median of RUNS runs (`--kernel-runs`); the last column lists every
# run's swap-outs and how many failed (OOM-killed or out of time).
# Usage: bench/validate-replay.sh [ZMEM_BINARY] [PAGES] [ACCESSES] [RUNS]
set -eu
ZMEM=${1:-target/release/zmem}
PAGES=${2:-16384}
ACCESSES=${3:-400000}
RUNS=${4:-3}
T=$(mktemp -d /tmp/zmem-validate-XXXXXX)
PY=
cleanup() {
  if [ -n "$PY" ]; then kill "$PY" 2>/dev/null; wait "$PY" 2>/dev/null || true; fi
  rm -rf "$T"
}
trap cleanup EXIT

"$ZMEM" gen --kind mixed --pages "$PAGES" --seed 1 -o "$T/mixed.zps"
"$ZMEM" gen --kind perf --pages "$PAGES" --seed 2 -o "$T/perf.zps"
# A real heap: dicts, lists of floats and strings, the first PAGES resident pages captured.
python3 -c '
import gc, random, sys, time; gc.disable(); random.seed(3)
d = [("k%d" % i, [random.random() for _ in range(12)], "text %d " % i * (i % 40)) for i in range(300000)]
print("ready", flush=True); sys.stdin.read()' > "$T/py.out" < <(sleep 3600) &
PY=$!
for _ in $(seq 120); do grep -q ready "$T/py.out" 2>/dev/null && break; sleep 0.5; done
# (~35,000 pages: the trace touches the first PAGES of them; the rest are never mapped in.)
"$ZMEM" capture --pid "$PY" -o "$T/python.zps" >/dev/null
kill "$PY"; wait "$PY" 2>/dev/null || true; PY=

"$ZMEM" trace gen --pages "$PAGES" --accesses "$ACCESSES" --idle-ms 0 --seed 7 -o "$T/trace.trc"
TOUCHED=$("$ZMEM" trace info --json "$T/trace.trc" | sed -n 's/.*"pages_used": *\([0-9]*\).*/\1/p')
echo "pages $PAGES, accesses $ACCESSES, touched $TOUCHED, $(uname -r), $(date -u +%F)"
echo
echo "| page set | RAM | kernel out | zmem out | err | kernel in | zmem in | err | kernel peak pool | zmem peak pool | err | kernel final pool | zmem final pool | err | kernel runs' swap-outs |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for set in mixed perf python; do
  for pct in 25 50 75; do
    ram=$(( TOUCHED * pct / 100 * 4096 ))
    if ! "$ZMEM" validate replay --json --kernel-runs "$RUNS" --ram "$ram" "$T/$set.zps" "$T/trace.trc" > "$T/out.json"; then
      echo "| $set | $pct % | failed (see stderr) |"; continue
    fi
    python3 - "$set" "$pct" "$T/out.json" <<'EOF'
import json, sys
s, pct, f = sys.argv[1], sys.argv[2], sys.argv[3]
v = json.load(open(f))
k, z, e = v["kernel"], v["zmem"], v["error"]
pe = lambda x: "n/a" if x is None else "%+.1f %%" % (100 * x)
cells = [s, "%s %%" % pct]
for key in ["swap_outs", "swap_ins", "peak_pool_bytes", "final_pool_bytes"]:
    cells += [str(k[key]), str(z[key]), pe(e[key])]
runs = ", ".join(str(r["swap_outs"]) for r in v["kernel_runs"])
if v["kernel_failures"]:
    runs += " (+%d failed)" % len(v["kernel_failures"])
cells.append(runs)
print("| " + " | ".join(cells) + " |")
other = v["kernel_run"]["other_swaps"]
if other:
    print("note: other swap areas active during %s %s%%: %s" % (s, pct, ", ".join(other)), file=sys.stderr)
EOF
  done
done
