package workflows

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/drills"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
)

// RestoreDrillWorkflow proves the selected snapshots restore: each in a
// JobDrill child, at most Concurrency at once. The outcome of every
// snapshot is recorded beside it on the tenant's storage and in metrics;
// the run fails with ErrTypeDrillsFailed, the report in its details, when
// any snapshot failed. Production jobs are never touched.
func RestoreDrillWorkflow(ctx workflow.Context, in RestoreDrillInput) (*RestoreDrillReport, error) {
	in.ApplyDefaults()
	if err := in.Validate(); err != nil {
		return nil, newInvalidInputError("restore drill: " + err.Error())
	}
	logger := workflow.GetLogger(ctx)
	runID := workflow.GetInfo(ctx).WorkflowExecution.ID
	rep := &RestoreDrillReport{RunID: runID, Schedule: in.Schedule, Tier: in.Tier, StartedAt: workflow.Now(ctx)}
	if err := workflow.SetQueryHandler(ctx, DrillStatusQuery, func() (*RestoreDrillReport, error) { return rep, nil }); err != nil {
		return nil, err
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, SearchAttrKind.ValueSet(KindDrill)); err != nil {
		logger.Warn("search attributes not updated", "error", err)
	}
	workflow.SetCurrentDetails(ctx, drillDetails(rep))
	notes := newNotifier(ctx, KindDrill, runID, in.Scope.Tenants)
	skip, note, err := checkFreeze(ctx, "restore drill "+runID, in.Scope.Tenants, in.OverrideFreeze, "set overrideFreeze (by, reason) in the drill's input")
	if err != nil {
		return nil, err
	}
	if rep.Frozen = note; skip {
		rep.FinishedAt = workflow.Now(ctx)
		workflow.SetCurrentDetails(ctx, drillDetails(rep))
		return rep, nil
	}

	var a *drills.Activities
	var sel drills.SelectDrillTargetsResult
	err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, shortActivityOptions()), a.SelectDrillTargets,
		drills.SelectDrillTargetsInput{Scope: in.Scope, Selection: in.Selection, Restore: in.Tier >= 2, RunID: runID}).Get(ctx, &sel)
	if err != nil {
		notes.ended(ctx, "failed", "restore drill "+runID+" could not select its snapshots", err)
		return nil, err
	}
	rep.Skipped, rep.Tenants = sel.Skipped, sel.Tenants
	rep.Jobs = make([]JobDrillResult, len(sel.Targets))
	health := RestartPolicy{RunningTimeout: in.RunningTimeout, CheckpointTimeout: in.CheckpointTimeout, Soak: in.Soak}
	s := workflow.NewSelector(ctx)
	inflight := 0
	for i, t := range sel.Targets {
		rep.Jobs[i] = JobDrillResult{Key: t.Key, Tenant: t.Tenant, Snapshot: t.Snapshot, Kind: t.Kind}
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: JobDrillWorkflowID(runID, t.Key, i),
			StaticSummary:         drillChildSummary("", t.Key, t.Snapshot, in.Tier, ""),
			TypedSearchAttributes: temporal.NewSearchAttributes(SearchAttrKind.ValueSet(KindDrillJob))})
		f := workflow.ExecuteChildWorkflow(cctx, JobDrillWorkflowType, JobDrillInput{RunID: runID, N: i, Target: t, Tier: in.Tier, Health: health})
		inflight++
		rep.Running = inflight
		workflow.SetCurrentDetails(ctx, drillDetails(rep))
		s.AddFuture(f, func(f workflow.Future) {
			inflight--
			rep.Running = inflight
			var res JobDrillResult
			if err := f.Get(ctx, &res); err != nil {
				// The child records its outcome in its result; an error means
				// it could not clean up after itself or was cancelled.
				res = rep.Jobs[i]
				res.Outcome, res.Error = catalog.DrillFailed, errorText(err)
			}
			rep.Jobs[i] = res
			workflow.SetCurrentDetails(ctx, drillDetails(rep))
			if res.Outcome != catalog.DrillPassed {
				logger.Error("restore drill did not pass", "job", res.Key, "snapshot", res.Snapshot, "outcome", res.Outcome, "error", res.Error)
			}
		})
		for inflight >= in.Concurrency {
			s.Select(ctx)
		}
	}
	for inflight > 0 {
		s.Select(ctx)
	}

	records := make([]drills.DrillRecordInput, len(rep.Jobs))
	for i, j := range rep.Jobs {
		switch j.Outcome {
		case catalog.DrillPassed:
			rep.Passed++
		case catalog.DrillInconclusive:
			rep.Inconclusive++
		default:
			rep.Failed++
		}
		records[i] = drills.DrillRecordInput{Target: sel.Targets[i], Tier: j.Tier, Outcome: j.Outcome, Error: j.Error}
	}
	err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, shortActivityOptions()), a.RecordDrillRun,
		drills.RecordDrillRunInput{RunID: runID, Tenants: rep.Tenants, Results: records}).Get(ctx, nil)
	if err != nil {
		logger.Warn("drill results not recorded", "error", err)
	}
	rep.FinishedAt = workflow.Now(ctx)
	workflow.SetCurrentDetails(ctx, drillDetails(rep))
	notes.tenants = rep.Tenants
	title := fmt.Sprintf("restore drill %s: %d passed, %d failed, %d inconclusive", runID, rep.Passed, rep.Failed, rep.Inconclusive)
	if rep.Failed > 0 {
		err := temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%d of %d snapshots failed their restore drill: %s", rep.Failed, len(rep.Jobs), failedDrills(rep.Jobs)),
			ErrTypeDrillsFailed, nil, rep)
		notes.ended(ctx, "failed", title, err)
		return rep, err
	}
	notes.ended(ctx, "completed", title, nil)
	return rep, nil
}

