#!/usr/bin/env bash
# Everything `make test` needs before the first test, at once where two cores
# allow: the pinned Go tools (Temporal CLI, promtool, Alertmanager, Helm,
# kustomize, kube-apiserver and etcd), the Maven sandbox, Debian's Chromium,
# and the Go modules of this repository. Downloads (Maven artifacts, Go
# modules, Debian packages) overlap the compiles, and two compile chains
# keep both cores busy while one of them links or waits on the network.
# Each tool comes from the tools cache (scripts/cache.sh) when it was built
# on this machine before, by any clone.
#
#   scripts/build-tools.sh    build or fetch all of it; a job that fails fails the script
#
# Each job's output is in var/log/build/<job>.log; the script prints each
# job's end and time.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
LOGDIR="$ROOT/var/log/build"
mkdir -p "$LOGDIR"
start=$SECONDS

# job NAME COMMAND...: runs COMMAND in the background with its output in
# LOGDIR/NAME.log, then says how it ended.
pids=()
names=()
job() {
  local name="$1"
  shift
  (
    t=$SECONDS
    if "$@" >"$LOGDIR/$name.log" 2>&1; then
      last="$(tail -n 1 "$LOGDIR/$name.log")"
      echo "  $name: done in $((SECONDS - t)) s${last:+ ($last)}"
    else
      rc=$?
      echo "  $name: FAILED after $((SECONDS - t)) s; last lines of $LOGDIR/$name.log:" >&2
      tail -n 30 "$LOGDIR/$name.log" >&2
      exit "$rc"
    fi
  ) &
  pids+=($!)
  names+=("$name")
}

# The network first: these mostly wait on downloads.
job maven sandbox/java/run.sh build
job chromium scripts/chromium.sh
# This repository's modules, then (at the lowest priority: only what the
# compile chains leave idle) its packages compiled with the race detector
# and vetted, as go test and go vet will want them.
job go-modules bash -c 'go mod download && (cd tools/deploy && go mod download) && (cd sandbox/kube/tools && go mod download) &&
  nice -n 19 go build -race -tags realpeers ./... && nice -n 19 go vet -tags realpeers ./... && echo "Go modules downloaded; packages compiled with -race and vetted"'

# Two compile chains of about the same length on a first run (kube-apiserver
# alone is the longest build).
job kube-chain bash -c 'sandbox/kube/build.sh && scripts/alertmanager.sh build && make -s bin/kustomize && echo "kube-apiserver, etcd, Alertmanager, kustomize ready"'
job tools-chain bash -c 'scripts/temporal-dev.sh cli && scripts/promtool.sh && make -s bin/helm && echo "Temporal CLI, promtool, Helm ready"'

echo "building the tools and the sandbox (logs: var/log/build/):"
rc=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { rc=$?; echo "${names[$i]} failed" >&2; }
done
if [[ "$rc" != 0 ]]; then
  exit "$rc"
fi
echo "tools and sandbox ready in $((SECONDS - start)) s"
