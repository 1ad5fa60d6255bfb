package workflows

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/oncall"
)

// The tenant lock keeps runs that change a tenant's state apart: a window
// holds its tenants from savepoint-all until every job is healthy, an
// upgrade holds its job's tenant, a governance execution the tenants it
// deletes in. One manager workflow holds every lock, so several tenants
// are granted at once or not at all (no two runs wait on each other's
// halves) and requests are served first come, first served.
const (
	TenantLockWorkflowType = "TenantLocks"
	TenantLockWorkflowID   = "flinkmaint-tenant-locks"
	KindTenantLock         = "tenant-lock"

	// SignalLockAcquire and SignalLockRelease go to the manager;
	// SignalLockGranted comes back to the requester.
	SignalLockAcquire = "tenant-lock-acquire"
	SignalLockRelease = "tenant-lock-release"
	SignalLockGranted = "tenant-lock-granted"
	// QueryTenantLocks returns the TenantLockState.
	QueryTenantLocks = "tenant-locks"
)

// LockRequest and LockHold are the activities' types: a request, and a
// granted one.
type (
	LockRequest = oncall.LockRequest
	LockHold    = oncall.LockHold
)

// LockGrant tells a requester it holds its tenants; Waited says it had
// to wait behind another run.
type LockGrant struct {
	Tenants []string  `json:"tenants"`
	At      time.Time `json:"at"`
	Waited  bool      `json:"waited,omitempty"`
}

// LockRelease gives an owner's tenants back.
type LockRelease struct {
	Owner string `json:"owner"`
}

// TenantLockState is who holds which tenants and who waits.
type TenantLockState struct {
	Held    []LockHold    `json:"held"`
	Waiting []LockRequest `json:"waiting"`
	// Freed are holds dropped because their owner had ended without
	// releasing them (at most the last 20).
	Freed []string `json:"freed,omitempty"`
}

// HoldersOf names the holds on any of tenants other than owner's.
func (s TenantLockState) HoldersOf(owner string, tenants []string) []LockHold {
	var out []LockHold
	for _, h := range s.Held {
		if h.Owner != owner && overlaps(h.Tenants, tenants) {
			out = append(out, h)
		}
	}
	return out
}

