package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/oncall"
	"github.com/flinkmaint/flinkmaint/internal/notify"
)

// notifyChange marks the runs that tell the people on call: runs started
// before it replay without the Notify activities they never scheduled.
const notifyChange = "notify"

// notifier sends one run's events to the worker's notification sinks
// through the Notify activity. Sending never waits for delivery, except
// for the run's last event (a run that ends abandons activities still
// pending), so a dead sink never blocks or fails the run.
type notifier struct {
	on       bool
	workflow string
	run      string
	tenants  []string
	// pending are sends not yet done; flush waits for them.
	pending []workflow.Future
}

// newNotifier is called once at the start of each run, at the same point.
func newNotifier(ctx workflow.Context, kind, run string, tenants []string) *notifier {
	v := workflow.GetVersion(ctx, notifyChange, workflow.DefaultVersion, 1)
	return &notifier{on: v >= 1, workflow: kind, run: run, tenants: tenants}
}

// notifyOptions: the activity retries each sink itself, boundedly; a
// second attempt covers a lost worker.
func notifyOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 2, InitialInterval: 5 * time.Second},
	}
}

// send schedules the event; the future is nil when the run does not
// notify.
func (n *notifier) send(ctx workflow.Context, ev notify.Event) workflow.Future {
	if n == nil || !n.on {
		return nil
	}
	var a *oncall.Activities
	ev.Workflow, ev.Run = n.workflow, n.run
	if ev.Tenants == nil {
		ev.Tenants = n.tenants
	}
	if ev.Severity == "" {
		ev.Severity = notify.SeverityInfo
	}
	ev.At = workflow.Now(ctx)
	f := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, notifyOptions()), a.Notify, oncall.NotifyInput{Event: ev})
	kept := n.pending[:0]
	for _, p := range n.pending {
		if !p.IsReady() {
			kept = append(kept, p)
		}
	}
	n.pending = append(kept, f)
	return f
}

// flush waits until every send is delivered or given up on: a run that
// ends or continues as new abandons activities still pending.
func (n *notifier) flush(ctx workflow.Context) {
	if n == nil {
		return
	}
	for _, f := range n.pending {
		_ = f.Get(ctx, nil) // outcomes are logged and counted by the activity
	}
	n.pending = nil
}

// last sends the run's final event and flushes.
func (n *notifier) last(ctx workflow.Context, ev notify.Event) {
	n.send(ctx, ev)
	n.flush(ctx)
}

// decisionReminderEvery is how often a pending decision of a run without
// its own reminder policy is repeated to the people on call.
const decisionReminderEvery = 30 * time.Minute

// awaitAnswer waits until answered holds, or timeout passes when it is
// positive; ok says answered held. The people on call are told at once,
// reminded every interval until then, and told it ended.
func (n *notifier) awaitAnswer(ctx workflow.Context, ev notify.Event, every, timeout time.Duration, answered func() bool) (bool, error) {
	if n == nil || !n.on {
		if timeout > 0 {
			return workflow.AwaitWithTimeout(ctx, timeout, answered)
		}
		return true, workflow.Await(ctx, answered)
	}
	ev.Kind, ev.RepeatEvery = notify.KindDecisionPending, every
	if ev.Severity == "" {
		ev.Severity = notify.SeverityWarning
	}
	n.send(ctx, ev)
	var deadline time.Time
	if timeout > 0 {
		deadline = workflow.Now(ctx).Add(timeout)
	}
	ok := false
	for {
		wait := every
		if timeout > 0 {
			left := deadline.Sub(workflow.Now(ctx))
			if left <= 0 {
				break
			}
			wait = min(wait, left)
		}
		var err error
		if ok, err = workflow.AwaitWithTimeout(ctx, wait, answered); err != nil {
			return false, err
		}
		if ok {
			break
		}
		if timeout > 0 && !workflow.Now(ctx).Before(deadline) {
			break
		}
		ev.Reminder++
		n.send(ctx, ev)
	}
	ev.Resolved, ev.Commands, ev.Reminder = true, nil, 0
	if ok {
		ev.Title = "answered: " + ev.Title
	} else {
		ev.Title = "no answer in time: " + ev.Title
	}
	n.send(ctx, ev)
	return ok, nil
}

// phase tells that a run entered a phase.
func (n *notifier) phase(ctx workflow.Context, phase, title string) {
	n.send(ctx, notify.Event{Kind: notify.KindPhase, Phase: phase, Title: title})
}

// ended tells how a run ended and waits until it is told: err nil is
// finished, anything else failed.
func (n *notifier) ended(ctx workflow.Context, phase, title string, err error) {
	ev := notify.Event{Kind: notify.KindFinished, Phase: phase, Title: title}
	if err != nil {
		ev.Kind, ev.Severity, ev.Text = notify.KindFailed, notify.SeverityCritical, errorText(err)
	}
	n.last(ctx, ev)
}
