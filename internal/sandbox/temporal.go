package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/flinkmaint/flinkmaint/internal/temporalconn"
)

// EnvTemporalCLI overrides the path of the pinned Temporal CLI binary.
const EnvTemporalCLI = "FLINKMAINT_TEMPORAL_CLI"

// TemporalCLIPath returns the pinned CLI that `make temporal-cli` builds.
func TemporalCLIPath() (string, error) {
	if p := os.Getenv(EnvTemporalCLI); p != "" {
		return p, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin", "temporal"), nil
}

// Temporal is a dev server started for one test binary.
type Temporal struct {
	Server *testsuite.DevServer
	Client client.Client
	// HostPort is the frontend address, for starting worker processes.
	HostPort string
}

// StartTemporal starts `temporal server start-dev` from the pinned CLI with
// the given search attributes registered, and stops it when the test ends.
// A missing CLI fails the test: run `make temporal-cli` first.
func StartTemporal(t testing.TB, searchAttributes temporal.SearchAttributes) *Temporal {
	t.Helper()
	cli, err := TemporalCLIPath()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("Temporal CLI not found at %s (%v): run `make temporal-cli` or set %s", cli, err, EnvTemporalCLI)
	}
	logFile, logPath := serverLog(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath:     cli,
		SearchAttributes: searchAttributes,
		LogLevel:         "error",
		ClientOptions:    &client.Options{Namespace: "default", DataConverter: temporalconn.DataConverter()},
		Stdout:           logFile,
		Stderr:           logFile,
	})
	if err != nil {
		t.Fatalf("start Temporal dev server from %s: %v (log: %s)", cli, err, logPath)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Logf("stop Temporal dev server: %v", err)
		}
	})
	c := srv.Client()
	return &Temporal{Server: srv, Client: c, HostPort: srv.FrontendHostPort()}
}

// serverLog opens a per-process log file for the dev server's output; the
// server may write after the test has finished, so it cannot go to t.Log.
func serverLog(t testing.TB) (*os.File, string) {
	dir, err := StateDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, fmt.Sprintf("temporal-test-%d.log", os.Getpid()))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f, path
}
