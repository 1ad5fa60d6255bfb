#!/usr/bin/env bash
# make test-unit: the unit tests only, with the race detector. No Java, no
# servers, no network: tests that start a real peer (internal/testsupport/sandbox's
# Require*, the Temporal dev server) carry `//go:build realpeers` and run in
# `make test` (scripts/test.sh), which runs everything.
# Prints the package results and the number of tests that ran; on a failure,
# the output of the failing tests. The whole -v log is in var/test-unit.log.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

mkdir -p var
log=var/test-unit.log
start=$SECONDS
rc=0
go test -race -count=1 -timeout 5m -v ./... >"$log" 2>&1 || rc=$?

# Package results, as plain `go test` prints them.
grep -E $'^(ok  |FAIL|\\?   )\t' "$log" || true

count() { grep -c -E "^--- $1: " "$log" || true; }
passed=$(count PASS)
skipped=$(count SKIP)
failed=$(count FAIL)

if [[ $rc -ne 0 ]]; then
  echo
  echo "---- failures (full log: $log) ----"
  # Lines of failing tests (and of no test: build errors, panics), found by
  # the === RUN/CONT/NAME markers that -v puts before each test's output.
  awk '
    NR == FNR { if (match($0, /^ *--- (PASS|SKIP|FAIL): [^ ]+/)) { split(substr($0, RSTART, RLENGTH), f, ": ");
                  if ($0 ~ /^ *--- FAIL/) bad[f[2]] = 1; else good[f[2]] = 1 } next }
    /^=== (RUN|CONT|NAME|PAUSE) / { cur = $3; next }
    /^(ok  |FAIL|\?   )\t/ { cur = ""; next }
    /^ *--- (PASS|SKIP): / { next }
    cur == "" { if ($0 != "PASS" && $0 != "FAIL" && $0 !~ /^testing: warning: no tests to run/) print; next }
    cur in bad { print; next }
    cur in good { next }
    { t = cur; while (!(t in bad) && index(t, "/")) sub(/\/[^\/]*$/, "", t); if (t in bad) print }
  ' "$log" "$log"
  echo "----"
fi

echo "unit tests: $((passed + skipped + failed)) ran: $passed passed, $skipped skipped, $failed failed ($((SECONDS - start))s; real-peer tests: make test)"
exit "$rc"
