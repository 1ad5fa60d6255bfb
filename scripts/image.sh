#!/usr/bin/env bash
# The worker's container image, built without a Docker engine or a base
# image: both binaries built static (CGO_ENABLED=0, -trimpath, Go's time
# zone database embedded), then tools/image (bin/flinkmaint-image) puts
# them, Debian's CA bundle and a nonroot user into one layer from scratch
# and writes an OCI layout tar:
#   var/image/flinkmaint-worker-$VERSION.oci.tar   tag flinkmaint-worker:$VERSION
# The binaries it holds stay beside it in var/image/build-$VERSION/.
#
#   VERSION=...                 release and tag (default: the chart's appVersion,
#                               deploy/helm/flinkmaint/Chart.yaml, the tag the chart
#                               and the kustomize base deploy)
#
#   scripts/image.sh --print-version   prints the release it would build, and exits
#   GOARCH=...                  platform of the image (default: go env GOARCH)
#   FLINKMAINT_IMAGE_DIR=...    output directory (default: var/image)
#   SOURCE_DATE_EPOCH=...       time of every entry (default: the commit's time)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if [[ -z "${VERSION:-}" ]]; then
  VERSION="$(sed -n 's/^appVersion:[[:space:]]*"\{0,1\}\([^"[:space:]]*\)"\{0,1\}[[:space:]]*$/\1/p' deploy/helm/flinkmaint/Chart.yaml)"
  if [[ -z "$VERSION" ]]; then
    echo "scripts/image.sh: no appVersion in deploy/helm/flinkmaint/Chart.yaml: set it, or VERSION=..." >&2
    exit 2
  fi
fi
if [[ "${1:-}" == "--print-version" ]]; then
  echo "$VERSION"
  exit 0
fi
ARCH="${GOARCH:-$(go env GOARCH)}"
OUT_DIR="${FLINKMAINT_IMAGE_DIR:-$ROOT/var/image}"
# The commit's time, so one commit always builds the same image.
SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
export SOURCE_DATE_EPOCH

BUILD="$OUT_DIR/build-$VERSION"
mkdir -p "$BUILD" "$ROOT/bin"
start=$SECONDS

(cd tools && go build -o "$ROOT/bin/flinkmaint-image" ./image)

# The image's CA bundle is Debian's: install it once where it is missing.
if [[ ! -s /etc/ssl/certs/ca-certificates.crt ]]; then
  SUDO=()
  [[ "$(id -u)" == 0 ]] || SUDO=(sudo)
  echo "Installing Debian's ca-certificates (the image's CA bundle; first time only)."
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -qq
  "${SUDO[@]}" apt-get install -y -qq --no-install-recommends ca-certificates >/dev/null
fi

# timetzdata: the scratch image has no /usr/share/zoneinfo, and freeze
# windows name time zones. -p 2: the build shares two cores with the tests.
for pair in flinkmaint-worker:./worker flinkmaint:./starter; do
  GOOS=linux GOARCH="$ARCH" CGO_ENABLED=0 go build -p 2 -trimpath -tags timetzdata \
    -ldflags "-s -w -X main.version=$VERSION" -o "$BUILD/${pair%%:*}" "${pair#*:}"
done

bin/flinkmaint-image -worker "$BUILD/flinkmaint-worker" -cli "$BUILD/flinkmaint" \
  -version "$VERSION" -arch "$ARCH" -out "$OUT_DIR/flinkmaint-worker-$VERSION.oci.tar"
echo "built in $((SECONDS - start)) s"
