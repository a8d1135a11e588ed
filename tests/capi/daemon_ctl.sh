#!/usr/bin/env bash
# Starts and stops the wombatkvd that a daemon-mode C ABI test talks to (see open_store in
# capi_c_test.c). One daemon per STATE directory, tracked by its pid file.
#
#   daemon_ctl.sh MODE STATE WOMBATKVD start DATA_DIR   (re)start on DATA_DIR; print client env
#   daemon_ctl.sh MODE STATE WOMBATKVD stop             stop it (SIGTERM, then SIGKILL)
#
# MODE is shm or tcp. "start" stops a running daemon first (SIGTERM: a graceful shutdown), so
# reopening a directory is a real daemon restart. It waits for /readyz, then prints
# WMBT_KV_REMOTE_PREFIX=... and WMBT_KV_RUN_DIR=..., or WMBT_KV_TCP_ADDR=..., for the client.
# The shared-memory daemon's socket and lock file go to a private run directory (short, under
# /tmp, for the socket path's limit), which "stop" removes.
set -euo pipefail
mode=$1 state=$2 daemon=$3 verb=$4 data_dir=${5:-}
mkdir -p "$state"
pidfile=$state/pid

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

stop() {
  [[ -f $pidfile ]] || return 0
  local pid
  pid=$(cat "$pidfile")
  rm -f "$pidfile"
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 200); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.05
  done
  echo "daemon_ctl: wombatkvd $pid ignored SIGTERM for 10 s; killing it" >&2
  kill -KILL "$pid" 2>/dev/null || true
}

# The run directory of STATE, made on first use and kept across restarts.
run_dir() {
  if [[ ! -f $state/run_dir || ! -d $(cat "$state/run_dir") ]]; then
    mktemp -d /tmp/wombatkv-capi.XXXXXX >"$state/run_dir"
  fi
  cat "$state/run_dir"
}

case $verb in
  stop)
    stop
    if [[ -f $state/run_dir ]]; then
      rm -rf "$(cat "$state/run_dir")"
      rm -f "$state/run_dir"
    fi
    ;;
  start)
    stop
    http_port=$(free_port)
    args=(--data-dir "$data_dir" --http "127.0.0.1:$http_port" --log-level warn)
    if [[ $mode == tcp ]]; then
      addr=127.0.0.1:$(free_port)
      args+=(--tcp "$addr")
      client_env="WMBT_KV_TCP_ADDR=$addr"
    else
      prefix=capitest$$
      args+=(--prefix "$prefix")
      export WMBT_KV_RUN_DIR
      WMBT_KV_RUN_DIR=$(run_dir)
      client_env="WMBT_KV_REMOTE_PREFIX=$prefix"$'\n'"WMBT_KV_RUN_DIR=$WMBT_KV_RUN_DIR"
    fi
    "$daemon" "${args[@]}" >>"$state/wombatkvd.log" 2>&1 &
    echo $! >"$pidfile"
    for _ in $(seq 1 400); do
      if curl -fs "http://127.0.0.1:$http_port/readyz" >/dev/null 2>&1; then
        echo "$client_env"
        exit 0
      fi
      if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
        echo "daemon_ctl: wombatkvd exited; its log:" >&2
        tail -20 "$state/wombatkvd.log" >&2
        exit 1
      fi
      sleep 0.05
    done
    echo "daemon_ctl: wombatkvd not ready after 20 s; its log:" >&2
    tail -20 "$state/wombatkvd.log" >&2
    exit 1
    ;;
  *) echo "usage: daemon_ctl.sh MODE STATE WOMBATKVD start DATA_DIR | stop" >&2; exit 2 ;;
esac
