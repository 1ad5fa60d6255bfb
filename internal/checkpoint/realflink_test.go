//go:build realpeers

package checkpoint_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"

	"github.com/flinkmaint/flinkmaint/internal/checkpoint"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// TestRealIncrementalCheckpointsAndSavepoint parses what the sandbox's real
// Flink writes to HDFS: the _metadata of RocksDB incremental checkpoints
// references files in the job's shared/ dir (some written by older
// checkpoints) and every referenced file exists; a savepoint's references
// all lie inside the savepoint dir.
func TestRealIncrementalCheckpointsAndSavepoint(t *testing.T) {
	peers := sandbox.RequirePeers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	root := "/flinkmaint-test/checkpoint-" + hex.EncodeToString(b)
	hc, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{peers.HDFS.NameNode}, User: peers.HDFS.User})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hc.RemoveAll(root); _ = hc.Close() })

	cluster := peers.Clusters[0]
	fc, err := flink.New(flink.Options{BaseURL: cluster.RESTURL})
	if err != nil {
		t.Fatal(err)
	}
	jarID, err := fc.UploadJar(ctx, peers.SampleJob.Jar)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fc.DeleteJar(context.Background(), jarID) })
	run, err := fc.RunJar(ctx, jarID, flink.RunJarRequest{EntryClass: peers.SampleJob.EntryClass, ProgramArgs: []string{
		"--job-name", "metadata-reader-test", "--keys", "5000", "--value-bytes", "512", "--rate", "2000",
		"--checkpoint-dir", peers.HDFS.URI + root + "/checkpoints"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fc.CancelJob(context.Background(), run.JobID) })

	// Wait for several completed checkpoints so later ones reuse shared
	// files uploaded by earlier ones.
	var latest *flink.CheckpointStatistics
	for ctx.Err() == nil {
		stats, err := fc.Checkpoints(ctx, run.JobID)
		if err == nil && stats.Counts.Completed >= 4 && stats.Latest.Completed != nil {
			latest = stats.Latest.Completed
			break
		}
		time.Sleep(time.Second)
	}
	if latest == nil {
		t.Fatal("job completed fewer than 4 checkpoints")
	}
	jobDir := root + "/checkpoints/" + run.JobID
	md := parseHDFS(t, hc, peers.HDFS.URI, strings.TrimPrefix(latest.ExternalPath, peers.HDFS.URI)+"/_metadata")
	shared := 0
	for _, f := range md.Files {
		p := strings.TrimPrefix(f.Path, peers.HDFS.URI)
		if !strings.HasPrefix(p, jobDir+"/") {
			t.Errorf("checkpoint references %s outside its job dir %s", f.Path, jobDir)
		}
		if f.Scope == checkpoint.ScopeShared {
			shared++
			if !strings.HasPrefix(p, jobDir+"/shared/") {
				t.Errorf("shared-scope file %s is not under shared/", f.Path)
			}
		}
		if _, err := hc.Stat(p); err != nil {
			t.Errorf("referenced file %s: %v", f.Path, err)
		}
	}
	if shared == 0 {
		t.Fatalf("incremental RocksDB checkpoint %d references no shared/ files: %+v", md.CheckpointID, md.Files)
	}
	if md.CheckpointID != latest.ID {
		t.Errorf("parsed checkpoint id %d, Flink says %d", md.CheckpointID, latest.ID)
	}

	tr, err := fc.TriggerSavepoint(ctx, run.JobID, flink.SavepointRequest{TargetDirectory: peers.HDFS.URI + root + "/savepoints"})
	if err != nil {
		t.Fatal(err)
	}
	spPath, err := fc.AwaitSavepoint(ctx, run.JobID, tr.TriggerID)
	if err != nil {
		t.Fatal(err)
	}
	sp := parseHDFS(t, hc, peers.HDFS.URI, strings.TrimPrefix(spPath, peers.HDFS.URI)+"/_metadata")
	if len(sp.Files) == 0 {
		t.Fatal("savepoint references no files")
	}
	spDir := strings.TrimRight(strings.TrimPrefix(spPath, peers.HDFS.URI), "/") + "/"
	for _, f := range sp.Files {
		p := strings.TrimPrefix(f.Path, peers.HDFS.URI)
		if !strings.HasPrefix(p, spDir) {
			t.Errorf("savepoint references %s outside %s", f.Path, spDir)
		}
		if _, err := hc.Stat(p); err != nil {
			t.Errorf("savepoint file %s: %v", f.Path, err)
		}
	}
}

func parseHDFS(t *testing.T, hc *hdfs.Client, uri, path string) *checkpoint.Metadata {
	t.Helper()
	f, err := hc.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	md, err := checkpoint.ParseBytes(data, uri+path)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	t.Logf("%s: version %d, checkpoint %d, %d files", path, md.Version, md.CheckpointID, len(md.Files))
	return md
}
