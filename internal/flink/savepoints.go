package flink

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// NewTriggerID returns a random 32-character lowercase hex trigger ID, the
// format Flink requires.
func NewTriggerID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// SavepointRequest configures POST /jobs/{jobid}/savepoints.
type SavepointRequest struct {
	// TargetDirectory for the savepoint; empty uses the cluster default
	// (execution.checkpointing.savepoint-dir), if any.
	TargetDirectory string
	// FormatType; empty leaves Flink's default (CANONICAL).
	FormatType SavepointFormat
	// CancelJob cancels the job after the savepoint (prefer
	// StopWithSavepoint, which stops sources first).
	CancelJob bool
	// TriggerID makes the trigger idempotent under retries; empty means a
	// fresh random one.
	TriggerID string
}

// StopRequest configures POST /jobs/{jobid}/stop.
type StopRequest struct {
	TargetDirectory string
	// Drain emits MAX_WATERMARK before the savepoint, firing all timers;
	// only for jobs that will not be resumed.
	Drain      bool
	FormatType SavepointFormat
	TriggerID  string
}

// Trigger identifies a started (or re-attached) savepoint or checkpoint
// operation.
type Trigger struct {
	JobID     string
	TriggerID string
	// Reattached is true when Flink already knew the trigger ID and no new
	// operation was started by this call.
	Reattached bool
}

// OperationStatus is the state of a savepoint, stop or disposal operation.
type OperationStatus struct {
	// State is IN_PROGRESS or COMPLETED.
	State string
	// Location of the savepoint on success (savepoint and stop only).
	Location string
	// Failure is set when the operation COMPLETED unsuccessfully.
	Failure *FailureCause
}

// Done reports whether the operation has completed (successfully or not).
func (s OperationStatus) Done() bool { return s.State == OperationCompleted }

func checkFormat(op string, f SavepointFormat) error {
	switch f {
	case "", SavepointFormatCanonical, SavepointFormatNative:
		return nil
	}
	return invalidArgument(op, "formatType %q is not one of CANONICAL, NATIVE", f)
}

// checkTargetDir rejects relative target directories: Flink resolves them
// against the JobManager's working directory on its local disk, which is
// never what a fleet operator wants.
func checkTargetDir(op, dir string) error {
	if dir == "" || strings.HasPrefix(dir, "/") {
		return nil
	}
	u, err := url.Parse(dir)
	if err != nil || u.Scheme == "" || (u.Host == "" && !strings.HasPrefix(u.Path, "/")) {
		return NewError(op, ErrorReasonInvalidTargetDirectory,
			fmt.Sprintf("target directory %q must be an absolute path or a URI with a scheme, e.g. hdfs://namenode:8020/savepoints", dir), nil)
	}
	return nil
}

func checkTriggerID(op string, id string) (string, bool, error) {
	if id == "" {
		return NewTriggerID(), false, nil
	}
	if err := checkID(op, "trigger ID", id); err != nil {
		return "", false, err
	}
	return id, true, nil
}

// TriggerSavepoint starts a savepoint, or re-attaches to the operation with
// the same trigger ID (see the package documentation on idempotency). Use
// AwaitSavepoint with the returned trigger to get the location.
func (c *Client) TriggerSavepoint(ctx context.Context, jobID string, req SavepointRequest) (Trigger, error) {
	const op = "trigger savepoint"
	triggerID, chosen, err := checkSavepointRequest(op, jobID, req.FormatType, req.TargetDirectory, req.TriggerID)
	if err != nil {
		return Trigger{}, err
	}
	body := savepointTriggerBody{TargetDirectory: req.TargetDirectory, CancelJob: req.CancelJob, FormatType: req.FormatType, TriggerID: triggerID}
	return c.triggerIdempotently(ctx, op, epTriggerSavepoint, jobID, triggerID, chosen, body)
}

// StopWithSavepoint stops the job with a savepoint, or re-attaches to the
// operation with the same trigger ID. Use AwaitSavepoint for the result.
func (c *Client) StopWithSavepoint(ctx context.Context, jobID string, req StopRequest) (Trigger, error) {
	const op = "stop with savepoint"
	triggerID, chosen, err := checkSavepointRequest(op, jobID, req.FormatType, req.TargetDirectory, req.TriggerID)
	if err != nil {
		return Trigger{}, err
	}
	body := stopWithSavepointBody{TargetDirectory: req.TargetDirectory, Drain: req.Drain, FormatType: req.FormatType, TriggerID: triggerID}
	return c.triggerIdempotently(ctx, op, epStopWithSavepoint, jobID, triggerID, chosen, body)
}

