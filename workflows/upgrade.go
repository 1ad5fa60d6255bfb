package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/upgrades"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/notify"
)

// JobUpgradeWorkflow upgrades one REST-run job: preflight (the job runs,
// the new jar is there, the restart fits the quota), the manifest on
// storage, stop-with-savepoint, the new version started from exactly that
// savepoint and gated like a window's restart, then the new recipe made the
// recipe of record. A gate that fails rolls back (or pauses, by policy):
// the new version is stopped (with a savepoint if it runs, kept but not
// used) and the previous recipe restored from the pre-upgrade savepoint.
// A restore that cannot map some operators' state pauses for a decision
// naming them; allowNonRestoredState is never set otherwise.
func JobUpgradeWorkflow(ctx workflow.Context, in UpgradeInput) (*UpgradeState, error) {
	in.ApplyDefaults()
	invalid := in.Validate() //workflowcheck:ignore (map keys are sorted before use)
	if invalid != nil {
		return nil, newInvalidInputError("upgrade: " + invalid.Error())
	}
	wid := JobUpgradeWorkflowID(in.UpgradeID)
	if in.CheckOnly {
		wid = UpgradeCheckWorkflowID(in.UpgradeID)
	}
	u := &upgradeRun{in: in, wid: wid, logger: log.With(workflow.GetLogger(ctx), "upgrade", in.UpgradeID),
		rollbackCh: workflow.NewBufferedChannel(ctx, 1)}
	u.st = UpgradeState{UpgradeID: in.UpgradeID, Phase: UpgradePhasePreflight, Mode: in.Mode, StartedAt: workflow.Now(ctx)}
	if !in.CheckOnly {
		u.st.ManifestPath = strings.TrimRight(in.ManifestDir, "/") + "/" + in.UpgradeID + "/manifest.json"
	}
	if err := u.registerHandlers(ctx); err != nil {
		return nil, err
	}
	_ = workflow.UpsertMemo(ctx, map[string]interface{}{"reason": in.Reason, "ticket": in.Ticket, "job": in.Job})
	u.notes = newNotifier(ctx, u.kind(), in.UpgradeID, nil) // sinks can tell a check from an upgrade
	u.lock = newTenantLock(ctx, false)
	err := u.run(ctx)
	u.lock.release(ctx)
	u.st.FinishedAt = workflow.Now(ctx)
	u.st.Pending = nil
	_ = u.writeManifest(ctx)
	u.notes.ended(ctx, u.st.Phase, fmt.Sprintf("upgrade of %s ended %s", in.Job, u.st.Phase), err)
	if werr := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); werr != nil {
		return nil, werr
	}
	if err != nil {
		// Every ending carries the final state, for `upgrade status` after
		// the run and for scripts.
		errType := ErrTypeUpgradeFailed
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.Type() != "" {
			errType = appErr.Type()
		}
		return &u.st, temporal.NewNonRetryableApplicationError(errorTextFor(err, errType), errType, nil, u.st)
	}
	return &u.st, nil
}

// upgradeRun is one execution's in-memory state around UpgradeState.
type upgradeRun struct {
	in     UpgradeInput
	wid    string
	st     UpgradeState
	logger log.Logger
	notes  *notifier
	lock   *tenantLock

	answer *DecideRequest
	// rollback is a requested rollback; rollbackCh wakes a waiting start.
	rollback   *RollbackRequest
	rollbackCh workflow.Channel
}

// ErrTypeUpgradeFailed ends an upgrade that could not go on; its error and
// the manifest say where the job stands.
const ErrTypeUpgradeFailed = "UpgradeFailed"

// errUpgradeAborted unwinds an upgrade an operator ended before the job
// was stopped.
var errUpgradeAborted = errors.New("upgrade aborted")

func (u *upgradeRun) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryUpgradeStatus, func() (UpgradeState, error) { return u.st, nil }); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateDecide,
		func(ctx workflow.Context, req DecideRequest) (UpgradeState, error) {
			u.answer = &req
			u.record(ctx, DecisionRecord{Kind: UpdateDecide, Action: req.Action, By: req.By, Reason: req.Reason})
			return u.st, nil
		}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req DecideRequest) error {
			p := u.st.Pending
			if p == nil {
				return fmt.Errorf("upgrade %s is not waiting for a decision (phase %s)", u.in.UpgradeID, u.st.Phase)
			}
			if strings.TrimSpace(req.By) == "" {
				return errors.New("by is empty: say who decides")
			}
			for _, a := range p.Allowed {
				if a == req.Action {
					return nil
				}
			}
			return fmt.Errorf("action %q is not valid now: the upgrade waits for %s and accepts %s", req.Action, p.Kind, strings.Join(p.Allowed, ", "))
		}}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, UpdateRollback,
		func(ctx workflow.Context, req RollbackRequest) (UpgradeState, error) {
			u.rollback = &req
			u.record(ctx, DecisionRecord{Kind: UpdateRollback, By: req.By, Reason: req.Reason})
			u.rollbackCh.SendAsync(true)
			return u.st, nil
		}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req RollbackRequest) error {
			if strings.TrimSpace(req.By) == "" || strings.TrimSpace(req.Reason) == "" {
				return errors.New("rollback needs by and reason: both are recorded in the manifest")
			}
			if u.rollback != nil {
				return fmt.Errorf("upgrade %s is already rolling back (asked by %s)", u.in.UpgradeID, u.rollback.By)
			}
			if u.st.Phase == UpgradePhaseStart || u.st.Phase == UpgradePhaseHold {
				return nil
			}
			if p := u.st.Pending; p != nil {
				for _, a := range p.Allowed {
					if a == ActionRollback {
						return nil
					}
				}
			}
			return fmt.Errorf("upgrade %s is in phase %s: a rollback is possible while the new version starts, is held after commit, or a pending decision offers it", u.in.UpgradeID, u.st.Phase)
		}})
}

