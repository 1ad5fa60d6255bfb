//go:build realpeers

package layout_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

const testBase = "/flinkmaint-test/layout"

// flinkREST is the handful of plain REST calls the test needs.
type flinkREST struct {
	t    *testing.T
	base string
}

func (f flinkREST) do(ctx context.Context, method, path string, body io.Reader, contentType string, out any) {
	f.t.Helper()
	if err := f.try(ctx, method, path, body, contentType, out); err != nil {
		f.t.Fatal(err)
	}
}

// poll is do for a GET repeated until a condition holds: it rides out the
// HTTP 500 a job's REST endpoints answer while its JobManager initializes.
func (f flinkREST) poll(ctx context.Context, path string, out any) {
	f.t.Helper()
	err := f.try(ctx, http.MethodGet, path, nil, "", out)
	if err != nil && !strings.Contains(err.Error(), "JobManager is initializing") {
		f.t.Fatal(err)
	}
}

func (f flinkREST) try(ctx context.Context, method, path string, body io.Reader, contentType string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, f.base+path, body)
	if err != nil {
		return err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: %v: %s", method, path, err, data)
		}
	}
	return nil
}

func (f flinkREST) uploadJar(ctx context.Context, jar string) string {
	f.t.Helper()
	data, err := os.ReadFile(jar)
	if err != nil {
		f.t.Fatalf("sample job jar: %v", err)
	}
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	part, err := w.CreateFormFile("jarfile", filepath.Base(jar))
	if err != nil {
		f.t.Fatal(err)
	}
	_, _ = part.Write(data)
	_ = w.Close()
	var resp struct{ Filename string }
	f.do(ctx, http.MethodPost, "/jars/upload", &body, w.FormDataContentType(), &resp)
	return filepath.Base(resp.Filename)
}

type checkpointStats struct {
	Counts struct{ Completed int }
	Latest struct {
		Completed *struct {
			ID           int64  `json:"id"`
			ExternalPath string `json:"external_path"`
		}
	}
}

