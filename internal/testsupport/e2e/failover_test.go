//go:build realpeers

package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/storage"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/faulthook"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// failoverJobs is how many sample jobs the window stops; one savepoint at a
// time, so when the first has stopped the others still run.
const failoverJobs = 3

// TestMaintenanceWindowSurvivesJobManagerFailover kills the JobManager of a
// real Flink session cluster (ZooKeeper HA) with SIGKILL while the window
// stops its jobs with savepoints, one at a time: the first job has
// finished with its savepoint and Flink has removed it from HA, but the
// window has not learned it yet. The cluster restarts on the same REST
// port and recovers from ZooKeeper the jobs it still holds; it no longer
// knows the finished one, whose savepoint the window finds in the target
// directory. The window goes on: every job ends it RUNNING once, restored
// from the savepoint the manifest names; none was stopped twice. A fault
// hook holds the first stop activity once Flink reports its savepoint in
// progress, so the window cannot learn of the stop until the test has
// killed and restarted the JobManager and released it.
func TestMaintenanceWindowSurvivesJobManagerFailover(t *testing.T) {
	peers := sandbox.RequirePeers(t)
	fc := sandbox.StartFailoverCluster(t)
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	flinkAPI := peertest.FlinkClient(t, fc.RESTURL)

	suffix := peertest.RandomHex(4)
	testRoot := peers.HDFS.URI + "/flinkmaint-test/failover-" + suffix
	hc, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{peers.HDFS.NameNode}, User: peers.HDFS.User})
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	// Roots exist before anything is written under them, as in production.
	if err := hc.MkdirAll(strings.TrimPrefix(testRoot, peers.HDFS.URI)+"/checkpoints", 0o755); err != nil {
		t.Fatal(err)
	}
	jobs := startJobs(t, ctx, peers, fc.FlinkCluster, "fo-"+suffix, failoverJobs, testRoot)
	static := inventory.Static{
		Tenants: []inventory.Tenant{{Name: "failover-" + suffix, Root: testRoot}},
		Clusters: []inventory.Cluster{{Tenant: "failover-" + suffix, ClusterID: fc.ClusterID, Mode: inventory.ModeSession,
			RESTURL: fc.RESTURL, CheckpointDir: testRoot + "/checkpoints", SavepointDir: testRoot + "/savepoints",
			HAStorageDir: fc.HAStorageDir, Jobs: jobs.specs}},
	}

	cfg := config.Default()
	cfg.Storage.HDFSUser = peers.HDFS.User
	cfg.Storage.WritableRoots = []string{testRoot}
	cfg.Inventory.StaticFile = peertest.WriteInventory(t, static)
	cfg.Cleanup.TrashRoot, cfg.Cleanup.PlanDir = testRoot+"/trash", testRoot+"/plans"
	acts := peertest.NewPorts(t, cfg, "failover-e2e")
	hooks := faulthook.New(t)
	hooks.Arm(faulthook.Hold{Name: "stop", Activity: "StopWithSavepoint", At: faulthook.Heartbeat, Detail: "savepoint in progress",
		PerExecution: true, Hit: 1})
	const queue = "failover-e2e"
	w := worker.New(tmp.Client, queue, worker.Options{Interceptors: []interceptor.WorkerInterceptor{faulthook.Interceptor(hooks.Dir())}})
	app.Register(w, acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	in := workflows.WindowInput{
		WindowID: "failover-" + suffix, Reason: "JobManager failover test",
		Scope: core.Scope{IncludeJobs: []string{"fo-" + suffix + "-*"}},
		Policy: workflows.WindowPolicy{
			ManifestDir: testRoot + "/windows",
			Savepoint:   workflows.SavepointPolicy{Concurrency: 1},
			Restart: workflows.RestartPolicy{CanarySize: 1, Concurrency: failoverJobs, Soak: workflows.Duration(3 * time.Second),
				RunningTimeout: workflows.Duration(3 * time.Minute), CheckpointTimeout: workflows.Duration(2 * time.Minute)},
			Cleanup: workflows.CleanupPolicy{Mode: workflows.CleanupModeSkip},
		},
	}
	run, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.WindowWorkflowID(in.WindowID), TaskQueue: queue},
		workflows.MaintenanceWindowWorkflowType, in)
	if err != nil {
		t.Fatal(err)
	}

	// Kill once Flink has finished the held job's stop-with-savepoint and
	// removed its JobGraph from HA, while the window still waits for that
	// stop (its activity held) and the other jobs still run.
	held := hooks.WaitHeld(ctx, "stop", peertest.WorkflowEnded(ctx, tmp.Client, run.GetID()))
	first := waitForStopInFlight(t, ctx, tmp.Client, run, flinkAPI, jobs, haJobGraphsBelow(t, peers, fc, failoverJobs))
	if want := workflows.JobSavepointWorkflowID(in.WindowID, first, 1); held.WorkflowID != want {
		t.Fatalf("the stop of %s finished while %s held; want %s held", first, held.WorkflowID, want)
	}
	if err := fc.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed the JobManager (pid %d) once %s had FINISHED with its savepoint, before the window knew", fc.PID, first)
	if err := fc.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted the cluster as pid %d on %s", fc.PID, fc.RESTURL)
	// The window goes on once the new JobManager runs the jobs it
	// recovered: a stop asked of a job it still initializes is refused
	// (Flink 1.20: "Unable to get JobMasterGateway for initializing job"),
	// and this test is about the stop that finished before the crash.
	peertest.WaitFor(t, ctx, 3*time.Minute, "the recovered jobs running on the restarted JobManager", func() (bool, string) {
		overview, err := flinkAPI.ListJobs(ctx)
		if err != nil {
			return false, err.Error()
		}
		running := 0
		var states []string
		for _, o := range overview {
			if _, ours := jobs.names[o.ID]; ours {
				states = append(states, o.Name+" "+string(o.State))
				if o.State == flink.JobRunning {
					running++
				}
			}
		}
		return running == failoverJobs-1, strings.Join(states, ", ")
	})
	hooks.Release("stop")

	st := waitForState(t, ctx, tmp.Client, run, func(st workflows.WindowState) bool { return st.Phase == workflows.WindowPhaseNetworkGate })
	for _, j := range st.Jobs {
		if j.SavepointState != workflows.StepDone || !strings.HasPrefix(j.SavepointPath, testRoot+"/savepoints/") {
			t.Fatalf("job %s reached the network gate with savepoint %s %q", j.Target.Key, j.SavepointState, j.SavepointPath)
		}
	}
	peertest.Update(t, ctx, tmp.Client, run, workflows.UpdateConfirmNetworkChange, workflows.ConfirmNetworkChangeRequest{By: "e2e", Reason: "done"})

	var rep workflows.WindowReport
	if err := run.Get(ctx, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Phase != workflows.WindowPhaseCompleted {
		t.Fatalf("window ended in %s", rep.Phase)
	}
	if len(rep.Jobs) != failoverJobs {
		t.Fatalf("window reports %d jobs, want %d", len(rep.Jobs), failoverJobs)
	}
	manifest := readManifest(t, ctx, acts, rep.Manifest)
	overview, err := flinkAPI.ListJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range rep.Jobs {
		newID := j.NewJobID
		t.Cleanup(func() { _ = flinkAPI.CancelJob(context.Background(), newID) })
		if j.SavepointAttempts != 1 || j.RestartAttempts != 1 || j.RestartState != workflows.StepDone {
			t.Errorf("%s: savepoint attempts %d, restart attempts %d, restart %s %s", j.Target.Key, j.SavepointAttempts, j.RestartAttempts, j.RestartState, j.RestartError)
		}
		if j.SavepointRecovered != "" {
			t.Logf("%s: %s", j.Target.Key, j.SavepointRecovered)
		}
		if j.Target.Key == first && !strings.Contains(j.SavepointRecovered, "savepoint found in") {
			t.Errorf("%s: the new JobManager never knew it, yet its savepoint was not found in the target directory: %q", first, j.SavepointRecovered)
		}
		// The manifest names exactly this job's savepoint, and it exists.
		var named []string
		for _, m := range manifest.Jobs {
			if m.Key == j.Target.Key {
				named = append(named, m.SavepointPath)
			}
		}
		if len(named) != 1 || strings.TrimRight(named[0], "/") != strings.TrimRight(j.SavepointPath, "/") {
			t.Errorf("%s: manifest names savepoints %v, the window restored from %s", j.Target.Key, named, j.SavepointPath)
		}
		if !exists(t, ctx, acts, strings.TrimRight(j.SavepointPath, "/")+"/_metadata") {
			t.Errorf("%s: savepoint %s has no _metadata", j.Target.Key, j.SavepointPath)
		}
		// One live instance per logical job, the window's; at most one
		// stop Flink still remembers (the finished jobs it knew before the
		// crash are gone with that JobManager's memory).
		live, finished := 0, 0
		for _, o := range overview {
			if o.Name != j.Target.JobName {
				continue
			}
			switch {
			case !o.State.IsGloballyTerminal():
				live++
				if o.ID != j.NewJobID {
					t.Errorf("%s: live job %s (%s) is not the window's %s", j.Target.Key, o.ID, o.State, j.NewJobID)
				}
			case o.State == flink.JobFinished:
				finished++
			default:
				t.Errorf("%s: instance %s ended %s", j.Target.Key, o.ID, o.State)
			}
		}
		if live != 1 || finished > 1 {
			t.Errorf("%s: %d live and %d finished instances, want 1 live and at most 1 finished", j.Target.Key, live, finished)
		}
		runsFromItsSavepoint(t, ctx, flinkAPI, j)
	}
	// The old job IDs are no instance any more: a recovered job the window
	// did not stop again would run beside its restarted self.
	for _, id := range jobs.ids {
		for _, o := range overview {
			if o.ID == id && !o.State.IsGloballyTerminal() {
				t.Errorf("job %s (%s) still %s after the window", id, o.Name, o.State)
			}
		}
	}
	logSavepointDirs(t, ctx, acts, testRoot+"/savepoints")
}

