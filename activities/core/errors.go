package core

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// Application error types raised by activities, matched by workflows and
// callers with ApplicationError.Type(), so they are public API. Flink
// errors keep the REST client's reason (flink.ErrorReason*), so workflows
// can tell a missing job from a full disk.
const (
	ErrTypeInvalidInput      = "InvalidInput"
	ErrTypeInventory         = "InventoryFailed"
	ErrTypeSavepointInvalid  = "SavepointInvalid"
	ErrTypeJobUnhealthy      = "JobUnhealthy"
	ErrTypeRestoreMismatch   = "RestoreMismatch"
	ErrTypeStorage           = "StorageFailed"
	ErrTypeStorageQuota      = "StorageQuotaExceeded"
	ErrTypeStoragePermission = "StoragePermissionDenied"
	// ErrTypeStorageAuthentication: the storage did not accept the
	// worker's credentials (Kerberos login, ticket, a refused user); new
	// credentials are needed, a retry does not help.
	ErrTypeStorageAuthentication = "StorageAuthenticationFailed"
	ErrTypeStorageNotFound       = "StorageNotFound"
	ErrTypeOutsideRoots          = "OutsideRoots"
	ErrTypeUnreachable           = "EndpointUnreachable"
	// ErrTypeJobStoppedWithoutSavepoint: the job is no longer running, but
	// no savepoint it stopped with can be found; a person must decide.
	ErrTypeJobStoppedWithoutSavepoint = "JobStoppedWithoutSavepoint"
	// ErrTypeSavepointFailed: Flink could not take a savepoint; the job
	// keeps running.
	ErrTypeSavepointFailed = "SavepointFailed"
	// ErrTypeDrillFailed: a restore drill's copy of a job did not restore
	// or its state check failed; production is untouched.
	ErrTypeDrillFailed = "DrillFailed"

	// Flink Kubernetes Operator suspend/resume.
	ErrTypeOperatorTimeout           = "OperatorTimeout"
	ErrTypeOperatorSavepointMismatch = "OperatorSavepointMismatch"
	ErrTypeOperatorNotFound          = "OperatorResourceNotFound"
	ErrTypeOperatorForbidden         = "OperatorForbidden"
	ErrTypeOperatorPrecondition      = "OperatorPreconditionFailed"
	ErrTypeOperatorJobFailed         = "OperatorJobFailed"
	// ErrTypeOperatorLastStateFallback: the operator suspended the job
	// with last-state instead of the savepoint asked for; the job is not
	// running and has no savepoint from this window.
	ErrTypeOperatorLastStateFallback = "OperatorLastStateFallback"
	ErrTypeOperatorUnavailable       = "OperatorUnavailable"
	ErrTypeOperatorFailed            = "OperatorFailed"

	// Governance.
	// ErrTypeCleanupNotConfigured: the worker's cleanup section lacks what
	// the step needs (plan dir, trash root).
	ErrTypeCleanupNotConfigured = "CleanupNotConfigured"
	// ErrTypeCleanupPlanInvalid: the plan cannot be executed as written.
	ErrTypeCleanupPlanInvalid = "CleanupPlanInvalid"
	// ErrTypeCleanupPlanChanged: the plan on storage is not the one approved.
	ErrTypeCleanupPlanChanged = "CleanupPlanChanged"
	// ErrTypeCleanupScopeChanged: the parts of a plan's listing were
	// gathered over other roots than the plan's (the inventory changed
	// meanwhile); the plan is refused.
	ErrTypeCleanupScopeChanged = "CleanupScopeChanged"
	// ErrTypeCleanupItemsFailed: some items failed for a reason no retry fixes.
	ErrTypeCleanupItemsFailed = "CleanupItemsFailed"
	// ErrTypeCleanupSourceUnknown: a restore source the plan must see
	// cannot be told (a live job's checkpoint unreadable, a path in a
	// spelling not known to name the scanned file system); the plan is
	// refused.
	ErrTypeCleanupSourceUnknown = "CleanupSourceUnknown"
	// ErrTypeKubernetes: the Kubernetes API failed a read leftover
	// detection needs: retried when it was unreachable, final when it
	// refused (e.g. RBAC).
	ErrTypeKubernetes = "KubernetesFailed"
)

// What a failed stop (StopWithSavepoint, SuspendJob) tells of its job, so
// that a workflow says a job keeps running only when it was seen running.
const (
	// JobSeenRunning: Flink answered and the job runs: it refused the stop
	// before it began, or the job was seen RUNNING after the stop failed.
	JobSeenRunning = "running"
	// JobSeenStopped: the job no longer runs, and the step has no savepoint
	// of it to restart from.
	JobSeenStopped = "stopped"
	// JobSeenUnanswered: its cluster did not answer, so its state is unknown.
	JobSeenUnanswered = "unanswered"
	// JobSeenUnknown: its state was not read after the failure.
	JobSeenUnknown = "unknown"
)

// JobSeen is what an activity read of a job after a step on it failed,
// sent as the failure's details.
type JobSeen struct {
	// Seen is one of the JobSeen* values.
	Seen string `json:"seen"`
	// State is Flink's job state, when it was read.
	State string `json:"state,omitempty"`
}

