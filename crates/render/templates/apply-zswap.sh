# Checks first: zswap present and the compressor offered; nothing is changed otherwise.
if [ ! -d "$SYS/module/zswap/parameters" ]; then
  refuse 'this kernel has no zswap (CONFIG_ZSWAP off)'
fi
if ! awk '$1 == "name" { print $3 }' "$PROC/crypto" | grep -qxF -e "$ZMEM_COMPRESSOR" \
  && ! modprobe -q "crypto-$ZMEM_COMPRESSOR" 2> /dev/null; then
  refuse "the crypto API offers no $ZMEM_COMPRESSOR to zswap"
fi
swapfile=
if [ "$ZMEM_NEW_SWAPFILE" = 1 ]; then
  # 1. The swap file behind zswap: every page zswap stores keeps its slot there
  #    (mm/zswap.c: zswap_store() runs on a page that already has its swap slot).
  swapfile=${ZMEM_SWAPFILE:-$ZMEM_SWAPFILE_DEFAULT}
  if awk -v f="$swapfile" '$1 == f { found = 1 } END { exit !found }' "$PROC/swaps"; then
    echo "zmem: $swapfile is already swap" >&2
  else
    [ ! -e "$swapfile" ] || refuse "$swapfile exists and is not swap"
    mkdir -p "$(dirname "$swapfile")"
    echo "swapfile $swapfile" >> "$STATE/log"
    # fallocate where the file system has it (ext4, xfs), else zeros.
    fallocate -l "${ZMEM_SWAPFILE_MIB}M" "$swapfile" 2> /dev/null \
      || dd if=/dev/zero of="$swapfile" bs=1M count="$ZMEM_SWAPFILE_MIB" status=none
    chmod 600 "$swapfile"
    mkswap "$swapfile" > /dev/null
    swapon -p 10 "$swapfile"
  fi
else
  # 1. The disk swap behind zswap is there already.
  if ! awk -v f="$ZMEM_SWAP_BEHIND" '$1 == f { found = 1 } END { exit !found }' "$PROC/swaps"; then
    echo "zmem: note: $ZMEM_SWAP_BEHIND, the disk swap the lab saw, is not active now" >&2
  fi
fi
# 2. Every zram swap device off (only $ZMEM_ZRAM_DEVICE where it is set): zswap would
#    otherwise store in front of it.
only=${ZMEM_ZRAM_DEVICE:+/dev/$ZMEM_ZRAM_DEVICE}
awk -v only="$only" 'NR > 1 && $1 ~ "^/dev/zram" && (only == "" || $1 == only) { print $1, $5 }' "$PROC/swaps" > "$STATE/zram-swaps"
while read -r d p; do
  echo "swapoff $d $p" >> "$STATE/log"
  swapoff "$d"
done < "$STATE/zram-swaps"
rm -f "$STATE/zram-swaps"
# 3. zswap's parameters, enabled last: zswap starts storing with the others in place.
zswap_set compressor "$ZMEM_COMPRESSOR"
zswap_set max_pool_percent "$ZMEM_MAX_POOL_PERCENT"
zswap_set accept_threshold_percent "$ZMEM_ACCEPT_THRESHOLD_PERCENT"
zswap_set shrinker_enabled "$ZMEM_SHRINKER_ENABLED"
zswap_set enabled Y
if [ "$persist" = 1 ]; then
  f=$ROOT/etc/tmpfiles.d/zmem-zswap.conf
  mkdir -p "$(dirname "$f")"
  save_file "$f"
  w='w /sys/module/zswap/parameters/%s - - - - %s\n'
  {
    # shellcheck disable=SC2059 # $w is the fixed format above, the values its arguments.
    printf "$w" compressor "$ZMEM_COMPRESSOR" max_pool_percent "$ZMEM_MAX_POOL_PERCENT" \
      accept_threshold_percent "$ZMEM_ACCEPT_THRESHOLD_PERCENT" \
      shrinker_enabled "$ZMEM_SHRINKER_ENABLED" enabled Y
  } > "$f"
  zram_off=$(awk '$1 == "swapoff" { sub("/dev/", "", $2); print $2 }' "$STATE/log")
  if [ -n "$zram_off" ]; then
    f=$ROOT/etc/systemd/zram-generator.conf.d/60-zmem.conf
    mkdir -p "$(dirname "$f")"
    save_file "$f"
    for z in $zram_off; do printf '[%s]\nzram-size = 0\n' "$z"; done > "$f"
  fi
  if grep -q "^swapfile " "$STATE/log"; then
    unit=$(systemd-escape -p --suffix=swap "$swapfile" 2> /dev/null || echo zmem-swapfile.swap)
    f=$ROOT/etc/systemd/system/$unit
    mkdir -p "$(dirname "$f")" "$ROOT/etc/systemd/system/swap.target.wants"
    save_file "$f"
    printf '[Unit]\nDescription=zmem lab: the swap file behind zswap\n\n[Swap]\nWhat=%s\nPriority=10\n\n[Install]\nWantedBy=swap.target\n' "$swapfile" > "$f"
    save_file "$ROOT/etc/systemd/system/swap.target.wants/$unit"
    ln -sf "../$unit" "$ROOT/etc/systemd/system/swap.target.wants/$unit"
  fi
  reload
fi
