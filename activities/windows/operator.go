package windows

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

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
	ref, err := a.operator().Ref(in.Job, 0)
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

// SuspendJob suspends a Flink Kubernetes Operator job (spec.job.state
// suspended, upgradeMode savepoint) and returns the savepoint the operator
// recorded: that is the one it restores from on resume. A retry finds the
// resource already suspended and returns the same recorded savepoint
// without changing the spec again (Reattached).
func (a *Activities) SuspendJob(ctx context.Context, in SuspendJobInput) (core.StopWithSavepointResult, error) {
	ref, err := a.operator().Ref(in.Job, in.Timeout)
	if err != nil {
		return core.StopWithSavepointResult{}, err
	}
	what := fmt.Sprintf("suspend %s %s/%s of job %s", ref.Kind, ref.Namespace, ref.Name, in.Job.Key)
	var res core.OperatorSuspendResult
	err = core.HeartbeatWhile(ctx, core.PollInterval(a.PollInterval), "waiting for the operator to suspend "+in.Job.Key, func(ctx context.Context) error {
		var err error
		res, err = a.Operator.Suspend(ctx, ref, core.OperatorWait{Timeout: in.Timeout, PollInterval: a.PollInterval, Known: in.Known})
		return err
	})
	if err != nil {
		return core.StopWithSavepointResult{}, core.Classify(what, err)
	}
	if res.SavepointPath == "" {
		return core.StopWithSavepointResult{}, core.NonRetryable(core.ErrTypeSavepointInvalid, "%s: the operator reported the job %s without a savepoint location", what, res.JobState)
	}
	activity.GetLogger(ctx).Info("operator job suspended", "job", in.Job.Key, "resource", ref.Namespace+"/"+ref.Name,
		"savepoint", res.SavepointPath, "source", res.SavepointSource, "already_suspended", res.AlreadySuspended)
	a.catalog().Record(ctx, in.Job, catalog.Entry{Path: res.SavepointPath, Trigger: catalog.TriggerWindow, RunID: in.RunID})
	return core.StopWithSavepointResult{SavepointPath: res.SavepointPath, Reattached: res.AlreadySuspended}, nil
}

// ResumeJob sets an operator-managed job running again from exactly
// SavepointPath and returns the Flink job ID the operator reports once the
// job is RUNNING. The operator refuses (non-retryable) when it recorded a
// different savepoint. A retry finds the job already running and only
// reads its ID (Reattached).
func (a *Activities) ResumeJob(ctx context.Context, in core.ResumeJobInput) (core.RestartJobResult, error) {
	// A closure, not the method value: a.Operator may be nil, which
	// core.OperatorJobs.Ref reports.
	return a.operator().Start(ctx, in, "resume", func(ctx context.Context, ref inventory.ObjectRef, sp string, w core.OperatorWait) (core.OperatorResumeResult, error) {
		return a.Operator.Resume(ctx, ref, sp, w)
	})
}
