package workflows

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/flink"
)

// clusterDownError is what StopWithSavepoint returns when the JobManager
// of the job's cluster is gone: the Flink client's error, classified the
// way activities classify it (message "what: cause", the cause kept).
func clusterDownError(job core.JobTarget) error {
	key, jobID := job.Key, job.JobID
	u := job.RESTURL + "/jobs/" + jobID + "/stop"
	fe := &flink.Error{Op: "stop with savepoint", Reason: flink.ErrorReasonUnavailable, Retryable: true, Method: "POST", URL: u,
		Message: "no response from the REST endpoint",
		Err: &url.Error{Op: "Post", URL: u, Err: &net.OpError{Op: "dial", Net: "tcp",
			Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}}
	return temporal.NewApplicationErrorWithCause("stop job "+key+" ("+jobID+") with savepoint: "+fe.Error(), fe.Reason, fe)
}

// savepointFailureTexts runs a job's savepoint child as a window does and
// returns errorText of its failure and, to compare, the raw Error().
func savepointFailureTexts(ctx workflow.Context, in JobSavepointInput) ([]string, error) {
	cctx := workflow.WithChildOptions(ctx, jobChildOptions(JobSavepointWorkflowID("w1", in.Job.Key, 1), "stop"))
	err := workflow.ExecuteChildWorkflow(cctx, JobSavepointWorkflowType, in).Get(ctx, nil)
	if err == nil {
		return nil, errors.New("the savepoint child did not fail")
	}
	return []string{errorText(err), err.Error()}, nil
}

// planThenFail fails like a governance run whose plan the activity
// refused: the activity's error wrapped with "plan: ", then failed as a
// non-retryable error of the same type that carries the whole chain.
func planThenFail(ctx workflow.Context) error {
	var a *governance.Activities
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, shortActivityOptions()), a.PlanCleanup, governance.PlanCleanupInput{}).Get(ctx, nil)
	err = fmt.Errorf("plan: %w", err)
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		return err
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), appErr.Type(), err)
}

func planFailureTexts(ctx workflow.Context) ([]string, error) {
	err := workflow.ExecuteChildWorkflow(ctx, planThenFail).Get(ctx, nil)
	if err == nil {
		return nil, errors.New("the plan child did not fail")
	}
	return []string{errorText(err), err.Error()}, nil
}

func runTexts(t *testing.T, env *testsuite.TestWorkflowEnvironment, wf interface{}, args ...interface{}) (text, raw string) {
	t.Helper()
	env.ExecuteWorkflow(wf, args...)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out []string
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	return out[0], out[1]
}

// errorText says the cause of an error that crossed an activity and a
// child workflow once, without the SDK's type tails, within its bound.
func TestErrorTextSaysTheRootCauseOnce(t *testing.T) {
	job := core.JobTarget{Key: "cluster-a/job-a", ClusterID: "cluster-a", RESTURL: "http://cluster-a:8081",
		JobID: strings.Repeat("a", 32), SavepointDir: "hdfs://nn/sp"}
	cases := map[string]struct {
		run func(t *testing.T) (text, raw string)
		// once must each appear exactly once in the text; root, the
		// innermost cause, several times in the SDK's own text.
		once []string
		root string
	}{
		"cluster down under a savepoint child": {
			run: func(t *testing.T) (string, string) {
				var s testsuite.WorkflowTestSuite
				env := s.NewTestWorkflowEnvironment()
				env.RegisterWorkflowWithOptions(JobSavepointWorkflow, workflow.RegisterOptions{Name: JobSavepointWorkflowType})
				var a *windows.Activities
				env.OnActivity(a.StopWithSavepoint, mockAny, mockAny).Return(core.StopWithSavepointResult{}, clusterDownError(job))
				return runTexts(t, env, savepointFailureTexts, JobSavepointInput{WindowID: "w1", Job: job, Attempt: 1, Timeout: Duration(10 * time.Minute)})
			},
			once: []string{"stop job cluster-a/job-a", "FlinkUnavailable", "no response from the REST endpoint", "connection refused"},
			root: "connection refused",
		},
		"invalid input wrapped by a workflow and its parent": {
			run: func(t *testing.T) (string, string) {
				var s testsuite.WorkflowTestSuite
				env := s.NewTestWorkflowEnvironment()
				env.RegisterWorkflow(planThenFail)
				var a *governance.Activities
				cause := fmt.Errorf("cleanup: invalid input: %w", errors.New("tenant team-x has no root"))
				env.OnActivity(a.PlanCleanup, mockAny, mockAny).Return(governance.PlanCleanupResult{},
					temporal.NewNonRetryableApplicationError("plan: "+cause.Error(), core.ErrTypeInvalidInput, cause))
				return runTexts(t, env, planFailureTexts)
			},
			once: []string{"plan", "cleanup", "invalid input", "tenant team-x has no root", core.ErrTypeInvalidInput},
			root: "tenant team-x has no root",
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			text, raw := c.run(t)
			for _, s := range c.once {
				if n := strings.Count(text, s); n != 1 {
					t.Errorf("%q appears %d times in %q; want once", s, n, text)
				}
			}
			if strings.Count(raw, c.root) < 3 {
				t.Errorf("the SDK's own text says %q fewer than three times, so the case proves nothing: %s", c.root, raw)
			}
			for _, noise := range []string{"(type:", "retryable:", "activity error", "child workflow execution error", "scheduledEventID", "wrapError"} {
				if strings.Contains(text, noise) {
					t.Errorf("text holds %q: %s", noise, text)
				}
			}
			if len(text) > maxErrorText {
				t.Errorf("text is %d bytes, over %d: %s", len(text), maxErrorText, text)
			}
			t.Logf("%d bytes instead of %d: %s", len(text), len(raw), text)
		})
	}
}

