package workflows

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

const operatorJobID = "abababababababababababababababab"

// operatorFixture is a window over one REST job (cluster-a/job-a) and one
// Flink Kubernetes Operator job (cluster-b/job-b), recording what the
// operator activities were asked.
type operatorFixture struct {
	*windowFixture
	suspended map[string][]windows.SuspendJobInput
	resumed   map[string][]core.ResumeJobInput
	// failSuspend / failResume make the operator activities fail with
	// this error until cleared.
	failSuspend error
	failResume  error
}

func newOperatorFixture(t *testing.T) *operatorFixture {
	f := &operatorFixture{windowFixture: newWindowFixture(t, 2),
		suspended: map[string][]windows.SuspendJobInput{}, resumed: map[string][]core.ResumeJobInput{}}
	op := &f.jobs[1]
	if op.Key != "cluster-b/job-b" {
		t.Fatalf("fixture job 1 is %s, want cluster-b/job-b", op.Key)
	}
	op.Restart = inventory.RestartRecipe{Kind: inventory.RestartOperatorResume,
		Resource: &inventory.ObjectRef{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkDeployment", Namespace: "team-b", Name: "job-b"}}
	var a *windows.Activities
	f.env.OnActivity(a.ReadSavepointMarks, mock.Anything, mock.Anything).Return(
		core.OperatorSavepointMarks{UpgradeSavepointPath: "hdfs://nn/sp/savepoint-old"}, nil)
	f.env.OnActivity(a.SuspendJob, mock.Anything, mock.Anything).Return(func(_ context.Context, in windows.SuspendJobInput) (core.StopWithSavepointResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if in.Known == nil || in.Known.UpgradeSavepointPath != "hdfs://nn/sp/savepoint-old" {
			return core.StopWithSavepointResult{}, temporal.NewNonRetryableApplicationError("suspend without the savepoints known before it", "Test", nil)
		}
		f.suspended[in.Job.Key] = append(f.suspended[in.Job.Key], in)
		if f.failSuspend != nil {
			return core.StopWithSavepointResult{}, f.failSuspend
		}
		return core.StopWithSavepointResult{SavepointPath: "hdfs://nn/sp/savepoint-" + in.Job.JobName}, nil
	})
	f.env.OnActivity(a.ResumeJob, mock.Anything, mock.Anything).Return(func(_ context.Context, in core.ResumeJobInput) (core.RestartJobResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.resumed[in.Job.Key] = append(f.resumed[in.Job.Key], in)
		if f.failResume != nil {
			return core.RestartJobResult{}, f.failResume
		}
		return core.RestartJobResult{JobID: operatorJobID}, nil
	})
	return f
}

func TestWindowOperatorJobIsSuspendedAndResumedThroughTheOperator(t *testing.T) {
	f := newOperatorFixture(t)
	in := windowInput()
	in.Policy.Network.Skip = true
	in.Policy.Savepoint.Timeout = Duration(7 * time.Minute)
	in.Policy.Restart.RunningTimeout = Duration(3 * time.Minute)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	rep := f.result()

	if rep.Phase != WindowPhaseCompleted || len(rep.Jobs) != 2 {
		t.Fatalf("phase %s, %d jobs", rep.Phase, len(rep.Jobs))
	}
	const rest, op = "cluster-a/job-a", "cluster-b/job-b"
	if f.stopped[op] != 0 || len(f.started[op]) != 0 {
		t.Errorf("operator job went through REST: %d stop-with-savepoint, restarts %v", f.stopped[op], f.started[op])
	}
	if f.stopped[rest] != 1 || len(f.started[rest]) != 1 || len(f.suspended[rest]) != 0 || len(f.resumed[rest]) != 0 {
		t.Errorf("REST job: %d stops, restarts %v, %d suspends, %d resumes; want 1 stop, 1 restart, no operator calls",
			f.stopped[rest], f.started[rest], len(f.suspended[rest]), len(f.resumed[rest]))
	}
	if s := f.suspended[op]; len(s) != 1 || s[0].Timeout != 7*time.Minute || s[0].Job.Restart.Resource == nil || s[0].Job.Restart.Resource.Name != "job-b" {
		t.Fatalf("operator job suspends %+v, want one with the savepoint timeout and the resource", s)
	}
	for _, j := range rep.Jobs {
		if j.SavepointState != StepDone || j.RestartState != StepDone {
			t.Errorf("%s: savepoint %s restart %s", j.Target.Key, j.SavepointState, j.RestartState)
		}
		if j.Target.Key != op {
			continue
		}
		if j.SavepointPath != "hdfs://nn/sp/savepoint-job-b" {
			t.Errorf("operator job savepoint %q, want the one the operator recorded", j.SavepointPath)
		}
		r := f.resumed[op]
		if len(r) != 1 || r[0].SavepointPath != j.SavepointPath || r[0].Timeout != 3*time.Minute {
			t.Errorf("operator job resumes %+v, want one from %s with the running timeout", r, j.SavepointPath)
		}
		if j.NewJobID != operatorJobID || j.RestoredFrom != j.SavepointPath {
			t.Errorf("operator job new ID %q restored from %q; want the operator's %s from %s", j.NewJobID, j.RestoredFrom, operatorJobID, j.SavepointPath)
		}
	}
	if len(f.cancelled) != 0 {
		t.Errorf("cancelled %v, want none", f.cancelled)
	}
}

// TestWindowOperatorJobRetryResumesAgainWithoutRESTCancel: after a failed
// resume an operator job is retried through the operator, never cancelled
// through REST.
func TestWindowOperatorJobRetryResumesAgainWithoutRESTCancel(t *testing.T) {
	f := newOperatorFixture(t)
	f.failResume = temporal.NewNonRetryableApplicationError("no job RUNNING after 5m", core.ErrTypeOperatorTimeout, nil)
	in := windowInput()
	in.Policy.Network.Skip = true
	var paused bool
	later(t, f.env, func() {
		st := f.status()
		if st.Pending == nil || len(st.Pending.Jobs) != 1 || st.Pending.Jobs[0] != "cluster-b/job-b" {
			t.Errorf("pending %+v, want a decision on cluster-b/job-b", st.Pending)
			return
		}
		paused = true
		f.mu.Lock()
		f.failResume = nil
		f.mu.Unlock()
		f.update(UpdateDecide, DecideRequest{Action: ActionRetryJob, Job: "cluster-b/job-b", By: "carol"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	rep := f.result()
	if !paused {
		t.Fatal("window never paused for the failed resume")
	}
	if len(f.resumed["cluster-b/job-b"]) != 2 || len(f.cancelled) != 0 || len(f.started["cluster-b/job-b"]) != 0 {
		t.Fatalf("resumes %d, REST cancels %v, REST restarts %v; want 2 resumes and no REST calls",
			len(f.resumed["cluster-b/job-b"]), f.cancelled, f.started["cluster-b/job-b"])
	}
	for _, j := range rep.Jobs {
		if j.RestartState != StepDone {
			t.Errorf("%s: restart %s", j.Target.Key, j.RestartState)
		}
	}
}

// TestWindowOperatorSuspendTimeoutSkipsJob: an operator that never
// suspends fails the savepoint step; with onFailure skip the job is
// neither resumed nor restarted.
func TestWindowOperatorSuspendTimeoutSkipsJob(t *testing.T) {
	f := newOperatorFixture(t)
	f.failSuspend = temporal.NewNonRetryableApplicationError("suspend FlinkDeployment team-b/job-b: no job SUSPENDED", core.ErrTypeOperatorTimeout, nil)
	in := windowInput()
	in.Policy.Network.Skip = true
	in.Policy.Savepoint.OnFailure = OnFailureSkip
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	rep := f.result()
	for _, j := range rep.Jobs {
		if j.Target.Key != "cluster-b/job-b" {
			if j.RestartState != StepDone {
				t.Errorf("%s: restart %s", j.Target.Key, j.RestartState)
			}
			continue
		}
		if j.SavepointState != StepSkipped || !strings.Contains(j.SavepointError, "team-b/job-b") {
			t.Errorf("operator job %+v, want skipped with the timeout naming the resource", j)
		}
	}
	if len(f.suspended["cluster-b/job-b"]) != 1 || len(f.resumed["cluster-b/job-b"]) != 0 || f.stopped["cluster-b/job-b"] != 0 {
		t.Fatalf("suspends %d resumes %d REST stops %d; want 1, 0, 0 (non-retryable timeout)",
			len(f.suspended["cluster-b/job-b"]), len(f.resumed["cluster-b/job-b"]), f.stopped["cluster-b/job-b"])
	}
}

// The operator fell back to last-state instead of taking the savepoint:
// the window does not report success, it pauses for a decision, and says
// the job no longer runs (it is suspended without a savepoint of this
// window) rather than that it keeps running.
func TestWindowOperatorLastStateFallbackPausesForADecision(t *testing.T) {
	f := newOperatorFixture(t)
	f.failSuspend = temporal.NewNonRetryableApplicationError("suspend FlinkDeployment team-b/job-b: the operator suspended the job with upgradeMode last-state",
		core.ErrTypeOperatorLastStateFallback, nil)
	in := windowInput()
	in.Policy.Network.Skip = true
	paused := false
	later(t, f.env, func() {
		st := f.status()
		if st.Pending == nil || st.Pending.Kind != DecisionSavepointFailures || !strings.Contains(st.Pending.Reason, "last-state") {
			t.Errorf("pending %+v; want a savepoint-failures decision naming the fallback", st.Pending)
			return
		}
		paused = true
		f.update(UpdateDecide, DecideRequest{Action: ActionSkipJob, Job: "cluster-b/job-b", By: "ops", Reason: "resume by hand"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	rep := f.result()
	if !paused {
		t.Fatal("the window did not pause for the fallback")
	}
	for _, j := range rep.Jobs {
		if j.Target.Key == "cluster-b/job-b" && (!j.StoppedWithoutSavepoint || !strings.Contains(j.SkipReason, "no longer running") || len(f.resumed[j.Target.Key]) != 0) {
			t.Errorf("operator job %+v (resumes %d); want skipped, not running, not resumed", j, len(f.resumed[j.Target.Key]))
		}
	}
}
