package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// pingActivityOptions: a short step; a few quick retries then give up, so a
// ping tells the operator fast whether a worker is there.
func pingActivityOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		ScheduleToCloseTimeout: time.Minute,
		StartToCloseTimeout:    10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumAttempts:    3,
		},
	}
}

// standardRetry backs off up to a minute; activities mark what no retry
// can fix as non-retryable.
func standardRetry(maxAttempts int32) *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval:    2 * time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    time.Minute,
		MaximumAttempts:    maxAttempts,
	}
}

// shortActivityOptions: quick REST/storage calls.
func shortActivityOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         standardRetry(5),
	}
}

// stopWithSavepointOptions: one attempt may take as long as the savepoint;
// a lost worker is noticed by the heartbeat and the retry re-attaches.
func stopWithSavepointOptions(timeout time.Duration) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: timeout,
		HeartbeatTimeout:    30 * time.Second,
		RetryPolicy:         standardRetry(5),
	}
}

// awaitHealthyOptions covers running + checkpoint + soak, plus slack.
func awaitHealthyOptions(p RestartPolicy) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		// Each check may wait for the metric fetcher (activities.metricGrace).
		StartToCloseTimeout: p.RunningTimeout.D() + p.CheckpointTimeout.D() + p.Soak.D() + 2*time.Minute + time.Duration(len(p.Checks))*time.Minute,
		HeartbeatTimeout:    30 * time.Second,
		RetryPolicy:         standardRetry(3),
	}
}

// probeOptions retry until the endpoints answer or the probe timeout ends.
func probeOptions(timeout time.Duration) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout:    time.Minute,
		ScheduleToCloseTimeout: timeout,
		HeartbeatTimeout:       time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    5 * time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
		},
	}
}

// jobChildOptions: per-job children, visible in the UI under readable IDs
// with a summary saying what each does (details.go).
func jobChildOptions(id, summary string) workflow.ChildWorkflowOptions {
	return workflow.ChildWorkflowOptions{
		WorkflowID:            id,
		TypedSearchAttributes: temporal.NewSearchAttributes(SearchAttrKind.ValueSet(KindJob)),
		StaticSummary:         summary,
	}
}

// documentLocalOptions: manifest and report writes as local activities; the
// same bounds as documentOptions.
func documentLocalOptions() workflow.LocalActivityOptions {
	o := documentOptions()
	return workflow.LocalActivityOptions{StartToCloseTimeout: o.StartToCloseTimeout, RetryPolicy: o.RetryPolicy}
}

// documentOptions: manifest and report writes. A failed write is logged and
// retried at the next change, so a storage hiccup must not hold up the
// window for long.
func documentOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    5 * time.Second,
			MaximumAttempts:    3,
		},
	}
}
