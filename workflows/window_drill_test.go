package workflows

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/drills"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
)

// drillFixture adds the drill activities and a fake JobDrill child to a
// window fixture. drillOutcomes are the outcomes of the canary drills in
// turn (passed once they run out); stoppedAtDrill is how many jobs had
// been stopped when each drill started.
type drillFixture struct {
	*windowFixture
	drillOutcomes  []string
	drills         []JobDrillInput
	stoppedAtDrill []int
	recorded       []drills.RecordDrillRunInput
	clusterProblem error
	// badProof are the savepoint paths whose storage proof fails.
	badProof map[string]bool
	proved   []string
	// noTarget makes the canary drill's selection find nothing.
	noTarget bool
	// proofErrors fails that many proof calls; shortProof makes a proof
	// answer for one savepoint fewer than it was asked.
	proofErrors int
	shortProof  bool
}

func newDrillFixture(t *testing.T, n int, drillable ...string) *drillFixture {
	f := &drillFixture{windowFixture: newWindowFixture(t, n), badProof: map[string]bool{}}
	for i := range f.jobs {
		for _, k := range drillable {
			f.jobs[i].Drillable = f.jobs[i].Drillable || f.jobs[i].Key == k
		}
	}
	var a *drills.Activities
	f.env.OnActivity(a.CheckDrillCluster, mock.Anything).Return(func(context.Context) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.clusterProblem
	})
	f.env.OnActivity(a.SelectDrillTargets, mock.Anything, mock.Anything).Return(func(_ context.Context, in drills.SelectDrillTargetsInput) (drills.SelectDrillTargetsResult, error) {
		if !in.Restore || in.Selection.Mode != drills.DrillSnapshot {
			t.Errorf("canary drill selection %+v; want one snapshot, restored", in)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.noTarget {
			return drills.SelectDrillTargetsResult{}, nil
		}
		return drills.SelectDrillTargetsResult{Targets: []core.DrillTarget{{Key: in.Selection.Job, Snapshot: in.Selection.Snapshot,
			Kind: core.SnapshotSavepoint, DrillCluster: "http://drill", DrillDir: "hdfs://nn/drills/" + in.RunID}}}, nil
	})
	f.env.OnActivity(a.RecordDrillRun, mock.Anything, mock.Anything).Return(func(_ context.Context, in drills.RecordDrillRunInput) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.recorded = append(f.recorded, in)
		return nil
	})
	f.env.OnActivity(a.ProveSnapshots, mock.Anything, mock.Anything).Return(func(_ context.Context, in drills.ProveSnapshotsInput) ([]drills.SnapshotVerdict, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.proofErrors > 0 {
			f.proofErrors--
			return nil, temporal.NewNonRetryableApplicationError("namenode in safe mode", "StorageUnavailable", nil)
		}
		var out []drills.SnapshotVerdict
		snapshots := in.Snapshots
		if f.shortProof {
			snapshots = snapshots[:len(snapshots)-1]
		}
		for _, s := range snapshots {
			f.proved = append(f.proved, s)
			v := drills.SnapshotVerdict{Snapshot: s, Files: 3}
			if f.badProof[s] {
				v.Failure = "1 referenced files missing or short: " + s + "/abc is missing, needed by operator src"
			}
			out = append(out, v)
		}
		return out, nil
	})
	f.env.OnWorkflow(JobDrillWorkflowType, mock.Anything, mock.Anything).Return(func(_ workflow.Context, in JobDrillInput) (JobDrillResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.drills = append(f.drills, in)
		f.stoppedAtDrill = append(f.stoppedAtDrill, len(f.stopped))
		outcome := catalog.DrillPassed
		if len(f.drills) <= len(f.drillOutcomes) {
			outcome = f.drillOutcomes[len(f.drills)-1]
		}
		res := JobDrillResult{Key: in.Target.Key, Snapshot: in.Target.Snapshot, Kind: in.Target.Kind, Tier: 2, Outcome: outcome}
		if outcome != catalog.DrillPassed {
			res.Error = "job failed on restore: java.io.FileNotFoundException"
		}
		return res, nil
	})
	return f
}

func canaryInput() WindowInput {
	in := windowInput()
	in.Policy.Network.Skip = true
	in.Policy.Drill.Canary = true
	return in
}