// A long cause is cut to the bound, still saying where it came from.
func TestErrorTextIsBounded(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(JobSavepointWorkflow, workflow.RegisterOptions{Name: JobSavepointWorkflowType})
	var a *windows.Activities
	trace := "org.apache.flink.runtime.checkpoint.CheckpointException: " + strings.Repeat("Task failure while checkpointing ", 100)
	env.OnActivity(a.StopWithSavepoint, mockAny, mockAny).Return(func(context.Context, core.StopWithSavepointInput) (core.StopWithSavepointResult, error) {
		return core.StopWithSavepointResult{}, temporal.NewNonRetryableApplicationError("stop-with-savepoint of cluster-a/job-a failed; the job keeps running: "+trace,
			flink.ErrorReasonOperationFailed, nil)
	})
	text, raw := runTexts(t, env, savepointFailureTexts, JobSavepointInput{WindowID: "w1", Job: core.JobTarget{Key: "cluster-a/job-a", JobID: "a", SavepointDir: "hdfs://nn/sp"}, Attempt: 1, Timeout: Duration(10 * time.Minute)})
	if len(raw) <= maxErrorText {
		t.Fatalf("the raw text is only %d bytes", len(raw))
	}
	if len(text) > maxErrorText || !strings.HasPrefix(text, "stop-with-savepoint of cluster-a/job-a failed") || !strings.HasSuffix(text, "… ("+flink.ErrorReasonOperationFailed+")") {
		t.Fatalf("text (%d bytes) not cut to %d with its type kept: %s", len(text), maxErrorText, text)
	}
}

// Plain Go errors (no Temporal layer) keep their text; a wrapper's
// repeated prefix is said once.
func TestErrorTextOfPlainErrors(t *testing.T) {
	cases := map[string]struct {
		err  error
		want string
	}{
		"plain":              {errors.New("quota: namenode unavailable"), "quota: namenode unavailable"},
		"wrapped":            {fmt.Errorf("quota check: %w", errors.New("namenode unavailable")), "quota check: namenode unavailable"},
		"prefix said twice":  {fmt.Errorf("plan: %w", errors.New("plan: no tenants")), "plan: no tenants"},
		"stack trace folded": {errors.New("savepoint failed:\n\tat Foo.bar\n\tat Baz.qux"), "savepoint failed: at Foo.bar at Baz.qux"},
		"application error": {temporal.NewNonRetryableApplicationError("job is CANCELED, not running", core.ErrTypeJobStoppedWithoutSavepoint, nil),
			"job is CANCELED, not running (" + core.ErrTypeJobStoppedWithoutSavepoint + ")"},
	}
	for name, c := range cases {
		if got := errorText(c.err); got != c.want {
			t.Errorf("%s: %q, want %q", name, got, c.want)
		}
	}
}
