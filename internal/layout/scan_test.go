package layout

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/storage"
)

func writeTree(t *testing.T, root string, files map[string]string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, data := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestScanLocal(t *testing.T) {
	base := t.TempDir()
	ckpt, sp, ha := filepath.Join(base, "ckpt"), filepath.Join(base, "sp"), filepath.Join(base, "ha")
	const job2 = "00000000000000000000000000000002"
	writeTree(t, ckpt, map[string]string{
		job + "/chk-7/_metadata":     "meta",
		job + "/chk-7/exclusive-1":   "xx",
		job + "/chk-8/partial":       "y", // in progress or aborted: no _metadata
		job + "/shared/sst-1":        "123",
		job + "/shared/sst-2":        "45",
		job + "/stray.txt":           "?",
		job2 + "/chk-10/_metadata":   "m",
		"notajob/whatever":           "z",
		"README":                     "r",
		job + "/chk-7/sub/_metadata": "deeper files count but do not complete chk",
	}, job+"/taskowned", job2+"/shared", job2+"/taskowned")
	writeTree(t, sp, map[string]string{
		"savepoint-a1b2c3-0123456789ab/_metadata": "m",
		"savepoint-a1b2c3-0123456789ab/state":     "ss",
		"savepoint-a1b2c3-ba9876543210/state":     "s", // incomplete
		"random-dir/file":                         "f",
	})
	writeTree(t, ha, map[string]string{
		"cl1/completedCheckpoint0123456789ab":             "c",
		"cl1/submittedExecutionPlan0123456789ab":          "p",
		"cl1/blob/job_" + job + "/blob_p-1":               "bb",
		"cl1/blob/no_job/blob_p-2":                        "b",
		"cl1/leftover":                                    "l",
		"job-result-store/cl1/" + job + ".json":           "{}",
		"job-result-store/cl1/" + job2 + "_DIRTY.json":    "{}",
		"job-result-store/cl1/garbage":                    "g",
		"old-cluster/submittedJobGraph0123456789ab":       "g",
		"old-cluster/completedCheckpoint000000000000":     "c",
		"old-cluster/completedCheckpoint111111111111":     "c",
		"old-cluster/blob/job_" + job2 + "/blob_t-1-2-3x": "bbb",
	})
	s := &Scanner{FS: storage.NewLocal(nil), BatchSize: 2}
	rep, err := s.Scan(context.Background(), []Root{{ckpt, CheckpointRoot}, {sp, SavepointRoot}, {ha, HARoot}})
	if err != nil {
		t.Fatal(err)
	}

	if len(rep.Jobs) != 2 {
		t.Fatalf("jobs: %+v", rep.Jobs)
	}
	j := rep.Jobs[1] // sorted by path: job2 (0000...) first
	if j.JobID != job || j.Root != ckpt || !j.HasShared || !j.HasTaskOwn {
		t.Fatalf("job: %+v", j)
	}
	if len(j.Checkpoints) != 2 || j.Checkpoints[0].ID != 7 || !j.Checkpoints[0].Completed || j.Checkpoints[1].ID != 8 || j.Checkpoints[1].Completed {
		t.Fatalf("checkpoints: %+v", j.Checkpoints)
	}
	// chk-7: dir + _metadata + exclusive-1 + sub/ + sub/_metadata.
	if u := j.Checkpoints[0].Usage; u.Files != 3 || u.Dirs != 2 || u.Bytes != int64(4+2+len("deeper files count but do not complete chk")) {
		t.Fatalf("chk-7 usage: %+v", u)
	}
	if j.Shared.Files != 2 || j.Shared.Dirs != 1 || j.Shared.Bytes != 5 || j.TaskOwned.Namespace() != 1 {
		t.Fatalf("shared %+v taskowned %+v", j.Shared, j.TaskOwned)
	}
	// Total covers the job dir itself, both chk dirs, shared, taskowned and
	// the unknown stray file: 1+5+2+3+1+1 = 13 names.
	if j.Total.Namespace() != 13 {
		t.Fatalf("total %+v (namespace %d)", j.Total, j.Total.Namespace())
	}
	if got := j.CompletedCheckpoints(); len(got) != 1 || got[0] != 7 {
		t.Fatalf("completed: %v", got)
	}
	if rep.Jobs[0].JobID != job2 || len(rep.Jobs[0].Checkpoints) != 1 || !rep.Jobs[0].Checkpoints[0].Completed {
		t.Fatalf("job2: %+v", rep.Jobs[0])
	}

	if len(rep.Savepoints) != 2 || !rep.Savepoints[0].Completed || rep.Savepoints[1].Completed || rep.Savepoints[0].JobIDPrefix != "a1b2c3" {
		t.Fatalf("savepoints: %+v", rep.Savepoints)
	}
	if u := rep.Savepoints[0].Usage; u.Files != 2 || u.Dirs != 1 || u.Bytes != 3 {
		t.Fatalf("savepoint usage %+v", u)
	}

	if len(rep.HAClusters) != 2 {
		t.Fatalf("ha: %+v", rep.HAClusters)
	}
	cl := rep.HAClusters[0]
	if cl.ClusterID != "cl1" || cl.CompletedCheckpoints != 1 || cl.SubmittedJobs != 1 || len(cl.BlobJobs) != 1 || cl.BlobJobs[0] != job {
		t.Fatalf("cl1: %+v", cl)
	}
	// blob/ + job_x/ + blob file + no_job/ + blob file.
	if cl.Blob.Files != 2 || cl.Blob.Dirs != 3 {
		t.Fatalf("cl1 blob: %+v", cl.Blob)
	}
	old := rep.HAClusters[1]
	if old.ClusterID != "old-cluster" || old.CompletedCheckpoints != 2 || old.SubmittedJobs != 1 || old.BlobJobs[0] != job2 {
		t.Fatalf("old cluster: %+v", old)
	}
	if len(rep.JobResults) != 2 || rep.JobResults[0].JobID != job2 || !rep.JobResults[0].Dirty || rep.JobResults[1].Dirty || rep.JobResults[0].ClusterID != "cl1" {
		t.Fatalf("job results: %+v", rep.JobResults)
	}

	wantUnknown := []string{
		filepath.Join(ckpt, "README"),
		filepath.Join(ckpt, job, "stray.txt"),
		filepath.Join(ckpt, "notajob"),
		filepath.Join(ha, "cl1", "leftover"),
		filepath.Join(ha, "job-result-store", "cl1", "garbage"),
		filepath.Join(sp, "random-dir"),
	}
	got := map[string]Unknown{}
	for _, u := range rep.Unknown {
		got[strings.TrimPrefix(u.Path, "file://")] = u
	}
	if len(got) != len(wantUnknown) {
		t.Fatalf("unknown: %+v", rep.Unknown)
	}
	for _, p := range wantUnknown {
		u, ok := got[p]
		if !ok || u.Reason == "" {
			t.Fatalf("unknown %s missing or without reason: %+v", p, rep.Unknown)
		}
	}
	if u := got[filepath.Join(ckpt, "notajob")]; u.Usage.Files != 1 || u.Usage.Dirs != 1 || !u.IsDir {
		t.Fatalf("unknown dir usage: %+v", u)
	}
	if rep.Jobs[1].Total.Newest.Before(time.Now().Add(-time.Hour)) {
		t.Fatalf("newest mod time not set: %v", rep.Jobs[1].Total.Newest)
	}
}

func TestScanErrors(t *testing.T) {
	s := &Scanner{FS: storage.NewLocal(nil)}
	_, err := s.Scan(context.Background(), []Root{{filepath.Join(t.TempDir(), "missing"), CheckpointRoot}})
	if !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), "checkpoint-root") {
		t.Fatalf("missing root: %v", err)
	}
	_, err = s.Scan(context.Background(), []Root{{t.TempDir(), RootKind(0)}})
	if err == nil || !strings.Contains(err.Error(), "want CheckpointRoot") {
		t.Fatalf("bad kind: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{job + "/chk-1/_metadata": "m"})
	if _, err := s.Scan(ctx, []Root{{dir, CheckpointRoot}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}
