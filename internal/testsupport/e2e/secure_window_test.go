//go:build realpeers

package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/faulthook"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// secureWindowJobs is how many jobs the window on the kerberized HDFS
// stops, one savepoint at a time, so that there are stops in flight to
// fail the NameNodes over under: one each.
const secureWindowJobs = 3

// TestMaintenanceWindowOnKerberizedHAHDFSAcrossNameNodeFailovers runs a
// maintenance window over a Flink cluster whose checkpoints, savepoints and
// HA data live on the kerberized nameservice ns1, the worker logged in from
// its keytab. While the window stops the jobs with savepoints, the NameNodes
// fail over under each stop (the active one is made standby, the other
// active): a fault hook holds each stop activity once Flink reports its
// savepoint in progress, until the failover is done. Flink writes the savepoints and the worker verifies them and writes the
// manifest across the failovers. The window holds at its network gate
// until both have outlived their first Kerberos tickets, so the restart and
// the new jobs' checkpoints run on renewed logins. The window completes;
// the manifest on ns1 names each job once with a savepoint that exists, and
// each job runs again, restored from it, and checkpoints.
func TestMaintenanceWindowOnKerberizedHAHDFSAcrossNameNodeFailovers(t *testing.T) {
	peers := sandbox.RequirePeers(t)
	// The failover lock first, then the cluster's (the order every test keeps).
	sandbox.RequireSecureStorage(t).HoldFailovers(t)
	s, fc := sandbox.StartSecureFlinkCluster(t)
	loggedIn := time.Now() // the cluster's login; the worker's comes later
	lifetime := time.Duration(s.TicketLifetimeSeconds) * time.Second
	if lifetime <= 0 || lifetime > 5*time.Minute {
		t.Fatalf("ticket lifetime %v: the secure sandbox must run with short tickets (FLINKMAINT_SECURE_TICKET_LIFETIME)", lifetime)
	}
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if _, err := s.RestartStopped(ctx); err != nil {
		t.Fatal(err)
	}
	flinkAPI := peertest.FlinkClient(t, fc.RESTURL)

	suffix := peertest.RandomHex(4)
	testRoot := fmt.Sprintf("%s/user/app/%s/window-%s", s.URI, fc.Tenant, suffix)
	// The Flink user owns what its jobs write, as in production; the worker
	// (in the HDFS superuser group) reads and writes beside it.
	if _, err := s.HadoopShell(ctx, s.Principals.Flink, "-mkdir", "-p", testRoot+"/checkpoints", testRoot+"/savepoints"); err != nil {
		t.Fatal(err)
	}
	prefix := "sec-" + suffix
	jobs := startJobs(t, ctx, peers, fc.FlinkCluster, prefix, secureWindowJobs, testRoot)
	tenant := "secure-" + suffix
	static := inventory.Static{
		Tenants: []inventory.Tenant{{Name: tenant, Root: testRoot}},
		Clusters: []inventory.Cluster{{Tenant: tenant, ClusterID: fc.ClusterID, Mode: inventory.ModeSession,
			RESTURL: fc.RESTURL, CheckpointDir: testRoot + "/checkpoints", SavepointDir: testRoot + "/savepoints",
			HAStorageDir: fc.HAStorageDir, Jobs: jobs.specs}},
	}

	cfg := config.Default()
	cfg.Storage.HadoopConfDir = s.HadoopConfDir
	cfg.Storage.Kerberos = &config.Kerberos{Krb5Conf: s.Krb5Conf, Principal: s.Principals.Worker.Principal, Keytab: s.Principals.Worker.Keytab}
	cfg.Storage.WritableRoots = []string{testRoot}
	cfg.Inventory.StaticFile = peertest.WriteInventory(t, static)
	cfg.Cleanup.TrashRoot, cfg.Cleanup.PlanDir = testRoot+"/trash", testRoot+"/plans"
	if err := cfg.Validate(); err != nil {
		t.Fatalf("worker config: %v", err)
	}
	acts := peertest.NewPorts(t, cfg, "secure-window-e2e")
	hooks := faulthook.New(t)
	for i := 1; i <= secureWindowJobs; i++ {
		hooks.Arm(faulthook.Hold{Name: fmt.Sprintf("stop-%d", i), Activity: "StopWithSavepoint", At: faulthook.Heartbeat,
			Detail: "savepoint in progress", PerExecution: true, Hit: i})
	}
	const queue = "secure-window-e2e"
	w := worker.New(tmp.Client, queue, worker.Options{Interceptors: []interceptor.WorkerInterceptor{faulthook.Interceptor(hooks.Dir())}})
	app.Register(w, acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	in := workflows.WindowInput{
		WindowID: "secure-" + suffix, Reason: "window on kerberized HA HDFS",
		Scope: core.Scope{IncludeJobs: []string{prefix + "-*"}},
		Policy: workflows.WindowPolicy{
			ManifestDir: testRoot + "/windows",
			Savepoint:   workflows.SavepointPolicy{Concurrency: 1},
			Restart: workflows.RestartPolicy{CanarySize: 1, Concurrency: secureWindowJobs, Soak: workflows.Duration(3 * time.Second),
				RunningTimeout: workflows.Duration(3 * time.Minute), CheckpointTimeout: workflows.Duration(2 * time.Minute)},
			Cleanup: workflows.CleanupPolicy{Mode: workflows.CleanupModeSkip},
		},
	}
	before, err := s.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	run, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.WindowWorkflowID(in.WindowID), TaskQueue: queue},
		workflows.MaintenanceWindowWorkflowType, in)
	if err != nil {
		t.Fatal(err)
	}

	// One failover under each job's stop, while it is in flight: held.
	var failovers []string
	for i := 1; i <= secureWindowJobs; i++ {
		name := fmt.Sprintf("stop-%d", i)
		held := hooks.WaitHeld(ctx, name, peertest.WorkflowEnded(ctx, tmp.Client, run.GetID()))
		key := runningSavepoint(queryState(t, ctx, tmp.Client, run), nil)
		hs, err := s.Failover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := hs.Active()
		failovers = append(failovers, fmt.Sprintf("under %s's stop (%s): %s active", key, held.WorkflowID, a.ID))
		hooks.Release(name)
	}
	t.Logf("NameNode failovers during savepoint-all: %s", strings.Join(failovers, "; "))

	st := waitForState(t, ctx, tmp.Client, run, func(st workflows.WindowState) bool { return st.Phase == workflows.WindowPhaseNetworkGate })
	for _, j := range st.Jobs {
		if j.SavepointState != workflows.StepDone || !strings.HasPrefix(j.SavepointPath, testRoot+"/savepoints/") {
			t.Fatalf("job %s reached the network gate with savepoint %s %q (%s)", j.Target.Key, j.SavepointState, j.SavepointPath, j.SavepointError)
		}
	}
	// Past the first tickets of Flink's and the worker's logins (the worker
	// logged in after the cluster), with a margin for the KDC's clock.
	expired := loggedIn.Add(lifetime + 15*time.Second)
	t.Logf("holding at the network gate until %v, when the first Kerberos tickets (%v) have expired", expired.Format(time.TimeOnly), lifetime)
	for time.Now().Before(expired) && ctx.Err() == nil {
		time.Sleep(time.Second)
	}
	peertest.Update(t, ctx, tmp.Client, run, workflows.UpdateConfirmNetworkChange, workflows.ConfirmNetworkChangeRequest{By: "e2e", Reason: "done"})
	var rep workflows.WindowReport
	if err := run.Get(ctx, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Phase != workflows.WindowPhaseCompleted || len(rep.Jobs) != secureWindowJobs {
		t.Fatalf("window ended in %s with %d jobs, want %s with %d", rep.Phase, len(rep.Jobs), workflows.WindowPhaseCompleted, secureWindowJobs)
	}
	if !strings.HasPrefix(rep.Manifest, testRoot+"/windows/") {
		t.Fatalf("manifest %q is not on ns1 under %s/windows", rep.Manifest, testRoot)
	}
	after, err := s.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Failovers < before.Failovers+secureWindowJobs {
		t.Fatalf("the HDFS counts %d failovers, %d before the window: the failovers did not happen", after.Failovers, before.Failovers)
	}

	manifest := readManifest(t, ctx, acts, rep.Manifest)
	for _, j := range rep.Jobs {
		newID := j.NewJobID
		t.Cleanup(func() { _ = flinkAPI.CancelJob(context.Background(), newID) })
		if j.SavepointAttempts != 1 || j.RestartState != workflows.StepDone {
			t.Errorf("%s: savepoint attempts %d, restart %s %s", j.Target.Key, j.SavepointAttempts, j.RestartState, j.RestartError)
		}
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
		runsFromItsSavepoint(t, ctx, flinkAPI, j)
		// Checkpoints on ns1 after the tickets' expiry: Flink renewed its login.
		peertest.WaitForCheckpoint(t, ctx, flinkAPI, j.NewJobID)
	}
	if len(manifest.Jobs) != secureWindowJobs {
		t.Errorf("manifest has %d job entries, want %d", len(manifest.Jobs), secureWindowJobs)
	}
	// The stopped instances are gone for good: none was stopped twice or
	// left running beside its restarted self.
	overview, err := flinkAPI.ListJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range jobs.ids {
		for _, o := range overview {
			if o.ID == id && o.State != flink.JobFinished {
				t.Errorf("stopped job %s (%s) is %s, want FINISHED", id, o.Name, o.State)
			}
		}
	}
}

// runningSavepoint returns the key of a job whose savepoint step the window
// reports running and that is not in skip, or "".
func runningSavepoint(st workflows.WindowState, skip map[string]bool) string {
	for _, j := range st.Jobs {
		if j.SavepointState == workflows.StepRunning && !skip[j.Target.Key] {
			return j.Target.Key
		}
	}
	return ""
}
