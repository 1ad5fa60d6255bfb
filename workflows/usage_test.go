package workflows

import (
	"errors"
	"testing"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/internal/usage"
)

func TestUsageWorkflowRunsTheActivity(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *capacity.Activities
	in := capacity.TenantUsageInput{Tenants: []string{"team-a"}, Top: 3}
	env.OnActivity(a.TenantUsage, mockAny, in).Return(capacity.TenantUsageResult{Tenants: []usage.Report{{Tenant: "team-a"}}}, nil).Once()
	env.ExecuteWorkflow(UsageWorkflow, in)
	var got capacity.TenantUsageResult
	if err := env.GetWorkflowResult(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.Tenants) != 1 || got.Tenants[0].Tenant != "team-a" {
		t.Fatalf("result %+v; want team-a's report", got)
	}
	env.AssertExpectations(t)
}

func TestUsageWorkflowRejectsBadInput(t *testing.T) {
	for name, in := range map[string]capacity.TenantUsageInput{
		"negative top": {Top: -1},
		"huge top":     {Top: usage.MaxTop + 1},
		"empty tenant": {Tenants: []string{""}},
	} {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		env.ExecuteWorkflow(UsageWorkflow, in)
		var appErr *temporal.ApplicationError
		if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != ErrTypeInvalidInput {
			t.Errorf("%s: %v; want %s", name, err, ErrTypeInvalidInput)
		}
	}
}
