package workflows

import (
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
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
// its validator's verdict is not the one wanted.
func sendUpdate(t *testing.T, env *testsuite.TestWorkflowEnvironment, name string, arg interface{}, wantErr bool) {
	t.Helper()
	env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
		OnReject: func(err error) {
			if !wantErr {
				t.Errorf("update %s rejected: %v", name, err)
			}
		},
		OnAccept: func() {
			if wantErr {
				t.Errorf("update %s accepted, want rejection", name)
			}
		},
		OnComplete: func(interface{}, error) {},
	}, arg)
}
