package workflows

import "go.temporal.io/sdk/temporal"

// Application error types raised by workflows. They are matched by callers
// with ApplicationError.Type(), so they are public API.
const (
	ErrTypeInvalidInput = "InvalidInput"
)

// newInvalidInputError reports workflow input that can never succeed.
func newInvalidInputError(msg string, details ...interface{}) error {
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeInvalidInput, nil, details...)
}
