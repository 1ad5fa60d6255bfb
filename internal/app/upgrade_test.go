//go:build realpeers

package app_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/faulthook"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// TestJobUpgradeOnRealPeers upgrades sample jobs on real Flink and HDFS:
// a changed argument commits, the new version running from the upgrade
// savepoint and recorded as the recipe the next window restarts; a version
// that fails after its restore rolls back by itself, the previous version
// running again from the pre-upgrade savepoint with its checkpoint counter
// going on; a version whose operator uid changed pauses naming the
// operator, and a rollback decision brings the previous version back.
func TestJobUpgradeOnRealPeers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	sfx := peertest.RandomHex(4)
	commit, failing, renamed := "up-commit-"+sfx, "up-fail-"+sfx, "up-uid-"+sfx
	d := newDrillEnv(t, ctx, map[string]*inventory.DrillRecipe{commit: nil, failing: nil, renamed: nil})
	d.serve(tmp, "upgrade-"+sfx)
	ca := d.peers.Clusters[0]
	fc := peertest.FlinkClient(t, ca.RESTURL)
	ckpts := d.root + "/a/checkpoints"
	args := func(name string, extra ...string) []string {
		return append([]string{"--checkpoint-dir", ckpts, "--job-name", name, "--keys", "2000", "--value-bytes", "256", "--rate", "200"}, extra...)
	}
	health := workflows.RestartPolicy{Soak: workflows.Duration(3 * time.Second), RunningTimeout: workflows.Duration(2 * time.Minute), CheckpointTimeout: workflows.Duration(2 * time.Minute)}
	start := func(name string, extra ...string) client.WorkflowRun {
		t.Helper()
		in := workflows.UpgradeInput{UpgradeID: name, Reason: "upgrade test", Job: ca.ClusterID + "/" + name, ManifestDir: d.root + "/upgrades",
			Recipe: workflows.UpgradeRecipe{ProgramArgs: args(name, extra...)}, Health: health}
		run, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.JobUpgradeWorkflowID(name), TaskQueue: d.queue},
			workflows.JobUpgradeWorkflowType, in)
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	running := func(id, what string) {
		t.Helper()
		t.Cleanup(func() { _ = fc.CancelJob(context.Background(), id) })
		if s, err := fc.JobState(ctx, id); err != nil || s != flink.JobRunning {
			t.Fatalf("%s %s is %s (%v); want running", what, id, s, err)
		}
	}

	// 1. A changed argument commits.
	_, commitID := d.start(ctx, ca, commit, ckpts, "", "", nil)
	d.checkpointed(ctx, fc, commitID, 1)
	var st workflows.UpgradeState
	run := start(commit, "--value-bytes", "300")
	if err := run.Get(ctx, &st); err != nil {
		t.Fatalf("upgrade of %s: %v", commit, err)
	}
	if dir := os.Getenv(sandbox.EnvCaptureHistory); dir != "" {
		sandbox.CaptureHistory(t, tmp.Client, run.GetID(), run.GetRunID(), dir+"/upgrade.json.gz")
	}
	running(st.NewJobID, "new version")
	if st.Phase != workflows.UpgradePhaseCommitted || st.Healthy == nil || strings.TrimRight(st.Healthy.RestoredFrom, "/") != strings.TrimRight(st.Savepoint, "/") {
		t.Fatalf("upgrade %+v; want committed, restored from its savepoint", st)
	}
	if conf := jobUserConfig(t, ctx, ca.RESTURL, st.NewJobID); !strings.Contains(conf, "--value-bytes 256 --rate 200 --value-bytes 300") {
		t.Errorf("new version runs with %s; want the new arguments", conf)
	}
	if s, err := fc.JobState(ctx, commitID); err != nil || s != flink.JobFinished {
		t.Errorf("previous version %s is %s (%v); want finished by its stop with savepoint", commitID, s, err)
	}
	var found core.DiscoverJobsResult
	if err := d.activity(app.NewFamilies(d.acts).Windows.DiscoverJobs, core.DiscoverJobsInput{Scope: core.Scope{IncludeJobs: []string{commit}}}, &found); err != nil {
		t.Fatal(err)
	}
	if len(found.Jobs) != 1 || found.Jobs[0].JobID != st.NewJobID || !strings.Contains(strings.Join(found.Jobs[0].Restart.ProgramArgs, " "), "--value-bytes 300") {
		t.Errorf("a window now finds %+v; want the new version with its recipe of record", found.Jobs)
	}

	// 2. A version that fails after its restore rolls back by itself.
	_, failingID := d.start(ctx, ca, failing, ckpts, "", "", nil)
	before := d.checkpointed(ctx, fc, failingID, 2).Latest.Completed.ID
	err := start(failing, "--fail-on-restore").Get(ctx, &st)
	st = rolledBack(t, err)
	rb := st.Rollback
	if rb == nil || rb.Healthy == nil || strings.TrimRight(rb.Healthy.RestoredFrom, "/") != strings.TrimRight(st.Savepoint, "/") || !strings.Contains(rb.Reason, "--fail-on-restore") {
		t.Fatalf("rollback %+v; want the previous version restored from %s after the gate failed", rb, st.Savepoint)
	}
	running(rb.JobID, "previous version")
	if rb.Healthy.CheckpointID <= before {
		t.Errorf("previous version checkpoints at %d after the rollback; want its counter to go on past %d", rb.Healthy.CheckpointID, before)
	}
	if conf := jobUserConfig(t, ctx, ca.RESTURL, rb.JobID); strings.Contains(conf, "--fail-on-restore") {
		t.Errorf("previous version runs with %s; want its own arguments", conf)
	}
	if s, err := fc.JobState(ctx, st.NewJobID); err == nil && !s.IsGloballyTerminal() {
		t.Errorf("new version %s is %s after the rollback; want it ended", st.NewJobID, s)
	}

	// 3. A changed operator uid pauses with the operator named.
	_, renamedID := d.start(ctx, ca, renamed, ckpts, "", "", nil)
	d.checkpointed(ctx, fc, renamedID, 1)
	run = start(renamed, "--state-uid", "keyed-payload-state-v2")
	var pending workflows.UpgradeState
	d.waitFor(ctx, 3*time.Minute, "the unmatched-state decision", func() (bool, string) {
		v, err := tmp.Client.QueryWorkflow(ctx, run.GetID(), "", workflows.QueryUpgradeStatus)
		if err != nil || v.Get(&pending) != nil {
			return false, stringOr(err, "no status")
		}
		return pending.Pending != nil, pending.Phase
	})
	if pending.Pending.Kind != workflows.DecisionUnmatchedState || len(pending.Unmatched) != 1 || !strings.Contains(pending.Pending.Reason, pending.Unmatched[0]) {
		t.Fatalf("pending %+v, unmatched %v; want the unmatched operator named", pending.Pending, pending.Unmatched)
	}
	// While it waits, the upgrade holds its pre-upgrade savepoint: cleanup
	// reads that from Temporal and keeps it.
	held, err := app.TemporalRuns{Client: tmp.Client}.SnapshotsInUse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(held, func(h core.RunSnapshot) bool { return h.Run == run.GetID() && h.Path == pending.Savepoint }); i < 0 || pending.Savepoint == "" {
		t.Errorf("runs in flight hold %+v; want upgrade %s holding its pre-upgrade savepoint %q", held, run.GetID(), pending.Savepoint)
	}
	h, err := tmp.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: workflows.UpdateDecide,
		Args: []interface{}{workflows.DecideRequest{Action: workflows.ActionRollback, By: "test", Reason: "keep the state"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	st = rolledBack(t, run.Get(ctx, &st))
	running(st.Rollback.JobID, "previous version")
}

// rolledBack is the state of an upgrade that ended rolled back.
func rolledBack(t *testing.T, err error) workflows.UpgradeState {
	t.Helper()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != workflows.ErrTypeUpgradeRolledBack {
		t.Fatalf("upgrade ended with %v; want %s", err, workflows.ErrTypeUpgradeRolledBack)
	}
	var st workflows.UpgradeState
	if err := appErr.Details(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// jobUserConfig is the job's global job parameters as Flink's REST API
// shows them: the sample job puts its arguments there.
func jobUserConfig(t *testing.T, ctx context.Context, restURL, jobID string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(restURL, "/")+"/jobs/"+jobID+"/config", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// TestJobUpgradeSurvivesWorkerKills kills the worker without warning in
// each step of an upgrade, starting it again each time: during the stop,
// the start and the health gate of an upgrade that commits, and during the
// rollback of one whose new version fails. A fault hook holds each step
// where the kill lands: the stop with its savepoint in progress, the new
// version submitted to Flink without the upgrade knowing, the gate in its
// soak, the previous version submitted again in the rollback. Both runs complete; each job
// was stopped once (one upgrade savepoint) and runs exactly one version.
func TestJobUpgradeSurvivesWorkerKills(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	sfx := peertest.RandomHex(4)
	commit, failing := "upk-commit-"+sfx, "upk-fail-"+sfx
	d := newDrillEnv(t, ctx, map[string]*inventory.DrillRecipe{commit: nil, failing: nil})
	w := d.workerProcess(tmp, "upgrade-kill-"+sfx)
	ca := d.peers.Clusters[0]
	fc := peertest.FlinkClient(t, ca.RESTURL)
	ckpts := d.root + "/a/checkpoints"
	upgrade := func(name string, soak time.Duration, extra ...string) client.WorkflowRun {
		t.Helper()
		args := append([]string{"--checkpoint-dir", ckpts, "--job-name", name, "--keys", "2000", "--value-bytes", "256", "--rate", "200"}, extra...)
		in := workflows.UpgradeInput{UpgradeID: name, Reason: "kill test", Job: ca.ClusterID + "/" + name, ManifestDir: d.root + "/upgrades",
			Recipe: workflows.UpgradeRecipe{ProgramArgs: args},
			Health: workflows.RestartPolicy{Soak: workflows.Duration(soak), RunningTimeout: workflows.Duration(3 * time.Minute), CheckpointTimeout: workflows.Duration(3 * time.Minute)}}
		run, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.JobUpgradeWorkflowID(name), TaskQueue: d.queue},
			workflows.JobUpgradeWorkflowType, in)
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	// killHeld kills the worker once it holds at the hook name, with the
	// upgrade in phase, and returns the upgrade's state there.
	killHeld := func(run client.WorkflowRun, name, phase string) workflows.UpgradeState {
		t.Helper()
		held := d.hooks.WaitHeld(ctx, name, peertest.WorkflowEnded(ctx, tmp.Client, run.GetID()))
		var st workflows.UpgradeState
		v, err := tmp.Client.QueryWorkflow(ctx, run.GetID(), "", workflows.QueryUpgradeStatus)
		if err != nil || v.Get(&st) != nil || st.Phase != phase {
			t.Fatalf("held %s of %s with the upgrade in phase %q (%v); want %s", held.Activity, held.WorkflowID, st.Phase, err, phase)
		}
		w.Kill()
		t.Logf("killed the worker while it held %s of %s at its %s, the upgrade in phase %s", held.Activity, held.WorkflowID, held.At, phase)
		w.Start()
		return st
	}
	// versions lists the jobs of name on the cluster that are not over, and
	// counts the upgrade savepoints taken of the original job.
	versions := func(name, originalID string) (running []string, savepoints int) {
		t.Helper()
		jobs, err := fc.ListJobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if j.Name == name && !j.State.IsGloballyTerminal() {
				running = append(running, j.ID)
				t.Cleanup(func() { _ = fc.CancelJob(context.Background(), j.ID) })
			}
		}
		entries, err := d.raw.ReadDir(strings.TrimPrefix(d.root, d.peers.HDFS.URI) + "/a/savepoints")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "savepoint-"+originalID[:6]+"-") {
				savepoints++
			}
		}
		return running, savepoints
	}

	// An upgrade that commits, with a kill in its stop, start and gate.
	_, commitID := d.start(ctx, ca, commit, ckpts, "", "", nil)
	d.checkpointed(ctx, fc, commitID, 1)
	d.hooks.Arm(faulthook.Hold{Name: "stop", Activity: "StopWithSavepoint", At: faulthook.Heartbeat, Detail: "savepoint in progress",
		Workflow: commit, Hit: 1})
	d.hooks.Arm(faulthook.Hold{Name: "start", Activity: "RestartJob", At: faulthook.Done, Workflow: commit, Hit: 1})
	d.hooks.Arm(faulthook.Hold{Name: "gate", Activity: "AwaitHealthy", At: faulthook.Heartbeat, Detail: "soak", Workflow: commit, Hit: 1})
	run := upgrade(commit, 5*time.Second, "--value-bytes", "300")
	killHeld(run, "stop", workflows.UpgradePhaseStop)
	killHeld(run, "start", workflows.UpgradePhaseStart)
	newID := killHeld(run, "gate", workflows.UpgradePhaseStart).NewJobID
	if s, err := fc.JobState(ctx, newID); err != nil || s != flink.JobRunning {
		t.Fatalf("the gate held in its soak with the new version %s %s (%v); want it running", newID, s, err)
	}
	var st workflows.UpgradeState
	if err := run.Get(ctx, &st); err != nil {
		t.Fatalf("upgrade of %s: %v\nworker log:\n%s", commit, err, w.Tail())
	}
	running, savepoints := versions(commit, commitID)
	if st.Phase != workflows.UpgradePhaseCommitted || st.NewJobID != newID || len(running) != 1 || running[0] != newID || savepoints != 1 {
		t.Fatalf("upgrade %s phase %s, new job %s; running %v, %d upgrade savepoints; want committed, the new version alone running, one stop",
			commit, st.Phase, st.NewJobID, running, savepoints)
	}

	// An upgrade that rolls back, with a kill in the rollback.
	_, failingID := d.start(ctx, ca, failing, ckpts, "", "", nil)
	d.checkpointed(ctx, fc, failingID, 1)
	d.hooks.Arm(faulthook.Hold{Name: "rollback", Activity: "RestartJob", At: faulthook.Done, Workflow: failing + "/rollback", Hit: 1})
	run = upgrade(failing, 3*time.Second, "--fail-on-restore")
	killHeld(run, "rollback", workflows.UpgradePhaseRollback)
	st = rolledBack(t, run.Get(ctx, &st))
	running, savepoints = versions(failing, failingID)
	if len(running) != 1 || running[0] != st.Rollback.JobID || savepoints != 1 {
		t.Fatalf("after the rollback running %v, %d upgrade savepoints; want the previous version %s alone, one stop", running, savepoints, st.Rollback.JobID)
	}
	if w.Starts() != 5 {
		t.Errorf("worker started %d times; want 5 (4 kills)", w.Starts())
	}
}

