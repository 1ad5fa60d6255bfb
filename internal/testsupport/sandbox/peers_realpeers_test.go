//go:build realpeers

package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
)

// These tests run against the real Java sandbox (sandbox/java/run.sh up): real HDFS, real Flink
// 1.20 session clusters. Each test starts its own jobs with its own HDFS dirs and cancels and
// removes them at the end, since other packages' tests share the clusters.

func TestSampleJobCheckpointsToHDFS(t *testing.T) {
	t.Parallel()
	p := RequirePeers(t)
	cluster := mustCluster(t, p, "cluster-a")
	fs := hdfsClient(t, p)
	dir := testDir(t, p, fs, "team-a")
	cpDir := p.HDFS.URI + dir + "/checkpoints"

	job := runSampleJob(t, cluster, "--checkpoint-dir", cpDir, "--keys", "5000", "--rate", "1000")
	waitRunning(t, cluster, job)
	cps := waitCompletedCheckpoints(t, cluster, job, 3)

	latest := strings.TrimPrefix(cps.Latest.Completed.ExternalPath, p.HDFS.URI)
	if !strings.HasPrefix(latest, dir+"/checkpoints/"+job+"/chk-") {
		t.Fatalf("latest checkpoint %q is not under the job's own --checkpoint-dir %s/%s", cps.Latest.Completed.ExternalPath, cpDir, job)
	}
	// Checkpoints are subsumed as new ones complete; poll until a retained one is listed.
	var chkWithMetadata, sstFiles int
	waitFor(t, 2*time.Minute, "retained chk-N/_metadata and shared/ files on HDFS", func() (bool, string) {
		chkWithMetadata, sstFiles = 0, 0
		jobDir := dir + "/checkpoints/" + job
		entries, err := fs.ReadDir(jobDir)
		if err != nil {
			return false, err.Error()
		}
		for _, e := range entries {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), "chk-") {
				continue
			}
			if st, err := fs.Stat(jobDir + "/" + e.Name() + "/_metadata"); err == nil && st.Size() > 0 {
				chkWithMetadata++
			}
		}
		shared, err := fs.ReadDir(jobDir + "/shared")
		if err != nil {
			return false, err.Error()
		}
		for _, f := range shared {
			if !f.IsDir() && f.Size() > 0 {
				sstFiles++
			}
		}
		return chkWithMetadata >= 1 && sstFiles >= 1, fmt.Sprintf("%d chk dirs with _metadata, %d shared files", chkWithMetadata, sstFiles)
	})
	t.Logf("job %s: %d completed checkpoints, %d retained chk-N/_metadata, %d RocksDB files in shared/", job, cps.Counts.Completed, chkWithMetadata, sstFiles)
}

func TestSavepointLandsOnHDFS(t *testing.T) {
	t.Parallel()
	p := RequirePeers(t)
	cluster := mustCluster(t, p, "cluster-b")
	fs := hdfsClient(t, p)
	dir := testDir(t, p, fs, "team-b")

	job := runSampleJob(t, cluster, "--checkpoint-dir", p.HDFS.URI+dir+"/checkpoints", "--keys", "2000", "--rate", "500")
	waitRunning(t, cluster, job)
	waitCompletedCheckpoints(t, cluster, job, 1)

	target := p.HDFS.URI + dir + "/savepoints"
	location := triggerSavepoint(t, cluster, job, target)
	if !strings.HasPrefix(location, target+"/savepoint-"+job[:6]+"-") {
		t.Fatalf("savepoint location %q is not %s/savepoint-%s-<random>", location, target, job[:6])
	}
	st, err := fs.Stat(strings.TrimPrefix(location, p.HDFS.URI) + "/_metadata")
	if err != nil {
		t.Fatalf("savepoint _metadata on HDFS: %v", err)
	}
	if st.Size() == 0 {
		t.Fatalf("savepoint _metadata at %s is empty", location)
	}
	t.Logf("savepoint %s: _metadata %d bytes", location, st.Size())
}