// The canary is stopped and its savepoint drilled before any other job is
// stopped; only then do the others stop.
func TestWindowDrillsTheCanaryBeforeStoppingTheRest(t *testing.T) {
	f := newDrillFixture(t, 4, "cluster-a/job-c", "cluster-b/job-b")
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, canaryInput())
	rep := f.result()
	if len(f.drills) != 1 || f.stoppedAtDrill[0] != 1 || f.stopped["cluster-b/job-b"] != 1 {
		t.Fatalf("drills %+v with %v jobs stopped at each (stops %v); want one drill of cluster-b/job-b while only it was stopped", f.drills, f.stoppedAtDrill, f.stopped)
	}
	d := f.drills[0]
	if d.Tier != 2 || d.Target.Snapshot != "hdfs://nn/sp/savepoint-job-b" || d.Health.Soak != canaryInput().Policy.Restart.Soak && d.Health.Soak == 0 {
		t.Errorf("drill input %+v; want tier 2 of the canary's savepoint with the restart's health", d)
	}
	if c := rep.Canary; c == nil || c.Key != "cluster-b/job-b" || c.Outcome != catalog.DrillPassed || c.Attempts != 1 || c.WorkflowID != "window-w1/canary-drill" {
		t.Errorf("report canary %+v", rep.Canary)
	}
	if len(f.recorded) != 1 || f.recorded[0].Results[0].Outcome != catalog.DrillPassed || f.recorded[0].RunID != "window-w1-canary" {
		t.Errorf("recorded %+v; want the passing drill recorded beside the savepoint", f.recorded)
	}
	for _, j := range rep.Jobs {
		if f.stopped[j.Target.Key] != 1 || j.RestartState != StepDone {
			t.Errorf("%s stopped %d times, restart %s; want every job through once", j.Target.Key, f.stopped[j.Target.Key], j.RestartState)
		}
	}
	if md := rep.Markdown(); !strings.Contains(md, "Canary restore drill") || !strings.Contains(md, "**passed**") {
		t.Errorf("markdown lacks the canary drill:\n%s", md)
	}
}

