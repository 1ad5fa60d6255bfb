package oncall

import (
	"context"
	"errors"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"

	"github.com/flinkmaint/flinkmaint/activities/core"
)

// Names the tenant lock manager is started with; kept equal to
// workflows.TenantLockWorkflowID/Type (activities cannot import
// workflows).
const (
	tenantLockManagerID   = "flinkmaint-tenant-locks"
	tenantLockManagerType = "TenantLocks"
	signalLockAcquire     = "tenant-lock-acquire"
	queryTenantLocks      = "tenant-locks"
)

// LockRequest asks for tenants on behalf of a run, named by its workflow
// ID (a run that continues as new keeps its lock).
type LockRequest struct {
	Owner   string    `json:"owner"`
	Kind    string    `json:"kind"`
	Tenants []string  `json:"tenants"`
	Reason  string    `json:"reason"`
	At      time.Time `json:"at"`
	// Blocked is set by the manager once the request had to wait.
	Blocked bool `json:"blocked,omitempty"`
}

// LockHold is a granted request.
type LockHold struct {
	LockRequest
	Since time.Time `json:"since"`
}

// RequestTenantLock sends a lock request to the manager, starting it when
// it does not run, and returns the holds the request waits behind (the
// grant arrives as a signal either way). Safe to retry: the manager queues
// an owner once.
func (a *Activities) RequestTenantLock(ctx context.Context, req LockRequest) ([]LockHold, error) {
	c := activity.GetClient(ctx)
	_, err := c.SignalWithStartWorkflow(ctx, tenantLockManagerID, signalLockAcquire, req, client.StartWorkflowOptions{
		ID: tenantLockManagerID, TaskQueue: activity.GetInfo(ctx).TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, tenantLockManagerType, struct{}{})
	if err != nil {
		return nil, core.Classify("request the tenant lock", err)
	}
	// Who holds is for status only: the request is in either way.
	v, err := c.QueryWorkflow(ctx, tenantLockManagerID, "", queryTenantLocks)
	if err != nil {
		return nil, nil
	}
	var st struct {
		Held []LockHold `json:"held"`
	}
	if v.Get(&st) != nil {
		return nil, nil
	}
	var out []LockHold
	for _, h := range st.Held {
		if h.Owner != req.Owner && sharesTenant(h.Tenants, req.Tenants) {
			out = append(out, h)
		}
	}
	return out, nil
}

func sharesTenant(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// RunningWorkflows returns which of the workflow IDs have a running
// execution. An ID Temporal does not know is not running; any other
// error fails the activity, so no lock is freed on a guess.
func (a *Activities) RunningWorkflows(ctx context.Context, ids []string) ([]string, error) {
	c := activity.GetClient(ctx)
	var running []string
	for _, id := range ids {
		d, err := c.DescribeWorkflow(ctx, id, "")
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			continue
		}
		if err != nil {
			return nil, core.Classify("describe workflow "+id, err)
		}
		if d.Status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			running = append(running, id)
		}
		activity.RecordHeartbeat(ctx, id)
	}
	return running, nil
}
