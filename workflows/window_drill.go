package workflows

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/drills"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
)

// proofBatch is how many savepoints one ProveSnapshots activity proves:
// few activities in history for thousands of jobs, a heartbeat after each.
const proofBatch = 50

// chooseCanary picks the job whose savepoint is drilled before any other
// job stops (policy.drill.canary) and makes sure the drill cluster can
// run it. It runs in preflight, so a window that cannot drill its canary
// stops nothing.
func (r *windowRun) chooseCanary(ctx workflow.Context) error {
	targets := make([]core.JobTarget, 0, len(r.st.Jobs))
	for _, j := range r.st.Jobs {
		targets = append(targets, j.Target)
	}
	key, err := pickDrillCanary(targets, r.in.Policy.Drill.CanaryJob)
	if err != nil {
		return err
	}
	var a *drills.Activities
	for {
		err := workflow.ExecuteActivity(r.activity(ctx), a.CheckDrillCluster).Get(ctx, nil)
		if err == nil {
			r.st.Canary = &CanaryDrill{Key: key}
			return nil
		}
		ans, err := r.decide(ctx, DecisionCanaryDrill,
			"the canary drill cannot run, so no job is stopped yet: "+errorText(err)+
				". Fix the worker's drill.* settings or the drill cluster and retry; resume to go on without a canary drill; or abort",
			nil, ActionRetry, ActionResume, ActionAbort)
		if err != nil {
			return err
		}
		if ans.Action == ActionResume {
			r.st.Canary = &CanaryDrill{Key: key, WaivedBy: ans.By}
			r.st.Notes = append(r.st.Notes, fmt.Sprintf("canary drill waived by %s before any job stopped: %s", ans.By, ans.Reason))
			return nil
		}
	}
}

// canaryFirst stops the canary with a savepoint and drills that savepoint
// on the drill cluster; only a passing drill, or an operator who waives
// it, lets the window stop the other jobs. A canary whose savepoint could
// not be taken gives way to the next job with a drill recipe.
func (r *windowRun) canaryFirst(ctx workflow.Context) error {
	c := r.st.Canary
	for {
		j := r.st.job(c.Key)
		if j.SavepointState != StepDone {
			if err := r.savepointJobs(ctx, func(key string) bool { return key == c.Key }); err != nil {
				return err
			}
		}
		if j.SavepointState != StepDone {
			if next := r.nextCanary(); next != "" {
				r.st.Notes = append(r.st.Notes, fmt.Sprintf("canary %s was not stopped with a savepoint; %s is the canary now", c.Key, next))
				c.Key = next
				continue
			}
			ans, err := r.decide(ctx, DecisionCanaryDrill,
				fmt.Sprintf("no canary savepoint to drill: %s was not stopped with a savepoint and no other job that can be drilled is left. Resume to stop the rest without a canary drill, or abort", c.Key),
				nil, ActionResume, ActionAbort)
			if err != nil {
				return err
			}
			c.WaivedBy = ans.By
			r.st.Notes = append(r.st.Notes, fmt.Sprintf("canary drill waived by %s: %s", ans.By, ans.Reason))
			return nil
		}
		c.Snapshot = j.SavepointPath
		c.Attempts++
		res := r.drillCanary(ctx, c, j.Target.Tenant)
		c.Outcome, c.Error, c.Result = res.Outcome, res.Error, &res
		_ = r.writeManifest(ctx)
		if c.Outcome == catalog.DrillPassed {
			r.logger.Info("canary drill passed", "job", c.Key, "savepoint", c.Snapshot)
			return nil
		}
		ans, err := r.decide(ctx, DecisionCanaryDrill,
			fmt.Sprintf("the canary %s was stopped with savepoint %s, which did not pass its restore drill (%s): %s. No other job is stopped yet. "+
				"Retry the drill, resume to stop the rest anyway, or abort (the canary stays stopped; the manifest has its savepoint)",
				c.Key, c.Snapshot, c.Outcome, c.Error),
			[]string{c.Key}, ActionRetry, ActionResume, ActionAbort)
		if err != nil {
			return err
		}
		if ans.Action == ActionResume {
			c.WaivedBy = ans.By
			r.st.Notes = append(r.st.Notes, fmt.Sprintf("canary drill %s of %s waived by %s: %s", c.Outcome, c.Key, ans.By, ans.Reason))
			return nil
		}
	}
}

