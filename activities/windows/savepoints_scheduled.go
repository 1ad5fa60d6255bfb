package windows

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/flink"
)

// TakeSavepointInput asks for one savepoint of a running job, which keeps
// running.
type TakeSavepointInput struct {
	Job core.JobTarget `json:"job"`
	// TriggerID (32 hex) makes retries re-attach to the same savepoint.
	TriggerID string `json:"triggerId"`
	// Format is CANONICAL (default) or NATIVE.
	Format string `json:"format,omitempty"`
	// RunID names the run that asked, recorded in the catalog.
	RunID string `json:"runId"`
	// Trigger is the catalog's trigger: scheduled (default), window or
	// rehearsal.
	Trigger string `json:"trigger,omitempty"`
}

// TakeSavepointResult is a verified, catalogued savepoint.
type TakeSavepointResult struct {
	SavepointPath string `json:"savepointPath"`
	CheckpointID  int64  `json:"checkpointId"`
	Files         int64  `json:"files"`
	Bytes         int64  `json:"bytes"`
	// Format is the savepoint's format; FormatNote says why it is not the
	// one asked for (a ForSt job takes NATIVE only).
	Format     string `json:"format,omitempty"`
	FormatNote string `json:"formatNote,omitempty"`
}

// TakeSavepoint takes a savepoint without stopping the job, verifies it
// (its _metadata parses and every file it references exists) and records
// it in the tenant's catalog as scheduled. A savepoint that is not
// catalogued fails the activity (retryable): without the entry, retention
// cannot tell its logical job.
func (a *Activities) TakeSavepoint(ctx context.Context, in TakeSavepointInput) (TakeSavepointResult, error) {
	if in.Job.JobID == "" || in.Job.Key == "" || in.Job.Tenant == "" || in.RunID == "" {
		return TakeSavepointResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "take savepoint: job key %q, tenant %q, job id %q and run id %q are all required",
			in.Job.Key, in.Job.Tenant, in.Job.JobID, in.RunID)
	}
	if in.Job.SavepointDir == "" {
		return TakeSavepointResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "job %s: no savepoint directory configured for cluster %s", in.Job.Key, in.Job.ClusterID)
	}
	if a.Inventory == nil || a.Storage == nil {
		return TakeSavepointResult{}, core.NonRetryable(core.ErrTypeInventory, "worker has no inventory source or storage configured")
	}
	client, err := core.FlinkFor(ctx, a.Flink, in.Job.RESTURL)
	if err != nil {
		return TakeSavepointResult{}, err
	}
	format, note, err := a.jobs().SavepointFormatFor(ctx, client, in.Job, in.Format)
	if err != nil {
		return TakeSavepointResult{}, core.Classify("state backend of "+in.Job.Key+" ("+in.Job.JobID+")", err)
	}
	trig, err := client.TriggerSavepoint(ctx, in.Job.JobID, flink.SavepointRequest{
		TargetDirectory: in.Job.SavepointDir, FormatType: flink.SavepointFormat(format), TriggerID: in.TriggerID,
	})
	if err != nil {
		return TakeSavepointResult{}, core.Classify("trigger savepoint of "+in.Job.Key+" ("+in.Job.JobID+")", err)
	}
	logger := activity.GetLogger(ctx)
	logger.Info("savepoint triggered", "job", in.Job.Key, "job_id", in.Job.JobID, "trigger", trig.TriggerID, "reattached", trig.Reattached)
	var location string
	triggered := time.Now()
	for location == "" {
		st, err := client.SavepointStatus(ctx, in.Job.JobID, trig.TriggerID)
		if errors.Is(err, flink.ErrOperationNotFound) {
			// Forgotten (cache expiry, JobManager failover): a retry
			// triggers it again under the same id.
			return TakeSavepointResult{}, core.Retryable(core.ErrTypeSavepointFailed,
				"Flink no longer knows savepoint %s of %s; it is triggered again", trig.TriggerID, in.Job.Key)
		}
		if err != nil {
			return TakeSavepointResult{}, core.Classify("savepoint status of "+in.Job.Key, err)
		}
		if st.Done() {
			if st.Failure != nil {
				return TakeSavepointResult{}, core.NonRetryable(core.ErrTypeSavepointFailed, "savepoint of %s (%s) failed; the job keeps running: %s",
					in.Job.Key, in.Job.JobID, core.FailureText(st.Failure))
			}
			if st.Location == "" {
				return TakeSavepointResult{}, core.NonRetryable(core.ErrTypeSavepointInvalid, "savepoint of %s completed without a location", in.Job.Key)
			}
			location = strings.TrimRight(st.Location, "/")
			break
		}
		activity.RecordHeartbeat(ctx, "savepoint in progress")
		if err := core.Sleep(ctx, a.jobs().OperationPollDelay(time.Since(triggered))); err != nil {
			return TakeSavepointResult{}, err
		}
	}
	ver, err := a.VerifySavepoint(ctx, VerifySavepointInput{Path: location})
	if err != nil {
		return TakeSavepointResult{}, err
	}
	trigger := catalog.TriggerScheduled
	if in.Trigger != "" {
		trigger = in.Trigger
	}
	err = a.catalog().Put(ctx, in.Job, catalog.Entry{Path: location, Trigger: trigger, RunID: in.RunID,
		Format: format, Files: ver.Files, Bytes: ver.Bytes})
	if errors.Is(err, catalog.ErrConflict) || errors.Is(err, catalog.ErrInvalid) {
		return TakeSavepointResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "savepoint %s of %s not catalogued: %v", location, in.Job.Key, err)
	}
	if err != nil {
		return TakeSavepointResult{}, core.Classify(fmt.Sprintf("catalog savepoint %s of %s", location, in.Job.Key), err)
	}
	logger.Info("savepoint taken, verified and catalogued", "job", in.Job.Key, "savepoint", location, "files", ver.Files, "bytes", ver.Bytes)
	return TakeSavepointResult{SavepointPath: location, CheckpointID: ver.CheckpointID, Files: ver.Files, Bytes: ver.Bytes, Format: format, FormatNote: note}, nil
}

