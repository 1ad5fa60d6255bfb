package workflows

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"github.com/flinkmaint/flinkmaint/activities/oncall"
)

// lockFixture runs the lock manager and records the grants it sends.
type lockFixture struct {
	mu      sync.Mutex
	t       *testing.T
	env     *testsuite.TestWorkflowEnvironment
	grants  []string
	running []string
}

func newLockFixture(t *testing.T) *lockFixture {
	var s testsuite.WorkflowTestSuite
	f := &lockFixture{t: t, env: s.NewTestWorkflowEnvironment()}
	f.env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", SignalLockGranted, mock.Anything).Return(
		func(_, owner, _, _ string, arg interface{}) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.grants = append(f.grants, owner+":"+strings.Join(arg.(LockGrant).Tenants, ","))
			return nil
		})
	var a *oncall.Activities
	f.env.OnActivity(a.RunningWorkflows, mock.Anything, mock.Anything).Return(func(_ context.Context, ids []string) ([]string, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.running, nil
	})
	return f
}

func (f *lockFixture) at(d time.Duration, fn func()) { later(f.t, f.env, fn, d) }

func (f *lockFixture) acquire(owner string, tenants ...string) {
	f.env.SignalWorkflow(SignalLockAcquire, LockRequest{Owner: owner, Kind: "window", Tenants: tenants})
}

func (f *lockFixture) release(owner string) {
	f.env.SignalWorkflow(SignalLockRelease, LockRelease{Owner: owner})
}

func (f *lockFixture) state(t *testing.T) TenantLockState {
	v, err := f.env.QueryWorkflow(QueryTenantLocks)
	if err != nil {
		t.Fatal(err)
	}
	var st TenantLockState
	if err := v.Get(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// Tenants are granted all at once or not at all, first come first served:
// a request waiting for a held tenant also keeps later requests off the
// other tenants it wants, so it is not starved.
func TestTenantLocksGrantInOrderAndAllAtOnce(t *testing.T) {
	f := newLockFixture(t)
	f.running = []string{"wA", "wB", "wC", "wD", "wE"}
	var waitingAt2 []string
	f.at(time.Second, func() {
		f.acquire("wA", "t1", "t2")
		f.acquire("wB", "t2")
		f.acquire("wC", "t3")
		f.acquire("wD", "t1", "t3")
		f.acquire("wE", "t1") // t1 is free of holders once wA goes, but wD asked first
		f.acquire("wB", "t2") // asked twice: queued once
	})
	f.at(2*time.Second, func() {
		for _, w := range f.state(t).Waiting {
			waitingAt2 = append(waitingAt2, w.Owner)
		}
		f.release("wA")
	})
	f.at(3*time.Second, func() { f.release("wC") })
	f.at(4*time.Second, func() { f.release("wB"); f.release("wD") })
	f.at(5*time.Second, func() { f.release("wE") })
	f.env.ExecuteWorkflow(TenantLockWorkflow, TenantLockInput{})
	if err := f.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	want := "wA:t1,t2 wC:t3 wB:t2 wD:t1,t3 wE:t1"
	if got := strings.Join(f.grants, " "); got != want {
		t.Errorf("grants %s; want %s", got, want)
	}
	if strings.Join(waitingAt2, ",") != "wB,wD,wE" {
		t.Errorf("waiting after the first grants %v; want wB, wD, wE", waitingAt2)
	}
}

// A holder that ended without releasing loses its tenants at the next
// owner check; while the check cannot be made, the lock is kept.
func TestTenantLocksFreeAnEndedOwner(t *testing.T) {
	f := newLockFixture(t)
	f.running = []string{"wB"}
	f.at(time.Second, func() {
		f.acquire("wGone", "t1")
		f.acquire("wB", "t1")
	})
	f.at(lockOwnerCheck+30*time.Second, func() {
		st := f.state(t)
		if len(st.Held) != 1 || st.Held[0].Owner != "wB" || len(st.Freed) != 1 || !strings.Contains(st.Freed[0], "wGone") {
			t.Errorf("state %+v; want wGone freed and wB holding", st)
		}
		f.release("wB")
	})
	f.env.ExecuteWorkflow(TenantLockWorkflow, TenantLockInput{})
	if err := f.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.grants, " "); got != "wGone:t1 wB:t1" {
		t.Errorf("grants %s", got)
	}
}

// A holder that asks again (a retried request, its next run) is granted
// again at once, ahead of those waiting.
func TestTenantLocksGrantAHolderAgain(t *testing.T) {
	f := newLockFixture(t)
	f.running = []string{"wA", "wB"}
	f.at(time.Second, func() { f.acquire("wA", "t1"); f.acquire("wB", "t1") })
	f.at(10*time.Second, func() { f.acquire("wA", "t1") })
	f.at(20*time.Second, func() { f.release("wA") })
	f.at(30*time.Second, func() { f.release("wB") })
	f.env.ExecuteWorkflow(TenantLockWorkflow, TenantLockInput{})
	if err := f.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.grants, " "); got != "wA:t1 wA:t1 wB:t1" {
		t.Errorf("grants %s; want wA twice, then wB", got)
	}
}