func (u *upgradeRun) record(ctx workflow.Context, d DecisionRecord) {
	d.At = workflow.Now(ctx)
	u.st.Decisions = append(u.st.Decisions, d)
	u.logger.Info("operator action", "kind", d.Kind, "action", d.Action, "by", d.By, "reason", d.Reason)
}

func (u *upgradeRun) setPhase(ctx workflow.Context, phase string) {
	u.logger.Info("phase", "from", u.st.Phase, "to", phase)
	u.st.Phase = phase
	if err := workflow.UpsertTypedSearchAttributes(ctx, SearchAttrKind.ValueSet(u.kind()), SearchAttrPhase.ValueSet(phase),
		SearchAttrPausedForDecision.ValueSet(u.st.Pending != nil)); err != nil {
		u.logger.Warn("search attributes not updated", "error", err)
	}
	_ = u.writeManifest(ctx)
	u.notes.phase(ctx, phase, fmt.Sprintf("upgrade of %s: %s", u.in.Job, phase))
}

// decide waits for an operator's answer to a pending decision; a rollback
// requested meanwhile answers it with ActionRollback when that is allowed.
func (u *upgradeRun) decide(ctx workflow.Context, kind, reason string, allowed ...string) (DecideRequest, error) {
	u.st.Pending = &PendingDecision{Kind: kind, Reason: reason, Allowed: allowed, Since: workflow.Now(ctx)}
	u.answer = nil
	u.logger.Warn("waiting for an operator decision", "kind", kind, "reason", reason, "allowed", allowed)
	_ = workflow.UpsertTypedSearchAttributes(ctx, SearchAttrPausedForDecision.ValueSet(true))
	_ = u.writeManifest(ctx)
	canRollBack := false
	for _, a := range allowed {
		canRollBack = canRollBack || a == ActionRollback
	}
	if _, err := u.notes.awaitAnswer(ctx, notify.Event{Decision: kind, Title: fmt.Sprintf("upgrade of %s waits for %s", u.in.Job, kind), Text: reason,
		Commands: upgradeCommands(u.in.UpgradeID, u.st.Pending)}, decisionReminderEvery, 0,
		func() bool { return u.answer != nil || canRollBack && u.rollback != nil }); err != nil {
		return DecideRequest{}, err
	}
	u.st.Pending = nil
	_ = workflow.UpsertTypedSearchAttributes(ctx, SearchAttrPausedForDecision.ValueSet(false))
	workflow.SetCurrentDetails(ctx, upgradeDetails(&u.in, &u.st))
	if u.answer == nil {
		return DecideRequest{Action: ActionRollback, By: u.rollback.By, Reason: u.rollback.Reason}, nil
	}
	ans := *u.answer
	u.answer = nil
	return ans, nil
}

func (u *upgradeRun) short(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, shortActivityOptions())
}

func (u *upgradeRun) run(ctx workflow.Context) error {
	if err := u.preflight(ctx); err != nil {
		if errors.Is(err, errUpgradeAborted) {
			u.setPhase(ctx, UpgradePhaseFailed)
			return temporal.NewNonRetryableApplicationError("upgrade aborted before the job was stopped; nothing changed", ErrTypeUpgradeFailed, nil)
		}
		u.setPhase(ctx, UpgradePhaseFailed)
		return err
	}
	if u.in.CheckOnly {
		u.setPhase(ctx, UpgradePhaseChecked)
		if r := u.st.Rehearsal; r == nil || r.Verdict != catalog.RehearsalCompatible {
			text := "the upgrade was not rehearsed"
			if r != nil {
				text = r.Text()
			}
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("check of the upgrade of %s: %s", u.in.Job, text), ErrTypeUpgradeCheckFailed, nil)
		}
		return nil
	}
	// No window or cleanup changes the tenant while its job changes.
	if _, err := u.lock.acquire(ctx, KindUpgrade, fmt.Sprintf("upgrade %s of %s", u.in.UpgradeID, u.in.Job), []string{u.st.Job.Tenant},
		func(h []LockHold) {
			u.st.WaitingFor = ""
			if h != nil {
				u.st.WaitingFor = lockWaitText(h)
			}
			_ = u.writeManifest(ctx)
		}); err != nil {
		u.setPhase(ctx, UpgradePhaseFailed)
		return err
	}
	stop := u.stop
	if u.parallel() {
		stop = u.savepointKeepRunning
	}
	if err := stop(ctx); err != nil {
		u.setPhase(ctx, UpgradePhaseFailed)
		return err
	}
	rollback, err := u.start(ctx)
	if err != nil {
		return err
	}
	if rollback != nil {
		return u.rollBack(ctx, *rollback)
	}
	if rollback, err = u.commit(ctx); err != nil || rollback != nil {
		if err != nil {
			return err
		}
		return u.rollBack(ctx, *rollback)
	}
	u.setPhase(ctx, UpgradePhaseCommitted)
	return nil
}

