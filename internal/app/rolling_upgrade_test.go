//go:build realpeers

package app_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/workerproc"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// previousRelease reads the commit of the previous release from
// deploy/previous-release.
func previousRelease(t *testing.T) string {
	t.Helper()
	root, err := sandbox.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "deploy", "previous-release"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			return line
		}
	}
	t.Fatal("deploy/previous-release names no commit")
	return ""
}

// TestRollingUpgradeFinishesRunsOfThePreviousRelease rolls the worker from
// the previous release (deploy/previous-release, built from a git
// worktree) to this checkout's while runs of every long-lived kind are in
// flight, as a rolling update of the Deployment does: the old worker gets
// SIGTERM, the new one starts. On the old worker a governance run and a
// scheduled-savepoint run complete; a job upgrade holds after its commit,
// a window waits at its network gate (on Flink 2.3), a governance run
// waits for approval and a restore drill is under way. On the new worker
// every run completes: the window restarts each job once from the one
// savepoint it took, the approved plan trashes exactly its garbage, the
// upgrade ends committed, the drill passes. No workflow task of any run,
// children included, fails for nondeterminism, and the runs that ended on
// the old worker replay on the new one (a query answers).
func TestRollingUpgradeFinishesRunsOfThePreviousRelease(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	release := previousRelease(t)
	oldBin := workerproc.BuildRelease(t, release)
	newBin := workerproc.Build(t)
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	sfx := peertest.RandomHex(4)
	upgraded, drilled := "roll-up-"+sfx, "roll-drill-"+sfx

	// Tenant a on cluster a: the job to upgrade and the job to drill, the
	// governance runs; the window's tenant on the Flink 2.3 cluster (its
	// own lock); drills on cluster b.
	mixed := sandbox.RequireMixedFleet(t)
	line2 := *mixed
	line2.Clusters = nil
	for _, c := range mixed.Clusters {
		if c.Line() == sandbox.Line2 {
			line2.Clusters = append(line2.Clusters, c)
			break
		}
	}
	if len(line2.Clusters) != 1 {
		t.Fatalf("no Flink 2.x cluster in the sandbox: %+v", mixed.Clusters)
	}
	var fl fleet
	d := &drillEnv{}
	d.failClosedEnv = newFailClosedEnvWith(t, ctx, func(e *failClosedEnv, static *inventory.Static, cfg *config.Config) {
		d.drill = e.peers.Clusters[1]
		static.Clusters, static.Tenants = static.Clusters[:1], static.Tenants[:1]
		for name, drill := range map[string]*inventory.DrillRecipe{upgraded: nil, drilled: sampleDrill(drilled)} {
			static.Clusters[0].Jobs = append(static.Clusters[0].Jobs, inventory.JobSpec{Name: name,
				Restart: inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun, Jar: e.peers.SampleJob.Jar, EntryClass: e.peers.SampleJob.EntryClass,
					ProgramArgs: []string{"--checkpoint-dir", e.root + "/a/checkpoints", "--job-name", name, "--keys", "2000", "--value-bytes", "256", "--rate", "200"}},
				Drill: drill})
		}
		fl = startFleet(t, ctx, &line2, sfx, e.root+"/win", 2, false)
		static.Tenants = append(static.Tenants, fl.static.Tenants...)
		static.Clusters = append(static.Clusters, fl.static.Clusters...)
		d.drillRoot = e.root + "/drills"
		d.static = static
		cfg.Drill = config.Drill{ClusterRESTURL: d.drill.RESTURL, Root: d.drillRoot}
	})
	if _, err := d.peers.HadoopShell(ctx, "-mkdir", "-p", d.plain+"/drills", d.plain+"/upgrades"); err != nil {
		t.Fatal(err)
	}
	ca := d.peers.Clusters[0]
	ckpts := d.root + "/a/checkpoints"
	fc := peertest.FlinkClient(t, ca.RESTURL)
	_, upID := d.start(ctx, ca, upgraded, ckpts, "", "", nil)
	_, drillID := d.start(ctx, ca, drilled, ckpts, "", "", map[string]string{"execution.checkpointing.interval": "10s"})
	d.checkpointed(ctx, fc, upID, 1)
	d.checkpointed(ctx, fc, drillID, 1)

	queue := "rolling-" + sfx
	oldWorker := d.workerProcessOf(tmp, queue, oldBin)
	oldWorker.AwaitPolling(ctx, tmp.Client, queue)
	start := func(id, typ string, in any) client.WorkflowRun {
		t.Helper()
		run, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, typ, in)
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	tenantA := []string{d.tenant[0]}

	// Ended on the old worker: a governance run that executes its plan,
	// and a scheduled-savepoint run.
	before := d.retiredJobDirs(ctx, 2)
	var govBeforeRep workflows.GovernanceReport
	var govBefore client.WorkflowRun
	// The previous release's planner stops at a job whose checkpoint
	// configuration answers "Checkpointing is not enabled", as a job still
	// initializing does: another test's job on the shared clusters can be
	// one for a moment. Its run then deleted nothing and is run again.
	for attempt := 1; ; attempt++ {
		id := fmt.Sprintf("roll-before-%s-%d", sfx, attempt)
		govBefore = start(workflows.GovernanceWorkflowID(id), workflows.GovernanceWorkflowType,
			workflows.GovernanceInput{RunID: id, Reason: "rolling upgrade test", Mode: workflows.ModeAuto, Scope: core.Scope{Tenants: tenantA}})
		err := govBefore.Get(ctx, &govBeforeRep)
		if err != nil && attempt < 3 && strings.Contains(err.Error(), "FlinkCheckpointingDisabled") && !strings.Contains(err.Error(), upID) && !strings.Contains(err.Error(), drillID) {
			t.Logf("governance run %s on the previous release stopped at another test's job: %v", id, err)
			continue
		}
		if err != nil || govBeforeRep.Execution == nil || govBeforeRep.Execution.Items != int64(len(before)) {
			t.Fatalf("governance run on the previous release: %v %+v; want its %d retired job dirs trashed\n%s", err, govBeforeRep.Execution, len(before), oldWorker.Tail())
		}
		break
	}
	sched := start("roll-sched-"+sfx, workflows.ScheduledSavepointsWorkflowType,
		workflows.ScheduledSavepointsInput{Schedule: "roll-" + sfx, Scope: core.Scope{Tenants: tenantA, IncludeJobs: []string{drilled}}})
	var schedRep workflows.ScheduledSavepointsReport
	if err := sched.Get(ctx, &schedRep); err != nil || schedRep.Taken != 1 {
		t.Fatalf("scheduled savepoints on the previous release: %v %+v", err, schedRep)
	}

	// In flight across the update.
	health := workflows.RestartPolicy{Soak: workflows.Duration(3 * time.Second), RunningTimeout: workflows.Duration(2 * time.Minute), CheckpointTimeout: workflows.Duration(2 * time.Minute)}
	upgrade := start(workflows.JobUpgradeWorkflowID(upgraded), workflows.JobUpgradeWorkflowType, workflows.UpgradeInput{UpgradeID: upgraded,
		Reason: "rolling upgrade test", Job: ca.ClusterID + "/" + upgraded, ManifestDir: d.root + "/upgrades",
		Recipe: workflows.UpgradeRecipe{ProgramArgs: []string{"--checkpoint-dir", ckpts, "--job-name", upgraded, "--keys", "2000", "--value-bytes", "300", "--rate", "200"}},
		Health: health, HoldAfterCommit: workflows.Duration(2 * time.Minute)})
	window := start(workflows.WindowWorkflowID("roll-"+sfx), workflows.MaintenanceWindowWorkflowType, workflows.WindowInput{
		WindowID: "roll-" + sfx, Reason: "rolling upgrade test",
		Scope: core.Scope{Tenants: []string{fl.static.Tenants[0].Name}, IncludeJobs: []string{"win-" + sfx + "-*"}},
		Policy: workflows.WindowPolicy{
			ManifestDir: d.root + "/win/windows",
			Savepoint:   workflows.SavepointPolicy{Concurrency: 2},
			Restart: workflows.RestartPolicy{CanarySize: 1, Concurrency: 2, Soak: workflows.Duration(3 * time.Second),
				RunningTimeout: workflows.Duration(2 * time.Minute), CheckpointTimeout: workflows.Duration(90 * time.Second)},
			Cleanup: workflows.CleanupPolicy{Mode: workflows.ModePlan},
		}})
	after := d.retiredJobDirs(ctx, 3)
	govAfter := start(workflows.GovernanceWorkflowID("roll-after-"+sfx), workflows.GovernanceWorkflowType,
		workflows.GovernanceInput{RunID: "roll-after-" + sfx, Reason: "rolling upgrade test", Mode: workflows.ModePlanAndApprove,
			Scope: core.Scope{Tenants: tenantA}, ApprovalTimeout: workflows.Duration(15 * time.Minute)})
	atGate := peertest.WaitForWindow(t, ctx, tmp.Client, window, func(st workflows.WindowState) bool { return st.Phase == workflows.WindowPhaseNetworkGate })
	awaiting := waitGovernance(t, ctx, tmp.Client, govAfter.GetID(), func(st workflows.GovernanceState) bool {
		return st.Phase == workflows.GovernancePhaseAwaitingApproval
	})
	d.waitFor(ctx, 5*time.Minute, "the upgrade holds after its commit", func() (bool, string) {
		st, err := queryUpgrade(ctx, tmp.Client, upgrade.GetID())
		if err != nil {
			return false, err.Error()
		}
		return st.Phase == workflows.UpgradePhaseHold, fmt.Sprintf("phase %s, waiting for %q, pending %+v, notes %v", st.Phase, st.WaitingFor, st.Pending, st.Notes)
	})
	drill := start(workflows.RestoreDrillWorkflowID("roll-"+sfx), workflows.RestoreDrillWorkflowType,
		workflows.RestoreDrillInput{Scope: core.Scope{IncludeJobs: []string{drilled}}, Soak: workflows.Duration(20 * time.Second)})
	d.waitFor(ctx, 3*time.Minute, "the drill restoring on the drill cluster", func() (bool, string) {
		jobs, err := peertest.FlinkClient(t, d.drill.RESTURL).ListJobs(ctx)
		if err != nil {
			return false, err.Error()
		}
		for _, j := range jobs {
			if j.Name == "drill-"+drilled && j.State == flink.JobRunning {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d jobs on the drill cluster, none of %s running", len(jobs), drilled)
	})

	// The rolling update: SIGTERM to the old worker, then the new one.
	if st, err := queryUpgrade(ctx, tmp.Client, upgrade.GetID()); err != nil || st.Phase != workflows.UpgradePhaseHold {
		t.Fatalf("the upgrade is %s (%v) at the update; want it holding (make HoldAfterCommit longer)", st.Phase, err)
	}
	oldWorker.Stop()
	t.Logf("previous release %s stopped; worker of this checkout starting", release[:12])
	newWorker := d.workerProcessOf(tmp, queue, newBin)
	newWorker.AwaitPolling(ctx, tmp.Client, queue)

	peertest.Update(t, ctx, tmp.Client, window, workflows.UpdateConfirmNetworkChange, workflows.ConfirmNetworkChangeRequest{By: "rolling", Reason: "done"})
	plan := awaiting.Plan
	if int(plan.Items) != len(after) {
		t.Fatalf("the plan awaiting approval has %d items; want the %d retired job dirs %v", plan.Items, len(after), after)
	}
	// The upgrade holds tenant a's lock until its hold ends: an approval
	// given meanwhile waits for the lock, and the plan made again after
	// it needs an approval of its own.
	for sha, round := plan.PlanSHA256, 0; ; round++ {
		peertest.Update(t, ctx, tmp.Client, govAfter, workflows.UpdateApprove, workflows.ApproveRequest{By: "rolling", Reason: "garbage only", PlanSHA256: sha})
		var st workflows.GovernanceState
		d.waitFor(ctx, 5*time.Minute, "the approved governance run executes", func() (bool, string) {
			v, err := tmp.Client.QueryWorkflow(ctx, govAfter.GetID(), "", workflows.QueryStatus)
			if err == nil {
				err = v.Get(&st)
			}
			if err != nil {
				return false, err.Error()
			}
			switch st.Phase {
			case workflows.GovernancePhaseAwaitingApproval:
				return st.Plan != nil && st.Plan.PlanSHA256 != sha, "awaiting approval of the plan approved"
			case workflows.GovernancePhaseWaitingForLock, workflows.GovernancePhasePlanning:
				return false, fmt.Sprintf("phase %s, notes %v", st.Phase, st.Notes)
			}
			return true, ""
		})
		if st.Phase != workflows.GovernancePhaseAwaitingApproval {
			break
		}
		if round > 0 || int(st.Plan.Items) != len(after) {
			t.Fatalf("governance run planned again (round %d): %d items, notes %v; want one new plan of the %d retired job dirs", round+1, st.Plan.Items, st.Notes, len(after))
		}
		sha = st.Plan.PlanSHA256
	}

	d.waitFor(ctx, 8*time.Minute, "the window completes on this checkout's worker", func() (bool, string) {
		v, err := tmp.Client.QueryWorkflow(ctx, window.GetID(), "", workflows.QueryStatus)
		var st workflows.WindowState
		if err == nil {
			err = v.Get(&st)
		}
		if err != nil {
			return false, err.Error()
		}
		return st.Phase == workflows.WindowPhaseCompleted || st.Phase == workflows.WindowPhaseAborted,
			fmt.Sprintf("phase %s, waiting for %q, pending %+v, notes %v\n%s", st.Phase, st.WaitingFor, st.Pending, st.Notes, newWorker.Tail())
	})
	var winRep workflows.WindowReport
	if err := window.Get(ctx, &winRep); err != nil || winRep.Phase != workflows.WindowPhaseCompleted {
		t.Fatalf("window: %v, phase %s\n%s", err, winRep.Phase, newWorker.Tail())
	}
	for _, j := range winRep.Jobs {
		jfc := peertest.FlinkClient(t, j.Target.RESTURL)
		newID := j.NewJobID
		t.Cleanup(func() { _ = jfc.CancelJob(context.Background(), newID) })
		var wasAtGate string
		for _, g := range atGate.Jobs {
			if g.Target.Key == j.Target.Key {
				wasAtGate = g.SavepointPath
			}
		}
		if j.RestartState != workflows.StepDone || j.SavepointPath == "" || j.SavepointPath != wasAtGate {
			t.Errorf("%s: restart %s (%s), savepoint %q (at the gate %q); want restarted from the savepoint taken before the update", j.Target.Key, j.RestartState, j.RestartError, j.SavepointPath, wasAtGate)
			continue
		}
		stats, err := jfc.Checkpoints(ctx, j.NewJobID)
		if err != nil || stats.Latest.Restored == nil || strings.TrimRight(stats.Latest.Restored.ExternalPath, "/") != strings.TrimRight(j.SavepointPath, "/") {
			t.Errorf("%s: new job %s restored from %+v (%v); want %s", j.Target.Key, j.NewJobID, stats.Latest.Restored, err, j.SavepointPath)
		}
		jobs, err := jfc.ListJobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var running, stopped int
		for _, fj := range jobs {
			if fj.Name != strings.TrimPrefix(j.Target.Key, j.Target.ClusterID+"/") {
				continue
			}
			switch fj.State {
			case flink.JobRunning:
				running++
			case flink.JobFinished:
				stopped++
			}
		}
		if running != 1 || stopped != 1 {
			t.Errorf("%s: %d running and %d stopped with a savepoint on its cluster; want one of each (stopped once, restarted once)", j.Target.Key, running, stopped)
		}
	}

	var govRep workflows.GovernanceReport
	if err := govAfter.Get(ctx, &govRep); err != nil || govRep.Outcome != workflows.GovernancePhaseCompleted || govRep.Execution == nil || govRep.Execution.Items != int64(len(after)) {
		t.Fatalf("governance approved after the update: %v outcome %s execution %+v", err, govRep.Outcome, govRep.Execution)
	}
	for _, dir := range after {
		if d.exists(dir) {
			t.Errorf("%s still in place after the approved execution", dir)
		}
	}
	var upSt workflows.UpgradeState
	if err := upgrade.Get(ctx, &upSt); err != nil || upSt.Phase != workflows.UpgradePhaseCommitted {
		t.Fatalf("upgrade: %v, phase %s", err, upSt.Phase)
	}
	t.Cleanup(func() { _ = fc.CancelJob(context.Background(), upSt.NewJobID) })
	if s, err := fc.JobState(ctx, upSt.NewJobID); err != nil || s != flink.JobRunning {
		t.Errorf("upgraded job %s is %s (%v); want running", upSt.NewJobID, s, err)
	}
	var drillRep workflows.RestoreDrillReport
	if err := drill.Get(ctx, &drillRep); err != nil || drillRep.Passed != 1 {
		t.Fatalf("drill: %v %+v", err, drillRep)
	}
	d.noDrillJobRunning(ctx, drillRep.Jobs[0].Restore.JobID)

	// The runs that ended on the old worker replay on the new one.
	if _, err := tmp.Client.QueryWorkflow(ctx, govBefore.GetID(), "", workflows.QueryStatus); err != nil {
		t.Errorf("query of %s, ended on the previous release: %v", govBefore.GetID(), err)
	}
	if _, err := tmp.Client.QueryWorkflow(ctx, sched.GetID(), "", "__stack_trace"); err != nil {
		t.Errorf("query of %s, ended on the previous release: %v", sched.GetID(), err)
	}
	// Every run, children included: no workflow task failed for
	// nondeterminism, and the window and the approved governance run were
	// carried by both workers.
	for _, id := range allWorkflowIDs(t, ctx, tmp.Client) {
		by := workflowTaskWorkers(t, ctx, tmp.Client, id)
		if id == window.GetID() || id == govAfter.GetID() {
			if len(by) < 2 {
				t.Errorf("%s: workflow tasks completed by %v; want the previous release's worker and this one's", id, by)
			}
		}
	}
	t.Logf("window %s, governance %s, upgrade %s and drill %s finished on this checkout's worker after starting on %s",
		window.GetID(), govAfter.GetID(), upgrade.GetID(), drill.GetID(), release[:12])
}

// retiredJobDirs writes n job dirs of no job, a month old, under tenant a's
// checkpoint root, and returns their URIs.
func (d *drillEnv) retiredJobDirs(ctx context.Context, n int) []string {
	d.t.Helper()
	var dirs []string
	for range n {
		dir := d.plain + "/a/checkpoints/" + peertest.RandomHex(16)
		for _, f := range []string{"/chk-3/state-1", "/shared/s-1", "/taskowned/t-1"} {
			if err := d.raw.MkdirAll(filepath.Dir(dir+f), 0o755); err != nil {
				d.t.Fatal(err)
			}
			if err := sandbox.WriteFile(d.raw, dir+f, []byte("state")); err != nil {
				d.t.Fatal(err)
			}
		}
		d.age(dir, time.Now().Add(-30*24*time.Hour), false)
		dirs = append(dirs, d.peers.HDFS.URI+dir)
	}
	return dirs
}

func queryUpgrade(ctx context.Context, c client.Client, id string) (workflows.UpgradeState, error) {
	var st workflows.UpgradeState
	v, err := c.QueryWorkflow(ctx, id, "", workflows.QueryUpgradeStatus)
	if err == nil {
		err = v.Get(&st)
	}
	return st, err
}

// allWorkflowIDs lists every workflow on the dev server.
func allWorkflowIDs(t *testing.T, ctx context.Context, c client.Client) []string {
	t.Helper()
	var ids []string
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{NextPageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range resp.Executions {
			if id := e.GetExecution().GetWorkflowId(); !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		if token = resp.NextPageToken; len(token) == 0 {
			return ids
		}
	}
}

// workflowTaskWorkers reads the history of workflow id (its latest run):
// it fails the test on a workflow task failed for nondeterminism, and
// returns the identities of the workers that completed its workflow tasks.
func workflowTaskWorkers(t *testing.T, ctx context.Context, c client.Client, id string) []string {
	t.Helper()
	var by []string
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetWorkflowTaskFailedEventAttributes(); a != nil && a.GetCause() == enumspb.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR {
			t.Errorf("%s: workflow task failed for nondeterminism: %s", id, a.GetFailure().GetMessage())
		}
		if a := e.GetWorkflowTaskCompletedEventAttributes(); a != nil && !slices.Contains(by, a.GetIdentity()) {
			by = append(by, a.GetIdentity())
		}
	}
	return by
}