// The incident: once a tenant root's namespace quota is full, a running job's checkpoints fail
// (and the job with them), and a job (re)started there fails at start with
// NSQuotaExceededException, shown in Flink's /jobs/{id}/exceptions.
func TestNamespaceQuotaExceededFailsJobs(t *testing.T) {
	t.Parallel()
	p := RequirePeers(t)
	cluster := mustCluster(t, p, "cluster-a")
	fs := hdfsClient(t, p)
	dir := testDir(t, p, fs, "team-a")
	cpDir := p.HDFS.URI + dir + "/checkpoints"
	ctx := context.Background()

	running := runSampleJob(t, cluster, "--checkpoint-dir", cpDir, "--keys", "2000", "--rate", "500")
	waitRunning(t, cluster, running)
	// Flink creates <dir>/<job>/shared and taskowned when the job starts.
	waitFor(t, time.Minute, "job checkpoint dir on HDFS", func() (bool, string) {
		_, err := fs.Stat(dir + "/checkpoints/" + running + "/shared")
		return err == nil, fmt.Sprint(err)
	})
	// Fill the quota: whatever exists now is all the directory may hold.
	summary, err := fs.GetContentSummary(dir)
	if err != nil {
		t.Fatalf("content summary of %s: %v", dir, err)
	}
	used := summary.FileCount() + summary.DirectoryCount()
	if err := p.SetNamespaceQuota(ctx, dir, int64(used)); err != nil {
		t.Fatalf("set namespace quota %d on %s: %v", used, dir, err)
	}
	t.Cleanup(func() {
		if err := p.ClearNamespaceQuota(context.Background(), dir); err != nil {
			t.Errorf("clear namespace quota on %s: %v", dir, err)
		}
	})

	// The running job: checkpoints cannot create chk-N, the job fails over.
	waitFor(t, 3*time.Minute, "checkpoint failure in /jobs/{id}/exceptions of the running job", func() (bool, string) {
		body := flinkRaw(t, http.MethodGet, cluster.RESTURL+"/jobs/"+running+"/exceptions", nil)
		return strings.Contains(body, "Exceeded checkpoint tolerable failure threshold"), lastLines(body, 2)
	})

	// The restart: a new job needs new dirs under the full root and fails to start.
	restarted, runErr := submitSampleJob(t, cluster, "--checkpoint-dir", cpDir, "--keys", "2000", "--rate", "500")
	if restarted == "" {
		t.Fatalf("restarted job not found on %s (run: %v)", cluster.ClusterID, runErr)
	}
	var exceptions string
	waitFor(t, 2*time.Minute, "NSQuotaExceededException in /jobs/{id}/exceptions of the restarted job", func() (bool, string) {
		exceptions = flinkRaw(t, http.MethodGet, cluster.RESTURL+"/jobs/"+restarted+"/exceptions", nil)
		return strings.Contains(exceptions, "NSQuotaExceededException"), lastLines(exceptions, 2)
	})
	if !strings.Contains(exceptions, "quota (directories and files) of directory "+dir+" is exceeded") {
		t.Fatalf("exceptions of job %s name NSQuotaExceededException but not the quota of %s: %s", restarted, dir, lastLines(exceptions, 20))
	}
	var st struct {
		State string `json:"state"`
	}
	flinkJSON(t, http.MethodGet, cluster.RESTURL+"/jobs/"+restarted, nil, &st)
	if st.State != "FAILED" {
		t.Fatalf("restarted job %s is %s, want FAILED", restarted, st.State)
	}
}