// preflight finds the job, checks the new version and the quota, and puts
// the manifest on storage: nothing is stopped before it is there.
func (u *upgradeRun) preflight(ctx workflow.Context) error {
	var a *windows.Activities
	u.setPhase(ctx, UpgradePhasePreflight)
	cluster, name, _ := strings.Cut(u.in.Job, "/")
	var found core.DiscoverJobsResult
	if err := workflow.ExecuteActivity(u.short(ctx), a.DiscoverJobs, core.DiscoverJobsInput{
		Scope: core.Scope{Clusters: []string{cluster}, IncludeJobs: []string{name}}}).Get(ctx, &found); err != nil {
		return fmt.Errorf("inventory: %w", err)
	}
	for _, j := range found.Jobs {
		if j.Key == u.in.Job {
			u.st.Job = j
			u.notes.tenants = []string{j.Tenant}
		}
	}
	if u.st.Job.Key == "" {
		why := "it is not running on that cluster, or the inventory does not know the cluster"
		for _, s := range found.Skipped {
			if s.Key == u.in.Job {
				why = s.Reason
			}
		}
		return newInvalidInputError(fmt.Sprintf("job %s cannot be upgraded: %s", u.in.Job, why))
	}
	if u.in.CheckOnly {
		// A check stops nothing: a freeze does not hold it.
	} else if _, note, err := checkFreeze(ctx, "upgrade "+u.in.UpgradeID, []string{u.st.Job.Tenant}, u.in.OverrideFreeze,
		"flinkmaint upgrade start -f FILE --override-freeze --reason TEXT"); err != nil || note != "" && u.in.OverrideFreeze == nil {
		if err == nil {
			err = temporal.NewNonRetryableApplicationError(note, ErrTypeFrozen, nil)
		}
		return err
	} else if note != "" {
		u.st.Notes = append(u.st.Notes, note)
	}
	if err := u.checkNewVersion(ctx); err != nil {
		return err
	}
	if u.in.CheckOnly || workflow.GetVersion(ctx, changeUpgradeRehearsal, workflow.DefaultVersion, 1) >= 1 {
		if err := u.rehearse(ctx); err != nil {
			return err
		}
		if u.in.CheckOnly {
			return nil
		}
	}
	for {
		q, err := u.quota(ctx, found)
		if err != nil {
			return err
		}
		if q == "" {
			break
		}
		ans, err := u.decide(ctx, DecisionQuota, q+". Retry after cleanup or a quota raise, resume to upgrade anyway, or abort (nothing changes)",
			ActionRetry, ActionResume, ActionAbort)
		if err != nil {
			return err
		}
		if ans.Action == ActionAbort {
			return errUpgradeAborted
		}
		if ans.Action == ActionResume {
			u.st.Notes = append(u.st.Notes, "quota overridden by "+ans.By+": "+ans.Reason)
			break
		}
	}
	for {
		err := u.writeManifest(ctx)
		if err == nil {
			return nil
		}
		ans, err := u.decide(ctx, DecisionUpgradeManifestFailed, fmt.Sprintf(
			"the manifest %s cannot be written, so the job is not stopped: %s. Make sure the directory lies under a storage.writableRoots entry and retry, or abort (nothing changes)",
			u.st.ManifestPath, errorText(err)), ActionRetry, ActionAbort)
		if err != nil {
			return err
		}
		if ans.Action == ActionAbort {
			return errUpgradeAborted
		}
	}
}

// changeUpgradeRehearsal versions the rehearsal in preflight.
const changeUpgradeRehearsal = "upgrade-rehearsal-2026-12-04"

// rehearse restores a savepoint of the running job into the new version
// on a drill cluster (a JobRehearsal child) before anything is stopped. A
// verdict other than compatible pauses the upgrade for a decision: abort
// (nothing changed), retry (a new savepoint, a new copy) or resume (upgrade
// knowingly). Not rehearsed is noted in mode auto and a decision in mode
// always. A check records the verdict and decides nothing.
func (u *upgradeRun) rehearse(ctx workflow.Context) error {
	rh := u.in.Rehearsal
	if rh.Mode == RehearseNever {
		u.st.Notes = append(u.st.Notes, "not rehearsed: rehearsal.mode is never")
		return nil
	}
	newRecipe := u.st.NewRecipe
	for n := 1; ; n++ {
		u.setPhase(ctx, UpgradePhaseRehearse)
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: JobRehearsalWorkflowID(u.wid, n),
			StaticSummary:         clip(fmt.Sprintf("rehearse the new version of %s (upgrade %s%s)", u.in.Job, u.in.UpgradeID, attemptText(n)), maxSummaryBytes),
			TypedSearchAttributes: temporal.NewSearchAttributes(SearchAttrKind.ValueSet(KindRehearsal))})
		var res RehearsalResult
		if err := workflow.ExecuteChildWorkflow(cctx, JobRehearsalWorkflowType, JobRehearsalInput{RunID: u.wid, N: n, Job: u.st.Job,
			NewRecipe: &newRecipe, FlinkVersion: rh.FlinkVersion, ProgramArgs: rh.ProgramArgs, Savepoint: rh.Savepoint, Format: u.in.Format,
			SavepointTimeout: u.in.SavepointTimeout, Health: u.in.Health}).Get(ctx, &res); err != nil {
			res = RehearsalResult{Key: u.in.Job, Verdict: catalog.RehearsalInconclusive, Why: "the rehearsal ended without a verdict: " + errorText(err)}
		}
		u.st.Rehearsal = &res
		_ = u.writeManifest(ctx)
		if u.in.CheckOnly || res.Verdict == catalog.RehearsalCompatible {
			return nil
		}
		if res.Verdict == catalog.RehearsalNotRehearsed && rh.Mode == RehearseAuto {
			u.st.Notes = append(u.st.Notes, res.Text())
			return nil
		}
		ans, err := u.decide(ctx, DecisionRehearsal, fmt.Sprintf(
			"the rehearsal of the new version did not prove it can restore the job's state: %s. Nothing has been stopped: "+
				"abort ends the upgrade (nothing changes), retry rehearses again from a new savepoint, resume upgrades anyway, knowingly",
			res.Text()), ActionAbort, ActionRetry, ActionResume)
		if err != nil {
			return err
		}
		switch ans.Action {
		case ActionAbort:
			return errUpgradeAborted
		case ActionResume:
			u.st.Notes = append(u.st.Notes, fmt.Sprintf("upgraded despite the rehearsal (%s), decided by %s: %s", res.Text(), ans.By, ans.Reason))
			return nil
		}
	}
}

