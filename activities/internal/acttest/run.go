package acttest

import (
	"testing"

	"go.temporal.io/sdk/testsuite"
)

// Run registers acts (an activities type, or one activity function of a
// family another family's test runs) in a test activity environment,
// executes fn with in there, and decodes its result into out (nil for an
// activity that returns only an error).
func Run(t *testing.T, acts interface{}, fn interface{}, in interface{}, out interface{}) error {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	v, err := env.ExecuteActivity(fn, in)
	if err != nil || out == nil { // nil: an activity that returns only an error
		return err
	}
	return v.Get(out)
}
