package workflows

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/flinkmaint/flinkmaint/activities/doctor"
)

func TestPingWorkflowReturnsWorkerAnswer(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *doctor.Activities
	answered := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	env.OnActivity(a.Ping, mockAny, doctor.PingInput{Message: "hi"}).
		After(2*time.Second).
		Return(doctor.PingResult{Message: "hi", Worker: "w1", Hostname: "h1", AnsweredAt: answered}, nil)

	env.ExecuteWorkflow(PingWorkflow, PingInput{Message: "hi"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var got PingResult
	if err := env.GetWorkflowResult(&got); err != nil {
		t.Fatal(err)
	}
	want := PingResult{Message: "hi", Worker: "w1", Hostname: "h1", AnsweredAt: answered, RoundTrip: 2 * time.Second}
	if got != want {
		t.Fatalf("result = %+v, want %+v", got, want)
	}
}

func TestPingWorkflowRejectsLongMessage(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.ExecuteWorkflow(PingWorkflow, PingInput{Message: strings.Repeat("x", maxPingMessage+1)})
	err := env.GetWorkflowError()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != ErrTypeInvalidInput || !appErr.NonRetryable() {
		t.Fatalf("error = %v, want non-retryable %s", err, ErrTypeInvalidInput)
	}
}

func TestPingWorkflowSurfacesActivityFailure(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *doctor.Activities
	env.OnActivity(a.Ping, mockAny, mockAny).Return(doctor.PingResult{}, errors.New("worker broke"))
	env.ExecuteWorkflow(PingWorkflow, PingInput{Message: "hi"})
	err := env.GetWorkflowError()
	if err == nil || !strings.Contains(err.Error(), "worker broke") {
		t.Fatalf("error = %v, want the activity failure", err)
	}
}
