package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/config"
)

func noEnv(string) string { return "" }

func TestRunExitCodes(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"bad flag value":  {[]string{"--log-format", "xml"}, exitConfig, `log.format="xml"`},
		"unknown flag":    {[]string{"--bogus"}, exitConfig, "bogus"},
		"missing file":    {[]string{"--config", "/nonexistent.yaml"}, exitConfig, "/nonexistent.yaml"},
		"unreachable":     {[]string{"--temporal-address", "127.0.0.1:1", "--temporal-connect-timeout", "2s", "--http-listen", ""}, exitUnreachable, "127.0.0.1:1"},
		"help is success": {[]string{"-h"}, exitOK, "task-queue"},
	} {
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(context.Background(), tc.args, noEnv, io.Discard, &stderr)
			if code != tc.code {
				t.Fatalf("exit code %d, want %d; stderr: %s", code, tc.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("stderr does not mention %q: %s", tc.want, stderr.String())
			}
		})
	}
}

// --version names the release and the commit, before any configuration
// is read.
func TestRunVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--version"}, noEnv, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit code %d; stderr %s", code, stderr.String())
	}
	if got := stdout.String(); !strings.HasPrefix(got, "flinkmaint-worker "+version+" (commit ") || !strings.Contains(got, "go1.") {
		t.Fatalf("--version printed %q; want the release, the commit and the Go version", got)
	}
}

// TestRunRefusesBadStorageBeforeTemporal gives the worker a Temporal
// address nothing listens on and a storage setting it cannot use: it must
// exit 2 naming the setting, not 3 naming Temporal (it never dials).
func TestRunRefusesBadStorageBeforeTemporal(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badKubeconfig := write("kubeconfig", "this is not a kubeconfig: [")
	for name, tc := range map[string]struct {
		yaml string
		want []string
	}{
		"root of everything": {
			"storage:\n  writableRoots: [/]\n",
			[]string{`storage.writableRoots[0]="/"`, "every path"},
		},
		"root on an unknown file system": {
			"storage:\n  writableRoots: [ftp://h/flinkmaint]\n",
			[]string{`storage.writableRoots[0]="ftp://h/flinkmaint"`, `scheme "ftp"`, "hdfs://"},
		},
		"trash outside the roots": {
			"storage:\n  writableRoots: [/flinkmaint]\ncleanup:\n  trashRoot: /elsewhere/trash\n",
			[]string{`cleanup.trashRoot="/elsewhere/trash"`, "storage.writableRoots", "add a writable root"},
		},
		"defaultFS on ftp": {
			"storage:\n  defaultFS: ftp://x\n",
			[]string{`storage.defaultFS="ftp://x"`, "file:///", "hdfs://"},
		},
		"unreadable codec token": {
			"http:\n  codecTokenFile: " + filepath.Join(dir, "absent") + "\n",
			[]string{"http.codecTokenFile=", "absent", "cannot be read"},
		},
		"kubeconfig that does not parse": {
			"inventory:\n  kubeconfig: " + badKubeconfig + "\n  kubernetes:\n    namespaces: [team-a]\n    tenantRootTemplate: /t/{namespace}\n",
			[]string{"inventory.kubernetes", badKubeconfig},
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := write(strings.ReplaceAll(name, " ", "-")+".yaml", tc.yaml)
			var stderr bytes.Buffer
			code := run(context.Background(), []string{"--config", cfg, "--temporal-address", "127.0.0.1:1",
				"--temporal-connect-timeout", "30s", "--http-listen", "", "--log-format", "console"}, noEnv, io.Discard, &stderr)
			out := stderr.String()
			if code != exitConfig {
				t.Fatalf("exit code %d, want %d (invalid configuration); stderr:\n%s", code, exitConfig, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "127.0.0.1:1") {
				t.Errorf("the worker tried Temporal before refusing its configuration:\n%s", out)
			}
			// --check-config refuses it alike.
			stderr.Reset()
			if code := run(context.Background(), []string{"--check-config", "--config", cfg}, noEnv, io.Discard, &stderr); code != exitConfig ||
				!strings.Contains(stderr.String(), tc.want[0]) {
				t.Errorf("--check-config: exit code %d, stderr %s; want %d naming %s", code, stderr.String(), exitConfig, tc.want[0])
			}
		})
	}
}

// --check-config passes a configuration the worker can start with, and
// reaches neither storage nor Temporal to say so.
func TestRunCheckConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "worker.yaml")
	body := "temporal:\n  address: 127.0.0.1:1\nstorage:\n  defaultFS: hdfs://127.0.0.1:1\n  writableRoots: [hdfs://127.0.0.1:1/flinkmaint]\n" +
		"cleanup:\n  trashRoot: hdfs://127.0.0.1:1/flinkmaint/trash\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--check-config", "--config", cfg}, noEnv, &stdout, &stderr)
	if code != exitOK || !strings.Contains(stdout.String(), "configuration valid: Temporal 127.0.0.1:1") || stderr.Len() != 0 {
		t.Fatalf("exit code %d, stdout %q, stderr %q; want the configuration passed without a connection attempt", code, stdout.String(), stderr.String())
	}
}