// TestJobUpgradeInParallelOnRealPeers upgrades sample jobs in mode
// parallel on real Flink and HDFS: the job keeps running through its
// savepoint, the new version (a jar uploaded to the cluster, named by its
// id, with a configuration override) starts beside it and passes metric
// checks read from Flink's REST API, and only then is the previous version
// stopped with a savepoint. A new version that fails a metric check is
// ended and the previous version, never stopped, runs on as it was.
func TestJobUpgradeInParallelOnRealPeers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	sfx := peertest.RandomHex(4)
	commit, failing := "up-par-"+sfx, "up-par-fail-"+sfx
	d := newDrillEnv(t, ctx, map[string]*inventory.DrillRecipe{commit: nil, failing: nil})
	d.serve(tmp, "upgrade-par-"+sfx)
	ca := d.peers.Clusters[0]
	fc := peertest.FlinkClient(t, ca.RESTURL)
	ckpts := d.root + "/a/checkpoints"
	jarID, err := fc.UploadJar(ctx, d.peers.SampleJob.Jar)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fc.DeleteJar(context.Background(), jarID) })
	zero, one := 0.0, 1.0
	upgrade := func(name string, checks []windows.MetricCheck, extra ...string) (workflows.UpgradeState, error) {
		t.Helper()
		in := workflows.UpgradeInput{UpgradeID: name, Reason: "parallel upgrade test", Job: ca.ClusterID + "/" + name, ManifestDir: d.root + "/upgrades",
			Mode: workflows.UpgradeModeParallel,
			Recipe: workflows.UpgradeRecipe{JarID: jarID, FlinkConfiguration: map[string]string{"pipeline.object-reuse": "true"},
				ProgramArgs: append([]string{"--checkpoint-dir", ckpts, "--job-name", name, "--keys", "2000", "--value-bytes", "256", "--rate", "200"}, extra...)},
			Health: workflows.RestartPolicy{Soak: workflows.Duration(3 * time.Second), RunningTimeout: workflows.Duration(2 * time.Minute),
				CheckpointTimeout: workflows.Duration(2 * time.Minute), Checks: checks}}
		run, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.JobUpgradeWorkflowID(name), TaskQueue: d.queue},
			workflows.JobUpgradeWorkflowType, in)
		if err != nil {
			t.Fatal(err)
		}
		var st workflows.UpgradeState
		err = run.Get(ctx, &st)
		return st, err
	}

	// 1. Side by side, checks pass, then the previous version is retired.
	_, commitID := d.start(ctx, ca, commit, ckpts, "", "", nil)
	d.checkpointed(ctx, fc, commitID, 1)
	st, err := upgrade(commit, []windows.MetricCheck{{Metric: "numRestarts", Max: &zero}, {Metric: "numRecordsOut", Vertex: "sequence-source", Min: &one}},
		"--value-bytes", "300")
	if err != nil {
		t.Fatalf("parallel upgrade of %s: %v", commit, err)
	}
	t.Cleanup(func() { _ = fc.CancelJob(context.Background(), st.NewJobID) })
	if st.Phase != workflows.UpgradePhaseCommitted || !st.Retired || st.RetiredSavepoint == "" || st.Healthy == nil ||
		strings.TrimRight(st.Healthy.RestoredFrom, "/") != strings.TrimRight(st.Savepoint, "/") {
		t.Fatalf("upgrade %+v; want committed from its savepoint, the previous version retired with a savepoint", st)
	}
	if len(st.Healthy.Readings) != 2 || st.Healthy.Readings[1].Value < 1 {
		t.Errorf("readings %+v; want both checks read, records flowing out of the source", st.Healthy.Readings)
	}
	newer, err := fc.JobDetails(ctx, st.NewJobID)
	if err != nil || newer.State != flink.JobRunning {
		t.Fatalf("new version %s: %s, %v; want running", st.NewJobID, newer.State, err)
	}
	older, err := fc.JobDetails(ctx, commitID)
	if err != nil || older.State != flink.JobFinished || older.EndTime <= newer.StartTime {
		t.Errorf("previous version %s: %s, ended at %d, new version started at %d (%v); want it finished by its stop with savepoint, after the new version started",
			commitID, older.State, older.EndTime, newer.StartTime, err)
	}
	if conf := jobUserConfig(t, ctx, ca.RESTURL, st.NewJobID); !strings.Contains(conf, `"object-reuse-mode":true`) || !strings.Contains(conf, "--value-bytes 300") {
		t.Errorf("new version runs with %s; want object reuse on and the new arguments", conf)
	}
	jars, err := fc.ListJars(ctx)
	listed := false
	for _, j := range jars.Files {
		listed = listed || j.ID == jarID
	}
	if err != nil || !listed {
		t.Errorf("jar %s after the upgrade: listed %v (%v); an uploaded jar named by id is never deleted", jarID, listed, err)
	}
	var found core.DiscoverJobsResult
	if err := d.activity(app.NewFamilies(d.acts).Windows.DiscoverJobs, core.DiscoverJobsInput{Scope: core.Scope{IncludeJobs: []string{commit}}}, &found); err != nil {
		t.Fatal(err)
	}
	if len(found.Jobs) != 1 || found.Jobs[0].Restart.JarID != jarID || found.Jobs[0].Restart.FlinkConfiguration["pipeline.object-reuse"] != "true" {
		t.Errorf("a window now finds %+v; want the recipe of record with the jar id and the configuration", found.Jobs)
	}

	// 2. A failed check ends the new version; the previous one never stopped.
	_, failingID := d.start(ctx, ca, failing, ckpts, "", "", nil)
	d.checkpointed(ctx, fc, failingID, 1)
	_, err = upgrade(failing, []windows.MetricCheck{{Metric: "uptime", Max: &one}})
	st = rolledBack(t, err)
	if st.Rollback == nil || !strings.Contains(st.Rollback.Reason, "health check uptime <= 1 failed") || st.Retired {
		t.Fatalf("rollback %+v; want the failed check named and the previous version not retired", st.Rollback)
	}
	if s, err := fc.JobState(ctx, failingID); err != nil || s != flink.JobRunning {
		t.Errorf("previous version %s is %s (%v); want it running on, never stopped", failingID, s, err)
	}
	if s, err := fc.JobState(ctx, st.NewJobID); err != nil || !s.IsGloballyTerminal() {
		t.Errorf("new version %s is %s (%v); want it ended", st.NewJobID, s, err)
	}
	t.Cleanup(func() { _ = fc.CancelJob(context.Background(), failingID) })
}
