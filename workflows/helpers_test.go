package workflows

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/activities/oncall"
)

// mockAny matches any argument in OnActivity expectations.
var mockAny = mock.Anything

// queryInto runs a query on a test workflow and decodes its answer.
func queryInto(t *testing.T, env *testsuite.TestWorkflowEnvironment, query string, out interface{}) {
	t.Helper()
	v, err := env.QueryWorkflow(query)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Get(out); err != nil {
		t.Fatal(err)
	}
}

// sendUpdate sends an update to a test workflow and fails the test when
// its validator's verdict is not the one wanted, or when the run never
// answered it.
func sendUpdate(t *testing.T, env *testsuite.TestWorkflowEnvironment, name string, arg interface{}, wantErr bool) {
	t.Helper()
	answered := mustBeAnswered(t, name, arg)
	env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
		OnReject: func(err error) {
			answered.Store(true)
			if !wantErr {
				t.Errorf("update %s rejected: %v", name, err)
			}
		},
		OnAccept: func() {
			if wantErr {
				t.Errorf("update %s accepted, want rejection", name)
			}
		},
		OnComplete: func(interface{}, error) { answered.Store(true) },
	}, arg)
}

// sendRefused sends an update that must be rejected with an error naming
// want: a refusal for another cause (a panic in a validator included)
// fails the test.
func sendRefused(t *testing.T, env *testsuite.TestWorkflowEnvironment, name string, arg interface{}, want string) {
	t.Helper()
	answered := mustBeAnswered(t, name, arg)
	env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
		OnReject: func(err error) {
			answered.Store(true)
			if !strings.Contains(err.Error(), want) {
				t.Errorf("update %s rejected with %v; want a refusal naming %q", name, err, want)
			}
		},
		OnAccept:   func() { t.Errorf("update %s accepted, want it refused: %s", name, want) },
		OnComplete: func(interface{}, error) { answered.Store(true) },
	}, arg)
}

// mustBeAnswered fails the test, when it ends, unless the returned flag
// was set: by an update's rejection or its completion. An update sent to
// a run that had already ended, or from a delayed callback that never
// fired, would otherwise be a check that silently never ran.
func mustBeAnswered(t *testing.T, name string, arg interface{}) *atomic.Bool {
	t.Helper()
	answered := new(atomic.Bool)
	t.Cleanup(func() {
		if !answered.Load() {
			t.Errorf("update %s(%+v) was never answered: rejected, or accepted and completed", name, arg)
		}
	})
	return answered
}

// later registers fn to run at d of test time, like
// RegisterDelayedCallback, and fails the test, when it ends, if fn never
// ran: a run that ended before d would otherwise skip the checks and
// updates in fn without a word.
func later(t *testing.T, env *testsuite.TestWorkflowEnvironment, fn func(), d time.Duration) {
	t.Helper()
	fired := new(atomic.Bool)
	t.Cleanup(func() {
		if !fired.Load() {
			t.Errorf("the callback at %v of test time never ran: the run ended before it", d)
		}
	})
	env.RegisterDelayedCallback(func() {
		fired.Store(true)
		fn()
	}, d)
}

// lockLog records the tenant-lock requests and releases of a test.
type lockLog struct {
	mu    sync.Mutex
	calls []string
	// refuse, when set, is what every lock request fails with.
	refuse error
}

func (l *lockLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, s)
}

func (l *lockLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.calls, " | ")
}

// openGates stands for a calm fleet: no freeze in force, every
// tenant-lock request granted at once, every release taken. The env has
// one activity-completed listener; also, if given, hears every completion
// after the gates have.
func openGates(env *testsuite.TestWorkflowEnvironment, also ...func(*activity.Info, error)) *lockLog {
	log := &lockLog{}
	var a *oncall.Activities
	env.OnActivity(a.CheckFreeze, mock.Anything, mock.Anything).Return(oncall.CheckFreezeResult{}, nil)
	env.OnActivity(a.RequestTenantLock, mock.Anything, mock.Anything).Return(func(_ context.Context, req oncall.LockRequest) ([]oncall.LockHold, error) {
		log.add("acquire " + req.Owner + " " + strings.Join(req.Tenants, ","))
		log.mu.Lock()
		defer log.mu.Unlock()
		return nil, log.refuse
	})
	env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, err error) {
		if info.ActivityType.Name == "RequestTenantLock" && err == nil {
			_ = env.SignalWorkflowByID(info.WorkflowExecution.ID, SignalLockGranted, LockGrant{})
		}
		for _, f := range also {
			f(info, err)
		}
	})
	env.OnSignalExternalWorkflow(mock.Anything, TenantLockWorkflowID, "", SignalLockRelease, mock.Anything).Return(
		func(_, _, _, _ string, arg interface{}) error {
			log.add("release " + arg.(LockRelease).Owner)
			return nil
		})
	return log
}

// gatherInParts fakes GatherCleanup: each part is written where the real
// activity writes it, with a hash derived from its number; fail, if set,
// may fail a part.
func gatherInParts(env *testsuite.TestWorkflowEnvironment, fail ...func(part int) error) {
	var a *governance.Activities
	env.OnActivity(a.GatherCleanup, mock.Anything, mock.Anything).Return(func(_ context.Context, in governance.GatherCleanupInput) (governance.ListingPart, error) {
		for _, f := range fail {
			if err := f(in.Part); err != nil {
				return governance.ListingPart{}, err
			}
		}
		return governance.ListingPart{Path: fmt.Sprintf("hdfs://nn/flinkmaint/plans/%s/listing-%02d-of-%02d.json.gz", in.RunID, in.Part+1, in.Parts),
			SHA256: fmt.Sprintf("%064d", in.Part), Part: in.Part, Parts: in.Parts}, nil
	})
}
