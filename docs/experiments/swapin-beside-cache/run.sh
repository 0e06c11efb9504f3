#!/bin/bash
# Runs swapin (built from swapin.c beside this script) in a fresh memory cgroup (v1) over a fresh
# zram swap, reading the cgroup's memory.stat every 10 ms as `zmem validate` does (each read
# flushes the cgroup's statistics, which reclaim's deactivation reads). Root; removes everything
# it made, also on failure, and touches nothing else.
#
#   run.sh LIMIT_MIB ANON_PAGES FILE_PAGES FILE_SHARE ACCESSES [WRAPPER...]
#
# e.g. run.sh 76 20000 0 0 2000000   and   run.sh 64 20000 6000 0.35 2000000
# WRAPPER, if given, runs in front of swapin (e.g. perf record -F 4000 -g -o anon.data).
set -euo pipefail
[ $# -ge 5 ] || { echo "usage: run.sh LIMIT_MIB ANON_PAGES FILE_PAGES FILE_SHARE ACCESSES [WRAPPER...]" >&2; exit 2; }
lim=$1 anon=$2 file=$3 share=$4 acc=$5; shift 5
for v in "$lim" "$anon" "$file" "$acc"; do [[ $v =~ ^[0-9]+$ ]] || { echo "run.sh: $v: not a count" >&2; exit 2; }; done
[[ $share =~ ^(0|0?\.[0-9]+|1)$ ]] || { echo "run.sh: $share: not a share in [0, 1]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
bin=$(mktemp -d)
gcc -O2 -o "$bin/swapin" "$here/swapin.c"
mem=/sys/fs/cgroup/memory
[ -d "$mem" ] || { echo "run.sh: needs cgroup v1 memory at $mem" >&2; exit 1; }
dev=$(cat /sys/class/zram-control/hot_add)
cg=$mem/zmem-swapin-$$
data=""
cleanup() {
    swapoff "/dev/zram$dev" 2>/dev/null || true
    echo 1 > "/sys/block/zram$dev/reset" 2>/dev/null || true
    echo "$dev" > /sys/class/zram-control/hot_remove 2>/dev/null || true
    if [ -d "$cg" ]; then
        while read -r p; do echo "$p" > "$mem/cgroup.procs" 2>/dev/null || true; done < "$cg/cgroup.procs"
        rmdir "$cg" 2>/dev/null || true
    fi
    [ -n "$data" ] && rm -f "$data"
    rm -rf "$bin"
}
trap cleanup EXIT
echo lzo-rle > "/sys/block/zram$dev/comp_algorithm"
echo 2G > "/sys/block/zram$dev/disksize"
mkswap "/dev/zram$dev" > /dev/null
swapon -p 32767 "/dev/zram$dev"
if [ "$file" -gt 0 ]; then
    data=$(mktemp /var/tmp/zmem-swapin.XXXXXX)
    head -c $((file * 4096)) /dev/urandom > "$data"
    sync "$data"
    python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$data"
fi
mkdir "$cg"
echo $((lim * 1024 * 1024)) > "$cg/memory.limit_in_bytes"
(while [ -d "$cg" ]; do cat "$cg/memory.stat" > /dev/null 2>&1 || true; sleep 0.01; done) &
poller=$!
set +e
bash -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' _ "$cg" "$@" "$bin/swapin" "$anon" "$file" "$share" "$acc" 7 ${data:+"$data"}
rc=$?
set -e
kill "$poller" 2>/dev/null || true
[ $rc -eq 0 ] || echo "run.sh: swapin exited $rc (137: OOM-killed; see dmesg)" >&2
exit $rc
