package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// defaultOperatorWait bounds an operator suspend or resume when the input
// sets no timeout (the window always sets one).
const defaultOperatorWait = 10 * time.Minute

func operatorWait(d time.Duration) time.Duration {
	if d <= 0 {
		return defaultOperatorWait
	}
	return d
}

// operatorWaitOptions: the activity waits up to wait for the operator and
// fails with a timeout of its own, so the start-to-close timeout leaves
// room for the API calls around the wait; the heartbeat notices a lost
// worker, whose retry re-reads the resource (suspend and resume are
// idempotent).
func operatorWaitOptions(wait time.Duration) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: wait + 2*time.Minute,
		HeartbeatTimeout:    30 * time.Second,
		RetryPolicy:         standardRetry(5),
	}
}

// JobSavepointInput stops one job with a savepoint and verifies it.
type JobSavepointInput struct {
	WindowID  string         `json:"windowId"`
	Job       core.JobTarget `json:"job"`
	Attempt   int            `json:"attempt"`
	Format    string         `json:"format"`
	Timeout   Duration       `json:"timeout"`
	TargetDir string         `json:"targetDir,omitempty"`
	// Drain stops the job with drain (REST jobs only).
	Drain bool `json:"drain,omitempty"`
}

// JobSavepointResult is the verified savepoint.
type JobSavepointResult struct {
	SavepointPath string `json:"savepointPath"`
	Files         int64  `json:"files"`
	CheckpointID  int64  `json:"checkpointId"`
	// Recovered says how the savepoint was found when Flink had forgotten
	// the stop operation; empty when Flink reported it.
	Recovered string `json:"recovered,omitempty"`
	// FormatNote says why the savepoint's format is not the one asked for
	// (a ForSt job takes NATIVE only).
	FormatNote string `json:"formatNote,omitempty"`
}

// JobSavepointWorkflow stops a job with a savepoint (re-attaching on
// retries through a deterministic trigger ID) and verifies the savepoint's
// _metadata parses and every file it references exists.
//
// An Operator-managed job (restart kind operator-resume) is suspended
// through its FlinkDeployment / FlinkSessionJob instead; the savepoint the
// operator records is the job's savepoint. No recorded history holds an
// operator job, so the branch needs no workflow.GetVersion: REST jobs keep
// their command sequence.
func JobSavepointWorkflow(ctx workflow.Context, in JobSavepointInput) (JobSavepointResult, error) {
	var a *windows.Activities
	var stopped core.StopWithSavepointResult
	if in.Job.Restart.Kind == inventory.RestartOperatorResume {
		// What the operator reports before we ask: every suspend attempt
		// then waits for a savepoint newer than this, even when a retry
		// finds the resource already suspended by the attempt before it.
		var known core.OperatorSavepointMarks
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, shortActivityOptions()),
			a.ReadSavepointMarks, windows.ReadSavepointMarksInput{Job: in.Job}).Get(ctx, &known); err != nil {
			return JobSavepointResult{}, err
		}
		wait := operatorWait(in.Timeout.D())
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, operatorWaitOptions(wait)),
			a.SuspendJob, windows.SuspendJobInput{Job: in.Job, Timeout: wait, Known: &known, RunID: in.WindowID}).Get(ctx, &stopped); err != nil {
			return JobSavepointResult{}, err
		}
	} else {
		stop := core.StopWithSavepointInput{
			Job: in.Job, TriggerID: flinkID(in.WindowID, in.Job.Key, "stop-with-savepoint", in.Attempt),
			TargetDir: in.TargetDir, Format: in.Format, RunID: in.WindowID, Drain: in.Drain,
		}
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, stopWithSavepointOptions(in.Timeout.D())),
			a.StopWithSavepoint, stop).Get(ctx, &stopped); err != nil {
			return JobSavepointResult{}, err
		}
	}
	var verified windows.VerifySavepointResult
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, shortActivityOptions()),
		a.VerifySavepoint, windows.VerifySavepointInput{Path: stopped.SavepointPath}).Get(ctx, &verified); err != nil {
		return JobSavepointResult{SavepointPath: stopped.SavepointPath}, err
	}
	return JobSavepointResult{SavepointPath: stopped.SavepointPath, Files: verified.Files, CheckpointID: verified.CheckpointID,
		Recovered: stopped.Recovered, FormatNote: stopped.FormatNote}, nil
}

