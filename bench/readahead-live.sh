#!/bin/bash
# Swap readahead on the live kernel: bench/readahead-seq.c's two sequential passes over N pages
# in a memory cgroup (v1) limited to LIMIT, with a fresh swap file of ours (not synchronous, so
# faults read ahead) at the highest priority, zswap off or on (ZSWAP=N|Y; restored after).
# LOOP=1 puts the swap on a loop device over a file in /dev/shm instead (not rotational, so
# 6.18 reads ahead by VMA where vma_ra_enabled is true).
# Prints /proc/vmstat's swap_ra, swap_ra_hit, pswpin, zswpin deltas over the run (system-wide:
# other processes' swap-ins are in them) and the cgroup's pgmajfault, with the machine's
# vm.page-cluster, vma_ra_enabled and whether the swap file's disk is rotational (a rotational
# swap area makes 6.18 use cluster readahead whatever vma_ra_enabled says: nr_rotate_swap in
# swap_use_vma_readahead(), mm/swap_state.c). Run as root, one live experiment at a time:
#   flock /tmp/zmem-live.lock bench/readahead-live.sh
# Removes what it made (cgroup, swap area, files), and restores zswap's enabled, on any exit.
set -euo pipefail
N=${N:-4096}
LIMIT=${LIMIT:-8M}
ZSWAP=${ZSWAP:-N}
DIR=${DIR:-/var/tmp}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "$DIR/zmem-ra.XXXXXX")
cg=/sys/fs/cgroup/memory/zmem-ra-$$
zswap_param=/sys/module/zswap/parameters/enabled
zswap0=$(cat $zswap_param 2>/dev/null || echo N)
swapped=0
loopdev=
cleanup() {
	set +e
	if [ -d "$cg" ]; then
		for p in $(cat "$cg/cgroup.procs"); do kill -9 "$p"; done
		sleep 0.2
		rmdir "$cg"
	fi
	[ $swapped = 1 ] && swapoff "${loopdev:-$work/swap}"
	[ -n "$loopdev" ] && losetup -d "$loopdev"
	rm -rf "$work" "/dev/shm/$(basename "$work").img"
	[ -w $zswap_param ] && echo "$zswap0" > $zswap_param
}
trap cleanup EXIT INT TERM
gcc -O2 -o "$work/seq" "$here/readahead-seq.c"
area="$work/swap"
if [ "${LOOP:-0}" = 1 ]; then
	area="/dev/shm/$(basename "$work").img"
fi
dd if=/dev/zero of="$area" bs=1M count=$(( (N * 4096 + (8 << 20)) >> 20 )) status=none
chmod 600 "$area"
if [ "${LOOP:-0}" = 1 ]; then
	loopdev=$(losetup -f --show "$area")
	area=$loopdev
fi
mkswap -q "$area" >/dev/null
swapon -p 32767 "$area"
swapped=1
[ -w $zswap_param ] && echo "$ZSWAP" > $zswap_param
mkdir "$cg"
echo "$LIMIT" > "$cg/memory.limit_in_bytes"
keys='^(swap_ra|swap_ra_hit|pswpin|pswpout|zswpin|zswpout) '
v0=$(grep -E "$keys" /proc/vmstat)
sh -c "echo \$\$ > $cg/cgroup.procs && exec $work/seq $N"
v1=$(grep -E "$keys" /proc/vmstat)
majflt=$(awk '$1 == "pgmajfault" {print $2}' "$cg/memory.stat")
dev=${loopdev:-$(df --output=source "$work" | tail -1)}
blk=$(lsblk -no pkname "$dev" 2>/dev/null || true); [ -n "$blk" ] || blk=$(basename "$dev")
rot=$(cat "/sys/block/$blk/queue/rotational" 2>/dev/null || echo "?")
echo "kernel $(uname -r), page-cluster $(cat /proc/sys/vm/page-cluster), vma_ra_enabled $(cat /sys/kernel/mm/swap/vma_ra_enabled), swap file on $dev rotational $rot, zswap $(cat $zswap_param 2>/dev/null)"
echo "pages $N limit $LIMIT cgroup pgmajfault $majflt"
join <(echo "$v0" | sort) <(echo "$v1" | sort) | awk '{printf "%s %d\n", $1, $3 - $2}'
