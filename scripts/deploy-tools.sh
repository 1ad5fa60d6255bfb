#!/usr/bin/env bash
# Helm and kustomize for the tests that render deploy/ (-tags realpeers),
# built from the versions tools/deploy/go.mod pins into ./bin, once per
# machine (kept in the tools cache, scripts/cache.sh, for other clones).
#
#   scripts/deploy-tools.sh helm|kustomize
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/cache.sh
source "$ROOT/scripts/cache.sh"

case "${1:-}" in
  helm) pkg="helm.sh/helm/v4/cmd/helm" ;;
  kustomize) pkg="sigs.k8s.io/kustomize/kustomize/v5" ;;
  *) echo "usage: $0 helm|kustomize" >&2; exit 2 ;;
esac
tool="$1"
pins="$(cat "$ROOT/tools/deploy/go.mod" "$ROOT/tools/deploy/go.sum" | sha256sum | cut -c1-16)"
build() {
  echo "Building $tool from Go modules (tools/deploy; first time on a machine: a few minutes on 2 cores)."
  (cd "$ROOT/tools/deploy" && go build -o "$OUT/$tool" "$pkg")
}
cached_build "$tool" "$(cache_key "$pkg" "tools/deploy $pins")" "$ROOT/bin" "$tool" -- build
