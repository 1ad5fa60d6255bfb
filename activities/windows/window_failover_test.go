package windows

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/internal/acttest"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// failoverFlink is a Flink cluster whose JobManager fails over during a
// stop: each call takes the next scripted answer of its kind.
type failoverFlink struct {
	core.FlinkAPI
	stops    []error
	statuses []statusAnswer
	details  []detailsAnswer
	overview []flink.JobOverview
	// stopCalls counts stop-with-savepoint requests; triggers are their
	// trigger IDs.
	stopCalls int
	triggers  []string
}

type statusAnswer struct {
	st  flink.OperationStatus
	err error
}

type detailsAnswer struct {
	d   flink.JobDetails
	err error
}

func next[T any](script *[]T) T {
	v := (*script)[0]
	if len(*script) > 1 {
		*script = (*script)[1:]
	}
	return v
}

func (f *failoverFlink) CheckpointConfig(context.Context, string) (flink.CheckpointConfig, error) {
	return flink.CheckpointConfig{StateBackend: "EmbeddedRocksDBStateBackend"}, nil
}

func (f *failoverFlink) StopWithSavepoint(_ context.Context, jobID string, req flink.StopRequest) (flink.Trigger, error) {
	f.stopCalls++
	f.triggers = append(f.triggers, req.TriggerID)
	if err := next(&f.stops); err != nil {
		return flink.Trigger{}, err
	}
	return flink.Trigger{JobID: jobID, TriggerID: req.TriggerID}, nil
}

func (f *failoverFlink) SavepointStatus(context.Context, string, string) (flink.OperationStatus, error) {
	a := next(&f.statuses)
	return a.st, a.err
}

func (f *failoverFlink) JobDetails(context.Context, string) (flink.JobDetails, error) {
	a := next(&f.details)
	return a.d, a.err
}

func (f *failoverFlink) ListJobs(context.Context) ([]flink.JobOverview, error) {
	return f.overview, nil
}

func (f *failoverFlink) Checkpoints(context.Context, string) (flink.CheckpointingStatistics, error) {
	return flink.CheckpointingStatistics{}, flink.NewError("checkpoints", flink.ErrorReasonJobNotFound, "FlinkJobNotFoundException", nil)
}

var (
	jmDown          = flink.NewError("savepoint status", flink.ErrorReasonUnavailable, "connection refused", nil)
	leaderElection  = flink.NewError("savepoint status", flink.ErrorReasonUnavailable, "503 leader election", nil)
	opUnknown       = flink.NewError("savepoint status", flink.ErrorReasonOperationNotFound, "unknown trigger", nil)
	jobUnknown      = flink.NewError("job details", flink.ErrorReasonJobNotFound, "FlinkJobNotFoundException", nil)
	stopCompleted   = statusAnswer{st: flink.OperationStatus{State: flink.OperationCompleted, Location: "hdfs://nn/sp/savepoint-j1abcd-2"}}
	stopInProgress  = statusAnswer{st: flink.OperationStatus{State: flink.OperationInProgress}}
	failoverJobID   = "j1abcd00000000000000000000000000"
	failoverTrigger = strings.Repeat("a", 32)
)

