package cleanup

import (
	"errors"
	"fmt"

	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// Error kinds. Match them with errors.Is.
var (
	// ErrInvalidInput: the planner input or policy is unusable.
	ErrInvalidInput = errors.New("cleanup: invalid input")
	// ErrInvalidPlan: a plan handed to the executor is malformed or does
	// not fit the executor's configuration. Not retryable.
	ErrInvalidPlan = errors.New("cleanup: invalid plan")
	// ErrPlanChanged: a shard on storage is not the one the approved
	// header names. Not retryable: plan again.
	ErrPlanChanged = errors.New("cleanup: plan changed since approval")
	// ErrInvalidConfig: the executor configuration is unusable.
	ErrInvalidConfig = errors.New("cleanup: invalid executor configuration")
	// ErrOutsideRoots: a destructive path is not under the configured
	// roots. It also matches storage.ErrOutsideRoots. Not retryable.
	ErrOutsideRoots = errors.New("cleanup: path outside the allowed roots")
	// ErrStorageUnavailable: storage could not be reached. Retryable.
	ErrStorageUnavailable = errors.New("cleanup: storage unavailable")
	// ErrManifestCorrupt: an existing audit manifest cannot be read, so
	// resuming could redo or skip items. Not retryable.
	ErrManifestCorrupt = errors.New("cleanup: audit manifest unreadable")
	// ErrSourceUnknown: a restore source the plan must see cannot be told
	// (a live job's checkpoint unreadable, a path under a scanned root in
	// a spelling not known to name it). The plan is refused, not guessed.
	ErrSourceUnknown = errors.New("cleanup: a restore source cannot be told")
	// ErrNoManifest: a run to restore has no audit manifest. Not
	// retryable.
	ErrNoManifest = errors.New("cleanup: no audit manifest")

	// ErrObjectNotFound: a Kubernetes object does not exist (ObjectStore).
	ErrObjectNotFound = errors.New("cleanup: Kubernetes object not found")
	// ErrObjectChanged: a Kubernetes object is not the one judged (UID or
	// resourceVersion differ, Flink's labels are gone); it is left alone.
	ErrObjectChanged = errors.New("cleanup: Kubernetes object changed since it was judged")
	// ErrObjectsUnavailable: the Kubernetes API could not be reached or
	// answered with a transient error. Retryable.
	ErrObjectsUnavailable = errors.New("cleanup: Kubernetes API unavailable")
)

// Error is a classified executor or gather failure.
type Error struct {
	Op        string
	Path      string
	Kind      error // one of the Err* sentinels above
	Retryable bool
	Err       error
}

func (e *Error) Error() string {
	msg := "cleanup: " + e.Op
	if e.Path != "" {
		msg += " " + e.Path
	}
	if e.Kind != nil {
		msg += ": " + e.Kind.Error()
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap exposes the kind and the cause.
func (e *Error) Unwrap() []error {
	var out []error
	if e.Kind != nil {
		out = append(out, e.Kind)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// IsRetryable reports whether err is worth retrying later (storage was
// unreachable); invalid plans, guard refusals and corrupt manifests are not.
func IsRetryable(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Retryable
	}
	if errors.Is(err, ErrObjectsUnavailable) {
		return true
	}
	return storage.IsRetryable(err)
}

// classify wraps a storage error with the right kind and retry flag.
func classify(op, path string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	switch {
	case errors.Is(err, storage.ErrOutsideRoots):
		return &Error{Op: op, Path: path, Kind: ErrOutsideRoots, Err: err}
	case storage.IsRetryable(err):
		return &Error{Op: op, Path: path, Kind: ErrStorageUnavailable, Retryable: true, Err: err}
	}
	return &Error{Op: op, Path: path, Err: err}
}

func invalidInput(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidInput, fmt.Sprintf(format, args...))
}

func sourceUnknown(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSourceUnknown, fmt.Sprintf(format, args...))
}

func invalidPlan(format string, args ...any) error {
	return &Error{Op: "validate plan", Kind: ErrInvalidPlan, Err: fmt.Errorf(format, args...)}
}