// checkSavepointRequest validates what a savepoint and a stop-with-savepoint
// share and returns the trigger ID to send (chosen: by the caller).
func checkSavepointRequest(op, jobID string, format SavepointFormat, targetDir, triggerID string) (string, bool, error) {
	if err := checkID(op, "job ID", jobID); err != nil {
		return "", false, err
	}
	if err := checkFormat(op, format); err != nil {
		return "", false, err
	}
	if err := checkTargetDir(op, targetDir); err != nil {
		return "", false, err
	}
	return checkTriggerID(op, triggerID)
}

func (c *Client) triggerIdempotently(ctx context.Context, op string, ep endpoint, jobID, triggerID string, chosen bool, body any) (Trigger, error) {
	t := Trigger{JobID: jobID, TriggerID: triggerID}
	// A caller-chosen ID may belong to an earlier attempt whose response
	// was lost: ask first, post only if Flink does not know it.
	if chosen {
		known, err := c.knowsTrigger(ctx, jobID, triggerID)
		if err != nil {
			return t, err
		}
		if known {
			t.Reattached = true
			return t, nil
		}
	}
	var resp triggerResponse
	err := c.do(ctx, request{op: op, ep: ep, args: []string{jobID}, body: body, notFound: ErrorReasonJobNotFound}, &resp)
	if err != nil {
		if IsRetryable(err) && ctx.Err() == nil {
			// The POST may have reached Flink even though we saw an
			// error (lost response, proxy timeout, "already in progress").
			if known, kerr := c.knowsTrigger(ctx, jobID, triggerID); kerr == nil && known {
				t.Reattached = true
				return t, nil
			}
		}
		return t, c.refineJobNotFound(ctx, jobID, err)
	}
	if resp.RequestID != "" && resp.RequestID != triggerID {
		// Flink older than the triggerId field ignores ours; follow its ID.
		t.TriggerID = resp.RequestID
	}
	return t, nil
}

// knowsTrigger reports whether Flink has an operation under the trigger ID.
func (c *Client) knowsTrigger(ctx context.Context, jobID, triggerID string) (bool, error) {
	_, err := c.SavepointStatus(ctx, jobID, triggerID)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrOperationNotFound), errors.Is(err, ErrJobNotFound):
		return false, nil
	}
	return false, err
}

// SavepointStatus returns the state of a savepoint or stop operation. A
// trigger ID Flink does not know (never used, or expired from its cache)
// gives ErrOperationNotFound.
func (c *Client) SavepointStatus(ctx context.Context, jobID, triggerID string) (OperationStatus, error) {
	const op = "savepoint status"
	if err := checkID(op, "job ID", jobID); err != nil {
		return OperationStatus{}, err
	}
	if err := checkID(op, "trigger ID", triggerID); err != nil {
		return OperationStatus{}, err
	}
	return c.operationStatus(ctx, request{op: op, ep: epSavepointStatus, args: []string{jobID, triggerID}, notFound: ErrorReasonOperationNotFound})
}

func (c *Client) operationStatus(ctx context.Context, req request) (OperationStatus, error) {
	var out asyncOperationResult
	if err := c.do(ctx, req, &out); err != nil {
		return OperationStatus{}, err
	}
	st := OperationStatus{State: out.Status.ID}
	switch st.State {
	case OperationInProgress:
	case OperationCompleted:
		if out.Operation != nil {
			st.Location = out.Operation.Location
			st.Failure = out.Operation.FailureCause
		}
	default:
		return st, NewError(req.op, ErrorReasonMalformedResponse, fmt.Sprintf("unknown operation status %q (want IN_PROGRESS or COMPLETED)", st.State), nil)
	}
	return st, nil
}

