package flink

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// CheckpointType is the kind of checkpoint POST /jobs/{jobid}/checkpoints
// takes (Flink 1.19+).
type CheckpointType string

// Checkpoint types.
const (
	// CheckpointConfigured is what the job is configured for: incremental
	// when its state backend checkpoints incrementally, full otherwise.
	CheckpointConfigured CheckpointType = "CONFIGURED"
	// CheckpointFull uploads all of the job's state again: it names no file
	// an earlier checkpoint wrote (later incremental ones may name its
	// files).
	CheckpointFull CheckpointType = "FULL"
	// CheckpointIncremental is refused by every supported Flink version
	// (FLINK-33723) with ErrBadRequest; CheckpointConfigured is incremental
	// when the job checkpoints incrementally.
	CheckpointIncremental CheckpointType = "INCREMENTAL"
)

// CheckpointOperationStatus is the state of a triggered checkpoint.
type CheckpointOperationStatus struct {
	// State is IN_PROGRESS or COMPLETED.
	State string
	// CheckpointID of the checkpoint on success, 0 otherwise.
	CheckpointID int64
	// Failure is set when the operation COMPLETED unsuccessfully.
	Failure *FailureCause
}

// Done reports whether the operation has completed (successfully or not).
func (s CheckpointOperationStatus) Done() bool { return s.State == OperationCompleted }

type checkpointTriggerBody struct {
	CheckpointType CheckpointType `json:"checkpointType,omitempty"`
	TriggerID      string         `json:"triggerId,omitempty"`
}

// checkpointOperationResult is the status of a checkpoint trigger: its
// operation spells the failure cause failureCause, unlike savepoints.
type checkpointOperationResult struct {
	Status struct {
		ID string `json:"id"`
	} `json:"status"`
	Operation *checkpointOperation `json:"operation"`
}

type checkpointOperation struct {
	CheckpointID *int64        `json:"checkpointId"`
	FailureCause *FailureCause `json:"failureCause"`
}

func checkCheckpointType(op string, t CheckpointType) error {
	switch t {
	case "", CheckpointConfigured, CheckpointFull, CheckpointIncremental:
		return nil
	}
	return invalidArgument(op, "checkpointType %q is not one of %s, %s, %s", t, CheckpointConfigured, CheckpointFull, CheckpointIncremental)
}

// TriggerCheckpoint starts a checkpoint of the job, of type typ ("" leaves
// Flink's default, CONFIGURED). Use AwaitCheckpoint with the returned
// trigger for the checkpoint's ID. The request carries a fresh trigger ID:
// when the POST fails in a way that may have reached Flink (lost response,
// 5xx, 409), the client asks Flink for that trigger ID and re-attaches if
// it knows it, so one call starts at most one checkpoint. A retried call
// starts another checkpoint, which is harmless.
//
// Flink accepts a trigger for a job it does not run and fails the
// operation: AwaitCheckpoint then returns ErrJobNotFound or
// ErrJobNotRunning.
func (c *Client) TriggerCheckpoint(ctx context.Context, jobID string, typ CheckpointType) (Trigger, error) {
	const op = "trigger checkpoint"
	if err := checkID(op, "job ID", jobID); err != nil {
		return Trigger{}, err
	}
	if err := checkCheckpointType(op, typ); err != nil {
		return Trigger{}, err
	}
	t := Trigger{JobID: jobID, TriggerID: NewTriggerID()}
	var resp triggerResponse
	err := c.do(ctx, request{op: op, ep: epTriggerCheckpoint, args: []string{jobID},
		body: checkpointTriggerBody{CheckpointType: typ, TriggerID: t.TriggerID}, notFound: ErrorReasonJobNotFound}, &resp)
	if err != nil {
		if refused := incrementalRefused(err); refused != nil {
			return t, refused
		}
		if IsRetryable(err) && ctx.Err() == nil {
			if _, serr := c.CheckpointTriggerStatus(ctx, jobID, t.TriggerID); serr == nil {
				t.Reattached = true
				return t, nil
			}
		}
		return t, c.refineJobNotFound(ctx, jobID, err)
	}
	switch {
	case resp.RequestID == "" || resp.RequestID == t.TriggerID:
	case hex32.MatchString(resp.RequestID):
		// A server that ignores the triggerId field chose its own.
		t.TriggerID = resp.RequestID
	default:
		return t, NewError(op, ErrorReasonMalformedResponse, fmt.Sprintf("request-id %q in the response is not a trigger ID", resp.RequestID), nil)
	}
	return t, nil
}

