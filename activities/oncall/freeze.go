package oncall

import (
	"context"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/freeze"
)

// CheckFreezeInput names the tenants a run is about to change; empty
// means any tenant.
type CheckFreezeInput struct {
	Tenants []string `json:"tenants,omitempty"`
}

// CheckFreezeResult is the freezes in force for them now.
type CheckFreezeResult struct {
	Active []freeze.Active `json:"active,omitempty"`
}

// CheckFreeze reads the worker's freeze calendar at the worker's clock:
// the calendar and its time zones are worker configuration, and the
// answer is recorded in history, so replay never reads a clock.
func (a *Activities) CheckFreeze(ctx context.Context, in CheckFreezeInput) (CheckFreezeResult, error) {
	return CheckFreezeResult{Active: a.Freezes.Active(core.Now(a.Now), in.Tenants)}, nil
}
