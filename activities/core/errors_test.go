package core_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/flinkmaint/flinkmaint/activities/core"

	"github.com/flinkmaint/flinkmaint/activities/internal/acttest"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// TestClassify pins the error boundary: what each adapter error becomes
// for a workflow, and whether Temporal retries it.
func TestClassify(t *testing.T) {
	cleanupErr := func(kind error, retry bool, cause error) error {
		return &cleanup.Error{Op: "trash", Path: "/p", Kind: kind, Retryable: retry, Err: cause}
	}
	for name, tc := range map[string]struct {
		err       error
		typ       string
		retryable bool
	}{
		"flink job not found":      {flink.NewError("stop", flink.ErrorReasonJobNotFound, "gone", nil), flink.ErrorReasonJobNotFound, false},
		"flink unavailable":        {flink.NewError("stop", flink.ErrorReasonUnavailable, "503", nil), flink.ErrorReasonUnavailable, true},
		"operator timeout":         {&core.OperatorError{Reason: core.ErrTypeOperatorTimeout, Retryable: true, Err: errors.New("slow")}, core.ErrTypeOperatorTimeout, true},
		"operator forbidden":       {&core.OperatorError{Reason: core.ErrTypeOperatorForbidden, Err: errors.New("rbac")}, core.ErrTypeOperatorForbidden, false},
		"storage quota":            {fmt.Errorf("w: %w", storage.ErrNamespaceQuotaExceeded), core.ErrTypeStorageQuota, false},
		"storage unavailable":      {fmt.Errorf("w: %w", storage.ErrUnavailable), core.ErrTypeStorage, true},
		"storage permission":       {fmt.Errorf("w: %w", storage.ErrPermission), core.ErrTypeStoragePermission, false},
		"storage authentication":   {fmt.Errorf("w: %w", storage.ErrAuthentication), core.ErrTypeStorageAuthentication, false},
		"storage not found":        {fmt.Errorf("w: %w", storage.ErrNotFound), core.ErrTypeStorageNotFound, false},
		"outside roots":            {fmt.Errorf("w: %w", storage.ErrOutsideRoots), core.ErrTypeOutsideRoots, false},
		"cleanup storage down":     {cleanupErr(cleanup.ErrStorageUnavailable, true, storage.ErrUnavailable), core.ErrTypeStorage, true},
		"cleanup outside roots":    {cleanupErr(cleanup.ErrOutsideRoots, false, storage.ErrOutsideRoots), core.ErrTypeOutsideRoots, false},
		"cleanup plan invalid":     {cleanupErr(cleanup.ErrInvalidPlan, false, errors.New("version 9")), core.ErrTypeCleanupPlanInvalid, false},
		"cleanup manifest corrupt": {fmt.Errorf("m: %w", cleanup.ErrManifestCorrupt), core.ErrTypeCleanupPlanInvalid, false},
		"cleanup source unknown":   {fmt.Errorf("p: %w", cleanup.ErrSourceUnknown), core.ErrTypeCleanupSourceUnknown, false},
		"cleanup invalid input":    {fmt.Errorf("p: %w", cleanup.ErrInvalidInput), core.ErrTypeInvalidInput, false},
		"cleanup not configured":   {fmt.Errorf("p: %w", cleanup.ErrInvalidConfig), core.ErrTypeCleanupNotConfigured, false},
		"cleanup item failed":      {cleanupErr(nil, false, errors.New("rename refused")), core.ErrTypeCleanupItemsFailed, false},
		"kubernetes unreachable":   {fmt.Errorf("k: %w", cleanup.ErrObjectsUnavailable), core.ErrTypeKubernetes, true},
	} {
		t.Run(name, func(t *testing.T) {
			typ, nonRetryable := acttest.ErrType(t, core.Classify("op", tc.err))
			if typ != tc.typ || nonRetryable == tc.retryable {
				t.Fatalf("classified as %s non-retryable=%v, want %s retryable=%v", typ, nonRetryable, tc.typ, tc.retryable)
			}
		})
	}
	if err := core.Classify("op", errors.New("connection reset")); err == nil || strings.Contains(fmt.Sprintf("%T", err), "ApplicationError") {
		t.Fatalf("unknown errors stay plain (retryable by policy), got %T", err)
	}
	if err := core.Classify("op", context.Canceled); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled activity stays cancelled, got %v", err)
	}
	// Leftover detection: what the API refused needs a person.
	if typ, nonRetryable := acttest.ErrType(t, core.ClassifyKubernetes("op", errors.New("forbidden"))); typ != core.ErrTypeKubernetes || !nonRetryable {
		t.Fatalf("kubernetes refusal classified as %s non-retryable=%v", typ, nonRetryable)
	}
	if typ, nonRetryable := acttest.ErrType(t, core.ClassifyKubernetes("op", fmt.Errorf("k: %w", cleanup.ErrObjectsUnavailable))); typ != core.ErrTypeKubernetes || nonRetryable {
		t.Fatalf("kubernetes unreachable classified as %s non-retryable=%v", typ, nonRetryable)
	}
}
