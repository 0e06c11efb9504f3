# Proactive reclaim, where the decision has it: zmem's agent pages out anonymous memory idle
# for ZMEM_AGENT_COLD_AGE seconds with process_madvise(MADV_PAGEOUT), at most
# ZMEM_AGENT_CPU_BUDGET % of a core, pausing while memory PSI some avg10 is over
# ZMEM_AGENT_PSI_LIMIT %; or zmem memcg-reclaim asks cgroup v2's memory.reclaim of each cgroup
# in ZMEM_MEMCG_TARGETS for its bytes idle for ZMEM_MEMCG_COLD_AGE seconds, within the same
# kind of budget. It runs now, and at every boot unless --no-persist (a systemd unit).
AGENT_UNIT=zmem-agent.service
if [ "$ZMEM_AGENT" = 1 ]; then
  cold_age=$ZMEM_AGENT_COLD_AGE
  set -- agent --cold-age "$ZMEM_AGENT_COLD_AGE" --cpu-budget "$ZMEM_AGENT_CPU_BUDGET" \
    --psi-limit "$ZMEM_AGENT_PSI_LIMIT" --status /run/zmem/agent.json \
    --predicted-moved-out "$ZMEM_AGENT_PREDICTED_MOVED_OUT" \
    --predicted-swap-ins "$ZMEM_AGENT_PREDICTED_SWAP_INS" \
    --predicted-saved "$ZMEM_AGENT_PREDICTED_SAVED"
  [ -z "$ZMEM_AGENT_EXCLUDE" ] || set -- "$@" --exclude "$ZMEM_AGENT_EXCLUDE"
elif [ "$ZMEM_MEMCG" = 1 ]; then
  AGENT_UNIT=zmem-memcg-reclaim.service
  cold_age=$ZMEM_MEMCG_COLD_AGE
  set -- memcg-reclaim --cold-age "$ZMEM_MEMCG_COLD_AGE" --period "$ZMEM_MEMCG_PERIOD" \
    --cpu-budget "$ZMEM_MEMCG_CPU_BUDGET" --psi-limit "$ZMEM_MEMCG_PSI_LIMIT" \
    --status /run/zmem/agent.json --target "$ZMEM_MEMCG_TARGETS"
fi
# systemd_runs: whether the units are started through systemd (it runs, and the script
# writes into the live root).
systemd_runs() {
  [ -z "$ROOT" ] && [ -d /run/systemd/system ] && command -v systemctl > /dev/null 2>&1
}
# install_unit UNIT: writes stdin as UNIT's file and enables it for every boot, both saved for
# the undo. Every value in its ExecStart lines was checked against its grammar: no space, quote
# or %.
install_unit() {
  f=$ROOT/etc/systemd/system/$1
  w=$ROOT/etc/systemd/system/multi-user.target.wants/$1
  mkdir -p "$(dirname "$w")"
  save_file "$f"
  cat > "$f"
  save_file "$w"
  ln -sf "../$1" "$w"
}
# start_unit UNIT: through systemd, logged for the undo's disable.
start_unit() {
  systemctl daemon-reload
  systemctl start "$1"
  echo "unit $1" >> "$STATE/log"
  echo "zmem: proactive reclaim runs as $1" >&2
}
if [ "$ZMEM_AGENT" = 1 ] || [ "$ZMEM_MEMCG" = 1 ]; then
  if [ "$persist" = 1 ]; then
    printf '[Unit]\nDescription=zmem proactive reclaim: pages out memory idle for %s s (zmem lab)\nAfter=swap.target\n\n[Service]\nExecStart=%s %s\nRestart=on-failure\n\n[Install]\nWantedBy=multi-user.target\n' \
      "$cold_age" "$agent_bin" "$*" | install_unit "$AGENT_UNIT"
  fi
  if [ "$persist" = 1 ] && systemd_runs; then
    start_unit "$AGENT_UNIT"
  else
    # No systemd running (or --no-persist): a process of its own, which the undo stops.
    nohup "$agent_bin" "$@" > "$STATE/agent.log" 2>&1 < /dev/null &
    echo "agent $!" >> "$STATE/log"
    echo "zmem: proactive reclaim runs as pid $! (log: $STATE/agent.log)" >&2
  fi
fi
# Or a DAMON pageout scheme in a kdamond of zmem's own (zmem damon start): anonymous memory
# idle for ZMEM_DAMON_COLD_AGE seconds, a CPU quota of ZMEM_DAMON_CPU_BUDGET % of a core, the
# quota tuned to keep memory PSI some under ZMEM_DAMON_PSI_LIMIT %. The undo stops that kdamond
# only (known by its pid).
DAMON_UNIT=zmem-damon.service
if [ "$ZMEM_DAMON" = 1 ]; then
  set -- damon start --cold-age "$ZMEM_DAMON_COLD_AGE" --cpu-budget "$ZMEM_DAMON_CPU_BUDGET" \
    --psi-limit "$ZMEM_DAMON_PSI_LIMIT" --pid-file /run/zmem/damon.pid
  [ -z "$ZMEM_DAMON_EXCLUDE" ] || set -- "$@" --exclude "$ZMEM_DAMON_EXCLUDE"
  if [ "$persist" = 1 ]; then
    printf '[Unit]\nDescription=zmem proactive reclaim: a DAMON scheme pages out memory idle for %s s (zmem lab)\nAfter=swap.target\n\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=%s %s\nExecStop=%s damon stop --pid-file /run/zmem/damon.pid\n\n[Install]\nWantedBy=multi-user.target\n' \
      "$ZMEM_DAMON_COLD_AGE" "$agent_bin" "$*" "$agent_bin" | install_unit "$DAMON_UNIT"
  fi
  if [ "$persist" = 1 ] && systemd_runs; then
    start_unit "$DAMON_UNIT"
  else
    pid=$("$agent_bin" "$@")
    echo "damon $pid $agent_bin" >> "$STATE/log"
    echo "zmem: proactive reclaim runs as kdamond pid $pid" >&2
  fi
fi
echo 'done' > "$STATE/applied"
echo "zmem: applied; the undo script puts it back" >&2
