package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"
)

// planCleanupOptions: listing a large tree and parsing every _metadata can
// take a while; Gather and the Flink calls heartbeat between steps.
func planCleanupOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    5 * time.Minute,
		RetryPolicy:         standardRetry(5),
	}
}

// executeCleanupOptions: one attempt may run as long as timeout; a lost
// worker is noticed by the heartbeat (sent after every item) within a
// minute, and the retry resumes from the audit manifest.
func executeCleanupOptions(timeout time.Duration) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: timeout,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         standardRetry(10),
	}
}

// tallyCleanupOptions: reading a run's plan shards and manifests back.
func tallyCleanupOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Minute,
		HeartbeatTimeout:    5 * time.Minute,
		RetryPolicy:         standardRetry(10),
	}
}

// purgeOptions: walking trash runs; bounded, few retries.
func purgeOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		RetryPolicy:         standardRetry(3),
	}
}

// restoreTrashOptions: moving a run's trash back, one rename per item,
// heartbeating each; a retry goes on where the last attempt stopped.
func restoreTrashOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 6 * time.Hour,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         standardRetry(10),
	}
}