// A restore of a job started with --fail-on-restore fails on every attempt and ends FAILED; a
// fresh start of the same job does not.
func TestFailOnRestoreNeverGetsHealthy(t *testing.T) {
	t.Parallel()
	p := RequirePeers(t)
	cluster := mustCluster(t, p, "cluster-b")
	fs := hdfsClient(t, p)
	dir := testDir(t, p, fs, "team-b")
	args := []string{"--checkpoint-dir", p.HDFS.URI + dir + "/checkpoints", "--keys", "1000", "--rate", "200", "--fail-on-restore"}

	first := runSampleJob(t, cluster, args...)
	waitRunning(t, cluster, first)
	waitCompletedCheckpoints(t, cluster, first, 1)
	savepoint := triggerSavepoint(t, cluster, first, p.HDFS.URI+dir+"/savepoints")

	// Restore from the savepoint: every start restores state, so every attempt throws.
	restored, err := submitSampleJobFrom(t, cluster, savepoint, "NO_CLAIM", args...)
	if err != nil {
		t.Fatalf("run restored job: %v", err)
	}
	waitFor(t, 3*time.Minute, "restored job "+restored+" to end FAILED", func() (bool, string) {
		var st struct {
			State string `json:"state"`
		}
		flinkJSON(t, http.MethodGet, cluster.RESTURL+"/jobs/"+restored, nil, &st)
		return st.State == "FAILED", st.State
	})
	exceptions := flinkRaw(t, http.MethodGet, cluster.RESTURL+"/jobs/"+restored+"/exceptions", nil)
	if !strings.Contains(exceptions, "started with --fail-on-restore") {
		t.Fatalf("exceptions of restored job %s do not show the --fail-on-restore failure: %s", restored, lastLines(exceptions, 20))
	}
	var cps checkpointStats
	flinkJSON(t, http.MethodGet, cluster.RESTURL+"/jobs/"+restored+"/checkpoints", nil, &cps)
	if cps.Counts.Completed != 0 {
		t.Fatalf("restored job %s completed %d checkpoints; a job failing on restore must complete none", restored, cps.Counts.Completed)
	}
}

func TestHALayoutOnHDFS(t *testing.T) {
	t.Parallel()
	p := RequirePeers(t)
	cluster := mustCluster(t, p, "cluster-b")
	fs := hdfsClient(t, p)
	dir := testDir(t, p, fs, "team-b")

	job := runSampleJob(t, cluster, "--checkpoint-dir", p.HDFS.URI+dir+"/checkpoints", "--keys", "2000", "--rate", "500")
	waitRunning(t, cluster, job)
	waitCompletedCheckpoints(t, cluster, job, 1)

	haDir := strings.TrimPrefix(cluster.HAStorageDir, p.HDFS.URI) + "/" + cluster.ClusterID
	if _, err := fs.Stat(haDir + "/blob/job_" + job); err != nil {
		t.Fatalf("HA blob dir of job %s: %v", job, err)
	}
	waitFor(t, time.Minute, "completedCheckpoint* and submittedJobGraph* under "+haDir, func() (bool, string) {
		entries, err := fs.ReadDir(haDir)
		if err != nil {
			return false, err.Error()
		}
		var completed, jobGraphs int
		for _, e := range entries {
			switch {
			case strings.HasPrefix(e.Name(), "completedCheckpoint"):
				completed++
			case strings.HasPrefix(e.Name(), "submittedJobGraph"):
				jobGraphs++
			}
		}
		return completed > 0 && jobGraphs > 0, fmt.Sprintf("%d completedCheckpoint, %d submittedJobGraph", completed, jobGraphs)
	})
}

func TestJavaMainAndHadoopShell(t *testing.T) {
	t.Parallel()
	p := RequirePeers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := p.HadoopShell(ctx, "-count", "-q", p.Tenants[0].Root)
	if err != nil {
		t.Fatalf("FsShell -count -q: %v", err)
	}
	// Columns: QUOTA REM_QUOTA SPACE_QUOTA REM_SPACE_QUOTA DIR_COUNT FILE_COUNT CONTENT_SIZE PATHNAME
	fields := strings.Fields(out)
	if len(fields) != 8 || fields[0] != fmt.Sprint(p.Tenants[0].NamespaceQuota) {
		t.Fatalf("FsShell -count -q %s = %q, want namespace quota %d first", p.Tenants[0].Root, out, p.Tenants[0].NamespaceQuota)
	}
	_, err = p.HadoopShell(ctx, "-ls", "/does/not/exist")
	var jerr *JavaError
	if !errors.As(err, &jerr) || jerr.ExitCode == 0 || !strings.Contains(jerr.Stderr, "No such file") {
		t.Fatalf("FsShell -ls of a missing path: got %v, want a *JavaError saying No such file", err)
	}
}

