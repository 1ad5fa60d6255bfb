package doctor

import (
	"context"
	"os"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/flinkmaint/flinkmaint/activities/core"
)

// PingInput is the input of Ping.
type PingInput struct {
	Message string
}

// PingResult tells which worker answered and when.
type PingResult struct {
	Message    string
	Worker     string
	Hostname   string
	AnsweredAt time.Time
}

// Ping echoes the message with the worker's identity: it proves a workflow
// reached a live worker and an activity ran there.
func (a *Activities) Ping(ctx context.Context, in PingInput) (PingResult, error) {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	activity.GetLogger(ctx).Info("ping", "message", in.Message)
	return PingResult{Message: in.Message, Worker: a.Identity, Hostname: host, AnsweredAt: core.Now(a.Now).UTC()}, nil
}
