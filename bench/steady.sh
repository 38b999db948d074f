#!/usr/bin/env bash
# The peer harness's four endpoints (the echo app direct, behind mcp-proxy, supergateway and
# mcpapps), measured by bench/steady.py with their sessions kept open (see its docstring).
# Uses what ../shared/bench/run_peers.sh installed under ${TMPDIR:-/tmp}/benchpeers: run that
# once first. Arguments go to steady.py (e.g. --levels 1 --rounds 10); a first argument
# --floor adds bench/floor.py (the least a gateway on Hypercorn's Trio worker can do) as a fifth.
set -eu
FLOOR=0
[ "${1:-}" = --floor ] && { FLOOR=1; shift; }
cd "$(dirname "$0")/.."
B=$(cd ../shared/bench && pwd)
P=${BENCH_DIR:-${TMPDIR:-/tmp}/benchpeers}
PY=$P/venv/bin/python
[ -x "$PY" ] && [ -x "$P/venv-proxy/bin/mcp-proxy" ] && [ -x "$P/npm/node_modules/.bin/supergateway" ] ||
  { echo "steady.sh: run ../shared/bench/run_peers.sh once first (it installs the peers into $P)" >&2; exit 1; }
export ECHO_LOG_LEVEL=WARNING
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/steady-XXXX")
PIDS=()
cleanup() { # TERM, then KILL what is still there after 3 s
  for pid in "${PIDS[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
  for _ in $(seq 30); do
    alive=0
    for pid in "${PIDS[@]}"; do kill -0 -- "-$pid" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && return 0
    sleep 0.1
  done
  for pid in "${PIDS[@]}"; do kill -9 -- "-$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
start() { # name port command...: each in a process group of its own, so that cleanup takes all
  local name=$1 port=$2
  shift 2
  setsid "$@" </dev/null >"$LOGS/$name.log" 2>&1 &
  PIDS+=($!)
  WATCH+=(--watch "$name=$!")
  ENDPOINTS+=("$name=http://127.0.0.1:$port$PATH_OF")
  for _ in $(seq 100); do
    "$PY" -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && return 0
    sleep 0.2
  done
  echo "steady.sh: $name did not listen on $port; see $LOGS/$name.log" >&2
  exit 1
}

WATCH=()
ENDPOINTS=()
APP=("$PY" "$B/echo_app.py")
PATH_OF=/mcp
d=$(port); start direct "$d" env ECHO_JSON_RESPONSE=0 "${APP[@]}" http 127.0.0.1 "$d"
m=$(port); start mcp-proxy "$m" "$P/venv-proxy/bin/mcp-proxy" --host 127.0.0.1 --port "$m" \
  --log-level WARNING -- "${APP[@]}" stdio
s=$(port); start supergateway "$s" "$P/npm/node_modules/.bin/supergateway" --stdio "${APP[*]} stdio" \
  --outputTransport streamableHttp --stateful --port "$s" --logLevel none
PATH_OF=/apps/mcp/echo
o=$(port); start mcpapps "$o" env MCPAPPS="$PWD/.venv/bin/mcpapps" bash "$B/mcpapps_gateway.sh" "$o" \
  "${APP[@]}" stdio
if [ $FLOOR = 1 ]; then
  PATH_OF=/mcp
  f=$(port); start floor "$f" "$PWD/.venv/bin/python" bench/floor.py --port "$f" -- "${APP[@]}" stdio
fi
sleep 3 # mcpapps listens before its app has started
"$PY" bench/steady.py "${WATCH[@]}" "$@" "${ENDPOINTS[@]}"