// TenantSavepoints is one tenant's outcome of a scheduled savepoint run.
type TenantSavepoints struct {
	Tenant string `json:"tenant"`
	Taken  int64  `json:"taken"`
	Failed int64  `json:"failed"`
}

// RecordSavepointRunInput is the outcome of a scheduled savepoint run.
type RecordSavepointRunInput struct {
	RunID   string             `json:"runId"`
	Tenants []TenantSavepoints `json:"tenants"`
}

// RecordSavepointRun exports a scheduled savepoint run's outcome as
// metrics (gauges: a retry sets the same values) and logs each tenant
// with failures as an error, so an alert fires without stopping any job.
func (a *Activities) RecordSavepointRun(ctx context.Context, in RecordSavepointRunInput) error {
	logger := activity.GetLogger(ctx)
	failed := false
	var succeeded []string
	for _, t := range in.Tenants {
		if a.Metrics != nil {
			a.Metrics.ScheduledSavepoints(t.Tenant, t.Taken, t.Failed)
		}
		if t.Failed > 0 {
			failed = true
			logger.Error("scheduled savepoints failed; the jobs keep running", "run", in.RunID, "tenant", t.Tenant, "failed", t.Failed, "taken", t.Taken)
		} else {
			succeeded = append(succeeded, t.Tenant)
		}
	}
	if a.Metrics != nil {
		if !failed {
			a.Metrics.Succeeded("scheduled-savepoints", core.Now(a.Now))
		}
		// A tenant whose jobs all took theirs is fresh even when another's failed.
		a.Metrics.SucceededFor("scheduled-savepoints", succeeded, core.Now(a.Now))
	}
	return nil
}
