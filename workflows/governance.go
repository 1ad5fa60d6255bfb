package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/notify"
)

// GovernanceWorkflow runs one reference-safe cleanup: quota before, plan,
// (in plan-and-approve mode) wait for an operator's approve or reject
// update until the approval deadline, execute, optionally purge old trash,
// quota after, and a report on storage. In plan mode (the default) nothing
// is touched. The status and report queries show it at every step.
func GovernanceWorkflow(ctx workflow.Context, in GovernanceInput) (*GovernanceReport, error) {
	in.ApplyDefaults()
	if err := in.Validate(); err != nil {
		return nil, newInvalidInputError(err.Error())
	}
	info := workflow.GetInfo(ctx)
	r := &governanceRun{in: in}
	r.st = GovernanceState{RunID: in.RunID, Mode: in.Mode, Phase: GovernancePhasePlanning, StartedAt: workflow.Now(ctx)}
	if r.st.RunID == "" {
		r.st.RunID = cleanupRunID(info.WorkflowExecution.ID, info.WorkflowExecution.RunID)
	}
	r.logger = log.With(workflow.GetLogger(ctx), "governance", r.st.RunID)
	if err := r.registerHandlers(ctx); err != nil {
		return nil, err
	}
	r.notes = newNotifier(ctx, KindGovernance, r.st.RunID, in.Scope.Tenants)
	r.lock = newTenantLock(ctx, false)
	defer r.lock.release(ctx)
	return r.run(ctx)
}

type governanceRun struct {
	in     GovernanceInput
	st     GovernanceState
	logger log.Logger
	notes  *notifier
	lock   *tenantLock
}

func (r *governanceRun) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (GovernanceState, error) { return r.st, nil }); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryReport, func() (*GovernanceReport, error) { return buildGovernanceReport(&r.in, &r.st), nil }); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateApprove,
		func(ctx workflow.Context, req ApproveRequest) (governance.PlanSummary, error) {
			r.st.Approval = &ApprovalRecord{Approved: true, By: req.By, Reason: req.Reason, At: workflow.Now(ctx)}
			r.logger.Info("plan approved", "by", req.By, "reason", req.Reason)
			return *r.st.Plan, nil
		}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req ApproveRequest) error {
			if err := r.validateDecision(req.By); err != nil {
				return err
			}
			if req.PlanSHA256 != "" && req.PlanSHA256 != r.st.Plan.PlanSHA256 {
				return fmt.Errorf("planSha256 %s does not match the plan waiting for approval (%s): review the current plan", req.PlanSHA256, r.st.Plan.PlanSHA256)
			}
			return nil
		}}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, UpdateReject,
		func(ctx workflow.Context, req RejectRequest) (GovernanceState, error) {
			r.st.Approval = &ApprovalRecord{Approved: false, By: req.By, Reason: req.Reason, At: workflow.Now(ctx)}
			r.logger.Info("plan rejected", "by", req.By, "reason", req.Reason)
			return r.st, nil
		}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req RejectRequest) error {
			if err := r.validateDecision(req.By); err != nil {
				return err
			}
			if strings.TrimSpace(req.Reason) == "" {
				return errors.New("reason is empty: say why the plan is rejected (it is recorded in the report)")
			}
			return nil
		}})
}

// validateDecision accepts an approve or reject only while a plan waits
// for one, from a named operator.
func (r *governanceRun) validateDecision(by string) error {
	if strings.TrimSpace(by) == "" {
		return errors.New("by is empty: name the approver (recorded in the report)")
	}
	if r.st.Plan == nil {
		return fmt.Errorf("governance run %s has no plan yet (phase %s)", r.st.RunID, r.st.Phase)
	}
	if r.st.Phase != GovernancePhaseAwaitingApproval || r.st.Approval != nil {
		return fmt.Errorf("governance run %s is in phase %s (mode %s), not waiting for approval", r.st.RunID, r.st.Phase, r.st.Mode)
	}
	return nil
}

