//go:build realpeers

package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/storage"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/faulthook"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/workerproc"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// fleetWorkers is how many worker processes poll the one task queue.
const fleetWorkers = 3

// workerFleet is several real worker processes on one task queue, as
// replicas of the worker Deployment are.
type workerFleet []*workerproc.Process

// startWorkerFleet writes config (the worker's YAML) and starts
// fleetWorkers processes with it, each with its own log, all holding
// activities where hooks say.
func startWorkerFleet(t *testing.T, config string, hooks *faulthook.Hooks) workerFleet {
	t.Helper()
	return startWorkers(t, config, fleetWorkers, hooks)
}

// startWorkers starts n worker processes with config and, when hooks is
// set, its fault hooks.
func startWorkers(t *testing.T, config string, n int, hooks *faulthook.Hooks) workerFleet {
	t.Helper()
	bin := workerproc.Build(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "worker.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var f workerFleet
	for i := range n {
		p := workerproc.New(t, bin, path, filepath.Join(dir, fmt.Sprintf("worker-%d.log", i)))
		if hooks != nil {
			p.WithHooks(hooks)
		}
		p.Start()
		f = append(f, p)
	}
	return f
}

func (f workerFleet) tails() string {
	var b strings.Builder
	for i, p := range f {
		fmt.Fprintf(&b, "--- worker %d (pid %d) ---\n%s\n", i, p.PID(), p.Tail())
	}
	return b.String()
}

// killHolder waits until an activity of the fleet holds at the hook name
// (failing when the case is not reached: over says why), kills the worker
// holding it with SIGKILL and returns it and where it held.
func (f workerFleet) killHolder(t *testing.T, ctx context.Context, hooks *faulthook.Hooks, name string, over func() string) (*workerproc.Process, faulthook.Held) {
	t.Helper()
	held := hooks.WaitHeld(ctx, name, over)
	for _, p := range f {
		if p.PID() == held.PID {
			p.Kill()
			t.Logf("killed worker %s with SIGKILL while it held %s of %s at its %s (%s)", p.Identity(), held.Activity, held.WorkflowID, held.At, held.Details)
			return p, held
		}
	}
	t.Fatalf("no worker of the fleet has pid %d, which holds %s\n%s", held.PID, name, f.tails())
	return nil, held
}

// activityStarts returns the started events of activityType in wfID's
// history, in order.
func activityStarts(t *testing.T, ctx context.Context, c client.Client, wfID, activityType string) []*historypb.ActivityTaskStartedEventAttributes {
	t.Helper()
	scheduled := map[int64]bool{}
	var starts []*historypb.ActivityTaskStartedEventAttributes
	it := c.GetWorkflowHistory(ctx, wfID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == activityType {
			scheduled[e.GetEventId()] = true
		}
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] {
			starts = append(starts, a)
		}
	}
	return starts
}

// retriedElsewhere checks in wfID's history that activityType completed on
// a worker other than the killed one, in a later attempt.
func retriedElsewhere(t *testing.T, ctx context.Context, c client.Client, wfID, activityType, killed string) {
	t.Helper()
	found := false
	for _, a := range activityStarts(t, ctx, c, wfID, activityType) {
		if a.GetAttempt() <= 1 {
			continue
		}
		if a.GetIdentity() == killed {
			t.Errorf("%s attempt %d of %s ran on the killed worker %s", activityType, a.GetAttempt(), wfID, killed)
		}
		found = true
		t.Logf("%s of %s: attempt %d on %s", activityType, wfID, a.GetAttempt(), a.GetIdentity())
	}
	if !found {
		t.Errorf("%s of %s has no second attempt: the kill did not land while it ran", activityType, wfID)
	}
}

