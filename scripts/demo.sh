#!/usr/bin/env bash
# `make demo`: a maintenance window on the sandbox, end to end.
#
# Starts the embedded Temporal dev server and the real peers (HDFS + two
# Flink clusters), submits sample stateful jobs for two tenants and leaves
# the first one (payments) near its namespace quota with the debris of
# months: retired jobs' checkpoints, orphaned shared/ files, old savepoints,
# the HA dir of a deleted cluster. It starts a worker, checks it with
# `flinkmaint ping`, adopts the old savepoints for their jobs, shows the
# quota, then runs a maintenance window over the jobs: savepoint-all,
# network gate (confirmed automatically after 10 s, for the demo only),
# quota gate with its projection, canary + wave restart, post-restart
# cleanup into the trash, report with the quota before and after.
# Temporal, the worker and the sandbox keep running so the UI can be
# explored; `make stop` ends everything.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
STATE="$ROOT/var/demo"
mkdir -p "$STATE"

scripts/temporal-dev.sh up
sandbox/java/run.sh up
make --no-print-directory build
go run ./sandbox/demo -out "$STATE"

if [[ -f "$STATE/worker.pid" ]] && kill -0 "$(cat "$STATE/worker.pid")" 2>/dev/null; then
  echo "restarting the demo worker with the fresh build"
  kill "$(cat "$STATE/worker.pid")"
  for _ in $(seq 1 40); do kill -0 "$(cat "$STATE/worker.pid")" 2>/dev/null || break; sleep 0.25; done
fi
setsid bin/flinkmaint-worker --config "$STATE/worker.yaml" >"$STATE/worker.log" 2>&1 </dev/null &
echo $! >"$STATE/worker.pid"
for _ in $(seq 1 60); do
  curl -fsS http://127.0.0.1:9090/readyz >/dev/null 2>&1 && break
  sleep 0.5
done
curl -fsS http://127.0.0.1:9090/readyz >/dev/null || { echo "worker did not start; log: $STATE/worker.log" >&2; tail -20 "$STATE/worker.log" >&2; exit 1; }
echo "worker up: health http://127.0.0.1:9090/healthz, metrics http://127.0.0.1:9090/metrics, log $STATE/worker.log"
echo
bin/flinkmaint ping --message "hello from make demo"
echo
echo "The payments jobs took savepoints before flinkmaint ran. Those their job's checkpoint history"
echo "no longer names are tied to no job by any evidence, and governance keeps them:"
bin/flinkmaint savepoints list --unknown
echo
echo "Adopt them for their jobs, so retention counts them:"
for job in $(cut -d' ' -f1 "$STATE/adopt.txt" | sort -u); do
  mapfile -t paths < <(awk -v j="$job" '$1 == j {print $2}' "$STATE/adopt.txt")
  bin/flinkmaint savepoints adopt --job "$job" "${paths[@]}"
done
echo
echo "Quota before the window (payments is past its warning watermark):"
bin/flinkmaint quota --watch ""
echo
cat <<'MSG'
Starting a maintenance window over the demo jobs. Watch it in the Temporal Web UI (link below):
the window's phase and job counts are its search attributes, each job has a savepoint and a
restart child workflow, and `bin/flinkmaint window status <id>` shows every job's state.
The network change is confirmed automatically after 10 s (policy.network.autoConfirmAfter,
demo only); in a real window an operator runs `flinkmaint window confirm-network-change <id>`.
After the restart, the cleanup moves what no restore can need into the trash at once
(policy.cleanup.mode: auto, demo only; the default, plan-and-approve, waits for
`flinkmaint governance approve`). The report ends with the quota before, at the restart gate
and after, and what the cleanup deleted by rule and kept by reason.
MSG
echo
bin/flinkmaint window start -f "$STATE/window.yaml" --wait
echo
echo "Temporal Web UI: http://localhost:8233 (filter: FlinkmaintKind = 'window')"
echo "Stop everything with: make stop"
