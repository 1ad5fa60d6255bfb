package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/flink"
)

// maxFailureLine bounds one job's line in a decision: its key, its state
// with what to check, and the cause.
const maxFailureLine = 1000

// reasonLine is the decision line about key; it fails the test unless
// there is exactly one.
func reasonLine(t *testing.T, reason, key string) string {
	t.Helper()
	var found []string
	for _, l := range strings.Split(reason, "\n")[1:] {
		if strings.HasPrefix(l, "- "+key+": ") {
			found = append(found, l)
		}
	}
	if len(found) != 1 {
		t.Errorf("%d lines about %s in the decision:\n%s", len(found), key, reason)
		return ""
	}
	if len(found[0]) > maxFailureLine {
		t.Errorf("the line about %s is %d bytes: %s", key, len(found[0]), found[0])
	}
	return found[0]
}

// A window whose savepoints failed for four reasons pauses with one line
// per job: the cause once, and the job's state as it was last seen: kept
// running (Flink refused the stop, or reported it RUNNING after it),
// unknown because its cluster did not answer, or stopped without a
// savepoint. Skip reasons say the same, and the commands answer per job.
func TestWindowSavepointFailuresSayEachJobsState(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *windows.Activities
	env.OnActivity(a.StopWithSavepoint, mockAny, mockAny).Return(func(_ context.Context, in core.StopWithSavepointInput) (core.StopWithSavepointResult, error) {
		switch in.Job.Key {
		case "cluster-a/job-a":
			return core.StopWithSavepointResult{}, temporal.NewNonRetryableApplicationError(
				"stop job cluster-a/job-a with savepoint: NSQuotaExceededException: The NameSpace quota of /sp is exceeded",
				flink.ErrorReasonStorageQuotaExceeded, nil)
		case "cluster-b/job-b":
			return core.StopWithSavepointResult{}, clusterDownError(in.Job)
		case "cluster-a/job-c":
			return core.StopWithSavepointResult{}, temporal.NewNonRetryableApplicationError(
				"job cluster-a/job-c is CANCELED, not running; it did not stop with a savepoint", core.ErrTypeJobStoppedWithoutSavepoint, nil)
		}
		return core.StopWithSavepointResult{}, temporal.NewNonRetryableApplicationError(
			"stop-with-savepoint of cluster-b/job-d failed; the job keeps running: CheckpointException: declined",
			flink.ErrorReasonOperationFailed, nil, core.JobSeen{Seen: core.JobSeenRunning, State: "RUNNING"})
	})
	f := newWindowFixtureOn(t, env, 4)
	in := windowInput()
	in.Policy.Network.Skip = true
	decided := false
	later(t, f.env, func() {
		st := f.status()
		p := st.Pending
		if p == nil || p.Kind != DecisionSavepointFailures || len(p.Jobs) != 4 {
			t.Errorf("pending %+v; want a savepoint-failures decision about 4 jobs", p)
			return
		}
		for key, want := range map[string][]string{
			"cluster-a/job-a": {"the job keeps running: Flink refused the stop before it began", "NSQuotaExceededException"},
			"cluster-b/job-b": {"its state is unknown because its cluster did not answer", "check that the JobManager of cluster-b runs and http://cluster-b answers",
				"connection refused"},
			"cluster-a/job-c": {"the job is no longer running and this window has no savepoint of it", "is CANCELED"},
			"cluster-b/job-d": {"the job keeps running: Flink reported it RUNNING after the failure", "CheckpointException: declined"},
		} {
			line := reasonLine(t, p.Reason, key)
			for _, w := range want {
				if strings.Count(line, w) != 1 {
					t.Errorf("the line about %s says %q %d times, want once: %s", key, w, strings.Count(line, w), line)
				}
			}
			if key != "cluster-a/job-a" && key != "cluster-b/job-d" && strings.Contains(line, "keeps running") {
				t.Errorf("the line about %s says it keeps running: %s", key, line)
			}
			if strings.Contains(line, "(type:") || strings.Contains(line, "activity error") {
				t.Errorf("the line about %s holds the SDK's wrapping: %s", key, line)
			}
		}
		md := windowDetails(&in, &st)
		for _, want := range []string{
			"- cluster-b/job-b: its state is unknown because its cluster did not answer",
			"flinkmaint window decide w1 --action retry-job --job cluster-b/job-b --reason TEXT",
			"flinkmaint window decide w1 --action skip-job --job cluster-a/job-c --reason TEXT",
		} {
			if !strings.Contains(md, want) {
				t.Errorf("the Web UI's details do not show %q:\n%s", want, md)
			}
		}
		decided = true
		f.update(UpdateDecide, DecideRequest{Action: ActionResume, By: "ops", Reason: "restart them by hand"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	rep := f.result()
	if !decided {
		t.Fatal("the window did not pause for the failed savepoints")
	}
	for _, j := range rep.Jobs {
		running := j.Target.Key == "cluster-a/job-a" || j.Target.Key == "cluster-b/job-d"
		if strings.Contains(j.SkipReason, "keeps running") != running {
			t.Errorf("%s: skip reason %q; keeps running: want %v", j.Target.Key, j.SkipReason, running)
		}
	}
	for _, j := range rep.Jobs {
		if j.Target.Key == "cluster-b/job-b" && (j.Seen != core.JobSeenUnanswered || !strings.Contains(j.SkipReason, "its cluster did not answer")) {
			t.Errorf("job of the cluster that did not answer: %+v", j)
		}
		if j.Target.Key == "cluster-a/job-c" && (j.Seen != core.JobSeenStopped || !j.StoppedWithoutSavepoint) {
			t.Errorf("job stopped without a savepoint: %+v", j)
		}
	}
	// The manifest, for a person restarting jobs without Temporal, says it too.
	var m Manifest
	if err := json.Unmarshal([]byte(f.documents["hdfs://nn/flinkmaint/windows/w1/manifest.json"]), &m); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, mj := range m.Jobs {
		seen[mj.Key] = mj.Seen
	}
	if seen["cluster-b/job-b"] != core.JobSeenUnanswered || seen["cluster-a/job-c"] != core.JobSeenStopped || seen["cluster-a/job-a"] != core.JobSeenRunning {
		t.Errorf("the manifest says %v of the jobs", seen)
	}
}

// A decision about more failed jobs than the details list names the
// status command for the rest; the reason stays bounded.
func TestWindowSavepointFailureDecisionIsBounded(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *windows.Activities
	env.OnActivity(a.StopWithSavepoint, mockAny, mockAny).Return(func(_ context.Context, in core.StopWithSavepointInput) (core.StopWithSavepointResult, error) {
		return core.StopWithSavepointResult{}, clusterDownError(in.Job)
	})
	f := newWindowFixtureOn(t, env, 14)
	in := windowInput()
	in.Policy.Network.Skip = true
	in.Policy.Savepoint.Concurrency = 14
	later(t, f.env, func() {
		p := f.status().Pending
		if p == nil || len(p.Jobs) != 14 {
			t.Errorf("pending %+v; want a decision about 14 jobs", p)
			return
		}
		lines := strings.Split(p.Reason, "\n")
		if len(lines) != maxDetailItems+2 || !strings.Contains(lines[len(lines)-1], "and 4 more: `flinkmaint window status w1` lists every job") {
			t.Errorf("%d lines, last %q; want %d job lines and one naming the status command", len(lines), lines[len(lines)-1], maxDetailItems)
		}
		if len(p.Reason) > (maxDetailItems+2)*maxFailureLine {
			t.Errorf("reason is %d bytes", len(p.Reason))
		}
		f.update(UpdateDecide, DecideRequest{Action: ActionAbort, By: "ops", Reason: "cluster outage"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	if !f.env.IsWorkflowCompleted() {
		t.Fatal("window did not end")
	}
}

// A restart that failed says whether the job was started: one its
// cluster did not answer for has an unknown state, one started and not
// healthy names its new job.
func TestWindowRestartFailuresSayTheJobsState(t *testing.T) {
	cases := map[string]struct {
		fail func(f *windowFixture)
		want []string
	}{
		"cluster down": {
			fail: func(f *windowFixture) {},
			want: []string{"its state is unknown because its cluster did not answer", "check that the JobManager of cluster-a runs and http://cluster-a answers", "connection refused"},
		},
		"not healthy": {
			fail: func(f *windowFixture) { f.failRestart["cluster-a/job-a"] = true },
			want: []string{"the job was started from hdfs://nn/sp/savepoint-job-a (job ", "did not become healthy", "job failed on restore (JobUnhealthy)"},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			if name == "cluster down" {
				var a *windows.Activities
				env.OnActivity(a.RestartJob, mockAny, mockAny).Return(func(_ context.Context, in windows.RestartJobInput) (core.RestartJobResult, error) {
					return core.RestartJobResult{}, clusterDownError(in.Job)
				})
			}
			f := newWindowFixtureOn(t, env, 1)
			c.fail(f)
			in := windowInput()
			in.Policy.Network.Skip = true
			decided := false
			later(t, f.env, func() {
				p := f.status().Pending
				if p == nil || p.Kind != DecisionRestartFailures {
					t.Errorf("pending %+v; want a restart-failures decision", p)
					return
				}
				line := reasonLine(t, p.Reason, "cluster-a/job-a")
				for _, w := range c.want {
					if strings.Count(line, w) != 1 {
						t.Errorf("the line says %q %d times, want once: %s", w, strings.Count(line, w), line)
					}
				}
				decided = true
				f.update(UpdateDecide, DecideRequest{Action: ActionSkipJob, Job: "cluster-a/job-a", By: "ops", Reason: "by hand"}, false)
			}, time.Hour)
			f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
			rep := f.result()
			if !decided {
				t.Fatal("the window did not pause for the failed restart")
			}
			if j := rep.Jobs[0]; !strings.Contains(j.SkipReason, c.want[0]) {
				t.Errorf("skip reason %q does not say %q", j.SkipReason, c.want[0])
			}
		})
	}
}

// An upgrade whose stop failed because the job's cluster did not answer
// does not claim the job keeps running the previous version.
func TestUpgradeStopOnAClusterThatDoesNotAnswer(t *testing.T) {
	f := newUpgradeFixture(t)
	f.stopErr = clusterDownError(core.JobTarget{Key: "cluster-a/orders", JobID: previousJobID, RESTURL: "http://cluster-a"})
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, upgradeInput())
	err := f.env.GetWorkflowError()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		t.Fatalf("upgrade ended with %v", err)
	}
	msg := appErr.Message()
	if strings.Contains(msg, "keeps running") || !strings.Contains(msg, "its state is unknown because its cluster did not answer: check that the JobManager of cluster-a runs") ||
		strings.Count(msg, "connection refused") != 1 || strings.Contains(msg, "(type:") {
		t.Fatalf("upgrade failure says %q", msg)
	}
}