// TestRunGoesOnWhenStorageDoesNotAnswer: a NameNode that does not answer
// at start is not a configuration error (activities retry storage); the
// worker warns, goes on and here stops at Temporal (exit 3).
func TestRunGoesOnWhenStorageDoesNotAnswer(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(cfg, []byte("storage:\n  hdfsUser: flinkmaint\n  rpcTimeout: 2s\n  writableRoots: [hdfs://127.0.0.1:1/flinkmaint]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"--config", cfg, "--temporal-address", "127.0.0.1:1",
		"--temporal-connect-timeout", "2s", "--http-listen", "", "--log-format", "console"}, noEnv, io.Discard, &stderr)
	out := stderr.String()
	if code != exitUnreachable {
		t.Fatalf("exit code %d, want %d (Temporal unreachable); stderr:\n%s", code, exitUnreachable, out)
	}
	for _, w := range []string{"storage did not answer at start", "storage.writableRoots[0]=", "hdfs://127.0.0.1:1", "storage unavailable"} {
		if !strings.Contains(out, w) {
			t.Errorf("stderr does not mention %q:\n%s", w, out)
		}
	}
}

// testRoutes are the worker's HTTP routes with the codec as the
// configuration gives it, listening on addr, without Temporal.
func testRoutes(t *testing.T, h config.HTTP, token string, addr net.Addr) http.Handler {
	t.Helper()
	codec, _ := codecRoute(h, token, addr)
	health := &healthState{}
	health.setRunning(true)
	return httpRoutes{
		metrics: http.NotFoundHandler(),
		codec:   codec,
		health:  health,
		ready:   func(context.Context) error { return nil },
	}.handler()
}

func TestCodecServedOnlyWithATokenOrOnLoopback(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	h := config.Default().HTTP
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9090}
	everywhere := &net.TCPAddr{IP: net.IPv6unspecified, Port: 9090}
	for name, tc := range map[string]struct {
		token string
		addr  net.Addr
		auth  string
		code  int
		want  string
	}{
		"all interfaces without a token":        {"", everywhere, "", http.StatusNotFound, "http.codecTokenFile"},
		"all interfaces, token not sent":        {token, everywhere, "", http.StatusUnauthorized, "token"},
		"all interfaces, token sent":            {token, everywhere, "Bearer " + token, http.StatusOK, ""},
		"loopback without a token":              {"", loopback, "", http.StatusOK, ""},
		"loopback with a token, token not sent": {token, loopback, "", http.StatusUnauthorized, "token"},
		"loopback IPv6 without a token":         {"", &net.TCPAddr{IP: net.IPv6loopback, Port: 9090}, "", http.StatusOK, ""},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(testRoutes(t, h, tc.token, tc.addr))
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/codec/decode", strings.NewReader(`{"payloads":[]}`))
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code || !strings.Contains(string(body), tc.want) {
				t.Errorf("POST /codec/decode: %d %q; want %d mentioning %q", resp.StatusCode, body, tc.code, tc.want)
			}
		})
	}
}

func TestHTTPLimits(t *testing.T) {
	l := defaultHTTPLimits()
	srv := newHTTPServer(http.NotFoundHandler(), l)
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 || srv.MaxHeaderBytes <= 0 {
		t.Fatalf("server without a bound: read header %s, read %s, write %s, idle %s, header bytes %d",
			srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout, srv.MaxHeaderBytes)
	}
	if srv.ReadTimeout > time.Minute || srv.MaxHeaderBytes > 1<<20 {
		t.Errorf("bounds too loose to matter: read %s, header bytes %d", srv.ReadTimeout, srv.MaxHeaderBytes)
	}
	// /readyz asks Temporal for up to 3 s; answers must have longer.
	if srv.WriteTimeout < 10*time.Second {
		t.Errorf("write timeout %s leaves /readyz and /metrics no room", srv.WriteTimeout)
	}
}