// nextCanary is the first job with a drill recipe whose savepoint is still
// to take; empty when the policy names the canary.
func (r *windowRun) nextCanary() string {
	if r.in.Policy.Drill.CanaryJob != "" {
		return ""
	}
	for _, j := range r.st.Jobs {
		if j.Target.Drillable && j.SavepointState == StepPending {
			return j.Target.Key
		}
	}
	return ""
}

// drillCanary restores a copy of the canary from its savepoint on the drill
// cluster (a JobDrill child, both tiers) and records the outcome beside the
// savepoint. Only a real restore that passed counts as passed.
func (r *windowRun) drillCanary(ctx workflow.Context, c *CanaryDrill, tenant string) JobDrillResult {
	var a *drills.Activities
	runID := windowDrillRunID(r.in.WindowID)
	res := JobDrillResult{Key: c.Key, Tenant: tenant, Snapshot: c.Snapshot, Kind: core.SnapshotSavepoint, Outcome: catalog.DrillFailed}
	var sel drills.SelectDrillTargetsResult
	err := workflow.ExecuteActivity(r.activity(ctx), a.SelectDrillTargets, drills.SelectDrillTargetsInput{
		Selection: drills.DrillSelection{Mode: drills.DrillSnapshot, Job: c.Key, Snapshot: c.Snapshot},
		Restore:   true, RunID: runID}).Get(ctx, &sel)
	if err != nil || len(sel.Targets) != 1 {
		res.Error = fmt.Sprintf("the drill could not be prepared: %v", errorTextOr(err, "no target"))
		return res
	}
	t := sel.Targets[0]
	d := r.in.Policy.Drill
	c.WorkflowID = WindowCanaryDrillWorkflowID(r.in.WindowID, c.Attempts)
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: c.WorkflowID,
		StaticSummary:         drillChildSummary("canary ", c.Key, c.Snapshot, 2, "window "+r.in.WindowID+attemptText(c.Attempts)),
		TypedSearchAttributes: temporal.NewSearchAttributes(SearchAttrKind.ValueSet(KindDrillJob))})
	err = workflow.ExecuteChildWorkflow(cctx, JobDrillWorkflowType, JobDrillInput{RunID: runID, N: c.Attempts, Target: t, Tier: 2,
		Health: RestartPolicy{RunningTimeout: d.RunningTimeout, CheckpointTimeout: d.CheckpointTimeout, Soak: d.Soak}}).Get(ctx, &res)
	switch {
	case err != nil:
		res.Outcome, res.Error = catalog.DrillFailed, errorText(err)
	case res.Outcome == catalog.DrillPassed && res.Tier < 2:
		res.Outcome, res.Error = catalog.DrillFailed, "only its storage was proven, no copy was restored: "+res.Note
	}
	err = workflow.ExecuteActivity(r.activity(ctx), a.RecordDrillRun, drills.RecordDrillRunInput{RunID: runID, Tenants: []string{tenant},
		Results: []drills.DrillRecordInput{{Target: t, Tier: res.Tier, Outcome: res.Outcome, Error: res.Error}}}).Get(ctx, nil)
	if err != nil {
		r.st.Notes = append(r.st.Notes, "canary drill outcome not recorded beside the savepoint: "+errorText(err))
	}
	return res
}

func errorTextOr(err error, otherwise string) string {
	if err != nil {
		return errorText(err)
	}
	return otherwise
}

