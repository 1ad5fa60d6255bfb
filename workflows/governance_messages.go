package workflows

import "time"

// Updates of GovernanceWorkflow (QueryStatus and QueryReport apply too).
const (
	UpdateApprove = "approve"
	UpdateReject  = "reject"
)

// ApproveRequest approves the plan a governance run waits on.
type ApproveRequest struct {
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
	// PlanSHA256, when set, must equal the plan's hash: the approver
	// approves the plan they reviewed, not a newer one.
	PlanSHA256 string `json:"planSha256,omitempty"`
}

// RejectRequest rejects it; nothing is touched.
type RejectRequest struct {
	By     string `json:"by"`
	Reason string `json:"reason"`
}

// ApprovalRecord is the operator's decision.
type ApprovalRecord struct {
	Approved bool      `json:"approved"`
	By       string    `json:"by"`
	Reason   string    `json:"reason,omitempty"`
	At       time.Time `json:"at"`
}
