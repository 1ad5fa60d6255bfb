package workflows

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/notify"
)

// MaintenanceWindowWorkflow runs a planned maintenance window: preflight,
// savepoint-all, wait for the network change, quota gate, staged restart
// and report. Operators steer it with the signals and updates in
// messages.go; the status query shows every job's progress.
func MaintenanceWindowWorkflow(ctx workflow.Context, in WindowInput) (*WindowReport, error) {
	in.Policy.ApplyDefaults()
	// A run continued as new was checked when its window started.
	strict := in.Resume == nil && workflow.GetVersion(ctx, changeStrictWindow, workflow.DefaultVersion, 1) >= 1
	if err := in.validate(strict); err != nil {
		return nil, newInvalidInputError(err.Error())
	}
	r := &windowRun{in: in, strict: strict, logger: log.With(workflow.GetLogger(ctx), "window", in.WindowID)}
	if in.Resume != nil {
		r.st = *in.Resume
	} else {
		r.st = WindowState{WindowID: in.WindowID, Phase: WindowPhasePreflight, StartedAt: workflow.Now(ctx)}
		r.st.ManifestPath = strings.TrimRight(in.Policy.ManifestDir, "/") + "/" + in.WindowID + "/manifest.json"
	}
	if err := r.registerHandlers(ctx); err != nil {
		return nil, err
	}
	r.bounded = workflow.GetVersion(ctx, changeBoundedHistory, workflow.DefaultVersion, 1) >= 1
	if r.bounded && workflow.GetVersion(ctx, changeManifestInterval, workflow.DefaultVersion, 1) >= 1 {
		r.manifestEvery = boundedManifestInterval
	}
	_ = workflow.UpsertMemo(ctx, map[string]interface{}{"reason": in.Reason, "ticket": in.Ticket})
	r.notes = newNotifier(ctx, KindWindow, in.WindowID, tenantNames(r.st.Tenants))
	r.lock = newTenantLock(ctx, r.st.TenantLockHeld)
	rep, err := r.run(ctx)
	if !workflow.IsContinueAsNewError(err) {
		r.releaseTenants(ctx) // whatever ended the window; a next run keeps the lock
	}
	return rep, err
}

func tenantNames(ts []inventory.Tenant) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

// lockTenants holds the window's tenants from savepoint-all until every
// job is healthy: no governance execution or upgrade changes them between
// a job's savepoint and its restart.
func (r *windowRun) lockTenants(ctx workflow.Context) error {
	_, err := r.lock.acquire(ctx, KindWindow, "window "+r.in.WindowID+": from savepoint-all until every job is healthy", tenantNames(r.st.Tenants),
		func(h []LockHold) {
			r.st.WaitingFor = ""
			if h != nil {
				r.st.WaitingFor = lockWaitText(h)
			}
			r.upsertVisibility(ctx)
		})
	if err != nil {
		return err
	}
	r.st.TenantLockHeld = r.lock.held
	return nil
}

func (r *windowRun) releaseTenants(ctx workflow.Context) {
	r.lock.release(ctx)
	r.st.TenantLockHeld = false
}

// windowRun is one execution's in-memory state around WindowState.
type windowRun struct {
	in     WindowInput
	st     WindowState
	logger log.Logger
	notes  *notifier
	lock   *tenantLock

	answer         *DecideRequest
	abortRequested bool
	reminders      int // network-change reminders sent in this run

	// bounded: this run keeps its history bounded (changeBoundedHistory).
	bounded bool
	// strict: preflight refuses a scope that does not resolve
	// (changeStrictWindow).
	strict bool
	// handOver is set once this run's history is long enough: no new
	// child starts, and the phase continues as new once running ones end.
	handOver bool

	// manifestEvery, when set, spaces the manifest rewrites of a phase's
	// child results (changeManifestInterval); manifestAt is the last
	// rewrite and manifestStale says results arrived since.
	manifestEvery time.Duration
	manifestAt    time.Time
	manifestStale bool
}

// changeBoundedHistory versions what keeps a window's history bounded for
// thousands of jobs: documents written by local activities (their content
// stays out of history), one manifest write per batch of child results,
// continue-as-new inside the savepoint and restart phases, and restart
// waves assigned once.
const changeBoundedHistory = "window-bounded-history-2026-11-30"

// changeManifestInterval versions the spacing of a bounded run's manifest
// rewrites between child results. Encoding the manifest costs time linear
// in the number of jobs, so one rewrite per batch made a window quadratic
// in its fleet and, on a busy worker, let one workflow task outlast the
// SDK's deadlock detector. Every savepoint is on storage meanwhile: the
// activity that took it wrote its catalog entry.
const changeManifestInterval = "window-manifest-interval-2026-12-01"

// boundedManifestInterval is the least workflow time between two manifest
// rewrites inside a phase; the phase's end, a handover, a decision and an
// abort always rewrite it.
const boundedManifestInterval = 10 * time.Second

// errContinueAsNew unwinds a phase whose run hands over to a fresh one.
var errContinueAsNew = errors.New("window continues as new")

