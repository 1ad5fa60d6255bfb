package activities

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// The operator's control model (internal/inventory), which the kube
// adapter fills: OperatorWait bounds a wait, OperatorSavepointMarks are a
// resource's savepoint records at one moment (carried in SuspendJobInput),
// and the results say what a suspend, a resume or a status read found.
type (
	OperatorWait           = inventory.OperatorWait
	OperatorSavepointMarks = inventory.SavepointMarks
	OperatorSuspendResult  = inventory.SuspendResult
	OperatorResumeResult   = inventory.ResumeResult
	OperatorJobStatus      = inventory.OperatorStatus
)

// ReadSavepointMarksInput names the job whose resource is read.
type ReadSavepointMarksInput struct {
	Job JobTarget
}

// ReadSavepointMarks records, before a suspend, which savepoints the
// operator already reports for the job's resource. The workflow passes them
// to every SuspendJob attempt, so a retry that finds the resource already
// suspended never mistakes an older savepoint for the one it asked for.
func (a *Activities) ReadSavepointMarks(ctx context.Context, in ReadSavepointMarksInput) (OperatorSavepointMarks, error) {
	ref, err := a.operatorRef(in.Job, 0)
	if err != nil {
		return OperatorSavepointMarks{}, err
	}
	m, err := a.Operator.SavepointMarks(ctx, ref)
	if err != nil {
		return OperatorSavepointMarks{}, classify(fmt.Sprintf("read savepoints of %s %s/%s", ref.Kind, ref.Namespace, ref.Name), err)
	}
	return m, nil
}

// OperatorError is an OperatorControl failure with its classification:
// Reason is one of the ErrTypeOperator* (or ErrTypeInvalidInput) values,
// Retryable whether trying the same call again may succeed. Err keeps the
// adapter's error, so errors.Is against its sentinels still works.
type OperatorError struct {
	Reason    string
	Retryable bool
	Err       error
}

func (e *OperatorError) Error() string { return e.Err.Error() }

func (e *OperatorError) Unwrap() error { return e.Err }

// SuspendJobInput suspends an operator-managed job with a savepoint.
// Timeout bounds the wait for the operator; zero is the adapter default.
type SuspendJobInput struct {
	Job     JobTarget
	Timeout time.Duration
	// Known are the savepoint records read before the first attempt
	// (ReadSavepointMarks); nil accepts any savepoint recorded once the
	// resource is suspended.
	Known *OperatorSavepointMarks
	// RunID names the window, recorded in the savepoint catalog.
	RunID string `json:",omitempty"`
}

