//go:build realpeers

package flink

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// These tests run against the real Flink clusters and HDFS of the
// sandbox (sandbox/java/run.sh up), each on every Flink line the sandbox
// runs (1.20 and 2.3): the client is proven on the real servers, not only
// on their OpenAPI specs. A missing sandbox fails them.

// onEachLine runs test once per Flink line of the sandbox, as a subtest
// named after the line.
func onEachLine(t *testing.T, test func(t *testing.T, line string)) {
	t.Helper()
	for _, line := range sandbox.Lines() {
		t.Run("flink-"+line, func(t *testing.T) { test(t, line) })
	}
}

type itEnv struct {
	peers   *sandbox.Peers
	cluster sandbox.FlinkCluster
	client  *Client
	// root is this test's own HDFS directory (absolute path), rootURI the
	// same as an hdfs:// URI.
	root, rootURI string
}

func newITEnv(t *testing.T, line string) *itEnv {
	t.Helper()
	p := sandbox.RequirePeersLine(t, line)
	cl := p.Clusters[0]
	c, err := New(Options{BaseURL: cl.RESTURL, RequestTimeout: 20 * time.Second, PollInterval: 300 * time.Millisecond})
	if err != nil {
		t.Fatalf("client for %s: %v", cl.RESTURL, err)
	}
	tenantRoot := ""
	for _, tn := range p.Tenants {
		if tn.Name == cl.Tenant {
			tenantRoot = tn.Root
		}
	}
	if tenantRoot == "" {
		t.Fatalf("cluster %s: tenant %q not in peers.Tenants", cl.ClusterID, cl.Tenant)
	}
	root := fmt.Sprintf("%s/flink-client-it/%s-%s", tenantRoot, strings.ReplaceAll(strings.ToLower(t.Name()), "/", "-"), NewTriggerID()[:8])
	// Registered first, so it runs last: after the jobs are cancelled.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := p.HadoopShell(ctx, "-rm", "-r", "-f", "-skipTrash", root); err != nil {
			t.Errorf("cleanup: remove %s: %v %s", root, err, out)
		}
	})
	return &itEnv{peers: p, cluster: cl, client: c, root: root, rootURI: p.HDFS.URI + root}
}

