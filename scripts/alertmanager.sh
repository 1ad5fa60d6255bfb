#!/usr/bin/env bash
# Alertmanager for the notification tests: the pinned version built from
# Go modules into ./bin, like the Temporal CLI. (Releases after v0.31 embed
# a web UI their module does not ship, so they do not build from it.)
#
#   scripts/alertmanager.sh build   build it once (reused afterwards; kept in the tools
#                                   cache, scripts/cache.sh, for other clones)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/cache.sh
source "$ROOT/scripts/cache.sh"
VERSION="0.31.1"
BIN="$ROOT/bin/alertmanager"

build() {
  local mods
  if [[ -x "$BIN" ]] && mods="$(go version -m "$BIN" 2>/dev/null)" && grep -qE "^\s+mod\s+github.com/prometheus/alertmanager\s+v$VERSION\s" <<<"$mods"; then
    return 0
  fi
  local module="github.com/prometheus/alertmanager/cmd/alertmanager@v$VERSION"
  build_alertmanager() {
    echo "Building Alertmanager v$VERSION from Go modules (first time on a machine: about 1-2 minutes on 2 cores)."
    GOBIN="$OUT" go install "$module"
  }
  cached_build alertmanager "$(cache_key "$module")" "$ROOT/bin" alertmanager -- build_alertmanager
}

case "${1:-}" in
  build) build ;;
  *) echo "usage: $0 build" >&2; exit 2 ;;
esac
