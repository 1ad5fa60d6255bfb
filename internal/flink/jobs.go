package flink

import (
	"context"
	"errors"
	"net/url"
	"strconv"
)

// ClusterOverview returns GET /overview.
func (c *Client) ClusterOverview(ctx context.Context) (ClusterOverview, error) {
	var out ClusterOverview
	err := c.do(ctx, request{op: "cluster overview", ep: epClusterOverview}, &out)
	return out, err
}

// DashboardConfig returns GET /config (includes the Flink version).
func (c *Client) DashboardConfig(ctx context.Context) (DashboardConfig, error) {
	var out DashboardConfig
	err := c.do(ctx, request{op: "dashboard config", ep: epDashboardConfig}, &out)
	return out, err
}

// JobManagerConfig returns the cluster-wide configuration.
func (c *Client) JobManagerConfig(ctx context.Context) (Config, error) {
	var out Config
	err := c.do(ctx, request{op: "jobmanager config", ep: epJobManagerConfig}, &out)
	return out, err
}

// ListJobs returns GET /jobs/overview: every job the cluster knows,
// including archived terminal ones.
func (c *Client) ListJobs(ctx context.Context) ([]JobOverview, error) {
	var out jobsOverviewResponse
	if err := c.do(ctx, request{op: "list jobs", ep: epJobsOverview}, &out); err != nil {
		return nil, err
	}
	return out.Jobs, nil
}

// JobDetails returns GET /jobs/{jobid}.
func (c *Client) JobDetails(ctx context.Context, jobID string) (JobDetails, error) {
	const op = "job details"
	var out JobDetails
	if err := checkID(op, "job ID", jobID); err != nil {
		return out, err
	}
	err := c.do(ctx, request{op: op, ep: epJobDetails, args: []string{jobID}, notFound: ErrorReasonJobNotFound}, &out)
	return out, err
}

// JobState returns GET /jobs/{jobid}/status.
func (c *Client) JobState(ctx context.Context, jobID string) (JobState, error) {
	const op = "job status"
	if err := checkID(op, "job ID", jobID); err != nil {
		return "", err
	}
	var out jobStatusResponse
	if err := c.do(ctx, request{op: op, ep: epJobStatus, args: []string{jobID}, notFound: ErrorReasonJobNotFound}, &out); err != nil {
		return "", err
	}
	if out.Status == "" {
		return "", NewError(op, ErrorReasonMalformedResponse, "response has no status", nil)
	}
	return out.Status, nil
}

// JobExceptions returns the job's exception history; maxExceptions <= 0
// leaves the server default.
func (c *Client) JobExceptions(ctx context.Context, jobID string, maxExceptions int) (JobExceptions, error) {
	const op = "job exceptions"
	var out JobExceptions
	if err := checkID(op, "job ID", jobID); err != nil {
		return out, err
	}
	var q url.Values
	if maxExceptions > 0 {
		q = url.Values{"maxExceptions": {strconv.Itoa(maxExceptions)}}
	}
	err := c.do(ctx, request{op: op, ep: epJobExceptions, args: []string{jobID}, query: q, notFound: ErrorReasonJobNotFound}, &out)
	return out, err
}

// JobConfig returns the effective configuration of the job's JobManager
// (checkpoint/savepoint dirs, HA storage dir, retention).
func (c *Client) JobConfig(ctx context.Context, jobID string) (Config, error) {
	const op = "job jobmanager config"
	if err := checkID(op, "job ID", jobID); err != nil {
		return nil, err
	}
	var out Config
	err := c.do(ctx, request{op: op, ep: epJobJobManagerConfig, args: []string{jobID}, notFound: ErrorReasonJobNotFound}, &out)
	return out, err
}

