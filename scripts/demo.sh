#!/usr/bin/env bash
# `make demo`: the embedded default end to end. Starts the Temporal dev
# server (reused if running), starts a worker in the background, runs
# `flinkmaint ping` through it and prints where to look in the Web UI.
# Everything keeps running so the UI can be explored; `make stop` ends it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
STATE="$ROOT/var/demo"
mkdir -p "$STATE"

scripts/temporal-dev.sh up
make --no-print-directory build

if [[ -f "$STATE/worker.pid" ]] && kill -0 "$(cat "$STATE/worker.pid")" 2>/dev/null; then
  echo "worker already running (pid $(cat "$STATE/worker.pid")), restarting it with the fresh build"
  kill "$(cat "$STATE/worker.pid")"
  sleep 1
fi
setsid bin/flinkmaint-worker --http-listen 127.0.0.1:9090 --log-format console \
  >"$STATE/worker.log" 2>&1 </dev/null &
echo $! >"$STATE/worker.pid"
for _ in $(seq 1 60); do
  curl -fsS http://127.0.0.1:9090/healthz >/dev/null 2>&1 && break
  sleep 0.5
done
curl -fsS http://127.0.0.1:9090/healthz >/dev/null || { echo "worker did not start; log: $STATE/worker.log" >&2; tail -20 "$STATE/worker.log" >&2; exit 1; }
echo "worker up: health http://127.0.0.1:9090/healthz, metrics http://127.0.0.1:9090/metrics, log $STATE/worker.log"
echo
bin/flinkmaint ping --message "hello from make demo"
echo
echo "Open the Temporal Web UI at http://localhost:8233 and the link above to see the Ping run."
echo "Stop everything with: make stop"
