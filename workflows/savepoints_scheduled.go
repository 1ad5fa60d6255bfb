package workflows

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// ScheduledSavepointsWorkflowType takes a savepoint of every running job
// in scope without stopping any; a savepoint schedule starts it.
const ScheduledSavepointsWorkflowType = "ScheduledSavepoints"

// ScheduledSavepointsInput selects the jobs and how savepoints are taken.
type ScheduledSavepointsInput struct {
	// Schedule names the schedule that starts the runs, if any.
	Schedule string     `json:"schedule,omitempty"`
	Scope    core.Scope `json:"scope"`
	// Concurrency bounds the savepoints in flight (default 4).
	Concurrency int `json:"concurrency,omitempty"`
	// Format is CANONICAL (default) or NATIVE.
	Format string `json:"format,omitempty"`
	// Timeout bounds one savepoint, verification included (default 30m).
	Timeout Duration `json:"timeout,omitempty"`
	// OverrideFreeze lets the run take savepoints inside a freeze.
	OverrideFreeze *FreezeOverride `json:"overrideFreeze,omitempty"`
}

// ApplyDefaults fills in unset fields.
func (in *ScheduledSavepointsInput) ApplyDefaults() {
	setInt(&in.Concurrency, 4)
	setStr(&in.Format, FormatCanonical)
	if in.Timeout == 0 {
		in.Timeout = Duration(30 * time.Minute)
	}
}

// Validate names every field that is out of range.
func (in *ScheduledSavepointsInput) Validate() error {
	var problems []string
	if in.Concurrency < 1 || in.Concurrency > 256 {
		problems = append(problems, fmt.Sprintf("concurrency=%d: use 1..256", in.Concurrency))
	}
	if in.Format != FormatCanonical && in.Format != FormatNative {
		problems = append(problems, fmt.Sprintf("format=%q: use %s or %s", in.Format, FormatCanonical, FormatNative))
	}
	if in.Timeout.D() < time.Minute {
		problems = append(problems, fmt.Sprintf("timeout=%s: use at least 1m", in.Timeout.D()))
	}
	problems = append(problems, in.Scope.GlobProblems()...)
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// ScheduledSavepoint is one job's outcome.
type ScheduledSavepoint struct {
	Key           string `json:"key"`
	Tenant        string `json:"tenant"`
	JobID         string `json:"jobId"`
	SavepointPath string `json:"savepointPath,omitempty"`
	Files         int64  `json:"files,omitempty"`
	Bytes         int64  `json:"bytes,omitempty"`
	Error         string `json:"error,omitempty"`
}

// ScheduledSavepointsReport is a run's result.
type ScheduledSavepointsReport struct {
	RunID      string                     `json:"runId"`
	Schedule   string                     `json:"schedule,omitempty"`
	StartedAt  time.Time                  `json:"startedAt"`
	FinishedAt time.Time                  `json:"finishedAt"`
	Jobs       []ScheduledSavepoint       `json:"jobs"`
	Skipped    []core.SkippedJob          `json:"skipped,omitempty"`
	Tenants    []windows.TenantSavepoints `json:"tenants"`
	Taken      int                        `json:"taken"`
	Failed     int                        `json:"failed"`
	// Frozen says a freeze was in force: the run skipped, or it was
	// overridden.
	Frozen string `json:"frozen,omitempty"`
}

// takeSavepointOptions: one attempt lasts as long as the savepoint; a lost
// worker is noticed by the heartbeat and the retry re-attaches to the same
// trigger.
func takeSavepointOptions(timeout time.Duration) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: timeout,
		HeartbeatTimeout:    30 * time.Second,
		RetryPolicy:         standardRetry(3),
	}
}

