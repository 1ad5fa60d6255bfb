package activities

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// Application error types raised by activities, matched by workflows with
// ApplicationError.Type(). Flink errors keep the REST client's reason
// (flink.ErrorReason*), so workflows can tell a missing job from a full disk.
const (
	ErrTypeInvalidInput      = "InvalidInput"
	ErrTypeInventory         = "InventoryFailed"
	ErrTypeSavepointInvalid  = "SavepointInvalid"
	ErrTypeJobUnhealthy      = "JobUnhealthy"
	ErrTypeRestoreMismatch   = "RestoreMismatch"
	ErrTypeStorage           = "StorageFailed"
	ErrTypeStorageQuota      = "StorageQuotaExceeded"
	ErrTypeStoragePermission = "StoragePermissionDenied"
	ErrTypeStorageNotFound   = "StorageNotFound"
	ErrTypeOutsideRoots      = "OutsideRoots"
	ErrTypeUnreachable       = "EndpointUnreachable"
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
)

func nonRetryable(errType, format string, args ...interface{}) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), errType, nil)
}

func retryable(errType, format string, args ...interface{}) error {
	return temporal.NewApplicationError(fmt.Sprintf(format, args...), errType)
}

// classify turns an adapter error into an application error that says
// whether Temporal should retry it. Unknown errors stay retryable: the
// retry policy bounds them, and a transient fault must not fail a window.
func classify(what string, err error) error {
	if err == nil {
		return nil
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return err
	}
	msg := what + ": " + err.Error()
	var fe *flink.Error
	if errors.As(err, &fe) {
		if flink.IsRetryable(err) {
			return temporal.NewApplicationErrorWithCause(msg, flink.Reason(err), err)
		}
		return temporal.NewNonRetryableApplicationError(msg, flink.Reason(err), err)
	}
	switch {
	case errors.Is(err, storage.ErrUnavailable):
		return temporal.NewApplicationErrorWithCause(msg, ErrTypeStorage, err)
	case errors.Is(err, storage.ErrQuotaExceeded):
		return temporal.NewNonRetryableApplicationError(msg, ErrTypeStorageQuota, err)
	case errors.Is(err, storage.ErrPermission):
		return temporal.NewNonRetryableApplicationError(msg, ErrTypeStoragePermission, err)
	case errors.Is(err, storage.ErrNotFound):
		return temporal.NewNonRetryableApplicationError(msg, ErrTypeStorageNotFound, err)
	case errors.Is(err, storage.ErrOutsideRoots), errors.Is(err, storage.ErrInvalidPath):
		return temporal.NewNonRetryableApplicationError(msg, ErrTypeOutsideRoots, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
