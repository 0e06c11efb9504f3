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
head -c 4096 /dev/urandom >"$tmp/random"
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
du -sh fuzz/seeds