func failedDrills(jobs []JobDrillResult) string {
	var out []string
	for _, j := range jobs {
		if j.Outcome == catalog.DrillFailed {
			out = append(out, j.Key+" ("+j.Snapshot+")")
		}
	}
	return strings.Join(out, ", ")
}

// JobDrillWorkflow drills one snapshot. Tier 1 proves its files; tier 2,
// for a job with a drill recipe, starts the copy on the drill cluster
// (NO_CLAIM, checkpoints to its own drill dir), waits until it is healthy,
// runs the recipe's state check, and then, whatever happened and even when
// the run is cancelled, cancels the copy and removes its drill dir. A
// failed snapshot is a result, not an error; the error is kept for a drill
// that could not clean up after itself.
func JobDrillWorkflow(ctx workflow.Context, in JobDrillInput) (JobDrillResult, error) {
	t := in.Target
	res := JobDrillResult{Key: t.Key, Tenant: t.Tenant, Snapshot: t.Snapshot, Kind: t.Kind, Tier: 1}
	var a *drills.Activities
	var proof drills.StorageProof
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, proveOptions()), a.ProveSnapshotStorage,
		drills.ProveSnapshotInput{Snapshot: t.Snapshot}).Get(ctx, &proof); err != nil {
		res.Outcome, res.Error = catalog.DrillFailed, "storage proof: "+errorText(err)
		return res, nil
	}
	res.Storage = &proof
	if !proof.Passed() {
		res.Outcome, res.Error = catalog.DrillFailed, proof.Describe()
		return res, nil
	}
	res.Outcome = catalog.DrillPassed
	switch {
	case in.Tier < 2:
		return res, nil
	case t.Recipe == nil:
		res.Note = "no real restore: the inventory has no drill recipe for this job"
		return res, nil
	}

	res.Tier = 2
	label := fmt.Sprintf("%s#%d", t.Key, in.N)
	jobID := flinkID(in.RunID, label, "drill", 0)
	verifyID := flinkID(in.RunID, label, "drill-verify", 0)
	res.Restore = &DrillRestore{JobID: jobID}
	failure := restoreDrill(ctx, in, jobID, verifyID, res.Restore)

	// Clean up whatever happened, also when the run is being cancelled.
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	var end drills.EndDrillResult
	endErr := workflow.ExecuteActivity(workflow.WithActivityOptions(dctx, endDrillOptions()), a.EndDrill, drills.EndDrillInput{
		DrillCluster: t.DrillCluster, JobIDs: []string{jobID, verifyID}, DrillDir: t.DrillDir, Snapshot: t.Snapshot}).Get(dctx, &end)
	res.Cleanup = &end
	switch {
	case failure == nil:
	case end.SnapshotGone && t.Kind == core.SnapshotCheckpoint:
		res.Outcome = catalog.DrillInconclusive
		res.Error = "the checkpoint was removed by its job during the drill (subsumed): " + errorText(failure)
	default:
		res.Outcome, res.Error = catalog.DrillFailed, errorText(failure)
	}
	if endErr != nil {
		return res, fmt.Errorf("drill of %s could not clean up after itself (drill job %s, dir %s): %w", t.Snapshot, jobID, t.DrillDir, endErr)
	}
	return res, nil
}

// restoreDrill starts the drill job, waits until it is healthy and runs
// the state check; it returns what failed, nil when all passed.
func restoreDrill(ctx workflow.Context, in JobDrillInput, jobID, verifyID string, out *DrillRestore) error {
	t := in.Target
	var a *windows.Activities
	var drill *drills.Activities
	var started drills.StartDrillJobResult
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, shortActivityOptions()), drill.StartDrillJob,
		drills.StartDrillJobInput{Target: t, JobID: jobID}).Get(ctx, &started); err != nil {
		return err
	}
	var healthy windows.AwaitHealthyResult
	gate := in.Health.awaitHealthy(t.DrillCluster, started.JobID, t.Snapshot)
	gate.CheckpointDir = t.DrillDir
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, awaitHealthyOptions(in.Health)), a.AwaitHealthy, gate).Get(ctx, &healthy); err != nil {
		return err
	}
	out.RestoredFrom, out.CheckpointID, out.CheckpointPath = healthy.RestoredFrom, healthy.CheckpointID, healthy.CheckpointPath
	if t.Recipe.Verify == nil {
		return nil
	}
	var verified drills.VerifyDrillStateResult
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, awaitHealthyOptions(in.Health)), drill.VerifyDrillState,
		drills.VerifyDrillStateInput{Target: t, JobID: verifyID}).Get(ctx, &verified); err != nil {
		return err
	}
	out.Verified = true
	return nil
}