// TestGovernanceWithThreeWorkersOneKilled cleans up 50,000 files (2,000
// retired job dirs of 25 files each) with three worker processes on one
// task queue. The plan, from a listing gathered in three parts across the
// workers and written in shards of 250 items, holds exactly what the plan
// one worker lists and writes whole holds. Its shards are executed at once on several workers,
// and the worker executing one is killed with SIGKILL once items are
// being moved: another takes that shard over when its heartbeat times out
// and resumes from the shard's manifest. Every planned item ends in the
// trash exactly once, none is left in place, nothing else is touched.
func TestGovernanceWithThreeWorkersOneKilled(t *testing.T) {
	peers := sandbox.RequirePeers(t)
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	suffix := peertest.RandomHex(4)
	plain := "/flinkmaint-test/multiworker-gov-" + suffix
	root := peers.HDFS.URI + plain
	tenant := "mw-" + suffix
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
	for _, d := range []string{"/tenant/checkpoints", "/tenant/savepoints", "/trash", "/plans"} {
		if err := hc.MkdirAll(plain+d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Retired job dirs: no job and no retired _metadata refers to them.
	tree := sandbox.RetiredJobTree{Dir: plain + "/tenant/checkpoints", Jobs: 2000, FilesPerJob: 25, ModTime: time.Now().Add(-30 * 24 * time.Hour)}
	start := time.Now()
	if err := tree.Write(ctx, peers, nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d files in %d job dirs in %s", tree.Files(), tree.Jobs, time.Since(start).Round(time.Millisecond))
	items := tree.Jobs
	garbage := map[string]bool{}
	for i := range items {
		garbage[peers.HDFS.URI+tree.JobDir(i)] = true
	}
	// One real cluster whose dirs are this test's own: nothing of other
	// tests is in scope.
	c := peers.Clusters[0]
	invPath := peertest.WriteInventory(t, inventory.Static{
		Tenants: []inventory.Tenant{{Name: tenant, Root: root + "/tenant"}},
		Clusters: []inventory.Cluster{{Tenant: tenant, ClusterID: c.ClusterID, Mode: inventory.ModeSession, RESTURL: c.RESTURL,
			CheckpointDir: root + "/tenant/checkpoints", SavepointDir: root + "/tenant/savepoints"}},
	})
	queue := "multiworker-gov-" + suffix
	cfg := peertest.WorkerConfig(tmp.HostPort, queue)
	cfg.Storage.HDFSUser = peers.HDFS.User
	cfg.Storage.WritableRoots = []string{root}
	cfg.Inventory.StaticFile = invPath
	cfg.Cleanup.TrashRoot, cfg.Cleanup.PlanDir = root+"/trash", root+"/plans"
	hooks := faulthook.New(t)
	fleet := startWorkerFleet(t, peertest.WorkerConfigYAML(t, cfg), hooks)

	resolver := &storage.Resolver{HDFS: storage.HDFSOptions{User: peers.HDFS.User}}
	t.Cleanup(func() { _ = resolver.Close() })
	fs, _, err := resolver.Resolve(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	govern := func(runID, mode string, gatherParts, shardItems int) (string, client.WorkflowRun) {
		in := workflows.GovernanceInput{RunID: runID, Reason: "multi-worker test", Mode: mode,
			Scope: core.Scope{Tenants: []string{tenant}}, GatherParts: gatherParts, ShardItems: shardItems, ExecuteParallelism: 3}
		id := workflows.GovernanceWorkflowID(in.RunID)
		wf, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, workflows.GovernanceWorkflowType, in)
		if err != nil {
			t.Fatal(err)
		}
		return id, wf
	}
	planOf := func(rep workflows.GovernanceReport) cleanup.Plan {
		t.Helper()
		_, pp, err := resolver.Resolve(ctx, rep.PlanPath)
		if err != nil {
			t.Fatal(err)
		}
		p, err := cleanup.ReadPlan(ctx, fs, pp)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	// The plan as one worker makes it: listed by the plan activity itself,
	// in one shard.
	_, single := govern("mw-single-"+suffix, workflows.ModePlan, 1, 100_000)
	var singleRep workflows.GovernanceReport
	if err := single.Get(ctx, &singleRep); err != nil {
		t.Fatalf("single-shard plan: %v\n%s", err, fleet.tails())
	}
	whole := planOf(singleRep)
	if len(whole.Shards) != 1 || len(whole.Delete) != items {
		t.Fatalf("single-shard plan has %d shards and %d items; want 1 and %d", len(whole.Shards), len(whole.Delete), items)
	}

	runID := "mw-" + suffix
	// A shard's execution holds once the run has moved 100 items (its
	// shard of 250 is one manifest batch: the manifest names the shard's
	// items as started, none as done), and its worker is killed there.
	hooks.Arm(faulthook.Hold{Name: "shard", Activity: "ExecuteCleanupPart", At: faulthook.Heartbeat,
		Workflow: workflows.GovernanceWorkflowID(runID), Hit: 100})
	wfID, wf := govern(runID, workflows.ModeAuto, 3, 250)
	audit := root + "/trash/_audit"
	shards := (items + 249) / 250
	recorded := func() int {
		n := 0
		for i := range shards {
			recs, _ := cleanup.ReadManifestPart(ctx, fs, audit, runID, cleanup.ShardPart(i))
			for _, r := range recs {
				if r.Outcome == cleanup.OutcomeTrashed {
					n++
				}
			}
		}
		return n
	}
	killed, held := fleet.killHolder(t, ctx, hooks, "shard", peertest.WorkflowEnded(ctx, tmp.Client, wfID))
	killedID := killed.Identity()
	if n := recorded(); n >= items {
		t.Fatalf("the manifests record all %d items trashed while a shard was held: the case was not reached", n)
	}
	t.Logf("%s held at %s", held.WorkflowID, held.Details)

	var rep workflows.GovernanceReport
	if err := wf.Get(ctx, &rep); err != nil {
		t.Fatalf("governance run: %v\n%s", err, fleet.tails())
	}
	if rep.Outcome != workflows.GovernancePhaseCompleted || rep.Execution == nil || rep.Execution.Items != int64(items) || rep.Execution.Files != int64(tree.Files()) {
		t.Fatalf("report outcome %s execution %+v", rep.Outcome, rep.Execution)
	}
	retriedElsewhere(t, ctx, tmp.Client, wfID, "ExecuteCleanupPart", killedID)
	if ids := activityWorkers(t, ctx, tmp.Client, wfID, "ExecuteCleanupPart"); len(ids) < 2 {
		t.Errorf("the shards ran on %v; want several workers", ids)
	}

	t.Logf("the listing was gathered in 3 parts on %v", activityWorkers(t, ctx, tmp.Client, wfID, "GatherCleanup"))
	// The plan gathered in parts, in shards, is the one-worker plan.
	sharded := planOf(rep)
	if len(sharded.Shards) != shards {
		t.Fatalf("sharded plan has %d shards; want %d", len(sharded.Shards), shards)
	}
	brief := func(p cleanup.Plan) []string {
		var out []string
		for _, it := range p.Delete {
			out = append(out, fmt.Sprintf("%s %s %s %s %d/%d/%d", it.Path, it.Kind, it.Rule, it.Tenant, it.Files, it.Dirs, it.Bytes))
		}
		for _, k := range p.Keep {
			out = append(out, fmt.Sprintf("keep %s %s", k.Path, k.Reason))
		}
		sort.Strings(out)
		return out
	}
	if a, b := brief(whole), brief(sharded); !slices.Equal(a, b) {
		t.Fatalf("the sharded plan differs from the single-shard plan: %d vs %d entries", len(b), len(a))
	}

	trashed := map[string]int{}
	for i := range shards {
		recs, err := cleanup.ReadManifestPart(ctx, fs, audit, runID, cleanup.ShardPart(i))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if !garbage[r.Path] {
				t.Errorf("manifest records %s, which was not garbage", r.Path)
			}
			if r.Outcome == cleanup.OutcomeTrashed {
				trashed[r.Path]++
			}
		}
	}
	for g := range garbage {
		if trashed[g] != 1 {
			t.Errorf("%s has %d trashed records, want exactly 1", g, trashed[g])
		}
		p := strings.TrimPrefix(g, peers.HDFS.URI)
		if _, err := hc.Stat(p); err == nil {
			t.Errorf("%s still in place", p)
		}
	}
	// Everything is in the trash, file for file.
	cs, err := hc.GetContentSummary(plain + "/trash/" + runID)
	if err != nil || cs.FileCount() != tree.Files() {
		t.Fatalf("trash of run %s holds %v files (%v); want %d", runID, cs, err, tree.Files())
	}
}

// activityWorkers returns the identities of the workers that started
// activityType in wfID's history.
func activityWorkers(t *testing.T, ctx context.Context, c client.Client, wfID, activityType string) []string {
	t.Helper()
	var ids []string
	for _, a := range activityStarts(t, ctx, c, wfID, activityType) {
		if !slices.Contains(ids, a.GetIdentity()) {
			ids = append(ids, a.GetIdentity())
		}
	}
	sort.Strings(ids)
	return ids
}

// TestMaintenanceWindowWithThreeWorkersOneKilled runs a window over three
// real jobs with three worker processes on one task queue and kills, with
// SIGKILL, a worker while it stops a job with a savepoint. The stop is
// taken over by another worker (it re-attaches to the savepoint Flink is
// taking) and the window completes: one savepoint per job, every job
// RUNNING once, restored from the savepoint the window recorded.
func TestMaintenanceWindowWithThreeWorkersOneKilled(t *testing.T) {
	peers := sandbox.RequirePeers(t)
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	suffix := peertest.RandomHex(4)
	plain := "/flinkmaint-test/multiworker-window-" + suffix
	testRoot := peers.HDFS.URI + plain
	hc, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{peers.HDFS.NameNode}, User: peers.HDFS.User})
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	if err := hc.MkdirAll(plain+"/checkpoints", 0o755); err != nil {
		t.Fatal(err)
	}
	c := peers.Clusters[0]
	const jobs = 3
	prefix := "mw-" + suffix
	started := startJobs(t, ctx, peers, c, prefix, jobs, testRoot)
	tenant := "mw-" + suffix
	invPath := peertest.WriteInventory(t, inventory.Static{
		Tenants: []inventory.Tenant{{Name: tenant, Root: testRoot}},
		Clusters: []inventory.Cluster{{Tenant: tenant, ClusterID: c.ClusterID, Mode: inventory.ModeSession, RESTURL: c.RESTURL,
			CheckpointDir: testRoot + "/checkpoints", SavepointDir: testRoot + "/savepoints", Jobs: started.specs}},
	})
	queue := "multiworker-window-" + suffix
	cfg := peertest.WorkerConfig(tmp.HostPort, queue)
	cfg.Storage.HDFSUser = peers.HDFS.User
	cfg.Storage.WritableRoots = []string{testRoot}
	cfg.Inventory.StaticFile = invPath
	hooks := faulthook.New(t)
	fleet := startWorkerFleet(t, peertest.WorkerConfigYAML(t, cfg), hooks)
	// The first stop holds once Flink reports its savepoint in progress;
	// its worker is killed there.
	hooks.Arm(faulthook.Hold{Name: "stop", Activity: "StopWithSavepoint", At: faulthook.Heartbeat, Detail: "savepoint in progress", Hit: 1})

	in := workflows.WindowInput{
		WindowID: "mw-" + suffix, Reason: "multi-worker test",
		Scope: core.Scope{IncludeJobs: []string{prefix + "-*"}},
		Policy: workflows.WindowPolicy{
			ManifestDir: testRoot + "/windows",
			Savepoint:   workflows.SavepointPolicy{Concurrency: jobs},
			Network:     workflows.NetworkPolicy{Skip: true},
			Cleanup:     workflows.CleanupPolicy{Mode: workflows.CleanupModeSkip},
			Restart: workflows.RestartPolicy{CanarySize: 1, Concurrency: jobs, Soak: workflows.Duration(3 * time.Second),
				RunningTimeout: workflows.Duration(3 * time.Minute), CheckpointTimeout: workflows.Duration(2 * time.Minute)},
		},
	}
	run, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.WindowWorkflowID(in.WindowID), TaskQueue: queue},
		workflows.MaintenanceWindowWorkflowType, in)
	if err != nil {
		t.Fatal(err)
	}
	killed, held := fleet.killHolder(t, ctx, hooks, "stop", peertest.WorkflowEnded(ctx, tmp.Client, run.GetID()))
	killedID, stopChild := killed.Identity(), held.WorkflowID

	var rep workflows.WindowReport
	if err := run.Get(ctx, &rep); err != nil {
		t.Fatalf("window: %v\n%s", err, fleet.tails())
	}
	if rep.Phase != workflows.WindowPhaseCompleted || len(rep.Jobs) != jobs {
		t.Fatalf("window ended in %s with %d jobs", rep.Phase, len(rep.Jobs))
	}
	retriedElsewhere(t, ctx, tmp.Client, stopChild, "StopWithSavepoint", killedID)

	// One savepoint per job on HDFS: nobody was stopped twice.
	var savepoints []string
	if err := hc.Walk(plain+"/savepoints", func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.IsDir() && strings.HasPrefix(fi.Name(), "savepoint-") {
			savepoints = append(savepoints, p)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(savepoints) != jobs {
		t.Errorf("%d savepoint dirs for %d jobs: %v", len(savepoints), jobs, savepoints)
	}
	api := peertest.FlinkClient(t, c.RESTURL)
	overview, err := api.ListJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range rep.Jobs {
		newID := j.NewJobID
		t.Cleanup(func() { _ = api.CancelJob(context.Background(), newID) })
		if j.SavepointAttempts != 1 || j.RestartAttempts != 1 || j.RestartState != workflows.StepDone {
			t.Errorf("%s: savepoint attempts %d, restart attempts %d, restart %s %s", j.Target.Key, j.SavepointAttempts, j.RestartAttempts, j.RestartState, j.RestartError)
		}
		live := 0
		for _, o := range overview {
			if o.Name == j.Target.JobName && !o.State.IsGloballyTerminal() {
				live++
				if o.ID != j.NewJobID {
					t.Errorf("%s: live job %s is not the window's %s", j.Target.Key, o.ID, j.NewJobID)
				}
			}
		}
		if live != 1 {
			t.Errorf("%s: %d live instances, want exactly 1", j.Target.Key, live)
		}
		runsFromItsSavepoint(t, ctx, api, j)
	}
}
