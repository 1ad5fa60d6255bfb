// Package oncall holds the activities that reach the people on call and
// keep runs out of their way: Notify (events to the configured sinks),
// CheckFreeze (the blackout calendar) and the tenant lock's
// RequestTenantLock and RunningWorkflows.
package oncall

import (
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/freeze"
)

// Activities are the on-call family's activities.
type Activities struct {
	// Notifier tells the people on call; nil when no sink is configured.
	Notifier core.Notifier
	// Metrics counts deliveries and the decisions runs wait on; nil
	// disables them.
	Metrics core.GovernanceMetrics
	// Freezes are the blackout periods (worker config); nil: none.
	Freezes *freeze.Calendar
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}