func overlaps(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// TenantLockInput carries the state across continue-as-new.
type TenantLockInput struct {
	State *TenantLockState `json:"state,omitempty"`
}

// lockOwnerCheck is how often the manager looks whether holders and
// waiters still run, so a lock never outlives its owner for long.
const lockOwnerCheck = time.Minute

// lockIdleEnd is how long an idle manager waits for requests before it
// ends.
const lockIdleEnd = time.Minute

// TenantLockWorkflow is the manager. It runs while anything is held or
// waited for, and ends after a minute idle; the next request starts it
// again.
func TenantLockWorkflow(ctx workflow.Context, in TenantLockInput) (*TenantLockState, error) {
	st := TenantLockState{}
	if in.State != nil {
		st = *in.State
	}
	logger := workflow.GetLogger(ctx)
	if err := workflow.SetQueryHandler(ctx, QueryTenantLocks, func() (TenantLockState, error) { return st, nil }); err != nil {
		return nil, err
	}
	_ = workflow.UpsertTypedSearchAttributes(ctx, SearchAttrKind.ValueSet(KindTenantLock))
	acquire := workflow.GetSignalChannel(ctx, SignalLockAcquire)
	release := workflow.GetSignalChannel(ctx, SignalLockRelease)
	onAcquire := func(req LockRequest) {
		for _, h := range st.Held {
			if h.Owner == req.Owner {
				// Asked again (a retried request, a new run of the owner):
				// it still holds; grant again, first, so it stops waiting.
				st.Waiting = append([]LockRequest{req}, st.Waiting...)
				return
			}
		}
		for _, w := range st.Waiting {
			if w.Owner == req.Owner {
				return
			}
		}
		st.Waiting = append(st.Waiting, req)
	}
	onRelease := func(rel LockRelease) {
		st.Held = slices.DeleteFunc(st.Held, func(h LockHold) bool { return h.Owner == rel.Owner })
		st.Waiting = slices.DeleteFunc(st.Waiting, func(r LockRequest) bool { return r.Owner == rel.Owner })
	}
	drain := func() {
		for {
			var req LockRequest
			if !acquire.ReceiveAsync(&req) {
				break
			}
			onAcquire(req)
		}
		for {
			var rel LockRelease
			if !release.ReceiveAsync(&rel) {
				break
			}
			onRelease(rel)
		}
	}
	for {
		drain()
		grantWaiting(ctx, &st)
		publishLocks(ctx, st)
		if len(st.Held) == 0 && len(st.Waiting) == 0 {
			// Idle: end after a while without requests; the next request
			// starts a new run.
			more, err := workflow.AwaitWithTimeout(ctx, lockIdleEnd, func() bool { return acquire.Len() > 0 || release.Len() > 0 })
			if err != nil {
				return nil, err
			}
			if !more {
				return &st, nil
			}
			continue
		}
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() || workflow.GetInfo(ctx).GetCurrentHistoryLength() > 5000 {
			drain()
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return nil, err
			}
			next := st
			return nil, workflow.NewContinueAsNewError(ctx, TenantLockWorkflowType, TenantLockInput{State: &next})
		}
		timerCtx, cancel := workflow.WithCancel(ctx)
		timer := workflow.NewTimer(timerCtx, lockOwnerCheck)
		checkOwners := false
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(acquire, func(c workflow.ReceiveChannel, _ bool) {
			var req LockRequest
			c.Receive(ctx, &req)
			onAcquire(req)
		})
		sel.AddReceive(release, func(c workflow.ReceiveChannel, _ bool) {
			var rel LockRelease
			c.Receive(ctx, &rel)
			onRelease(rel)
		})
		sel.AddFuture(timer, func(workflow.Future) { checkOwners = true })
		sel.Select(ctx)
		cancel()
		if checkOwners {
			dropEndedOwners(ctx, &st, logger)
		}
	}
}

// grantWaiting grants waiting requests in arrival order: one is granted
// when none of its tenants is held by another owner or wanted by an
// earlier waiter, so a run asking for many tenants is not starved.
func grantWaiting(ctx workflow.Context, st *TenantLockState) {
	wanted := map[string]bool{}
	var still []LockRequest
	for _, req := range st.Waiting {
		blocked := len(st.HoldersOf(req.Owner, req.Tenants)) > 0
		for _, t := range req.Tenants {
			blocked = blocked || wanted[t]
		}
		if blocked {
			for _, t := range req.Tenants {
				wanted[t] = true
			}
			req.Blocked = true
			still = append(still, req)
			continue
		}
		now := workflow.Now(ctx)
		err := workflow.SignalExternalWorkflow(ctx, req.Owner, "", SignalLockGranted, LockGrant{Tenants: req.Tenants, At: now, Waited: req.Blocked}).Get(ctx, nil)
		st.Held = slices.DeleteFunc(st.Held, func(h LockHold) bool { return h.Owner == req.Owner })
		if err != nil {
			// The owner is gone: nothing to hold for it.
			st.Freed = appendBounded(st.Freed, fmt.Sprintf("%s (%s): grant not delivered: %s", req.Owner, strings.Join(req.Tenants, ","), errorText(err)))
			continue
		}
		st.Held = append(st.Held, LockHold{LockRequest: req, Since: now})
	}
	st.Waiting = still
}

// dropEndedOwners frees the holds and requests of runs that ended
// without releasing (a terminated workflow, a crash past every retry).
func dropEndedOwners(ctx workflow.Context, st *TenantLockState, logger interface{ Warn(string, ...interface{}) }) {
	var ids []string
	for _, h := range st.Held {
		ids = append(ids, h.Owner)
	}
	for _, w := range st.Waiting {
		ids = append(ids, w.Owner)
	}
	sort.Strings(ids)
	ids = slices.Compact(ids)
	var a *oncall.Activities
	var running []string
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, shortActivityOptions()), a.RunningWorkflows, ids).Get(ctx, &running); err != nil {
		logger.Warn("cannot tell whether lock owners still run; keeping their locks", "error", err)
		return // fail closed: a lock is kept until its owner is known to be gone
	}
	ended := func(owner string) bool { return !slices.Contains(running, owner) }
	for _, h := range st.Held {
		if ended(h.Owner) {
			logger.Warn("lock owner ended without releasing; freeing its tenants", "owner", h.Owner, "tenants", h.Tenants)
			st.Freed = appendBounded(st.Freed, fmt.Sprintf("%s (%s): ended without releasing", h.Owner, strings.Join(h.Tenants, ",")))
		}
	}
	st.Held = slices.DeleteFunc(st.Held, func(h LockHold) bool { return ended(h.Owner) })
	st.Waiting = slices.DeleteFunc(st.Waiting, func(r LockRequest) bool { return ended(r.Owner) })
}