func (r *windowRun) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (WindowState, error) { return r.st, nil }); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryReport, func() (*WindowReport, error) { return buildReport(&r.in, &r.st), nil }); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateConfirmNetworkChange,
		func(ctx workflow.Context, req ConfirmNetworkChangeRequest) (WindowState, error) {
			r.st.Network = &NetworkConfirmation{By: req.By, Reason: req.Reason, At: workflow.Now(ctx), Reminders: r.reminders}
			r.record(ctx, DecisionRecord{Kind: UpdateConfirmNetworkChange, By: req.By, Reason: req.Reason})
			return r.st, nil
		}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req ConfirmNetworkChangeRequest) error {
			if strings.TrimSpace(req.By) == "" {
				return errors.New("by is empty: say who confirms the network change")
			}
			if r.st.Phase != WindowPhaseNetworkGate || r.st.Network != nil {
				return fmt.Errorf("window %s is in phase %s, not waiting for a network change confirmation", r.in.WindowID, r.st.Phase)
			}
			return nil
		}}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateDecide,
		func(ctx workflow.Context, req DecideRequest) (WindowState, error) {
			r.answer = &req
			r.record(ctx, DecisionRecord{Kind: UpdateDecide, Action: req.Action, Job: req.Job, By: req.By, Reason: req.Reason})
			return r.st, nil
		}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req DecideRequest) error {
			return r.validateDecision(req)
		}}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateAbort,
		func(ctx workflow.Context, req AbortRequest) (WindowState, error) {
			r.abortRequested = true
			r.st.AbortReason = fmt.Sprintf("%s (by %s)", req.Reason, req.By)
			r.record(ctx, DecisionRecord{Kind: UpdateAbort, By: req.By, Reason: req.Reason})
			return r.st, nil
		}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req AbortRequest) error {
			if strings.TrimSpace(req.By) == "" || strings.TrimSpace(req.Reason) == "" {
				return errors.New("abort needs by and reason: both are recorded in the report")
			}
			if r.st.Phase == WindowPhaseCompleted || r.st.Phase == WindowPhaseAborted || r.abortRequested {
				return fmt.Errorf("window %s is already %s", r.in.WindowID, r.st.Phase)
			}
			return nil
		}}); err != nil {
		return err
	}
	workflow.Go(ctx, func(ctx workflow.Context) {
		pause := workflow.GetSignalChannel(ctx, SignalPause)
		resume := workflow.GetSignalChannel(ctx, SignalResume)
		for {
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(pause, func(c workflow.ReceiveChannel, _ bool) {
				var req PauseRequest
				c.Receive(ctx, &req)
				r.st.Paused, r.st.PausedBy = true, req.By
				r.record(ctx, DecisionRecord{Kind: SignalPause, By: req.By, Reason: req.Reason})
				r.upsertVisibility(ctx)
			})
			sel.AddReceive(resume, func(c workflow.ReceiveChannel, _ bool) {
				var req ResumeRequest
				c.Receive(ctx, &req)
				r.st.Paused, r.st.PausedBy = false, ""
				r.record(ctx, DecisionRecord{Kind: SignalResume, By: req.By})
				r.upsertVisibility(ctx)
			})
			sel.Select(ctx)
		}
	})
	return nil
}

func (r *windowRun) validateDecision(req DecideRequest) error {
	p := r.st.Pending
	if p == nil || p.Kind == DecisionNetworkChange {
		return fmt.Errorf("window %s is not waiting for a decision (phase %s)", r.in.WindowID, r.st.Phase)
	}
	if strings.TrimSpace(req.By) == "" {
		return errors.New("by is empty: say who decides")
	}
	allowed := false
	for _, a := range p.Allowed {
		allowed = allowed || a == req.Action
	}
	if !allowed {
		return fmt.Errorf("action %q is not valid now: the window waits for %s and accepts %s", req.Action, p.Kind, strings.Join(p.Allowed, ", "))
	}
	if req.Action == ActionRetryJob || req.Action == ActionSkipJob {
		for _, j := range p.Jobs {
			if j == req.Job {
				return nil
			}
		}
		return fmt.Errorf("job %q is not one the decision is about: choose one of %s", req.Job, strings.Join(p.Jobs, ", "))
	}
	return nil
}

func (r *windowRun) record(ctx workflow.Context, d DecisionRecord) {
	d.At = workflow.Now(ctx)
	r.st.Decisions = append(r.st.Decisions, d)
	r.logger.Info("operator action", "kind", d.Kind, "action", d.Action, "job", d.Job, "by", d.By, "reason", d.Reason)
}

// errAborted unwinds the phases when an operator aborted.
var errAborted = errors.New("window aborted")

func (r *windowRun) run(ctx workflow.Context) (*WindowReport, error) {
	phases := []struct {
		name string
		fn   func(workflow.Context) error
	}{
		{WindowPhasePreflight, r.preflight},
		{WindowPhaseRehearse, r.rehearse},
		{WindowPhaseSavepointAll, r.savepointAll},
		{WindowPhaseNetworkGate, r.networkGate},
		{WindowPhaseProveSavepoints, r.proveSavepoints},
		{WindowPhaseQuotaGate, r.quotaGate},
		{WindowPhaseRestart, r.restart},
		{WindowPhaseCleanup, r.cleanup},
		{WindowPhaseReport, r.report},
	}
	start := 0
	for i, p := range phases {
		if p.name == r.st.Phase {
			start = i
		}
	}
	for _, p := range phases[start:] {
		// Runs started before the cleanup phase existed go straight from
		// the restart to the report; decide before any command of the phase.
		if p.name == WindowPhaseCleanup && workflow.GetVersion(ctx, changeCleanupPhase, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
			continue
		}
		// Only windows that ask for the proof have the phase, so windows
		// without it, running or new, keep their commands.
		if p.name == WindowPhaseProveSavepoints && !r.in.Policy.Drill.ProveSavepoints || p.name == WindowPhaseRehearse && !r.in.Policy.Rehearse.on() {
			continue
		}
		r.setPhase(ctx, p.name)
		var err error
		switch p.name {
		case WindowPhaseSavepointAll:
			err = r.lockTenants(ctx)
		case WindowPhaseCleanup, WindowPhaseReport:
			r.releaseTenants(ctx) // every job is back
		}
		if err == nil {
			err = p.fn(ctx)
		}
		if errors.Is(err, errAborted) {
			return r.finishAborted(ctx)
		}
		if errors.Is(err, errContinueAsNew) {
			return nil, r.continueAsNew(ctx)
		}
		if err != nil {
			// The window's own failure: keep what is known durable first.
			r.st.Notes = append(r.st.Notes, fmt.Sprintf("phase %s failed: %s", p.name, errorText(err)))
			_ = r.writeManifest(ctx)
			r.notes.ended(ctx, p.name, fmt.Sprintf("window %s failed in %s", r.in.WindowID, p.name), err)
			return buildReport(&r.in, &r.st), err
		}
		if can := r.continueAsNewIfSuggested(ctx); can != nil {
			return nil, can
		}
	}
	r.st.FinishedAt = workflow.Now(ctx)
	r.setPhase(ctx, WindowPhaseCompleted)
	_ = r.writeManifest(ctx)
	rep := buildReport(&r.in, &r.st)
	total, done, failed := r.st.counts()
	r.notes.ended(ctx, WindowPhaseCompleted, fmt.Sprintf("window %s completed: %d of %d jobs done, %d failed", r.in.WindowID, done, total, failed), nil)
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return nil, err
	}
	return rep, nil
}

