package core

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
)

// HeartbeatWhile runs a blocking call and heartbeats until it returns, so
// a lost worker is noticed by the heartbeat timeout and not only by the
// (long) start-to-close timeout.
func HeartbeatWhile(ctx context.Context, every time.Duration, detail string, call func(context.Context) error) error {
	done := make(chan error, 1)
	go func() { done <- call(ctx) }()
	activity.RecordHeartbeat(ctx, detail)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			activity.RecordHeartbeat(ctx, detail)
		}
	}
}