// waitForStopInFlight waits until one of the jobs is FINISHED in Flink
// (its stop-with-savepoint done) and, when settled is set, until settled
// holds too, while the window still reports that job's savepoint step
// running (its stop activity is held) and no other job has stopped; it
// returns the job's key.
func waitForStopInFlight(t *testing.T, ctx context.Context, c client.Client, run client.WorkflowRun, api *flink.Client, jobs submitted, settled func() bool) string {
	t.Helper()
	finished := ""
	peertest.WaitFor(t, ctx, 5*time.Minute, "a job stopped with a savepoint", func() (bool, string) {
		overview, err := api.ListJobs(ctx)
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, o := range overview {
			name, ours := jobs.names[o.ID]
			switch {
			case !ours:
			case o.State == flink.JobFinished && finished == "":
				finished = name
			case o.State == flink.JobRunning:
				running++
			}
		}
		if finished != "" && running != failoverJobs-1 {
			t.Fatalf("%s finished but only %d other jobs run: the stops did not go one at a time", finished, running)
		}
		return finished != "", "no job FINISHED yet"
	})
	if settled != nil {
		peertest.WaitFor(t, ctx, 3*time.Minute, finished+" cleaned up from HA", func() (bool, string) {
			return settled(), "its JobGraph is still in HA storage"
		})
	}
	st := queryState(t, ctx, c, run)
	for _, j := range st.Jobs {
		if j.Target.JobName == finished {
			if j.SavepointState != workflows.StepRunning {
				t.Fatalf("the window learned of %s's stop (%s) while its stop activity was held", finished, j.SavepointState)
			}
			return j.Target.Key
		}
	}
	t.Fatalf("window has no job named %s", finished)
	return ""
}