// proveSavepoints runs tier 1 on every savepoint the window took, after the
// network change and before any restart, in batches. A savepoint that
// fails pauses the window: restarting from it would fail, or worse.
func (r *windowRun) proveSavepoints(ctx workflow.Context) error {
	var a *drills.Activities
	for {
		keys := r.jobsWhere(func(j *JobProgress) bool {
			return j.SavepointState == StepDone && j.RestartState != StepSkipped && j.ProofState == ""
		})
		for start := 0; start < len(keys); start += proofBatch {
			batch := keys[start:min(start+proofBatch, len(keys))]
			paths := make([]string, len(batch))
			for i, k := range batch {
				paths[i] = r.st.job(k).SavepointPath
			}
			var verdicts []drills.SnapshotVerdict
			err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, proveOptions()), a.ProveSnapshots,
				drills.ProveSnapshotsInput{Snapshots: paths}).Get(ctx, &verdicts)
			if err == nil && len(verdicts) != len(batch) {
				err = fmt.Errorf("the proof answered for %d of %d savepoints", len(verdicts), len(batch))
			}
			if err != nil {
				ans, err := r.decide(ctx, DecisionSavepointProof,
					"the savepoints could not be proven: "+errorText(err)+". Retry, resume to restart without the proof, or abort",
					nil, ActionRetry, ActionResume, ActionAbort)
				if err != nil {
					return err
				}
				if ans.Action == ActionResume {
					r.st.Notes = append(r.st.Notes, fmt.Sprintf("storage proof of the savepoints waived by %s: %s", ans.By, ans.Reason))
					r.waiveProofs(func(j *JobProgress) bool { return j.ProofState == "" })
					return nil
				}
				break // retry: the jobs not yet proven are listed again
			}
			for i, v := range verdicts {
				j := r.st.job(batch[i])
				j.ProofState, j.ProofError = StepDone, ""
				if v.Failure != "" {
					j.ProofState, j.ProofError = StepFailed, v.Failure
				}
			}
			r.progressManifest(ctx)
		}
		if len(r.jobsWhere(func(j *JobProgress) bool {
			return j.ProofState == "" && j.SavepointState == StepDone && j.RestartState != StepSkipped
		})) > 0 {
			continue
		}
		r.flushManifest(ctx)
		failed := r.jobsWhere(func(j *JobProgress) bool { return j.ProofState == StepFailed && j.RestartState != StepSkipped })
		if len(failed) == 0 {
			return nil
		}
		ans, err := r.decide(ctx, DecisionSavepointProof,
			fmt.Sprintf("%d savepoint(s) fail the storage proof, so their jobs would not restore from them. "+
				"skip-job leaves a job stopped, retry-job proves its savepoint again, resume restarts them anyway, or abort:", len(failed))+
				failureLines(r.in.WindowID, failed, func(k string) (string, string) {
					j := r.st.job(k)
					return "the job is stopped with savepoint " + j.SavepointPath, clip(j.ProofError, maxErrorText)
				}),
			failed, ActionRetryJob, ActionSkipJob, ActionResume, ActionAbort)
		if err != nil {
			return err
		}
		switch ans.Action {
		case ActionRetryJob:
			r.st.job(ans.Job).ProofState = ""
		case ActionSkipJob:
			j := r.st.job(ans.Job)
			r.skip(ans.Job, fmt.Sprintf("operator skipped it (%s): its savepoint %s fails the storage proof (%s); the job stays stopped: "+
				"restart it by hand from a snapshot that passes `flinkmaint drill start --tier 1 --job %s --snapshot DIR`",
				ans.By, j.SavepointPath, j.ProofError, ans.Job))
		case ActionResume:
			r.st.Notes = append(r.st.Notes, fmt.Sprintf("%s restarts %d job(s) whose savepoint failed the storage proof: %s", ans.By, len(failed), ans.Reason))
			r.waiveProofs(func(j *JobProgress) bool { return j.ProofState == StepFailed })
			return nil
		}
	}
}

// ProofWaived marks a savepoint an operator let the window restart from
// without a passing proof; a run that continues as new does not ask again.
const ProofWaived = "waived"

// waiveProofs marks the proofs of the restartable jobs pred selects waived.
func (r *windowRun) waiveProofs(pred func(*JobProgress) bool) {
	for i := range r.st.Jobs {
		j := &r.st.Jobs[i]
		if j.SavepointState == StepDone && j.RestartState != StepSkipped && pred(j) {
			j.ProofState = ProofWaived
		}
	}
}
