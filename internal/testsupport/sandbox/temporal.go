package sandbox

import (
	"context"
	"fmt"
	"net"
	"net/http"
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
	// UIURL is the Web UI's base URL (http://127.0.0.1:<port>) when the
	// server was started with TemporalOptions.UI; empty otherwise.
	UIURL string
}

// TemporalOptions are what a test may ask of its dev server beyond the
// default.
type TemporalOptions struct {
	// UI serves the Web UI on a free loopback port. Off by default: most
	// tests need only the frontend.
	UI bool
}

// StartTemporal starts `temporal server start-dev` from the pinned CLI with
// the given search attributes registered, and stops it when the test ends.
// A missing CLI fails the test: run `make temporal-cli` first.
func StartTemporal(t testing.TB, searchAttributes temporal.SearchAttributes) *Temporal {
	t.Helper()
	return StartTemporalWith(t, searchAttributes, TemporalOptions{})
}

// StartTemporalWith is StartTemporal with options; with UI it returns once
// the Web UI answers.
func StartTemporalWith(t testing.TB, searchAttributes temporal.SearchAttributes, opts TemporalOptions) *Temporal {
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
	devOpts := testsuite.DevServerOptions{
		ExistingPath:     cli,
		SearchAttributes: searchAttributes,
		LogLevel:         "error",
		ClientOptions:    &client.Options{Namespace: "default", DataConverter: temporalconn.DataConverter()},
		Stdout:           logFile,
		Stderr:           logFile,
	}
	uiURL := ""
	if opts.UI {
		port, err := freeLoopbackPort()
		if err != nil {
			t.Fatalf("a port for the Temporal Web UI: %v", err)
		}
		devOpts.EnableUI, devOpts.UIPort = true, port
		uiURL = "http://127.0.0.1:" + port
	}
	srv, err := testsuite.StartDevServer(ctx, devOpts)
	if err != nil {
		t.Fatalf("start Temporal dev server from %s: %v (log: %s)", cli, err, logPath)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Logf("stop Temporal dev server: %v", err)
		}
	})
	if uiURL != "" {
		if err := awaitHTTP(ctx, uiURL); err != nil {
			t.Fatalf("Temporal Web UI at %s: %v (log: %s)", uiURL, err, logPath)
		}
	}
	c := srv.Client()
	// Registered after the server's stop, so it runs before it.
	if dir := os.Getenv(EnvCaptureHistory); dir != "" {
		t.Cleanup(func() { CaptureEveryType(t, c, dir) })
	}
	return &Temporal{Server: srv, Client: c, HostPort: srv.FrontendHostPort(), UIURL: uiURL}
}

// freeLoopbackPort is a TCP port on 127.0.0.1 that nothing listens on now.
func freeLoopbackPort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

// awaitHTTP waits until url answers 200 or ctx ends.
func awaitHTTP(ctx context.Context, url string) error {
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
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
