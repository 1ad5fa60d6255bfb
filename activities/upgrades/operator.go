package upgrades

import (
	"context"
	"fmt"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// OperatorSpecChangeInput is an upgrade's change to an operator job's spec.
type OperatorSpecChangeInput struct {
	Job    core.JobTarget
	Change inventory.JobSpecChange
}

// ReadSpecInverse reads what undoes an upgrade's spec change, before the
// job is stopped: the upgrade records it, so a rollback undoes the change
// even when the worker that applied it died before it could say.
func (a *Activities) ReadSpecInverse(ctx context.Context, in OperatorSpecChangeInput) (inventory.JobSpecChange, error) {
	ref, err := a.operator().Ref(in.Job, 0)
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
	ref, err := a.operator().Ref(in.Job, 0)
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
func (a *Activities) RedeployJob(ctx context.Context, in core.ResumeJobInput) (core.RestartJobResult, error) {
	return a.operator().Start(ctx, in, "redeploy", func(ctx context.Context, ref inventory.ObjectRef, sp string, w core.OperatorWait) (core.OperatorResumeResult, error) {
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
	ref, err := a.operator().Ref(in.Job, in.Timeout)
	if err != nil {
		return err
	}
	err = core.HeartbeatWhile(ctx, core.PollInterval(a.PollInterval), "waiting for the operator to stop "+in.Job.Key, func(ctx context.Context) error {
		_, err := a.Operator.Discard(ctx, ref, core.OperatorWait{Timeout: in.Timeout, PollInterval: a.PollInterval})
		return err
	})
	return core.Classify(fmt.Sprintf("stop %s %s/%s of job %s without a savepoint", ref.Kind, ref.Namespace, ref.Name, in.Job.Key), err)
}