// A JobManager that dies during a stop and comes back with the job
// recovered RUNNING: the stop waits while nothing answers, then asks
// again under the same trigger ID, and takes the savepoint of that stop.
func TestStopWithSavepointRidesOutAJobManagerFailover(t *testing.T) {
	ff := &failoverFlink{
		stops:    []error{nil, jmDown, leaderElection, nil},
		statuses: []statusAnswer{stopInProgress, {err: jmDown}, {err: leaderElection}, {err: opUnknown}, stopInProgress, stopCompleted},
		details:  []detailsAnswer{{d: flink.JobDetails{State: flink.JobRunning}}},
	}
	a := &Activities{Flink: acttest.OneClient{C: ff}, PollInterval: time.Millisecond}
	var out core.StopWithSavepointResult
	err := acttest.Run(t, a, a.StopWithSavepoint, core.StopWithSavepointInput{
		Job: core.JobTarget{Key: "c/j", JobID: failoverJobID, SavepointDir: "hdfs://nn/sp"}, TriggerID: failoverTrigger}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if out.SavepointPath != "hdfs://nn/sp/savepoint-j1abcd-2" || ff.stopCalls != 4 {
		t.Fatalf("savepoint %q after %d stop requests; want the second stop's savepoint after 4 requests (2 unanswered)", out.SavepointPath, ff.stopCalls)
	}
}

// Flink unanswered for longer than a failover lasts fails the attempt
// retryably: the activity's retry policy takes over.
func TestStopWithSavepointGivesUpOnAClusterThatStaysDown(t *testing.T) {
	ff := &failoverFlink{stops: []error{nil}, statuses: []statusAnswer{{err: jmDown}}}
	a := &Activities{Flink: acttest.OneClient{C: ff}, PollInterval: time.Millisecond, FailoverWait: 20 * time.Millisecond}
	var out core.StopWithSavepointResult
	err := acttest.Run(t, a, a.StopWithSavepoint, core.StopWithSavepointInput{
		Job: core.JobTarget{Key: "c/j", JobID: failoverJobID, SavepointDir: "hdfs://nn/sp"}, TriggerID: failoverTrigger}, &out)
	if typ, nonRetryable := acttest.ErrType(t, err); typ != flink.ErrorReasonUnavailable || nonRetryable {
		t.Fatalf("error %v (type %s, non-retryable %v); want a retryable %s", err, typ, nonRetryable, flink.ErrorReasonUnavailable)
	}
}

// A job that finished with its savepoint just before its JobManager died
// is unknown to the new one: the stop finds the savepoint in its target
// directory, the newest complete one of that job written since the stop
// began, and nothing else.
func TestStopWithSavepointFindsTheSavepointOfAJobTheNewJobManagerForgot(t *testing.T) {
	cleaning := detailsAnswer{err: flink.NewError("job details", flink.ErrorReasonServerError, "Internal server error.; java.lang.NullPointerException", nil)}
	for name, c := range map[string]struct {
		details  detailsAnswer
		overview []flink.JobOverview
		dirs     map[string]time.Duration // savepoint dir -> age of its _metadata; <0: none
		want     string
	}{
		"job unknown": {detailsAnswer{err: jobUnknown}, nil, map[string]time.Duration{
			"savepoint-j1abcd-old": 3 * time.Hour, "savepoint-j1abcd-new": 0, "savepoint-j1abcd-cut": -1, "savepoint-ffffff-other": 0,
		}, "savepoint-j1abcd-new"},
		"job known FINISHED, checkpoints not": {detailsAnswer{d: flink.JobDetails{State: flink.JobFinished}}, nil, map[string]time.Duration{
			"savepoint-j1abcd-new": 0,
		}, "savepoint-j1abcd-new"},
		"job being cleaned up: details fail, overview says FINISHED": {cleaning, []flink.JobOverview{{ID: failoverJobID, State: flink.JobFinished}}, map[string]time.Duration{
			"savepoint-j1abcd-new": 0,
		}, "savepoint-j1abcd-new"},
		"only an older savepoint": {detailsAnswer{err: jobUnknown}, nil, map[string]time.Duration{
			"savepoint-j1abcd-old": 3 * time.Hour, "savepoint-j1abcd-cut": -1,
		}, ""},
		"no savepoint dir": {detailsAnswer{err: jobUnknown}, nil, nil, ""},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			target := filepath.Join(root, "sp")
			for dir, age := range c.dirs {
				if err := os.MkdirAll(filepath.Join(target, dir), 0o755); err != nil {
					t.Fatal(err)
				}
				if age < 0 {
					continue
				}
				md := filepath.Join(target, dir, "_metadata")
				if err := os.WriteFile(md, []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
				when := time.Now().Add(-age)
				if err := os.Chtimes(md, when, when); err != nil {
					t.Fatal(err)
				}
			}
			guard, err := storage.NewGuard("file://" + root)
			if err != nil {
				t.Fatal(err)
			}
			ff := &failoverFlink{stops: []error{nil}, statuses: []statusAnswer{stopInProgress, {err: jmDown}, {err: opUnknown}},
				details: []detailsAnswer{c.details}, overview: c.overview}
			a := &Activities{Flink: acttest.OneClient{C: ff}, Storage: &storage.Resolver{Guard: guard}, PollInterval: time.Millisecond}
			var out core.StopWithSavepointResult
			err = acttest.Run(t, a, a.StopWithSavepoint, core.StopWithSavepointInput{
				Job: core.JobTarget{Key: "c/j", JobID: failoverJobID, SavepointDir: "file://" + target}, TriggerID: failoverTrigger}, &out)
			if c.want == "" {
				typ, nonRetryable := acttest.ErrType(t, err)
				if typ != core.ErrTypeJobStoppedWithoutSavepoint || !nonRetryable || !strings.Contains(err.Error(), "savepoint-j1abcd-*") {
					t.Fatalf("error %v (type %s); want a non-retryable %s naming savepoint-j1abcd-*", err, typ, core.ErrTypeJobStoppedWithoutSavepoint)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := "file://" + filepath.Join(target, c.want); out.SavepointPath != want || out.Recovered == "" || ff.stopCalls != 1 {
				t.Fatalf("savepoint %q (recovered %q) after %d stops; want %s after 1", out.SavepointPath, out.Recovered, ff.stopCalls, want)
			}
		})
	}
}

// A job a JobManager has just recovered declines a savepoint until all of
// its tasks run; Flink keeps that failure under the trigger ID, so the
// stop is asked again under the next ID, the same on every attempt.
func TestStopWithSavepointAsksAgainWhileTasksDeploy(t *testing.T) {
	declined := statusAnswer{st: flink.OperationStatus{State: flink.OperationCompleted, Failure: &flink.FailureCause{
		StackTrace: "java.util.concurrent.CompletionException: org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint triggering task Source (1/1) " +
			"of job j1 is not being executed at the moment. Aborting checkpoint. Failure reason: Not all required tasks are currently running.",
	}}}
	ff := &failoverFlink{
		stops:    []error{nil},
		statuses: []statusAnswer{declined, declined, stopInProgress, stopCompleted},
		details:  []detailsAnswer{{d: flink.JobDetails{State: flink.JobRunning}}},
	}
	a := &Activities{Flink: acttest.OneClient{C: ff}, PollInterval: time.Millisecond}
	var out core.StopWithSavepointResult
	err := acttest.Run(t, a, a.StopWithSavepoint, core.StopWithSavepointInput{
		Job: core.JobTarget{Key: "c/j", JobID: failoverJobID, SavepointDir: "hdfs://nn/sp"}, TriggerID: failoverTrigger}, &out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{failoverTrigger, core.NextTriggerID(failoverTrigger, 1), core.NextTriggerID(failoverTrigger, 2)}
	if strings.Join(ff.triggers, ",") != strings.Join(want, ",") || out.SavepointPath != "hdfs://nn/sp/savepoint-j1abcd-2" || out.Recovered == "" {
		t.Fatalf("triggers %v, savepoint %q (%q); want triggers %v and the last stop's savepoint", ff.triggers, out.SavepointPath, out.Recovered, want)
	}
	if id := want[1]; len(id) != 32 || id == want[2] {
		t.Fatalf("derived trigger ID %q: want 32 hex characters, one per step", id)
	}
}

// A retried stop that Flink refuses because the job already finished
// (the first attempt stopped it, then the worker died) takes the savepoint
// that stop wrote, instead of failing the job as stopped without one.
func TestARetriedStopOfAFinishedJobTakesItsSavepoint(t *testing.T) {
	root := t.TempDir()
	target := filepath.Join(root, "sp")
	md := filepath.Join(target, "savepoint-j1abcd-new", "_metadata")
	if err := os.MkdirAll(filepath.Dir(md), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(md, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	guard, err := storage.NewGuard("file://" + root)
	if err != nil {
		t.Fatal(err)
	}
	gone := flink.NewError("stop", flink.ErrorReasonJobNotFound, "FlinkJobNotFoundException", nil)
	ff := &failoverFlink{stops: []error{gone}, details: []detailsAnswer{{err: jobUnknown}}}
	a := &Activities{Flink: acttest.OneClient{C: ff}, Storage: &storage.Resolver{Guard: guard}, PollInterval: time.Millisecond}
	var out core.StopWithSavepointResult
	err = acttest.Run(t, a, a.StopWithSavepoint, core.StopWithSavepointInput{
		Job: core.JobTarget{Key: "c/j", JobID: failoverJobID, SavepointDir: "file://" + target}, TriggerID: failoverTrigger}, &out)
	if err != nil || out.SavepointPath != "file://"+filepath.Dir(md) {
		t.Fatalf("savepoint %q, %v; want %s", out.SavepointPath, err, filepath.Dir(md))
	}
}

// Flink unanswered while the stop finds out whether a forgotten operation
// finished is waited out like any other failover moment: the stop then
// follows its operation to the savepoint.
func TestStopWithSavepointWaitsOutFlinkWhileAskingAboutAForgottenStop(t *testing.T) {
	ff := &failoverFlink{
		stops:    []error{nil},
		statuses: []statusAnswer{stopInProgress, {err: opUnknown}, stopCompleted},
		details:  []detailsAnswer{{err: jmDown}, {d: flink.JobDetails{State: flink.JobRunning}}},
	}
	a := &Activities{Flink: acttest.OneClient{C: ff}, PollInterval: time.Millisecond}
	var out core.StopWithSavepointResult
	err := acttest.Run(t, a, a.StopWithSavepoint, core.StopWithSavepointInput{
		Job: core.JobTarget{Key: "c/j", JobID: failoverJobID, SavepointDir: "hdfs://nn/sp"}, TriggerID: failoverTrigger}, &out)
	if err != nil || out.SavepointPath != "hdfs://nn/sp/savepoint-j1abcd-2" || ff.stopCalls != 1 {
		t.Fatalf("savepoint %q after %d stops, %v; want the stop's savepoint after 1", out.SavepointPath, ff.stopCalls, err)
	}
}

// Two savepoints of the job written at the same moment since the stop
// began: which one the job stopped with cannot be told, so neither is
// taken.
func TestAForgottenStopWithTwoSavepointsOfOneMomentIsRefused(t *testing.T) {
	root := t.TempDir()
	target := filepath.Join(root, "sp")
	when := time.Now().Truncate(time.Second)
	for _, dir := range []string{"savepoint-j1abcd-a", "savepoint-j1abcd-b"} {
		md := filepath.Join(target, dir, "_metadata")
		if err := os.MkdirAll(filepath.Dir(md), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(md, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(md, when, when); err != nil {
			t.Fatal(err)
		}
	}
	_, err := stopForgottenBy(t, root, target)
	if typ, nonRetryable := acttest.ErrType(t, err); typ != core.ErrTypeJobStoppedWithoutSavepoint || !nonRetryable || !strings.Contains(err.Error(), "at the same time") {
		t.Fatalf("error %v (type %s); want a non-retryable %s saying the two were written at the same time", err, typ, core.ErrTypeJobStoppedWithoutSavepoint)
	}
}

// Several savepoints of the job written since the stop began: the stop
// took the newest, wherever the directory lists it.
func TestAForgottenStopTakesTheNewestSavepointSinceItBegan(t *testing.T) {
	root := t.TempDir()
	target := filepath.Join(root, "sp")
	for _, dir := range []string{"savepoint-j1abcd-a", "savepoint-j1abcd-b", "savepoint-j1abcd-c"} {
		if err := os.MkdirAll(filepath.Join(target, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(target, dir, "_metadata"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The order the directory lists them in (not sorted): the first and
	// the last listed are older than the one in the middle.
	d, err := os.Open(target)
	if err != nil {
		t.Fatal(err)
	}
	listed, err := d.ReadDir(-1)
	d.Close()
	if err != nil || len(listed) != 3 {
		t.Fatalf("list %s: %v %v", target, listed, err)
	}
	for i, age := range []time.Duration{20 * time.Second, 0, 10 * time.Second} {
		when := time.Now().Add(-age)
		if err := os.Chtimes(filepath.Join(target, listed[i].Name(), "_metadata"), when, when); err != nil {
			t.Fatal(err)
		}
	}
	out, err := stopForgottenBy(t, root, target)
	if want := "file://" + filepath.Join(target, listed[1].Name()); err != nil || out.SavepointPath != want {
		t.Fatalf("savepoint %q, %v; want the newest, %s", out.SavepointPath, err, want)
	}
}

// stopForgottenBy stops the job with a JobManager that loses the stop
// operation and then no longer knows the job, so the stop must find its
// savepoint in target, a local dir under root.
func stopForgottenBy(t *testing.T, root, target string) (core.StopWithSavepointResult, error) {
	t.Helper()
	guard, err := storage.NewGuard("file://" + root)
	if err != nil {
		t.Fatal(err)
	}
	ff := &failoverFlink{stops: []error{nil}, statuses: []statusAnswer{stopInProgress, {err: opUnknown}}, details: []detailsAnswer{{err: jobUnknown}}}
	a := &Activities{Flink: acttest.OneClient{C: ff}, Storage: &storage.Resolver{Guard: guard}, PollInterval: time.Millisecond}
	var out core.StopWithSavepointResult
	err = acttest.Run(t, a, a.StopWithSavepoint, core.StopWithSavepointInput{
		Job: core.JobTarget{Key: "c/j", JobID: failoverJobID, SavepointDir: "file://" + target}, TriggerID: failoverTrigger}, &out)
	return out, err
}

// A stop of a job cancelled a moment before fails in Flink ("Could not
// find Flink job") while the job's details, served from Flink's cache,
// still say RUNNING: the jobs overview says CANCELED, and the error says
// the truth, that the job does not run, never that it keeps running (a
// window would then leave it down, believing it up).
func TestAStopOfAJustCancelledJobSaysItIsNotRunning(t *testing.T) {
	gone := statusAnswer{st: flink.OperationStatus{State: flink.OperationCompleted, Failure: &flink.FailureCause{
		StackTrace: "java.util.concurrent.CompletionException: org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job (" + failoverJobID + ")"}}}
	ff := &failoverFlink{stops: []error{nil}, statuses: []statusAnswer{gone},
		details:  []detailsAnswer{{d: flink.JobDetails{ID: failoverJobID, State: flink.JobRunning}}},
		overview: []flink.JobOverview{{ID: failoverJobID, State: flink.JobCanceled}}}
	a := &Activities{Flink: acttest.OneClient{C: ff}, PollInterval: time.Millisecond}
	var out core.StopWithSavepointResult
	err := acttest.Run(t, a, a.StopWithSavepoint, core.StopWithSavepointInput{
		Job: core.JobTarget{Key: "c/j", JobID: failoverJobID, SavepointDir: "file:///sp"}, TriggerID: failoverTrigger}, &out)
	typ, nonRetryable := acttest.ErrType(t, err)
	if typ != core.ErrTypeJobStoppedWithoutSavepoint || !nonRetryable || !strings.Contains(err.Error(), "CANCELED, not running") || strings.Contains(err.Error(), "keeps running") {
		t.Fatalf("error %v (type %s); want a non-retryable %s saying the job is CANCELED, not running", err, typ, core.ErrTypeJobStoppedWithoutSavepoint)
	}
}