func (r *windowRun) finishAborted(ctx workflow.Context) (*WindowReport, error) {
	r.st.FinishedAt = workflow.Now(ctx)
	r.st.Pending = nil
	r.setPhase(ctx, WindowPhaseAborted)
	_ = r.writeManifest(ctx)
	rep := buildReport(&r.in, &r.st)
	r.writeReport(ctx, rep)
	r.notes.ended(ctx, WindowPhaseAborted, fmt.Sprintf("window %s aborted: %s", r.in.WindowID, r.st.AbortReason), nil)
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return nil, err
	}
	return rep, nil
}

// continueAsNewIfSuggested carries the state into a fresh run when history
// grows large; called between phases, where no decision is pending.
func (r *windowRun) continueAsNewIfSuggested(ctx workflow.Context) error {
	full := workflow.GetInfo(ctx).GetContinueAsNewSuggested()
	if r.bounded {
		full = r.handOver || r.historyFull(ctx)
	}
	if !full {
		return nil
	}
	return r.continueAsNew(ctx)
}

// continueAsNew hands the window's state to a fresh run once every update
// handler has finished.
func (r *windowRun) continueAsNew(ctx workflow.Context) error {
	r.logger.Info("continuing as new", "phase", r.st.Phase, "historyEvents", workflow.GetInfo(ctx).GetCurrentHistoryLength())
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	next := r.in
	st := r.st
	next.Resume = &st
	return workflow.NewContinueAsNewError(ctx, MaintenanceWindowWorkflowType, next)
}

func (r *windowRun) setPhase(ctx workflow.Context, phase string) {
	if r.st.Phase != phase {
		r.logger.Info("phase", "from", r.st.Phase, "to", phase)
	}
	changed := r.st.Phase != phase
	if changed || len(r.st.PhaseStarts) == 0 {
		r.st.PhaseStarts = append(r.st.PhaseStarts, PhaseStart{Phase: phase, At: workflow.Now(ctx)})
	}
	r.st.Phase = phase
	r.upsertVisibility(ctx)
	if changed && r.notes != nil {
		r.notes.tenants = tenantNames(r.st.Tenants)
		r.notes.phase(ctx, phase, "window "+r.in.WindowID+": "+phase)
	}
}

func (r *windowRun) upsertVisibility(ctx workflow.Context) {
	total, done, failed := r.st.counts()
	tenants := make([]string, 0, len(r.st.Tenants))
	for _, t := range r.st.Tenants {
		tenants = append(tenants, t.Name)
	}
	err := workflow.UpsertTypedSearchAttributes(ctx,
		SearchAttrKind.ValueSet(KindWindow),
		SearchAttrPhase.ValueSet(r.st.Phase),
		SearchAttrTenants.ValueSet(tenants),
		SearchAttrJobsTotal.ValueSet(int64(total)),
		SearchAttrJobsDone.ValueSet(int64(done)),
		SearchAttrJobsFailed.ValueSet(int64(failed)),
		SearchAttrPausedForDecision.ValueSet(r.st.Pending != nil || r.st.Paused),
	)
	if err != nil {
		r.logger.Warn("search attributes not updated", "error", err)
	}
	summary := fmt.Sprintf("%s: %d/%d jobs done, %d failed", r.st.Phase, done, total, failed)
	if r.st.Pending != nil {
		head, _ := reasonLines(r.st.Pending.Reason)
		summary += "; waiting for " + r.st.Pending.Kind + ": " + head
	}
	_ = workflow.UpsertMemo(ctx, map[string]interface{}{"summary": summary})
	workflow.SetCurrentDetails(ctx, windowDetails(&r.in, &r.st))
}

// safePoint waits while an operator pause is on; it reports an abort.
func (r *windowRun) safePoint(ctx workflow.Context) error {
	if err := workflow.Await(ctx, func() bool { return !r.st.Paused || r.abortRequested }); err != nil {
		return err
	}
	if r.abortRequested {
		return errAborted
	}
	return nil
}

// decide pauses the window for an operator decision and returns it.
func (r *windowRun) decide(ctx workflow.Context, kind, reason string, jobs []string, allowed ...string) (DecideRequest, error) {
	r.st.Pending = &PendingDecision{Kind: kind, Reason: reason, Jobs: jobs, Allowed: allowed, Since: workflow.Now(ctx)}
	r.answer = nil
	r.logger.Warn("waiting for an operator decision", "kind", kind, "reason", reason, "jobs", jobs, "allowed", allowed)
	r.upsertVisibility(ctx)
	_ = r.writeManifest(ctx)
	if _, err := r.notes.awaitAnswer(ctx, notify.Event{Decision: kind, Title: fmt.Sprintf("window %s waits for %s", r.in.WindowID, kind), Text: reason,
		Commands: WindowCommands(r.in.WindowID, r.st.Pending)}, r.in.Policy.Network.ReminderInterval.D(), 0,
		func() bool { return r.answer != nil || r.abortRequested }); err != nil {
		return DecideRequest{}, err
	}
	r.st.Pending = nil
	r.upsertVisibility(ctx)
	if r.abortRequested {
		return DecideRequest{}, errAborted
	}
	ans := *r.answer
	r.answer = nil
	if ans.Action == ActionAbort {
		r.abortRequested = true
		r.st.AbortReason = fmt.Sprintf("%s (by %s)", ans.Reason, ans.By)
		return ans, errAborted
	}
	return ans, nil
}

