package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/governance"
)

// GovernanceRestoreWorkflowType puts a governance run's trash back.
const GovernanceRestoreWorkflowType = "GovernanceRestore"

// GovernanceRestoreWorkflowID is the ID of the restore of run: one at a
// time per run; a later one may follow (and finds what is back already).
func GovernanceRestoreWorkflowID(run string) string { return "governance-restore-" + run }

// Restore phases.
const (
	RestorePhaseChecking  = "checking"
	RestorePhaseLocking   = "waiting-for-tenant-lock"
	RestorePhaseRestoring = "restoring"
	RestorePhaseCompleted = "completed"
	RestorePhaseFrozen    = "frozen"
	RestorePhaseFailed    = "failed"
)

// GovernanceRestoreInput names the run whose trash goes back.
type GovernanceRestoreInput struct {
	// RunID is the governance run (its trash is <trashRoot>/<RunID>).
	RunID string `json:"runId"`
	// Paths, when set, are globs of original paths: only those items, the
	// items under those dirs and the items holding those paths go back,
	// each snapshot with what its _metadata name (from any run's trash).
	Paths []string `json:"paths,omitempty"`
	// DryRun says what would go back and what would be refused.
	DryRun bool `json:"dryRun,omitempty"`
	// By and Reason are recorded; both are required unless DryRun.
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
	// OverrideFreeze lets the restore run inside a freeze.
	OverrideFreeze *FreezeOverride `json:"overrideFreeze,omitempty"`
}

// Validate names what is wrong with the input.
func (in GovernanceRestoreInput) Validate() error {
	var problems []string
	if err := governance.CheckRunID(in.RunID); err != nil {
		problems = append(problems, fmt.Sprintf("runId: %v", err))
	}
	if !in.DryRun && (strings.TrimSpace(in.By) == "" || strings.TrimSpace(in.Reason) == "") {
		problems = append(problems, "by and reason are required to restore (both are recorded); a dry run needs neither")
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// GovernanceRestoreState is the restore as the status query shows it.
type GovernanceRestoreState struct {
	RunID      string                         `json:"runId"`
	Phase      string                         `json:"phase"`
	DryRun     bool                           `json:"dryRun,omitempty"`
	Tenants    []string                       `json:"tenants,omitempty"`
	WaitingFor string                         `json:"waitingFor,omitempty"`
	Result     *governance.RestoreTrashResult `json:"result,omitempty"`
	Notes      []string                       `json:"notes,omitempty"`
	StartedAt  time.Time                      `json:"startedAt"`
	FinishedAt time.Time                      `json:"finishedAt,omitempty"`
}

// GovernanceRestoreWorkflow moves the trashed items of a governance run
// back to their original paths: it checks first what would go back
// (dry), then, unless a dry run, honours freezes, takes the tenant lock
// of the tenants the items go back into, and restores (resumable: each
// item is back or still in the trash, and a retry goes on). Items that
// cannot go back safely are refused, each with the reason.
func GovernanceRestoreWorkflow(ctx workflow.Context, in GovernanceRestoreInput) (*GovernanceRestoreState, error) {
	if err := in.Validate(); err != nil {
		return nil, newInvalidInputError(err.Error())
	}
	st := &GovernanceRestoreState{RunID: in.RunID, Phase: RestorePhaseChecking, DryRun: in.DryRun, StartedAt: workflow.Now(ctx)}
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (GovernanceRestoreState, error) { return *st, nil }); err != nil {
		return nil, err
	}
	lock := newTenantLock(ctx, false)
	defer lock.release(ctx)
	var a *governance.Activities
	restore := func(dry bool) error {
		var res governance.RestoreTrashResult
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, restoreTrashOptions()), a.RestoreTrash,
			governance.RestoreTrashInput{RunID: in.RunID, Paths: in.Paths, DryRun: dry}).Get(ctx, &res)
		if err == nil {
			st.Result, st.Tenants = &res, res.Tenants
		}
		return err
	}
	fail := func(err error) (*GovernanceRestoreState, error) {
		st.Phase, st.FinishedAt = RestorePhaseFailed, workflow.Now(ctx)
		st.Notes = append(st.Notes, errorText(err))
		return st, err
	}
	if err := restore(true); err != nil {
		return fail(fmt.Errorf("check what the trash of run %s holds: %w", in.RunID, err))
	}
	if in.DryRun {
		st.Phase, st.FinishedAt = RestorePhaseCompleted, workflow.Now(ctx)
		return st, nil
	}
	what := "restore of run " + in.RunID
	skip, note, err := checkFreeze(ctx, what, st.Tenants, in.OverrideFreeze, "start it again with --override-freeze --reason TEXT")
	if err != nil {
		return fail(err)
	}
	if note != "" {
		st.Notes = append(st.Notes, note)
	}
	if skip {
		st.Phase, st.FinishedAt = RestorePhaseFrozen, workflow.Now(ctx)
		return st, nil
	}
	st.Phase = RestorePhaseLocking
	if _, err := lock.acquire(ctx, KindGovernance, what+" by "+in.By+": "+in.Reason, st.Tenants, func(h []LockHold) {
		st.WaitingFor = ""
		if h != nil {
			st.WaitingFor = lockWaitText(h)
		}
	}); err != nil {
		return fail(err)
	}
	st.Phase = RestorePhaseRestoring
	if err := restore(false); err != nil {
		return fail(fmt.Errorf("restore the trash of run %s: %w", in.RunID, err))
	}
	st.Phase, st.FinishedAt = RestorePhaseCompleted, workflow.Now(ctx)
	return st, nil
}
