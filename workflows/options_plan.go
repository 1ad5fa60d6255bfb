package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"
)

// planActivityOptions: the reads of a window plan (inventory, Flink's job
// lists, quota scans). A plan is a quick answer to a person at a terminal:
// a few retries, then it says what failed.
func planActivityOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         standardRetry(3),
	}
}
