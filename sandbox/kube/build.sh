#!/usr/bin/env bash
# Builds the Kubernetes control plane the tests run against, from Go modules:
# kube-apiserver (k8s.io/kubernetes/cmd/kube-apiserver) and etcd
# (go.etcd.io/etcd/server/v3/etcdmain), pinned by sandbox/kube/tools/go.mod.
# Output: bin/kube/{kube-apiserver,etcd,VERSION}. A second run is a no-op when
# the binaries exist and the VERSION stamp matches. The binaries are kept in
# the tools cache (scripts/cache.sh) under a key of the stamp, so another
# clone on the machine copies them instead of building them again.
set -euo pipefail

KUBE_VERSION=v1.34.2
ETCD_VERSION=v3.6.6

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../.." && pwd)"
tools="${here}/tools"
out="${root}/bin/kube"
# shellcheck source=scripts/cache.sh
source "${root}/scripts/cache.sh"

# The stamp changes whenever the pinned versions, the dependency set or the Go
# toolchain change, so a stale bin/kube is rebuilt rather than trusted.
gosum_hash="$(sha256sum "${tools}/go.sum" | cut -c1-16)"
stamp="kube-apiserver=${KUBE_VERSION} etcd=${ETCD_VERSION} go.sum=${gosum_hash} $(go env GOVERSION)"

up_to_date() {
	[[ -x "${out}/kube-apiserver" && -x "${out}/etcd" && -f "${out}/VERSION" ]] || return 1
	[[ "$(cat "${out}/VERSION")" == "${stamp}" ]] || return 1
	# Read the whole output before matching: grep -q exits on the first
	# match, and under pipefail the writer's SIGPIPE would fail the check.
	local v
	v="$("${out}/kube-apiserver" --version 2>/dev/null)" || return 1
	grep -qx "Kubernetes ${KUBE_VERSION}" <<<"${v}" || return 1
	v="$("${out}/etcd" --version 2>/dev/null)" || return 1
	grep -qx "etcd Version: ${ETCD_VERSION#v}" <<<"${v}" || return 1
}

if [[ "${1:-}" != "--force" ]] && up_to_date; then
	echo "bin/kube is up to date (${stamp})"
	exit 0
fi

mkdir -p "${out}"
rm -f "${out}/VERSION"

# The same version variables Kubernetes' hack/lib/version.sh sets, so
# /version and --version report the release rather than v0.0.0-master.
build() {
	echo "first build on this machine compiles kube-apiserver and etcd from source, ~14 minutes on 2 cores (later runs and other clones reuse the tools cache)"
	local build_date ldflags pkg start
	build_date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	ldflags="-s -w"
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X ${pkg}.gitVersion=${KUBE_VERSION}"
		ldflags+=" -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=34"
		ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${build_date}"
	done
	# go.sum is committed: a build must not rewrite it. One after the
	# other: etcd then finds most of what it shares with kube-apiserver
	# compiled.
	(
		cd "${tools}"
		export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" GOWORK=off
		start=$(date +%s)
		go build -trimpath -ldflags "${ldflags}" -o "${OUT}/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver || exit
		echo "kube-apiserver ${KUBE_VERSION} built in $(( $(date +%s) - start ))s"
		start=$(date +%s)
		go build -trimpath -ldflags "-s -w" -o "${OUT}/etcd" ./cmd/etcd || exit
		echo "etcd ${ETCD_VERSION} built in $(( $(date +%s) - start ))s"
	)
}
cached_build kube "$(cache_key "${stamp}" "CGO_ENABLED=0 -trimpath")" "${out}" kube-apiserver etcd -- build

echo "${stamp}" > "${out}/VERSION"
up_to_date || { echo "build.sh: binaries do not report ${KUBE_VERSION}/${ETCD_VERSION}" >&2; exit 1; }
echo "bin/kube ready: ${stamp}"
