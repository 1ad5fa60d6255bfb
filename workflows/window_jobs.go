package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities"
)

// JobSavepointInput stops one job with a savepoint and verifies it.
type JobSavepointInput struct {
	WindowID  string               `json:"windowId"`
	Job       activities.JobTarget `json:"job"`
	Attempt   int                  `json:"attempt"`
	Format    string               `json:"format"`
	Timeout   Duration             `json:"timeout"`
	TargetDir string               `json:"targetDir,omitempty"`
}

// JobSavepointResult is the verified savepoint.
type JobSavepointResult struct {
	SavepointPath string `json:"savepointPath"`
	Files         int64  `json:"files"`
	CheckpointID  int64  `json:"checkpointId"`
}

// JobSavepointWorkflow stops a job with a savepoint (re-attaching on
// retries through a deterministic trigger ID) and verifies the savepoint's
// _metadata parses and every file it references exists.
func JobSavepointWorkflow(ctx workflow.Context, in JobSavepointInput) (JobSavepointResult, error) {
	var a *activities.Activities
	stop := activities.StopWithSavepointInput{
		Job: in.Job, TriggerID: flinkID(in.WindowID, in.Job.Key, "stop-with-savepoint", in.Attempt),
		TargetDir: in.TargetDir, Format: in.Format,
	}
	var stopped activities.StopWithSavepointResult
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, stopWithSavepointOptions(in.Timeout.D())),
		a.StopWithSavepoint, stop).Get(ctx, &stopped); err != nil {
		return JobSavepointResult{}, err
	}
	var verified activities.VerifySavepointResult
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, shortActivityOptions()),
		a.VerifySavepoint, activities.VerifySavepointInput{Path: stopped.SavepointPath}).Get(ctx, &verified); err != nil {
		return JobSavepointResult{SavepointPath: stopped.SavepointPath}, err
	}
	return JobSavepointResult{SavepointPath: stopped.SavepointPath, Files: verified.Files, CheckpointID: verified.CheckpointID}, nil
}

// JobRestartInput restores one job from its savepoint.
type JobRestartInput struct {
	WindowID      string               `json:"windowId"`
	Job           activities.JobTarget `json:"job"`
	Attempt       int                  `json:"attempt"`
	SavepointPath string               `json:"savepointPath"`
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
}

// JobRestartWorkflow restores a job from exactly its recorded savepoint
// and waits until it is healthy: RUNNING, restored from that savepoint, a
// completed checkpoint after the restore, no restart during the soak.
func JobRestartWorkflow(ctx workflow.Context, in JobRestartInput) (JobRestartResult, error) {
	var a *activities.Activities
	short := workflow.WithActivityOptions(ctx, shortActivityOptions())
	if in.PreviousJobID != "" {
		if err := workflow.ExecuteActivity(short, a.CancelJob,
			activities.CancelJobInput{RESTURL: in.Job.RESTURL, JobID: in.PreviousJobID}).Get(ctx, nil); err != nil {
			return JobRestartResult{}, err
		}
	}
	newJobID := flinkID(in.WindowID, in.Job.Key, "restart", in.Attempt)
	var started activities.RestartJobResult
	if err := workflow.ExecuteActivity(short, a.RestartJob, activities.RestartJobInput{
		Job: in.Job, SavepointPath: in.SavepointPath, NewJobID: newJobID,
	}).Get(ctx, &started); err != nil {
		return JobRestartResult{JobID: newJobID}, err
	}
	var healthy activities.AwaitHealthyResult
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, awaitHealthyOptions(in.Health)), a.AwaitHealthy,
		activities.AwaitHealthyInput{
			RESTURL: in.Job.RESTURL, JobID: started.JobID, SavepointPath: in.SavepointPath,
			RunningTimeout: in.Health.RunningTimeout.D(), CheckpointTimeout: in.Health.CheckpointTimeout.D(), Soak: in.Health.Soak.D(),
		}).Get(ctx, &healthy); err != nil {
		return JobRestartResult{JobID: started.JobID}, err
	}
	return JobRestartResult{JobID: started.JobID, RestoredFrom: healthy.RestoredFrom, CheckpointID: healthy.CheckpointID, CheckpointPath: healthy.CheckpointPath}, nil
}
