package core

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// OperatorJobs drives jobs that the Flink Kubernetes Operator runs.
type OperatorJobs struct {
	Operator OperatorControl
	// PollInterval is how often a wait on the operator heartbeats.
	PollInterval time.Duration
}

// Start starts a suspended operator job from
// in.SavepointPath with start (Resume or Redeploy), heartbeating while the
// operator works, and returns the job ID it reports.
func (o OperatorJobs) Start(ctx context.Context, in ResumeJobInput, verb string,
	start func(context.Context, inventory.ObjectRef, string, OperatorWait) (OperatorResumeResult, error)) (RestartJobResult, error) {
	ref, err := o.Ref(in.Job, in.Timeout)
	if err != nil {
		return RestartJobResult{}, err
	}
	if in.SavepointPath == "" {
		return RestartJobResult{}, NonRetryable(ErrTypeInvalidInput, "job %s: savepointPath is empty; %s needs the savepoint to start from", in.Job.Key, verb)
	}
	what := fmt.Sprintf("%s %s %s/%s of job %s from %s", verb, ref.Kind, ref.Namespace, ref.Name, in.Job.Key, in.SavepointPath)
	var res OperatorResumeResult
	var st OperatorJobStatus
	err = HeartbeatWhile(ctx, PollInterval(o.PollInterval), "waiting for the operator to "+verb+" "+in.Job.Key, func(ctx context.Context) error {
		var err error
		if res, err = start(ctx, ref, in.SavepointPath, OperatorWait{Timeout: in.Timeout, PollInterval: o.PollInterval}); err != nil {
			return err
		}
		st, err = o.Operator.OperatorStatus(ctx, ref)
		return err
	})
	if err != nil {
		return RestartJobResult{}, Classify(what, err)
	}
	if st.JobID == "" {
		// The operator writes the job ID with RUNNING; a retry reads it again.
		return RestartJobResult{}, temporal.NewApplicationError(
			fmt.Sprintf("%s: the operator reports the job %s but no status.jobStatus.jobId", what, st.JobState), ErrTypeOperatorUnavailable)
	}
	activity.GetLogger(ctx).Info("operator job started", "verb", verb, "job", in.Job.Key, "resource", ref.Namespace+"/"+ref.Name,
		"savepoint", in.SavepointPath, "job_id", st.JobID, "already_running", res.AlreadyRunning, "set_initial_savepoint", res.SetInitialSavepointPath)
	return RestartJobResult{JobID: st.JobID, Reattached: res.AlreadyRunning}, nil
}

// Ref checks the job is operator-managed and names its resource.
func (o OperatorJobs) Ref(job JobTarget, timeout time.Duration) (inventory.ObjectRef, error) {
	if o.Operator == nil {
		return inventory.ObjectRef{}, NonRetryable(ErrTypeInventory,
			"job %s: restart kind %q needs the Flink Kubernetes Operator, but this worker has no Kubernetes inventory configured (inventory.kubernetes)",
			job.Key, inventory.RestartOperatorResume)
	}
	if job.Restart.Kind != inventory.RestartOperatorResume {
		return inventory.ObjectRef{}, NonRetryable(ErrTypeInvalidInput, "job %s: restart kind %q is not %q; REST jobs are stopped and restarted through Flink's REST API",
			job.Key, job.Restart.Kind, inventory.RestartOperatorResume)
	}
	if job.Restart.Resource == nil {
		return inventory.ObjectRef{}, NonRetryable(ErrTypeInvalidInput, "job %s: restart.resource is missing; %q needs the FlinkDeployment or FlinkSessionJob to control",
			job.Key, inventory.RestartOperatorResume)
	}
	if timeout < 0 {
		return inventory.ObjectRef{}, NonRetryable(ErrTypeInvalidInput, "job %s: timeout %s is negative; use a positive duration or 0 for the default", job.Key, timeout)
	}
	return *job.Restart.Resource, nil
}