func (r *governanceRun) run(ctx workflow.Context) (*GovernanceReport, error) {
	r.upsertVisibility(ctx)
	if r.in.Mode != ModePlan { // a plan changes nothing
		skip, note, err := checkFreeze(ctx, "governance "+r.st.RunID, r.in.Scope.Tenants, r.in.OverrideFreeze,
			"start it again with --override-freeze --reason TEXT")
		if err != nil {
			return r.fail(ctx, err)
		}
		if note != "" {
			r.st.Notes = append(r.st.Notes, note)
		}
		if skip {
			return r.finish(ctx, GovernancePhaseFrozen)
		}
	}
	r.st.QuotaBefore = r.sampleQuota(ctx, "before")
	if err := r.plan(ctx); err != nil {
		return r.fail(ctx, err)
	}
	if workflow.GetVersion(ctx, changeGovernanceUsage, workflow.DefaultVersion, 1) >= 1 {
		r.sampleUsage(ctx)
	}
	switch {
	case r.in.Mode == ModePlan:
		return r.finish(ctx, GovernancePhasePlanned)
	case r.st.Plan.Items == 0:
		r.st.Notes = append(r.st.Notes, "the plan is empty: nothing to reclaim")
		return r.finish(ctx, GovernancePhaseCompleted)
	case r.in.Mode == ModePlanAndApprove:
		approved, err := r.awaitApproval(ctx)
		if err != nil {
			return nil, err
		}
		if r.st.Approval == nil {
			r.st.Notes = append(r.st.Notes, fmt.Sprintf("nobody approved or rejected the plan within approvalTimeout=%s; nothing was touched", r.in.ApprovalTimeout))
			r.logger.Warn("approval deadline passed", "timeout", r.in.ApprovalTimeout.String())
			return r.finish(ctx, GovernancePhaseExpired)
		}
		if !approved {
			return r.finish(ctx, GovernancePhaseRejected)
		}
	}
	done, err := r.lockForExecution(ctx)
	if err != nil {
		return r.fail(ctx, err)
	}
	if done != "" {
		return r.finish(ctx, done)
	}
	if err := r.execute(ctx); err != nil {
		return r.fail(ctx, err)
	}
	r.lock.release(ctx)
	if r.in.PurgeTrashAfter > 0 {
		r.setPhase(ctx, GovernancePhasePurging)
		var a *governance.Activities
		var res governance.PurgeTrashResult
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, purgeOptions()), a.PurgeTrash,
			governance.PurgeTrashInput{TTL: r.in.PurgeTrashAfter.D()}).Get(ctx, &res); err != nil {
			r.st.Notes = append(r.st.Notes, "trash not purged: "+errorText(err))
		} else {
			r.st.Purge = &res
		}
	}
	r.st.QuotaAfter = r.sampleQuota(ctx, "after")
	return r.finish(ctx, GovernancePhaseCompleted)
}

// changeShardedPlan writes the plan in shards that several workers
// execute at once; a run planned before it executes its one plan.json.
const changeShardedPlan = "governance-sharded-plan-2026-12-02"

func (r *governanceRun) plan(ctx workflow.Context) error {
	var a *governance.Activities
	var res governance.PlanCleanupResult
	in := governance.PlanCleanupInput{RunID: r.st.RunID, Scope: r.in.Scope, Policy: r.in.Policy.activityPolicy()}
	if workflow.GetVersion(ctx, changeShardedPlan, workflow.DefaultVersion, 1) >= 1 {
		in.ShardItems = r.in.ShardItems
		if r.in.GatherParts > 1 {
			listings, err := r.gather(ctx)
			if err != nil {
				return err
			}
			in.Listings = listings
		}
	}
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, planCleanupOptions()), a.PlanCleanup, in).Get(ctx, &res)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	r.st.Plan = &res.Summary
	r.logger.Info("plan ready", "items", res.Summary.Items, "files", res.Summary.Files, "bytes", res.Summary.Bytes, "plan", res.Summary.PlanPath)
	r.upsertVisibility(ctx)
	return nil
}

// gather lists the scope in GatherParts parts at once, on whichever
// workers poll the queue, and returns the parts for the plan to merge.
func (r *governanceRun) gather(ctx workflow.Context) ([]governance.ListingPart, error) {
	var a *governance.Activities
	actx := workflow.WithActivityOptions(ctx, planCleanupOptions())
	futures := make([]workflow.Future, r.in.GatherParts)
	for i := range futures {
		futures[i] = workflow.ExecuteActivity(actx, a.GatherCleanup,
			governance.GatherCleanupInput{RunID: r.st.RunID, Scope: r.in.Scope, Part: i, Parts: r.in.GatherParts})
	}
	parts := make([]governance.ListingPart, len(futures))
	var failed error
	for i, f := range futures {
		if err := f.Get(ctx, &parts[i]); err != nil && failed == nil {
			failed = fmt.Errorf("gather part %d of %d: %w", i+1, len(futures), err)
		}
	}
	return parts, failed
}