func itContext(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func (e *itEnv) uploadSampleJar(t *testing.T, ctx context.Context) string {
	t.Helper()
	jarID, err := e.client.UploadJar(ctx, e.peers.SampleJob.Jar)
	if err != nil {
		t.Fatalf("upload %s: %v", e.peers.SampleJob.Jar, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.client.DeleteJar(ctx, jarID); err != nil {
			t.Errorf("cleanup: delete jar %s: %v", jarID, err)
		}
	})
	return jarID
}

// runSample submits the sample job and cancels it when the test ends.
func (e *itEnv) runSample(t *testing.T, ctx context.Context, jarID, name string, req RunJarRequest) RunJarResult {
	t.Helper()
	req.EntryClass = e.peers.SampleJob.EntryClass
	req.ProgramArgs = []string{"--keys", "200", "--value-bytes", "256", "--rate", "200",
		"--checkpoint-dir", e.rootURI + "/checkpoints", "--job-name", name}
	req.Parallelism = 1
	res, err := e.client.RunJar(ctx, jarID, req)
	if err != nil {
		t.Fatalf("run jar %s: %v", jarID, err)
	}
	t.Cleanup(func() { e.cancel(t, res.JobID) })
	return res
}

func (e *itEnv) cancel(t *testing.T, jobID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := e.client.CancelJob(ctx, jobID)
	if err != nil && !errors.Is(err, ErrJobNotRunning) {
		t.Errorf("cleanup: cancel job %s: %v", jobID, err)
	}
}

// waitRunning waits until the job and all its tasks run (savepoints need
// every task running).
func (e *itEnv) waitRunning(t *testing.T, ctx context.Context, jobID string) JobDetails {
	t.Helper()
	var last JobDetails
	for {
		d, err := e.client.JobDetails(ctx, jobID)
		if err == nil {
			last = d
			allRunning := d.State == JobRunning && len(d.Vertices) > 0
			for _, v := range d.Vertices {
				allRunning = allRunning && v.Status == "RUNNING"
			}
			if allRunning {
				return d
			}
			if d.State.IsTerminal() {
				t.Fatalf("job %s ended as %s while waiting for RUNNING", jobID, d.State)
			}
		} else if !IsRetryable(err) {
			t.Fatalf("job %s details: %v", jobID, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("job %s not running in time; last state %s", jobID, last.State)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func (e *itEnv) waitState(t *testing.T, ctx context.Context, jobID string, want JobState) {
	t.Helper()
	for {
		s, err := e.client.JobState(ctx, jobID)
		if err == nil && s == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("job %s did not reach %s: last %s, %v", jobID, want, s, err)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func TestIntegrationClusterAndJobListing(t *testing.T) {
	onEachLine(t, testIntegrationClusterAndJobListing)
}

func testIntegrationClusterAndJobListing(t *testing.T, line string) {
	e := newITEnv(t, line)
	ctx := itContext(t, 2*time.Minute)

	ov, err := e.client.ClusterOverview(ctx)
	if err != nil {
		t.Fatalf("overview: %v", err)
	}
	if ov.FlinkVersion != e.cluster.FlinkVersion || ov.SlotsTotal == 0 || ov.TaskManagers == 0 {
		t.Fatalf("overview %+v: want flink %s with task managers and slots", ov, e.cluster.FlinkVersion)
	}
	dc, err := e.client.DashboardConfig(ctx)
	if err != nil || dc.FlinkVersion != e.cluster.FlinkVersion {
		t.Fatalf("dashboard config %+v, %v: want flink-version %s", dc, err, e.cluster.FlinkVersion)
	}
	cfg, err := e.client.JobManagerConfig(ctx)
	if err != nil {
		t.Fatalf("jobmanager config: %v", err)
	}
	if ha, ok := cfg.Get(KeysHAStorageDir...); !ok || ha != e.cluster.HAStorageDir {
		t.Errorf("high-availability.storageDir = %q (found %v), want %s", ha, ok, e.cluster.HAStorageDir)
	}

	jarID := e.uploadSampleJar(t, ctx)
	jars, err := e.client.ListJars(ctx)
	if err != nil {
		t.Fatalf("list jars: %v", err)
	}
	found := false
	for _, j := range jars.Files {
		found = found || j.ID == jarID
	}
	if !found {
		t.Fatalf("uploaded jar %s not in /jars listing", jarID)
	}

	run := e.runSample(t, ctx, jarID, "flink-client-it-listing", RunJarRequest{})
	e.waitRunning(t, ctx, run.JobID)
	jobs, err := e.client.ListJobs(ctx)
	if err != nil {
		t.Fatalf("list jobs: %v", err)
	}
	var mine *JobOverview
	for i := range jobs {
		if jobs[i].ID == run.JobID {
			mine = &jobs[i]
		}
	}
	if mine == nil || mine.Name != "flink-client-it-listing" || mine.State != JobRunning || mine.Started().IsZero() || !mine.Ended().IsZero() {
		t.Fatalf("job %s in overview: %+v", run.JobID, mine)
	}
	jcfg, err := e.client.JobConfig(ctx, run.JobID)
	if err != nil {
		t.Fatalf("job config: %v", err)
	}
	if _, ok := jcfg.Get(KeysSavepointDir...); !ok {
		t.Errorf("job config lacks a savepoint dir key: %v", jcfg)
	}
	cc, err := e.client.CheckpointConfig(ctx, run.JobID)
	if err != nil || cc.Interval <= 0 || cc.Mode == "" {
		t.Fatalf("checkpoint config %+v, %v", cc, err)
	}
	if _, err := e.client.JobExceptions(ctx, run.JobID, 5); err != nil {
		t.Fatalf("exceptions: %v", err)
	}
}

func TestIntegrationSavepointStopRestore(t *testing.T) {
	onEachLine(t, testIntegrationSavepointStopRestore)
}

func testIntegrationSavepointStopRestore(t *testing.T, line string) {
	e := newITEnv(t, line)
	ctx := itContext(t, 8*time.Minute)
	jarID := e.uploadSampleJar(t, ctx)
	run := e.runSample(t, ctx, jarID, "flink-client-it-lifecycle", RunJarRequest{})
	e.waitRunning(t, ctx, run.JobID)

	// Savepoint with a caller-chosen trigger ID; a repeat re-attaches.
	spReq := SavepointRequest{TargetDirectory: e.rootURI + "/savepoints", TriggerID: NewTriggerID(), FormatType: SavepointFormatCanonical}
	tr, err := e.client.TriggerSavepoint(ctx, run.JobID, spReq)
	if err != nil {
		t.Fatalf("trigger savepoint: %v", err)
	}
	if tr.TriggerID != spReq.TriggerID || tr.Reattached {
		t.Fatalf("trigger = %+v, want our trigger ID %s, not reattached", tr, spReq.TriggerID)
	}
	again, err := e.client.TriggerSavepoint(ctx, run.JobID, spReq)
	if err != nil || !again.Reattached || again.TriggerID != spReq.TriggerID {
		t.Fatalf("repeated trigger = %+v, %v: want reattached to %s", again, err, spReq.TriggerID)
	}
	loc, err := e.client.AwaitSavepoint(ctx, run.JobID, tr.TriggerID)
	if err != nil {
		t.Fatalf("await savepoint: %v", err)
	}
	if !strings.HasPrefix(loc, e.rootURI+"/savepoints/savepoint-") {
		t.Fatalf("savepoint location %s not under %s/savepoints", loc, e.rootURI)
	}
	// The JobManager caches checkpoint statistics for a few seconds
	// (rest.cache.checkpoint-statistics.timeout), so the savepoint may
	// show up there a little after it completed.
	var stats CheckpointingStatistics
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		stats, err = e.client.Checkpoints(ctx, run.JobID)
		if err != nil {
			t.Fatalf("checkpoint stats: %v", err)
		}
		if (stats.Latest.Savepoint != nil && stats.Latest.Savepoint.ExternalPath == loc) || time.Now().After(deadline) {
			break
		}
	}
	if stats.Latest.Savepoint == nil || stats.Latest.Savepoint.ExternalPath != loc || !stats.Latest.Savepoint.IsSavepoint {
		t.Fatalf("latest savepoint %+v, want external path %s", stats.Latest.Savepoint, loc)
	}
	if d, err := e.client.CheckpointDetails(ctx, run.JobID, stats.Latest.Savepoint.ID); err != nil || d.ExternalPath != loc || d.ClassName != CheckpointKindCompleted {
		t.Fatalf("checkpoint details %d: %+v, %v", stats.Latest.Savepoint.ID, d, err)
	}

	// A savepoint into a directory whose namespace quota is used up fails
	// with a typed quota error, and the job keeps running.
	full := e.root + "/full"
	if _, err := e.peers.HadoopShell(ctx, "-mkdir", "-p", full); err != nil {
		t.Fatalf("mkdir %s: %v", full, err)
	}
	if err := e.peers.SetNamespaceQuota(ctx, full, 1); err != nil {
		t.Fatalf("set quota on %s: %v", full, err)
	}
	t.Cleanup(func() {
		if err := e.peers.ClearNamespaceQuota(context.Background(), full); err != nil {
			t.Errorf("cleanup: clear quota of %s: %v", full, err)
		}
	})
	qtr, err := e.client.TriggerSavepoint(ctx, run.JobID, SavepointRequest{TargetDirectory: e.peers.HDFS.URI + full})
	if err == nil {
		_, err = e.client.AwaitSavepoint(ctx, run.JobID, qtr.TriggerID)
	}
	if !errors.Is(err, ErrStorageQuotaExceeded) || IsRetryable(err) || Reason(err) != ErrorReasonStorageQuotaExceeded {
		t.Fatalf("savepoint into full dir: want non-retryable %s, got %v", ErrorReasonStorageQuotaExceeded, err)
	}
	t.Logf("quota error: %v", err)

	// A target directory on a file system Flink does not have is a typed,
	// non-retryable error. (Relative directories never reach Flink: the
	// client rejects them, since Flink would write to the JobManager's
	// local working directory.)
	rtr, err := e.client.TriggerSavepoint(ctx, run.JobID, SavepointRequest{TargetDirectory: "nosuchfs://nowhere/savepoints"})
	if err == nil {
		_, err = e.client.AwaitSavepoint(ctx, run.JobID, rtr.TriggerID)
	}
	if !errors.Is(err, ErrInvalidTargetDirectory) || IsRetryable(err) {
		t.Fatalf("savepoint to an unknown file system: want non-retryable %s, got %v", ErrorReasonInvalidTargetDirectory, err)
	}
	t.Logf("unknown file system error: %v", err)

	// Stop with savepoint; the job ends FINISHED.
	stopReq := StopRequest{TargetDirectory: e.rootURI + "/savepoints", TriggerID: NewTriggerID()}
	str, err := e.client.StopWithSavepoint(ctx, run.JobID, stopReq)
	if err != nil {
		t.Fatalf("stop with savepoint: %v", err)
	}
	stopLoc, err := e.client.AwaitSavepoint(ctx, run.JobID, str.TriggerID)
	if err != nil {
		t.Fatalf("await stop: %v", err)
	}
	if stopLoc == loc || !strings.HasPrefix(stopLoc, e.rootURI+"/savepoints/savepoint-") {
		t.Fatalf("stop savepoint %s: want a new savepoint under %s/savepoints", stopLoc, e.rootURI)
	}
	e.waitState(t, ctx, run.JobID, JobFinished)
	if st, err := e.client.JobState(ctx, run.JobID); err != nil || !st.IsGloballyTerminal() {
		t.Fatalf("stopped job state %s, %v: want globally terminal", st, err)
	}
	// Retrying the stop with the same trigger ID re-attaches to the result.
	if re, err := e.client.StopWithSavepoint(ctx, run.JobID, stopReq); err != nil || !re.Reattached {
		t.Fatalf("repeated stop = %+v, %v: want reattached", re, err)
	}
	if again, err := e.client.AwaitSavepoint(ctx, run.JobID, str.TriggerID); err != nil || again != stopLoc {
		t.Fatalf("re-awaited stop = %s, %v: want %s", again, err, stopLoc)
	}

	// Stopping the stopped job with a new trigger ID: job not running.
	str2, err := e.client.StopWithSavepoint(ctx, run.JobID, StopRequest{TargetDirectory: e.rootURI + "/savepoints"})
	if err == nil {
		_, err = e.client.AwaitSavepoint(ctx, run.JobID, str2.TriggerID)
	}
	if !errors.Is(err, ErrJobNotRunning) || IsRetryable(err) {
		t.Fatalf("stop of a stopped job: want non-retryable %s, got %v", ErrorReasonJobNotRunning, err)
	}
	t.Logf("stop of stopped job: %v", err)

	// Restore from the stop savepoint with a fixed job ID; a repeat of the
	// submission re-attaches instead of starting a second job.
	restoredID := NewTriggerID()
	restoreReq := RunJarRequest{JobID: restoredID, SavepointPath: stopLoc, RestoreMode: RestoreNoClaim}
	res := e.runSample(t, ctx, jarID, "flink-client-it-restored", restoreReq)
	if res.JobID != restoredID || res.Reattached {
		t.Fatalf("restore run = %+v, want new job %s", res, restoredID)
	}
	if dup := e.runSample(t, ctx, jarID, "flink-client-it-restored", restoreReq); !dup.Reattached || dup.JobID != restoredID {
		t.Fatalf("repeated restore run = %+v, want reattached to %s", dup, restoredID)
	}
	e.waitRunning(t, ctx, restoredID)
	rs, err := e.client.Checkpoints(ctx, restoredID)
	if err != nil {
		t.Fatalf("restored job checkpoint stats: %v", err)
	}
	r := rs.Latest.Restored
	if r == nil || r.ExternalPath != stopLoc || !r.IsSavepoint || r.RestoreTime().IsZero() || rs.Counts.Restored != 1 {
		t.Fatalf("latest.restored = %+v (counts %+v), want savepoint %s", r, rs.Counts, stopLoc)
	}
	if err := e.client.CancelJob(ctx, restoredID); err != nil {
		t.Fatalf("cancel restored job: %v", err)
	}
	e.waitState(t, ctx, restoredID, JobCanceled)
	if err := e.client.CancelJob(ctx, restoredID); err != nil {
		t.Fatalf("second cancel of a canceled job: want nil, got %v", err)
	}
}

func TestIntegrationUnknownJob(t *testing.T) { onEachLine(t, testIntegrationUnknownJob) }

func testIntegrationUnknownJob(t *testing.T, line string) {
	e := newITEnv(t, line)
	ctx := itContext(t, time.Minute)
	unknown := NewTriggerID()
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrJobNotFound) || IsRetryable(err) || Reason(err) != ErrorReasonJobNotFound {
			t.Errorf("%s of unknown job: want non-retryable %s, got %v", what, ErrorReasonJobNotFound, err)
		}
	}
	_, err := e.client.JobDetails(ctx, unknown)
	check("details", err)
	_, err = e.client.JobState(ctx, unknown)
	check("status", err)
	_, err = e.client.Checkpoints(ctx, unknown)
	check("checkpoint stats", err)
	check("cancel", e.client.CancelJob(ctx, unknown))
	tr, err := e.client.TriggerSavepoint(ctx, unknown, SavepointRequest{TargetDirectory: e.rootURI})
	if err == nil {
		_, err = e.client.AwaitSavepoint(ctx, unknown, tr.TriggerID)
	}
	check("savepoint", err)
	st, err := e.client.StopWithSavepoint(ctx, unknown, StopRequest{TargetDirectory: e.rootURI})
	if err == nil {
		_, err = e.client.AwaitSavepoint(ctx, unknown, st.TriggerID)
	}
	check("stop", err)
	_, err = e.client.SavepointStatus(ctx, unknown, NewTriggerID())
	if !errors.Is(err, ErrOperationNotFound) && !errors.Is(err, ErrJobNotFound) {
		t.Errorf("status of unknown trigger: want %s, got %v", ErrorReasonOperationNotFound, err)
	}
	if _, err := e.client.RunJar(ctx, "no-such-jar.jar", RunJarRequest{}); !errors.Is(err, ErrJarNotFound) {
		t.Errorf("run of unknown jar: want %s, got %v", ErrorReasonJarNotFound, err)
	}

	// A wrong base URL (missing ingress prefix) is an endpoint error.
	bad, err := New(Options{BaseURL: e.cluster.RESTURL + "/no/such/prefix"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.ListJobs(ctx); !errors.Is(err, ErrEndpointNotFound) || IsRetryable(err) {
		t.Errorf("wrong base URL: want %s, got %v", ErrorReasonEndpointNotFound, err)
	}
}

// TestIntegrationStopWithDrain: a stop with drain (MAX_WATERMARK before the
// savepoint) is accepted by real Flink, ends the job FINISHED, and its
// savepoint restores.
func TestIntegrationStopWithDrain(t *testing.T) { onEachLine(t, testIntegrationStopWithDrain) }

func testIntegrationStopWithDrain(t *testing.T, line string) {
	e := newITEnv(t, line)
	ctx := itContext(t, 5*time.Minute)
	jarID := e.uploadSampleJar(t, ctx)
	run := e.runSample(t, ctx, jarID, "flink-client-it-drain", RunJarRequest{})
	e.waitRunning(t, ctx, run.JobID)
	tr, err := e.client.StopWithSavepoint(ctx, run.JobID, StopRequest{TargetDirectory: e.rootURI + "/savepoints", Drain: true})
	if err != nil {
		t.Fatalf("stop with drain: %v", err)
	}
	loc, err := e.client.AwaitSavepoint(ctx, run.JobID, tr.TriggerID)
	if err != nil {
		t.Fatalf("await drained stop: %v", err)
	}
	e.waitState(t, ctx, run.JobID, JobFinished)
	restored := e.runSample(t, ctx, jarID, "flink-client-it-drain-restored", RunJarRequest{SavepointPath: loc, RestoreMode: RestoreNoClaim})
	e.waitRunning(t, ctx, restored.JobID)
	if err := e.client.CancelJob(ctx, restored.JobID); err != nil {
		t.Fatalf("cancel restored job: %v", err)
	}
}

// The metrics the health checks read (activities/health_checks.go): job
// metrics by id, and aggregated subtask metrics per vertex.
func TestIntegrationMetrics(t *testing.T) { onEachLine(t, testIntegrationMetrics) }

func testIntegrationMetrics(t *testing.T, line string) {
	e := newITEnv(t, line)
	ctx := itContext(t, 3*time.Minute)
	jarID := e.uploadSampleJar(t, ctx)
	run := e.runSample(t, ctx, jarID, "flink-client-it-metrics", RunJarRequest{})
	d := e.waitRunning(t, ctx, run.JobID)

	// The JobManager lists a job's metrics once its metric fetcher has run for the job
	// (metrics.fetcher.update-interval: 10 s by default, 2 s in the sandbox):
	// until then the list is empty.
	var all []MetricValue
	for deadline := time.Now().Add(35 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		var err error
		all, err = e.client.JobMetrics(ctx, run.JobID)
		if err != nil {
			t.Fatalf("job metric ids: %v", err)
		}
		if len(all) > 0 || time.Now().After(deadline) {
			break
		}
	}
	ids := map[string]bool{}
	for _, m := range all {
		ids[m.ID] = true
	}
	for _, want := range []string{"numRestarts", "lastCheckpointDuration"} {
		if !ids[want] {
			t.Errorf("Flink %s: job metric %s not listed; job metrics: %v", e.cluster.FlinkVersion, want, all)
		}
	}
	// Numbers, once the JobManager's metric fetcher has them.
	for {
		ms, err := e.client.JobMetrics(ctx, run.JobID, "numRestarts")
		if err != nil {
			t.Fatalf("job metric numRestarts: %v", err)
		}
		if len(ms) == 1 {
			if v, ok := ms[0].Number(""); !ok || v != 0 {
				t.Fatalf("numRestarts = %+v, want 0 for a job that never restarted", ms[0])
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("numRestarts of job %s not reported", run.JobID)
		case <-time.After(time.Second):
		}
	}
	// A subtask metric summed over the sink's subtasks grows as records flow.
	var sink JobVertex
	for _, v := range d.Vertices {
		if strings.Contains(v.Name, "sink") {
			sink = v
		}
	}
	if sink.ID == "" {
		t.Fatalf("no sink vertex among %+v", d.Vertices)
	}
	for {
		ms, err := e.client.VertexMetrics(ctx, run.JobID, sink.ID, "numRecordsIn")
		if err != nil {
			t.Fatalf("vertex metric numRecordsIn of %s: %v", sink.Name, err)
		}
		if len(ms) == 1 {
			if v, ok := ms[0].Number("sum"); ok && v > 0 {
				names := make([]string, 0, len(ids))
				for id := range ids {
					names = append(names, id)
				}
				sort.Strings(names)
				t.Logf("Flink %s: %s numRecordsIn sum %v; job metrics: %s", e.cluster.FlinkVersion, sink.Name, v, strings.Join(names, " "))
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("numRecordsIn of %s never above 0 (last %+v)", sink.Name, ms)
		case <-time.After(time.Second):
		}
	}
}