// ---- test support: a few Flink REST calls with plain net/http, and HDFS through colinmarc/hdfs.

func mustCluster(t *testing.T, p *Peers, id string) FlinkCluster {
	t.Helper()
	c, ok := p.Cluster(id)
	if !ok {
		t.Fatalf("peers.json has no cluster %q", id)
	}
	return c
}

func hdfsClient(t *testing.T, p *Peers) *hdfs.Client {
	t.Helper()
	c, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{p.HDFS.NameNode}, User: p.HDFS.User})
	if err != nil {
		t.Fatalf("HDFS client for %s: %v", p.HDFS.NameNode, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// testDir creates a dir of the test's own under the tenant root and removes it at the end.
func testDir(t *testing.T, p *Peers, fs *hdfs.Client, tenant string) string {
	t.Helper()
	var root string
	for _, tn := range p.Tenants {
		if tn.Name == tenant {
			root = tn.Root
		}
	}
	if root == "" {
		t.Fatalf("peers.json has no tenant %q", tenant)
	}
	dir := fmt.Sprintf("%s/tests/%s-%d", root, strings.ToLower(t.Name()), time.Now().UnixNano())
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("mkdir %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := fs.RemoveAll(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("remove %s: %v", dir, err)
		}
	})
	return dir
}

// runSampleJob uploads the sample jar, runs it with args and cancels the job at test end.
func runSampleJob(t *testing.T, c FlinkCluster, args ...string) string {
	t.Helper()
	job, err := submitSampleJob(t, c, args...)
	if err != nil {
		t.Fatalf("run sample job on %s: %v", c.ClusterID, err)
	}
	return job
}

var jobSeq atomic.Int64

// submitSampleJob uploads and runs the sample jar. A job whose start fails (the jar run answers
// an error) still exists in Flink as FAILED: it is then found by its unique name and returned
// with the run error. Every job found is cancelled at test end.
func submitSampleJob(t *testing.T, c FlinkCluster, args ...string) (string, error) {
	t.Helper()
	return submitSampleJobFrom(t, c, "", "", args...)
}

// submitSampleJobFrom is submitSampleJob restoring from savepointPath (if not empty) in
// restoreMode (CLAIM, NO_CLAIM or LEGACY).
func submitSampleJobFrom(t *testing.T, c FlinkCluster, savepointPath, restoreMode string, args ...string) (string, error) {
	t.Helper()
	p := RequirePeers(t)
	jobName := fmt.Sprintf("%s-%d-%d", strings.ToLower(t.Name()), os.Getpid(), jobSeq.Add(1))
	return submitJar(t, p, c, p.SampleJob.EntryClass, jobName, savepointPath, restoreMode, append([]string{"--job-name", jobName}, args...)...)
}