// kind is the run's SearchAttrKind: a check is not an upgrade.
func (u *upgradeRun) kind() string {
	if u.in.CheckOnly {
		return KindUpgradeCheck
	}
	return KindUpgrade
}

// parallel says the new version starts beside the running previous one.
func (u *upgradeRun) parallel() bool { return u.in.Mode == UpgradeModeParallel }

// operator says the job is run by the Flink Kubernetes Operator: its new
// version is a change to its resource's spec, not a REST recipe.
func (u *upgradeRun) operator() bool {
	return u.st.Job.Restart.Kind == inventory.RestartOperatorResume
}

// checkNewVersion checks the new version fits the job: a recipe whose jar
// is there for a REST job; for an operator job a spec change, whose
// inverse is read now, before the job stops.
func (u *upgradeRun) checkNewVersion(ctx workflow.Context) error {
	var a *upgrades.Activities
	hasSpec := u.in.Spec != nil && !u.in.Spec.Empty()
	if !u.operator() {
		if hasSpec {
			return newInvalidInputError(fmt.Sprintf("job %s runs through Flink's REST API: give its new version as recipe, not spec", u.in.Job))
		}
		u.st.NewRecipe = u.in.Recipe.apply(u.st.Job.Restart) //workflowcheck:ignore (the merged map is the same in any order)
		return workflow.ExecuteActivity(u.short(ctx), a.CheckUpgrade,
			upgrades.CheckUpgradeInput{Job: u.st.Job, Recipe: u.st.NewRecipe}).Get(ctx, nil)
	}
	if u.parallel() {
		return newInvalidInputError(fmt.Sprintf("job %s is run by the Flink Kubernetes Operator, which runs one job per resource: upgrade it in mode stop", u.in.Job))
	}
	if !hasSpec {
		return newInvalidInputError(fmt.Sprintf("job %s is run by the Flink Kubernetes Operator: give its new version as spec (image, jarURI, args, parallelism, flinkConfiguration), not recipe", u.in.Job))
	}
	var inverse inventory.JobSpecChange
	if err := workflow.ExecuteActivity(u.short(ctx), a.ReadSpecInverse,
		upgrades.OperatorSpecChangeInput{Job: u.st.Job, Change: *u.in.Spec}).Get(ctx, &inverse); err != nil {
		return err
	}
	u.st.NewRecipe = u.st.Job.Restart
	u.st.SpecChange, u.st.SpecInverse = u.in.Spec, &inverse
	return nil
}

// quota projects the new version's restart on the tenant's namespace
// quota; it says what does not fit, empty when it fits.
func (u *upgradeRun) quota(ctx workflow.Context, found core.DiscoverJobsResult) (string, error) {
	var a *capacity.Activities
	j := u.st.Job
	dir := ""
	if j.CheckpointDir != "" {
		dir = strings.TrimRight(j.CheckpointDir, "/") + "/" + j.JobID
	}
	var res capacity.CheckQuotaResult
	err := workflow.ExecuteActivity(u.short(ctx), a.CheckQuota, capacity.CheckQuotaInput{
		Tenants: found.Tenants, WarningPercent: 80, CriticalPercent: 90, SafetyMargin: 0.2, DefaultRetention: 3,
		Restart: []capacity.RestartFootprintInput{{Key: j.Key, Tenant: j.Tenant, CheckpointDir: dir}},
	}).Get(ctx, &res)
	if err != nil {
		return "", fmt.Errorf("quota check: %w", err)
	}
	for _, t := range res.Tenants {
		if t.Tenant == j.Tenant && !t.RestartAllowed {
			return fmt.Sprintf("tenant %s: used %d of %d, the new version needs %d: %s", t.Tenant, t.NamespaceUsed, t.NamespaceQuota, t.ProjectedFiles, t.GateReason), nil
		}
	}
	return "", nil
}

