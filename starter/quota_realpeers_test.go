//go:build realpeers

package main

import (
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// TestQuotaCommandOnRealPeers runs `flinkmaint quota` through a real worker
// against the sandbox's HDFS and compares its figures with Hadoop's own
// `hdfs dfs -count -q` on the same tenant root.
func TestQuotaCommandOnRealPeers(t *testing.T) {
	peers := sandbox.RequirePeers(t)
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// A quiet tenant root of our own, so the counts cannot move under us.
	root := "/flinkmaint-test/quota-cli-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := peers.HadoopShell(ctx, "-mkdir", "-p", root+"/checkpoints", root+"/savepoints/sp-1"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = peers.HadoopShell(context.Background(), "-rm", "-r", "-f", root) })
	if err := peers.SetNamespaceQuota(ctx, root, 500); err != nil {
		t.Fatal(err)
	}
	static := inventory.Static{
		Tenants: []inventory.Tenant{{Name: "quota-cli", Root: peers.HDFS.URI + root}},
		Clusters: []inventory.Cluster{{Tenant: "quota-cli", ClusterID: peers.Clusters[0].ClusterID, Mode: inventory.ModeSession,
			RESTURL: peers.Clusters[0].RESTURL, CheckpointDir: peers.HDFS.URI + root + "/checkpoints", SavepointDir: peers.HDFS.URI + root + "/savepoints"}},
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
	cfg.Storage.HDFSUser = peers.HDFS.User
	cfg.Inventory.StaticFile = invPath
	acts := peertest.NewPorts(t, cfg, "quota-cli-test")
	w := worker.New(tmp.Client, "quota-cli", worker.Options{})
	app.Register(w, acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	code, stdout, stderr := runCLI([]string{"quota", "-o", "json", "--tenant", "quota-cli", "--watch", ""},
		map[string]string{"TEMPORAL_ADDRESS": tmp.HostPort, "FLINKMAINT_TASK_QUEUE": "quota-cli"})
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
	shell, err := peers.HadoopShell(ctx, "-count", "-q", root)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(shell)
	if len(f) < 8 {
		t.Fatalf("unexpected -count -q output %q", shell)
	}
	quota, _ := strconv.ParseInt(f[0], 10, 64)
	remaining, _ := strconv.ParseInt(f[1], 10, 64)
	dirs, _ := strconv.ParseInt(f[4], 10, 64)
	files, _ := strconv.ParseInt(f[5], 10, 64)
	if row.NamespaceQuota != quota || row.NamespaceUsed != dirs+files || row.Headroom != remaining {
		t.Fatalf("quota reports used %d of %d (headroom %d); hdfs dfs -count -q says %d+%d of %d (remaining %d)",
			row.NamespaceUsed, row.NamespaceQuota, row.Headroom, dirs, files, quota, remaining)
	}
	if row.Level != "ok" || !row.RestartAllowed || row.Samples < 1 {
		t.Fatalf("row %+v", row)
	}

	// The default path of the forecast: without a watch, quota says the
	// command that starts one; with it started, quota reads its series.
	env := map[string]string{"TEMPORAL_ADDRESS": tmp.HostPort, "FLINKMAINT_TASK_QUEUE": "quota-cli"}
	quotaNow := func() (rows []quotaRow, notes []string) {
		t.Helper()
		code, stdout, stderr := runCLI([]string{"quota", "-o", "json", "--tenant", "quota-cli"}, env)
		var out struct {
			Tenants []quotaRow `json:"tenants"`
			Notes   []string   `json:"notes"`
		}
		if code != exitOK || json.Unmarshal([]byte(stdout), &out) != nil {
			t.Fatalf("quota: exit %d: %s%s", code, stdout, stderr)
		}
		return out.Tenants, out.Notes
	}
	if _, notes := quotaNow(); len(notes) != 1 || !strings.Contains(notes[0], "flinkmaint quota watch start --name default") {
		t.Fatalf("quota without a watch: notes %q; want the command that starts one", notes)
	}
	for i := 0; i < 2; i++ { // the second start finds it running
		if code, stdout, stderr := runCLI([]string{"quota", "watch", "start", "--interval", "1s", "--tenant", "quota-cli"}, env); code != exitOK {
			t.Fatalf("quota watch start: exit %d: %s%s", code, stdout, stderr)
		} else if i == 1 && !strings.Contains(stdout, "already running") {
			t.Fatalf("second quota watch start: %s", stdout)
		}
	}
	peertest.WaitFor(t, ctx, 2*time.Minute, "the quota forecast reads the watch's samples", func() (bool, string) {
		rows, notes := quotaNow()
		return len(rows) == 1 && rows[0].Samples >= 3 && len(notes) == 0, fmt.Sprintf("rows %+v, notes %q", rows, notes)
	})
	if code, stdout, stderr := runCLI([]string{"quota", "watch", "stop"}, env); code != exitOK || !strings.Contains(stdout, "stopped") {
		t.Fatalf("quota watch stop: exit %d: %s%s", code, stdout, stderr)
	}
}