// incrementalRefused turns Flink's refusal of an INCREMENTAL trigger, an
// internal server error that repeating will not change, into a
// non-retryable ErrBadRequest; nil for any other error.
func incrementalRefused(err error) error {
	var fe *Error
	if !errors.As(err, &fe) || !strings.Contains(strings.ToLower(fe.Message), "does not support triggering incremental checkpoint") {
		return nil
	}
	out := *fe
	out.Reason, out.Retryable = ErrorReasonBadRequest, false
	out.Message += fmt.Sprintf("; trigger %s instead: it is incremental when the job checkpoints incrementally", CheckpointConfigured)
	return &out
}

// CheckpointTriggerStatus returns the state of a triggered checkpoint. A
// trigger ID Flink does not know for the job (never used, expired from its
// cache after rest.async.store-duration, or the job is unknown) gives
// ErrOperationNotFound.
func (c *Client) CheckpointTriggerStatus(ctx context.Context, jobID, triggerID string) (CheckpointOperationStatus, error) {
	const op = "checkpoint status"
	if err := checkID(op, "job ID", jobID); err != nil {
		return CheckpointOperationStatus{}, err
	}
	if err := checkID(op, "trigger ID", triggerID); err != nil {
		return CheckpointOperationStatus{}, err
	}
	var out checkpointOperationResult
	if err := c.do(ctx, request{op: op, ep: epCheckpointTriggerStatus, args: []string{jobID, triggerID}, notFound: ErrorReasonOperationNotFound}, &out); err != nil {
		return CheckpointOperationStatus{}, err
	}
	st := CheckpointOperationStatus{State: out.Status.ID}
	switch st.State {
	case OperationInProgress:
	case OperationCompleted:
		if out.Operation != nil {
			if out.Operation.CheckpointID != nil {
				st.CheckpointID = *out.Operation.CheckpointID
			}
			st.Failure = out.Operation.FailureCause
		}
	default:
		return st, NewError(op, ErrorReasonMalformedResponse, fmt.Sprintf("unknown operation status %q (want IN_PROGRESS or COMPLETED)", st.State), nil)
	}
	return st, nil
}

// AwaitCheckpoint polls a triggered checkpoint until it completes and
// returns its ID. A COMPLETED operation carrying a failure cause is an
// error classified from Flink's exception (job not found, job not running,
// tasks not ready, quota exceeded, …; ErrOperationFailed otherwise).
// Transient polling errors are retried until ctx ends.
func (c *Client) AwaitCheckpoint(ctx context.Context, jobID, triggerID string) (int64, error) {
	const op = "await checkpoint"
	var last CheckpointOperationStatus
	_, err := c.await(ctx, op, func() (OperationStatus, error) {
		st, err := c.CheckpointTriggerStatus(ctx, jobID, triggerID)
		last = st
		return OperationStatus{State: st.State, Failure: st.Failure}, err
	})
	if err != nil {
		return 0, c.refineJobNotFound(ctx, jobID, err)
	}
	if last.Failure != nil {
		return 0, c.refineJobNotFound(ctx, jobID, failureError(op, triggerID, last.Failure))
	}
	if last.CheckpointID <= 0 {
		return 0, NewError(op, ErrorReasonMalformedResponse, "operation "+triggerID+" COMPLETED without checkpointId or failureCause", nil)
	}
	return last.CheckpointID, nil
}