// changeCancelEveryEarlierAttempt versions cancelling the job of every
// earlier attempt before a restart, not only PreviousJobID.
const changeCancelEveryEarlierAttempt = "restart-cancels-every-earlier-attempt-2026-12-01"

// earlierAttempts are the jobs to cancel before this attempt starts its
// own, so that two instances never run: PreviousJobID, and the job of
// every earlier attempt of this restart. An attempt whose cancel failed
// never started a job, and the one it was to cancel may still run: the
// caller's PreviousJobID then names the attempt that started nothing.
// Cancelling a job Flink does not know is a no-op.
func earlierAttempts(ctx workflow.Context, in JobRestartInput) []string {
	var ids []string
	if in.PreviousJobID != "" {
		ids = append(ids, in.PreviousJobID)
	}
	if workflow.GetVersion(ctx, changeCancelEveryEarlierAttempt, workflow.DefaultVersion, 1) < 1 {
		return ids
	}
	for n := 1; n < in.Attempt; n++ {
		if id := flinkID(in.WindowID, in.Job.Key, "restart", n); id != in.PreviousJobID {
			ids = append(ids, id)
		}
	}
	return ids
}

// JobRestartInput restores one job from its savepoint.
type JobRestartInput struct {
	WindowID      string         `json:"windowId"`
	Job           core.JobTarget `json:"job"`
	Attempt       int            `json:"attempt"`
	SavepointPath string         `json:"savepointPath"`
	// PreviousJobID is the job of a failed earlier attempt, cancelled first
	// so two instances never run.
	PreviousJobID string        `json:"previousJobId,omitempty"`
	Health        RestartPolicy `json:"health"`
}

// JobRestartResult is the healthy restarted job.
type JobRestartResult struct {
	JobID          string `json:"jobId"`
	RestoredFrom   string `json:"restoredFrom"`
	CheckpointID   int64  `json:"checkpointId"`
	CheckpointPath string `json:"checkpointPath"`
	// Readings are the health checks' metric values.
	Readings []windows.MetricReading `json:"readings,omitempty"`
}

// restartResult is a started job's proof of health.
func restartResult(jobID string, h windows.AwaitHealthyResult) JobRestartResult {
	return JobRestartResult{JobID: jobID, RestoredFrom: h.RestoredFrom, CheckpointID: h.CheckpointID, CheckpointPath: h.CheckpointPath, Readings: h.Readings}
}

// JobRestartWorkflow restores a job from exactly its recorded savepoint
// and waits until it is healthy: RUNNING, restored from that savepoint, a
// completed checkpoint after the restore, no restart during the soak.
//
// An Operator-managed job is resumed through its resource from exactly the
// savepoint recorded at suspend; the operator names the new job ID. It is
// never cancelled through REST: the operator runs at most one instance of
// the resource's job, and a retried resume finds it running.
func JobRestartWorkflow(ctx workflow.Context, in JobRestartInput) (JobRestartResult, error) {
	var a *windows.Activities
	var started core.RestartJobResult
	if in.Job.Restart.Kind == inventory.RestartOperatorResume {
		wait := operatorWait(in.Health.RunningTimeout.D())
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, operatorWaitOptions(wait)), a.ResumeJob,
			core.ResumeJobInput{Job: in.Job, SavepointPath: in.SavepointPath, Timeout: wait}).Get(ctx, &started); err != nil {
			return JobRestartResult{}, err
		}
	} else {
		short := workflow.WithActivityOptions(ctx, shortActivityOptions())
		for _, id := range earlierAttempts(ctx, in) {
			if err := workflow.ExecuteActivity(short, a.CancelJob,
				core.CancelJobInput{RESTURL: in.Job.RESTURL, JobID: id}).Get(ctx, nil); err != nil {
				return JobRestartResult{}, err
			}
		}
		newJobID := flinkID(in.WindowID, in.Job.Key, "restart", in.Attempt)
		if err := workflow.ExecuteActivity(short, a.RestartJob, windows.RestartJobInput{
			Job: in.Job, SavepointPath: in.SavepointPath, NewJobID: newJobID,
		}).Get(ctx, &started); err != nil {
			return JobRestartResult{JobID: newJobID}, err
		}
	}
	var healthy windows.AwaitHealthyResult
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, awaitHealthyOptions(in.Health)), a.AwaitHealthy,
		in.Health.awaitHealthy(in.Job.RESTURL, started.JobID, in.SavepointPath)).Get(ctx, &healthy); err != nil {
		return JobRestartResult{JobID: started.JobID}, err
	}
	return restartResult(started.JobID, healthy), nil
}