func (r *windowRun) activity(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, shortActivityOptions())
}

// ---- phases ----

func (r *windowRun) preflight(ctx workflow.Context) error {
	var a *windows.Activities
	if r.st.Jobs == nil {
		var found core.DiscoverJobsResult
		if err := workflow.ExecuteActivity(r.activity(ctx), a.DiscoverJobs, core.DiscoverJobsInput{Scope: r.in.Scope}).Get(ctx, &found); err != nil {
			return fmt.Errorf("inventory: %w", err)
		}
		if r.strict {
			if err := scopeRefusal(found); err != nil {
				return err
			}
		}
		if err := drainRefusal(found.Jobs, r.in.Policy.Savepoint); err != nil {
			return err
		}
		r.st.Tenants, r.st.Clusters, r.st.Skipped = found.Tenants, found.Clusters, found.Skipped
		// A window nobody overrode stops nothing inside a freeze.
		if _, note, err := checkFreeze(ctx, "window "+r.in.WindowID, tenantNames(found.Tenants), r.in.OverrideFreeze,
			"flinkmaint window start -f FILE --override-freeze --reason TEXT"); err != nil {
			return err
		} else if note != "" {
			if r.in.OverrideFreeze == nil { // a window is never skipped, only refused
				return temporal.NewNonRetryableApplicationError(note, ErrTypeFrozen, nil)
			}
			r.st.Notes = append(r.st.Notes, note)
		}
		r.st.Jobs = make([]JobProgress, 0, len(found.Jobs))
		for _, j := range found.Jobs {
			r.st.Jobs = append(r.st.Jobs, JobProgress{Target: j, SavepointState: StepPending, RestartState: StepPending})
		}
		r.upsertVisibility(ctx)
	}
	// Runs started before the footprint was measured here measure it at the
	// gate, after the stop, when Flink has discarded the checkpoints.
	measure := workflow.GetVersion(ctx, changeFootprintInPreflight, workflow.DefaultVersion, 1) >= 1
	for {
		var restart []capacity.RestartFootprintInput
		if measure {
			for _, j := range r.st.Jobs {
				restart = append(restart, restartFootprint(j.Target, 0, nil))
			}
		}
		res, err := r.checkQuotaResult(ctx, restart)
		if err != nil {
			return err
		}
		r.st.QuotaBefore = res.Tenants
		index := make(map[string]int, len(r.st.Jobs))
		for i, j := range r.st.Jobs {
			index[j.Target.Key] = i
		}
		for _, fp := range res.Footprints {
			if i, ok := index[fp.Key]; ok {
				r.st.Jobs[i].Footprint = &fp
			}
		}
		var over []string
		for _, t := range res.Tenants {
			switch {
			case t.Level == "critical":
				over = append(over, t.Reason)
			case !t.RestartAllowed:
				over = append(over, "restart would not fit: "+t.GateReason)
			}
		}
		if len(over) == 0 || r.in.Policy.Quota.IgnorePreflightWatermark {
			break
		}
		ans, err := r.decide(ctx, DecisionPreflightWatermark,
			"tenants too full before any job is stopped: "+strings.Join(over, "; ")+
				". retry after cleanup or a quota raise, resume to go on anyway, or abort",
			nil, ActionRetry, ActionResume, ActionAbort)
		if err != nil {
			return err
		}
		if ans.Action == ActionResume {
			break
		}
	}
	if r.in.Policy.Drill.Canary && r.st.Canary == nil {
		if err := r.chooseCanary(ctx); err != nil {
			return err
		}
	}
	// No job is stopped before the manifest is on storage: it is how people
	// restart jobs if Temporal is lost. Runs started before this rule only
	// logged a failed write.
	required := workflow.GetVersion(ctx, changeManifestBeforeStops, workflow.DefaultVersion, 1) >= 1
	for {
		err := r.writeManifest(ctx)
		if err == nil || !required {
			return nil
		}
		if _, err := r.decide(ctx, DecisionManifestUnwritable,
			fmt.Sprintf("the manifest %s cannot be written, so no job is stopped yet: %s. Make sure the directory lies under an existing storage.writableRoots entry, then retry; or abort",
				r.st.ManifestPath, errorText(err)), nil, ActionRetry, ActionAbort); err != nil {
			return err
		}
	}
}

// changeManifestBeforeStops versions the rule that preflight waits for a
// written manifest before savepoint-all.
const changeManifestBeforeStops = "window-manifest-before-stops-2026-11-30"

// changeFootprintInPreflight versions measuring each job's checkpoint
// footprint in preflight, and pausing there when the restart would not fit.
const changeFootprintInPreflight = "window-footprint-in-preflight-2026-12-01"

func (r *windowRun) checkQuota(ctx workflow.Context, restart []capacity.RestartFootprintInput) ([]capacity.TenantQuota, error) {
	res, err := r.checkQuotaResult(ctx, restart)
	return res.Tenants, err
}

func (r *windowRun) checkQuotaResult(ctx workflow.Context, restart []capacity.RestartFootprintInput) (capacity.CheckQuotaResult, error) {
	var a *capacity.Activities
	var res capacity.CheckQuotaResult
	err := workflow.ExecuteActivity(r.activity(ctx), a.CheckQuota, r.in.Policy.Quota.checkInput(r.st.Tenants, restart)).Get(ctx, &res)
	if err != nil {
		return capacity.CheckQuotaResult{}, fmt.Errorf("quota check: %w", err)
	}
	return res, nil
}

func (r *windowRun) savepointAll(ctx workflow.Context) error {
	if c := r.st.Canary; c != nil && c.Outcome != catalog.DrillPassed && c.WaivedBy == "" {
		if err := r.canaryFirst(ctx); err != nil {
			return err
		}
	}
	return r.savepointJobs(ctx, nil)
}

