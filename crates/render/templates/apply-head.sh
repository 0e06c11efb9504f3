# Everything from here on is fixed text: it reads the values above and changes nothing else.
# Everything it changes is saved first in $ZMEM_STATE (default /var/lib/zmem/undo); the undo
# script (`zmem lab --undo-script FILE`) puts it back. ZMEM_ROOT prefixes the files it writes;
# ZMEM_SYSFS and ZMEM_PROCFS stand for /sys and /proc (tests point them at a fake tree).
set -eu
SYS=${ZMEM_SYSFS:-/sys}
PROC=${ZMEM_PROCFS:-/proc}
ROOT=${ZMEM_ROOT:-}
STATE=${ZMEM_STATE:-/var/lib/zmem/undo}
persist=1
for arg in "$@"; do
  case $arg in
    --no-persist) persist=0 ;;
    *) echo "usage: sh $0 [--no-persist]" >&2; exit 2 ;;
  esac
done
if [ "$(id -u)" != 0 ]; then
  echo 'zmem: run it as root (sudo sh THIS-FILE): nothing was changed' >&2
  exit 1
fi
if [ -e "$STATE/applied" ]; then
  echo "zmem: an earlier apply is not undone ($STATE): run its undo script first; nothing was changed" >&2
  exit 1
fi
mkdir -p "$STATE"
: > "$STATE/log"
# save_file PATH: back PATH up (or note that it did not exist) before writing it.
save_file() {
  key=$(printf '%s' "$1" | tr '/' '%')
  if [ -e "$1" ]; then cp -p "$1" "$STATE/file.$key"; else echo "created $1" >> "$STATE/log"; fi
  echo "file $1 $key" >> "$STATE/log"
}
# zswap_set NAME VALUE: save zswap's parameter, then write it.
zswap_set() {
  p=$SYS/module/zswap/parameters/$1
  grep -q "^zswap $1 " "$STATE/log" || echo "zswap $1 $(cat "$p")" >> "$STATE/log"
  echo "$2" > "$p"
}
# reload: systemd reads the files written into the live root.
reload() {
  if [ -z "$ROOT" ] && command -v systemctl > /dev/null 2>&1; then
    systemctl daemon-reload || true
  fi
}
echo applying > "$STATE/applied"
# refuse WHY: stop before anything was changed (the state directory holds no apply).
refuse() {
  echo "zmem: $1: nothing was changed" >&2
  rm -f "$STATE/applied"
  exit 1
}
# The proactive reclaim's agent (zmem agent), where the decision has one: found before
# anything changes.
agent_bin=
if [ "$ZMEM_AGENT" = 1 ] || [ "$ZMEM_DAMON" = 1 ] || [ "$ZMEM_MEMCG" = 1 ]; then
  agent_bin=$(command -v "${ZMEM_AGENT_BIN:-$ZMEM_BIN}") \
    || refuse "${ZMEM_AGENT_BIN:-$ZMEM_BIN} is not found (the proactive reclaim runs zmem agent, zmem damon or zmem memcg-reclaim: set ZMEM_AGENT_BIN to zmem's path)"
fi
# The DAMON scheme needs the admin interface as the lab found it: no kdamond at all (adding one
# to a list that has any would disturb its owner).
if [ "$ZMEM_DAMON" = 1 ]; then
  nr=$(cat "$SYS/kernel/mm/damon/admin/kdamonds/nr_kdamonds" 2> /dev/null) \
    || refuse "DAMON's sysfs interface is not there"
  [ "$nr" = 0 ] || refuse "DAMON's admin interface has $nr kdamond(s) now, none of them zmem's: run zmem lab again"
fi
