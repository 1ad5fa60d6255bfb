#!/usr/bin/env bash
# A maintenance window over a simulated fleet (Flink's REST API simulated by
# internal/testsupport/flinksim; Temporal dev server, worker and local storage real),
# for the figures of a large window: wall time, runs, events and bytes of
# history per run, the carried state and the manifest. Prints figures; the
# only checks are the scale test's own (every job stopped once, restarted
# from its savepoint, each run's history within its budget).
#   scripts/bench-window.sh [jobs]   default 5000
# FLINKMAINT_SCALE_CONCURRENCY and FLINKMAINT_SCALE_SAVEPOINT_DELAY set the
# savepoint concurrency (default 40) and each simulated savepoint's time
# (default 20ms); `make bench-savepoints` uses them. The worker runs as its
# own process (the worker binary), so its peak RSS is its own;
# FLINKMAINT_SCALE_WORKER_PROCESS=0 runs it inside the test process instead.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JOBS="${1:-5000}"
if ! [[ "$JOBS" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 [jobs]   (a positive number; got '$JOBS')" >&2
  exit 2
fi
scripts/temporal-dev.sh cli
echo "window over $JOBS simulated jobs (no -race); this takes a few minutes"
FLINKMAINT_SCALE_CONCURRENCY="${FLINKMAINT_SCALE_CONCURRENCY:-40}" \
FLINKMAINT_SCALE_WORKER_PROCESS="${FLINKMAINT_SCALE_WORKER_PROCESS:-1}" FLINKMAINT_SCALE_JOBS="$JOBS" go test -tags realpeers -count=1 -timeout 60m \
  -run 'TestMaintenanceWindowHistoryStaysBoundedAtFleetScale$' -v ./internal/app/ |
  grep -E 'window_scale_test|^(--- |ok|FAIL)'
