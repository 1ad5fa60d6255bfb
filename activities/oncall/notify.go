package oncall

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/notify"
)

// NotifyInput is one event for the people on call.
type NotifyInput struct {
	Event notify.Event `json:"event"`
}

// NotifyResult says how each sink took the event.
type NotifyResult struct {
	Outcomes []notify.Outcome `json:"outcomes,omitempty"`
}

// Notify delivers an event to every configured sink that wants it, each
// with bounded retries. A sink that stays down is logged and counted, not
// returned as an error: a notification never fails or blocks the run that
// sends it. The event gets the run's Temporal UI link here, where the
// worker's configuration knows the UI.
func (a *Activities) Notify(ctx context.Context, in NotifyInput) (NotifyResult, error) {
	ev := in.Event
	if ev.At.IsZero() {
		ev.At = core.Now(a.Now)
	}
	a.recordDecision(ev)
	if a.Notifier == nil {
		return NotifyResult{}, nil
	}
	info := activity.GetInfo(ctx)
	if ev.WorkflowID == "" {
		ev.WorkflowID = info.WorkflowExecution.ID
	}
	if ev.UIURL == "" {
		ev.UIURL = a.Notifier.UILink(info.Namespace, ev.WorkflowID)
	}
	out := a.Notifier.Send(ctx, ev)
	logger := activity.GetLogger(ctx)
	for _, o := range out {
		if a.Metrics != nil {
			a.Metrics.Notified(o.Sink, ev.Kind, o.Error == "")
		}
		if o.Error != "" {
			logger.Error("notification not delivered", "sink", o.Sink, "kind", ev.Kind, "run", ev.Run, "attempts", o.Attempts, "error", o.Error)
		}
	}
	return NotifyResult{Outcomes: out}, nil
}

// recordDecision exports a notice of a pending decision, with or without
// sinks: it is how Prometheus learns that a run waits for a person.
func (a *Activities) recordDecision(ev notify.Event) {
	if a.Metrics == nil || ev.Kind != notify.KindDecisionPending || ev.Decision == "" {
		return
	}
	// The n-th reminder comes n repeat intervals after the first notice.
	since := ev.At.Add(-time.Duration(ev.Reminder) * ev.RepeatEvery)
	a.Metrics.DecisionNotified(ev.Workflow, ev.Decision, ev.Run, since, ev.At, ev.Resolved, ev.RepeatEvery)
}
