# Undo what zmem lab's apply script changed. It reads what the apply saved in $ZMEM_STATE
# (default /var/lib/zmem/undo) and puts it back, last change first: zswap's parameters, the
# zram device (reconfigured as it was, or removed if the apply created it), the zram swap
# devices it swapped off, the swap file it made, and the files it wrote (restored, or removed
# if they did not exist). Run it as root. ZMEM_SYSFS and ZMEM_PROCFS stand for /sys and /proc.
set -eu
SYS=${ZMEM_SYSFS:-/sys}
PROC=${ZMEM_PROCFS:-/proc}
STATE=${ZMEM_STATE:-/var/lib/zmem/undo}
if [ "$(id -u)" != 0 ]; then
  echo 'zmem: run it as root: nothing was changed' >&2
  exit 1
fi
if [ ! -e "$STATE/applied" ]; then
  echo "zmem: nothing to undo ($STATE holds no apply)" >&2
  exit 0
fi
log=$STATE/log
# is_swap PATH: whether PATH is an active swap area.
is_swap() {
  awk -v f="$1" '$1 == f { found = 1 } END { exit !found }' "$PROC/swaps"
}
# 0. The proactive reclaim's agent it started, stopped first (nothing pages out while the rest is
#    undone). Only that process: a pid since reused by another program is left alone.
awk '$1 == "agent" { print $2 }' "$log" | while read -r pid; do
  if tr '\0' ' ' < "/proc/$pid/cmdline" 2> /dev/null | grep -qE ' (agent|memcg-reclaim) '; then
    kill "$pid" 2> /dev/null || true
    i=0
    while [ -d "/proc/$pid" ] && [ "$i" -lt 50 ]; do
      sleep 0.1
      i=$((i + 1))
    done
  fi
done
# 0b. The DAMON scheme's kdamond it started: zmem damon stop stops it only while kdamond 0
#    still has that pid and is the only one (another's is left alone).
awk '$1 == "damon" { print $2, $3 }' "$log" | while read -r pid bin; do
  "$bin" damon stop --pid "$pid" --pid-file /run/zmem/damon.pid || true
done
# 1. zswap's parameters as they were, enabled last.
awk '$1 == "zswap" && $2 != "enabled" { print $2, $3 }' "$log" | while read -r k v; do
  echo "$v" > "$SYS/module/zswap/parameters/$k"
done
awk '$1 == "zswap" && $2 == "enabled" { print $3 }' "$log" | while read -r v; do
  echo "$v" > "$SYS/module/zswap/parameters/enabled"
done
# 2. The units it started (the recompression timer, the agent).
awk '$1 == "unit" { print $2 }' "$log" | while read -r u; do
  systemctl disable --now "$u" || true
done
# 3. The zram device: removed if created, else configured as it was.
awk '$1 == "zram" && $3 == "created" { print $2 }' "$log" | while read -r dev; do
  if is_swap "/dev/$dev"; then swapoff "/dev/$dev"; fi
  echo 1 > "$SYS/block/$dev/reset"
  echo "${dev#zram}" > "$SYS/class/zram-control/hot_remove"
done
awk '$1 == "zram" && $3 == "was" { print $2, $4, $5, $6 }' "$log" | while read -r dev size algo prio; do
  if is_swap "/dev/$dev"; then swapoff "/dev/$dev"; fi
  echo 1 > "$SYS/block/$dev/reset"
  if [ "$size" != 0 ]; then
    echo "$algo" > "$SYS/block/$dev/comp_algorithm"
    echo "$size" > "$SYS/block/$dev/disksize"
    if [ "$prio" != none ]; then
      mkswap "/dev/$dev" > /dev/null
      swapon -p "$prio" "/dev/$dev"
    fi
  fi
done
# 4. The zram swap devices it swapped off, back on (their pages were moved out, their swap
#    header is intact).
awk '$1 == "swapoff" { print $2, $3 }' "$log" | while read -r d prio; do
  is_swap "$d" || swapon -p "$prio" "$d"
done
# 5. The swap file it made: off and removed.
awk '$1 == "swapfile" { print $2 }' "$log" | while read -r f; do
  if is_swap "$f"; then swapoff "$f"; fi
  rm -f "$f"
done
# 6. The files it wrote: restored, or removed where they did not exist.
awk '$1 == "file" { print $2, $3 }' "$log" | while read -r f key; do
  if [ -e "$STATE/file.$key" ]; then cp -p "$STATE/file.$key" "$f"; fi
done
awk '$1 == "created" { print $2 }' "$log" | while read -r f; do
  rm -f "$f"
done
if [ -z "${ZMEM_ROOT:-}" ] && command -v systemctl > /dev/null 2>&1; then
  systemctl daemon-reload || true
fi
rm -rf "$STATE"
echo 'zmem: undone' >&2
