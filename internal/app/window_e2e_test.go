//go:build realpeers

package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/checkpoint"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// TestMaintenanceWindowOnRealPeers runs a whole window on the sandbox's
// real Flink clusters and HDFS through a real Temporal dev server: every job
// is stopped with a savepoint recorded in the manifest, the network change
// is confirmed, jobs restart in waves, each restored from exactly its own
// savepoint; one job that fails on restore pauses its wave until an
// operator skips it, and the report names it. The fleet mixes Flink lines
// (two 1.20 clusters and a 2.3 one) in one window, as a fleet mid-migration
// does.
func TestMaintenanceWindowOnRealPeers(t *testing.T) {
	t.Parallel()
	peers := sandbox.RequireMixedFleet(t)
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	suffix := peertest.RandomHex(4)
	testRoot := peers.HDFS.URI + "/flinkmaint-test/window-" + suffix
	fleet := startFleet(t, ctx, peers, suffix, testRoot, 3, true)
	static := fleet.static
	jobs := fleet.jobs

	invPath := peertest.WriteInventory(t, static)
	cfg := config.Default()
	cfg.Storage.HDFSUser = peers.HDFS.User
	cfg.Storage.WritableRoots = []string{testRoot}
	cfg.Inventory.StaticFile = invPath
	cfg.Cleanup.TrashRoot, cfg.Cleanup.PlanDir = testRoot+"/trash", testRoot+"/plans"
	acts := peertest.NewPorts(t, cfg, "window-e2e")
	const queue = "window-e2e"
	w := worker.New(tmp.Client, queue, worker.Options{})
	app.Register(w, acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	in := workflows.WindowInput{
		WindowID: "e2e-" + suffix, Reason: "end-to-end test",
		Scope: core.Scope{IncludeJobs: []string{"win-" + suffix + "-*"}},
		Policy: workflows.WindowPolicy{
			ManifestDir: testRoot + "/windows",
			Savepoint:   workflows.SavepointPolicy{Concurrency: 2},
			Restart: workflows.RestartPolicy{CanarySize: 1, Concurrency: 3, Soak: workflows.Duration(3 * time.Second),
				RunningTimeout: workflows.Duration(2 * time.Minute), CheckpointTimeout: workflows.Duration(90 * time.Second)},
			// A dry-run cleanup: the plan is made and reported, nothing is touched.
			Cleanup: workflows.CleanupPolicy{Mode: workflows.ModePlan},
		},
	}
	run, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.WindowWorkflowID(in.WindowID), TaskQueue: queue},
		workflows.MaintenanceWindowWorkflowType, in)
	if err != nil {
		t.Fatal(err)
	}

	// Operator: confirm the network change once every savepoint is taken,
	// and skip the job that cannot restore when its wave pauses.
	st := peertest.WaitForWindow(t, ctx, tmp.Client, run, func(st workflows.WindowState) bool { return st.Phase == workflows.WindowPhaseNetworkGate })
	for _, j := range st.Jobs {
		if j.SavepointState != workflows.StepDone || !strings.HasPrefix(j.SavepointPath, testRoot+"/"+j.Target.ClusterID+"/savepoints/") {
			t.Fatalf("job %s reached the network gate with savepoint %s %q", j.Target.Key, j.SavepointState, j.SavepointPath)
		}
	}
	testWindowHoldsItsSavepoints(t, ctx, acts, tmp.Client, run.GetID(), st, peers.HDFS.URI)
	// One tenant's quota cannot hold the projected restart: the quota gate
	// must pause with the numbers, and go on once the quota is raised.
	tightRoot := strings.TrimPrefix(testRoot, peers.HDFS.URI) + "/" + peers.Clusters[0].ClusterID
	count, err := peers.HadoopShell(ctx, "-count", tightRoot)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(count) // DIRS FILES BYTES PATH
	dirs, _ := strconv.ParseInt(f[0], 10, 64)
	files, _ := strconv.ParseInt(f[1], 10, 64)
	if err := peers.SetNamespaceQuota(ctx, tightRoot, dirs+files+2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = peers.ClearNamespaceQuota(context.Background(), tightRoot) })
	peertest.Update(t, ctx, tmp.Client, run, workflows.UpdateConfirmNetworkChange, workflows.ConfirmNetworkChangeRequest{By: "e2e", Reason: "done"})
	st = peertest.WaitForWindow(t, ctx, tmp.Client, run, func(st workflows.WindowState) bool {
		return st.Pending != nil && st.Pending.Kind == "quota"
	})
	tight := "e2e-" + peers.Clusters[0].ClusterID
	if !strings.Contains(st.Pending.Reason, tight) || !strings.Contains(st.Pending.Reason, fmt.Sprintf("of %d", dirs+files+2)) {
		t.Fatalf("quota pause does not name tenant %s and its quota %d: %s", tight, dirs+files+2, st.Pending.Reason)
	}
	for _, j := range st.Jobs {
		if j.RestartState != workflows.StepPending {
			t.Fatalf("%s restarted before the quota gate passed", j.Target.Key)
		}
	}
	if err := peers.ClearNamespaceQuota(ctx, tightRoot); err != nil {
		t.Fatal(err)
	}
	peertest.Update(t, ctx, tmp.Client, run, workflows.UpdateDecide, workflows.DecideRequest{Action: workflows.ActionRetry, By: "e2e", Reason: "quota raised"})
	broken := ""
	for _, j := range jobs {
		if strings.HasSuffix(j.name, "-broken") {
			broken = j.cluster.ClusterID + "/" + j.name
		}
	}
	st = peertest.WaitForWindow(t, ctx, tmp.Client, run, func(st workflows.WindowState) bool {
		return st.Pending != nil && st.Pending.Kind == "restart-failures"
	})
	if len(st.Pending.Jobs) != 1 || st.Pending.Jobs[0] != broken {
		t.Fatalf("pending decision about %v, want [%s]: %s", st.Pending.Jobs, broken, st.Pending.Reason)
	}
	peertest.Update(t, ctx, tmp.Client, run, workflows.UpdateDecide, workflows.DecideRequest{Action: workflows.ActionSkipJob, Job: broken, By: "e2e", Reason: "cannot restore"})

	var rep workflows.WindowReport
	if err := run.Get(ctx, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Phase != workflows.WindowPhaseCompleted {
		t.Fatalf("window ended in %s", rep.Phase)
	}
	if c := rep.Cleanup; c == nil || c.Outcome != workflows.GovernancePhasePlanned || c.Error != "" || c.ReclaimedFiles != 0 {
		t.Fatalf("post-restart cleanup %+v, want a dry-run plan that reclaimed nothing", rep.Cleanup)
	}
	for _, j := range rep.Jobs {
		fc := peertest.FlinkClient(t, j.Target.RESTURL)
		if j.Target.Key == broken {
			if j.RestartState != workflows.StepSkipped || !strings.Contains(j.SkipReason, "cannot restore") && !strings.Contains(j.SkipReason, "e2e") {
				t.Errorf("broken job: %+v", j)
			}
			_ = fc.CancelJob(context.Background(), j.NewJobID)
			continue
		}
		newID := j.NewJobID
		t.Cleanup(func() { _ = fc.CancelJob(context.Background(), newID) })
		if j.RestartState != workflows.StepDone {
			t.Errorf("%s: restart %s: %s", j.Target.Key, j.RestartState, j.RestartError)
			continue
		}
		stats, err := fc.Checkpoints(ctx, j.NewJobID)
		if err != nil {
			t.Fatal(err)
		}
		if stats.Latest.Restored == nil || strings.TrimRight(stats.Latest.Restored.ExternalPath, "/") != strings.TrimRight(j.SavepointPath, "/") {
			t.Errorf("%s: Flink says restored from %+v, window recorded savepoint %s", j.Target.Key, stats.Latest.Restored, j.SavepointPath)
		}
		if j.CheckpointID <= stats.Latest.Restored.ID {
			t.Errorf("%s: checkpoint after restore %d not newer than restore %d", j.Target.Key, j.CheckpointID, stats.Latest.Restored.ID)
		}
		d, err := fc.JobDetails(ctx, j.NewJobID)
		if err != nil || d.State != flink.JobRunning {
			t.Errorf("%s: new job %s state %s (%v)", j.Target.Key, j.NewJobID, d.State, err)
		}
		want := "CANONICAL" // the window's default format
		if strings.HasSuffix(j.Target.Key, forStSuffix) {
			want = "NATIVE"
			if !strings.Contains(j.SavepointFormatNote, "ForSt") {
				t.Errorf("%s: the window does not say why its savepoint is NATIVE (note %q)", j.Target.Key, j.SavepointFormatNote)
			}
		}
		if got := savepointFormatOf(t, ctx, acts, j.SavepointPath); got != want {
			t.Errorf("%s: savepoint %s is %s, want %s", j.Target.Key, j.SavepointPath, got, want)
		}
	}
	// The manifest on HDFS lets a person restart jobs without Temporal.
	fs, p, err := acts.Storage.Resolve(ctx, rep.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := fs.ReadFile(ctx, p, 1<<20)
	if err != nil {
		t.Fatalf("manifest %s: %v", rep.Manifest, err)
	}
	for _, j := range rep.Jobs {
		if !strings.Contains(string(manifest), j.SavepointPath) {
			t.Errorf("manifest lacks %s's savepoint %s", j.Target.Key, j.SavepointPath)
		}
	}
	if os.Getenv(sandbox.EnvCaptureHistory) != "" {
		sandbox.CaptureHistory(t, tmp.Client, run.GetID(), run.GetRunID(), os.Getenv(sandbox.EnvCaptureHistory)+"/window.json.gz")
	}
}

// testWindowHoldsItsSavepoints plans a cleanup while the window waits at
// its gate, with its jobs stopped: each savepoint the window will restart
// from is kept as held by the window, found by asking Temporal which runs
// are in flight, whatever the retention rules would say of it.
func testWindowHoldsItsSavepoints(t *testing.T, ctx context.Context, acts *app.Ports, c client.Client, windowRun string, st workflows.WindowState, fsURI string) {
	t.Helper()
	planner := *acts
	planner.Runs = app.TemporalRuns{Client: c} // the activity runs outside the worker here
	var tenants []string
	for _, j := range st.Jobs {
		if !slices.Contains(tenants, j.Target.Tenant) {
			tenants = append(tenants, j.Target.Tenant)
		}
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	app.RegisterActivities(env, &planner)
	v, err := env.ExecuteActivity(app.NewFamilies(&planner).Governance.PlanCleanup, governance.PlanCleanupInput{RunID: "held-" + peertest.RandomHex(4),
		Scope: core.Scope{Tenants: tenants}, Policy: governance.CleanupPolicy{}})
	if err != nil {
		t.Fatalf("plan while the window waits: %v", err)
	}
	var res governance.PlanCleanupResult
	if err := v.Get(&res); err != nil {
		t.Fatal(err)
	}
	fs, p, err := acts.Storage.Resolve(ctx, res.Summary.PlanPath)
	if err != nil {
		t.Fatal(err)
	}
	data, err := fs.ReadFile(ctx, p, 1<<26)
	if err != nil {
		t.Fatal(err)
	}
	var plan cleanup.Plan
	if err := json.Unmarshal(data, &plan); err != nil {
		t.Fatal(err)
	}
	for _, j := range st.Jobs {
		sp := strings.TrimPrefix(strings.TrimRight(j.SavepointPath, "/"), fsURI)
		var kept *cleanup.Kept
		for i, k := range plan.Keep {
			if strings.TrimPrefix(k.Path, fsURI) == sp {
				kept = &plan.Keep[i]
			}
		}
		for _, it := range plan.Delete {
			if rel := strings.TrimPrefix(it.Path, fsURI); rel == sp || strings.HasPrefix(sp, rel+"/") {
				t.Errorf("window savepoint %s planned for deletion (%s)", sp, it.Rule)
			}
		}
		if kept == nil || kept.Reason != cleanup.KeepHeldByRun || !strings.Contains(kept.By, windowRun) {
			t.Errorf("window savepoint %s kept as %+v; want %s by run %s", sp, kept, cleanup.KeepHeldByRun, windowRun)
		}
	}
}

// forStSuffix ends the name of a fleet job that runs the ForSt state
// backend: its savepoints must be NATIVE (a CANONICAL one fails it over).
const forStSuffix = "-forst"

// fleetJob is a sample job the test submitted.
type fleetJob struct {
	cluster sandbox.FlinkCluster
	name    string
	args    []string
	id      string
}

type fleet struct {
	static inventory.Static
	jobs   []fleetJob
}

// startFleet submits perCluster sample jobs to each sandbox cluster (plus,
// when broken is set, one on the last cluster whose restart recipe fails on
// restore), waits until each has checkpointed, and returns the static
// inventory that describes them. Each cluster gets a tenant of its own whose
// root, testRoot/<cluster>, holds the jobs' checkpoints and savepoints, so a
// test may put a quota on it without touching other tests' state.
func startFleet(t *testing.T, ctx context.Context, peers *sandbox.Peers, suffix, testRoot string, perCluster int, broken bool) fleet {
	t.Helper()
	hc, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{peers.HDFS.NameNode}, User: peers.HDFS.User})
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	var f fleet
	for _, c := range peers.Clusters {
		tenantRoot := testRoot + "/" + c.ClusterID
		// Roots exist before anything is written under them, as in production.
		if err := hc.MkdirAll(strings.TrimPrefix(tenantRoot, peers.HDFS.URI)+"/checkpoints", 0o755); err != nil {
			t.Fatal(err)
		}
		tenant := "e2e-" + c.ClusterID
		f.static.Tenants = append(f.static.Tenants, inventory.Tenant{Name: tenant, Root: tenantRoot})
		cl := inventory.Cluster{Tenant: tenant, ClusterID: c.ClusterID, Mode: inventory.ModeSession, RESTURL: c.RESTURL,
			CheckpointDir: tenantRoot + "/checkpoints", SavepointDir: tenantRoot + "/savepoints", HAStorageDir: c.HAStorageDir}
		var names []string
		for i := 1; i <= perCluster; i++ {
			n := fmt.Sprintf("win-%s-%s-%d", suffix, c.ClusterID, i)
			if i == 1 && c.Line() == sandbox.Line2 {
				n += forStSuffix // the ForSt state backend, Flink 2.x only
			}
			names = append(names, n)
		}
		if broken && c.ClusterID == peers.Clusters[len(peers.Clusters)-1].ClusterID {
			names = append(names, "win-"+suffix+"-"+c.ClusterID+"-broken")
		}
		for _, n := range names {
			args := []string{"--job-name", n, "--keys", "2000", "--value-bytes", "256", "--rate", "500", "--checkpoint-dir", cl.CheckpointDir}
			if strings.HasSuffix(n, forStSuffix) {
				args = append(args, "--state-backend", "forst", "--forst-local")
			}
			restartArgs := args
			if strings.HasSuffix(n, "-broken") {
				restartArgs = append(append([]string{}, args...), "--fail-on-restore")
			}
			cl.Jobs = append(cl.Jobs, inventory.JobSpec{Name: n, Restart: inventory.RestartRecipe{
				Kind: inventory.RestartRESTJarRun, Jar: peers.SampleJar(c), EntryClass: peers.SampleJob.EntryClass, ProgramArgs: restartArgs}})
			f.jobs = append(f.jobs, fleetJob{cluster: c, name: n, args: args})
		}
		f.static.Clusters = append(f.static.Clusters, cl)
	}
	for i := range f.jobs {
		fc := peertest.FlinkClient(t, f.jobs[i].cluster.RESTURL)
		jarID, err := fc.UploadJar(ctx, peers.SampleJar(f.jobs[i].cluster))
		if err != nil {
			t.Fatal(err)
		}
		run, err := fc.RunJar(ctx, jarID, flink.RunJarRequest{EntryClass: peers.SampleJob.EntryClass, ProgramArgs: f.jobs[i].args})
		if err != nil {
			t.Fatal(err)
		}
		_ = fc.DeleteJar(ctx, jarID)
		f.jobs[i].id = run.JobID
		id, c := run.JobID, fc
		t.Cleanup(func() { _ = c.CancelJob(context.Background(), id) })
	}
	for _, j := range f.jobs {
		peertest.WaitForCheckpoint(t, ctx, peertest.FlinkClient(t, j.cluster.RESTURL), j.id)
	}
	return f
}

// savepointFormatOf reads the formatType a savepoint's _metadata records.
func savepointFormatOf(t *testing.T, ctx context.Context, acts *app.Ports, savepoint string) string {
	t.Helper()
	fs, p, err := acts.Storage.Resolve(ctx, strings.TrimRight(savepoint, "/")+"/_metadata")
	if err != nil {
		t.Fatal(err)
	}
	data, err := fs.ReadFile(ctx, p, checkpoint.MaxMetadataSize)
	if err != nil {
		t.Fatal(err)
	}
	md, err := checkpoint.ParseBytes(data, strings.TrimRight(savepoint, "/")+"/_metadata")
	if err != nil {
		t.Fatal(err)
	}
	if md.Properties == nil {
		t.Fatalf("%s: _metadata has no properties", savepoint)
	}
	return md.Properties.FormatType
}
