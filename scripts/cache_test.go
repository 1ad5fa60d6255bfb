package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cachedBuild runs cached_build of scripts/cache.sh for a tool "demo" of
// one file, whose build appends to a log (so the test counts builds) and
// then runs fail (exit 1 fails it).
func cachedBuild(t *testing.T, cache, dest, log, fail string) (string, error) {
	t.Helper()
	script := `set -euo pipefail
source ./cache.sh
build() { echo built >>"$LOG"; echo "v1" >"$OUT/demo"; ` + fail + `; }
cached_build demo "$(cache_key demo v1)" "$DEST" demo -- build`
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "FLINKMAINT_CACHE="+cache, "DEST="+dest, "LOG="+log)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func builds(t *testing.T, log string) int {
	t.Helper()
	data, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "built")
}

func TestToolsCacheBuildsOnceAndCopies(t *testing.T) {
	cache, log := t.TempDir(), filepath.Join(t.TempDir(), "log")
	for i, dest := range []string{t.TempDir(), t.TempDir()} {
		out, err := cachedBuild(t, cache, dest, log, "true")
		if err != nil {
			t.Fatalf("clone %d: %v\n%s", i, err, out)
		}
		if data, err := os.ReadFile(filepath.Join(dest, "demo")); err != nil || string(data) != "v1\n" {
			t.Fatalf("clone %d: demo %q %v", i, data, err)
		}
	}
	if n := builds(t, log); n != 1 {
		t.Fatalf("built %d times for two clones; want once", n)
	}
}

func TestToolsCacheTrustsNoIncompleteEntry(t *testing.T) {
	cache, log, dest := t.TempDir(), filepath.Join(t.TempDir(), "log"), t.TempDir()
	// A build that fails stores nothing.
	if out, err := cachedBuild(t, cache, dest, log, "false"); err == nil {
		t.Fatalf("a failed build succeeded:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dest, "demo")); err == nil {
		t.Fatal("a failed build put its file into the clone")
	}
	entries, _ := filepath.Glob(filepath.Join(cache, "demo", "*"))
	if len(entries) != 0 {
		t.Fatalf("a failed build left %v in the cache", entries)
	}
	// An entry without its stamp (a copy cut short) is built again.
	out, err := cachedBuild(t, cache, dest, log, "true")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	stamps, _ := filepath.Glob(filepath.Join(cache, "demo", "*", ".complete"))
	if len(stamps) != 1 {
		t.Fatalf("stamps %v; want one entry", stamps)
	}
	if err := os.Remove(stamps[0]); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dest, "demo")); err != nil {
		t.Fatal(err)
	}
	before := builds(t, log)
	if out, err := cachedBuild(t, cache, dest, log, "true"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if builds(t, log) != before+1 {
		t.Fatal("an entry without its .complete stamp was used")
	}
}
