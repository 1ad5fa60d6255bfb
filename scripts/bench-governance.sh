#!/usr/bin/env bash
# Governance at scale on the sandbox HDFS: a tree of retired job dirs (built
# once, reused), planned and executed in trash mode by 1 and by 3 worker
# processes. Prints, per worker count: plan and gather time, execution
# items/s, shard activities, peak worker RSS, history events.
#   scripts/bench-governance.sh [items] [files-per-item] [workers]
#   defaults: 500000 1 1,3
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
ITEMS="${1:-500000}" FILES="${2:-1}" WORKERS="${3:-1,3}"
for v in "$ITEMS" "$FILES"; do
  if ! [[ "$v" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 [items] [files-per-item] [workers, e.g. 1,3]   (items and files: positive numbers; got '$v')" >&2
    exit 2
  fi
done
scripts/temporal-dev.sh cli
sandbox/sandbox.sh up >/dev/null
echo "governance over $ITEMS retired job dirs of $FILES file(s), workers $WORKERS (no -race); the first run builds the tree"
FLINKMAINT_BENCH_GOVERNANCE=1 FLINKMAINT_BENCH_ITEMS="$ITEMS" FLINKMAINT_BENCH_FILES_PER_ITEM="$FILES" FLINKMAINT_BENCH_WORKERS="$WORKERS" \
  go test -tags realpeers -count=1 -timeout 4h -run 'TestGovernanceBench$' -v ./internal/testsupport/e2e/ |
  grep -E 'governance_bench_test|^governance bench|^(--- |ok|FAIL)'
