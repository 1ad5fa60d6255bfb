package activities

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// ReadSavepointMarksInput names the job whose resource is read.
type ReadSavepointMarksInput struct {
	Job core.JobTarget
}

// ReadSavepointMarks records, before a suspend, which savepoints the
// operator already reports for the job's resource. The workflow passes them
// to every SuspendJob attempt, so a retry that finds the resource already
// suspended never mistakes an older savepoint for the one it asked for.
func (a *Activities) ReadSavepointMarks(ctx context.Context, in ReadSavepointMarksInput) (core.OperatorSavepointMarks, error) {
	ref, err := a.operatorRef(in.Job, 0)
	if err != nil {
		return core.OperatorSavepointMarks{}, err
	}
	m, err := a.Operator.SavepointMarks(ctx, ref)
	if err != nil {
		return core.OperatorSavepointMarks{}, core.Classify(fmt.Sprintf("read savepoints of %s %s/%s", ref.Kind, ref.Namespace, ref.Name), err)
	}
	return m, nil
}

// SuspendJobInput suspends an operator-managed job with a savepoint.
// Timeout bounds the wait for the operator; zero is the adapter default.
type SuspendJobInput struct {
	Job     core.JobTarget
	Timeout time.Duration
	// Known are the savepoint records read before the first attempt
	// (ReadSavepointMarks); nil accepts any savepoint recorded once the
	// resource is suspended.
	Known *core.OperatorSavepointMarks
	// RunID names the window, recorded in the savepoint catalog.
	RunID string `json:",omitempty"`
}

// ResumeJobInput resumes an operator-managed job from SavepointPath, the
// savepoint SuspendJob returned. Timeout bounds the wait for RUNNING.
type ResumeJobInput struct {
	Job           core.JobTarget
	SavepointPath string
	Timeout       time.Duration
}

// SuspendJob suspends a Flink Kubernetes Operator job (spec.job.state
// suspended, upgradeMode savepoint) and returns the savepoint the operator
// recorded: that is the one it restores from on resume. A retry finds the
// resource already suspended and returns the same recorded savepoint
// without changing the spec again (Reattached).
func (a *Activities) SuspendJob(ctx context.Context, in SuspendJobInput) (StopWithSavepointResult, error) {
	ref, err := a.operatorRef(in.Job, in.Timeout)
	if err != nil {
		return StopWithSavepointResult{}, err
	}
	what := fmt.Sprintf("suspend %s %s/%s of job %s", ref.Kind, ref.Namespace, ref.Name, in.Job.Key)
	var res core.OperatorSuspendResult
	err = core.HeartbeatWhile(ctx, core.PollInterval(a.PollInterval), "waiting for the operator to suspend "+in.Job.Key, func(ctx context.Context) error {
		var err error
		res, err = a.Operator.Suspend(ctx, ref, core.OperatorWait{Timeout: in.Timeout, PollInterval: a.PollInterval, Known: in.Known})
		return err
	})
	if err != nil {
		return StopWithSavepointResult{}, core.Classify(what, err)
	}
	if res.SavepointPath == "" {
		return StopWithSavepointResult{}, core.NonRetryable(core.ErrTypeSavepointInvalid, "%s: the operator reported the job %s without a savepoint location", what, res.JobState)
	}
	activity.GetLogger(ctx).Info("operator job suspended", "job", in.Job.Key, "resource", ref.Namespace+"/"+ref.Name,
		"savepoint", res.SavepointPath, "source", res.SavepointSource, "already_suspended", res.AlreadySuspended)
	a.catalogSavepoint(ctx, in.Job, catalog.Entry{Path: res.SavepointPath, Trigger: catalog.TriggerWindow, RunID: in.RunID})
	return StopWithSavepointResult{SavepointPath: res.SavepointPath, Reattached: res.AlreadySuspended}, nil
}

