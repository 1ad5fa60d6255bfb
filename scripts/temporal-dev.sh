#!/usr/bin/env bash
# The embedded default Temporal: the pinned CLI built from Go modules into
# ./bin and `temporal server start-dev` with its SQLite file under ./var.
#
#   scripts/temporal-dev.sh cli     build the CLI once (reused afterwards; kept in the
#                                   tools cache, scripts/cache.sh, for other clones)
#   scripts/temporal-dev.sh up      start the dev server, or reuse a running one
#   scripts/temporal-dev.sh down    stop it and remove its files
#   scripts/temporal-dev.sh status  say whether it runs
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/cache.sh
source "$ROOT/scripts/cache.sh"
CLI_VERSION="1.5.1"
CLI="$ROOT/bin/temporal"
STATE="$ROOT/var/temporal"
PID_FILE="$STATE/server.pid"
PORT="${TEMPORAL_DEV_PORT:-7233}"
UI_PORT="${TEMPORAL_DEV_UI_PORT:-8233}"
# The worker's codec endpoint (http://localhost:9090/codec), so the Web UI
# can show the compressed payloads of windows over thousands of jobs. Off by
# default: with it set, the UI cannot show payloads while no worker runs.
UI_CODEC_ENDPOINT="${FLINKMAINT_UI_CODEC_ENDPOINT:-}"

# Custom search attributes; kept equal to workflows/searchattrs.go by a test.
SEARCH_ATTRIBUTES=(
  FlinkmaintKind=Keyword
  FlinkmaintPhase=Keyword
  FlinkmaintTenants=KeywordList
  FlinkmaintJobsTotal=Int
  FlinkmaintJobsDone=Int
  FlinkmaintJobsFailed=Int
  FlinkmaintPausedForDecision=Bool
)

cli() {
  # The module version recorded in the binary says which CLI it is.
  # (grep reads a variable: under pipefail an early-exiting grep -q would
  # fail the pipe with the writer's SIGPIPE.)
  local mods
  if [[ -x "$CLI" ]] && mods="$(go version -m "$CLI" 2>/dev/null)" && grep -qE "^\s+mod\s+github.com/temporalio/cli\s+v$CLI_VERSION\s" <<<"$mods"; then
    return 0
  fi
  local module="github.com/temporalio/cli/cmd/temporal@v$CLI_VERSION"
  build_cli() {
    echo "Building the Temporal CLI v$CLI_VERSION from Go modules (first time on a machine: about 4-7 minutes on 2 cores)."
    GOBIN="$OUT" go install "$module"
  }
  cached_build temporal-cli "$(cache_key "$module")" "$ROOT/bin" temporal -- build_cli
}

healthy() {
  "$CLI" operator cluster health --address "127.0.0.1:$PORT" >/dev/null 2>&1
}

running_pid() {
  [[ -f "$PID_FILE" ]] || return 1
  local pid
  pid="$(cat "$PID_FILE")"
  kill -0 "$pid" 2>/dev/null && echo "$pid"
}

up() {
  cli
  if healthy; then
    echo "Temporal dev server already running on 127.0.0.1:$PORT (UI http://localhost:$UI_PORT)"
    return 0
  fi
  mkdir -p "$STATE"
  local args=(server start-dev --ip 127.0.0.1 --port "$PORT" --ui-port "$UI_PORT"
    --db-filename "$STATE/dev.db" --log-level warn --log-format json)
  for sa in "${SEARCH_ATTRIBUTES[@]}"; do args+=(--search-attribute "$sa"); done
  if [[ -n "$UI_CODEC_ENDPOINT" ]]; then args+=(--ui-codec-endpoint "$UI_CODEC_ENDPOINT"); fi
  # setsid: the server must outlive the make or shell that started it.
  setsid "$CLI" "${args[@]}" >"$STATE/server.log" 2>&1 < /dev/null &
  echo $! >"$PID_FILE"
  for _ in $(seq 1 120); do
    if healthy; then
      echo "Temporal dev server up: frontend 127.0.0.1:$PORT, Web UI http://localhost:$UI_PORT"
      return 0
    fi
    if ! running_pid >/dev/null; then
      echo "Temporal dev server exited; log follows ($STATE/server.log):" >&2
      tail -n 30 "$STATE/server.log" >&2
      return 1
    fi
    sleep 0.5
  done
  echo "Temporal dev server did not become healthy within 60 s; see $STATE/server.log" >&2
  return 1
}

down() {
  local pid
  if pid="$(running_pid)"; then
    kill "$pid"
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid"; fi
    echo "Temporal dev server stopped"
  else
    echo "Temporal dev server not running (no live pid in $PID_FILE)"
  fi
  rm -rf "$STATE"
}

status() {
  if healthy; then
    echo "running: frontend 127.0.0.1:$PORT, Web UI http://localhost:$UI_PORT"
  else
    echo "not running"
    return 1
  fi
}

case "${1:-}" in
  cli) cli ;;
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 cli|up|down|status" >&2; exit 2 ;;
esac
