package workflows

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/drills"
	"github.com/flinkmaint/flinkmaint/activities/upgrades"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// JobRehearsalWorkflowType rehearses one job's new version from its
// snapshot on a drill cluster: a child of an upgrade (its preflight, or
// `upgrade check`).
const JobRehearsalWorkflowType = "JobRehearsal"

// KindRehearsal is the SearchAttrKind of rehearsals.
const KindRehearsal = "rehearsal"

// QueryRehearsalStatus returns a rehearsal's RehearsalResult so far: its
// savepoint is held (cleanup keeps it) while the copy restores from it.
const QueryRehearsalStatus = "rehearsal-status"

// JobRehearsalInput says what to rehearse into what.
type JobRehearsalInput struct {
	// RunID names the run the rehearsal belongs to: the savepoint's
	// catalog entry, the drill dir and the records carry it.
	RunID string         `json:"runId"`
	N     int            `json:"n"`
	Job   core.JobTarget `json:"job"`
	// NewRecipe is the job's new version; nil rehearses the inventory's
	// build of the job for FlinkVersion.
	NewRecipe *inventory.RestartRecipe `json:"newRecipe,omitempty"`
	// FlinkVersion (major.minor) is the version to rehearse into; empty is
	// the version the job's cluster runs.
	FlinkVersion string `json:"flinkVersion,omitempty"`
	// ProgramArgs are the copy's arguments when given (see
	// activities.RehearsalRecipe).
	ProgramArgs []string `json:"programArgs,omitempty"`
	// Savepoint is rehearsed when given; otherwise one is taken without
	// stopping the job, verified and catalogued (trigger rehearsal).
	Savepoint        string        `json:"savepoint,omitempty"`
	Format           string        `json:"format,omitempty"`
	SavepointTimeout Duration      `json:"savepointTimeout,omitempty"`
	Health           RestartPolicy `json:"health"`
}

// RehearsalResult is one rehearsal's verdict.
type RehearsalResult struct {
	Key    string `json:"key"`
	Tenant string `json:"tenant"`
	// Verdict is catalog.RehearsalCompatible, RehearsalIncompatible,
	// RehearsalInconclusive or RehearsalNotRehearsed.
	Verdict string `json:"verdict"`
	// Cause is why an incompatible or inconclusive copy failed, in Flink's
	// words; Why says why there is no verdict.
	Cause *upgrades.RehearsalCause `json:"cause,omitempty"`
	Why   string                   `json:"why,omitempty"`
	// Savepoint is the snapshot rehearsed; FormatNote says why its format
	// is not the one asked for (a ForSt job's savepoints are NATIVE).
	Savepoint    string `json:"savepoint,omitempty"`
	FormatNote   string `json:"formatNote,omitempty"`
	DrillCluster string `json:"drillCluster,omitempty"`
	// FlinkVersion is the drill cluster's, as it reports itself.
	FlinkVersion string                 `json:"flinkVersion,omitempty"`
	Jar          string                 `json:"jar,omitempty"`
	Restore      *DrillRestore          `json:"restore,omitempty"`
	Cleanup      *drills.EndDrillResult `json:"cleanup,omitempty"`
}

// Text is the verdict in one line.
func (r RehearsalResult) Text() string {
	into := ""
	if r.FlinkVersion != "" {
		into = " on Flink " + r.FlinkVersion
	}
	switch r.Verdict {
	case catalog.RehearsalCompatible:
		return fmt.Sprintf("compatible: %s restored into the new version%s and passed the gate", lastElement(r.Savepoint), into)
	case catalog.RehearsalNotRehearsed:
		return "not rehearsed: " + r.Why
	}
	why := r.Why
	if r.Cause != nil {
		why = r.Cause.Text
	}
	return fmt.Sprintf("%s%s: %s", r.Verdict, into, why)
}

// JobRehearsalWorkflowID is a rehearsal child of run parent.
func JobRehearsalWorkflowID(parent string, n int) string {
	return withAttempt(parent+"/rehearsal", n)
}

