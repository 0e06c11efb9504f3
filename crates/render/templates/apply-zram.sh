dev=${ZMEM_ZRAM_DEVICE:-$ZMEM_DEVICE}
case $dev in
  zram | zram*[!0-9]*) refuse "$dev is not a zram device name (zram[0-9]+)" ;;
  zram*) ;;
  *) refuse "$dev is not a zram device name (zram[0-9]+)" ;;
esac
# The dictionary comes beside this script (never inside it): present and the one decided. A
# decision made from evidence came without one: it is trained here, on this machine's memory,
# into a private directory (nothing else of the memory is written), before anything changes.
dict_src=
dict_work=
if [ "$ZMEM_DICT" = 1 ] && [ "$ZMEM_DICT_TRAIN" = 1 ]; then
  dict_bin=$(command -v "$ZMEM_DICT_BIN") \
    || refuse "$ZMEM_DICT_BIN is not found (the dictionary is trained by zmem dict train --live)"
  dict_work=$(mktemp -d) || refuse "no private directory to train the dictionary in"
  dict_src=$dict_work/dict
  if ! "$dict_bin" dict train --live --algo "$ZMEM_ALGO" -o "$dict_src" > "$dict_work/log" 2>&1; then
    why=$(tail -n 1 "$dict_work/log")
    rm -rf "$dict_work"
    refuse "training the dictionary on this machine's memory failed: $why"
  fi
elif [ "$ZMEM_DICT" = 1 ]; then
  dict_src=$(dirname "$0")/$ZMEM_DICT_FILE
  [ -f "$dict_src" ] || refuse "the dictionary $dict_src is missing (zmem lab writes it beside this script)"
  sum=$(sha256sum < "$dict_src")
  [ "${sum%% *}" = "$ZMEM_DICT_SHA256" ] || refuse "$dict_src is not the dictionary decided (its SHA-256 differs)"
fi
if [ "$ZMEM_DICT" = 1 ]; then
  dict=$ROOT/etc/zmem/zram-dict
  save_file "$dict"
  mkdir -p "$(dirname "$dict")"
  install -m 0600 "$dict_src" "$dict"
  [ -z "$dict_work" ] || rm -rf "$dict_work"
fi
# 1. zswap off: zram decided, nothing cached in front of it.
zswap_was=N
if [ -e "$SYS/module/zswap/parameters/enabled" ]; then
  zswap_was=$(cat "$SYS/module/zswap/parameters/enabled")
  [ "$zswap_was" = N ] || zswap_set enabled N
fi
# 2. The zram device: what it was is saved, then apply_now reconfigures it.
sys=$SYS/block/$dev
if [ -d "$sys" ]; then
  prio=$(awk -v d="/dev/$dev" '$1 == d { print $5 }' "$PROC/swaps")
  echo "zram $dev was $(cat "$sys/disksize") $(sed 's/.*\[\(.*\)\].*/\1/' "$sys/comp_algorithm") ${prio:-none}" >> "$STATE/log"
  existed=1
else
  existed=0
