#!/usr/bin/env bash
# A live zswap with a Python heap in a 150 MB memory cgroup over a 2 GiB swap file (zswap lzo);
# then `zmem lab`'s zswap Now against the kernel's debugfs. Cleans up what it made.
set -u
ZMEM=${1:-target/release/zmem}
P=/sys/module/zswap/parameters
SW=/var/tmp/zmem-exp.swap
CG=/sys/fs/cgroup/memory/zmem-exp-$$
saved=$(for f in enabled compressor max_pool_percent shrinker_enabled; do echo "$f=$(cat $P/$f)"; done)
mounted=0; grep -q " /sys/kernel/debug debugfs" /proc/mounts || { mount -t debugfs none /sys/kernel/debug; mounted=1; }
cleanup() {
  [ -n "${PY:-}" ] && kill -9 $PY 2>/dev/null; sleep 0.5
  rmdir $CG 2>/dev/null
  swapoff $SW 2>/dev/null; rm -f $SW
  echo N > $P/enabled
  for kv in $saved; do k=${kv%%=*}; v=${kv#*=}; [ $k != enabled ] && echo $v > $P/$k; done
  for kv in $saved; do k=${kv%%=*}; v=${kv#*=}; [ $k = enabled ] && echo $v > $P/$k; done
  [ $mounted = 1 ] && umount /sys/kernel/debug
}
trap cleanup EXIT
fallocate -l 2G $SW && chmod 600 $SW && mkswap -q $SW && swapon -p 5 $SW
echo N > $P/enabled; echo lzo > $P/compressor; echo 20 > $P/max_pool_percent; echo N > $P/shrinker_enabled; echo Y > $P/enabled
mkdir $CG && echo $((150<<20)) > $CG/memory.limit_in_bytes
( echo $BASHPID > $CG/cgroup.procs; exec python3 "$(dirname "$0")/pyheap.py" ) > /tmp/pyheap.out &
PY=$!
for i in $(seq 120); do grep -q ready /tmp/pyheap.out && break; sleep 1; done
sleep 2
kill -STOP $PY
D=/sys/kernel/debug/zswap
echo "before lab: stored $(cat $D/stored_pages) pool $(cat $D/pool_total_size)"
$ZMEM lab --observe 0 --json > /tmp/lab-zswap.json 2>/tmp/lab-zswap.err; echo "lab rc $?"
echo "after lab: stored $(cat $D/stored_pages) pool $(cat $D/pool_total_size)"
python3 - <<'PY'
import json
r=json.load(open('/tmp/lab-zswap.json'))
z=r['now']['zswap']
print('source', r.get('source',{}).get('kind') if isinstance(r.get('source'),dict) else r.get('source'))
for f in z['fields']: print(f)
p=z.get('prediction') or {}
print({k:p.get(k) for k in ('pages','offered_pages','stored_pages','compressed_bytes','pool_total_size','weighting')}); print('live ratio', z.get('live_ratio'), 'predicted ratio', z.get('predicted_ratio'))
PY