// JobRehearsalWorkflow rehearses a job's new version: it chooses a drill
// cluster of the target Flink version, takes a savepoint without stopping
// the job (or uses the one given), starts the new version from it there
// (restore mode NO_CLAIM, allowNonRestoredState off, its sinks sandboxed,
// checkpointing into its own drill dir) and gates it like a restart. The
// copy and its dir are removed whatever happens, also when the run is
// cancelled. A verdict is a result, not an error; the error is kept for a
// rehearsal that could not clean up after itself.
func JobRehearsalWorkflow(ctx workflow.Context, in JobRehearsalInput) (RehearsalResult, error) {
	var a *windows.Activities
	var upg *upgrades.Activities
	var drill *drills.Activities
	res := RehearsalResult{Key: in.Job.Key, Tenant: in.Job.Tenant, Savepoint: in.Savepoint}
	if err := workflow.SetQueryHandler(ctx, QueryRehearsalStatus, func() (RehearsalResult, error) { return res, nil }); err != nil {
		return res, err
	}
	short := workflow.WithActivityOptions(ctx, shortActivityOptions())
	var prep upgrades.PrepareRehearsalResult
	err := workflow.ExecuteActivity(short, upg.PrepareRehearsal, upgrades.PrepareRehearsalInput{RunID: in.RunID, N: in.N, Job: in.Job,
		NewRecipe: in.NewRecipe, FlinkVersion: in.FlinkVersion, ProgramArgs: in.ProgramArgs}).Get(ctx, &prep)
	switch {
	case err != nil:
		// A drill cluster that does not answer, or a set-up that could touch
		// production, proves nothing: the run decides, it is not waved through.
		res.Verdict, res.Why = catalog.RehearsalInconclusive, "the rehearsal could not be prepared: "+errorText(err)
	case prep.Target == nil:
		res.Verdict, res.Why = catalog.RehearsalNotRehearsed, prep.NotRehearsed
	}
	if res.Verdict != "" {
		recordRehearsal(ctx, in, &res)
		return res, nil
	}
	t := *prep.Target
	res.DrillCluster, res.FlinkVersion, res.Jar = t.DrillCluster, prep.FlinkVersion, t.Recipe.Jar
	if res.Savepoint == "" {
		var sp windows.TakeSavepointResult
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, takeSavepointOptions(in.SavepointTimeout.D())), a.TakeSavepoint,
			windows.TakeSavepointInput{Job: in.Job, TriggerID: flinkID(in.RunID, in.Job.Key, "rehearsal-savepoint", in.N), Format: in.Format,
				RunID: in.RunID, Trigger: catalog.TriggerRehearsal}).Get(ctx, &sp)
		if err != nil {
			res.Verdict, res.Why = catalog.RehearsalInconclusive, "no savepoint to rehearse from: "+errorText(err)
			recordRehearsal(ctx, in, &res)
			return res, nil
		}
		res.Savepoint, res.FormatNote = sp.SavepointPath, sp.FormatNote
	}
	t.Snapshot = res.Savepoint

	label := fmt.Sprintf("%s#rehearsal-%d", t.Key, in.N)
	jobID := flinkID(in.RunID, label, "drill", 0)
	verifyID := flinkID(in.RunID, label, "drill-verify", 0)
	res.Restore = &DrillRestore{JobID: jobID}
	failure := restoreDrill(ctx, JobDrillInput{RunID: in.RunID, N: in.N, Target: t, Tier: 2, Health: in.Health}, jobID, verifyID, res.Restore)
	if failure != nil && !temporal.IsCanceledError(failure) {
		res.Verdict = catalog.RehearsalIncompatible
		var timeout *temporal.TimeoutError
		if errors.As(failure, &timeout) {
			res.Verdict, res.Why = catalog.RehearsalInconclusive, "the drill cluster did not answer in time: "+errorText(failure)
		} else {
			var cause upgrades.RehearsalCause
			// The whole chain: the text a person reads is shortened.
			if err := workflow.ExecuteActivity(short, upg.ExplainRehearsal, upgrades.ExplainRehearsalInput{DrillCluster: t.DrillCluster,
				JobID: jobID, Job: in.Job, Failure: failure.Error()}).Get(ctx, &cause); err != nil {
				cause = upgrades.ClassifyRestoreFailure(failure.Error()) //workflowcheck:ignore (a pure function of the error)
			}
			res.Cause = &cause
			if cause.Inconclusive() {
				res.Verdict = catalog.RehearsalInconclusive
			}
		}
	}

	// Clean up whatever happened, also when the run is being cancelled.
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	var end drills.EndDrillResult
	endErr := workflow.ExecuteActivity(workflow.WithActivityOptions(dctx, endDrillOptions()), drill.EndDrill, drills.EndDrillInput{
		DrillCluster: t.DrillCluster, JobIDs: []string{jobID, verifyID}, DrillDir: t.DrillDir}).Get(dctx, &end)
	res.Cleanup = &end
	if endErr != nil {
		return res, fmt.Errorf("rehearsal of %s could not clean up after itself (copy %s on %s, dir %s): %w", t.Key, jobID, t.DrillCluster, t.DrillDir, endErr)
	}
	if failure != nil && temporal.IsCanceledError(failure) {
		return res, failure
	}
	if res.Verdict == "" {
		res.Verdict = catalog.RehearsalCompatible
	}
	recordRehearsal(ctx, in, &res)
	return res, nil
}

// recordRehearsal writes the verdict beside the savepoint and counts it; a
// record that fails is logged: the verdict stands in the result.
func recordRehearsal(ctx workflow.Context, in JobRehearsalInput, res *RehearsalResult) {
	var a *upgrades.Activities
	why := res.Why
	if res.Cause != nil {
		why = res.Cause.Text
	}
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, shortActivityOptions()), a.RecordRehearsal, upgrades.RecordRehearsalInput{
		RunID: in.RunID, Job: in.Job, Snapshot: res.Savepoint, FlinkVersion: res.FlinkVersion, Jar: res.Jar, Verdict: res.Verdict, Cause: why}).Get(ctx, nil)
	if err != nil {
		workflow.GetLogger(ctx).Warn("rehearsal not recorded beside its savepoint", "job", in.Job.Key, "error", err)
	}
}
