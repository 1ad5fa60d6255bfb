package workflows

import "time"

// Signals, updates and queries of MaintenanceWindowWorkflow. Names are
// public API: the CLI and operators' scripts send them.
const (
	SignalPause  = "pause"
	SignalResume = "resume"

	UpdateConfirmNetworkChange = "confirm-network-change"
	UpdateDecide               = "decide"
	UpdateAbort                = "abort"

	QueryStatus = "status"
	QueryReport = "report"
)

// PauseRequest pauses a window at its next safe point.
type PauseRequest struct {
	By     string `json:"by"`
	Reason string `json:"reason"`
}

// ResumeRequest lifts an operator pause.
type ResumeRequest struct {
	By string `json:"by"`
}

// ConfirmNetworkChangeRequest tells a window the infrastructure change is done.
type ConfirmNetworkChangeRequest struct {
	By     string `json:"by"`
	Reason string `json:"reason"`
}

// Decision actions an operator can send while a window waits for one.
const (
	ActionResume   = "resume"    // go on; failed jobs stay failed and are reported
	ActionRetry    = "retry"     // re-run the check that blocked (quota gate)
	ActionRetryJob = "retry-job" // run the failed step of one job again
	ActionSkipJob  = "skip-job"  // leave one job as it is and go on without it
	ActionAbort    = "abort"     // end the window now
)

// DecideRequest answers the decision a window waits for.
type DecideRequest struct {
	Action string `json:"action"`
	// Job is the job key (cluster/job-name) for retry-job and skip-job.
	Job    string `json:"job,omitempty"`
	By     string `json:"by"`
	Reason string `json:"reason"`
}

// AbortRequest ends a window at its next safe point. Jobs already stopped
// stay stopped; their savepoints are in the manifest and the report.
type AbortRequest struct {
	By     string `json:"by"`
	Reason string `json:"reason"`
}

// DecisionRecord is an operator action as recorded in the window's state.
type DecisionRecord struct {
	At     time.Time `json:"at"`
	Kind   string    `json:"kind"` // pause, resume, confirm-network-change, decide, abort
	Action string    `json:"action,omitempty"`
	Job    string    `json:"job,omitempty"`
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"`
}
