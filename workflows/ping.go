package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/doctor"
)

// PingInput is the input of PingWorkflow.
type PingInput struct {
	Message string
}

// PingResult is what PingWorkflow returns.
type PingResult struct {
	Message    string
	Worker     string
	Hostname   string
	AnsweredAt time.Time
	// RoundTrip is the workflow-time span from scheduling the activity to
	// receiving its result.
	RoundTrip time.Duration
}

// maxPingMessage bounds the echoed text so a ping cannot bloat history.
const maxPingMessage = 256

// PingWorkflow runs one activity on a worker and returns who answered: the
// smallest end-to-end proof that client, server and worker are wired up.
func PingWorkflow(ctx workflow.Context, in PingInput) (PingResult, error) {
	if len(in.Message) > maxPingMessage {
		return PingResult{}, newInvalidInputError("ping message too long", len(in.Message), maxPingMessage)
	}
	ctx = workflow.WithActivityOptions(ctx, pingActivityOptions())
	var a *doctor.Activities
	start := workflow.Now(ctx)
	var res doctor.PingResult
	if err := workflow.ExecuteActivity(ctx, a.Ping, doctor.PingInput(in)).Get(ctx, &res); err != nil {
		return PingResult{}, err
	}
	return PingResult{
		Message:    res.Message,
		Worker:     res.Worker,
		Hostname:   res.Hostname,
		AnsweredAt: res.AnsweredAt,
		RoundTrip:  workflow.Now(ctx).Sub(start),
	}, nil
}