// changeGovernanceUsage adds the storage usage of the plan's tenants to
// the report, right after the plan.
const changeGovernanceUsage = "governance-usage-2026-12-01"

// sampleUsage records what fills each tenant's quota, per kind with its
// growth and the top offenders, for the report. Like the quota figures it
// informs and never blocks a cleanup.
func (r *governanceRun) sampleUsage(ctx workflow.Context) {
	var tenants []string
	for _, t := range r.st.Plan.ScopeTenants {
		tenants = append(tenants, t.Name)
	}
	if len(tenants) == 0 {
		return
	}
	var a *capacity.Activities
	var res capacity.TenantUsageResult
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, usageOptions()), a.TenantUsage,
		capacity.TenantUsageInput{Tenants: tenants, OmitJobs: true}).Get(ctx, &res); err != nil {
		r.st.Notes = append(r.st.Notes, "storage usage unknown: "+errorText(err))
		return
	}
	r.st.Usage = res.Tenants
	for _, n := range res.Notes {
		r.st.Notes = append(r.st.Notes, "storage usage: "+n)
	}
}

// awaitApproval waits for approve or reject until the deadline; a nil
// Approval afterwards means the deadline passed.
func (r *governanceRun) awaitApproval(ctx workflow.Context) (bool, error) {
	r.st.ApprovalDeadline = workflow.Now(ctx).Add(r.in.ApprovalTimeout.D())
	r.setPhase(ctx, GovernancePhaseAwaitingApproval)
	r.logger.Info("waiting for approval", "deadline", r.st.ApprovalDeadline)
	wid := workflow.GetInfo(ctx).WorkflowExecution.ID
	ev := notify.Event{Decision: "approval", Title: fmt.Sprintf("governance %s: a plan of %d items waits for approval", r.st.RunID, r.st.Plan.Items),
		Text: fmt.Sprintf("until %s; then nothing is touched", r.st.ApprovalDeadline.UTC().Format(time.RFC3339)), Commands: governanceApprovalCommands(wid, r.st.Plan)}
	for _, t := range r.st.Plan.ScopeTenants { // awaited only once a plan is made
		ev.Tenants = append(ev.Tenants, t.Name)
	}
	if _, err := r.notes.awaitAnswer(ctx, ev, decisionReminderEvery, r.in.ApprovalTimeout.D(), func() bool { return r.st.Approval != nil }); err != nil {
		return false, err
	}
	return r.st.Approval != nil && r.st.Approval.Approved, nil
}

// lockForExecution takes the tenant lock of the plan's tenants, so no
// window or upgrade changes them while the cleanup deletes. A plan made
// before another run held them is made again, and, in plan-and-approve
// mode, approved again (without the lock held meanwhile). done is the
// phase to finish in when the run ends instead of executing.
func (r *governanceRun) lockForExecution(ctx workflow.Context) (done string, err error) {
	for {
		var tenants []string
		for _, t := range r.st.Plan.ScopeTenants {
			tenants = append(tenants, t.Name)
		}
		waited, err := r.lock.acquire(ctx, KindGovernance, "governance "+r.st.RunID+": executing its cleanup plan", tenants, func(h []LockHold) {
			if h != nil || r.st.Phase != GovernancePhaseWaitingForLock {
				r.st.WaitingFor = lockWaitText(h)
				r.setPhase(ctx, GovernancePhaseWaitingForLock)
			}
		})
		if err != nil {
			return "", err
		}
		if !waited {
			return "", nil
		}
		r.st.Notes = append(r.st.Notes, "waited for the tenant lock ("+r.st.WaitingFor+"); the plan was made again, since the held tenants may have changed")
		r.st.WaitingFor = ""
		r.setPhase(ctx, GovernancePhasePlanning)
		if err := r.plan(ctx); err != nil {
			return "", err
		}
		switch {
		case r.st.Plan.Items == 0:
			r.st.Notes = append(r.st.Notes, "the new plan is empty: nothing to reclaim")
			return GovernancePhaseCompleted, nil
		case r.in.Mode != ModePlanAndApprove:
			return "", nil
		}
		r.lock.release(ctx)
		r.st.Approval = nil
		approved, err := r.awaitApproval(ctx)
		switch {
		case err != nil:
			return "", err
		case r.st.Approval == nil:
			r.st.Notes = append(r.st.Notes, "nobody approved or rejected the new plan in time; nothing was touched")
			return GovernancePhaseExpired, nil
		case !approved:
			return GovernancePhaseRejected, nil
		}
	}
}

