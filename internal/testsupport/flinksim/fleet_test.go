package flinksim

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/checkpoint"
	"github.com/flinkmaint/flinkmaint/internal/flink"
)

const (
	testSavepointDelay  = 150 * time.Millisecond
	testCheckpointDelay = 100 * time.Millisecond
)

type env struct {
	fleet  *Fleet
	url    string
	client *flink.Client
	ckDir  string // local checkpoint base dir
	spDir  string // local savepoint dir
}

func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	if opts.SavepointDelay == 0 {
		opts.SavepointDelay = testSavepointDelay
	}
	if opts.CheckpointDelay == 0 {
		opts.CheckpointDelay = testCheckpointDelay
	}
	f, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	root := t.TempDir()
	e := &env{fleet: f, ckDir: filepath.Join(root, "checkpoints"), spDir: filepath.Join(root, "savepoints")}
	// file:/// for the checkpoint dir and a plain path for the savepoints:
	// both forms occur in real configurations.
	e.url, err = f.AddClusterWith("team-a.session-1", ClusterConfig{CheckpointDir: "file://" + e.ckDir})
	if err != nil {
		t.Fatal(err)
	}
	e.client = newClient(t, e.url)
	return e
}

func newClient(t *testing.T, url string) *flink.Client {
	t.Helper()
	c, err := flink.New(flink.Options{BaseURL: url, PollInterval: 10 * time.Millisecond, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitCheckpoint polls until the job reports a completed checkpoint newer
// than after.
func waitCheckpoint(t *testing.T, ctx context.Context, c *flink.Client, jobID string, after int64) flink.CheckpointingStatistics {
	t.Helper()
	for {
		st, err := c.Checkpoints(ctx, jobID)
		if err != nil {
			t.Fatalf("checkpoints of %s: %v", jobID, err)
		}
		if l := st.Latest.Completed; l != nil && l.ID > after {
			return st
		}
		select {
		case <-ctx.Done():
			t.Fatalf("job %s: no checkpoint after %d: %+v", jobID, after, st)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(data)
}

func mustParse(t *testing.T, location string) *checkpoint.Metadata {
	t.Helper()
	dir, err := snapshotDir(location)
	if err != nil || dir.local == "" {
		t.Fatalf("location %s is not local: %v", location, err)
	}
	data, err := os.ReadFile(filepath.Join(dir.local, "_metadata"))
	if err != nil {
		t.Fatalf("read _metadata of %s: %v", location, err)
	}
	md, err := checkpoint.ParseBytes(data, location+"/_metadata")
	if err != nil {
		t.Fatalf("parse _metadata of %s: %v", location, err)
	}
	return md
}

func TestStopRestoreCancel(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := testContext(t)
	c := e.client

	jobID := e.fleet.AddJob("team-a.session-1", "orders", "")
	e.fleet.AddJob("team-a.session-1", "payments", "")

	if v, err := c.DashboardConfig(ctx); err != nil || !strings.HasPrefix(v.FlinkVersion, "1.20.") {
		t.Fatalf("dashboard config = %+v, %v; want Flink 1.20.x", v, err)
	}
	if ov, err := c.ClusterOverview(ctx); err != nil || ov.JobsRunning != 2 || ov.SlotsTotal < 2 {
		t.Fatalf("cluster overview = %+v, %v; want 2 running jobs", ov, err)
	}
	jobs, err := c.ListJobs(ctx)
	if err != nil || len(jobs) != 2 || jobs[0].ID != jobID || jobs[0].Name != "orders" || jobs[0].State != flink.JobRunning {
		t.Fatalf("jobs = %+v, %v; want orders and payments RUNNING", jobs, err)
	}
	d, err := c.JobDetails(ctx, jobID)
	if err != nil || d.State != flink.JobRunning || len(d.Vertices) == 0 || d.Timestamps[flink.JobRunning] == 0 {
		t.Fatalf("details = %+v, %v", d, err)
	}

	// The first checkpoint arrives after CheckpointDelay and is on disk.
	stats := waitCheckpoint(t, ctx, c, jobID, 0)
	chk := stats.Latest.Completed
	wantChk := "file:" + filepath.ToSlash(e.ckDir) + "/" + jobID + "/chk-"
	if !strings.HasPrefix(chk.ExternalPath, wantChk) || chk.IsSavepoint || stats.Latest.Restored != nil {
		t.Fatalf("latest checkpoint %+v (restored %+v); want a checkpoint under %s", chk, stats.Latest.Restored, wantChk)
	}
	if md := mustParse(t, chk.ExternalPath); md.CheckpointID != chk.ID || md.Properties.SnapshotType != "checkpoint" {
		t.Fatalf("checkpoint _metadata: id %d, %+v; want id %d, a checkpoint", md.CheckpointID, md.Properties, chk.ID)
	}
	if cd, err := c.CheckpointDetails(ctx, jobID, chk.ID); err != nil || cd.ExternalPath != chk.ExternalPath {
		t.Errorf("checkpoint details = %+v, %v", cd, err)
	}
	if _, err := c.CheckpointDetails(ctx, jobID, chk.ID+1000); !errors.Is(err, flink.ErrOperationNotFound) {
		t.Errorf("details of an unknown checkpoint: %v; want %s", err, flink.ErrorReasonOperationNotFound)
	}
	if cc, err := c.CheckpointConfig(ctx, jobID); err != nil || !cc.Externalization.Enabled || cc.Interval != DefaultCheckpointInterval.Milliseconds() {
		t.Errorf("checkpoint config = %+v, %v", cc, err)
	}
	if cfg, err := c.JobConfig(ctx, jobID); err != nil {
		t.Errorf("job config: %v", err)
	} else if dir, _ := cfg.Get(flink.KeysCheckpointDir...); dir != "file:"+filepath.ToSlash(e.ckDir) {
		t.Errorf("job config checkpoint dir %q, want file:%s", dir, e.ckDir)
	}
	if ex, err := c.JobExceptions(ctx, jobID, 0); err != nil || len(ex.History.Entries) != 0 {
		t.Errorf("exceptions of a healthy job = %+v, %v", ex, err)
	}
	for _, sub := range []string{"shared", "taskowned"} {
		if fi, err := os.Stat(filepath.Join(e.ckDir, jobID, sub)); err != nil || !fi.IsDir() {
			t.Errorf("job dir has no %s/: %v", sub, err)
		}
	}

	// Stop with a savepoint; the same trigger ID again is the same operation.
	stop := flink.StopRequest{TargetDirectory: e.spDir, TriggerID: flink.NewTriggerID()}
	tr, err := c.StopWithSavepoint(ctx, jobID, stop)
	if err != nil || tr.Reattached {
		t.Fatalf("stop = %+v, %v; want a new operation", tr, err)
	}
	if st, err := c.SavepointStatus(ctx, jobID, tr.TriggerID); err != nil || st.Done() {
		t.Fatalf("status right after the trigger = %+v, %v; want IN_PROGRESS", st, err)
	}
	if again, err := c.StopWithSavepoint(ctx, jobID, stop); err != nil || !again.Reattached {
		t.Fatalf("repeated stop = %+v, %v; want reattached", again, err)
	}
	// The client re-attached without posting; a POST that repeats the
	// trigger ID (a retry after a lost response) gets the same operation.
	status, body := post(t, e.url+"/jobs/"+jobID+"/stop", `{"targetDirectory":"`+e.spDir+`","triggerId":"`+stop.TriggerID+`"}`)
	if status != http.StatusAccepted || body != `{"request-id":"`+stop.TriggerID+`"}` {
		t.Fatalf("repeated POST /stop = %d %s; want 202 with the same request-id", status, body)
	}
	loc, err := c.AwaitSavepoint(ctx, jobID, tr.TriggerID)
	if err != nil {
		t.Fatalf("await stop: %v", err)
	}
	wantLoc := regexp.MustCompile("^file:" + regexp.QuoteMeta(filepath.ToSlash(e.spDir)) + "/savepoint-" + jobID[:6] + "-[0-9a-f]{12}$")
	if !wantLoc.MatchString(loc) {
		t.Fatalf("savepoint location %s, want %s", loc, wantLoc)
	}
	if again, err := c.AwaitSavepoint(ctx, jobID, tr.TriggerID); err != nil || again != loc {
		t.Fatalf("re-awaited stop = %s, %v; want %s", again, err, loc)
	}
	if entries, err := os.ReadDir(e.spDir); err != nil || len(entries) != 1 {
		t.Fatalf("savepoint dir holds %d entries (%v); want exactly one savepoint", len(entries), err)
	}
	md := mustParse(t, loc)
	if md.CheckpointID <= chk.ID || md.Properties.SnapshotType != "savepoint" || md.Properties.PostCheckpointAction != "SUSPEND" {
		t.Fatalf("savepoint _metadata: id %d, %+v; want a suspend savepoint newer than checkpoint %d", md.CheckpointID, md.Properties, chk.ID)
	}
	if st, err := c.JobState(ctx, jobID); err != nil || st != flink.JobFinished {
		t.Fatalf("stopped job is %s, %v; want FINISHED", st, err)
	}
	if _, err := os.Stat(filepath.Join(e.ckDir, jobID, "chk-"+strconv.FormatInt(chk.ID, 10))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a finished job keeps its checkpoint dir: %v", err)
	}
	st, err := c.Checkpoints(ctx, jobID)
	if err != nil || st.Latest.Savepoint == nil || st.Latest.Savepoint.ExternalPath != loc || st.Latest.Savepoint.CheckpointType != "SYNC_SAVEPOINT" {
		t.Fatalf("stats of the stopped job = %+v, %v; want the savepoint as latest", st.Latest.Savepoint, err)
	}
	info, _ := e.fleet.Job("team-a.session-1", jobID)
	if info.Stops != 1 || info.StopTriggers != 1 || info.StopRequests != 2 || len(info.Savepoints) != 1 || info.Savepoints[0] != loc {
		t.Fatalf("job info = %+v; want one stop from two requests", info)
	}

	// A second stop with a new trigger ID: the job is not running.
	tr2, err := c.StopWithSavepoint(ctx, jobID, flink.StopRequest{TargetDirectory: e.spDir})
	if err == nil {
		_, err = c.AwaitSavepoint(ctx, jobID, tr2.TriggerID)
	}
	if !errors.Is(err, flink.ErrJobNotRunning) || flink.IsRetryable(err) {
		t.Fatalf("stop of a finished job: %v; want non-retryable %s", err, flink.ErrorReasonJobNotRunning)
	}

	// Restore from the savepoint with a fixed job ID.
	jarID, err := c.UploadJarBytes(ctx, "sample-job.jar", []byte("PK\x03\x04 not really a jar"))
	if err != nil || !strings.HasSuffix(jarID, "_sample-job.jar") {
		t.Fatalf("upload = %q, %v", jarID, err)
	}
	if jars, err := c.ListJars(ctx); err != nil || len(jars.Files) != 1 || jars.Files[0].ID != jarID || jars.Files[0].Name != "sample-job.jar" {
		t.Fatalf("jars = %+v, %v", jars, err)
	}
	newID := flink.NewTriggerID()
	run := flink.RunJarRequest{JobID: newID, SavepointPath: loc, RestoreMode: flink.RestoreNoClaim, Parallelism: 2,
		EntryClass: "io.github.flinkmaint.sandbox.job.StatefulSampleJob", ProgramArgs: []string{"--job-name", "orders", "--keys", "10"}}
	if res, err := c.RunJar(ctx, jarID, run); err != nil || res.JobID != newID || res.Reattached {
		t.Fatalf("run = %+v, %v; want new job %s", res, err, newID)
	}
	if res, err := c.RunJar(ctx, jarID, run); err != nil || res.JobID != newID || !res.Reattached {
		t.Fatalf("repeated run = %+v, %v; want reattached to %s", res, err, newID)
	}
	restored := waitCheckpoint(t, ctx, c, newID, md.CheckpointID)
	r := restored.Latest.Restored
	if r == nil || r.ExternalPath != loc || !r.IsSavepoint || r.ID != md.CheckpointID || r.RestoreTime().IsZero() || restored.Counts.Restored != 1 {
		t.Fatalf("latest.restored = %+v (counts %+v); want savepoint %d at %s", r, restored.Counts, md.CheckpointID, loc)
	}
	newChk := restored.Latest.Completed
	if !strings.HasPrefix(newChk.ExternalPath, "file:"+filepath.ToSlash(e.ckDir)+"/"+newID+"/chk-") {
		t.Fatalf("restored job checkpoint at %s, want under its own job dir", newChk.ExternalPath)
	}
	if md := mustParse(t, newChk.ExternalPath); md.CheckpointID != newChk.ID {
		t.Fatalf("restored job checkpoint _metadata id %d, want %d", md.CheckpointID, newChk.ID)
	}
	info, _ = e.fleet.Job("team-a.session-1", newID)
	if info.Name != "orders" || info.Submissions != 2 || info.RestoredFrom != loc || info.RestoreMode != "NO_CLAIM" || info.State != "RUNNING" {
		t.Fatalf("restored job info = %+v", info)
	}
	if err := c.DeleteJar(ctx, jarID); err != nil {
		t.Fatalf("delete jar: %v", err)
	}
	if err := c.DeleteJar(ctx, jarID); !errors.Is(err, flink.ErrJarNotFound) {
		t.Fatalf("second delete of a jar: %v; want %s", err, flink.ErrorReasonJarNotFound)
	}
	if _, err := c.RunJar(ctx, jarID, flink.RunJarRequest{}); !errors.Is(err, flink.ErrJarNotFound) {
		t.Fatalf("run of a deleted jar: %v; want %s", err, flink.ErrorReasonJarNotFound)
	}

	// Cancel, twice; cancelling the finished job is refused.
	if err := c.CancelJob(ctx, newID); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if st, err := c.JobState(ctx, newID); err != nil || st != flink.JobCanceled {
		t.Fatalf("cancelled job is %s, %v", st, err)
	}
	if err := c.CancelJob(ctx, newID); err != nil {
		t.Fatalf("second cancel: %v", err)
	}
	if err := c.CancelJob(ctx, jobID); !errors.Is(err, flink.ErrJobNotRunning) {
		t.Fatalf("cancel of a finished job: %v; want %s", err, flink.ErrorReasonJobNotRunning)
	}
	// A cancelled job keeps its retained checkpoint.
	if _, err := os.Stat(filepath.Join(e.ckDir, newID, "chk-"+strconv.FormatInt(newChk.ID, 10), "_metadata")); err != nil {
		t.Errorf("retained checkpoint of the cancelled job: %v", err)
	}
}

func TestErrorsLikeFlink(t *testing.T) {
	e := newEnv(t, Options{})
	ctx := testContext(t)
	c := e.client
	unknown := flink.NewTriggerID()
	for name, err := range map[string]error{
		"details": func() error { _, err := c.JobDetails(ctx, unknown); return err }(),
		"status":  func() error { _, err := c.JobState(ctx, unknown); return err }(),
		"stats":   func() error { _, err := c.Checkpoints(ctx, unknown); return err }(),
		"cancel":  c.CancelJob(ctx, unknown),
		"stop": func() error {
			tr, err := c.StopWithSavepoint(ctx, unknown, flink.StopRequest{TargetDirectory: e.spDir})
			if err == nil {
				_, err = c.AwaitSavepoint(ctx, unknown, tr.TriggerID)
			}
			return err
		}(),
	} {
		if !errors.Is(err, flink.ErrJobNotFound) || flink.IsRetryable(err) {
			t.Errorf("%s of an unknown job: %v; want non-retryable %s", name, err, flink.ErrorReasonJobNotFound)
		}
	}
	if _, err := c.SavepointStatus(ctx, unknown, flink.NewTriggerID()); !errors.Is(err, flink.ErrOperationNotFound) {
		t.Errorf("status of an unknown trigger: %v; want %s", err, flink.ErrorReasonOperationNotFound)
	}
	bad := newClient(t, e.fleet.URL()+"/no-such-cluster")
	if _, err := bad.ListJobs(ctx); !errors.Is(err, flink.ErrEndpointNotFound) {
		t.Errorf("unknown cluster prefix: %v; want %s", err, flink.ErrorReasonEndpointNotFound)
	}

	jobID := e.fleet.AddJob("team-a.session-1", "orders", "")
	// A target on a file system the cluster has no plugin for fails the
	// savepoint; the job keeps running.
	tr, err := c.StopWithSavepoint(ctx, jobID, flink.StopRequest{TargetDirectory: "hdfs://nn:8020/savepoints"})
	if err == nil {
		_, err = c.AwaitSavepoint(ctx, jobID, tr.TriggerID)
	}
	if !errors.Is(err, flink.ErrInvalidTargetDirectory) {
		t.Errorf("stop to hdfs://: %v; want %s", err, flink.ErrorReasonInvalidTargetDirectory)
	}
	// An unwritable target fails the savepoint with the file system's error.
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err = c.StopWithSavepoint(ctx, jobID, flink.StopRequest{TargetDirectory: blocker + "/savepoints"})
	if err == nil {
		_, err = c.AwaitSavepoint(ctx, jobID, tr.TriggerID)
	}
	if err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("stop to a path under a file: %v; want the file system error", err)
	}
	if st, err := c.JobState(ctx, jobID); err != nil || st != flink.JobRunning {
		t.Fatalf("job after failed stops is %s, %v; want RUNNING", st, err)
	}
	// No target and no cluster default.
	if _, err := c.StopWithSavepoint(ctx, jobID, flink.StopRequest{}); !errors.Is(err, flink.ErrInvalidTargetDirectory) {
		t.Errorf("stop without a target: %v; want %s", err, flink.ErrorReasonInvalidTargetDirectory)
	}

	jarID, err := c.UploadJarBytes(ctx, "sample-job.jar", []byte("jar"))
	if err != nil {
		t.Fatal(err)
	}
	// A restore from a savepoint that does not exist: Flink accepts the
	// submission and the job fails at start.
	missing := flink.NewTriggerID()
	if _, err := c.RunJar(ctx, jarID, flink.RunJarRequest{JobID: missing, SavepointPath: "file://" + e.spDir + "/savepoint-000000-000000000000"}); err != nil {
		t.Fatalf("run from a missing savepoint: %v", err)
	}
	if st, err := c.JobState(ctx, missing); err != nil || st != flink.JobFailed {
		t.Fatalf("job restored from nothing is %s, %v; want FAILED", st, err)
	}
	if ex, err := c.JobExceptions(ctx, missing, 5); err != nil || len(ex.History.Entries) != 1 ||
		!strings.Contains(ex.History.Entries[0].Stacktrace, "Cannot find meta data file") {
		t.Fatalf("exceptions = %+v, %v; want the missing _metadata", ex, err)
	}

	// --fail-on-restore: the restored job keeps failing and restarting.
	tr, err = c.StopWithSavepoint(ctx, jobID, flink.StopRequest{TargetDirectory: e.spDir})
	if err != nil {
		t.Fatal(err)
	}
	loc, err := c.AwaitSavepoint(ctx, jobID, tr.TriggerID)
	if err != nil {
		t.Fatal(err)
	}
	failing := flink.NewTriggerID()
	if _, err := c.RunJar(ctx, jarID, flink.RunJarRequest{JobID: failing, SavepointPath: loc, ProgramArgs: []string{"--fail-on-restore"}}); err != nil {
		t.Fatal(err)
	}
	if d, err := c.JobDetails(ctx, failing); err != nil || d.State != flink.JobRestarting || d.Name != defaultJobName {
		t.Fatalf("failing job = %s %q, %v; want RESTARTING %s", d.State, d.Name, err, defaultJobName)
	}
	if ex, err := c.JobExceptions(ctx, failing, 1); err != nil || len(ex.History.Entries) != 1 ||
		ex.History.Entries[0].ExceptionName != "java.lang.IllegalStateException" {
		t.Fatalf("exceptions of the failing job = %+v, %v", ex, err)
	}
	tr, err = c.StopWithSavepoint(ctx, failing, flink.StopRequest{TargetDirectory: e.spDir})
	if err == nil {
		_, err = c.AwaitSavepoint(ctx, failing, tr.TriggerID)
	}
	if !errors.Is(err, flink.ErrTasksNotReady) {
		t.Errorf("stop of a restarting job: %v; want %s", err, flink.ErrorReasonTasksNotReady)
	}
}

func TestRawRequests(t *testing.T) {
	e := newEnv(t, Options{})
	jobID := e.fleet.AddJob("team-a.session-1", "orders", "")
	do := func(method, path, body string) (int, string) {
		req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	cases := map[string]struct {
		method, path, body string
		status             int
		contains           string
	}{
		"v1 prefix":             {"GET", "/v1/jobs/overview", "", 200, `"name":"orders"`},
		"unknown path":          {"GET", "/jobs/overview/x", "", 404, `{"errors":["Not found: /team-a.session-1/jobs/overview/x"]}`},
		"wrong method":          {"DELETE", "/jobs/" + jobID, "", 404, "Not found"},
		"bad job ID":            {"GET", "/jobs/XYZ", "", 400, "jobid"},
		"unknown body field":    {"POST", "/jobs/" + jobID + "/stop", `{"target-directory":"/tmp/x"}`, 400, "StopWithSavepointRequestBody"},
		"bad trigger ID":        {"POST", "/jobs/" + jobID + "/stop", `{"targetDirectory":"/tmp/x","triggerId":"1"}`, 400, "StopWithSavepointRequestBody"},
		"bad format type":       {"POST", "/jobs/" + jobID + "/savepoints", `{"target-directory":"/tmp/x","formatType":"X"}`, 400, "SavepointTriggerRequestBody"},
		"bad cancel mode":       {"PATCH", "/jobs/" + jobID + "?mode=explode", "", 400, "mode"},
		"upload without a file": {"POST", "/jars/upload", "", 400, "Exactly 1 file"},
		"run of an unknown jar": {"POST", "/jars/x.jar/run", "{}", 400, "does not exist"},
		"jobs list":             {"GET", "/jobs", "", 200, `{"jobs":[{"id":"` + jobID + `","status":"RUNNING"}]}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			status, body := do(tc.method, tc.path, tc.body)
			if status != tc.status || !strings.Contains(body, tc.contains) {
				t.Errorf("%s %s = %d %s; want %d with %q", tc.method, tc.path, status, body, tc.status, tc.contains)
			}
		})
	}
}

func TestFleetAPI(t *testing.T) {
	f, err := Start(Options{CheckpointDelay: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	ctx := testContext(t)
	root := t.TempDir()

	u := f.AddCluster("plain")
	if again := f.AddCluster("plain"); again != u || u != f.URL()+"/plain" {
		t.Fatalf("AddCluster twice = %s, %s; want %s/plain both times", u, again, f.URL())
	}
	if _, err := f.AddClusterWith("plain", ClusterConfig{SavepointDir: root}); err == nil {
		t.Error("re-adding a cluster with another configuration: no error")
	}
	if _, err := f.AddClusterWith("bad", ClusterConfig{CheckpointDir: "relative/dir"}); err == nil {
		t.Error("relative checkpoint dir: no error")
	}

	// An ID that is not a plain path segment still gets a working URL.
	odd := f.AddCluster("team a/cluster?1")
	c := newClient(t, odd)
	jobID := f.AddJob("team a/cluster?1", "orders", "file://"+root+"/ck")
	if jobs, err := c.ListJobs(ctx); err != nil || len(jobs) != 1 || jobs[0].ID != jobID {
		t.Fatalf("jobs of %s = %+v, %v", odd, jobs, err)
	}
	// The cluster adopted the job's checkpoint dir: a job run through REST
	// checkpoints there too.
	jarID, err := c.UploadJarBytes(ctx, "job.jar", []byte("jar"))
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.RunJar(ctx, jarID, flink.RunJarRequest{ProgramArgs: []string{"--job-name", "other"}})
	if err != nil {
		t.Fatal(err)
	}
	st := waitCheckpoint(t, ctx, c, run.JobID, 0)
	if want := "file:" + filepath.ToSlash(root) + "/ck/" + run.JobID + "/chk-"; !strings.HasPrefix(st.Latest.Completed.ExternalPath, want) {
		t.Errorf("REST-run job checkpoints at %s, want under %s", st.Latest.Completed.ExternalPath, want)
	}

	// AddJob on an unknown cluster adds it; a bad dir is reported.
	id := f.AddJob("new", "x", "not/absolute")
	info, ok := f.Job("new", id)
	if !ok || info.State != "RUNNING" || info.CheckpointDir != "" || !strings.Contains(info.DiskError, "not/absolute") {
		t.Errorf("job with a bad checkpoint dir = %+v, %v", info, ok)
	}
	if jobs := f.Jobs("none"); jobs != nil {
		t.Errorf("jobs of an unknown cluster = %+v", jobs)
	}
	f.Close()
	f.Close() // idempotent
}
