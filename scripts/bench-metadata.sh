#!/usr/bin/env bash
# Parse throughput of flinkmaint's _metadata reader beside Flink's own Java
# loader (Checkpoints.loadCheckpointMetadata, Flink 1.20 from the sandbox
# classpath), over the same files in the same run:
#   1. the shared fixtures Flink 1.20 can load (format versions 2-4);
#   2. a synthetic checkpoint of 5,000 subtasks x 20 shared files.
# Prints figures; asserts nothing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="$ROOT/var/bench/metadata"
mkdir -p "$OUT/synthetic/chk-1000"

sandbox/java/run.sh build >/dev/null
CP="$(cat var/sandbox/java-classpath.txt)"
JAVA_OPTS="$(tr '\n' ' ' < sandbox/java/conf/jvm-opts.txt 2>/dev/null || true)"

FIXTURES="$ROOT/../shared/fixtures/flink-metadata"
if [[ ! -d "$FIXTURES" ]]; then
  echo "$FIXTURES is absent: fixture comparison skipped" >&2
  fixtures=()
else
  # Flink 1.20 reads format versions 2-4; 5 and 6 come from Flink 2.x.
  mapfile -t fixtures < <(for f in "$FIXTURES"/*/_metadata; do
    v=$(od -An -j4 -N4 -tu1 "$f" | awk '{print $4}')
    if (( v >= 2 && v <= 4 )); then echo "$f"; fi
  done)
fi
# Version 4: the newest format Flink 1.20 loads, so both sides read the same file.
go test -count=1 -run TestWriteSynthetic ./internal/checkpoint/ -synthetic-out="$OUT/synthetic/chk-1000/_metadata" -synthetic-version=4 >/dev/null
go build -o "$OUT/gobench" ./internal/checkpoint/bench

# Runs per side: each prints the median and spread of its timed runs.
RUNS="${FLINKMAINT_BENCH_RUNS:-5}"
# compare LABEL ITERATIONS FILE...: both readers over the same files, then the ratio of their medians.
compare() {
  local label="$1" iterations="$2" go_out java_out go_mbps java_mbps
  shift 2
  echo "== $label"
  go_out="$("$OUT/gobench" -iterations "$iterations" -runs "$RUNS" "$@")"
  grep -v '^GO_MEDIAN_MBPS=' <<<"$go_out"
  # shellcheck disable=SC2086
  java_out="$(java $JAVA_OPTS -Xmx2g -cp "$CP" io.github.flinkmaint.sandbox.peers.MetadataLoadBench --runs="$RUNS" "$iterations" "$@" 2>/dev/null)"
  grep -v '^JAVA_MEDIAN_MBPS=' <<<"$java_out"
  go_mbps="$(sed -n 's/^GO_MEDIAN_MBPS=//p' <<<"$go_out")"
  java_mbps="$(sed -n 's/^JAVA_MEDIAN_MBPS=//p' <<<"$java_out")"
  awk -v g="$go_mbps" -v j="$java_mbps" 'BEGIN { printf "ratio of medians: %.1fx (go %.1f MB/s, java %.1f MB/s)\n", g / j, g, j }'
}
if (( ${#fixtures[@]} > 0 )); then
  compare "${#fixtures[@]} shared fixtures (versions 2-4)" 200 "${fixtures[@]}"
fi
compare "synthetic: 5,000 subtasks x 20 shared files" 5 "$OUT/synthetic/chk-1000/_metadata"