// stop takes the pre-upgrade savepoint as it stops the job.
func (u *upgradeRun) stop(ctx workflow.Context) error {
	u.setPhase(ctx, UpgradePhaseStop)
	cctx := workflow.WithChildOptions(ctx, jobChildOptions(u.wid+"/savepoint", savepointChildSummary(u.st.Job.Key, "upgrade "+u.in.UpgradeID, 1)))
	var res JobSavepointResult
	err := workflow.ExecuteChildWorkflow(cctx, JobSavepointWorkflowType, JobSavepointInput{WindowID: u.wid, Job: u.st.Job, Attempt: 1,
		Format: u.in.Format, Timeout: u.in.SavepointTimeout}).Get(ctx, &res)
	if err != nil {
		var still string
		switch seen := seenAfterStop(err); seen.Seen {
		case core.JobSeenRunning:
			still = "the job keeps running the previous version; nothing changed"
		case core.JobSeenStopped:
			still = "the job is no longer running and has no upgrade savepoint: restart it by hand from its latest retained checkpoint with the previous recipe (in the manifest)"
		default:
			still = unknownStateText(seen, u.st.Job) + "; nothing else changed"
		}
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("stop with savepoint of %s failed: %s; cause: %s", u.st.Job.Key, still, errorText(err)), ErrTypeUpgradeFailed, nil)
	}
	u.st.Savepoint = res.SavepointPath
	return nil
}

// savepointKeepRunning takes the pre-upgrade savepoint without stopping
// the job (mode parallel): it is verified and catalogued like a window's.
func (u *upgradeRun) savepointKeepRunning(ctx workflow.Context) error {
	var a *windows.Activities
	u.setPhase(ctx, UpgradePhaseStop)
	var res windows.TakeSavepointResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, takeSavepointOptions(u.in.SavepointTimeout.D())), a.TakeSavepoint,
		windows.TakeSavepointInput{Job: u.st.Job, TriggerID: flinkID(u.wid, u.st.Job.Key, "upgrade-savepoint", 1), Format: u.in.Format,
			RunID: u.wid, Trigger: catalog.TriggerWindow}).Get(ctx, &res)
	if err != nil {
		// A savepoint never stops the job: it runs unless its cluster did
		// not answer.
		still := "the job keeps running the previous version; nothing changed"
		if seen := seenAfterStop(err); seen.Seen == core.JobSeenUnanswered {
			still = unknownStateText(seen, u.st.Job) + "; nothing else changed"
		}
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("savepoint of %s failed: %s; cause: %s",
			u.st.Job.Key, still, errorText(err)), ErrTypeUpgradeFailed, nil)
	}
	u.st.Savepoint = res.SavepointPath
	return nil
}

// unmatchedOperator finds the operators Flink could not map in a restore
// error ("Cannot map checkpoint/savepoint state for operator <id> to the
// new program").
var unmatchedOperator = regexp.MustCompile(`Cannot map checkpoint/savepoint state for operator ([0-9a-fA-F]{32})`)

// start runs the new version from the pre-upgrade savepoint until it is
// healthy. It returns a rollback when one is due: asked for, or the gate
// failed and policy or an operator says so.
func (u *upgradeRun) start(ctx workflow.Context) (*RollbackRequest, error) {
	u.setPhase(ctx, UpgradePhaseStart)
	previous := ""
	for {
		if u.rollback != nil {
			return u.rollback, nil
		}
		u.st.StartAttempts++
		job := u.st.Job
		job.Restart = u.st.NewRecipe
		u.st.NewJobID = flinkID(u.wid, job.Key, "restart", u.st.StartAttempts)
		if u.operator() {
			u.st.NewJobID = "" // the operator names it
			var a *upgrades.Activities
			if err := workflow.ExecuteActivity(u.short(ctx), a.ChangeOperatorSpec,
				upgrades.OperatorSpecChangeInput{Job: u.st.Job, Change: *u.st.SpecChange}).Get(ctx, nil); err != nil {
				// The job is suspended: go back rather than leave it stopped.
				return &RollbackRequest{By: "flinkmaint", Reason: "the new spec could not be applied: " + errorText(err)}, nil
			}
		}
		_ = u.writeManifest(ctx)
		cctx, cancel := workflow.WithCancel(ctx)
		cctx = workflow.WithChildOptions(cctx, jobChildOptions(withAttempt(u.wid+"/start", u.st.StartAttempts),
			restartChildSummary("start the new version of", job.Key, "upgrade "+u.in.UpgradeID, u.st.StartAttempts)))
		f := workflow.ExecuteChildWorkflow(cctx, JobRestartWorkflowType, JobRestartInput{WindowID: u.wid, Job: job, Attempt: u.st.StartAttempts,
			SavepointPath: u.st.Savepoint, PreviousJobID: previous, Health: u.in.Health})
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(f, func(workflow.Future) {})
		sel.AddReceive(u.rollbackCh, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			cancel() // the child's activity ends; the rollback ends the job
		})
		sel.Select(ctx)
		var res JobRestartResult
		err := f.Get(ctx, &res)
		cancel()
		if u.rollback != nil {
			return u.rollback, nil
		}
		if err == nil {
			u.st.Healthy, u.st.GateError = &res, ""
			u.st.NewJobID = res.JobID
			return nil, nil
		}
		u.st.GateError = errorText(err)
		previous = u.st.NewJobID
		// An operator job's resource says whether state may be dropped
		// (spec.job.allowNonRestoredState): a person sets it there.
		// The operators are read from the whole error chain: the text a
		// person reads is shortened.
		if ops := unmatchedOperator.FindAllStringSubmatch(err.Error(), -1); len(ops) > 0 && !u.st.NewRecipe.AllowNonRestoredState && !u.operator() {
			u.st.Unmatched = nil
			seen := map[string]bool{} // errors repeat their causes
			for _, m := range ops {
				if !seen[m[1]] {
					seen[m[1]] = true
					u.st.Unmatched = append(u.st.Unmatched, m[1])
				}
			}
			ans, err := u.decide(ctx, DecisionUnmatchedState, fmt.Sprintf(
				"the new version cannot restore the state of operator(s) %s from %s: Flink says the operator is not available in the new program (the whole error is in gateError). "+
					"%s starts it again without that state (it is lost for the new version; the savepoint keeps it), %s goes back to the previous version",
				strings.Join(u.st.Unmatched, ", "), u.st.Savepoint, ActionAllowNonRestoredState, ActionRollback),
				ActionAllowNonRestoredState, ActionRollback)
			if err != nil {
				return nil, err
			}
			if ans.Action == ActionRollback {
				return &RollbackRequest{By: ans.By, Reason: "unmatched operator state: " + ans.Reason}, nil
			}
			u.st.NewRecipe.AllowNonRestoredState = true
			u.st.Notes = append(u.st.Notes, fmt.Sprintf("%s allowed the new version to drop the state of %s: %s", ans.By, strings.Join(u.st.Unmatched, ", "), ans.Reason))
			continue
		}
		if u.in.OnGateFailure == OnGateFailureRollback {
			return &RollbackRequest{By: "flinkmaint (onGateFailure: rollback)", Reason: "the new version did not become healthy: " + u.st.GateError}, nil
		}
		ans, err := u.decide(ctx, DecisionUpgradeGateFailed, fmt.Sprintf("the new version did not become healthy: %s. Retry starts it again, rollback goes back to the previous version",
			u.st.GateError), ActionRetry, ActionRollback)
		if err != nil {
			return nil, err
		}
		if ans.Action == ActionRollback {
			return &RollbackRequest{By: ans.By, Reason: ans.Reason}, nil
		}
	}
}

