//go:build realpeers

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"go.temporal.io/sdk/testsuite"
	"gopkg.in/yaml.v3"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// TestDebrisIsWhatTheDemoCleanupReclaims seeds the demo's debris into a
// private tenant tree on the sandbox and plans a cleanup of it: each kind
// is planned by its rule, and what a restore may still need (the newest
// checkpoint of a retired job with no savepoint, the newest savepoints,
// the live job's checkpoints) is kept. `make demo` tells its story only
// if this holds.
func TestDebrisIsWhatTheDemoCleanupReclaims(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	peers := sandbox.RequirePeers(t)
	c := peers.Clusters[0]
	plain := fmt.Sprintf("/flinkmaint-test/demo-%s", randomHex(4))
	root := plain + "/tenants/payments"
	uri := peers.HDFS.URI
	hc, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{peers.HDFS.NameNode}, User: peers.HDFS.User})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if os.Getenv("FLINKMAINT_KEEP_TEST_TREE") == "" {
			_ = hc.RemoveAll(plain)
		}
		_ = hc.Close()
	})
	for _, d := range []string{root + "/checkpoints", root + "/savepoints", root + "/ha", plain + "/trash", plain + "/plans"} {
		if err := hc.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tenant := "payments-" + randomHex(3)
	cl := inventory.Cluster{Tenant: tenant, ClusterID: c.ClusterID, Mode: inventory.ModeSession, RESTURL: c.RESTURL,
		CheckpointDir: uri + root + "/checkpoints", SavepointDir: uri + root + "/savepoints", HAStorageDir: uri + root + "/ha"}
	cl.Jobs = []inventory.JobSpec{{Name: "live-" + tenant, Restart: inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun,
		Jar: peers.SampleJob.Jar, EntryClass: peers.SampleJob.EntryClass}}}
	static := inventory.Static{Tenants: []inventory.Tenant{{Name: tenant, Root: uri + root}}, Clusters: []inventory.Cluster{cl}}
	acts := newActivities(t, peers, static, uri+plain)

	fc, err := flink.New(flink.Options{BaseURL: c.RESTURL})
	if err != nil {
		t.Fatal(err)
	}
	jarID, err := fc.UploadJar(ctx, peers.SampleJob.Jar)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fc.DeleteJar(context.Background(), jarID) })
	run, err := fc.RunJar(ctx, jarID, flink.RunJarRequest{EntryClass: peers.SampleJob.EntryClass,
		ProgramArgs: []string{"--job-name", cl.Jobs[0].Name, "--checkpoint-dir", cl.CheckpointDir, "--keys", "2000", "--value-bytes", "128", "--rate", "400"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fc.CancelJob(context.Background(), run.JobID) })
	if err := awaitCheckpoints(ctx, fc, run.JobID, 1); err != nil {
		t.Fatal(err)
	}

	d := &debris{hc: hc, fc: fc, uri: uri, root: root, jar: peers.SampleJob.Jar, main: peers.SampleJob.EntryClass, now: time.Now(), log: t.Logf}
	const orphans = 20
	rep, err := d.seed(ctx, []liveJob{{cl.Jobs[0].Name, run.JobID}}, orphans)
	if err != nil {
		t.Fatal(err)
	}
	var adopted governance.AdoptSavepointsResult
	paths := rep.OldSavepoints[cl.Jobs[0].Name]
	for i := range paths {
		paths[i] = uri + paths[i]
	}
	runActivity(t, acts, app.NewFamilies(acts).Governance.AdoptSavepoints, governance.AdoptSavepointsInput{Job: c.ClusterID + "/" + cl.Jobs[0].Name, Paths: paths}, &adopted)
	if len(adopted.Adopted) != len(oldSavepointAges) {
		t.Fatalf("adopted %+v; want the %d old savepoints", adopted, len(oldSavepointAges))
	}

	var res governance.PlanCleanupResult
	runActivity(t, acts, app.NewFamilies(acts).Governance.PlanCleanup, governance.PlanCleanupInput{RunID: "demo-debris", Scope: core.Scope{Tenants: []string{tenant}}}, &res)
	fs, p, err := acts.Storage.Resolve(ctx, res.Summary.PlanPath)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := cleanup.ReadPlan(ctx, fs, p)
	if err != nil {
		t.Fatal(err)
	}
	planned := map[string]cleanup.Rule{}
	for _, it := range plan.Delete {
		planned[strings.TrimPrefix(it.Path, uri)] = it.Rule
	}
	kept := map[string]cleanup.Reason{}
	for _, k := range plan.Keep {
		kept[strings.TrimPrefix(k.Path, uri)] = k.Reason
	}
	want := map[string]cleanup.Rule{
		rep.RetiredWithSavepoint: cleanup.RuleRetiredJob,
		rep.DeletedClusterHA:     cleanup.RuleRetiredHACluster,
		paths[0][len(uri):]:      cleanup.RuleSavepointRetention, // the oldest of three; two are kept
	}
	for _, o := range rep.Orphans {
		want[o] = cleanup.RuleUnreferencedState
	}
	for p, rule := range want {
		if planned[p] != rule {
			t.Errorf("%s planned as %q, want %q (kept: %q)", p, planned[p], rule, kept[p])
		}
	}
	for p, reason := range map[string]cleanup.Reason{
		rep.KeptCheckpoint:   cleanup.KeepLatestRetired,
		paths[2][len(uri):]:  cleanup.KeepNewestSavepoints,
		rep.RetiredSavepoint: cleanup.KeepNewestSavepoints, // its job's checkpoint history names it
	} {
		if kept[p] != reason {
			t.Errorf("%s kept as %q, want %q (planned: %q)", p, kept[p], reason, planned[p])
		}
	}
	for p := range planned {
		if strings.HasPrefix(p, root+"/checkpoints/"+run.JobID+"/chk-") {
			t.Errorf("the live job's checkpoint %s is planned", p)
		}
	}
}

func newActivities(t *testing.T, peers *sandbox.Peers, static inventory.Static, base string) *app.Ports {
	t.Helper()
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
	cfg.Storage.WritableRoots = []string{base}
	cfg.Inventory.StaticFile = invPath
	cfg.Cleanup.TrashRoot, cfg.Cleanup.PlanDir = base+"/trash", base+"/plans"
	if err := cfg.Validate(); err != nil {
		t.Fatalf("worker config: %v", err)
	}
	acts := peertest.NewPorts(t, cfg, "demo-debris-test")
	// Its activities run outside a worker, where no window or upgrade
	// of flinkmaint can be in flight.
	acts.Runs = nil
	return acts
}

func runActivity(t *testing.T, acts *app.Ports, fn, in, out any) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	app.RegisterActivities(env, acts)
	v, err := env.ExecuteActivity(fn, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Get(out); err != nil {
		t.Fatal(err)
	}
}