// JobAfterFailedStop is what the type of a failed stop's error tells of the
// job: one of the JobSeen* values, JobSeenUnknown when the type says
// nothing of it.
func JobAfterFailedStop(errType string) string {
	switch errType {
	case ErrTypeJobStoppedWithoutSavepoint, ErrTypeOperatorLastStateFallback:
		return JobSeenStopped
	case flink.ErrorReasonUnavailable, flink.ErrorReasonTimeout, ErrTypeUnreachable, ErrTypeOperatorUnavailable:
		return JobSeenUnanswered
	case ErrTypeInvalidInput, flink.ErrorReasonCheckpointingDisabled, flink.ErrorReasonInvalidTargetDirectory,
		flink.ErrorReasonStorageQuotaExceeded, flink.ErrorReasonStorageAccessDenied, flink.ErrorReasonBadRequest,
		flink.ErrorReasonInvalidArgument, flink.ErrorReasonUnauthorized, flink.ErrorReasonOperationInProgress,
		flink.ErrorReasonTasksNotReady, ErrTypeOperatorForbidden, ErrTypeOperatorPrecondition:
		// Refused before the stop began.
		return JobSeenRunning
	}
	return JobSeenUnknown
}

// errorRule maps an adapter sentinel to the application error a workflow
// sees: its type, and whether a retry may succeed.
type errorRule struct {
	sentinel  error
	errType   string
	retryable bool
}

// errorTable is the one place adapter sentinels become application
// errors; Classify applies the first rule whose sentinel the error wraps.
// Transient faults come first: an error that wraps one is retried.
var errorTable = []errorRule{
	{storage.ErrUnavailable, ErrTypeStorage, true},
	{cleanup.ErrStorageUnavailable, ErrTypeStorage, true},
	{cleanup.ErrObjectsUnavailable, ErrTypeKubernetes, true},
	{storage.ErrQuotaExceeded, ErrTypeStorageQuota, false},
	{storage.ErrAuthentication, ErrTypeStorageAuthentication, false},
	{storage.ErrPermission, ErrTypeStoragePermission, false},
	{storage.ErrNotFound, ErrTypeStorageNotFound, false},
	{storage.ErrOutsideRoots, ErrTypeOutsideRoots, false},
	{storage.ErrInvalidPath, ErrTypeOutsideRoots, false},
	{cleanup.ErrOutsideRoots, ErrTypeOutsideRoots, false},
	{cleanup.ErrSourceUnknown, ErrTypeCleanupSourceUnknown, false},
	{cleanup.ErrInvalidInput, ErrTypeInvalidInput, false},
	{cleanup.ErrInvalidConfig, ErrTypeCleanupNotConfigured, false},
	{cleanup.ErrInvalidPlan, ErrTypeCleanupPlanInvalid, false},
	{cleanup.ErrPlanChanged, ErrTypeCleanupPlanChanged, false},
	{cleanup.ErrManifestCorrupt, ErrTypeCleanupPlanInvalid, false},
	{cleanup.ErrNoManifest, ErrTypeStorageNotFound, false},
}

func NonRetryable(errType, format string, args ...interface{}) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), errType, nil)
}

func Retryable(errType, format string, args ...interface{}) error {
	return temporal.NewApplicationError(fmt.Sprintf(format, args...), errType)
}

// Classify turns an adapter error into an application error that says
// whether Temporal should retry it: Flink and operator errors carry their
// own reason and flag, sentinels go by errorTable, and a cleanup failure
// no rule names needs a person. Unknown errors stay retryable: the retry
// policy bounds them, and a transient fault must not fail a window.
func Classify(what string, err error) error {
	return classifyWith(what, err, nil)
}

// ClassifyKubernetes is Classify for leftover detection: an error from
// the Kubernetes API that no rule names (RBAC, bad input) needs a person.
func ClassifyKubernetes(what string, err error) error {
	return classifyWith(what, err, &errorRule{errType: ErrTypeKubernetes})
}

func classifyWith(what string, err error, unknown *errorRule) error {
	if err == nil {
		return nil
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	msg := what + ": " + err.Error()
	var fe *flink.Error
	if errors.As(err, &fe) {
		return applicationError(msg, flink.Reason(err), flink.IsRetryable(err), err)
	}
	var oe *OperatorError
	if errors.As(err, &oe) {
		return applicationError(msg, oe.Reason, oe.Retryable, err)
	}
	for _, r := range errorTable {
		if errors.Is(err, r.sentinel) {
			return applicationError(msg, r.errType, r.retryable, err)
		}
	}
	var ce *cleanup.Error
	if errors.As(err, &ce) {
		return applicationError(msg, ErrTypeCleanupItemsFailed, ce.Retryable, err)
	}
	if unknown != nil {
		return applicationError(msg, unknown.errType, unknown.retryable, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func applicationError(msg, errType string, retryable bool, cause error) error {
	if retryable {
		return temporal.NewApplicationErrorWithCause(msg, errType, cause)
	}
	return temporal.NewNonRetryableApplicationError(msg, errType, cause)
}
