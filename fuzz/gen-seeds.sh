#!/usr/bin/env bash
# Regenerates the decoder seed corpora in fuzz/seeds/decode_*/: a few pages of different
# shapes (text, source code, half zeros, a zero run with sparse bytes, random, a short buffer),
# each compressed by `zmem compress` with every algorithm, so each decoder target starts from
# valid streams of its format and libFuzzer mutates from there. The pages themselves are added
# too (the targets also round-trip their input as a page).
#
# Usage: fuzz/gen-seeds.sh [ZMEM_BINARY]   (default: builds and uses target/debug/zmem)
set -euo pipefail
cd "$(dirname "$0")/.."
zmem=${1:-}
if [ -z "$zmem" ]; then
  cargo build -q -p zmem
  zmem=target/debug/zmem
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

page() { # stdin into FILE, cut or zero-padded to one 4 KiB page (no pipes into head: pipefail)
  cat >"$1"
  truncate -s 4096 "$1"
}
page "$tmp/text" <ARCHITECTURE.md
page "$tmp/code" <crates/zram/src/device.rs
{ head -c 2048 /dev/zero; head -c 2048 README.md; } | page "$tmp/halfzero"
{ head -c 1000 /dev/zero; printf 'x'; head -c 2000 /dev/zero; printf 'yz'; } | page "$tmp/zerorun"
for i in $(seq 1 128); do # 4096 incompressible bytes, the same on every run
  h=$(printf 'zmem-seed-%d' "$i" | sha256sum | cut -c1-64)
  printf "$(printf '%s' "$h" | sed 's/../\\x&/g')"
done >"$tmp/random"
head -c 100 README.md >"$tmp/short"

# decode_lzo reads both LZO bitstreams; decode_lz4hc feeds the lz4 decoder lz4hc's output.
for target in lzo lz4 lz4hc zstd deflate 842 lz4m wkdm; do
  rm -rf "fuzz/seeds/decode_$target"
done
for pair in lzo:lzo lzo:lzo-rle lz4:lz4 lz4hc:lz4hc zstd:zstd deflate:deflate 842:842 \
  lz4m:lz4m wkdm:wkdm; do
  target=decode_${pair%%:*}
  algo=${pair#*:}
  dir=fuzz/seeds/$target
  mkdir -p "$dir"
  for page in text code halfzero zerorun random short; do
    "$zmem" compress --algo "$algo" <"$tmp/$page" >"$dir/$page.$algo" \
      || rm -f "$dir/$page.$algo" # a codec may refuse a shape (e.g. a fixed-page codec)
  done
  cp "$tmp/text" "$dir/page.text"
  cp "$tmp/short" "$dir/page.short"
done
# Page sets (plain, zstd-compressed, and raw pages at the target's 512-byte raw page size),
# and traces.
dir=fuzz/seeds/parse_pageset
rm -rf "$dir" && mkdir -p "$dir"
"$zmem" gen --kind mixed --pages 6 --page-size 4096 --seed 1 -o "$dir/mixed-4k.zpages"
"$zmem" gen --kind perf --pages 4 --page-size 4096 --seed 2 --zstd 3 -o "$dir/perf-4k.zpages.zst"
head -c 2048 "$tmp/text" >"$dir/raw-512x4"
# Format version 2 (set metadata, zram-slot pages): the committed fixture that pins its bytes.
cp crates/workload/tests/fixtures/setmeta-v2.zpages "$dir/"
dir=fuzz/seeds/parse_trace
rm -rf "$dir" && mkdir -p "$dir"
"$zmem" trace gen --pages 64 --accesses 40 -o "$dir/small.trace"
"$zmem" trace gen --pages 8 --accesses 3 --phases 1 -o "$dir/tiny.trace"
"$zmem" trace gen --pages 1 --accesses 0 -o "$dir/empty.trace" 2>/dev/null || true
du -sh fuzz/seeds
