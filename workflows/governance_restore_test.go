package workflows

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/activities/oncall"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/freeze"
)

// restoreFixture fakes RestoreTrash: every call is recorded; the dry one
// names the tenants.
type restoreFixture struct {
	env   *testsuite.TestWorkflowEnvironment
	calls []governance.RestoreTrashInput
	locks *lockLog
}

func newRestoreFixture(t *testing.T) *restoreFixture {
	var s testsuite.WorkflowTestSuite
	f := &restoreFixture{env: s.NewTestWorkflowEnvironment()}
	f.locks = openGates(f.env)
	var a *governance.Activities
	f.env.OnActivity(a.RestoreTrash, mock.Anything, mock.Anything).Return(func(_ context.Context, in governance.RestoreTrashInput) (governance.RestoreTrashResult, error) {
		f.calls = append(f.calls, in)
		o := cleanup.OutcomeRestored
		if in.DryRun {
			o = cleanup.OutcomeStarted
		}
		return governance.RestoreTrashResult{Tenants: []string{"team-a"}, RestoreResult: cleanup.RestoreResult{RunID: in.RunID, DryRun: in.DryRun,
			Items: []cleanup.Record{{Path: "hdfs://nn/a/checkpoints/j/chk-3", Outcome: o}}, Counts: map[cleanup.Outcome]int{o: 1}}}, nil
	})
	return f
}

func (f *restoreFixture) result(t *testing.T) GovernanceRestoreState {
	t.Helper()
	if !f.env.IsWorkflowCompleted() || f.env.GetWorkflowError() != nil {
		t.Fatalf("restore did not complete: %v", f.env.GetWorkflowError())
	}
	var st GovernanceRestoreState
	if err := f.env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// A restore checks first (dry), then takes the tenant lock of the tenants
// the items go back into, restores and releases the lock.
func TestGovernanceRestoreChecksLocksAndRestores(t *testing.T) {
	f := newRestoreFixture(t)
	f.env.ExecuteWorkflow(GovernanceRestoreWorkflow, GovernanceRestoreInput{RunID: "nightly-1", By: "alice", Reason: "orders needs chk-3"})
	st := f.result(t)
	if st.Phase != RestorePhaseCompleted || len(f.calls) != 2 || !f.calls[0].DryRun || f.calls[1].DryRun || st.Result.Counts[cleanup.OutcomeRestored] != 1 {
		t.Fatalf("state %+v after calls %+v; want a dry check, then the restore", st, f.calls)
	}
	if got := f.locks.String(); !strings.Contains(got, "acquire default-test-workflow-id team-a") || !strings.Contains(got, "release") {
		t.Fatalf("lock log %q; want team-a taken and released", got)
	}
}

// A dry run only checks: no lock, no move.
func TestGovernanceRestoreDryRun(t *testing.T) {
	f := newRestoreFixture(t)
	f.env.ExecuteWorkflow(GovernanceRestoreWorkflow, GovernanceRestoreInput{RunID: "nightly-1", DryRun: true})
	st := f.result(t)
	if len(f.calls) != 1 || !f.calls[0].DryRun || st.Result.Counts[cleanup.OutcomeStarted] != 1 || f.locks.String() != "" {
		t.Fatalf("state %+v, calls %+v, locks %q; want one dry check and no lock", st, f.calls, f.locks)
	}
}

// Inside a freeze a restore does not start; a name and a reason are
// required to restore.
func TestGovernanceRestoreRefusals(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *governance.Activities
	var onc *oncall.Activities
	calls := 0
	env.OnActivity(a.RestoreTrash, mock.Anything, mock.Anything).Return(func(_ context.Context, in governance.RestoreTrashInput) (governance.RestoreTrashResult, error) {
		calls++
		return governance.RestoreTrashResult{Tenants: []string{"team-a"}}, nil
	})
	env.OnActivity(onc.CheckFreeze, mock.Anything, mock.Anything).Return(oncall.CheckFreezeResult{Active: []freeze.Active{{Name: "peak", Until: time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC)}}}, nil)
	env.ExecuteWorkflow(GovernanceRestoreWorkflow, GovernanceRestoreInput{RunID: "nightly-1", By: "alice", Reason: "r"})
	if err := env.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), "peak") || calls != 1 {
		t.Fatalf("err %v after %d restore calls; want the freeze named after the dry check only", err, calls)
	}
	for _, in := range []GovernanceRestoreInput{{RunID: "nightly-1"}, {RunID: "../x", DryRun: true}} {
		if err := in.Validate(); err == nil {
			t.Errorf("%+v accepted", in)
		}
	}
}
