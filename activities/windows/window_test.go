package windows

import (
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/internal/acttest"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

func TestMatchJobs(t *testing.T) {
	cluster := inventory.Cluster{ClusterID: "c1", Tenant: "t1", Jobs: []inventory.JobSpec{
		{Name: "orders", Restart: inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun}},
		{Name: "dup", Restart: inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun}},
		{Name: "restarting", Restart: inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun}},
		{Name: "backfill", Restart: inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun}},
	}}
	jobs := []flink.JobOverview{
		{ID: "1", Name: "orders", State: flink.JobRunning},
		{ID: "2", Name: "dup", State: flink.JobRunning},
		{ID: "3", Name: "dup", State: flink.JobRunning},
		{ID: "4", Name: "no-recipe", State: flink.JobRunning},
		{ID: "5", Name: "restarting", State: flink.JobRestarting},
		{ID: "6", Name: "orders", State: flink.JobFinished},
		{ID: "7", Name: "backfill", State: flink.JobRunning},
	}
	targets, skipped := core.MatchJobs(cluster, jobs, core.Scope{ExcludeJobs: []string{"back*"}}, true)
	if len(targets) != 1 || targets[0].JobID != "1" || targets[0].Key != "c1/orders" || targets[0].Tenant != "t1" {
		t.Fatalf("targets %+v, want only c1/orders (job 1)", targets)
	}
	reasons := map[string]string{}
	for _, s := range skipped {
		reasons[s.JobID] = s.Reason
	}
	for id, want := range map[string]string{"2": "2 jobs named", "3": "2 jobs named", "4": "no restart recipe", "5": "not RUNNING"} {
		if !strings.Contains(reasons[id], want) {
			t.Errorf("job %s skipped with %q, want it to mention %q", id, reasons[id], want)
		}
	}
	if _, ok := reasons["6"]; ok {
		t.Error("a finished job was reported; it is not part of the fleet")
	}
	if _, ok := reasons["7"]; ok {
		t.Error("an excluded job was reported as skipped")
	}
	targets, _ = core.MatchJobs(cluster, jobs, core.Scope{IncludeJobs: []string{"ord*"}}, true)
	if len(targets) != 1 || targets[0].JobName != "orders" {
		t.Fatalf("include filter: %+v", targets)
	}
	// A savepoint that leaves the job running needs no recipe; duplicate
	// names and unclear states are still left alone.
	targets, skipped = core.MatchJobs(cluster, jobs, core.Scope{ExcludeJobs: []string{"back*"}}, false)
	var keys []string
	for _, tg := range targets {
		keys = append(keys, tg.Key)
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != "c1/no-recipe,c1/orders" || len(skipped) != 3 {
		t.Fatalf("without recipes: targets %v, skipped %+v; want c1/no-recipe and c1/orders, 3 skipped", keys, skipped)
	}
}

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

func TestJobAfterFailedStop(t *testing.T) {
	for errType, want := range map[string]string{
		core.ErrTypeJobStoppedWithoutSavepoint: core.JobSeenStopped,
		core.ErrTypeOperatorLastStateFallback:  core.JobSeenStopped,
		flink.ErrorReasonUnavailable:           core.JobSeenUnanswered,
		flink.ErrorReasonTimeout:               core.JobSeenUnanswered,
		core.ErrTypeOperatorUnavailable:        core.JobSeenUnanswered,
		flink.ErrorReasonStorageQuotaExceeded:  core.JobSeenRunning,
		flink.ErrorReasonCheckpointingDisabled: core.JobSeenRunning,
		core.ErrTypeInvalidInput:               core.JobSeenRunning,
		flink.ErrorReasonOperationFailed:       core.JobSeenUnknown,
		flink.ErrorReasonServerError:           core.JobSeenUnknown,
		core.ErrTypeOperatorTimeout:            core.JobSeenUnknown,
		"wrapError":                            core.JobSeenUnknown,
	} {
		if got := core.JobAfterFailedStop(errType); got != want {
			t.Errorf("%s: %s, want %s", errType, got, want)
		}
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

func TestSamePathTreatsFlinksLocalFormAsEqual(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"hdfs://nn:8020/sp/savepoint-1", "hdfs://nn:8020/sp/savepoint-1/", true},
		{"file:/data/sp/savepoint-1", "file:///data/sp/savepoint-1", true},
		{"file:///data/sp/savepoint-1/", "file:/data/sp/savepoint-1", true},
		{"hdfs://nn/sp/savepoint-1", "hdfs://nn:8020/sp/savepoint-1", false},
		{"/data/sp/savepoint-1", "file:/data/sp/savepoint-1", false},
		{"file:/data/sp/savepoint-1", "file:/data/sp/savepoint-2", false},
	} {
		if got := core.SamePath(c.a, c.b); got != c.same {
			t.Errorf("samePath(%q, %q) = %v; want %v", c.a, c.b, got, c.same)
		}
	}
}

// A savepoint's status is asked for again after a fifth of the time it has
// taken so far, within a minimum (a fifth of a poll interval unless set)
// and one interval.
func TestOperationPollDelay(t *testing.T) {
	for _, tc := range []struct {
		interval, least, elapsed, want time.Duration
	}{
		{0, 0, 0, 200 * time.Millisecond}, // the default interval, 1 s
		{0, 0, 500 * time.Millisecond, 200 * time.Millisecond},
		{0, 0, 2 * time.Second, 400 * time.Millisecond},
		{0, 0, 5 * time.Second, time.Second},
		{0, 0, time.Hour, time.Second},
		{10 * time.Second, 0, 20 * time.Second, 4 * time.Second},
		{10 * time.Second, 0, 0, 2 * time.Second},
		// A set minimum replaces the fifth of an interval, never above it.
		{3 * time.Second, 3 * time.Second, 0, 3 * time.Second},
		{3 * time.Second, 3 * time.Second, time.Minute, 3 * time.Second},
		{10 * time.Second, 5 * time.Second, 40 * time.Second, 8 * time.Second},
		{time.Second, 5 * time.Second, 0, time.Second},
	} {
		a := &Activities{PollInterval: tc.interval, OperationPollMin: tc.least}
		if got := a.jobs().OperationPollDelay(tc.elapsed); got != tc.want {
			t.Errorf("interval %v, minimum %v, elapsed %v: delay %v, want %v", tc.interval, tc.least, tc.elapsed, got, tc.want)
		}
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