// commit makes the new recipe the job's recipe of record, then holds the
// run open for HoldAfterCommit, when a rollback is still one command.
func (u *upgradeRun) commit(ctx workflow.Context) (*RollbackRequest, error) {
	var a *upgrades.Activities
	u.setPhase(ctx, UpgradePhaseCommit)
	// Dropping state was decided for this restore only: later restarts
	// start from the new version's own savepoints, which need no such leave.
	recipe := u.st.NewRecipe
	recipe.AllowNonRestoredState = false
	if u.parallel() {
		if rollback, err := u.retire(ctx); err != nil || rollback != nil {
			return rollback, err
		}
		u.setPhase(ctx, UpgradePhaseCommit)
	}
	for !u.operator() { // an operator job's resource is its recipe of record
		err := workflow.ExecuteActivity(u.short(ctx), a.RecordRecipe, upgrades.RecordRecipeInput{Job: u.st.Job, Base: u.st.Job.Restart,
			Recipe: recipe, UpgradeID: u.in.UpgradeID}).Get(ctx, nil)
		if err == nil {
			u.st.RecipeRecorded = true
			break
		}
		// Unrecorded, the next window would restart the previous version
		// from the new version's savepoint.
		ans, err := u.decide(ctx, DecisionRecipeUnrecorded, fmt.Sprintf(
			"the new version runs, but its recipe could not be recorded: %s. Until it is, a window would restart the previous version. Retry, or rollback",
			errorText(err)), ActionRetry, ActionRollback)
		if err != nil {
			return nil, err
		}
		if ans.Action == ActionRollback {
			return &RollbackRequest{By: ans.By, Reason: ans.Reason}, nil
		}
	}
	if hold := u.in.HoldAfterCommit.D(); hold > 0 {
		u.setPhase(ctx, UpgradePhaseHold)
		if _, err := workflow.AwaitWithTimeout(ctx, hold, func() bool { return u.rollback != nil }); err != nil {
			return nil, err
		}
		if u.rollback != nil {
			return u.rollback, nil
		}
	}
	return nil, nil
}

// retire ends the previous version once the new one passed its gate (mode
// parallel): stopped with a savepoint, from which a later rollback
// restores it; cancelled when that fails. Until it is done both run.
func (u *upgradeRun) retire(ctx workflow.Context) (*RollbackRequest, error) {
	var a *upgrades.Activities
	u.setPhase(ctx, UpgradePhaseRetire)
	for attempt := 1; ; attempt++ {
		var ended upgrades.EndJobResult
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, stopWithSavepointOptions(u.in.SavepointTimeout.D()+u.in.Health.RunningTimeout.D())),
			a.EndJob, upgrades.EndJobInput{Job: u.st.Job, TriggerID: flinkID(u.wid, u.st.Job.Key, "retire", attempt),
				Format: u.in.Format, RunID: u.wid}).Get(ctx, &ended)
		if err == nil {
			u.st.Retired, u.st.RetiredSavepoint = true, ended.Savepoint
			if ended.Cancelled {
				u.st.Notes = append(u.st.Notes, fmt.Sprintf("the previous version %s was cancelled, not stopped with a savepoint: a rollback restores it from the pre-upgrade savepoint", u.st.Job.JobID))
			}
			return nil, nil
		}
		ans, err := u.decide(ctx, DecisionRetireFailed, fmt.Sprintf(
			"the new version %s is healthy, but the previous version %s could not be ended: %s. Both run. Retry ends the previous version again, rollback ends the new one",
			u.st.NewJobID, u.st.Job.JobID, errorText(err)), ActionRetry, ActionRollback)
		if err != nil {
			return nil, err
		}
		if ans.Action == ActionRollback {
			return &RollbackRequest{By: ans.By, Reason: ans.Reason}, nil
		}
	}
}

