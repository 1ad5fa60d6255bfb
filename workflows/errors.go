package workflows

import (
	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/activities/core"
)

// Application error types raised by workflows. They are matched by callers
// with ApplicationError.Type(), so they are public API. A type activities
// raise too is the activities' constant, so the two can never differ.
const (
	ErrTypeInvalidInput = core.ErrTypeInvalidInput
	// ErrTypeSavepointsFailed: some savepoints of a scheduled run failed;
	// the report is in the error's details and the jobs keep running.
	ErrTypeSavepointsFailed = "ScheduledSavepointsFailed"
	// ErrTypeDrillsFailed: some snapshots of a drill run failed their
	// proof; the report is in the error's details.
	ErrTypeDrillsFailed = "RestoreDrillsFailed"
)

// newInvalidInputError reports workflow input that can never succeed.
func newInvalidInputError(msg string, details ...interface{}) error {
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeInvalidInput, nil, details...)
}