// submitJar uploads the sample jar built for c's Flink line and runs entryClass with args. The
// job is looked up by jobName when the run request fails, and cancelled at test end.
func submitJar(t *testing.T, p *Peers, c FlinkCluster, entryClass, jobName, savepointPath, restoreMode string, args ...string) (string, error) {
	t.Helper()
	// The jar built against the cluster's own Flink line.
	jarPath := c.SampleJobJar
	if jarPath == "" {
		jarPath = p.SampleJob.Jar
	}
	jar, err := os.Open(jarPath)
	if err != nil {
		t.Fatalf("sample job jar: %v", err)
	}
	defer jar.Close()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, err := mw.CreateFormFile("jarfile", filepath.Base(jarPath))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(part, jar); err != nil {
		t.Fatal(err)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, c.RESTURL+"/jars/upload", &body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	var upload struct {
		Filename string `json:"filename"`
		Status   string `json:"status"`
	}
	doJSON(t, req, &upload)
	if upload.Status != "success" {
		t.Fatalf("jar upload to %s: status %q", c.ClusterID, upload.Status)
	}
	jarID := path.Base(upload.Filename)
	t.Cleanup(func() { _, _ = flinkDo(http.MethodDelete, c.RESTURL+"/jars/"+url.PathEscape(jarID), nil) })

	var run struct {
		JobID string `json:"jobid"`
	}
	request := map[string]any{
		"entryClass":      entryClass,
		"programArgsList": args,
	}
	if savepointPath != "" {
		request["savepointPath"] = savepointPath
		request["restoreMode"] = restoreMode
	}
	out, runErr := flinkDo(http.MethodPost, c.RESTURL+"/jars/"+url.PathEscape(jarID)+"/run", request)
	if runErr == nil {
		if err := json.Unmarshal([]byte(out), &run); err != nil || run.JobID == "" {
			t.Fatalf("jar run on %s answered %q", c.ClusterID, lastLines(out, 5))
		}
	} else {
		run.JobID = jobIDByName(t, c, jobName)
	}
	if run.JobID != "" {
		t.Cleanup(func() { cancelJob(t, c, run.JobID) })
	}
	return run.JobID, runErr
}

func jobIDByName(t *testing.T, c FlinkCluster, name string) string {
	t.Helper()
	var overview struct {
		Jobs []struct {
			JID  string `json:"jid"`
			Name string `json:"name"`
		} `json:"jobs"`
	}
	flinkJSON(t, http.MethodGet, c.RESTURL+"/jobs/overview", nil, &overview)
	for _, j := range overview.Jobs {
		if j.Name == name {
			return j.JID
		}
	}
	return ""
}

// triggerSavepoint takes a canonical savepoint of a running job into target and returns its path.
func triggerSavepoint(t *testing.T, c FlinkCluster, job, target string) string {
	t.Helper()
	return triggerSavepointFormat(t, c, job, target, "CANONICAL")
}

// triggerSavepointFormat takes a savepoint in format (CANONICAL or NATIVE) and returns its path.
func triggerSavepointFormat(t *testing.T, c FlinkCluster, job, target, format string) string {
	t.Helper()
	var trigger struct {
		RequestID string `json:"request-id"`
	}
	flinkJSON(t, http.MethodPost, c.RESTURL+"/jobs/"+job+"/savepoints",
		map[string]any{"target-directory": target, "cancel-job": false, "formatType": format}, &trigger)
	if trigger.RequestID == "" {
		t.Fatal("savepoint trigger returned no request-id")
	}
	return awaitSavepoint(t, c, job, trigger.RequestID)
}

// awaitSavepoint waits for a savepoint (or stop-with-savepoint) operation and returns its path.
func awaitSavepoint(t *testing.T, c FlinkCluster, job, requestID string) string {
	t.Helper()
	location, failure := awaitSavepointResult(t, c, job, requestID)
	if failure != "" {
		t.Fatalf("savepoint of job %s failed: %s", job, lastLines(failure, 15))
	}
	return location
}

// awaitSavepointResult waits for a savepoint operation to end and returns its path, or the
// stack trace of its failure.
func awaitSavepointResult(t *testing.T, c FlinkCluster, job, requestID string) (location, failure string) {
	t.Helper()
	waitFor(t, 3*time.Minute, "savepoint of job "+job+" to complete", func() (bool, string) {
		var st struct {
			Status struct {
				ID string `json:"id"`
			} `json:"status"`
			Operation struct {
				Location     string `json:"location"`
				FailureCause struct {
					StackTrace string `json:"stack-trace"`
				} `json:"failure-cause"`
			} `json:"operation"`
		}
		flinkJSON(t, http.MethodGet, c.RESTURL+"/jobs/"+job+"/savepoints/"+requestID, nil, &st)
		if st.Status.ID == "COMPLETED" && st.Operation.Location == "" {
			failure = st.Operation.FailureCause.StackTrace
			return true, st.Status.ID
		}
		location = st.Operation.Location
		return location != "", st.Status.ID
	})
	return location, failure
}

func cancelJob(t *testing.T, c FlinkCluster, job string) {
	// A job that already failed answers 409; the poll below accepts any terminal state. Two
	// minutes: a task that hangs in cancel (2.3.0 ForSt after a failed snapshot) ends when its
	// TaskManager gives up on it (task.cancellation.timeout, 60 s in the sandbox).
	_, cancelErr := flinkDo(http.MethodPatch, c.RESTURL+"/jobs/"+job+"?mode=cancel", nil)
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		body, err := flinkDo(http.MethodGet, c.RESTURL+"/jobs/"+job, nil)
		if err == nil {
			var st struct {
				State string `json:"state"`
			}
			if json.Unmarshal([]byte(body), &st) == nil && isTerminal(st.State) {
				return
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Errorf("job %s did not reach a terminal state within two minutes of cancel (cancel: %v)", job, cancelErr)
}

func isTerminal(state string) bool {
	switch state {
	case "CANCELED", "FAILED", "FINISHED":
		return true
	}
	return false
}

func waitRunning(t *testing.T, c FlinkCluster, job string) {
	t.Helper()
	waitFor(t, 3*time.Minute, "job "+job+" and all its tasks RUNNING", func() (bool, string) {
		var st struct {
			State    string `json:"state"`
			Vertices []struct {
				Status string `json:"status"`
			} `json:"vertices"`
		}
		flinkJSON(t, http.MethodGet, c.RESTURL+"/jobs/"+job, nil, &st)
		if isTerminal(st.State) {
			t.Fatalf("job %s is %s; exceptions: %s", job, st.State, flinkRaw(t, http.MethodGet, c.RESTURL+"/jobs/"+job+"/exceptions", nil))
		}
		running := st.State == "RUNNING" && len(st.Vertices) > 0
		for _, v := range st.Vertices {
			running = running && v.Status == "RUNNING"
		}
		return running, st.State
	})
}

type checkpointStats struct {
	Counts struct {
		Completed int `json:"completed"`
		Failed    int `json:"failed"`
	} `json:"counts"`
	Latest struct {
		Completed struct {
			ID           int64  `json:"id"`
			ExternalPath string `json:"external_path"`
		} `json:"completed"`
	} `json:"latest"`
}

func waitCompletedCheckpoints(t *testing.T, c FlinkCluster, job string, n int) checkpointStats {
	t.Helper()
	var cps checkpointStats
	waitFor(t, 3*time.Minute, fmt.Sprintf("%d completed checkpoints of job %s", n, job), func() (bool, string) {
		flinkJSON(t, http.MethodGet, c.RESTURL+"/jobs/"+job+"/checkpoints", nil, &cps)
		return cps.Counts.Completed >= n, fmt.Sprintf("%d completed, %d failed", cps.Counts.Completed, cps.Counts.Failed)
	})
	return cps
}

// waitFor polls cond every 500 ms until it holds or the deadline passes; cond's note is
// reported on timeout.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	var note string
	for {
		var ok bool
		ok, note = cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s (last: %s)", limit, what, note)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func flinkDo(method, u string, payload any) (string, error) {
	var body io.Reader
	if payload != nil {
		data, err := json.Marshal(payload)
		if err != nil {
			return "", err
		}
		body = bytes.NewReader(data)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return "", err
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode >= 300 {
		return string(data), fmt.Errorf("%s %s: HTTP %d: %s", method, u, resp.StatusCode, lastLines(string(data), 10))
	}
	return string(data), nil
}

func flinkRaw(t *testing.T, method, u string, payload any) string {
	t.Helper()
	body, err := flinkDo(method, u, payload)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func flinkJSON(t *testing.T, method, u string, payload, out any) {
	t.Helper()
	body := flinkRaw(t, method, u, payload)
	if err := json.Unmarshal([]byte(body), out); err != nil {
		t.Fatalf("%s %s: decoding %q: %v", method, u, lastLines(body, 5), err)
	}
}

func doJSON(t *testing.T, req *http.Request, out any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: HTTP %d: %s", req.Method, req.URL, resp.StatusCode, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("%s %s: decoding %q: %v", req.Method, req.URL, data, err)
	}
}