// savepointJobs stops the pending jobs (those only selects, when set) with
// a savepoint, and asks the operator about the ones that fail.
func (r *windowRun) savepointJobs(ctx workflow.Context, only func(key string) bool) error {
	p := r.in.Policy.Savepoint
	for {
		var keys []string
		for _, j := range r.st.Jobs {
			if (j.SavepointState == StepPending || j.SavepointState == StepRunning) && (only == nil || only(j.Target.Key)) {
				keys = append(keys, j.Target.Key)
			}
		}
		err := r.runChildren(ctx, keys, p.Concurrency, func(ctx workflow.Context, key string) workflow.ChildWorkflowFuture {
			j := r.st.job(key)
			j.SavepointState = StepRunning
			j.SavepointAttempts = max(j.SavepointAttempts, 1)
			in := JobSavepointInput{WindowID: r.in.WindowID, Job: j.Target, Attempt: j.SavepointAttempts, Format: p.Format, Timeout: p.Timeout,
				Drain: p.drains(j.Target)}
			cctx := workflow.WithChildOptions(ctx, jobChildOptions(JobSavepointWorkflowID(r.in.WindowID, key, j.SavepointAttempts),
				savepointChildSummary(key, "window "+r.in.WindowID, j.SavepointAttempts)))
			return workflow.ExecuteChildWorkflow(cctx, JobSavepointWorkflowType, in)
		}, func(ctx workflow.Context, key string, f workflow.ChildWorkflowFuture) {
			j := r.st.job(key)
			var res JobSavepointResult
			if err := f.Get(ctx, &res); err != nil {
				seen := seenAfterStop(err)
				j.SavepointState, j.SavepointError = StepFailed, errorText(err)
				j.Seen, j.SeenState = seen.Seen, seen.State
				j.StoppedWithoutSavepoint = seen.Seen == core.JobSeenStopped
				r.logger.Warn("savepoint failed", "job", key, "error", j.SavepointError, "seen", j.Seen)
				return
			}
			j.SavepointState, j.SavepointPath, j.SavepointFiles, j.SavepointError = StepDone, res.SavepointPath, res.Files, ""
			j.Seen, j.SeenState, j.StoppedWithoutSavepoint = "", "", false
			j.SavepointRecovered, j.SavepointFormatNote = res.Recovered, res.FormatNote
			j.StoppedAt = workflow.Now(ctx)
		})
		if err != nil {
			return err
		}
		failed := r.jobsWhere(func(j *JobProgress) bool {
			return j.SavepointState == StepFailed && (only == nil || only(j.Target.Key))
		})
		if len(failed) == 0 {
			return nil
		}
		if p.OnFailure == OnFailureSkip {
			for _, k := range failed {
				r.skip(k, "savepoint failed and policy.savepoint.onFailure is skip; "+r.stillRuns(k))
			}
			return nil
		}
		ans, err := r.decide(ctx, DecisionSavepointFailures,
			fmt.Sprintf("%d job(s) could not be stopped with a savepoint:", len(failed))+failureLines(r.in.WindowID, failed, func(k string) (string, string) {
				j := r.st.job(k)
				return afterStopText(jobSeen(j), j.Target), j.SavepointError
			}),
			failed, ActionRetryJob, ActionSkipJob, ActionResume, ActionAbort)
		if err != nil {
			return err
		}
		switch ans.Action {
		case ActionRetryJob:
			j := r.st.job(ans.Job)
			j.SavepointState, j.SavepointAttempts = StepPending, j.SavepointAttempts+1
		case ActionSkipJob:
			r.skip(ans.Job, "operator skipped it after its savepoint failed ("+ans.By+"); "+r.stillRuns(ans.Job))
		case ActionResume:
			for _, k := range failed {
				r.skip(k, "operator resumed without it after its savepoint failed ("+ans.By+"); "+r.stillRuns(k))
			}
		}
	}
}

// stillRuns says, for a skip reason, what became of a job whose savepoint
// failed.
func (r *windowRun) stillRuns(key string) string {
	j := r.st.job(key)
	return afterStopText(jobSeen(j), j.Target)
}

func (r *windowRun) skip(key, reason string) {
	j := r.st.job(key)
	if j.SavepointState != StepDone {
		j.SavepointState = StepSkipped
	}
	j.RestartState, j.SkipReason = StepSkipped, reason
}

func (r *windowRun) jobsWhere(pred func(*JobProgress) bool) []string {
	var keys []string
	for i := range r.st.Jobs {
		if pred(&r.st.Jobs[i]) {
			keys = append(keys, r.st.Jobs[i].Target.Key)
		}
	}
	return keys
}

// runChildren starts a child per key, at most limit at once (a sliding
// window), and hands each result to done. A pause stops new starts at this
// safe point while running children finish; an abort drains them.
func (r *windowRun) runChildren(ctx workflow.Context, keys []string, limit int,
	start func(workflow.Context, string) workflow.ChildWorkflowFuture,
	done func(workflow.Context, string, workflow.ChildWorkflowFuture)) error {
	sel := workflow.NewSelector(ctx)
	inflight, next := 0, 0
	for next < len(keys) || inflight > 0 {
		for inflight < limit && next < len(keys) && !r.st.Paused && !r.abortRequested && !r.handOver {
			key := keys[next]
			next++
			f := start(ctx, key)
			inflight++
			sel.AddFuture(f, func(fut workflow.Future) {
				inflight--
				done(ctx, key, f)
			})
		}
		workflow.SetCurrentDetails(ctx, windowDetails(&r.in, &r.st))
		if inflight == 0 {
			if r.abortRequested {
				return errAborted
			}
			if r.handOver {
				r.flushManifest(ctx)
				return errContinueAsNew
			}
			r.flushManifest(ctx) // a pause may last
			if err := r.safePoint(ctx); err != nil {
				return err
			}
			continue
		}
		sel.Select(ctx)
		if r.bounded {
			// Every result already in: one visibility update and one
			// manifest write for the lot.
			for sel.HasPending() {
				sel.Select(ctx)
			}
			r.handOver = r.handOver || r.historyFull(ctx)
		}
		r.upsertVisibility(ctx)
		r.progressManifest(ctx)
	}
	if r.abortRequested {
		return errAborted
	}
	r.flushManifest(ctx)
	return nil
}

