//go:build realpeers

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"
	"gopkg.in/yaml.v3"

	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/storage"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// TestQuotaCommandOnSecureHAHDFS runs `flinkmaint quota` through a worker
// logged in by keytab to the kerberized HA HDFS (hdfs://ns1) and compares
// its figures with `hdfs dfs -count -q` run by the Java client through the
// same HADOOP_CONF_DIR.
func TestQuotaCommandOnSecureHAHDFS(t *testing.T) {
	s := sandbox.RequireSecureStorage(t)
	peers := sandbox.RequirePeers(t)
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := s.RestartStopped(ctx); err != nil {
		t.Fatalf("two NameNodes are needed: %v", err)
	}
	kerberos := &storage.KerberosOptions{Krb5Conf: s.Krb5Conf, Principal: s.Principals.Worker.Principal, Keytab: s.Principals.Worker.Keytab}

	// A quiet tenant root of our own under team-a's, so the counts cannot
	// move under us.
	guard, err := storage.NewGuard(s.Tenants[0].Root)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := storage.NewHDFS(ctx, storage.HDFSOptions{URI: s.URI, HadoopConfDir: s.HadoopConfDir, Kerberos: kerberos, Guard: guard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fs.Close() })
	root := s.Tenants[0].Root + "/quota-cli-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, d := range []string{root + "/checkpoints", root + "/savepoints/sp-1"} {
		if err := fs.MkdirAll(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := fs.WriteFile(ctx, root+"/savepoints/sp-1/_metadata", []byte("not parsed by quota")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fs.RemoveAll(context.Background(), root) })
	if _, err := s.DFSAdmin(ctx, s.Principals.Service, "-setQuota", "500", root); err != nil {
		t.Fatalf("dfsadmin -setQuota: %v", err)
	}

	static := inventory.Static{
		Tenants: []inventory.Tenant{{Name: "quota-secure", Root: s.URI + root}},
		Clusters: []inventory.Cluster{{Tenant: "quota-secure", ClusterID: "ns1-quota", Mode: inventory.ModeSession,
			RESTURL: peers.Clusters[0].RESTURL, CheckpointDir: s.URI + root + "/checkpoints", SavepointDir: s.URI + root + "/savepoints"}},
	}
	data, err := yaml.Marshal(static)
	if err != nil {
		t.Fatal(err)
	}
	invPath := filepath.Join(t.TempDir(), "inventory.yaml")
	if err := os.WriteFile(invPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Storage.HadoopConfDir = s.HadoopConfDir
	cfg.Storage.Kerberos = &config.Kerberos{Krb5Conf: s.Krb5Conf, Principal: s.Principals.Worker.Principal, Keytab: s.Principals.Worker.Keytab}
	cfg.Inventory.StaticFile = invPath
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	acts := peertest.NewPorts(t, cfg, "quota-secure-test")
	w := worker.New(tmp.Client, "quota-secure", worker.Options{})
	app.Register(w, acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	code, stdout, stderr := runCLI([]string{"quota", "-o", "json", "--tenant", "quota-secure", "--watch", ""},
		map[string]string{"TEMPORAL_ADDRESS": tmp.HostPort, "FLINKMAINT_TASK_QUEUE": "quota-secure"})
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Tenants []quotaRow `json:"tenants"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if len(out.Tenants) != 1 {
		t.Fatalf("tenants %+v", out.Tenants)
	}
	row := out.Tenants[0]

	// hdfs dfs -count -q: QUOTA REM_QUOTA SPACE_QUOTA REM_SPACE_QUOTA DIRS FILES BYTES PATH
	shell, err := s.HadoopShell(ctx, s.Principals.Worker, "-count", "-q", root)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(shell)
	if len(f) != 8 {
		t.Fatalf("unexpected -count -q output %q", shell)
	}
	num := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("column %q of %q: %v", s, shell, err)
		}
		return n
	}
	quota, remaining, dirs, files := num(f[0]), num(f[1]), num(f[4]), num(f[5])
	if row.NamespaceQuota != quota || row.NamespaceUsed != dirs+files || row.Headroom != remaining {
		t.Fatalf("quota reports used %d of %d (headroom %d); hdfs dfs -count -q says %d+%d of %d (remaining %d)",
			row.NamespaceUsed, row.NamespaceQuota, row.Headroom, dirs, files, quota, remaining)
	}
	if row.Level != "ok" || !row.RestartAllowed || row.Samples < 1 {
		t.Fatalf("row %+v", row)
	}
	t.Logf("flinkmaint quota: %d of %d, headroom %d == hdfs dfs -count -q %q", row.NamespaceUsed, row.NamespaceQuota, row.Headroom, strings.TrimSpace(shell))
}