// haJobGraphsBelow reports, when called, whether the cluster's HA storage
// holds fewer than n JobGraphs: Flink removes a finished job's JobGraph
// from HA once it has recorded the job's end, and a JobManager taking over
// then no longer recovers it.
func haJobGraphsBelow(t *testing.T, peers *sandbox.Peers, fc *sandbox.FailoverCluster, n int) func() bool {
	t.Helper()
	hc, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{peers.HDFS.NameNode}, User: peers.HDFS.User})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hc.Close() })
	dir := strings.TrimPrefix(fc.HAStorageDir, peers.HDFS.URI) + "/" + fc.ClusterID
	return func() bool {
		entries, err := hc.ReadDir(dir)
		if err != nil {
			t.Fatalf("HA storage %s: %v", dir, err)
		}
		graphs := 0
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "submittedJobGraph") {
				graphs++
			}
		}
		return graphs < n
	}
}

// submitted are the sample jobs the test started.
type submitted struct {
	specs []inventory.JobSpec
	ids   []string
	names map[string]string // job ID -> job name
}

// startJobs submits n sample jobs named prefix-1..n to cluster c, each with
// its checkpoints under testRoot (which must exist), and waits until each
// has checkpointed.
func startJobs(t *testing.T, ctx context.Context, peers *sandbox.Peers, c sandbox.FlinkCluster, prefix string, n int, testRoot string) submitted {
	t.Helper()
	api := peertest.FlinkClient(t, c.RESTURL)
	jarID, err := api.UploadJar(ctx, peers.SampleJar(c))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = api.DeleteJar(context.Background(), jarID) }()
	s := submitted{names: map[string]string{}}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		args := []string{"--job-name", name, "--keys", "2000", "--value-bytes", "256", "--rate", "500", "--checkpoint-dir", testRoot + "/checkpoints"}
		s.specs = append(s.specs, inventory.JobSpec{Name: name, Restart: inventory.RestartRecipe{
			Kind: inventory.RestartRESTJarRun, Jar: peers.SampleJar(c), EntryClass: peers.SampleJob.EntryClass, ProgramArgs: args}})
		res, err := api.RunJar(ctx, jarID, flink.RunJarRequest{EntryClass: peers.SampleJob.EntryClass, ProgramArgs: args})
		if err != nil {
			t.Fatal(err)
		}
		s.ids = append(s.ids, res.JobID)
		s.names[res.JobID] = name
	}
	for _, id := range s.ids {
		peertest.WaitForCheckpoint(t, ctx, api, id)
	}
	return s
}

