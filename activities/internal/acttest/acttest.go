package acttest

import (
	"errors"
	"testing"

	"go.temporal.io/sdk/temporal"
)

// ErrType is the type of the application error err is, and whether it is
// final; it fails the test when err is no application error.
func ErrType(t *testing.T, err error) (string, bool) {
	t.Helper()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		t.Fatalf("error %v is not an application error", err)
	}
	return appErr.Type(), appErr.NonRetryable()
}