// changeVerifyWholePlan checks every shard of an approved plan before the
// first one runs.
const changeVerifyWholePlan = "governance-verify-whole-plan-2026-12-03"

func (r *governanceRun) execute(ctx workflow.Context) error {
	r.setPhase(ctx, GovernancePhaseExecuting)
	var a *governance.Activities
	var res governance.ExecuteCleanupResult
	in := governance.ExecuteCleanupInput{RunID: r.st.RunID, PlanPath: r.st.Plan.PlanPath, PlanSHA256: r.st.Plan.PlanSHA256}
	actx := workflow.WithActivityOptions(ctx, executeCleanupOptions(r.in.ExecuteTimeout.D()))
	if r.st.Plan.Shards > 0 {
		if workflow.GetVersion(ctx, changeVerifyWholePlan, workflow.DefaultVersion, 1) >= 1 {
			if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, tallyCleanupOptions()), a.VerifyCleanupPlan, in).Get(ctx, nil); err != nil {
				return fmt.Errorf("check the approved plan: %w", err)
			}
		}
		if err := r.executeShards(ctx, in); err != nil {
			return err
		}
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, tallyCleanupOptions()), a.TallyCleanup, in).Get(ctx, &res); err != nil {
			return fmt.Errorf("tally the executed plan: %w", err)
		}
	} else if err := workflow.ExecuteActivity(actx, a.ExecuteCleanup, in).Get(ctx, &res); err != nil {
		return fmt.Errorf("execute: %w", err)
	}
	r.st.Execution = &res
	r.logger.Info("cleanup executed", "items", res.Items, "files", res.Files, "bytes", res.Bytes)
	return nil
}

// executeShards runs the plan's shards as separate activities, at most
// ExecuteParallelism at once, so the workers polling the queue share them;
// then its Kubernetes objects, after every path. Once a shard fails no
// other is started; those running are let finish (each item is atomic and
// recorded), and the first failure is returned.
func (r *governanceRun) executeShards(ctx workflow.Context, in governance.ExecuteCleanupInput) error {
	var a *governance.Activities
	actx := workflow.WithActivityOptions(ctx, executeCleanupOptions(r.in.ExecuteTimeout.D()))
	part := func(shard int, objects bool) workflow.Future {
		return workflow.ExecuteActivity(actx, a.ExecuteCleanupPart, governance.ExecuteCleanupPartInput{
			RunID: in.RunID, PlanPath: in.PlanPath, PlanSHA256: in.PlanSHA256, Shard: shard, Objects: objects})
	}
	shards := r.st.Plan.Shards
	sel := workflow.NewSelector(ctx)
	var failed error
	next, running := 0, 0
	for {
		for failed == nil && next < shards && running < r.in.ExecuteParallelism {
			i := next
			next++
			running++
			sel.AddFuture(part(i, false), func(f workflow.Future) {
				running--
				if err := f.Get(ctx, nil); err != nil {
					if failed == nil {
						failed = fmt.Errorf("execute shard %d of %d: %w", i+1, shards, err)
					}
					return
				}
				r.st.ShardsExecuted++
			})
		}
		if running == 0 {
			break
		}
		sel.Select(ctx)
	}
	if failed != nil {
		return failed
	}
	if r.st.Plan.Objects > 0 {
		if err := part(0, true).Get(ctx, nil); err != nil {
			return fmt.Errorf("execute the plan's Kubernetes objects: %w", err)
		}
	}
	return nil
}

func (r *governanceRun) sampleQuota(ctx workflow.Context, when string) []capacity.TenantQuota {
	var a *capacity.Activities
	var res capacity.SampleQuotaResult
	in := capacity.SampleQuotaInput{Scope: r.in.Scope, WarningPercent: r.in.WarningPercent, CriticalPercent: r.in.CriticalPercent}
	if r.st.Plan != nil {
		in.Tenants = r.st.Plan.ScopeTenants
	}
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, shortActivityOptions()), a.SampleQuota, in).Get(ctx, &res); err != nil {
		// Quota numbers inform the report; they never block a cleanup.
		r.st.Notes = append(r.st.Notes, "quota "+when+" unknown: "+errorText(err))
		return nil
	}
	return res.Tenants
}

