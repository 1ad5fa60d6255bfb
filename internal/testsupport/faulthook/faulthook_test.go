package faulthook_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/flinkmaint/flinkmaint/internal/testsupport/faulthook"
)

// beats counts how far countTo got, for the test to read while it holds.
var beats atomic.Int64

func countTo(ctx context.Context, n int) (int, error) {
	for i := 1; i <= n; i++ {
		beats.Store(int64(i))
		activity.RecordHeartbeat(ctx, i)
	}
	return n, nil
}

func TestHoldStopsTheActivityUntilReleased(t *testing.T) {
	for name, tc := range map[string]struct {
		hold      faulthook.Hold
		heldAfter int64 // heartbeats done when it holds
	}{
		"third heartbeat":               {faulthook.Hold{Name: "hb", Activity: "countTo", At: faulthook.Heartbeat, Hit: 3}, 3},
		"heartbeat by detail":           {faulthook.Hold{Name: "hb", Activity: "countTo", At: faulthook.Heartbeat, Detail: "4", Hit: 1}, 4},
		"start":                         {faulthook.Hold{Name: "s", Activity: "countTo", At: faulthook.Start, Hit: 1}, 0},
		"done":                          {faulthook.Hold{Name: "d", Activity: "countTo", At: faulthook.Done, Hit: 1}, 5},
		"workflow of the hold":          {faulthook.Hold{Name: "w", Activity: "countTo", At: faulthook.Start, Workflow: "default-test-workflow", Hit: 1}, 0},
		"second run of a point":         {faulthook.Hold{Name: "two", Activity: "countTo", At: faulthook.Done, Hit: 2}, 5},
		"second execution to heartbeat": {faulthook.Hold{Name: "two", Activity: "countTo", At: faulthook.Heartbeat, PerExecution: true, Hit: 2}, 1},
	} {
		t.Run(name, func(t *testing.T) {
			h := faulthook.New(t)
			h.Arm(tc.hold)
			var s testsuite.WorkflowTestSuite
			env := s.NewTestActivityEnvironment()
			env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{faulthook.Interceptor(h.Dir())}})
			env.RegisterActivity(countTo)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if tc.hold.Hit == 2 {
				if _, err := env.ExecuteActivity(countTo, 5); err != nil {
					t.Fatal(err)
				}
				if h.IsHeld(tc.hold.Name) {
					t.Fatal("held at the first hit; want the second")
				}
			}
			beats.Store(0)
			done := make(chan error, 1)
			go func() {
				_, err := env.ExecuteActivity(countTo, 5)
				done <- err
			}()
			held := h.WaitHeld(ctx, tc.hold.Name, nil)
			if got := beats.Load(); got != tc.heldAfter {
				t.Errorf("held after %d heartbeats; want %d", got, tc.heldAfter)
			}
			select {
			case err := <-done:
				t.Fatalf("the activity ended (%v) while held", err)
			case <-time.After(100 * time.Millisecond):
			}
			if held.Activity != "countTo" {
				t.Errorf("held %+v", held)
			}
			h.Release(tc.hold.Name)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNoHoldWithoutAMatch(t *testing.T) {
	h := faulthook.New(t)
	h.Arm(faulthook.Hold{Name: "other", Activity: "somethingElse", At: faulthook.Start, Hit: 1})
	h.Arm(faulthook.Hold{Name: "wf", Activity: "countTo", At: faulthook.Start, Workflow: "no-such-workflow", Hit: 1})
	h.Arm(faulthook.Hold{Name: "in", Activity: "countTo", At: faulthook.Start, Input: "[7]", Hit: 1})
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{faulthook.Interceptor(h.Dir())}})
	env.RegisterActivity(countTo)
	if _, err := env.ExecuteActivity(countTo, 3); err != nil {
		t.Fatal(err)
	}
	if h.IsHeld("other") || h.IsHeld("wf") || h.IsHeld("in") {
		t.Fatal("an activity held at a hold it does not match")
	}
}
