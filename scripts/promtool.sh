#!/usr/bin/env bash
# Builds the pinned promtool (Prometheus' rule and config checker) from Go
# modules into ./bin, once; reused while bin/promtool is that version.
# The monitoring tests (deploy/monitoring, `-tags realpeers`) run it.
#
#   scripts/promtool.sh    build bin/promtool unless it is already the pinned version
#                          (kept in the tools cache, scripts/cache.sh, for other clones)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/cache.sh
source "$ROOT/scripts/cache.sh"
# Prometheus' Go module versions are v0.<major*100+minor>.<patch>: v0.316.0 is Prometheus 3.16.0.
PROMETHEUS_MODULE_VERSION="v0.316.0"
PROMTOOL="$ROOT/bin/promtool"

# The module version recorded in the binary says which promtool it is.
# (grep reads a variable: under pipefail an early-exiting grep -q would
# fail the pipe with the writer's SIGPIPE.)
mods=""
if [[ -x "$PROMTOOL" ]] && mods="$(go version -m "$PROMTOOL" 2>/dev/null)" &&
  grep -qE "^\s+mod\s+github.com/prometheus/prometheus\s+$PROMETHEUS_MODULE_VERSION\s" <<<"$mods"; then
  exit 0
fi
# remove_all_sd leaves out the service discovery plugins (cloud SDKs):
# checking and unit-testing rules needs none, and the build is much shorter.
module="github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_MODULE_VERSION"
build_promtool() {
  echo "Building promtool ($PROMETHEUS_MODULE_VERSION) from Go modules (first time on a machine: about 5 minutes on 2 cores)."
  GOBIN="$OUT" go install -tags remove_all_sd "$module"
}
cached_build promtool "$(cache_key "$module" "-tags remove_all_sd")" "$ROOT/bin" promtool -- build_promtool
