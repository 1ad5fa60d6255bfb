# shellcheck shell=bash
# The cache of built tools outside the clone, sourced by the scripts that
# build them (Temporal CLI, promtool, Alertmanager, Helm, kustomize,
# kube-apiserver and etcd, the Maven sandbox's jars). bin/ and var/ are
# empty in every fresh clone, CI's included; a tool built once on a machine
# is copied from here into the clone's bin/ instead of being built again.
#
#   ${FLINKMAINT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flinkmaint}/<tool>/<key>/
#
# The key is a digest of everything that changes the build: the tool's
# version (or the go.sum that pins it), its build flags, the Go toolchain
# and the platform (cache_key). An entry is written to a temporary
# directory and renamed into place whole, so a reader never sees half of
# one; an entry without its .complete stamp is never used. Delete the
# directory to rebuild everything.

FLINKMAINT_CACHE="${FLINKMAINT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flinkmaint}"

# cache_key PARTS...: a digest of PARTS and of the Go toolchain and platform.
cache_key() {
  local goenv
  goenv="$(go env GOVERSION GOOS GOARCH GOAMD64 CGO_ENABLED GOFLAGS)" || return 1
  printf '%s\n' "$@" "$goenv" | sha256sum | cut -c1-24
}

# cache_entry TOOL KEY: the directory of that entry (complete or not).
cache_entry() {
  echo "$FLINKMAINT_CACHE/$1/$2"
}

# cache_get TOOL KEY DEST FILES...: copies FILES (paths relative to the
# entry) of the complete entry TOOL/KEY into DEST, each replaced whole;
# fails, copying nothing, when the entry is missing, incomplete or lacks a
# file.
cache_get() {
  local tool="$1" key="$2" dest="$3" f
  shift 3
  local entry
  entry="$(cache_entry "$tool" "$key")"
  [[ -f "$entry/.complete" ]] || return 1
  for f in "$@"; do
    [[ -f "$entry/$f" ]] || return 1
  done
  for f in "$@"; do
    mkdir -p "$(dirname "$dest/$f")"
    cp -f --reflink=auto "$entry/$f" "$dest/$f.tmp.$$"
    mv -f "$dest/$f.tmp.$$" "$dest/$f"
  done
}

# cache_put TOOL KEY SRC FILES...: stores FILES (relative to SRC) as the
# entry TOOL/KEY: copied into a temporary directory beside it, stamped
# complete, then renamed into place. When another build stored the entry
# meanwhile, that one stays.
cache_put() {
  local tool="$1" key="$2" src="$3" f tmp
  shift 3
  mkdir -p "$FLINKMAINT_CACHE/$tool"
  tmp="$(mktemp -d "$FLINKMAINT_CACHE/$tool/.tmp-$key.XXXXXX")"
  for f in "$@"; do
    mkdir -p "$(dirname "$tmp/$f")"
    cp -p "$src/$f" "$tmp/$f"
  done
  date -u +%Y-%m-%dT%H:%M:%SZ >"$tmp/.complete"
  local entry stale
  entry="$(cache_entry "$tool" "$key")"
  if [[ -d "$entry" && ! -f "$entry/.complete" ]]; then
    # Not one of ours (those are renamed in whole): set it aside first.
    stale="$(mktemp -d "$FLINKMAINT_CACHE/$tool/.stale-$key.XXXXXX")"
    mv -T "$entry" "$stale/entry" 2>/dev/null || true
    rm -rf "$stale"
  fi
  if ! mv -T "$tmp" "$entry" 2>/dev/null; then
    rm -rf "$tmp"
  fi
}

# cached_build TOOL KEY DEST FILES -- COMMAND...: puts FILES of the
# cache entry TOOL/KEY into DEST; when there is none, runs COMMAND with
# OUT set to an empty directory to build FILES into, stores them in the
# cache and then puts them into DEST. Prints where they came from.
cached_build() {
  local tool="$1" key="$2" dest="$3"
  shift 3
  local files=()
  while [[ $# -gt 0 && "$1" != "--" ]]; do
    files+=("$1")
    shift
  done
  shift
  if cache_get "$tool" "$key" "$dest" "${files[@]}"; then
    echo "$tool: from the cache ($(cache_entry "$tool" "$key"))"
    return 0
  fi
  local out start=$SECONDS
  out="$(mktemp -d "${TMPDIR:-/tmp}/flinkmaint-build-$tool.XXXXXX")"
  if ! OUT="$out" "$@"; then
    rm -rf "$out"
    echo "$tool: build failed" >&2
    return 1
  fi
  cache_put "$tool" "$key" "$out" "${files[@]}"
  rm -rf "$out"
  cache_get "$tool" "$key" "$dest" "${files[@]}" || {
    echo "$tool: built, but the cache entry $(cache_entry "$tool" "$key") cannot be read back" >&2
    return 1
  }
  echo "$tool: built in $((SECONDS - start)) s, kept in $(cache_entry "$tool" "$key")"
}
