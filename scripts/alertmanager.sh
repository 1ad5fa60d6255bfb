#!/usr/bin/env bash
# Alertmanager for the notification tests: the pinned version built from
# Go modules into ./bin, like the Temporal CLI. (Releases after v0.31 embed
# a web UI their module does not ship, so they do not build from it.)
#
#   scripts/alertmanager.sh build   build it once (reused afterwards)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION="0.31.1"
BIN="$ROOT/bin/alertmanager"

build() {
  local mods
  if [[ -x "$BIN" ]] && mods="$(go version -m "$BIN" 2>/dev/null)" && grep -qE "^\s+mod\s+github.com/prometheus/alertmanager\s+v$VERSION\s" <<<"$mods"; then
    return 0
  fi
  echo "Building Alertmanager v$VERSION from Go modules into ./bin (first time: about 1-2 minutes on 2 cores)."
  local start=$SECONDS
  GOBIN="$ROOT/bin" go install "github.com/prometheus/alertmanager/cmd/alertmanager@v$VERSION"
  echo "Alertmanager built in $((SECONDS - start)) s: $BIN"
}

case "${1:-}" in
  build) build ;;
  *) echo "usage: $0 build" >&2; exit 2 ;;
esac