// rollbackSavepoint is where a rollback restores the previous version
// from: the savepoint it was retired with, else the pre-upgrade one.
func (u *upgradeRun) rollbackSavepoint() string {
	if u.st.RetiredSavepoint != "" {
		return u.st.RetiredSavepoint
	}
	return u.st.Savepoint
}

// rollBack ends the new version (a savepoint if it runs, kept but not
// used), drops its recipe of record, and restores the previous recipe from
// the pre-upgrade savepoint, gated like the upgrade. It always returns an
// error: the upgrade did not happen.
func (u *upgradeRun) rollBack(ctx workflow.Context, req RollbackRequest) error {
	var a *upgrades.Activities
	u.st.Rollback = &UpgradeRollback{By: req.By, Reason: req.Reason}
	u.setPhase(ctx, UpgradePhaseRollback)
	rb := u.st.Rollback
	if err := u.endNewVersion(ctx); err != nil {
		rb.Error = "the new version could not be ended: " + errorText(err)
		u.setPhase(ctx, UpgradePhaseFailed)
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("rollback of %s: %s; the previous version was not started (no two versions run at once): end the new version by hand, then restart the previous recipe (the manifest has it) from %s",
			u.st.Job.Key, rb.Error, u.rollbackSavepoint()), ErrTypeUpgradeFailed, nil)
	}
	if u.parallel() && !u.st.Retired {
		// The previous version never stopped: it is the rollback.
		u.setPhase(ctx, UpgradePhaseRolledBack)
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("upgrade of %s rolled back (%s, by %s): the new version is ended; the previous version kept running as job %s",
			u.st.Job.Key, req.Reason, req.By, u.st.Job.JobID), ErrTypeUpgradeRolledBack, nil)
	}
	if u.st.RecipeRecorded {
		if err := workflow.ExecuteActivity(u.short(ctx), a.ForgetRecipe, upgrades.ForgetRecipeInput{Job: u.st.Job, UpgradeID: u.in.UpgradeID}).Get(ctx, nil); err != nil {
			u.st.Notes = append(u.st.Notes, "the upgrade's recipe of record could not be removed: "+errorText(err)+"; the next window would restart the new version")
		} else {
			u.st.RecipeRecorded = false
		}
	}
	previous := ""
	for {
		rb.Attempts++
		rb.JobID = flinkID(u.wid+"-rollback", u.st.Job.Key, "restart", rb.Attempts)
		_ = u.writeManifest(ctx)
		res, err := u.restorePrevious(ctx, rb.Attempts, previous)
		if err == nil {
			rb.JobID = res.JobID
			rb.Healthy, rb.Error = &res, ""
			u.setPhase(ctx, UpgradePhaseRolledBack)
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("upgrade of %s rolled back (%s, by %s): the previous version runs as job %s from %s",
				u.st.Job.Key, req.Reason, req.By, res.JobID, u.rollbackSavepoint()), ErrTypeUpgradeRolledBack, nil)
		}
		rb.Error = errorText(err)
		previous = rb.JobID
		ans, derr := u.decide(ctx, DecisionRollbackFailed, fmt.Sprintf(
			"the previous version did not come back from %s: %s. Retry, or abort and restart it by hand (the manifest has the recipe)", u.rollbackSavepoint(), rb.Error),
			ActionRetry, ActionAbort)
		if derr != nil {
			return derr
		}
		if ans.Action == ActionAbort {
			u.setPhase(ctx, UpgradePhaseFailed)
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("rollback of %s abandoned by %s: neither version runs; restart the previous recipe from %s by hand",
				u.st.Job.Key, ans.By, u.rollbackSavepoint()), ErrTypeUpgradeFailed, nil)
		}
	}
}