// Checkpoints returns GET /jobs/{jobid}/checkpoints; Latest.Restored tells
// what the job was restored from.
func (c *Client) Checkpoints(ctx context.Context, jobID string) (CheckpointingStatistics, error) {
	const op = "checkpoint statistics"
	var out CheckpointingStatistics
	if err := checkID(op, "job ID", jobID); err != nil {
		return out, err
	}
	err := c.do(ctx, request{op: op, ep: epCheckpoints, args: []string{jobID}, notFound: ErrorReasonJobNotFound}, &out)
	return out, err
}

// CheckpointConfig returns the job's checkpointing configuration; a job
// without checkpointing gives ErrCheckpointingDisabled.
func (c *Client) CheckpointConfig(ctx context.Context, jobID string) (CheckpointConfig, error) {
	const op = "checkpoint config"
	var out CheckpointConfig
	if err := checkID(op, "job ID", jobID); err != nil {
		return out, err
	}
	err := c.do(ctx, request{op: op, ep: epCheckpointConfig, args: []string{jobID}, notFound: ErrorReasonJobNotFound}, &out)
	return out, err
}

// CheckpointDetails returns one checkpoint; a checkpoint that fell out of
// the history (or never existed) gives ErrOperationNotFound.
func (c *Client) CheckpointDetails(ctx context.Context, jobID string, checkpointID int64) (CheckpointStatistics, error) {
	const op = "checkpoint details"
	var out CheckpointStatistics
	if err := checkID(op, "job ID", jobID); err != nil {
		return out, err
	}
	if checkpointID < 0 {
		return out, invalidArgument(op, "checkpoint ID %d must not be negative", checkpointID)
	}
	err := c.do(ctx, request{op: op, ep: epCheckpointDetails, args: []string{jobID, strconv.FormatInt(checkpointID, 10)},
		notFound: ErrorReasonOperationNotFound}, &out)
	return out, err
}

// CancelJob cancels the job (no savepoint). Cancelling a job that is
// already CANCELED returns nil; one that ended otherwise gives
// ErrJobNotRunning; an unknown one ErrJobNotFound.
func (c *Client) CancelJob(ctx context.Context, jobID string) error {
	const op = "cancel job"
	if err := checkID(op, "job ID", jobID); err != nil {
		return err
	}
	err := c.do(ctx, request{op: op, ep: epCancelJob, args: []string{jobID}, query: url.Values{"mode": {"cancel"}},
		notFound: ErrorReasonJobNotFound}, nil)
	if err == nil {
		return nil
	}
	if !errors.Is(err, ErrJobNotFound) && !errors.Is(err, ErrJobNotRunning) {
		return err
	}
	state, serr := c.JobState(ctx, jobID)
	if serr != nil {
		return err
	}
	if state == JobCanceled {
		return nil
	}
	return c.refineNotRunning(err, state)
}

// refineNotRunning turns a job-not-found error for a job that Flink still
// lists (archived, terminal) into a job-not-running error naming its state.
func (c *Client) refineNotRunning(err error, state JobState) error {
	var fe *Error
	if !errors.As(err, &fe) || !state.IsTerminal() {
		return err
	}
	refined := *fe
	refined.Reason = ErrorReasonJobNotRunning
	refined.Retryable = false
	refined.Message = "job is " + string(state) + ": " + fe.Message
	return &refined
}

// refineJobNotFound checks, after an operation on a job failed for a reason
// that a finished job also produces (not found, unclassified failure, tasks
// not ready), whether the job has ended; if so the error becomes
// ErrJobNotRunning. Flink's message for the same situation varies with
// timing ("Could not find Flink job", "is not a streaming job", "Not all
// required tasks are currently running"), the job state does not.
func (c *Client) refineJobNotFound(ctx context.Context, jobID string, err error) error {
	switch Reason(err) {
	case ErrorReasonJobNotFound, ErrorReasonOperationFailed, ErrorReasonTasksNotReady:
	default:
		return err
	}
	state, serr := c.JobState(ctx, jobID)
	if serr != nil {
		return err
	}
	return c.refineNotRunning(err, state)
}
