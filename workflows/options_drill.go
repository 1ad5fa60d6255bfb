package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"
)

// proveOptions: a storage proof stats every file a snapshot references;
// it heartbeats as it goes.
func proveOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         standardRetry(5),
	}
}

// endDrillOptions: removing what a drill left must not give up on a
// passing fault; a lost worker is noticed by the heartbeat.
func endDrillOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         standardRetry(20),
	}
}
