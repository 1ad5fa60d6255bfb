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

if (( ${#fixtures[@]} > 0 )); then
  echo "== ${#fixtures[@]} shared fixtures (versions 2-4)"
  "$OUT/gobench" -iterations 200 "${fixtures[@]}"
  # shellcheck disable=SC2086
  java $JAVA_OPTS -cp "$CP" io.github.flinkmaint.sandbox.peers.MetadataLoadBench 200 "${fixtures[@]}" 2>/dev/null
fi
echo "== synthetic: 5,000 subtasks x 20 shared files"
"$OUT/gobench" -iterations 5 "$OUT/synthetic/chk-1000/_metadata"
# shellcheck disable=SC2086
java $JAVA_OPTS -Xmx2g -cp "$CP" io.github.flinkmaint.sandbox.peers.MetadataLoadBench 5 "$OUT/synthetic/chk-1000/_metadata" 2>/dev/null