func (r *governanceRun) fail(ctx workflow.Context, err error) (*GovernanceReport, error) {
	r.st.Notes = append(r.st.Notes, fmt.Sprintf("phase %s failed: %s", r.st.Phase, errorText(err)))
	r.st.FinishedAt = workflow.Now(ctx)
	r.setPhase(ctx, GovernancePhaseFailed)
	r.writeReport(ctx)
	r.notes.ended(ctx, GovernancePhaseFailed, "governance "+r.st.RunID+" failed", err)
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return nil, temporal.NewNonRetryableApplicationError(errorTextFor(err, appErr.Type()), appErr.Type(), err)
	}
	return nil, err
}

func (r *governanceRun) finish(ctx workflow.Context, phase string) (*GovernanceReport, error) {
	r.st.FinishedAt = workflow.Now(ctx)
	r.setPhase(ctx, phase)
	r.writeReport(ctx)
	r.notes.ended(ctx, phase, "governance "+r.st.RunID+" ended "+phase, nil)
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return nil, err
	}
	return buildGovernanceReport(&r.in, &r.st), nil
}

// writeReport writes report.json and report.md next to the plan (or in
// ReportDir). A failure is noted, not fatal: the workflow result and the
// report query hold the same report.
func (r *governanceRun) writeReport(ctx workflow.Context) {
	dir := strings.TrimRight(r.in.ReportDir, "/")
	if dir != "" {
		dir += "/" + r.st.RunID
	} else if r.st.Plan != nil {
		dir = strings.TrimSuffix(r.st.Plan.PlanPath, "/plan.json")
	}
	if dir == "" {
		r.st.Notes = append(r.st.Notes, "report not written: no plan and no reportDir")
		return
	}
	js, md, err := buildGovernanceReport(&r.in, &r.st).Encode()
	if err != nil {
		r.logger.Error("report not encoded", "error", err)
		return
	}
	var a *windows.Activities
	for _, doc := range []struct {
		path    string
		content []byte
	}{{dir + "/report.json", js}, {dir + "/report.md", md}} {
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, shortActivityOptions()), a.WriteDocument,
			core.WriteDocumentInput{Path: doc.path, Content: doc.content}).Get(ctx, nil); err != nil {
			r.logger.Error("report not written", "path", doc.path, "error", err)
			r.st.Notes = append(r.st.Notes, "report not written to "+doc.path+": "+errorText(err))
			return
		}
	}
	r.st.ReportPath = dir + "/report.md"
}

func (r *governanceRun) setPhase(ctx workflow.Context, phase string) {
	changed := r.st.Phase != phase
	if changed {
		r.logger.Info("phase", "from", r.st.Phase, "to", phase)
	}
	r.st.Phase = phase
	r.upsertVisibility(ctx)
	if changed {
		r.notes.phase(ctx, phase, "governance "+r.st.RunID+": "+phase)
	}
}

func (r *governanceRun) upsertVisibility(ctx workflow.Context) {
	var tenants []string
	if r.st.Plan != nil {
		for _, t := range r.st.Plan.ScopeTenants {
			tenants = append(tenants, t.Name)
		}
	} else {
		tenants = r.in.Scope.Tenants
	}
	err := workflow.UpsertTypedSearchAttributes(ctx,
		SearchAttrKind.ValueSet(KindGovernance),
		SearchAttrPhase.ValueSet(r.st.Phase),
		SearchAttrTenants.ValueSet(tenants),
		SearchAttrPausedForDecision.ValueSet(r.st.Phase == GovernancePhaseAwaitingApproval),
	)
	if err != nil {
		r.logger.Warn("search attributes not updated", "error", err)
	}
	summary := fmt.Sprintf("%s (%s)", r.st.Phase, r.st.Mode)
	if p := r.st.Plan; p != nil {
		summary += fmt.Sprintf(": plan %d items, %d files, %d bytes", p.Items, p.Files, p.Bytes)
	}
	if e := r.st.Execution; e != nil {
		summary += fmt.Sprintf("; reclaimed %d files, %d bytes", e.Files, e.Bytes)
	}
	if r.st.Phase == GovernancePhaseAwaitingApproval {
		summary += "; waiting for approval until " + r.st.ApprovalDeadline.Format(time.RFC3339)
	}
	_ = workflow.UpsertMemo(ctx, map[string]interface{}{"summary": summary})
	workflow.SetCurrentDetails(ctx, governanceDetails(workflow.GetInfo(ctx).WorkflowExecution.ID, &r.st))
}
