#!/usr/bin/env bash
# The test command of README.md and CI: builds the pinned tools, starts the
# real peers, runs every Go test with the race detector, stops the peers.
# A peer that cannot start fails the run; nothing is skipped for want of one.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if [[ ! -d "$ROOT/../shared/fixtures" ]]; then
  echo "note: ../shared is absent; tests that read its fixtures will say they skip" >&2
fi

# The pinned tools, the Maven sandbox and Chromium, built (or taken from the
# tools cache outside the clone, scripts/cache.sh) side by side: promtool
# checks deploy/monitoring, Alertmanager receives notifications, Helm and
# kustomize render deploy/, headless Chromium reads the Temporal Web UI.
scripts/build-tools.sh
# The peers start while the test binaries compile.
mkdir -p var/log
sandbox/sandbox.sh up >var/log/sandbox-up.log 2>&1 &
sandbox_up=$!
trap 'wait "$sandbox_up" 2>/dev/null; sandbox/sandbox.sh down' EXIT

# -tags realpeers: the tests that need a real peer (`make test-unit` leaves them out).
go vet -tags realpeers ./...
go vet -tags faulthooks ./worker
if ! wait "$sandbox_up"; then
  tail -n 40 var/log/sandbox-up.log >&2
  echo "the sandbox did not start; whole log: var/log/sandbox-up.log" >&2
  exit 1
fi
tail -n 1 var/log/sandbox-up.log
# The real-peer scenarios mostly wait (on Flink, on heartbeat timeouts after a
# kill, on Kerberos tickets), so three packages at a time, each with three
# tests at a time, keep two cores busy; the sandbox's clusters have 16 slots
# each, and every scenario runs its own few jobs.
# The report prints each package's result and a failing test's whole output,
# then ends with the failures, the slowest tests and each package's time;
# every event is kept in var/test.json.
mkdir -p var
go build -o bin/testreport ./internal/testsupport/testreport
rc=0
# The two longest packages are named first, so they start first; ./... adds
# the others in their order (each package runs once). Not more of the
# packages that run Flink jobs at once: their tests together would want
# more task slots than the shared clusters have.
go test -json -tags realpeers -race -count=1 -p 3 -parallel 3 -timeout 80m \
  ./internal/app ./deploy/image ./... 2>&1 |
  tee var/test.json | bin/testreport -slowest 15 || rc=$?
[[ "$rc" == 0 ]] || exit "$rc"

# The newcomer's path: README -> make demo -> docs/first-window.md, word for
# word (about 3.5 minutes; it ends with make stop).
echo
echo "newcomer path: running every command of docs/first-window.md (log: var/newcomer.log)"
if ! scripts/newcomer.sh >var/newcomer.log 2>&1; then
  tail -n 60 var/newcomer.log
  echo "newcomer path FAILED: a command of docs/first-window.md failed; whole log: var/newcomer.log" >&2
  exit 1
fi
tail -n 1 var/newcomer.log
