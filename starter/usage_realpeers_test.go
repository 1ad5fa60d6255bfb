//go:build realpeers

package main

import (
	"encoding/csv"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.temporal.io/sdk/worker"
	"gopkg.in/yaml.v3"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/internal/usage"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// TestUsageCommandOnDevServer runs `flinkmaint usage` through a real dev
// server and worker over a tenant root on local storage: its figures equal
// a walk of the tree, the second run reports the sample the first wrote
// as growth, and an unknown tenant fails naming the known ones.
func TestUsageCommandOnDevServer(t *testing.T) {
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	base := t.TempDir()
	root := filepath.Join(base, "team-a")
	const job = "0123456789abcdef0123456789abcdef"
	for p, data := range map[string]string{
		"checkpoints/" + job + "/chk-1/_metadata":            "meta",
		"checkpoints/" + job + "/shared/sst":                 "0123456789",
		"savepoints/savepoint-012345-0123456789ab/_metadata": "sp",
		"stray.txt": "?",
	} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := yaml.Marshal(inventory.Static{
		Tenants: []inventory.Tenant{{Name: "team-a", Root: root}},
		// No JobManager answers here: job ids and lineage stay unknown.
		Clusters: []inventory.Cluster{{Tenant: "team-a", ClusterID: "c", Mode: inventory.ModeSession, RESTURL: "http://127.0.0.1:1",
			CheckpointDir: root + "/checkpoints", SavepointDir: root + "/savepoints"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Storage.WritableRoots = []string{base}
	cfg.Inventory.StaticFile = filepath.Join(base, "inventory.yaml")
	if err := os.WriteFile(cfg.Inventory.StaticFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	acts := peertest.NewPorts(t, cfg, "usage-cli-test")
	w := worker.New(tmp.Client, "usage-cli", worker.Options{})
	app.Register(w, acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	env := map[string]string{"TEMPORAL_ADDRESS": tmp.HostPort, "FLINKMAINT_TASK_QUEUE": "usage-cli"}

	var walked usage.Figures
	if err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			walked.Dirs++
			return nil
		}
		info, err := d.Info()
		walked.Files++
		walked.Bytes += info.Size()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI([]string{"usage", "-o", "json", "--tenant", "team-a"}, env)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var first capacity.TenantUsageResult
	if err := json.Unmarshal([]byte(stdout), &first); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if len(first.Tenants) != 1 || first.Tenants[0].Total.Figures != walked || first.Tenants[0].Since != nil || first.Tenants[0].Total.Growth != nil {
		t.Fatalf("usage %+v; want the walk's %+v and no growth on the first sample", first.Tenants, walked)
	}
	kinds := map[usage.Kind]usage.Figures{}
	for _, k := range first.Tenants[0].Kinds {
		kinds[k.Kind] = k.Figures
	}
	if kinds[usage.KindShared] != (usage.Figures{Files: 1, Dirs: 1, Bytes: 10}) || kinds[usage.KindUnknown] != (usage.Figures{Files: 1, Bytes: 1}) ||
		kinds[usage.KindSavepoints] != (usage.Figures{Files: 1, Dirs: 2, Bytes: 2}) {
		t.Fatalf("kinds %+v", kinds)
	}

	// The second run counts the sample the first wrote, as growth of the
	// flinkmaint kind: .flinkmaint/, usage/ and latest.json.
	sample, err := os.Stat(filepath.Join(root, usage.SampleDir, usage.SampleName))
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCLI([]string{"usage", "-o", "csv"}, env)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"team-a", "unattributed", "flinkmaint", "1", "2", strconv.FormatInt(sample.Size(), 10), "1", "2", strconv.FormatInt(sample.Size(), 10)}
	found := false
	for _, r := range rows {
		found = found || strings.Join(r, ",") == strings.Join(want, ",")
	}
	if !found {
		t.Fatalf("csv lacks %v:\n%s", want, stdout)
	}

	code, _, stderr = runCLI([]string{"usage", "--tenant", "nope"}, env)
	if code != exitWorkflowFailed || !strings.Contains(stderr, `tenant "nope" is not in the inventory; its tenants are team-a`) {
		t.Fatalf("exit %d, stderr %q; want %d naming the known tenants", code, stderr, exitWorkflowFailed)
	}
}