// ScheduledSavepointsWorkflow takes, verifies and catalogues a savepoint of
// every running job in scope, at most Concurrency at once. A failed
// savepoint leaves its job running; the run ends in ErrTypeSavepointsFailed
// once every job was tried, and metrics and the log say which tenant.
func ScheduledSavepointsWorkflow(ctx workflow.Context, in ScheduledSavepointsInput) (*ScheduledSavepointsReport, error) {
	in.ApplyDefaults()
	if err := in.Validate(); err != nil {
		return nil, newInvalidInputError("scheduled savepoints: " + err.Error())
	}
	logger := workflow.GetLogger(ctx)
	runID := workflow.GetInfo(ctx).WorkflowExecution.ID
	rep := &ScheduledSavepointsReport{RunID: runID, Schedule: in.Schedule, StartedAt: workflow.Now(ctx)}
	if err := workflow.UpsertTypedSearchAttributes(ctx, SearchAttrKind.ValueSet(KindSavepoints)); err != nil {
		logger.Warn("search attributes not updated", "error", err)
	}
	skip, note, err := checkFreeze(ctx, "savepoint run "+runID, in.Scope.Tenants, in.OverrideFreeze, "set overrideFreeze (by, reason) in the run's input")
	if err != nil {
		return nil, err
	}
	if rep.Frozen = note; skip {
		rep.FinishedAt = workflow.Now(ctx)
		return rep, nil
	}

	var a *windows.Activities
	var disc core.DiscoverJobsResult
	err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, shortActivityOptions()), a.DiscoverJobs,
		core.DiscoverJobsInput{Scope: in.Scope, SavepointOnly: true}).Get(ctx, &disc)
	if err != nil {
		return nil, err
	}
	rep.Skipped = disc.Skipped
	rep.Jobs = make([]ScheduledSavepoint, len(disc.Jobs))
	takeCtx := workflow.WithActivityOptions(ctx, takeSavepointOptions(in.Timeout.D()))
	sel := workflow.NewSelector(ctx)
	inflight := 0
	for i, job := range disc.Jobs {
		rep.Jobs[i] = ScheduledSavepoint{Key: job.Key, Tenant: job.Tenant, JobID: job.JobID}
		f := workflow.ExecuteActivity(takeCtx, a.TakeSavepoint, windows.TakeSavepointInput{
			Job: job, TriggerID: flinkID(runID, job.Key, "scheduled-savepoint", 0), Format: in.Format, RunID: runID})
		inflight++
		sel.AddFuture(f, func(f workflow.Future) {
			inflight--
			var res windows.TakeSavepointResult
			if err := f.Get(ctx, &res); err != nil {
				rep.Jobs[i].Error = errorText(err)
				logger.Error("scheduled savepoint failed; the job keeps running", "job", job.Key, "job_id", job.JobID, "error", err)
				return
			}
			rep.Jobs[i].SavepointPath, rep.Jobs[i].Files, rep.Jobs[i].Bytes = res.SavepointPath, res.Files, res.Bytes
		})
		for inflight >= in.Concurrency {
			sel.Select(ctx)
		}
	}
	for inflight > 0 {
		sel.Select(ctx)
	}

	rep.Tenants = tallySavepoints(disc.Tenants, rep.Jobs)
	for _, t := range rep.Tenants {
		rep.Taken += int(t.Taken)
		rep.Failed += int(t.Failed)
	}
	err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, shortActivityOptions()), a.RecordSavepointRun,
		windows.RecordSavepointRunInput{RunID: runID, Tenants: rep.Tenants}).Get(ctx, nil)
	if err != nil {
		logger.Warn("scheduled savepoint metrics not recorded", "error", err)
	}
	rep.FinishedAt = workflow.Now(ctx)
	if rep.Failed > 0 {
		return rep, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%d of %d scheduled savepoints failed (the jobs keep running): %s", rep.Failed, len(rep.Jobs), failedKeys(rep.Jobs)),
			ErrTypeSavepointsFailed, nil, rep)
	}
	return rep, nil
}

// tallySavepoints counts taken and failed savepoints per tenant in scope,
// sorted by tenant; a tenant without running jobs has zeros.
func tallySavepoints(tenants []inventory.Tenant, jobs []ScheduledSavepoint) []windows.TenantSavepoints {
	by := map[string]*windows.TenantSavepoints{}
	var out []windows.TenantSavepoints
	add := func(name string) {
		if _, ok := by[name]; !ok {
			out = append(out, windows.TenantSavepoints{Tenant: name})
			by[name] = nil
		}
	}
	for _, t := range tenants {
		add(t.Name)
	}
	for _, j := range jobs {
		add(j.Tenant)
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Tenant < out[k].Tenant })
	for i := range out {
		by[out[i].Tenant] = &out[i]
	}
	for _, j := range jobs {
		if j.Error != "" {
			by[j.Tenant].Failed++
		} else {
			by[j.Tenant].Taken++
		}
	}
	return out
}

func failedKeys(jobs []ScheduledSavepoint) string {
	var keys []string
	for _, j := range jobs {
		if j.Error != "" {
			keys = append(keys, j.Key)
		}
	}
	return strings.Join(keys, ", ")
}