func readManifest(t *testing.T, ctx context.Context, acts *app.Ports, path string) workflows.Manifest {
	t.Helper()
	fs, p, err := acts.Storage.Resolve(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := fs.ReadFile(ctx, p, 1<<20)
	if err != nil {
		t.Fatalf("manifest %s: %v", path, err)
	}
	var m workflows.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("manifest %s: %v", path, err)
	}
	return m
}

func exists(t *testing.T, ctx context.Context, acts *app.Ports, path string) bool {
	t.Helper()
	fs, p, err := acts.Storage.Resolve(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fs.Stat(ctx, p)
	return err == nil
}

// logSavepointDirs lists the savepoint directories the window's stops left:
// a stop the crash interrupted may leave one the manifest does not name.
func logSavepointDirs(t *testing.T, ctx context.Context, acts *app.Ports, root string) {
	t.Helper()
	fs, p, err := acts.Storage.Resolve(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	if err := fs.Walk(ctx, p, func(fi storage.FileInfo) error {
		if fi.IsDir && strings.HasPrefix(fi.Name, "savepoint-") {
			dirs = append(dirs, fi.Path)
			return storage.SkipDir
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("savepoint dirs under %s: %v", root, dirs)
}

func queryState(t *testing.T, ctx context.Context, c client.Client, run client.WorkflowRun) workflows.WindowState {
	t.Helper()
	v, err := c.QueryWorkflow(ctx, run.GetID(), "", workflows.QueryStatus)
	if err != nil {
		t.Fatalf("query %s: %v", run.GetID(), err)
	}
	var st workflows.WindowState
	if err := v.Get(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// waitForState polls the window's status until done holds; a window that
// ends first, or waits for an operator decision, fails the test.
func waitForState(t *testing.T, ctx context.Context, c client.Client, run client.WorkflowRun, done func(workflows.WindowState) bool) workflows.WindowState {
	t.Helper()
	var st workflows.WindowState
	for ctx.Err() == nil {
		v, err := c.QueryWorkflow(ctx, run.GetID(), "", workflows.QueryStatus)
		if err == nil && v.Get(&st) == nil {
			if done(st) {
				return st
			}
			if st.Pending != nil {
				t.Fatalf("window waits for a decision (%s): %s", st.Pending.Kind, st.Pending.Reason)
			}
			if st.Phase == workflows.WindowPhaseCompleted || st.Phase == workflows.WindowPhaseAborted {
				t.Fatalf("window ended (%s) before the expected state", st.Phase)
			}
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("window never reached the expected state; last: phase %s pending %+v", st.Phase, st.Pending)
	return st
}

// runsFromItsSavepoint checks that the window's new job for j is RUNNING
// and that Flink says it was restored from the savepoint the window
// recorded for it.
func runsFromItsSavepoint(t *testing.T, ctx context.Context, api *flink.Client, j workflows.JobProgress) {
	t.Helper()
	d, err := api.JobDetails(ctx, j.NewJobID)
	if err != nil || d.State != flink.JobRunning {
		t.Errorf("%s: new job %s is %s (%v)", j.Target.Key, j.NewJobID, d.State, err)
	}
	stats, err := api.Checkpoints(ctx, j.NewJobID)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Latest.Restored == nil || strings.TrimRight(stats.Latest.Restored.ExternalPath, "/") != strings.TrimRight(j.SavepointPath, "/") {
		t.Errorf("%s: Flink says restored from %+v, the window recorded %s", j.Target.Key, stats.Latest.Restored, j.SavepointPath)
	}
}