// ResumeJob sets an operator-managed job running again from exactly
// SavepointPath and returns the Flink job ID the operator reports once the
// job is RUNNING. The operator refuses (non-retryable) when it recorded a
// different savepoint. A retry finds the job already running and only
// reads its ID (Reattached).
func (a *Activities) ResumeJob(ctx context.Context, in ResumeJobInput) (RestartJobResult, error) {
	// A closure, not the method value: a.Operator may be nil, which
	// operatorRef reports.
	return a.startThroughOperator(ctx, in, "resume", func(ctx context.Context, ref inventory.ObjectRef, sp string, w core.OperatorWait) (core.OperatorResumeResult, error) {
		return a.Operator.Resume(ctx, ref, sp, w)
	})
}

// startThroughOperator starts a suspended operator job from
// in.SavepointPath with start (Resume or Redeploy), heartbeating while the
// operator works, and returns the job ID it reports.
func (a *Activities) startThroughOperator(ctx context.Context, in ResumeJobInput, verb string,
	start func(context.Context, inventory.ObjectRef, string, core.OperatorWait) (core.OperatorResumeResult, error)) (RestartJobResult, error) {
	ref, err := a.operatorRef(in.Job, in.Timeout)
	if err != nil {
		return RestartJobResult{}, err
	}
	if in.SavepointPath == "" {
		return RestartJobResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "job %s: savepointPath is empty; %s needs the savepoint to start from", in.Job.Key, verb)
	}
	what := fmt.Sprintf("%s %s %s/%s of job %s from %s", verb, ref.Kind, ref.Namespace, ref.Name, in.Job.Key, in.SavepointPath)
	var res core.OperatorResumeResult
	var st core.OperatorJobStatus
	err = core.HeartbeatWhile(ctx, core.PollInterval(a.PollInterval), "waiting for the operator to "+verb+" "+in.Job.Key, func(ctx context.Context) error {
		var err error
		if res, err = start(ctx, ref, in.SavepointPath, core.OperatorWait{Timeout: in.Timeout, PollInterval: a.PollInterval}); err != nil {
			return err
		}
		st, err = a.Operator.OperatorStatus(ctx, ref)
		return err
	})
	if err != nil {
		return RestartJobResult{}, core.Classify(what, err)
	}
	if st.JobID == "" {
		// The operator writes the job ID with RUNNING; a retry reads it again.
		return RestartJobResult{}, temporal.NewApplicationError(
			fmt.Sprintf("%s: the operator reports the job %s but no status.jobStatus.jobId", what, st.JobState), core.ErrTypeOperatorUnavailable)
	}
	activity.GetLogger(ctx).Info("operator job started", "verb", verb, "job", in.Job.Key, "resource", ref.Namespace+"/"+ref.Name,
		"savepoint", in.SavepointPath, "job_id", st.JobID, "already_running", res.AlreadyRunning, "set_initial_savepoint", res.SetInitialSavepointPath)
	return RestartJobResult{JobID: st.JobID, Reattached: res.AlreadyRunning}, nil
}

// operatorRef checks the job is operator-managed and names its resource.
func (a *Activities) operatorRef(job core.JobTarget, timeout time.Duration) (inventory.ObjectRef, error) {
	if a.Operator == nil {
		return inventory.ObjectRef{}, core.NonRetryable(core.ErrTypeInventory,
			"job %s: restart kind %q needs the Flink Kubernetes Operator, but this worker has no Kubernetes inventory configured (inventory.kubernetes)",
			job.Key, inventory.RestartOperatorResume)
	}
	if job.Restart.Kind != inventory.RestartOperatorResume {
		return inventory.ObjectRef{}, core.NonRetryable(core.ErrTypeInvalidInput, "job %s: restart kind %q is not %q; REST jobs are stopped and restarted through Flink's REST API",
			job.Key, job.Restart.Kind, inventory.RestartOperatorResume)
	}
	if job.Restart.Resource == nil {
		return inventory.ObjectRef{}, core.NonRetryable(core.ErrTypeInvalidInput, "job %s: restart.resource is missing; %q needs the FlinkDeployment or FlinkSessionJob to control",
			job.Key, inventory.RestartOperatorResume)
	}
	if timeout < 0 {
		return inventory.ObjectRef{}, core.NonRetryable(core.ErrTypeInvalidInput, "job %s: timeout %s is negative; use a positive duration or 0 for the default", job.Key, timeout)
	}
	return *job.Restart.Resource, nil
}

