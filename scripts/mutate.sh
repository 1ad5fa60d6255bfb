#!/usr/bin/env bash
# make mutate: mutation testing of the code that decides whether something
# is deleted, moved, approved or stopped, with gremlins (built from the
# tools module). Each mutant is one changed condition (== for !=, < for
# <=, && for ||, ...) in a file in scope; the package's unit tests (no
# realpeers tag, no servers) run against it and must fail. Prints the
# score and every surviving mutant, and fails on a survivor that is not
# in docs/mutation-survivors.txt, the reviewed list of accepted ones.
#
# Arithmetic and sign mutants (+ for -, -x for x) are left out: in these files they are
# mostly string concatenations, which do not compile mutated.
#
#   MUTATE_SCOPE=wide  the wider scope below
#   MUTATE_ONLY="internal/cleanup/shards.go workflows/governance.go"
#                      narrows the run to those files (of the scope below)
#   MUTATE_WORKERS=N   mutants tested at once (default: number of CPUs)
#
# The results of the last run are in var/mutate/ (one JSON and one log per
# package).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# The scope: package dir, then the files of it whose mutants are tested.
# By default the guards between an approved plan and a deletion: the
# executor's checks before it moves or deletes an item, the plan's shards
# against its approved header, the trash purge, the execution activities
# and the governance workflow's approval. MUTATE_SCOPE=wide adds the
# planner and the window, drill and upgrade activities and workflows
# (about 1100 mutants, some 80 minutes on 2 cores); its reviewed survivors
# are in the same list (docs/development.md says how far that review got).
SCOPE=(
  "internal/cleanup executor.go shards.go trash.go"
  "activities governance_execute.go"
  "workflows governance.go"
)
if [[ "${MUTATE_SCOPE:-}" == wide ]]; then
  SCOPE=(
    "internal/cleanup executor.go shards.go trash.go manifest.go snapshots_exec.go objects_exec.go planner.go"
    "activities governance_execute.go governance.go window.go drill.go upgrade.go"
    "workflows governance.go window.go drill.go window_drill.go upgrade.go"
  )
fi

make -s bin/gremlins bin/mutants

out="$ROOT/var/mutate"
rm -rf "$out"
mkdir -p "$out"
# gremlins copies the module for each worker: copy only the sources (the
# tracked files and new ones not ignored), not bin/ and var/.
src="$(mktemp -d "${TMPDIR:-/tmp}/flinkmaint-mutate-XXXXXX")"
trap 'rm -rf "$src"' EXIT
git ls-files -z --cached --others --exclude-standard |
  tar -cf - --null --no-recursion --ignore-failed-read -T - 2>/dev/null | tar -xf - -C "$src"

# Tests that read ../shared's fixtures find it from the copies too.
if [[ -d "$(dirname "$ROOT")/shared/fixtures" ]]; then
  export FLINKMAINT_SHARED_DIR="$(dirname "$ROOT")/shared"
fi

start=$SECONDS
results=()
for entry in "${SCOPE[@]}"; do
  read -r pkg files <<<"$entry"
  keep=()
  for f in $files; do
    if [[ -z "${MUTATE_ONLY:-}" || " $MUTATE_ONLY " == *" $pkg/$f "* ]]; then
      keep+=("$f")
    fi
  done
  [[ ${#keep[@]} -gt 0 ]] || continue
  # gremlins takes files to leave out, as regular expressions.
  exclude=()
  for f in "$src/$pkg"/*.go; do
    b="$(basename "$f")"
    [[ "$b" == *_test.go || " ${keep[*]} " == *" $b "* ]] && continue
    exclude+=(-E "^${b//./\\.}\$")
  done
  echo "mutating ${keep[*]} in $pkg ..."
  t=$SECONDS
  # -count=1: the coverage run, whose time sets each mutant's timeout
  # (times 5), runs the tests instead of taking a cached result.
  (cd "$src" && GOFLAGS="-vet=off -count=1" nice "$ROOT/bin/gremlins" unleash \
    --arithmetic-base=false --invert-negatives=false --invert-logical \
    --timeout-coefficient 5 ${MUTATE_WORKERS:+--workers "$MUTATE_WORKERS"} \
    -o "$out/${pkg//\//-}.json" "${exclude[@]}" "./$pkg") >"$out/${pkg//\//-}.log" 2>&1 || {
    echo "gremlins failed on $pkg; log: $out/${pkg//\//-}.log"
    tail -20 "$out/${pkg//\//-}.log"
    exit 1
  }
  echo "  $((SECONDS - t)) s"
  results+=("$pkg=$out/${pkg//\//-}.json")
done
[[ ${#results[@]} -gt 0 ]] || { echo "MUTATE_ONLY=$MUTATE_ONLY names no file in scope"; exit 1; }

echo "mutation testing took $((SECONDS - start)) s"
echo
bin/mutants -accepted docs/mutation-survivors.txt -root "$src" "${results[@]}"
