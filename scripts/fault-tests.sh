#!/usr/bin/env bash
# Every test that kills a worker, fails a peer over or pauses something, run
# -count times with GOMAXPROCS=1: each holds its case open by a condition it
# observes (a fault hook, a heartbeat, a manifest record), never by timing,
# so a slow machine must not change whether the case is reached.
#
#   scripts/fault-tests.sh [COUNT]     default 5; needs sandbox/sandbox.sh up
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
count="${1:-5}"

# package: the tests of it that hold a fault
declare -A faults=(
  [./internal/app]='^(TestGovernanceSurvivesWorkerKill|TestJobUpgradeSurvivesWorkerKills|TestMaintenanceWindowSurvivesWorkerKills|TestRestoreDrillSurvivesWorkerKill|TestUpgradeRehearsalOnRealPeers|TestRollingUpgradeFinishesRunsOfThePreviousRelease|TestGovernanceFailoverDuringExecutionOnSecureHAHDFS|TestGovernanceActiveNameNodeDiesDuringExecutionOnSecureHAHDFS|TestQuotaWatchOutlivesTicketOnSecureHAHDFS|TestWindowTellsOnCallAndHoldsItsTenantsOnRealPeers|TestMaintenanceWindowHistoryStaysBoundedAtFleetScale|TestMaintenanceWindowOnRealPeers)$'
  [./internal/testsupport/e2e]='^(TestGovernanceWithThreeWorkersOneKilled|TestMaintenanceWindowWithThreeWorkersOneKilled|TestMaintenanceWindowSurvivesJobManagerFailover|TestMaintenanceWindowOnKerberizedHAHDFSAcrossNameNodeFailovers)$'
  [./internal/storage]='^(TestSecureHDFSFailoverDuringWork|TestSecureHDFSQuotaMatchesShell)$'
)
rc=0
for pkg in ./internal/app ./internal/testsupport/e2e ./internal/storage; do
  echo "== $pkg -count=$count GOMAXPROCS=1"
  GOMAXPROCS=1 go test -tags realpeers -race -count="$count" -p 1 -parallel 3 -timeout 180m \
    -run "${faults[$pkg]}" "$pkg" || rc=$?
done
exit "$rc"