fi
# apply_now: checks every state first (zram present, or loaded with modprobe; the device
# present, or hot-added; not mounted; the algorithms offered; recompression and
# algorithm_params present), then reconfigures, so that under `set -eu` it either stops before
# changing the device or runs to the end. From any state: no zram module, no device, a device
# that is not swap (reset, no swapoff), a zram swap in use (swapoff first), another swap area
# active (left alone; this one gets a priority above it).
apply_now() {
  # zram_drv.c: zram_init creates num_devices (1) at load; hot_add makes more.
  if [ ! -d "$SYS/class/zram-control" ] && [ ! -d "$sys" ] && command -v modprobe > /dev/null 2>&1; then
    modprobe zram || true
  fi
  if [ ! -d "$SYS/class/zram-control" ] && [ ! -d "$sys" ]; then
    echo "zmem: this kernel has no zram (no /sys/class/zram-control: CONFIG_ZRAM off or the module missing); nothing was changed" >&2
    return 1
  fi
  if [ ! -d "$sys" ]; then
    # hot_add gives the lowest free number, which may not be $dev's.
    new=zram$(cat "$SYS/class/zram-control/hot_add")
    if [ "$new" != "$dev" ]; then
      echo "zmem: $dev does not exist; hot_add made $new, which is configured instead" >&2
      dev=$new
      sys=$SYS/block/$dev
    fi
  fi
  if awk -v d="/dev/$dev" '$1 == d { found = 1 } END { exit !found }' "$PROC/mounts"; then
    echo "zmem: /dev/$dev is mounted, not a swap device: nothing was changed" >&2
    return 1
  fi
  for algo in $ZMEM_ALGO $ZMEM_RECOMP; do
    if ! tr -d '[]' < "$sys/comp_algorithm" | tr ' ' '\n' | grep -qxF -e "$algo"; then
      echo "zmem: this kernel's zram offers no $algo ($(cat "$sys/comp_algorithm")): nothing was changed" >&2
      return 1
    fi
  done
  if [ -n "$ZMEM_RECOMP" ] && [ ! -e "$sys/recomp_algorithm" ]; then
    echo "zmem: this kernel's zram has no recomp_algorithm (CONFIG_ZRAM_MULTI_COMP off): nothing was changed" >&2
    return 1
  fi
  if [ "$ZMEM_DICT" = 1 ] && [ ! -e "$sys/algorithm_params" ]; then
    echo "zmem: this kernel's zram has no algorithm_params (Linux 6.12 or later): nothing was changed" >&2
    return 1
  fi
  # swapoff moves every page the device stores back into RAM: that much must be free.
  if awk -v d="/dev/$dev" '$1 == d { found = 1 } END { exit !found }' "$PROC/swaps"; then
    swapoff "/dev/$dev"
  fi
  # Above every other swap area (left as it is), so this one is filled first; 32767 is the
  # highest priority swapon takes (mm/swapfile.c: SWAP_FLAG_PRIO_MASK).
  prio=$(awk -v p="$ZMEM_PRIORITY" 'NR > 1 && $5 + 0 >= p { p = $5 + 1 } END { if (p > 32767) p = 32767; print p }' "$PROC/swaps")
  echo 1 > "$sys/reset"
  echo "$ZMEM_ALGO" > "$sys/comp_algorithm"
  if [ "$ZMEM_DICT" = 1 ]; then
    echo "algo=$ZMEM_ALGO dict=$dict" > "$sys/algorithm_params"
  fi
  i=1
  for algo in $ZMEM_RECOMP; do
    echo "algo=$algo priority=$i" > "$sys/recomp_algorithm"
    i=$((i + 1))
  done
  size_mib=$ZMEM_SIZE_MIB
  if [ "$size_mib" = 0 ]; then
    # MemTotal is in kB: kB / 2048 = floor(RAM in MiB / 2), as zram-generator's ram / 2.
    size_mib=$(($(awk '/^MemTotal:/ { print $2 }' "$PROC/meminfo") / 2048))
    [ "$size_mib" -le 4096 ] || size_mib=4096
  fi
  echo "${size_mib}M" > "$sys/disksize"
  # The most RAM the pool may take: past it zram refuses the write and the page stays in RAM
  # (drivers/block/zram/zram_drv.c zram_write_page()). Reset above cleared any earlier limit.
  [ "$ZMEM_MEM_LIMIT_MIB" = 0 ] || echo "${ZMEM_MEM_LIMIT_MIB}M" > "$sys/mem_limit"
  # A container without udev has no device node yet.
  if [ ! -b "/dev/$dev" ] && command -v udevadm > /dev/null 2>&1; then
    udevadm settle || true
  fi
  if [ ! -b "/dev/$dev" ]; then
    majmin=$(cat "$sys/dev")
    mknod "/dev/$dev" b "${majmin%%:*}" "${majmin##*:}"
  fi
  mkswap "/dev/$dev" > /dev/null
  swapon -p "$prio" "/dev/$dev"
  echo "zmem: /dev/$dev configured: $(cat "$sys/comp_algorithm"), ${size_mib} MiB, swap priority $prio" >&2
}
# write_units: the periodic recompression's service and timer (zram-generator has no
# one-shot triggers). The unit runs at boot on the real /sys, whatever ZMEM_SYSFS says.
UNIT=zmem-zram-recompress
write_units() {
  what='huge (incompressible by the primary) pages'
  [ "$ZMEM_MARK_IDLE" = 0 ] || what='pages idle for a whole period'
  at=/sys/block/$dev
  cmds="echo '$ZMEM_RECOMPRESS' > $at/recompress && echo 1 > $at/compact"
  [ "$ZMEM_MARK_IDLE" = 0 ] || cmds="$cmds && echo all > $at/idle"
  mkdir -p "$ROOT/etc/systemd/system"
  for u in service timer; do
    save_file "$ROOT/etc/systemd/system/$UNIT.$u"
  done
  printf '[Unit]\nDescription=Recompress %s of /dev/%s with the secondary algorithm (zmem lab)\nAfter=systemd-zram-setup@%s.service swap.target\nConditionPathExists=%s/recompress\n\n[Service]\nType=oneshot\nExecStart=/bin/sh -c "%s"\n' \
    "$what" "$dev" "$dev" "$at" "$cmds" > "$ROOT/etc/systemd/system/$UNIT.service"
  printf '[Unit]\nDescription=Recompress zram pages every %s s (zmem lab)\n\n[Timer]\nOnBootSec=%ss\nOnUnitActiveSec=%ss\n\n[Install]\nWantedBy=timers.target\n' \
    "$ZMEM_PERIOD" "$ZMEM_PERIOD" "$ZMEM_PERIOD" > "$ROOT/etc/systemd/system/$UNIT.timer"
}
apply_now
[ "$existed" = 1 ] || echo "zram $dev created" >> "$STATE/log"
if [ "$persist" = 1 ]; then
  # 3. At every boot: zram-generator's drop-in for this device.
  algos=$ZMEM_ALGO
  [ "$ZMEM_DICT" = 0 ] || algos="$ZMEM_ALGO(dict=/etc/zmem/zram-dict)"
  for algo in $ZMEM_RECOMP; do algos="$algos $algo"; done
  zram_size=$ZMEM_SIZE_MIB
  [ "$zram_size" != 0 ] || zram_size='min(ram / 2, 4096)'
  f=$ROOT/etc/systemd/zram-generator.conf.d/60-zmem.conf
  mkdir -p "$(dirname "$f")"
  save_file "$f"
  printf '# zmem lab: %s\n[%s]\nzram-size = %s\ncompression-algorithm = %s\nswap-priority = %s\n' \
    "$ZMEM_CONFIG" "$dev" "$zram_size" "$algos" "$ZMEM_PRIORITY" > "$f"
  [ "$ZMEM_MEM_LIMIT_MIB" = 0 ] || echo "zram-resident-limit = $ZMEM_MEM_LIMIT_MIB" >> "$f"
  if [ "$zswap_was" != N ]; then
    f=$ROOT/etc/tmpfiles.d/zmem-zswap.conf
    mkdir -p "$(dirname "$f")"
    save_file "$f"
    echo 'w /sys/module/zswap/parameters/enabled - - - - N' > "$f"
  fi
  if [ -n "$ZMEM_RECOMPRESS" ]; then
    write_units
    if [ -z "$ROOT" ] && command -v systemctl > /dev/null 2>&1; then
      systemctl daemon-reload && systemctl enable --now "$UNIT.timer" && echo "unit $UNIT.timer" >> "$STATE/log"
    fi
  fi
  reload
fi
