package core

import (
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// The operator's control model (internal/inventory), which the kube
// adapter fills: OperatorWait bounds a wait, OperatorSavepointMarks are a
// resource's savepoint records at one moment (carried in SuspendJobInput),
// and the results say what a suspend, a resume or a status read found.
type (
	OperatorWait           = inventory.OperatorWait
	OperatorSavepointMarks = inventory.SavepointMarks
	OperatorSuspendResult  = inventory.SuspendResult
	OperatorResumeResult   = inventory.ResumeResult
	OperatorJobStatus      = inventory.OperatorStatus
)

// OperatorError is an OperatorControl failure with its classification:
// Reason is one of the ErrTypeOperator* (or ErrTypeInvalidInput) values,
// Retryable whether trying the same call again may succeed. Err keeps the
// adapter's error, so errors.Is against its sentinels still works.
type OperatorError struct {
	Reason    string
	Retryable bool
	Err       error
}

func (e *OperatorError) Error() string { return e.Err.Error() }

func (e *OperatorError) Unwrap() error { return e.Err }
