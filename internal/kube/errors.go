package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Sentinels matched with errors.Is. Every error this package returns about
// an object is an *Error naming it; its Is method maps the API status to
// these.
var (
	ErrNotFound  = errors.New("kube: not found")
	ErrForbidden = errors.New("kube: forbidden")
	ErrInvalid   = errors.New("kube: invalid")
	ErrConflict  = errors.New("kube: conflict")
	// ErrUnavailable covers 5xx, throttling and network failures.
	ErrUnavailable = errors.New("kube: apiserver unavailable")
	// ErrOperatorTimeout: the Flink Kubernetes Operator did not bring the
	// resource to the wanted state in time.
	ErrOperatorTimeout = errors.New("kube: operator did not react in time")
	// ErrPrecondition: the object is not the one the caller inspected (UID
	// or resourceVersion differ) or not a Flink object, so it is left alone.
	ErrPrecondition = errors.New("kube: precondition failed")
	// ErrSavepointMismatch: the operator records (or restored from) a
	// savepoint other than the one the caller asked for.
	ErrSavepointMismatch = errors.New("kube: savepoint mismatch")
	// ErrJobFailed: the operator reports the job FAILED while we wait.
	ErrJobFailed = errors.New("kube: job failed")
	// ErrLastStateFallback: asked to suspend with a savepoint, the operator
	// suspended with last-state instead (job.upgrade.last-state-fallback,
	// taken when the job is not running): no savepoint was taken, and a
	// resume restores from the job's last checkpoint.
	ErrLastStateFallback = errors.New("kube: operator fell back to last-state")
	// ErrInvalidInput: the caller passed a bad reference, option or config.
	ErrInvalidInput = errors.New("kube: invalid input")
	// ErrExists: an object is there again under the name a restore would
	// re-create.
	ErrExists = errors.New("kube: exists")
	// ErrNotRecreatable: a restore does not re-create the object, one
	// that runs something (a Pod, a Deployment) rather than records state.
	ErrNotRecreatable = errors.New("kube: not re-created by a restore")
)

// Error is a failed operation on one Kubernetes object (or list).
type Error struct {
	Op     string // get, list, update, delete, suspend, resume, ...
	Object string // "FlinkDeployment team-a/orders" or "pods in team-a"
	Err    error
	// kind overrides classification for errors that are not API statuses.
	kind error
}

func (e *Error) Error() string {
	return fmt.Sprintf("kube: %s %s: %v", e.Op, e.Object, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Is maps the wrapped API status (or the explicit kind) to the sentinels.
func (e *Error) Is(target error) bool {
	if e.kind != nil && target == e.kind {
		return true
	}
	switch target {
	case ErrNotFound:
		return apierrors.IsNotFound(e.Err)
	case ErrForbidden:
		return apierrors.IsForbidden(e.Err) || apierrors.IsUnauthorized(e.Err)
	case ErrInvalid:
		return apierrors.IsInvalid(e.Err) || apierrors.IsBadRequest(e.Err)
	case ErrConflict:
		return apierrors.IsConflict(e.Err) && e.kind != ErrPrecondition
	case ErrUnavailable:
		return isTransient(e.Err)
	}
	return false
}

func newError(op, object string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Op: op, Object: object, Err: err}
}

func kindError(op, object string, kind error, format string, args ...any) error {
	return &Error{Op: op, Object: object, Err: fmt.Errorf("%w: "+format, append([]any{kind}, args...)...), kind: kind}
}

// IsRetryable says whether trying the same call again may succeed:
// conflicts, 5xx, throttling, timeouts (including an operator that has not
// reacted yet) and network errors are retryable; NotFound, Forbidden,
// Invalid, failed preconditions, savepoint mismatches, a failed job and bad
// input are not. A context cancelled by the caller is not retryable.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	for _, final := range []error{ErrPrecondition, ErrSavepointMismatch, ErrJobFailed, ErrInvalidInput, context.Canceled} {
		if errors.Is(err, final) {
			return false
		}
	}
	if errors.Is(err, ErrOperatorTimeout) {
		return true
	}
	switch {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err), apierrors.IsUnauthorized(err),
		apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsMethodNotSupported(err),
		apierrors.IsNotAcceptable(err), apierrors.IsUnsupportedMediaType(err), apierrors.IsGone(err):
		return false
	case apierrors.IsConflict(err):
		return true
	}
	return isTransient(err)
}

// isTransient: 5xx, 429, server/client timeouts and network failures.
func isTransient(err error) bool {
	if apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsUnexpectedServerError(err) {
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code >= http.StatusInternalServerError || code == http.StatusTooManyRequests ||
			status.Status().Reason == metav1.StatusReasonTimeout
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr)
}