// progressManifest rewrites the manifest after child results, at most once
// per manifestEvery of workflow time when that is set.
func (r *windowRun) progressManifest(ctx workflow.Context) {
	if r.manifestEvery > 0 && workflow.Now(ctx).Sub(r.manifestAt) < r.manifestEvery {
		r.manifestStale = true
		return
	}
	r.manifestStale = false
	r.manifestAt = workflow.Now(ctx)
	_ = r.writeManifest(ctx)
}

// flushManifest writes results that progressManifest held back.
func (r *windowRun) flushManifest(ctx workflow.Context) {
	if r.manifestStale {
		r.manifestStale = false
		r.manifestAt = workflow.Now(ctx)
		_ = r.writeManifest(ctx)
	}
}

// historyFull reports whether this run should hand over to a fresh one.
func (r *windowRun) historyFull(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= r.in.Policy.History.MaxEventsPerRun
}

func (r *windowRun) networkGate(ctx workflow.Context) error {
	n := r.in.Policy.Network
	if !n.Skip && r.st.Network == nil {
		r.st.Pending = &PendingDecision{Kind: DecisionNetworkChange, Allowed: []string{UpdateConfirmNetworkChange},
			Reason: "all jobs in scope are stopped with savepoints; confirm the network change is done (flinkmaint window confirm-network-change)",
			Since:  workflow.Now(ctx)}
		r.upsertVisibility(ctx)
		told := notify.Event{Kind: notify.KindDecisionPending, Decision: DecisionNetworkChange, Severity: notify.SeverityWarning,
			Title:    fmt.Sprintf("window %s: every job is stopped with a savepoint; confirm the network change is done", r.in.WindowID),
			Commands: WindowCommands(r.in.WindowID, r.st.Pending), RepeatEvery: n.ReminderInterval.D()}
		r.notes.send(ctx, told)
		begin := workflow.Now(ctx)
		nextReminder := begin.Add(n.ReminderInterval.D())
		deadline := begin.Add(n.Deadline.D())
		deadlinePassed := false
		for r.st.Network == nil && !r.abortRequested {
			now := workflow.Now(ctx)
			wake := nextReminder
			if !deadlinePassed && deadline.Before(wake) {
				wake = deadline
			}
			if n.AutoConfirmAfter > 0 {
				if auto := begin.Add(n.AutoConfirmAfter.D()); auto.Before(wake) {
					wake = auto
				}
			}
			ok, err := workflow.AwaitWithTimeout(ctx, max(wake.Sub(now), time.Millisecond), func() bool {
				return r.st.Network != nil || r.abortRequested
			})
			if err != nil {
				return err
			}
			if ok {
				break
			}
			now = workflow.Now(ctx)
			if n.AutoConfirmAfter > 0 && !now.Before(begin.Add(n.AutoConfirmAfter.D())) {
				r.st.Network = &NetworkConfirmation{By: "flinkmaint (auto-confirm)", Auto: true, At: now, Reminders: r.reminders,
					Reason: fmt.Sprintf("policy.network.autoConfirmAfter=%s elapsed; for demos and rehearsals only", n.AutoConfirmAfter)}
				r.logger.Warn("network change confirmed automatically", "after", n.AutoConfirmAfter.String())
				break
			}
			if !now.Before(nextReminder) {
				r.reminders++
				nextReminder = nextReminder.Add(n.ReminderInterval.D())
				workflow.GetMetricsHandler(ctx).Counter("flinkmaint_window_network_reminders").Inc(1)
				r.logger.Warn("still waiting for the network change confirmation", "waiting", now.Sub(begin).String(), "reminder", r.reminders)
				told.Reminder = r.reminders
				r.notes.send(ctx, told)
			}
			if !deadlinePassed && !now.Before(deadline) {
				deadlinePassed = true
				r.st.Notes = append(r.st.Notes, fmt.Sprintf("network change not confirmed within %s", n.Deadline))
				if n.OnDeadline == OnDeadlineAbort {
					r.abortRequested = true
					r.st.AbortReason = fmt.Sprintf("network change not confirmed within policy.network.deadline=%s", n.Deadline)
				}
				r.logger.Error("network change deadline passed", "deadline", n.Deadline.String(), "onDeadline", n.OnDeadline)
			}
		}
		r.st.Pending = nil
		if workflow.GetVersion(ctx, changeNetworkGateVisibility, workflow.DefaultVersion, 1) == 1 {
			// The probe after the gate can take long: the UI must not list
			// the window as waiting for a person meanwhile.
			r.upsertVisibility(ctx)
		}
		told.Resolved, told.Commands, told.Reminder, told.Title = true, nil, 0, fmt.Sprintf("window %s: network change wait ended", r.in.WindowID)
		if r.st.Network != nil {
			r.st.Network.Reminders = r.reminders
			told.Title = fmt.Sprintf("window %s: network change confirmed by %s", r.in.WindowID, r.st.Network.By)
		}
		r.notes.send(ctx, told)
		workflow.SetCurrentDetails(ctx, windowDetails(&r.in, &r.st))
		if r.abortRequested {
			return errAborted
		}
	}
	return r.probe(ctx)
}

// changeNetworkGateVisibility versions the search attributes written as
// soon as the network gate is answered.
const changeNetworkGateVisibility = "window-network-gate-visibility-2026-12-04"

