package core

import (
	"context"
	"errors"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/flinkmaint/flinkmaint/internal/flink"
)

// savepointFormat is the format a savepoint was asked for: Flink's
// default, CANONICAL, when unset.
func savepointFormat(f string) string {
	if f == "" {
		return string(flink.SavepointFormatCanonical)
	}
	return f
}

// forStNativeOnly says why a ForSt job gets a NATIVE savepoint.
const forStNativeOnly = "the job runs the ForSt state backend, which takes native savepoints only: a CANONICAL one fails the job over and never completes"

// SavepointFormatFor is the format to ask Flink for when savepointing a
// job. A job on the ForSt state backend (Flink 2.x) gets NATIVE whatever
// was asked: its tasks throw on a CANONICAL request, the job restarts from
// its latest checkpoint and the savepoint fails, so a window would stop
// nothing and an upgrade would have no savepoint. note says why the format
// differs from the one asked for; empty when it does not.
func (j Jobs) SavepointFormatFor(ctx context.Context, client FlinkAPI, job JobTarget, asked string) (format, note string, err error) {
	asked = savepointFormat(asked)
	if asked == string(flink.SavepointFormatNative) {
		return asked, "", nil
	}
	cfg, err := client.CheckpointConfig(ctx, job.JobID)
	if errors.Is(err, flink.ErrCheckpointingDisabled) {
		// No checkpointing, no state backend of note: as asked.
		return asked, "", nil
	}
	if err != nil {
		return "", "", err
	}
	if !IsForSt(cfg.StateBackend) {
		return asked, "", nil
	}
	activity.GetLogger(ctx).Warn("taking a NATIVE savepoint instead of "+asked, "job", job.Key, "job_id", job.JobID,
		"state_backend", cfg.StateBackend, "why", forStNativeOnly)
	return string(flink.SavepointFormatNative), asked + " asked, NATIVE taken: " + forStNativeOnly, nil
}

// IsForSt tells the ForSt state backend by the name Flink reports for it
// (ForStStateBackend).
func IsForSt(stateBackend string) bool {
	return strings.Contains(strings.ToLower(stateBackend), "forst")
}
