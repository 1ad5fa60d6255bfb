package workflows

import (
	"errors"
	"testing"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/flinkmaint/flinkmaint/activities/governance"
)

func TestSavepointCatalogWorkflowRunsTheOneOperation(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *governance.Activities
	in := governance.AdoptSavepointsInput{Job: "c/orders", Paths: []string{"hdfs://nn/sp/savepoint-a-b"}}
	env.OnActivity(a.AdoptSavepoints, mockAny, in).Return(governance.AdoptSavepointsResult{Adopted: []governance.SavepointRow{{Path: in.Paths[0], Job: "t/c/orders"}}}, nil)
	env.ExecuteWorkflow(SavepointCatalogWorkflow, SavepointCatalogInput{Adopt: &in})
	var got SavepointCatalogResult
	if err := env.GetWorkflowResult(&got); err != nil {
		t.Fatal(err)
	}
	if got.List != nil || got.Adopt == nil || len(got.Adopt.Adopted) != 1 || got.Adopt.Adopted[0].Job != "t/c/orders" {
		t.Fatalf("result %+v; want the adoption only", got)
	}
}

func TestSavepointCatalogWorkflowRejectsNoneOrBoth(t *testing.T) {
	for name, in := range map[string]SavepointCatalogInput{
		"none": {},
		"both": {List: &governance.ListSavepointsInput{}, Adopt: &governance.AdoptSavepointsInput{}},
	} {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		env.ExecuteWorkflow(SavepointCatalogWorkflow, in)
		var appErr *temporal.ApplicationError
		if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != ErrTypeInvalidInput {
			t.Errorf("%s: %v; want %s", name, err, ErrTypeInvalidInput)
		}
	}
}