// probe waits, with backoff, until storage, Flink and (optionally) the
// Kubernetes API answer again; if they never do, the operator decides.
func (r *windowRun) probe(ctx workflow.Context) error {
	var a *windows.Activities
	in := windows.ProbeEndpointsInput{Kubernetes: r.in.Policy.Network.ProbeKubernetes}
	for _, t := range r.st.Tenants {
		in.StorageRoots = append(in.StorageRoots, t.Root)
	}
	for _, c := range r.st.Clusters {
		in.FlinkURLs = append(in.FlinkURLs, c.RESTURL)
	}
	for {
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, probeOptions(r.in.Policy.Network.ProbeTimeout.D())),
			a.ProbeEndpoints, in).Get(ctx, nil)
		if err == nil {
			return nil
		}
		if _, err := r.decide(ctx, DecisionEndpointsUnreachable, "after the network change these endpoints still do not answer: "+errorText(err),
			nil, ActionRetry, ActionAbort); err != nil {
			return err
		}
	}
}

func (r *windowRun) quotaGate(ctx workflow.Context) error {
	if r.in.Policy.Quota.SkipGate {
		r.st.Notes = append(r.st.Notes, "quota gate skipped by policy.quota.skipGate")
		return nil
	}
	for {
		var restart []capacity.RestartFootprintInput
		for _, j := range r.st.Jobs {
			if j.SavepointState != StepDone || j.RestartState == StepSkipped {
				continue
			}
			restart = append(restart, restartFootprint(j.Target, j.SavepointFiles, j.Footprint))
		}
		q, err := r.checkQuota(ctx, restart)
		if err != nil {
			return err
		}
		r.st.QuotaGate = q
		var short []string
		for _, t := range q {
			if !t.RestartAllowed {
				short = append(short, fmt.Sprintf("%s: used %d of %d, restart needs %d (headroom %d): %s",
					t.Tenant, t.NamespaceUsed, t.NamespaceQuota, t.ProjectedFiles, t.Headroom, t.GateReason))
			}
		}
		if len(short) == 0 {
			return nil
		}
		ans, err := r.decide(ctx, DecisionQuota, "restart would not fit the namespace quota: "+strings.Join(short, "; ")+
			". retry after cleanup or a quota raise, resume to restart anyway, or abort", nil, ActionRetry, ActionResume, ActionAbort)
		if err != nil {
			return err
		}
		if ans.Action == ActionResume {
			r.st.Notes = append(r.st.Notes, "quota gate overridden by "+ans.By+": "+ans.Reason)
			return nil
		}
	}
}

// assignWaves gives every restartable job its wave (restartWaves) and
// returns the number of waves.
func (r *windowRun) assignWaves() int {
	keys := r.jobsWhere(func(j *JobProgress) bool { return j.SavepointState == StepDone && j.RestartState != StepSkipped })
	sort.Strings(keys)
	waves := restartWaves(keys, r.in.Policy.Restart)
	for w, inWave := range waves {
		for _, k := range inWave {
			r.st.job(k).RestartWave = w
		}
	}
	return len(waves)
}

func (r *windowRun) restart(ctx workflow.Context) error {
	p := r.in.Policy.Restart
	waves := r.st.Waves
	if !r.bounded || waves == 0 {
		waves = r.assignWaves()
		if r.bounded {
			r.st.Waves = waves
		}
	}
	for w := r.st.Wave; w < waves; w++ {
		r.st.Wave = w
		if err := r.safePoint(ctx); err != nil {
			return err
		}
		for {
			keys := r.jobsWhere(func(j *JobProgress) bool {
				return j.RestartWave == w && j.SavepointState == StepDone && (j.RestartState == StepPending || j.RestartState == StepRunning)
			})
			err := r.runChildren(ctx, keys, p.Concurrency, func(ctx workflow.Context, key string) workflow.ChildWorkflowFuture {
				j := r.st.job(key)
				previous := ""
				if j.RestartAttempts > 0 && j.RestartState != StepRunning {
					previous = j.NewJobID
					j.RestartAttempts++
				}
				j.RestartAttempts = max(j.RestartAttempts, 1)
				j.RestartState = StepRunning
				j.NewJobID = flinkID(r.in.WindowID, key, "restart", j.RestartAttempts)
				in := JobRestartInput{WindowID: r.in.WindowID, Job: j.Target, Attempt: j.RestartAttempts,
					SavepointPath: j.SavepointPath, PreviousJobID: previous, Health: p}
				cctx := workflow.WithChildOptions(ctx, jobChildOptions(JobRestartWorkflowID(r.in.WindowID, key, j.RestartAttempts),
					restartChildSummary("restart", key, "window "+r.in.WindowID+", "+waveText(w), j.RestartAttempts)))
				return workflow.ExecuteChildWorkflow(cctx, JobRestartWorkflowType, in)
			}, func(ctx workflow.Context, key string, f workflow.ChildWorkflowFuture) {
				j := r.st.job(key)
				var res JobRestartResult
				if err := f.Get(ctx, &res); err != nil {
					seen := seenAfterRestart(err)
					j.RestartState, j.RestartError = StepFailed, errorText(err)
					j.Seen, j.SeenState = seen.Seen, seen.State
					r.logger.Warn("restart failed", "job", key, "error", j.RestartError, "seen", j.Seen)
					return
				}
				j.RestartState, j.RestartError = StepDone, ""
				j.Seen, j.SeenState = "", ""
				j.NewJobID, j.RestoredFrom, j.CheckpointID, j.CheckpointPath = res.JobID, res.RestoredFrom, res.CheckpointID, res.CheckpointPath
				j.HealthyAt = workflow.Now(ctx)
			})
			if err != nil {
				return err
			}
			failed := r.jobsWhere(func(j *JobProgress) bool { return j.RestartWave == w && j.RestartState == StepFailed })
			if len(failed) <= p.FailureBudget {
				break
			}
			label := fmt.Sprintf("wave %d", w)
			if w == 0 {
				label = "canary wave"
			}
			ans, err := r.decide(ctx, DecisionRestartFailures,
				fmt.Sprintf("%s: %d job(s) did not become healthy (budget %d):", label, len(failed), p.FailureBudget)+failureLines(r.in.WindowID, failed, func(k string) (string, string) {
					j := r.st.job(k)
					return afterRestartText(jobSeen(j), j), j.RestartError
				}),
				failed, ActionRetryJob, ActionSkipJob, ActionResume, ActionAbort)
			if err != nil {
				return err
			}
			switch ans.Action {
			case ActionRetryJob:
				r.st.job(ans.Job).RestartState = StepPending
			case ActionSkipJob:
				j := r.st.job(ans.Job)
				j.RestartState, j.SkipReason = StepSkipped, fmt.Sprintf("operator skipped it after its restart failed (%s): %s; cause: %s", ans.By, afterRestartText(jobSeen(j), j), j.RestartError)
			case ActionResume:
				r.st.Notes = append(r.st.Notes, fmt.Sprintf("%s: %s resumed with %d failed job(s)", label, ans.By, len(failed)))
			}
			if ans.Action == ActionResume {
				break
			}
		}
	}
	return nil
}

