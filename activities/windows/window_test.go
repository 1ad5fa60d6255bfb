package windows

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/internal/acttest"
	"github.com/flinkmaint/flinkmaint/internal/flink"
)

func TestStopWithSavepointFailureIsNonRetryable(t *testing.T) {
	ff := &acttest.Flink{Statuses: []flink.OperationStatus{
		{State: flink.OperationInProgress},
		{State: flink.OperationCompleted, Failure: &flink.FailureCause{StackTrace: "java.io.IOException: quota\n\tat x\nCaused by: NSQuotaExceededException: The NameSpace quota"}},
	}, Details: []flink.JobDetails{{State: flink.JobRunning}}}
	a := &Activities{Flink: acttest.OneClient{C: ff}, PollInterval: time.Millisecond}
	var out core.StopWithSavepointResult
	err := acttest.Run(t, a, a.StopWithSavepoint, core.StopWithSavepointInput{
		Job: core.JobTarget{Key: "c/j", JobID: "j1", SavepointDir: "hdfs://nn/sp"}, TriggerID: strings.Repeat("a", 32)}, &out)
	typ, nonRetryable := acttest.ErrType(t, err)
	if typ != flink.ErrorReasonOperationFailed || !nonRetryable || !strings.Contains(err.Error(), "NSQuotaExceededException") || !strings.Contains(err.Error(), "keeps running") {
		t.Fatalf("error %v (type %s)", err, typ)
	}
}

// A stop whose operation failed says, in its details, what the activity
// read of the job after the failure; the workflow words its decision
// from it.
func TestStopWithSavepointFailureSaysWhatItSawOfTheJob(t *testing.T) {
	failed := []flink.OperationStatus{{State: flink.OperationCompleted, Failure: &flink.FailureCause{StackTrace: "java.io.IOException: declined"}}}
	down := flink.NewError("job details", flink.ErrorReasonUnavailable, "no response from the REST endpoint", nil)
	// JobDetails is asked twice: whether the stop finished the job, then
	// what the job is now; the fake counts SavepointStatus calls too.
	cases := map[string]struct {
		details []flink.JobDetails
		errs    []error
		want    core.JobSeen
	}{
		"running":          {[]flink.JobDetails{{}, {State: flink.JobRunning}}, nil, core.JobSeen{Seen: core.JobSeenRunning, State: "RUNNING"}},
		"restarting":       {[]flink.JobDetails{{}, {State: flink.JobRunning}, {State: flink.JobRestarting}}, nil, core.JobSeen{Seen: core.JobSeenUnknown, State: "RESTARTING"}},
		"cluster gone now": {[]flink.JobDetails{{}, {State: flink.JobRunning}}, []error{nil, nil, down}, core.JobSeen{Seen: core.JobSeenUnanswered}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ff := &acttest.Flink{Statuses: failed, Details: c.details, DetailsErrs: c.errs}
			a := &Activities{Flink: acttest.OneClient{C: ff}, PollInterval: time.Millisecond}
			var out core.StopWithSavepointResult
			err := acttest.Run(t, a, a.StopWithSavepoint, core.StopWithSavepointInput{
				Job: core.JobTarget{Key: "c/j", JobID: "j1", SavepointDir: "hdfs://nn/sp"}, TriggerID: strings.Repeat("a", 32)}, &out)
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != flink.ErrorReasonOperationFailed {
				t.Fatalf("error %v", err)
			}
			var seen core.JobSeen
			if err := appErr.Details(&seen); err != nil || seen != c.want {
				t.Fatalf("details %+v (%v), want %+v", seen, err, c.want)
			}
		})
	}
}

func TestStopWithSavepointNeedsATargetDir(t *testing.T) {
	a := &Activities{Flink: acttest.OneClient{C: &acttest.Flink{}}}
	var out core.StopWithSavepointResult
	err := acttest.Run(t, a, a.StopWithSavepoint, core.StopWithSavepointInput{Job: core.JobTarget{Key: "c/j", ClusterID: "c", JobID: "j1"}}, &out)
	if typ, nonRetryable := acttest.ErrType(t, err); typ != core.ErrTypeInvalidInput || !nonRetryable {
		t.Fatalf("error %v", err)
	}
}