func appendBounded(list []string, s string) []string {
	list = append(list, s)
	if len(list) > 20 {
		list = list[len(list)-20:]
	}
	return list
}

// publishLocks shows the held tenants in visibility.
func publishLocks(ctx workflow.Context, st TenantLockState) {
	var held []string
	for _, h := range st.Held {
		held = append(held, h.Tenants...)
	}
	sort.Strings(held)
	_ = workflow.UpsertTypedSearchAttributes(ctx, SearchAttrTenants.ValueSet(held))
}

// tenantLock is a run's side of the lock.
type tenantLock struct {
	on    bool
	owner string
	held  bool
}

// tenantLockChange marks the runs that take the tenant lock.
const tenantLockChange = "tenant-lock"

// newTenantLock is called once at the start of each run. held carries
// the lock across continue-as-new.
func newTenantLock(ctx workflow.Context, held bool) *tenantLock {
	v := workflow.GetVersion(ctx, tenantLockChange, workflow.DefaultVersion, 1)
	return &tenantLock{on: v >= 1, owner: workflow.GetInfo(ctx).WorkflowExecution.ID, held: held}
}

// acquire waits until the run holds tenants; waited says it had to wait
// behind another run (whose changes the caller may need to look at
// again). waiting is called with the holds it waits behind, once the
// request is in, and with nil once granted, for status and UI.
func (l *tenantLock) acquire(ctx workflow.Context, kind, reason string, tenants []string, waiting func([]LockHold)) (waited bool, err error) {
	if !l.on || len(tenants) == 0 || l.held {
		return false, nil
	}
	var a *oncall.Activities
	req := LockRequest{Owner: l.owner, Kind: kind, Tenants: sortedCopy(tenants), Reason: reason, At: workflow.Now(ctx)}
	var holders []LockHold
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, shortActivityOptions()), a.RequestTenantLock, req).Get(ctx, &holders); err != nil {
		return false, fmt.Errorf("request the tenant lock: %w", err)
	}
	granted := workflow.GetSignalChannel(ctx, SignalLockGranted)
	var g LockGrant
	if !granted.ReceiveAsync(&g) {
		if waiting != nil {
			waiting(holders)
		}
		granted.Receive(ctx, &g)
		if waiting != nil {
			waiting(nil)
		}
	}
	l.held = true
	return g.Waited, nil
}

// release gives the tenants back; a manager that is gone holds nothing.
func (l *tenantLock) release(ctx workflow.Context) {
	if !l.on || !l.held {
		return
	}
	ctx, cancel := workflow.NewDisconnectedContext(ctx) // also when the run is cancelled
	defer cancel()
	_ = workflow.SignalExternalWorkflow(ctx, TenantLockWorkflowID, "", SignalLockRelease, LockRelease{Owner: l.owner}).Get(ctx, nil)
	l.held = false
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return slices.Compact(out)
}

// lockWaitText says what a run waits behind, for status and decisions.
func lockWaitText(holders []LockHold) string {
	if len(holders) == 0 {
		return "waiting for the tenant lock"
	}
	var parts []string
	for _, h := range holders {
		parts = append(parts, fmt.Sprintf("%s holds %s since %s (%s)", h.Owner, strings.Join(h.Tenants, ","), h.Since.Format(time.RFC3339), h.Reason))
	}
	return "waiting for the tenant lock: " + strings.Join(parts, "; ")
}