func TestScanRealFlinkCheckpointDir(t *testing.T) {
	peers := sandbox.RequirePeers(t)
	cluster := peers.Clusters[0]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := peers.HadoopShell(ctx, "-mkdir", "-p", testBase); err != nil {
		t.Fatal(err)
	}
	guard, err := storage.NewGuard(testBase)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := storage.NewHDFS(ctx, storage.HDFSOptions{URI: peers.HDFS.URI, User: peers.HDFS.User, HadoopConfDir: t.TempDir(), Guard: guard})
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	dir := testBase + "/" + hex.EncodeToString(b)
	ckptRoot := peers.HDFS.URI + dir + "/checkpoints"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := fs.RemoveAll(ctx, dir); err != nil {
			t.Errorf("cleanup %s: %v", dir, err)
		}
		fs.Close()
	})

	rest := flinkREST{t: t, base: cluster.RESTURL}
	jarID := rest.uploadJar(ctx, peers.SampleJob.Jar)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, cluster.RESTURL+"/jars/"+jarID, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	runBody, _ := json.Marshal(map[string]any{
		"entryClass":      peers.SampleJob.EntryClass,
		"programArgsList": []string{"--checkpoint-dir", ckptRoot, "--keys", "2000", "--rate", "500", "--job-name", "layout-test"},
	})
	var run struct{ JobID string }
	rest.do(ctx, http.MethodPost, "/jars/"+jarID+"/run", bytes.NewReader(runBody), "application/json", &run)
	if !layout.IsJobID(run.JobID) {
		t.Fatalf("run returned job id %q", run.JobID)
	}
	cancelJob := func(ctx context.Context) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPatch, cluster.RESTURL+"/jobs/"+run.JobID+"?mode=cancel", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cancelJob(ctx)
	})

	var stats checkpointStats
	for stats.Counts.Completed < 2 {
		if ctx.Err() != nil {
			t.Fatalf("job %s: fewer than 2 completed checkpoints before the deadline (%d)", run.JobID, stats.Counts.Completed)
		}
		time.Sleep(time.Second)
		rest.poll(ctx, "/jobs/"+run.JobID+"/checkpoints", &stats)
	}
	// Cancel and wait, so the directory stops changing; the cluster
	// retains checkpoints on cancellation.
	cancelJob(ctx)
	for {
		var job struct{ State string }
		rest.poll(ctx, "/jobs/"+run.JobID, &job)
		if job.State == "CANCELED" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("job %s did not reach CANCELED (%s)", run.JobID, job.State)
		}
		time.Sleep(500 * time.Millisecond)
	}

	s := &layout.Scanner{FS: fs}
	rep, err := s.Scan(ctx, []layout.Root{{Path: ckptRoot, Kind: layout.CheckpointRoot}})
	if err != nil {
		t.Fatal(err)
	}
	// The REST checkpoint stats are served from a cache refreshed every few
	// seconds: wait until they name the newest checkpoint on storage (or
	// differ for good, which fails below).
	var latest *struct {
		ID           int64  `json:"id"`
		ExternalPath string `json:"external_path"`
	}
	var newestOnStorage int64 = -1
	if len(rep.Jobs) == 1 {
		if c := rep.Jobs[0].CompletedCheckpoints(); len(c) > 0 {
			newestOnStorage = c[len(c)-1]
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		rest.poll(ctx, "/jobs/"+run.JobID+"/checkpoints", &stats)
		latest = stats.Latest.Completed
		if (latest != nil && latest.ID == newestOnStorage) || time.Now().After(deadline) {
			break
		}
	}
	if latest == nil {
		t.Fatal("no latest completed checkpoint after cancel")
	}
	if len(rep.Unknown) != 0 {
		t.Fatalf("unknown entries in a Flink-written dir: %+v", rep.Unknown)
	}
	if len(rep.Jobs) != 1 || rep.Jobs[0].JobID != run.JobID {
		t.Fatalf("jobs %+v; want one for %s", rep.Jobs, run.JobID)
	}
	job := rep.Jobs[0]
	t.Logf("job %s: checkpoints %+v shared %+v taskowned %+v total %+v", job.JobID, job.Checkpoints, job.Shared, job.TaskOwned, job.Total)
	if !job.HasShared || !job.HasTaskOwn {
		t.Fatalf("shared/taskowned missing: %+v", job)
	}
	if job.Shared.Files == 0 {
		t.Fatal("RocksDB incremental checkpoints left no files in shared/")
	}
	completed := job.CompletedCheckpoints()
	if len(completed) == 0 || len(completed) > 3 || completed[len(completed)-1] != latest.ID {
		t.Fatalf("completed chk ids %v; REST latest completed %d (num-retained 3)", completed, latest.ID)
	}
	wantPath := strings.TrimSuffix(latest.ExternalPath, "/")
	found := false
	for _, c := range job.Checkpoints {
		if c.ID == latest.ID {
			found = c.Path == wantPath && c.Completed && c.Usage.Files >= 1 && c.Usage.Dirs == 1
		}
	}
	if !found {
		t.Fatalf("chk-%d not found as a completed checkpoint at %s", latest.ID, wantPath)
	}
	// The namespace the scan counted equals the namenode's count.
	cs, err := fs.ContentSummary(ctx, job.Path)
	if err != nil {
		t.Fatal(err)
	}
	if cs.Files != job.Total.Files || cs.Dirs != job.Total.Dirs || cs.Length != job.Total.Bytes {
		t.Fatalf("scan total %+v; namenode %+v", job.Total, cs)
	}

	// HA storage of the same cluster: read-only classification.
	ha, err := s.Scan(ctx, []layout.Root{{Path: cluster.HAStorageDir, Kind: layout.HARoot}})
	if err != nil {
		t.Fatal(err)
	}
	var haCluster *layout.HACluster
	for i := range ha.HAClusters {
		if ha.HAClusters[i].ClusterID == cluster.ClusterID {
			haCluster = &ha.HAClusters[i]
		}
	}
	if haCluster == nil {
		t.Fatalf("HA dir of %s not classified: %+v (unknown %+v)", cluster.ClusterID, ha.HAClusters, ha.Unknown)
	}
	// Flink itself wrote everything under the cluster's HA dir, so nothing
	// there may be unknown. (Job results are deleted on commit by default,
	// so the job-result-store may be empty.)
	for _, u := range ha.Unknown {
		if strings.HasPrefix(u.Path, haCluster.Path+"/") {
			t.Fatalf("unknown entry in Flink's HA dir: %+v", u)
		}
	}
	t.Logf("HA %s: %+v; job results %+v; unknown elsewhere %+v", cluster.ClusterID, *haCluster, ha.JobResults, ha.Unknown)
}