// TestHTTPServerCutsOffSlowBodies sends a /codec/ body one byte at a time:
// the server must end the request at its read timeout rather than wait for
// the whole body.
func TestHTTPServerCutsOffSlowBodies(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	limits := defaultHTTPLimits()
	limits.read = 300 * time.Millisecond
	srv := newHTTPServer(testRoutes(t, config.Default().HTTP, "", ln.Addr()), limits)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const bodyLen = 1000 // at a byte per 20 ms, 20 s to send
	if _, err := fmt.Fprintf(conn, "POST /codec/decode HTTP/1.1\r\nHost: worker\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", bodyLen); err != nil {
		t.Fatal(err)
	}
	answered := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(conn).ReadString('\n')
		answered <- line
	}()
	sent := 0
	for ; sent < bodyLen; sent++ {
		select {
		case line := <-answered:
			if line != "" && !strings.Contains(line, " 408 ") && !strings.Contains(line, " 400 ") {
				t.Errorf("answer to a slow body: %q; want 408 or a closed connection", line)
			}
			t.Logf("cut off after %d of %d body bytes: %q", sent, bodyLen, line)
			return
		default:
		}
		if _, err := conn.Write([]byte(" ")); err != nil {
			t.Logf("cut off after %d of %d body bytes: %v", sent, bodyLen, err)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the server read all %d bytes of a body sent a byte per 20 ms; want it cut off at its read timeout", bodyLen)
}

// TestRunWarnsOfMissingCleanupDirs: a trash root and a writable root that
// do not exist are named at startup, before Temporal is dialled, instead
// of failing the first approved cleanup at "stat trash root".
func TestRunWarnsOfMissingCleanupDirs(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "plans"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "worker.yaml")
	body := "storage:\n  writableRoots: [file://" + dir + ", file://" + dir + "/tenant-to-come]\ncleanup:\n  trashRoot: file://" + dir + "/trash\n  planDir: file://" + dir + "/plans\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"--config", cfg, "--temporal-address", "127.0.0.1:1", "--temporal-connect-timeout", "1s",
		"--http-listen", "", "--log-format", "console"}, noEnv, io.Discard, &stderr)
	out := stderr.String()
	if code != exitUnreachable {
		t.Fatalf("exit code %d, want %d (Temporal unreachable); stderr:\n%s", code, exitUnreachable, out)
	}
	warn := strings.Index(out, "cleanup.trashRoot")
	if warn < 0 || !strings.Contains(out, "does not exist") || strings.Contains(out, "cleanup.planDir") {
		t.Fatalf("stderr does not warn of the missing trash root alone:\n%s", out)
	}
	if !strings.Contains(out, "storage.writableRoots") || !strings.Contains(out, dir+"/tenant-to-come") || strings.Count(out, "storage.writableRoots") != 2 {
		t.Errorf("stderr does not warn of the missing writable root alone (once, beside the trash root's hint):\n%s", out)
	}
	if dial := strings.Index(out, "127.0.0.1:1"); dial >= 0 && dial < warn {
		t.Errorf("the warning came after the Temporal attempt:\n%s", out)
	}
}

// TestHealthzAnswersWhileStorageConnects: the listener answers from the
// start, so a liveness probe does not kill a worker that waits for a
// NameNode: /healthz is 200 while storage is still being reached, /readyz
// 503 naming what the worker waits for.
func TestHealthzAnswersWhileStorageConnects(t *testing.T) {
	// A NameNode that accepts connections and never answers.
	nn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Close()
	go func() {
		for {
			conn, err := nn.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
		}
	}()
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := probe.Addr().String()
	probe.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "worker.yaml")
	body := "storage:\n  defaultFS: hdfs://" + nn.Addr().String() + "\n  hdfsUser: flink\n  rpcTimeout: 1m\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--config", cfg, "--temporal-address", "127.0.0.1:1", "--temporal-connect-timeout", "1s",
			"--http-listen", listen, "--log-format", "console"}, noEnv, io.Discard, io.Discard)
	}()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + listen + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, text := get("/healthz")
		if code == http.StatusOK && strings.Contains(text, "starting: connecting to storage") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz: %d %q; want 200 while storage connects", code, text)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, text := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(text, "starting: connecting to storage") {
		t.Errorf("/readyz: %d %q; want 503 naming the storage wait", code, text)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not stop when asked while it connected to storage")
	}
}

// A Temporal frontend that is not there yet (here a name DNS does not
// know) is waited for until worker.temporalConnectTimeout, with /readyz
// saying why; only then the worker exits 3.
func TestRunWaitsForTemporalUntilTheConnectTimeout(t *testing.T) {
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := probe.Addr().String()
	probe.Close()
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(context.Background(), []string{"--temporal-address", "temporal-frontend.invalid:7233", "--temporal-connect-timeout", "6s",
			"--http-listen", listen, "--log-format", "console"}, noEnv, io.Discard, &stderr)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get("http://" + listen + "/readyz")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(b), "connecting to Temporal at temporal-frontend.invalid:7233, retrying") {
				break
			}
		}
		select {
		case code := <-done:
			t.Fatalf("the worker exited %d while it should wait for Temporal:\n%s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never said the worker waits for Temporal (last error %v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case code := <-done:
		if code != exitUnreachable || !strings.Contains(stderr.String(), "temporal-frontend.invalid") {
			t.Fatalf("exit code %d, want %d naming the address:\n%s", code, exitUnreachable, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("the worker kept waiting past its connect timeout")
	}
}