// ResumeJobInput resumes an operator-managed job from SavepointPath, the
// savepoint SuspendJob returned. Timeout bounds the wait for RUNNING.
type ResumeJobInput struct {
	Job           JobTarget
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
	var res OperatorSuspendResult
	err = heartbeatWhile(ctx, pollEvery(a.PollInterval), "waiting for the operator to suspend "+in.Job.Key, func(ctx context.Context) error {
		var err error
		res, err = a.Operator.Suspend(ctx, ref, OperatorWait{Timeout: in.Timeout, PollInterval: a.PollInterval, Known: in.Known})
		return err
	})
	if err != nil {
		return StopWithSavepointResult{}, classify(what, err)
	}
	if res.SavepointPath == "" {
		return StopWithSavepointResult{}, nonRetryable(ErrTypeSavepointInvalid, "%s: the operator reported the job %s without a savepoint location", what, res.JobState)
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
	return a.startThroughOperator(ctx, in, "resume", func(ctx context.Context, ref inventory.ObjectRef, sp string, w OperatorWait) (OperatorResumeResult, error) {
		return a.Operator.Resume(ctx, ref, sp, w)
	})
}

// startThroughOperator starts a suspended operator job from
// in.SavepointPath with start (Resume or Redeploy), heartbeating while the
// operator works, and returns the job ID it reports.
func (a *Activities) startThroughOperator(ctx context.Context, in ResumeJobInput, verb string,
	start func(context.Context, inventory.ObjectRef, string, OperatorWait) (OperatorResumeResult, error)) (RestartJobResult, error) {
	ref, err := a.operatorRef(in.Job, in.Timeout)
	if err != nil {
		return RestartJobResult{}, err
	}
	if in.SavepointPath == "" {
		return RestartJobResult{}, nonRetryable(ErrTypeInvalidInput, "job %s: savepointPath is empty; %s needs the savepoint to start from", in.Job.Key, verb)
	}
	what := fmt.Sprintf("%s %s %s/%s of job %s from %s", verb, ref.Kind, ref.Namespace, ref.Name, in.Job.Key, in.SavepointPath)
	var res OperatorResumeResult
	var st OperatorJobStatus
	err = heartbeatWhile(ctx, pollEvery(a.PollInterval), "waiting for the operator to "+verb+" "+in.Job.Key, func(ctx context.Context) error {
		var err error
		if res, err = start(ctx, ref, in.SavepointPath, OperatorWait{Timeout: in.Timeout, PollInterval: a.PollInterval}); err != nil {
			return err
		}
		st, err = a.Operator.OperatorStatus(ctx, ref)
		return err
	})
	if err != nil {
		return RestartJobResult{}, classify(what, err)
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

// operatorRef checks the job is operator-managed and names its resource.
func (a *Activities) operatorRef(job JobTarget, timeout time.Duration) (inventory.ObjectRef, error) {
	if a.Operator == nil {
		return inventory.ObjectRef{}, nonRetryable(ErrTypeInventory,
			"job %s: restart kind %q needs the Flink Kubernetes Operator, but this worker has no Kubernetes inventory configured (inventory.kubernetes)",
			job.Key, inventory.RestartOperatorResume)
	}
	if job.Restart.Kind != inventory.RestartOperatorResume {
		return inventory.ObjectRef{}, nonRetryable(ErrTypeInvalidInput, "job %s: restart kind %q is not %q; REST jobs are stopped and restarted through Flink's REST API",
			job.Key, job.Restart.Kind, inventory.RestartOperatorResume)
	}
	if job.Restart.Resource == nil {
		return inventory.ObjectRef{}, nonRetryable(ErrTypeInvalidInput, "job %s: restart.resource is missing; %q needs the FlinkDeployment or FlinkSessionJob to control",
			job.Key, inventory.RestartOperatorResume)
	}
	if timeout < 0 {
		return inventory.ObjectRef{}, nonRetryable(ErrTypeInvalidInput, "job %s: timeout %s is negative; use a positive duration or 0 for the default", job.Key, timeout)
	}
	return *job.Restart.Resource, nil
}

// heartbeatWhile runs a blocking call and heartbeats until it returns, so
// a lost worker is noticed by the heartbeat timeout and not only by the
// (long) start-to-close timeout.
func heartbeatWhile(ctx context.Context, every time.Duration, detail string, call func(context.Context) error) error {
	done := make(chan error, 1)
	go func() { done <- call(ctx) }()
	activity.RecordHeartbeat(ctx, detail)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			activity.RecordHeartbeat(ctx, detail)
		}
	}
}

// OperatorSpecChangeInput is an upgrade's change to an operator job's spec.
type OperatorSpecChangeInput struct {
	Job    JobTarget
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
		return inventory.JobSpecChange{}, nonRetryable(ErrTypeInvalidInput, "job %s: the spec change is empty: give the new image, jarURI, args, parallelism or flinkConfiguration", in.Job.Key)
	}
	inv, err := a.Operator.SpecChangeInverse(ctx, ref, in.Change)
	if err != nil {
		return inventory.JobSpecChange{}, classify(fmt.Sprintf("read the spec of %s %s/%s", ref.Kind, ref.Namespace, ref.Name), err)
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
		return classify(fmt.Sprintf("change the spec of %s %s/%s", ref.Kind, ref.Namespace, ref.Name), err)
	}
	return nil
}

// RedeployJob starts a suspended operator job from exactly SavepointPath,
// whatever savepoint the operator recorded since (a rollback restores the
// previous version from the savepoint taken before the upgrade).
func (a *Activities) RedeployJob(ctx context.Context, in ResumeJobInput) (RestartJobResult, error) {
	return a.startThroughOperator(ctx, in, "redeploy", func(ctx context.Context, ref inventory.ObjectRef, sp string, w OperatorWait) (OperatorResumeResult, error) {
		return a.Operator.Redeploy(ctx, ref, sp, w)
	})
}

// DiscardJobInput names an operator job a rollback ends without a
// savepoint.
type DiscardJobInput struct {
	Job     JobTarget
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
	err = heartbeatWhile(ctx, pollEvery(a.PollInterval), "waiting for the operator to stop "+in.Job.Key, func(ctx context.Context) error {
		_, err := a.Operator.Discard(ctx, ref, OperatorWait{Timeout: in.Timeout, PollInterval: a.PollInterval})
		return err
	})
	return classify(fmt.Sprintf("stop %s %s/%s of job %s without a savepoint", ref.Kind, ref.Namespace, ref.Name, in.Job.Key), err)
}
