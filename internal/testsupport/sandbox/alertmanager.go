package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Alertmanager is a real Alertmanager started for one test.
type Alertmanager struct {
	// URL is its base, e.g. http://127.0.0.1:40123.
	URL string
}

// StartAlertmanager starts bin/alertmanager (scripts/alertmanager.sh
// build) on a free loopback port with a configuration that routes
// everything to a receiver without integrations, and stops it when the
// test ends. A missing binary fails the test.
func StartAlertmanager(t testing.TB) *Alertmanager {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin", "alertmanager")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("Alertmanager not found at %s (%v): run scripts/alertmanager.sh build", bin, err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(conf, []byte("route:\n  receiver: on-call\nreceivers:\n  - name: on-call\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	logFile, err := os.Create(filepath.Join(dir, "alertmanager.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+conf, "--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--cluster.listen-address=")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logFile.Close()
	})
	am := &Alertmanager{URL: "http://" + addr}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		resp, err := http.Get(am.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return am
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Alertmanager at %s not ready within a minute (log: %s)", addr, logFile.Name())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// AlertmanagerAlert is an alert as GET /api/v2/alerts returns it.
type AlertmanagerAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	GeneratorURL string            `json:"generatorURL"`
	Status       struct {
		State string `json:"state"`
	} `json:"status"`
}

// Alerts lists the alerts Alertmanager holds.
func (a *Alertmanager) Alerts(ctx context.Context) ([]AlertmanagerAlert, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL+"/api/v2/alerts", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /api/v2/alerts: %s", resp.Status)
	}
	var out []AlertmanagerAlert
	return out, json.NewDecoder(resp.Body).Decode(&out)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