// A failing canary drill pauses the window with only the canary stopped;
// retry drills again, and a pass lets the rest stop.
func TestWindowPausesOnAFailedCanaryDrill(t *testing.T) {
	f := newDrillFixture(t, 3, "cluster-a/job-a")
	f.drillOutcomes = []string{catalog.DrillFailed}
	seen := false
	later(t, f.env, func() {
		st := f.status()
		if st.Pending == nil || st.Pending.Kind != DecisionCanaryDrill || !strings.Contains(st.Pending.Reason, "FileNotFoundException") {
			t.Errorf("pending %+v; want the canary drill's failure", st.Pending)
			return
		}
		f.mu.Lock()
		stopped := len(f.stopped)
		f.mu.Unlock()
		if stopped != 1 {
			t.Errorf("%d jobs stopped while the canary drill failed; want the canary only", stopped)
		}
		seen = true
		f.update(UpdateDecide, DecideRequest{Action: ActionSkipJob, Job: "cluster-a/job-a", By: "op"}, true)
		f.update(UpdateDecide, DecideRequest{Action: ActionRetry, By: "op", Reason: "drill cluster was full"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, canaryInput())
	rep := f.result()
	if !seen || len(f.drills) != 2 || f.drills[1].N != 2 {
		t.Fatalf("seen %v, drills %+v; want a pause, then a second drill", seen, f.drills)
	}
	if c := rep.Canary; c.Outcome != catalog.DrillPassed || c.Attempts != 2 || c.WorkflowID != "window-w1/canary-drill/attempt-2" {
		t.Errorf("canary %+v", c)
	}
	if len(f.stopped) != 3 {
		t.Errorf("stops %v; want all three after the passing drill", f.stopped)
	}
}

// A canary that cannot be stopped with a savepoint gives way to the next
// job with a drill recipe; the one that failed keeps running.
func TestWindowMovesTheCanaryOnWhenItsSavepointFails(t *testing.T) {
	f := newDrillFixture(t, 3, "cluster-a/job-a", "cluster-a/job-c")
	f.failStop["cluster-a/job-a"] = true
	in := canaryInput()
	in.Policy.Savepoint.OnFailure = OnFailureSkip
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	rep := f.result()
	if len(f.drills) != 1 || f.drills[0].Target.Key != "cluster-a/job-c" || rep.Canary.Key != "cluster-a/job-c" {
		t.Fatalf("drills %+v, canary %+v; want cluster-a/job-c drilled", f.drills, rep.Canary)
	}
	if f.stoppedAtDrill[0] != 2 {
		t.Errorf("%d stop calls before the drill; want the failed canary's and the new canary's", f.stoppedAtDrill[0])
	}
}

// A window whose canary cannot be drilled stops nothing: no job has a
// drill recipe, or the drill cluster is unusable until someone decides.
func TestWindowCanaryPreflightStopsNothing(t *testing.T) {
	f := newDrillFixture(t, 2)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, canaryInput())
	var appErr *temporal.ApplicationError
	if err := f.env.GetWorkflowError(); !errors.As(err, &appErr) || !strings.Contains(err.Error(), "no job in this window's scope has a drill recipe") {
		t.Fatalf("window without a drillable job: %v; want an invalid-input error", err)
	}
	if len(f.stopped) != 0 {
		t.Fatalf("stopped %v; want nothing", f.stopped)
	}

	f = newDrillFixture(t, 2, "cluster-b/job-b")
	f.clusterProblem = temporal.NewNonRetryableApplicationError("drill.root overlaps the tenant a root", core.ErrTypeInvalidInput, nil)
	later(t, f.env, func() {
		st := f.status()
		if st.Pending == nil || st.Pending.Kind != DecisionCanaryDrill || !strings.Contains(st.Pending.Reason, "drill.root overlaps") {
			t.Errorf("pending %+v; want the drill cluster's problem", st.Pending)
		}
		if len(f.stopped) != 0 {
			t.Errorf("stopped %v while the drill cluster is unusable", f.stopped)
		}
		f.update(UpdateDecide, DecideRequest{Action: ActionAbort, By: "op", Reason: "fix config"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, canaryInput())
	if rep := f.result(); rep.Phase != WindowPhaseAborted || len(f.stopped) != 0 {
		t.Fatalf("phase %s, stopped %v; want aborted with nothing stopped", rep.Phase, f.stopped)
	}
}

// Every savepoint is proven after the network change and before any
// restart; a job whose savepoint fails the proof is not restarted once the
// operator skips it, the others are.
func TestWindowProvesSavepointsBeforeAnyRestart(t *testing.T) {
	f := newDrillFixture(t, 3)
	f.badProof["hdfs://nn/sp/savepoint-job-b"] = true
	in := windowInput()
	in.Policy.Network.Skip = true
	in.Policy.Drill.ProveSavepoints = true
	seen := false
	later(t, f.env, func() {
		st := f.status()
		if st.Phase != WindowPhaseProveSavepoints || st.Pending == nil || st.Pending.Kind != DecisionSavepointProof ||
			len(st.Pending.Jobs) != 1 || st.Pending.Jobs[0] != "cluster-b/job-b" || !strings.Contains(st.Pending.Reason, "/abc is missing") {
			t.Errorf("phase %s pending %+v; want the failed proof of cluster-b/job-b", st.Phase, st.Pending)
			return
		}
		f.mu.Lock()
		restarted := len(f.started)
		f.mu.Unlock()
		if restarted != 0 {
			t.Errorf("%d jobs restarted before the proof passed", restarted)
		}
		seen = true
		f.update(UpdateDecide, DecideRequest{Action: ActionSkipJob, Job: "cluster-b/job-b", By: "op", Reason: "restore by hand"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	rep := f.result()
	if !seen || len(f.proved) != 3 {
		t.Fatalf("seen %v, proved %v; want each savepoint proven once and a pause", seen, f.proved)
	}
	for _, j := range rep.Jobs {
		switch j.Target.Key {
		case "cluster-b/job-b":
			if j.ProofState != StepFailed || j.RestartState != StepSkipped || len(f.started[j.Target.Key]) != 0 ||
				!strings.Contains(j.SkipReason, "fails the storage proof") || !strings.Contains(j.SkipReason, "flinkmaint drill start --tier 1 --job cluster-b/job-b") {
				t.Errorf("broken savepoint's job %+v; want skipped, not restarted, with how to restore it", j)
			}
		default:
			if j.ProofState != StepDone || j.RestartState != StepDone {
				t.Errorf("%s proof %s restart %s; want both done", j.Target.Key, j.ProofState, j.RestartState)
			}
		}
	}
	if m := f.documents["hdfs://nn/flinkmaint/windows/w1/manifest.json"]; !strings.Contains(m, `"savepointProof": "failed"`) {
		t.Errorf("manifest lacks the proof verdicts:\n%s", m)
	}
}

// A job whose savepoint failed the proof and was skipped takes no place
// in the restart waves: the canary is a job that restarts, not one left
// stopped, which would let the rest go without a canary at all.
func TestWindowCanaryIsAJobThatRestartsAfterAProofSkip(t *testing.T) {
	f := newDrillFixture(t, 3)
	f.badProof["hdfs://nn/sp/savepoint-job-a"] = true
	in := windowInput()
	in.Policy.Network.Skip = true
	in.Policy.Drill.ProveSavepoints = true
	in.Policy.Restart.CanarySize = 1
	later(t, f.env, func() {
		f.update(UpdateDecide, DecideRequest{Action: ActionSkipJob, Job: "cluster-a/job-a", By: "op", Reason: "restore by hand"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	rep := f.result()
	waves := map[string]int{}
	for _, j := range rep.Jobs {
		waves[j.Target.Key] = j.RestartWave
	}
	if waves["cluster-a/job-c"] != 0 || waves["cluster-b/job-b"] != 1 || len(f.started["cluster-a/job-a"]) != 0 {
		t.Fatalf("restart waves %v, job-a started %v; want the canary cluster-a/job-c, then cluster-b/job-b, and job-a left stopped", waves, f.started["cluster-a/job-a"])
	}
	// Nor does the quota gate count the files its restart would write.
	var projected []string
	for _, r := range f.gateRestarts {
		projected = append(projected, r.Key)
	}
	if slices.Contains(projected, "cluster-a/job-a") || len(projected) != 2 {
		t.Errorf("the quota gate projected the restarts of %v; want job-b and job-c only", projected)
	}
}

// A canary drill that cannot be prepared (its selection finds no target)
// is a failed drill: the window pauses with the canary alone stopped.
func TestWindowPausesWhenTheCanaryDrillCannotBePrepared(t *testing.T) {
	f := newDrillFixture(t, 3, "cluster-a/job-a")
	f.noTarget = true
	seen := false
	later(t, f.env, func() {
		st := f.status()
		f.mu.Lock()
		stopped := len(f.stopped)
		f.mu.Unlock()
		if st.Pending == nil || st.Pending.Kind != DecisionCanaryDrill || !strings.Contains(st.Pending.Reason, "could not be prepared: no target") || stopped != 1 {
			t.Errorf("pending %+v after %d stops; want the canary drill's failure with the canary alone stopped", st.Pending, stopped)
			return
		}
		seen = true
		f.update(UpdateAbort, AbortRequest{By: "op", Reason: "no drill"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, canaryInput())
	if rep := f.result(); !seen || rep.Phase != WindowPhaseAborted || len(f.drills) != 0 {
		t.Fatalf("seen %v, phase %s, drills %v; want a pause, no drill run, then the abort", seen, rep.Phase, f.drills)
	}
}

// Only savepoints the window took are proven: a job whose savepoint was
// skipped has none.
func TestWindowProvesOnlyTheSavepointsItTook(t *testing.T) {
	f := newDrillFixture(t, 3)
	f.failStop["cluster-b/job-b"] = true
	in := windowInput()
	in.Policy.Network.Skip = true
	in.Policy.Drill.ProveSavepoints = true
	in.Policy.Savepoint.OnFailure = OnFailureSkip
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	f.result()
	if len(f.proved) != 2 || slices.Contains(f.proved, "") {
		t.Fatalf("proved %q; want the savepoints of job-a and job-c only", f.proved)
	}
}

// A proof that could not run is retried for every savepoint not yet
// proven, and a proof that answers for fewer savepoints than asked pauses
// the window: no job restarts from a savepoint nobody proved.
func TestWindowProvesEverySavepointBeforeARestart(t *testing.T) {
	t.Run("retried after an error", func(t *testing.T) {
		f := newDrillFixture(t, 3)
		f.proofErrors = 1
		in := windowInput()
		in.Policy.Network.Skip = true
		in.Policy.Drill.ProveSavepoints = true
		later(t, f.env, func() {
			if st := f.status(); st.Pending == nil || st.Pending.Kind != DecisionSavepointProof || !strings.Contains(st.Pending.Reason, "safe mode") {
				t.Errorf("pending %+v; want the failed proof", st.Pending)
			}
			f.update(UpdateDecide, DecideRequest{Action: ActionRetry, By: "op", Reason: "safe mode left"}, false)
		}, time.Hour)
		f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
		rep := f.result()
		for _, j := range rep.Jobs {
			if j.ProofState != StepDone || j.RestartState != StepDone {
				t.Errorf("%s proof %q restart %s; want proven, then restarted", j.Target.Key, j.ProofState, j.RestartState)
			}
		}
	})
	t.Run("an answer short of a savepoint", func(t *testing.T) {
		f := newDrillFixture(t, 3)
		f.shortProof = true
		in := windowInput()
		in.Policy.Network.Skip = true
		in.Policy.Drill.ProveSavepoints = true
		later(t, f.env, func() {
			f.mu.Lock()
			started := len(f.started)
			f.mu.Unlock()
			if st := f.status(); st.Pending == nil || st.Pending.Kind != DecisionSavepointProof ||
				!strings.Contains(st.Pending.Reason, "the proof answered for 2 of 3 savepoints") || started != 0 {
				t.Errorf("pending %+v after %d restarts; want the short proof named before any restart", st.Pending, started)
			}
			f.update(UpdateAbort, AbortRequest{By: "op", Reason: "proof broken"}, false)
		}, time.Hour)
		f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
		if rep := f.result(); rep.Phase != WindowPhaseAborted || len(f.started) != 0 {
			t.Fatalf("phase %s, started %v; want aborted with no restart", rep.Phase, f.started)
		}
	})
}

func TestWindowDrillPolicyValidation(t *testing.T) {
	for _, tc := range []struct {
		policy DrillPolicy
		want   string
	}{
		{DrillPolicy{CanaryJob: "cluster-a/job-a"}, "policy.drill.canary is false"},
		{DrillPolicy{Canary: true, CanaryJob: "job-a"}, `policy.drill.canaryJob="job-a": use cluster/name`},
		{DrillPolicy{Canary: true, Soak: Duration(-time.Second)}, "policy.drill.soak=-1s"},
	} {
		in := windowInput()
		in.Policy.Drill = tc.policy
		in.Policy.ApplyDefaults()
		if err := in.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("policy %+v: %v; want %q", tc.policy, err, tc.want)
		}
	}
	in := windowInput()
	in.Policy.Drill.Canary = true
	in.Policy.Restart.Soak = Duration(time.Minute)
	in.Policy.ApplyDefaults()
	if err := in.Validate(); err != nil || in.Policy.Drill.Soak.D() != time.Minute || in.Policy.Drill.RunningTimeout.D() != 5*time.Minute {
		t.Errorf("canary defaults %+v (%v); want the restart's health", in.Policy.Drill, err)
	}
}

// An operator may restart from a savepoint that failed its proof; the
// waiver is kept in the state, so a run that continues as new does not ask
// again.
func TestWindowRestartsFromAWaivedProof(t *testing.T) {
	f := newDrillFixture(t, 2)
	f.badProof["hdfs://nn/sp/savepoint-job-a"] = true
	in := windowInput()
	in.Policy.Network.Skip = true
	in.Policy.Drill.ProveSavepoints = true
	later(t, f.env, func() {
		f.update(UpdateDecide, DecideRequest{Action: ActionResume, By: "op", Reason: "the file is in the trash, restored by hand"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	rep := f.result()
	for _, j := range rep.Jobs {
		want := StepDone
		if j.Target.Key == "cluster-a/job-a" {
			want = ProofWaived
		}
		if j.ProofState != want || j.RestartState != StepDone {
			t.Errorf("%s proof %s restart %s; want proof %s, restarted", j.Target.Key, j.ProofState, j.RestartState, want)
		}
	}
}