// endNewVersion ends the new version before the previous one starts. A
// REST job is stopped with a savepoint if it runs, else cancelled. An
// operator job is suspended with a savepoint, or, when that fails (a new
// version that keeps failing takes none), without one; then its spec
// change is undone.
func (u *upgradeRun) endNewVersion(ctx workflow.Context) error {
	var a *upgrades.Activities
	rb := u.st.Rollback
	if !u.operator() {
		if u.st.NewJobID == "" {
			return nil // asked back before the new version was started
		}
		newVersion := u.st.Job
		newVersion.JobID = u.st.NewJobID
		var ended upgrades.EndJobResult
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, stopWithSavepointOptions(u.in.SavepointTimeout.D()+u.in.Health.RunningTimeout.D())),
			a.EndJob, upgrades.EndJobInput{Job: newVersion, TriggerID: flinkID(u.wid, newVersion.Key, "rollback-stop", 1),
				Format: u.in.Format, RunID: u.wid}).Get(ctx, &ended)
		rb.NewVersionSavepoint = ended.Savepoint
		return err
	}
	cctx := workflow.WithChildOptions(ctx, jobChildOptions(u.wid+"/rollback-savepoint",
		savepointChildSummary("the new version of "+u.st.Job.Key, "rollback of upgrade "+u.in.UpgradeID, 1)))
	var sp JobSavepointResult
	err := workflow.ExecuteChildWorkflow(cctx, JobSavepointWorkflowType, JobSavepointInput{WindowID: u.wid + "-rollback", Job: u.st.Job, Attempt: 1,
		Format: u.in.Format, Timeout: u.in.SavepointTimeout}).Get(ctx, &sp)
	if err == nil {
		rb.NewVersionSavepoint = sp.SavepointPath
	} else {
		u.st.Notes = append(u.st.Notes, "the new version was stopped without a savepoint: "+errorText(err))
		wait := operatorWait(u.in.Health.RunningTimeout.D())
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, operatorWaitOptions(wait)), a.DiscardJob,
			upgrades.DiscardJobInput{Job: u.st.Job, Timeout: wait}).Get(ctx, nil); err != nil {
			return err
		}
	}
	return workflow.ExecuteActivity(u.short(ctx), a.ChangeOperatorSpec,
		upgrades.OperatorSpecChangeInput{Job: u.st.Job, Change: *u.st.SpecInverse}).Get(ctx, nil)
}

// restorePrevious starts the previous version from the pre-upgrade
// savepoint and waits until it is healthy. An operator job is redeployed
// from exactly that savepoint, whatever the operator recorded since.
func (u *upgradeRun) restorePrevious(ctx workflow.Context, attempt int, previous string) (JobRestartResult, error) {
	var a *windows.Activities
	var upg *upgrades.Activities
	h := u.in.Health
	h.Checks = nil // what the new version had to achieve
	from := u.rollbackSavepoint()
	if !u.operator() {
		cctx := workflow.WithChildOptions(ctx, jobChildOptions(withAttempt(u.wid+"/rollback", attempt),
			restartChildSummary("restart the previous version of", u.st.Job.Key, "rollback of upgrade "+u.in.UpgradeID, attempt)))
		var res JobRestartResult
		err := workflow.ExecuteChildWorkflow(cctx, JobRestartWorkflowType, JobRestartInput{WindowID: u.wid + "-rollback", Job: u.st.Job,
			Attempt: attempt, SavepointPath: from, PreviousJobID: previous, Health: h}).Get(ctx, &res)
		return res, err
	}
	wait := operatorWait(u.in.Health.RunningTimeout.D())
	var started core.RestartJobResult
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, operatorWaitOptions(wait)), upg.RedeployJob,
		core.ResumeJobInput{Job: u.st.Job, SavepointPath: u.st.Savepoint, Timeout: wait}).Get(ctx, &started); err != nil {
		return JobRestartResult{}, err
	}
	var healthy windows.AwaitHealthyResult
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, awaitHealthyOptions(h)), a.AwaitHealthy,
		h.awaitHealthy(u.st.Job.RESTURL, started.JobID, from)).Get(ctx, &healthy); err != nil {
		return JobRestartResult{JobID: started.JobID}, err
	}
	return restartResult(started.JobID, healthy), nil
}

// UpgradeManifest is the durable record of an upgrade a person can act on
// without Temporal.
type UpgradeManifest struct {
	UpdatedAt time.Time    `json:"updatedAt"`
	Reason    string       `json:"reason"`
	Ticket    string       `json:"ticket,omitempty"`
	State     UpgradeState `json:"state"`
	// ByHand says how to get back to the previous version without
	// flinkmaint.
	ByHand string `json:"byHand"`
}

func (u *upgradeRun) writeManifest(ctx workflow.Context) error {
	workflow.SetCurrentDetails(ctx, upgradeDetails(&u.in, &u.st)) // every change is written here
	if u.in.CheckOnly {
		return nil // a check changes nothing to undo by hand
	}
	var a *windows.Activities
	m := UpgradeManifest{UpdatedAt: workflow.Now(ctx), Reason: u.in.Reason, Ticket: u.in.Ticket, State: u.st}
	switch {
	case u.st.Savepoint == "":
	case u.parallel() && !u.st.Retired:
		m.ByHand = fmt.Sprintf("the previous version still runs as job %s on %s: to roll back, end job %s of the new version (stop with a savepoint) if it runs",
			u.st.Job.JobID, u.st.Job.RESTURL, u.st.NewJobID)
	case u.operator():
		m.ByHand = fmt.Sprintf("suspend the resource (state.job.restart.resource), apply state.specInverse to its spec, then set spec.job.initialSavepointPath to %s, "+
			"change spec.job.savepointRedeployNonce and set spec.job.state to running", u.st.Savepoint)
	default:
		m.ByHand = fmt.Sprintf("end job %s of the new version if it runs (stop with a savepoint), then run the previous recipe (state.job.restart) on %s from %s in NO_CLAIM mode",
			u.st.NewJobID, u.st.Job.RESTURL, u.rollbackSavepoint())
	}
	content, err := json.MarshalIndent(m, "", "  ") //workflowcheck:ignore (deterministic, see WindowReport.Encode)
	if err != nil {
		return err
	}
	err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, documentOptions()), a.WriteDocument,
		core.WriteDocumentInput{Path: u.st.ManifestPath, Content: content}).Get(ctx, nil)
	if err != nil {
		u.logger.Error("manifest not written", "path", u.st.ManifestPath, "error", err)
	}
	return err
}
