#!/usr/bin/env bash
# The newcomer's path, word for word: runs every ```sh block of
# docs/first-window.md (make demo, doctor, a window steered by hand, the
# cleanup approved by its sha256, make stop) in one shell, in order, and
# fails on the first command that fails. scripts/test.sh runs it after the
# Go tests, so the page cannot drift from what the commands do.
#
#   scripts/newcomer.sh            run the page
#   scripts/newcomer.sh --print    print the commands it would run
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PAGE=docs/first-window.md

# The fenced blocks whose info string is exactly "sh", in order.
commands="$(awk '/^```sh$/ {inblock = 1; next} /^```/ {inblock = 0; next} inblock' "$PAGE")"
if [[ -z "$commands" ]]; then
  echo "$PAGE has no \`\`\`sh block" >&2
  exit 1
fi
if [[ "${1:-}" == --print ]]; then
  echo "$commands"
  exit 0
fi

start=$SECONDS
# One shell, so variables set by one block (WINDOW, SHA) reach the next;
# -x echoes each command as a reader would type it. On a failure the page's
# own last step (make stop) still runs, so nothing is left behind.
if ! bash -euo pipefail -x -c "$commands"; then
  echo "newcomer path: a command of $PAGE failed (above); stopping what it started" >&2
  make --no-print-directory stop >/dev/null 2>&1 || true
  exit 1
fi
echo "newcomer path: every command of $PAGE ran in $((SECONDS - start)) s"