// cleanup runs the reference-safe Governance cleanup over the window's
// tenants as a child, in the policy's mode; with plan-and-approve it waits
// for `flinkmaint governance approve`. Its failure does not fail the
// window: the jobs are already back, and the report says what happened.
func (r *windowRun) cleanup(ctx workflow.Context) error {
	p := r.in.Policy.Cleanup
	if p.Mode == CleanupModeSkip || len(r.st.Tenants) == 0 {
		r.st.Notes = append(r.st.Notes, "post-restart cleanup skipped (policy.cleanup.mode="+p.Mode+")")
		return nil
	}
	runID := "window-" + r.in.WindowID
	id := WindowCleanupWorkflowID(r.in.WindowID)
	tenants := make([]string, 0, len(r.st.Tenants))
	for _, t := range r.st.Tenants {
		tenants = append(tenants, t.Name)
	}
	r.st.Cleanup = &WindowCleanup{WorkflowID: id, RunID: runID, Mode: p.Mode}
	if p.Mode == ModePlanAndApprove {
		r.st.Notes = append(r.st.Notes, fmt.Sprintf("post-restart cleanup %s waits for approval: flinkmaint governance status %s shows the plan and its sha256, then flinkmaint governance approve %s --plan-sha256 SHA", id, id, id))
	}
	r.upsertVisibility(ctx)
	in := r.in.cleanupInput(tenants)
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: id, StaticSummary: governanceSummary(in),
		TypedSearchAttributes: temporal.NewSearchAttributes(SearchAttrKind.ValueSet(KindGovernance))})
	var rep GovernanceReport
	if err := workflow.ExecuteChildWorkflow(cctx, GovernanceWorkflowType, in).Get(ctx, &rep); err != nil {
		r.st.Cleanup.Error = errorText(err)
		r.st.Notes = append(r.st.Notes, "post-restart cleanup failed: "+r.st.Cleanup.Error)
		return nil
	}
	c := r.st.Cleanup
	c.Outcome, c.ReclaimedFiles, c.ReclaimedBytes, c.Tenants = rep.Outcome, rep.ReclaimedFiles, rep.ReclaimedBytes, rep.Tenants
	for _, t := range rep.Tenants {
		c.PlannedItems += t.PlannedItems
		c.PlannedFiles += t.PlannedFiles
	}
	return nil
}

// changeCleanupPhase versions the post-restart cleanup phase.
const changeCleanupPhase = "window-cleanup-phase-2026-11-30"

func (r *windowRun) report(ctx workflow.Context) error {
	q, err := r.checkQuota(ctx, nil)
	if err != nil {
		r.st.Notes = append(r.st.Notes, "quota after the window unknown: "+errorText(err))
	} else {
		r.st.QuotaAfter = q
	}
	r.st.FinishedAt = workflow.Now(ctx)
	r.writeReport(ctx, buildReport(&r.in, &r.st))
	return nil
}

// writeManifest rewrites the manifest. After preflight a failure to write
// is logged and retried at the next change: the window's state in Temporal
// stays the source of truth while storage recovers.
func (r *windowRun) writeManifest(ctx workflow.Context) error {
	content, err := manifestJSON(&r.in, &r.st, workflow.Now(ctx))
	if err != nil {
		r.logger.Error("manifest not encoded", "error", err)
		return err
	}
	if err := r.writeDocument(ctx, r.st.ManifestPath, content); err != nil {
		r.logger.Error("manifest not written", "path", r.st.ManifestPath, "error", err)
		return err
	}
	return nil
}

// writeDocument writes a manifest or report. In a bounded run it is a local
// activity: the content, which grows with the number of jobs, is not
// recorded in history (only the outcome is).
func (r *windowRun) writeDocument(ctx workflow.Context, path string, content []byte) error {
	var a *windows.Activities
	in := core.WriteDocumentInput{Path: path, Content: content}
	if r.bounded {
		return workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, documentLocalOptions()), a.WriteDocument, in).Get(ctx, nil)
	}
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, documentOptions()), a.WriteDocument, in).Get(ctx, nil)
}

func (r *windowRun) writeReport(ctx workflow.Context, rep *WindowReport) {
	base := strings.TrimSuffix(r.st.ManifestPath, "manifest.json")
	js, md, err := rep.Encode()
	if err != nil {
		r.logger.Error("report not encoded", "error", err)
		return
	}
	for _, doc := range []struct {
		path    string
		content []byte
	}{{base + "report.json", js}, {base + "report.md", md}} {
		if err := r.writeDocument(ctx, doc.path, doc.content); err != nil {
			r.logger.Error("report not written", "path", doc.path, "error", err)
			r.st.Notes = append(r.st.Notes, "report not written to "+doc.path+": "+errorText(err))
			continue
		}
	}
	r.st.ReportPath = base + "report.md"
}
