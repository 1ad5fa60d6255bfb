package workflows

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/oncall"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/freeze"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// TestScheduledSavepointsBoundsConcurrencyAndReportsFailures: every job in
// scope gets one savepoint under a trigger id of its own, never more than
// Concurrency at once; a failure does not stop the others, ends the run in
// ErrTypeSavepointsFailed with the report, and reaches the metrics per
// tenant.
func TestScheduledSavepointsBoundsConcurrencyAndReportsFailures(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	openGates(env)
	var a *windows.Activities
	var jobs []core.JobTarget
	for i := range 9 {
		tenant := []string{"team-a", "team-b"}[i%2]
		jobs = append(jobs, core.JobTarget{Key: fmt.Sprintf("c/job-%d", i), Tenant: tenant, ClusterID: "c", JobName: fmt.Sprintf("job-%d", i),
			JobID: strings.Repeat(fmt.Sprint(i), 32), SavepointDir: "hdfs://nn/sp"})
	}
	env.OnActivity(a.DiscoverJobs, mockAny, mockAny).Return(func(_ context.Context, in core.DiscoverJobsInput) (core.DiscoverJobsResult, error) {
		if !in.SavepointOnly || len(in.Scope.Tenants) != 2 {
			t.Errorf("discovery %+v; want the scope's tenants, recipes not required", in)
		}
		return core.DiscoverJobsResult{Jobs: jobs,
			Tenants: []inventory.Tenant{{Name: "team-a"}, {Name: "team-b"}, {Name: "team-c"}}}, nil
	})
	var mu sync.Mutex
	inflight, most := 0, 0
	triggers := map[string]string{}
	env.OnActivity(a.TakeSavepoint, mockAny, mockAny).Return(func(_ context.Context, in windows.TakeSavepointInput) (windows.TakeSavepointResult, error) {
		mu.Lock()
		inflight++
		most = max(most, inflight)
		triggers[in.TriggerID] = in.Job.Key
		mu.Unlock()
		defer func() { mu.Lock(); inflight--; mu.Unlock() }()
		time.Sleep(20 * time.Millisecond) // overlap with the others in flight
		if in.Format != FormatNative || in.RunID == "" || len(in.TriggerID) != 32 {
			t.Errorf("take savepoint %+v", in)
		}
		if in.Job.Key == "c/job-3" {
			return windows.TakeSavepointResult{}, temporal.NewNonRetryableApplicationError("savepoint failed: checkpoint declined", core.ErrTypeSavepointFailed, nil)
		}
		return windows.TakeSavepointResult{SavepointPath: "hdfs://nn/sp/savepoint-" + in.Job.JobName, Files: 3, Bytes: 30}, nil
	})
	var recorded windows.RecordSavepointRunInput
	env.OnActivity(a.RecordSavepointRun, mockAny, mockAny).Return(func(_ context.Context, in windows.RecordSavepointRunInput) error {
		recorded = in
		return nil
	})
	env.ExecuteWorkflow(ScheduledSavepointsWorkflow, ScheduledSavepointsInput{Schedule: "nightly",
		Scope: core.Scope{Tenants: []string{"team-a", "team-b"}}, Concurrency: 3, Format: FormatNative})

	var appErr *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != ErrTypeSavepointsFailed || !strings.Contains(err.Error(), "c/job-3") {
		t.Fatalf("run ended with %v; want %s naming c/job-3", err, ErrTypeSavepointsFailed)
	}
	var rep ScheduledSavepointsReport
	if err := appErr.Details(&rep); err != nil {
		t.Fatal(err)
	}
	if rep.Taken != 8 || rep.Failed != 1 || len(rep.Jobs) != 9 || rep.Schedule != "nightly" {
		t.Fatalf("report %+v; want 8 taken, 1 failed of 9", rep)
	}
	for _, j := range rep.Jobs {
		if (j.Key == "c/job-3") != (j.Error != "") || (j.Error == "") != (j.SavepointPath != "") {
			t.Errorf("job %+v", j)
		}
	}
	if most < 2 || most > 3 {
		t.Errorf("%d savepoints at once; want up to the concurrency of 3, and more than one", most)
	}
	if len(triggers) != 9 {
		t.Errorf("%d distinct trigger ids for 9 jobs", len(triggers))
	}
	want := []windows.TenantSavepoints{{Tenant: "team-a", Taken: 5}, {Tenant: "team-b", Taken: 3, Failed: 1}, {Tenant: "team-c"}}
	if fmt.Sprint(recorded.Tenants) != fmt.Sprint(want) || recorded.RunID != rep.RunID {
		t.Errorf("recorded %+v; want %+v for run %s", recorded, want, rep.RunID)
	}
}

func TestScheduledSavepointsRejectsBadSettings(t *testing.T) {
	for _, in := range []ScheduledSavepointsInput{{Concurrency: 300}, {Format: "binary"}, {Timeout: Duration(time.Second)},
		{Scope: core.Scope{IncludeJobs: []string{"orders-["}}}} {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		env.ExecuteWorkflow(ScheduledSavepointsWorkflow, in)
		var appErr *temporal.ApplicationError
		if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != ErrTypeInvalidInput {
			t.Errorf("%+v: %v; want %s", in, err, ErrTypeInvalidInput)
		}
	}
}

// A run a schedule starts inside a freeze skips, saying why, and takes no
// savepoint; started by hand it is refused.
func TestScheduledSavepointsSkipInsideAFreeze(t *testing.T) {
	for _, scheduled := range []bool{true, false} {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		var a *windows.Activities
		var onc *oncall.Activities
		env.OnActivity(onc.CheckFreeze, mockAny, mockAny).Return(oncall.CheckFreezeResult{Active: []freeze.Active{{Name: "quarter-close",
			Until: time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC)}}}, nil)
		discovered := false
		env.OnActivity(a.DiscoverJobs, mockAny, mockAny).Return(func(context.Context, core.DiscoverJobsInput) (core.DiscoverJobsResult, error) {
			discovered = true
			return core.DiscoverJobsResult{}, nil
		})
		if scheduled {
			if err := env.SetTypedSearchAttributesOnStart(temporal.NewSearchAttributes(scheduledBy.ValueSet("nightly-savepoints"))); err != nil {
				t.Fatal(err)
			}
		}
		env.ExecuteWorkflow(ScheduledSavepointsWorkflow, ScheduledSavepointsInput{Schedule: "nightly-savepoints"})
		if scheduled {
			var rep ScheduledSavepointsReport
			if err := env.GetWorkflowResult(&rep); err != nil || !strings.Contains(rep.Frozen, `skipped: scheduled inside freeze "quarter-close"`) || discovered {
				t.Errorf("scheduled run inside a freeze: %v, %+v, discovered %v; want skipped, saying why", err, rep, discovered)
			}
		} else if err := env.GetWorkflowError(); !isFrozen(err) || discovered {
			t.Errorf("run by hand inside a freeze: %v, discovered %v; want refused", err, discovered)
		}
	}
}