// AwaitSavepoint polls a savepoint or stop operation until it completes and
// returns the savepoint location. A COMPLETED operation carrying a failure
// cause is an error classified from Flink's exception (quota exceeded, job
// not running, …; ErrOperationFailed otherwise). Transient polling errors are
// retried until ctx ends.
func (c *Client) AwaitSavepoint(ctx context.Context, jobID, triggerID string) (string, error) {
	const op = "await savepoint"
	st, err := c.await(ctx, op, func() (OperationStatus, error) { return c.SavepointStatus(ctx, jobID, triggerID) })
	if err != nil {
		return "", c.refineJobNotFound(ctx, jobID, err)
	}
	if st.Failure != nil {
		return "", c.refineJobNotFound(ctx, jobID, failureError(op, triggerID, st.Failure))
	}
	if st.Location == "" {
		return "", NewError(op, ErrorReasonMalformedResponse, "operation "+triggerID+" COMPLETED without location or failure cause", nil)
	}
	return st.Location, nil
}

func (c *Client) await(ctx context.Context, op string, poll func() (OperationStatus, error)) (OperationStatus, error) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	var last error
	for {
		select {
		case <-ctx.Done():
			reason := ErrorReasonTimeout
			if errors.Is(ctx.Err(), context.Canceled) {
				reason = ErrorReasonCanceled
			}
			msg := "stopped waiting: " + ctx.Err().Error()
			if last != nil {
				msg += "; last poll error: " + last.Error()
			}
			return OperationStatus{}, NewError(op, reason, msg, ctx.Err())
		case <-timer.C:
		}
		st, err := poll()
		switch {
		case err == nil && st.Done():
			return st, nil
		case err != nil && !IsRetryable(err):
			return st, err
		}
		last = err
		timer.Reset(c.pollInterval)
	}
}

// failureError turns Flink's failure cause into a typed error.
func failureError(op, triggerID string, fc *FailureCause) *Error {
	text := fc.Class + "\n" + fc.StackTrace
	reason := classifyText(text)
	if reason == "" || reason == ErrorReasonOperationNotFound {
		reason = ErrorReasonOperationFailed
	}
	msg := summarizeTrace(fc.StackTrace)
	if msg == "" {
		msg = fc.Class
	}
	if msg == "" {
		msg = "failure cause without class or stack trace"
	}
	return NewError(op, reason, "operation "+triggerID+" failed: "+truncate(msg, maxMessage), nil)
}

// DisposeSavepoint asks Flink to delete a savepoint and everything it
// references; returns the trigger ID for AwaitDisposal. Not idempotent.
func (c *Client) DisposeSavepoint(ctx context.Context, savepointPath string) (string, error) {
	const op = "dispose savepoint"
	if savepointPath == "" {
		return "", invalidArgument(op, "savepoint path is empty")
	}
	var resp triggerResponse
	if err := c.do(ctx, request{op: op, ep: epDisposeSavepoint, body: savepointDisposalBody{SavepointPath: savepointPath}}, &resp); err != nil {
		return "", err
	}
	if !hex32.MatchString(resp.RequestID) {
		return "", NewError(op, ErrorReasonMalformedResponse, fmt.Sprintf("request-id %q in the response is not a trigger ID", resp.RequestID), nil)
	}
	return resp.RequestID, nil
}

// DisposalStatus returns the state of a savepoint disposal.
func (c *Client) DisposalStatus(ctx context.Context, triggerID string) (OperationStatus, error) {
	const op = "savepoint disposal status"
	if err := checkID(op, "trigger ID", triggerID); err != nil {
		return OperationStatus{}, err
	}
	return c.operationStatus(ctx, request{op: op, ep: epDisposalStatus, args: []string{triggerID}, notFound: ErrorReasonOperationNotFound})
}

// AwaitDisposal polls a disposal until it completes. A savepoint that does
// not exist gives ErrSavepointNotFound.
func (c *Client) AwaitDisposal(ctx context.Context, triggerID string) error {
	const op = "await savepoint disposal"
	st, err := c.await(ctx, op, func() (OperationStatus, error) { return c.DisposalStatus(ctx, triggerID) })
	if err != nil {
		return err
	}
	if st.Failure != nil {
		return failureError(op, triggerID, st.Failure)
	}
	return nil
}

// Reason classifies a failed operation's cause as the client classifies
// error responses: one of the ErrorReason… constants, or "" when no rule
// names it (e.g. ErrorReasonTasksNotReady for a savepoint declined because
// not all of the job's tasks run yet).
func (f *FailureCause) Reason() string {
	if f == nil {
		return ""
	}
	return classifyText(f.Class + "\n" + f.StackTrace)
}
