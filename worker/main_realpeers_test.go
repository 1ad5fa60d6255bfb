//go:build realpeers

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"

	"github.com/flinkmaint/flinkmaint/internal/temporalconn"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// TestWorkerBinary builds flinkmaint-worker, runs it against a real dev
// server, completes a workflow through it, reads /healthz and /metrics, and
// checks SIGTERM stops it cleanly.
func TestWorkerBinary(t *testing.T) {
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	bin := filepath.Join(t.TempDir(), "flinkmaint-worker")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	listen := freeAddr(t)
	// The codec is served with a token, as it must be on any address
	// other than loopback.
	const codecToken = "binary-test-codec-token-0123456789"
	tokenFile := filepath.Join(t.TempDir(), "codec-token")
	configFile := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(tokenFile, []byte(codecToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(configFile, []byte("http:\n  codecTokenFile: "+tokenFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	cmd := exec.Command(bin, "--config", configFile, "--temporal-address", tmp.HostPort, "--task-queue", "binary-test", "--http-listen", listen)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.Env = append(os.Environ(), "FLINKMAINT_LOG_FORMAT=json")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	// Ready once it polls and Temporal answers; alive from the start.
	waitHTTP(t, "http://"+listen+"/readyz", exited, &logs)
	if body := get(t, "http://"+listen+"/healthz"); strings.TrimSpace(body) != "ok" {
		t.Fatalf("/healthz = %q", body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.PingWorkflowID("binary"), TaskQueue: "binary-test"},
		workflows.PingWorkflowType, workflows.PingInput{Message: "via binary"})
	if err != nil {
		t.Fatal(err)
	}
	var res workflows.PingResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("ping through worker binary: %v\nworker log:\n%s", err, logs.String())
	}
	if !strings.HasPrefix(res.Worker, "flinkmaint-worker@") || res.Message != "via binary" {
		t.Fatalf("unexpected result %+v", res)
	}

	metrics := get(t, "http://"+listen+"/metrics")
	for _, want := range []string{"flinkmaint_build_info", "temporal_worker_start", "temporal_activity_execution_latency"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// The Web UI's codec endpoint: decodes what the worker encodes, for
	// the UI's origin and with the token only.
	big := make([]string, 20000)
	for i := range big {
		big[i] = "cluster-a/job-" + strings.Repeat("x", i%7)
	}
	p, err := temporalconn.DataConverter().ToPayload(big)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(&commonpb.Payloads{Payloads: []*commonpb.Payload{p}})
	if err != nil {
		t.Fatal(err)
	}
	codec := func(origin, auth string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, "http://"+listen+"/codec/decode", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", origin)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(out)
	}
	const ui = "http://localhost:8233"
	if resp, out := codec(ui, "Bearer "+codecToken); resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != ui ||
		!strings.Contains(out, "anNvbi9wbGFpbg==") { // "json/plain"
		t.Errorf("/codec/decode with the token: %d, CORS %q, %.200s", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), out)
	}
	if resp, out := codec(ui, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/codec/decode without the token: %d %.200s; want 401", resp.StatusCode, out)
	}
	if resp, out := codec("https://elsewhere.example", "Bearer "+codecToken); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("/codec/decode from another origin: %d %.200s; want 403", resp.StatusCode, out)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("worker exited with %v after SIGTERM\n%s", err, logs.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("worker did not stop within a minute of SIGTERM\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "worker stopped") {
		t.Fatalf("no shutdown log line:\n%s", logs.String())
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitHTTP(t *testing.T, url string, exited <-chan error, logs *syncBuffer) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			t.Fatalf("worker exited early: %v\n%s", err, logs.String())
		default:
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s never answered 200\n%s", url, logs.String())
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return string(body)
}

// syncBuffer collects a child's output while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestWorkerKerberosAtStart runs flinkmaint-worker against the secure
// sandbox (KDC, kerberized HA HDFS ns1). With credentials the KDC or the
// cluster refuses it exits 2 at start, before dialing Temporal, naming
// principal and realm; with the keytab of flinkmaint it logs in, reaches
// ns1 and serves.
func TestWorkerKerberosAtStart(t *testing.T) {
	s := sandbox.RequireSecureStorage(t)
	bin := filepath.Join(t.TempDir(), "flinkmaint-worker")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	config := func(name, kerberos string) string {
		p := filepath.Join(dir, name+".yaml")
		body := "storage:\n  hadoopConfDir: " + s.HadoopConfDir + "\n  writableRoots: [" + s.URI + s.Tenants[0].Root + "]\n" +
			"  kerberos:\n    krb5Conf: " + s.Krb5Conf + "\n" + kerberos
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	realm := s.Realm
	for name, tc := range map[string]struct {
		kerberos string
		want     []string
	}{
		"keytab without the principal": {
			"    principal: " + s.Principals.Worker.Principal + "\n    keytab: " + s.Principals.Flink.Keytab + "\n",
			[]string{s.Principals.Worker.Principal, "realm " + realm, "flink.keytab"},
		},
		"principal the KDC does not know": {
			"    principal: ghost@" + realm + "\n    keytab: " + s.Principals.Worker.Keytab + "\n",
			[]string{"ghost@" + realm, "realm " + realm},
		},
		"user the cluster refuses": {
			"    principal: " + s.Principals.Denied.Principal + "\n    keytab: " + s.Principals.Denied.Keytab + "\n",
			[]string{s.Principals.Denied.Principal, "refuses this user"},
		},
		"no ticket": {
			"    ccache: " + filepath.Join(dir, "krb5cc_none") + "\n",
			[]string{"no ticket", "krb5cc_none"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var logs syncBuffer
			cmd := exec.CommandContext(ctx, bin, "--config", config(strings.ReplaceAll(name, " ", "-"), tc.kerberos),
				"--temporal-address", "127.0.0.1:1", "--http-listen", "")
			cmd.Stdout, cmd.Stderr = &logs, &logs
			err := cmd.Run()
			var exitErr *exec.ExitError
			if !errors.As(err, &exitErr) || exitErr.ExitCode() != 2 {
				t.Fatalf("worker exited with %v; want exit code 2 (invalid configuration)\n%s", err, logs.String())
			}
			out := logs.String()
			for _, w := range append(tc.want, "invalid configuration", "authentication failed") {
				if !strings.Contains(out, w) {
					t.Errorf("output does not mention %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "127.0.0.1:1") {
				t.Errorf("the worker dialed Temporal before refusing its credentials:\n%s", out)
			}
		})
	}

	t.Run("keytab of the worker", func(t *testing.T) {
		tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
		listen := freeAddr(t)
		var logs syncBuffer
		cmd := exec.Command(bin, "--config", config("worker", "    principal: "+s.Principals.Worker.Principal+"\n    keytab: "+s.Principals.Worker.Keytab+"\n"),
			"--temporal-address", tmp.HostPort, "--task-queue", "kerberos-start", "--http-listen", listen)
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		waitHTTP(t, "http://"+listen+"/readyz", exited, &logs)
		if out := logs.String(); strings.Contains(out, "storage did not answer") {
			t.Errorf("the worker did not reach %s at start:\n%s", s.URI, out)
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("worker exited with %v after SIGTERM\n%s", err, logs.String())
			}
		case <-time.After(time.Minute):
			t.Fatalf("worker did not stop within a minute of SIGTERM\n%s", logs.String())
		}
	})
}
