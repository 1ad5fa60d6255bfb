//go:build realpeers

package app_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/activities/upgrades"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/faulthook"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// TestUpgradeRehearsalOnRealPeers rehearses new versions on real drill
// clusters before anything stops, through the worker binary:
//   - a Flink 1.20 job's fresh savepoint restored with the job's Flink 2.3
//     build on a 2.3 drill cluster gets the verdict Flink gives (compatible:
//     the sample job's state restores into 2.3), though the worker is killed
//     while the copy runs;
//   - a new version whose keyed operator changed its uid fails `upgrade
//     check` naming that operator, and `upgrade start` of it pauses before
//     the job stops, which runs on with the same id after the abort;
//   - a 2.3 job upgraded to a new jar on 2.3 is rehearsed on the 2.3 drill
//     cluster, then upgraded;
//   - a window with policy.rehearse over a compatible and an incompatible
//     job (its 2.3 build renames its keyed operator's uid) pauses before
//     stopping anything, naming the incompatible job and Flink's cause;
//     leaving that job out lets the window complete for the other, while it
//     runs on with its id.
//
// After each, no copy runs on a drill cluster and the drill root is empty;
// verdicts are recorded beside the savepoints.
func TestUpgradeRehearsalOnRealPeers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	c23 := sandbox.RequirePeersLine(t, sandbox.Line2).Clusters[0]
	drill23 := sandbox.RequireDrill2Cluster(t)
	sfx := peertest.RandomHex(4)
	a1, a2, c1 := "rh-a-"+sfx, "rh-a2-"+sfx, "rh-c-"+sfx
	args := func(ckpts, name string, extra ...string) []string {
		return append([]string{"--checkpoint-dir", ckpts, "--job-name", name, "--keys", "2000", "--value-bytes", "256", "--rate", "200"}, extra...)
	}
	d := &drillEnv{}
	d.failClosedEnv = newFailClosedEnvWith(t, ctx, func(e *failClosedEnv, static *inventory.Static, cfg *config.Config) {
		entry := e.peers.SampleJob.EntryClass
		d.drill = e.peers.Clusters[1]
		static.Clusters = static.Clusters[:1]
		onA := sampleDrill(a1)
		onA.FlinkVersions = map[string]inventory.DrillBuild{"2.3": {Jar: c23.SampleJobJar}}
		// a2's build for 2.3 gives its keyed operator another uid.
		renamed := sampleDrill(a2)
		renamed.FlinkVersions = map[string]inventory.DrillBuild{"2.3": {Jar: c23.SampleJobJar, ProgramArgs: append(sampleDrill(a2).ProgramArgs, "--state-uid", "keyed-payload-state-2x")}}
		static.Clusters[0].Jobs = []inventory.JobSpec{{Name: a1, Drill: onA, Restart: inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun,
			Jar: e.peers.SampleJob.Jar, EntryClass: entry, ProgramArgs: args(e.root+"/a/checkpoints", a1)}},
			{Name: a2, Drill: renamed, Restart: inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun,
				Jar: e.peers.SampleJob.Jar, EntryClass: entry, ProgramArgs: args(e.root+"/a/checkpoints", a2)}}}
		static.Clusters = append(static.Clusters, inventory.Cluster{Tenant: e.tenant[1], ClusterID: c23.ClusterID, Mode: inventory.ModeSession,
			RESTURL: c23.RESTURL, CheckpointDir: e.root + "/b/checkpoints", SavepointDir: e.root + "/b/savepoints",
			Jobs: []inventory.JobSpec{{Name: c1, Drill: sampleDrill(c1), Restart: inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun,
				Jar: c23.SampleJobJar, EntryClass: entry, ProgramArgs: args(e.root+"/b/checkpoints", c1)}}}})
		d.drillRoot = e.root + "/drills"
		d.static = static
		d.versionClusters = []config.DrillCluster{{FlinkVersion: "2.3", RESTURL: drill23.RESTURL}}
		cfg.Drill = config.Drill{ClusterRESTURL: d.drill.RESTURL, Root: d.drillRoot, Clusters: d.versionClusters}
	})
	if _, err := d.peers.HadoopShell(ctx, "-mkdir", "-p", d.plain+"/drills", d.plain+"/b/savepoints", d.plain+"/upgrades", d.plain+"/windows"); err != nil {
		t.Fatal(err)
	}
	queue := "rehearsal-" + sfx
	w := d.workerProcess(tmp, queue)

	ca := d.peers.Clusters[0]
	fcA, a1ID := d.start(ctx, ca, a1, d.root+"/a/checkpoints", "", "", nil)
	_, a2ID := d.start(ctx, ca, a2, d.root+"/a/checkpoints", "", "", nil)
	fcC := peertest.FlinkClient(t, c23.RESTURL)
	jar, err := fcC.UploadJar(ctx, c23.SampleJobJar)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fcC.DeleteJar(context.Background(), jar) })
	d.jar[c23.RESTURL] = jar // the 2.3 build for cluster-c
	_, c1ID := d.start(ctx, c23, c1, d.root+"/b/checkpoints", "", "", nil)
	d.checkpointed(ctx, fcA, a1ID, 1)
	d.checkpointed(ctx, fcC, c1ID, 1)

	health := workflows.RestartPolicy{Soak: workflows.Duration(3 * time.Second), RunningTimeout: workflows.Duration(2 * time.Minute), CheckpointTimeout: workflows.Duration(2 * time.Minute)}
	// start starts an upgrade, or its check; copyArgs are the arguments of
	// the new version's drill copy, needed when its arguments change.
	start := func(id, job string, recipe workflows.UpgradeRecipe, check bool, flinkVersion string, copyArgs ...string) client.WorkflowRun {
		t.Helper()
		in := workflows.UpgradeInput{UpgradeID: id, Reason: "rehearsal test", Job: job, Recipe: recipe, Health: health, CheckOnly: check,
			Rehearsal: workflows.UpgradeRehearsal{FlinkVersion: flinkVersion, ProgramArgs: copyArgs}}
		wid := workflows.UpgradeCheckWorkflowID(id)
		if !check {
			in.ManifestDir, wid = d.root+"/upgrades", workflows.JobUpgradeWorkflowID(id)
		}
		run, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wid, TaskQueue: queue}, workflows.JobUpgradeWorkflowType, in)
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	outcome := func(run client.WorkflowRun) (workflows.UpgradeState, error) {
		t.Helper()
		var st workflows.UpgradeState
		rctx, cancel := context.WithTimeout(ctx, 6*time.Minute)
		defer cancel()
		err := run.Get(rctx, &st)
		t.Logf("%s ended: %v", run.GetID(), err)
		if err != nil && !errors.As(err, new(*temporal.ApplicationError)) {
			if v, qerr := tmp.Client.QueryWorkflow(ctx, run.GetID(), "", workflows.QueryUpgradeStatus); qerr == nil && v.Get(&st) == nil {
				t.Fatalf("%s: %v: phase %s, pending %+v, rehearsal %+v, notes %q\nworker log:\n%s", run.GetID(), err, st.Phase, st.Pending, st.Rehearsal, st.Notes, w.Tail())
			}
			t.Fatalf("%s: %v\nworker log:\n%s", run.GetID(), err, w.Tail())
		}
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.HasDetails() {
			_ = appErr.Details(&st)
		}
		return st, err
	}
	nothingLeft := func(what string) {
		t.Helper()
		for _, c := range []sandbox.FlinkCluster{d.drill, drill23} {
			jobs, err := peertest.FlinkClient(t, c.RESTURL).ListJobs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range jobs {
				if strings.HasPrefix(j.Name, "drill-rh-") && strings.HasSuffix(j.Name, sfx) && !j.State.IsGloballyTerminal() {
					t.Errorf("%s: rehearsal copy %s (%s) is %s on %s; want it ended", what, j.ID, j.Name, j.State, c.ClusterID)
				}
			}
		}
		if left := d.drillLeftovers(); len(left) > 0 {
			t.Errorf("%s: drill root holds %v; want nothing", what, left)
		}
	}
	stillRunning := func(fc *flink.Client, id, what string) {
		t.Helper()
		if s, err := fc.JobState(ctx, id); err != nil || s != flink.JobRunning {
			t.Errorf("%s: production job %s is %s (%v); want it running, untouched", what, id, s, err)
		}
	}

	// 1. The 1.20 job into its 2.3 build on the 2.3 drill cluster; the
	// worker is killed while the copy runs there.
	// The copy's health gate holds in its soak: the copy runs there.
	d.hooks.Arm(faulthook.Hold{Name: "copy", Activity: "AwaitHealthy", At: faulthook.Heartbeat, Detail: "soak",
		Workflow: "to-2-3-" + sfx, Hit: 1})
	run := start("to-2-3-"+sfx, ca.ClusterID+"/"+a1, workflows.UpgradeRecipe{Jar: c23.SampleJobJar}, true, "2.3")
	d.hooks.WaitHeld(ctx, "copy", peertest.WorkflowEnded(ctx, tmp.Client, run.GetID()))
	drillFC := peertest.FlinkClient(t, drill23.RESTURL)
	copies, err := drillFC.ListJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(copies, func(j flink.JobOverview) bool { return j.Name == "drill-"+a1 && j.State == flink.JobRunning }) {
		t.Fatalf("the rehearsal's gate holds in its soak, yet no copy drill-%s runs on the 2.3 drill cluster: %+v", a1, copies)
	}
	// While the copy restores, the rehearsal holds its savepoint: cleanup
	// reads that from Temporal and keeps it.
	child := workflows.JobRehearsalWorkflowID(workflows.UpgradeCheckWorkflowID("to-2-3-"+sfx), 1)
	held, err := app.TemporalRuns{Client: tmp.Client}.SnapshotsInUse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(held, func(h core.RunSnapshot) bool {
		return h.Run == child && strings.Contains(h.Path, "/a/savepoints/")
	}); i < 0 {
		t.Errorf("runs in flight hold %+v; want rehearsal %s holding the savepoint its copy restores from", held, child)
	}
	w.Kill()
	w.Start()
	st, err := outcome(run)
	r := st.Rehearsal
	if err != nil || r == nil || r.Verdict != catalog.RehearsalCompatible {
		t.Fatalf("check into 2.3: %v, rehearsal %+v; want compatible\nworker log:\n%s", err, r, w.Tail())
	}
	if !strings.HasPrefix(r.FlinkVersion, "2.3") || r.DrillCluster != drill23.RESTURL || r.Restore == nil ||
		strings.TrimRight(r.Restore.RestoredFrom, "/") != strings.TrimRight(r.Savepoint, "/") || !strings.Contains(r.Restore.CheckpointPath, "/drills/") {
		t.Errorf("rehearsal %+v restore %+v; want the copy on the 2.3 drill cluster restored from the savepoint, checkpointing in its drill dir", r, r.Restore)
	}
	nothingLeft("check into 2.3")
	stillRunning(fcA, a1ID, "check into 2.3")
	var listed governance.ListSavepointsResult
	if err := d.activity(app.NewFamilies(d.acts).Governance.ListSavepoints, governance.ListSavepointsInput{Job: ca.ClusterID + "/" + a1}, &listed); err != nil {
		t.Fatal(err)
	}
	recorded := false
	for _, row := range listed.Savepoints {
		recorded = recorded || row.Path == strings.TrimRight(r.Savepoint, "/") && row.Rehearsal != nil && row.Rehearsal.Verdict == catalog.RehearsalCompatible &&
			row.Trigger == catalog.TriggerRehearsal
	}
	if !recorded {
		t.Errorf("savepoints list %+v; want %s catalogued as a rehearsal savepoint with its verdict", listed.Savepoints, r.Savepoint)
	}

	// 2. A changed uid fails the check, naming the operator.
	uid := workflows.UpgradeRecipe{ProgramArgs: args(d.root+"/a/checkpoints", a1, "--state-uid", "keyed-payload-state-v2")}
	uidCopy := append(sampleDrill(a1).ProgramArgs, "--state-uid", "keyed-payload-state-v2")
	st, err = outcome(start("uid-"+sfx, ca.ClusterID+"/"+a1, uid, true, "", uidCopy...))
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != workflows.ErrTypeUpgradeCheckFailed || st.Rehearsal == nil || st.Rehearsal.Cause == nil ||
		st.Rehearsal.Cause.Kind != upgrades.CauseUnmatchedOperator || !strings.Contains(err.Error(), "keyed-payload-state (") {
		t.Fatalf("check of a changed uid: %v, rehearsal %+v; want %s naming keyed-payload-state", err, st.Rehearsal, workflows.ErrTypeUpgradeCheckFailed)
	}
	nothingLeft("check of a changed uid")
	stillRunning(fcA, a1ID, "check of a changed uid")

	// 3. Its upgrade pauses before the job stops; abort changes nothing.
	run = start("uid-"+sfx, ca.ClusterID+"/"+a1, uid, false, "", uidCopy...)
	var pending workflows.UpgradeState
	d.waitFor(ctx, 5*time.Minute, "the rehearsal decision", func() (bool, string) {
		v, err := tmp.Client.QueryWorkflow(ctx, run.GetID(), "", workflows.QueryUpgradeStatus)
		if err != nil || v.Get(&pending) != nil {
			return false, stringOr(err, "no status")
		}
		return pending.Pending != nil, pending.Phase
	})
	if pending.Pending.Kind != workflows.DecisionRehearsal || !strings.Contains(pending.Pending.Reason, "keyed-payload-state (") || pending.Savepoint != "" {
		t.Fatalf("pending %+v (upgrade savepoint %q); want the rehearsal decision naming the operator, before any stop", pending.Pending, pending.Savepoint)
	}
	stillRunning(fcA, a1ID, "upgrade waiting on its rehearsal")
	h, err := tmp.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: workflows.UpdateDecide,
		Args: []interface{}{workflows.DecideRequest{Action: workflows.ActionAbort, By: "test", Reason: "the uid change was a mistake"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := outcome(run); err == nil || !strings.Contains(err.Error(), "nothing changed") {
		t.Errorf("aborted upgrade ended with %v; want aborted, nothing changed", err)
	}
	nothingLeft("aborted upgrade")
	stillRunning(fcA, a1ID, "aborted upgrade")

	// 4. A 2.3 job to a new jar on 2.3: rehearsed on the 2.3 drill
	// cluster, then upgraded.
	newJar := filepath.Join(t.TempDir(), "sample-job-flink2-v2.jar")
	data, err := os.ReadFile(c23.SampleJobJar)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(newJar, data, 0o644); err != nil {
		t.Fatal(err)
	}
	run = start("c-"+sfx, c23.ClusterID+"/"+c1, workflows.UpgradeRecipe{Jar: newJar, ProgramArgs: args(d.root+"/b/checkpoints", c1, "--value-bytes", "300")}, false, "",
		append(sampleDrill(c1).ProgramArgs, "--value-bytes", "300")...)
	st, err = outcome(run)
	if err != nil || st.Phase != workflows.UpgradePhaseCommitted || st.Rehearsal == nil || st.Rehearsal.Verdict != catalog.RehearsalCompatible ||
		st.Rehearsal.DrillCluster != drill23.RESTURL || st.Rehearsal.Jar != newJar {
		t.Fatalf("upgrade on 2.3: %v, phase %s, rehearsal %+v; want it rehearsed on the 2.3 drill cluster with the new jar, then committed", err, st.Phase, st.Rehearsal)
	}
	if dir := os.Getenv(sandbox.EnvCaptureHistory); dir != "" {
		sandbox.CaptureHistory(t, tmp.Client, run.GetID(), run.GetRunID(), dir+"/upgrade-2026-12-04.json.gz")
	}
	t.Cleanup(func() { _ = fcC.CancelJob(context.Background(), st.NewJobID) })
	stillRunning(fcC, st.NewJobID, "upgrade on 2.3")
	nothingLeft("upgrade on 2.3")

	// 5. A window rehearsing the move to 2.3: a1's build restores, a2's
	// does not; a2 is left out, running, and the window goes on with a1.
	d.checkpointed(ctx, fcA, a2ID, 1)
	soak := workflows.Duration(3 * time.Second)
	win := workflows.WindowInput{WindowID: "rh-" + sfx, Reason: "rehearsal test", Scope: core.Scope{Clusters: []string{ca.ClusterID}, IncludeJobs: []string{a1, a2}},
		Policy: workflows.WindowPolicy{ManifestDir: d.root + "/windows", Network: workflows.NetworkPolicy{Skip: true},
			Restart: workflows.RestartPolicy{Soak: soak}, Cleanup: workflows.CleanupPolicy{Mode: workflows.CleanupModeSkip},
			Rehearse: workflows.RehearsePolicy{FlinkVersion: "2.3", Soak: soak}}}
	run, err = tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.WindowWorkflowID(win.WindowID), TaskQueue: queue},
		workflows.MaintenanceWindowWorkflowType, win)
	if err != nil {
		t.Fatal(err)
	}
	var ws workflows.WindowState
	d.waitFor(ctx, 5*time.Minute, "the window's rehearsal decision", func() (bool, string) {
		v, err := tmp.Client.QueryWorkflow(ctx, run.GetID(), "", workflows.QueryStatus)
		if err != nil || v.Get(&ws) != nil {
			return false, stringOr(err, "no status")
		}
		return ws.Pending != nil, ws.Phase
	})
	key2 := ca.ClusterID + "/" + a2
	if p := ws.Pending; p.Kind != workflows.DecisionRehearsal || len(p.Jobs) != 1 || p.Jobs[0] != key2 || !strings.Contains(p.Reason, "keyed-payload-state") {
		t.Fatalf("window pending %+v; want the rehearsal decision about %s alone, naming its operator", p, key2)
	}
	stillRunning(fcA, a1ID, "window waiting on its rehearsal")
	stillRunning(fcA, a2ID, "window waiting on its rehearsal")
	h, err = tmp.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: workflows.UpdateDecide,
		Args: []interface{}{workflows.DecideRequest{Action: workflows.ActionSkipJob, Job: key2, By: "test", Reason: "a2 stays on 1.20"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	var rep workflows.WindowReport
	if err := run.Get(ctx, &rep); err != nil {
		t.Fatalf("window: %v\nworker log:\n%s", err, w.Tail())
	}
	for _, j := range rep.Jobs {
		switch j.Target.JobName {
		case a1:
			if j.Rehearsal != catalog.RehearsalCompatible || j.RestartState != workflows.StepDone {
				t.Errorf("%s: rehearsal %s, restart %s; want compatible and restarted", a1, j.Rehearsal, j.RestartState)
			}
			t.Cleanup(func() { _ = fcA.CancelJob(context.Background(), j.NewJobID) })
		case a2:
			if j.Rehearsal != catalog.RehearsalIncompatible || j.RestartState != workflows.StepSkipped || !strings.Contains(j.RehearsalCause, "keyed-payload-state") {
				t.Errorf("%s: rehearsal %s (%s), restart %s; want incompatible, left out", a2, j.Rehearsal, j.RehearsalCause, j.RestartState)
			}
		}
	}
	t.Logf("window %s ended %s: %d jobs, a2 left out: %s", win.WindowID, rep.Phase, len(rep.Jobs), ws.Pending.Reason)
	stillRunning(fcA, a2ID, "window that left it out")
	nothingLeft("window rehearsal")
}