// OperatorSpecChangeInput is an upgrade's change to an operator job's spec.
type OperatorSpecChangeInput struct {
	Job    core.JobTarget
	Change inventory.JobSpecChange
}

// ReadSpecInverse reads what undoes an upgrade's spec change, before the
// job is stopped: the upgrade records it, so a rollback undoes the change
// even when the worker that applied it died before it could say.
func (a *Activities) ReadSpecInverse(ctx context.Context, in OperatorSpecChangeInput) (inventory.JobSpecChange, error) {
	ref, err := a.operatorRef(in.Job, 0)
	if err != nil {
		return inventory.JobSpecChange{}, err
	}
	if in.Change.Empty() {
		return inventory.JobSpecChange{}, core.NonRetryable(core.ErrTypeInvalidInput, "job %s: the spec change is empty: give the new image, jarURI, args, parallelism or flinkConfiguration", in.Job.Key)
	}
	inv, err := a.Operator.SpecChangeInverse(ctx, ref, in.Change)
	if err != nil {
		return inventory.JobSpecChange{}, core.Classify(fmt.Sprintf("read the spec of %s %s/%s", ref.Kind, ref.Namespace, ref.Name), err)
	}
	return inv, nil
}

// ChangeOperatorSpec applies an upgrade's change (or its inverse) to a
// suspended operator job; applying it again changes nothing.
func (a *Activities) ChangeOperatorSpec(ctx context.Context, in OperatorSpecChangeInput) error {
	ref, err := a.operatorRef(in.Job, 0)
	if err != nil {
		return err
	}
	if _, err := a.Operator.ChangeJobSpec(ctx, ref, in.Change); err != nil {
		return core.Classify(fmt.Sprintf("change the spec of %s %s/%s", ref.Kind, ref.Namespace, ref.Name), err)
	}
	return nil
}

// RedeployJob starts a suspended operator job from exactly SavepointPath,
// whatever savepoint the operator recorded since (a rollback restores the
// previous version from the savepoint taken before the upgrade).
func (a *Activities) RedeployJob(ctx context.Context, in ResumeJobInput) (RestartJobResult, error) {
	return a.startThroughOperator(ctx, in, "redeploy", func(ctx context.Context, ref inventory.ObjectRef, sp string, w core.OperatorWait) (core.OperatorResumeResult, error) {
		return a.Operator.Redeploy(ctx, ref, sp, w)
	})
}

// DiscardJobInput names an operator job a rollback ends without a
// savepoint.
type DiscardJobInput struct {
	Job     core.JobTarget
	Timeout time.Duration
}

// DiscardJob suspends an operator job without a savepoint and waits until
// it stopped: a rollback's last resort for a new version whose savepoint
// failed. Safe to retry: a suspended job is left as it is.
func (a *Activities) DiscardJob(ctx context.Context, in DiscardJobInput) error {
	ref, err := a.operatorRef(in.Job, in.Timeout)
	if err != nil {
		return err
	}
	err = core.HeartbeatWhile(ctx, core.PollInterval(a.PollInterval), "waiting for the operator to stop "+in.Job.Key, func(ctx context.Context) error {
		_, err := a.Operator.Discard(ctx, ref, core.OperatorWait{Timeout: in.Timeout, PollInterval: a.PollInterval})
		return err
	})
	return core.Classify(fmt.Sprintf("stop %s %s/%s of job %s without a savepoint", ref.Kind, ref.Namespace, ref.Name, in.Job.Key), err)
}
