// Package sandbox gives tests and the demo access to the real peers that
// sandbox/ starts: HDFS, Flink session clusters and a kube-apiserver.
//
// Each peer writes its endpoints to a JSON file under var/sandbox/ when it is
// up; the helpers here read those files, check the peer answers and start it
// when it does not. A peer that cannot be started fails the test: the tests
// that use it prove behaviour against the real system and must not skip.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// RepoRoot returns the directory holding the project's go.mod, found by
// walking up from the working directory (go test runs in the package dir).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("sandbox: working directory: %w", err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && isProjectModule(data) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("sandbox: no go.mod of module github.com/flinkmaint/flinkmaint above the working directory")
		}
		dir = parent
	}
}

func isProjectModule(goMod []byte) bool {
	const want = "module github.com/flinkmaint/flinkmaint\n"
	return len(goMod) >= len(want) && string(goMod[:len(want)]) == want
}

// StateDir returns var/sandbox under the repository root, where peers keep
// their data, logs, pid files and endpoint files.
func StateDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "var", "sandbox"), nil
}

// sharedDirName is the reference material's directory beside the
// repository; tests of RequireShared point it elsewhere.
var sharedDirName = "shared"

// EnvSharedDir names the reference material's directory for a copy of the
// repository that has no ../shared beside it (make mutate tests copies).
const EnvSharedDir = "FLINKMAINT_SHARED_DIR"

// SharedDir returns the read-only reference material beside the repository
// (../shared, or the directory EnvSharedDir names), or an error saying it
// is absent.
func SharedDir() (string, error) {
	dir := os.Getenv(EnvSharedDir)
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(filepath.Dir(root), sharedDirName)
	}
	if _, err := os.Stat(filepath.Join(dir, "fixtures")); err != nil {
		return "", fmt.Errorf("sandbox: reference material %s not found (expected beside the repository): %w", dir, err)
	}
	return dir, nil
}

// RequireShared returns ../shared for a test that reads its fixtures. In a
// user's own clone without it the test skips, saying why; where CI is set
// the reference material must be there, and its absence fails the test.
func RequireShared(t testing.TB) string {
	t.Helper()
	dir, err := SharedDir()
	if err == nil {
		return dir
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set but the reference material is missing: %v", err)
	}
	t.Skipf("reference material absent (a clone without ../shared): %v", err)
	return ""
}
