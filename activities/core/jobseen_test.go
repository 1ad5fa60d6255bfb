package core

import (
	"testing"

	"github.com/flinkmaint/flinkmaint/internal/flink"
)

func TestJobAfterFailedStop(t *testing.T) {
	for errType, want := range map[string]string{
		ErrTypeJobStoppedWithoutSavepoint:      JobSeenStopped,
		ErrTypeOperatorLastStateFallback:       JobSeenStopped,
		flink.ErrorReasonUnavailable:           JobSeenUnanswered,
		flink.ErrorReasonTimeout:               JobSeenUnanswered,
		ErrTypeOperatorUnavailable:             JobSeenUnanswered,
		flink.ErrorReasonStorageQuotaExceeded:  JobSeenRunning,
		flink.ErrorReasonCheckpointingDisabled: JobSeenRunning,
		ErrTypeInvalidInput:                    JobSeenRunning,
		flink.ErrorReasonOperationFailed:       JobSeenUnknown,
		flink.ErrorReasonServerError:           JobSeenUnknown,
		ErrTypeOperatorTimeout:                 JobSeenUnknown,
		"wrapError":                            JobSeenUnknown,
	} {
		if got := JobAfterFailedStop(errType); got != want {
			t.Errorf("%s: %s, want %s", errType, got, want)
		}
	}
}
