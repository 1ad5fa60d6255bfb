//go:build realpeers

package app_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/storage"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/faulthook"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/workerproc"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// TestMaintenanceWindowSurvivesWorkerKills runs a window through the real
// worker binary and kills it with SIGKILL once during savepoint-all and
// once during the staged restart, each time where a fault hook holds it:
// the second job's stop in flight (Flink reports its savepoint in
// progress), and the second job's restart submitted to Flink without the
// window knowing. The window still completes; every job is
// stopped exactly once (one savepoint each), and every job ends RUNNING
// once, restored from its recorded savepoint: none stopped twice, none
// left down, none started twice.
func TestMaintenanceWindowSurvivesWorkerKills(t *testing.T) {
	t.Parallel()
	peers := sandbox.RequirePeers(t)
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	suffix := peertest.RandomHex(4)
	testRoot := peers.HDFS.URI + "/flinkmaint-test/window-crash-" + suffix
	fl := startFleet(t, ctx, peers, suffix, testRoot, 2, false)

	dir := t.TempDir()
	bin := workerproc.Build(t)
	cfg := peertest.WorkerConfig(tmp.HostPort, "window-crash")
	cfg.Storage.HDFSUser = peers.HDFS.User
	cfg.Storage.WritableRoots = []string{testRoot}
	cfg.Inventory.StaticFile = peertest.WriteInventory(t, fl.static)
	cfgPath := peertest.WriteWorkerConfig(t, cfg)
	hooks := faulthook.New(t)
	w := workerproc.New(t, bin, cfgPath, filepath.Join(dir, "worker.log")).WithHooks(hooks)
	w.Start()
	hooks.Arm(faulthook.Hold{Name: "stop", Activity: "StopWithSavepoint", At: faulthook.Heartbeat, Detail: "savepoint in progress",
		PerExecution: true, Hit: 2})
	hooks.Arm(faulthook.Hold{Name: "restart", Activity: "RestartJob", At: faulthook.Done, Hit: 2})

	in := workflows.WindowInput{
		WindowID: "crash-" + suffix, Reason: "crash-safety test",
		Scope: core.Scope{IncludeJobs: []string{"win-" + suffix + "-*"}},
		Policy: workflows.WindowPolicy{
			ManifestDir: testRoot + "/windows",
			// One savepoint at a time, so a kill lands mid-phase.
			Savepoint: workflows.SavepointPolicy{Concurrency: 1},
			Network:   workflows.NetworkPolicy{Skip: true},
			Cleanup:   workflows.CleanupPolicy{Mode: workflows.CleanupModeSkip},
			Restart: workflows.RestartPolicy{CanarySize: 1, Concurrency: 1, Soak: workflows.Duration(5 * time.Second),
				RunningTimeout: workflows.Duration(3 * time.Minute), CheckpointTimeout: workflows.Duration(2 * time.Minute)},
		},
	}
	run, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.WindowWorkflowID(in.WindowID), TaskQueue: "window-crash"},
		workflows.MaintenanceWindowWorkflowType, in)
	if err != nil {
		t.Fatal(err)
	}

	// Kill during savepoint-all: one savepoint done, another in flight.
	killHeld := func(name string, step func(workflows.JobProgress) string) {
		t.Helper()
		held := hooks.WaitHeld(ctx, name, peertest.WorkflowEnded(ctx, tmp.Client, run.GetID()))
		st := peertest.WaitForWindow(t, ctx, tmp.Client, run, func(workflows.WindowState) bool { return true })
		if !oneDoneOneRunning(step)(st) {
			t.Fatalf("held %s of %s, but the window does not show one job done and one in flight: %+v", held.Activity, held.WorkflowID, st.Jobs)
		}
		w.Kill()
		t.Logf("killed the worker while it held %s of %s at its %s", held.Activity, held.WorkflowID, held.At)
		w.Start()
	}
	killHeld("stop", func(j workflows.JobProgress) string { return j.SavepointState })
	// Kill during the staged restart: the canary healthy, the next job
	// started in Flink and the window not told.
	killHeld("restart", func(j workflows.JobProgress) string { return j.RestartState })

	var rep workflows.WindowReport
	if err := run.Get(ctx, &rep); err != nil {
		t.Fatalf("window: %v\nworker log:\n%s", err, w.Tail())
	}
	if rep.Phase != workflows.WindowPhaseCompleted {
		t.Fatalf("window ended in %s", rep.Phase)
	}
	if w.Starts() != 3 {
		t.Fatalf("worker started %d times, want 3 (two kills)", w.Starts())
	}

	// Exactly one savepoint per job on HDFS: nobody was stopped twice.
	resolver := &storage.Resolver{HDFS: storage.HDFSOptions{User: peers.HDFS.User}}
	t.Cleanup(func() { _ = resolver.Close() })
	var savepoints []string
	for _, c := range peers.Clusters {
		fs, root, err := resolver.Resolve(ctx, testRoot+"/"+c.ClusterID+"/savepoints")
		if err != nil {
			t.Fatal(err)
		}
		if err := fs.Walk(ctx, root, func(fi storage.FileInfo) error {
			if fi.IsDir && strings.HasPrefix(fi.Name, "savepoint-") {
				savepoints = append(savepoints, fi.Path)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if len(savepoints) != len(fl.jobs) {
		t.Errorf("%d savepoint dirs for %d jobs: %v", len(savepoints), len(fl.jobs), savepoints)
	}

	// Every job RUNNING exactly once, restored from its recorded savepoint.
	for _, j := range rep.Jobs {
		fc := peertest.FlinkClient(t, j.Target.RESTURL)
		newID := j.NewJobID
		t.Cleanup(func() { _ = fc.CancelJob(context.Background(), newID) })
		if j.SavepointAttempts != 1 || j.RestartAttempts != 1 || j.RestartState != workflows.StepDone {
			t.Errorf("%s: savepoint attempts %d, restart attempts %d, restart %s %s", j.Target.Key, j.SavepointAttempts, j.RestartAttempts, j.RestartState, j.RestartError)
		}
		jobs, err := fc.ListJobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		running := 0
		for _, o := range jobs {
			if o.Name == j.Target.JobName && !o.State.IsGloballyTerminal() {
				running++
				if o.ID != j.NewJobID {
					t.Errorf("%s: live job %s is not the window's %s", j.Target.Key, o.ID, j.NewJobID)
				}
			}
		}
		if running != 1 {
			t.Errorf("%s: %d live instances, want exactly 1", j.Target.Key, running)
		}
		stats, err := fc.Checkpoints(ctx, j.NewJobID)
		if err != nil {
			t.Fatal(err)
		}
		if stats.Latest.Restored == nil || strings.TrimRight(stats.Latest.Restored.ExternalPath, "/") != strings.TrimRight(j.SavepointPath, "/") {
			t.Errorf("%s: restored from %+v, recorded savepoint %s", j.Target.Key, stats.Latest.Restored, j.SavepointPath)
		}
		d, err := fc.JobDetails(ctx, j.NewJobID)
		if err != nil || d.State != flink.JobRunning {
			t.Errorf("%s: job %s is %s (%v)", j.Target.Key, j.NewJobID, d.State, err)
		}
	}
}

// oneDoneOneRunning is a window state in which, by step, one job is done
// and another in flight: a kill then lands mid-phase.
func oneDoneOneRunning(step func(workflows.JobProgress) string) func(workflows.WindowState) bool {
	return func(st workflows.WindowState) bool {
		done, running := 0, 0
		for _, j := range st.Jobs {
			switch step(j) {
			case workflows.StepDone:
				done++
			case workflows.StepRunning:
				running++
			}
		}
		return done >= 1 && running >= 1
	}
}
