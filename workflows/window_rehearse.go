package workflows

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/internal/catalog"
)

// WindowRehearsalWorkflowID is the rehearsal of one job of a window.
func WindowRehearsalWorkflowID(windowID, jobKey string, attempt int) string {
	return withAttempt(WindowWorkflowID(windowID)+"/rehearsal/"+jobKey, attempt)
}

// rehearse restores a savepoint of every job in scope, taken without
// stopping it, with the job's build for policy.rehearse.flinkVersion on a
// drill cluster of that version, at most policy.rehearse.concurrency at
// once, before savepoint-all stops anything. An incompatible or
// inconclusive job pauses the window (rehearsal): skip-job leaves that job
// out of the window, running as it is; retry-job rehearses it again;
// resume goes on with every job, knowingly; abort ends the window with
// nothing stopped. A job that could not be rehearsed (no drill recipe, no
// build for the version) is reported, not paused for.
func (r *windowRun) rehearse(ctx workflow.Context) error {
	p := r.in.Policy.Rehearse
	health := RestartPolicy{RunningTimeout: p.RunningTimeout, CheckpointTimeout: p.CheckpointTimeout, Soak: p.Soak, Checks: r.in.Policy.Restart.Checks}
	for i := range r.st.Jobs {
		// A job discovery found no build of for the version is reported
		// without a child: a fleet of such jobs costs no history.
		j := &r.st.Jobs[i]
		if why := planRehearsal(p, j.Target); j.Rehearsal == "" && j.RestartState != StepSkipped && !strings.HasPrefix(why, "rehearsed") {
			j.Rehearsal, j.RehearsalCause = catalog.RehearsalNotRehearsed, strings.TrimPrefix(why, "not rehearsed: ")
		}
	}
	for {
		keys := r.jobsWhere(func(j *JobProgress) bool { return j.Rehearsal == "" && j.RestartState != StepSkipped })
		err := r.runChildren(ctx, keys, p.Concurrency,
			func(ctx workflow.Context, key string) workflow.ChildWorkflowFuture {
				j := r.st.job(key)
				j.RehearsalAttempts++
				cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: WindowRehearsalWorkflowID(r.in.WindowID, key, j.RehearsalAttempts),
					StaticSummary: clip(fmt.Sprintf("rehearse %s on Flink %s (window %s%s)", key, p.FlinkVersion, r.in.WindowID,
						attemptText(j.RehearsalAttempts)), maxSummaryBytes),
					TypedSearchAttributes: temporal.NewSearchAttributes(SearchAttrKind.ValueSet(KindRehearsal))})
				return workflow.ExecuteChildWorkflow(cctx, JobRehearsalWorkflowType, JobRehearsalInput{RunID: WindowWorkflowID(r.in.WindowID),
					N: j.RehearsalAttempts, Job: j.Target, FlinkVersion: p.FlinkVersion, Format: r.in.Policy.Savepoint.Format,
					SavepointTimeout: r.in.Policy.Savepoint.Timeout, Health: health})
			},
			func(ctx workflow.Context, key string, f workflow.ChildWorkflowFuture) {
				j := r.st.job(key)
				var res RehearsalResult
				if err := f.Get(ctx, &res); err != nil {
					res = RehearsalResult{Verdict: catalog.RehearsalInconclusive, Why: "the rehearsal ended without a verdict: " + errorText(err)}
				}
				j.Rehearsal, j.RehearsalSavepoint, j.RehearsalCause = res.Verdict, res.Savepoint, res.Why
				if res.Cause != nil {
					j.RehearsalCause = res.Cause.Text
				}
				if res.FormatNote != "" {
					// A ForSt job's savepoint is NATIVE: say so beside the verdict.
					j.RehearsalCause = strings.TrimPrefix(j.RehearsalCause+"; "+res.FormatNote, "; ")
				}
			})
		if err != nil {
			return err
		}
		failed := r.jobsWhere(func(j *JobProgress) bool {
			return (j.Rehearsal == catalog.RehearsalIncompatible || j.Rehearsal == catalog.RehearsalInconclusive) && !j.RehearsalWaived && j.RestartState != StepSkipped
		})
		if len(failed) == 0 {
			return nil
		}
		ans, err := r.decide(ctx, DecisionRehearsal, fmt.Sprintf(
			"%d job(s) did not prove, on Flink %s, that their state restores into their new build. Nothing is stopped yet: "+
				"skip-job leaves a job out of the window (it keeps running as it is), retry-job rehearses it again, resume goes on with every job knowingly, or abort:",
			len(failed), p.FlinkVersion)+
			failureLines(r.in.WindowID, failed, func(k string) (string, string) {
				j := r.st.job(k)
				return j.Rehearsal, clip(j.RehearsalCause, maxErrorText)
			}),
			failed, ActionRetryJob, ActionSkipJob, ActionResume, ActionAbort)
		if err != nil {
			return err
		}
		switch ans.Action {
		case ActionRetryJob:
			r.st.job(ans.Job).Rehearsal = ""
		case ActionSkipJob:
			j := r.st.job(ans.Job)
			r.skip(ans.Job, fmt.Sprintf("operator left it out (%s) after its rehearsal on Flink %s: %s: %s; the job keeps running, untouched by the window",
				ans.By, p.FlinkVersion, j.Rehearsal, j.RehearsalCause))
		case ActionResume:
			r.st.Notes = append(r.st.Notes, fmt.Sprintf("%s goes on with %d job(s) whose rehearsal on Flink %s failed: %s", ans.By, len(failed), p.FlinkVersion, ans.Reason))
			for _, k := range failed {
				r.st.job(k).RehearsalWaived = true
			}
			return nil
		}
	}
}