func TestAwaitHealthyRefusesAnotherRestorePoint(t *testing.T) {
	ff := &acttest.Flink{
		Details: []flink.JobDetails{{ID: "n1", State: flink.JobRunning}},
		Stats: flink.CheckpointingStatistics{Latest: flink.LatestCheckpoints{
			Restored: &flink.RestoredCheckpoint{ID: 3, ExternalPath: "hdfs://nn/sp/savepoint-other"}}},
	}
	a := &Activities{Flink: acttest.OneClient{C: ff}, PollInterval: time.Millisecond}
	var out AwaitHealthyResult
	err := acttest.Run(t, a, a.AwaitHealthy, AwaitHealthyInput{RESTURL: "x", JobID: "n1", SavepointPath: "hdfs://nn/sp/savepoint-mine",
		RunningTimeout: time.Minute, CheckpointTimeout: time.Minute}, &out)
	if typ, nonRetryable := acttest.ErrType(t, err); typ != core.ErrTypeRestoreMismatch || !nonRetryable || !strings.Contains(err.Error(), "savepoint-other") {
		t.Fatalf("error %v", err)
	}
}

func TestAwaitHealthyFailsOnAFailedJob(t *testing.T) {
	ff := &acttest.Flink{Details: []flink.JobDetails{{ID: "n1", State: flink.JobRunning}, {ID: "n1", State: flink.JobFailed}}}
	a := &Activities{Flink: acttest.OneClient{C: ff}, PollInterval: time.Millisecond}
	var out AwaitHealthyResult
	err := acttest.Run(t, a, a.AwaitHealthy, AwaitHealthyInput{RESTURL: "x", JobID: "n1", RunningTimeout: time.Minute, CheckpointTimeout: time.Minute}, &out)
	if typ, nonRetryable := acttest.ErrType(t, err); typ != core.ErrTypeJobUnhealthy || !nonRetryable || !strings.Contains(err.Error(), "FAILED") {
		t.Fatalf("error %v", err)
	}
}

func TestAwaitHealthySucceedsAfterACheckpointNewerThanTheRestore(t *testing.T) {
	ff := &acttest.Flink{
		Details: []flink.JobDetails{{ID: "n1", State: flink.JobRunning}},
		Stats: flink.CheckpointingStatistics{Latest: flink.LatestCheckpoints{
			Restored:  &flink.RestoredCheckpoint{ID: 3, ExternalPath: "hdfs://nn/sp/savepoint-mine/"},
			Completed: &flink.CheckpointStatistics{ID: 4, ExternalPath: "hdfs://nn/chk/n1/chk-4"}}},
	}
	a := &Activities{Flink: acttest.OneClient{C: ff}, PollInterval: time.Millisecond}
	var out AwaitHealthyResult
	if err := acttest.Run(t, a, a.AwaitHealthy, AwaitHealthyInput{RESTURL: "x", JobID: "n1", SavepointPath: "hdfs://nn/sp/savepoint-mine",
		RunningTimeout: time.Minute, CheckpointTimeout: time.Minute, Soak: 20 * time.Millisecond}, &out); err != nil {
		t.Fatal(err)
	}
	if out.CheckpointID != 4 || out.RestoredFrom != "hdfs://nn/sp/savepoint-mine/" {
		t.Fatalf("result %+v", out)
	}
}

// TestAwaitHealthyWantsACheckpointOfItsOwnAfterTheRestore: the restored
// checkpoint itself, or a savepoint taken since, is no proof that the job
// checkpoints again: the gate waits for a checkpoint with a higher id and
// fails when none comes in time.
func TestAwaitHealthyWantsACheckpointOfItsOwnAfterTheRestore(t *testing.T) {
	for name, latest := range map[string]*flink.CheckpointStatistics{
		"the restored one":  {ID: 3, ExternalPath: "hdfs://nn/sp/savepoint-mine"},
		"a savepoint since": {ID: 4, IsSavepoint: true, ExternalPath: "hdfs://nn/sp/savepoint-later"},
	} {
		t.Run(name, func(t *testing.T) {
			ff := &acttest.Flink{
				Details: []flink.JobDetails{{ID: "n1", State: flink.JobRunning}},
				Stats: flink.CheckpointingStatistics{Latest: flink.LatestCheckpoints{
					Restored: &flink.RestoredCheckpoint{ID: 3, ExternalPath: "hdfs://nn/sp/savepoint-mine/"}, Completed: latest}},
			}
			a := &Activities{Flink: acttest.OneClient{C: ff}, PollInterval: time.Millisecond}
			var out AwaitHealthyResult
			err := acttest.Run(t, a, a.AwaitHealthy, AwaitHealthyInput{RESTURL: "x", JobID: "n1", SavepointPath: "hdfs://nn/sp/savepoint-mine",
				RunningTimeout: time.Minute, CheckpointTimeout: 50 * time.Millisecond}, &out)
			if typ, nonRetryable := acttest.ErrType(t, err); typ != core.ErrTypeJobUnhealthy || !nonRetryable || !strings.Contains(err.Error(), "completed no checkpoint") {
				t.Fatalf("error %v (result %+v); want %s: no checkpoint after the restore", err, out, core.ErrTypeJobUnhealthy)
			}
		})
	}
}
