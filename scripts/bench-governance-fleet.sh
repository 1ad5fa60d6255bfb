#!/usr/bin/env bash
# Governance planning over a fleet of incremental jobs on the sandbox HDFS:
# jobs x (shared files + checkpoints x (_metadata + one private file)), the
# jobs recent, so every _metadata is retained and read. Built once, reused.
# Plans (mode plan) with 1 and 3 worker processes; prints plan and gather
# time, items planned and kept, peak worker RSS, history events.
#   scripts/bench-governance-fleet.sh [jobs] [checkpoints] [shared-per-job] [workers]
#   defaults: 5000 10 180 1,3  (1,000,000 files, 50,000 _metadata)
# Each checkpoint references 20 shared files, 15 on from the one before.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JOBS="${1:-5000}" CHECKPOINTS="${2:-10}" SHARED="${3:-180}" WORKERS="${4:-1,3}"
REFS=20 SHIFT=15
for v in "$JOBS" "$CHECKPOINTS" "$SHARED"; do
  if ! [[ "$v" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 [jobs] [checkpoints] [shared-per-job] [workers, e.g. 1,3]   (positive numbers; got '$v')" >&2
    exit 2
  fi
done
REFERENCED=$((SHIFT * (CHECKPOINTS - 1) + REFS))
if (( REFERENCED > SHARED )); then
  echo "$CHECKPOINTS checkpoints reference $REFERENCED shared files: want shared-per-job of at least that, got $SHARED" >&2
  exit 2
fi
scripts/temporal-dev.sh cli
sandbox/sandbox.sh up >/dev/null
ROOT_URI="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hdfs"]["uri"])' var/sandbox/peers.json)"
NAME="fleet-${JOBS}x${CHECKPOINTS}x${SHARED}"
META="$ROOT/var/bench/governance/$NAME"
# The _metadata name files by the sandbox HDFS's URI, whose port changes
# with each sandbox start: they are rewritten when it does.
if [[ "$(cat "$META/written-for" 2>/dev/null)" != "$ROOT_URI" ]]; then
  rm -rf "$META"
  go test -count=1 -run 'TestWriteFleetMetadata$' ./internal/checkpoint/ -fleet-out="$META" \
    -fleet-root="$ROOT_URI/flinkmaint-bench/governance/$NAME/tenant/checkpoints" \
    -fleet-jobs="$JOBS" -fleet-checkpoints="$CHECKPOINTS" -fleet-refs="$REFS" -fleet-shift="$SHIFT" >/dev/null
  echo -n "$ROOT_URI" > "$META/written-for"
fi
echo "governance plan over $JOBS jobs x ($SHARED shared + $CHECKPOINTS checkpoints), workers $WORKERS (no -race); the first run builds the tree"
FLINKMAINT_BENCH_FLEET=1 FLINKMAINT_BENCH_FLEET_METADATA="$META" FLINKMAINT_BENCH_FLEET_JOBS="$JOBS" \
  FLINKMAINT_BENCH_FLEET_CHECKPOINTS="$CHECKPOINTS" FLINKMAINT_BENCH_FLEET_SHARED="$SHARED" \
  FLINKMAINT_BENCH_FLEET_REFERENCED="$REFERENCED" FLINKMAINT_BENCH_WORKERS="$WORKERS" \
  go test -tags realpeers -count=1 -timeout 4h -run 'TestGovernanceFleetBench$' -v ./internal/testsupport/e2e/ |
  grep -E 'governance_bench_test|^governance fleet bench|^(--- |ok|FAIL)'
