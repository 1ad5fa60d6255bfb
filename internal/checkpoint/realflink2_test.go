//go:build realpeers

package checkpoint_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"

	"github.com/flinkmaint/flinkmaint/internal/checkpoint"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// TestRealFlink2Metadata parses the _metadata that a real Flink 2.3 writes
// (RocksDB incremental and ForSt with its working files on HDFS; checkpoints,
// canonical and native savepoints) and accounts for every file: each file a
// snapshot references exists, and each file in a chk-N or savepoint dir is
// referenced by its _metadata.
func TestRealFlink2Metadata(t *testing.T) {
	peers := sandbox.RequirePeersLine(t, sandbox.Line2)
	cluster := peers.Clusters[0]
	hc, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{peers.HDFS.NameNode}, User: peers.HDFS.User})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hc.Close() })
	fc, err := flink.New(flink.Options{BaseURL: cluster.RESTURL})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		formats []flink.SavepointFormat
		primary bool // --forst-primary-dir under the test root
	}{
		{"rocksdb-incremental", nil, []flink.SavepointFormat{flink.SavepointFormatCanonical, flink.SavepointFormatNative}, false},
		// ForSt takes native savepoints only (a canonical one fails the job over).
		{"forst-primary-dir-default", []string{"--state-backend", "forst"}, []flink.SavepointFormat{flink.SavepointFormatNative}, false},
		{"forst-primary-dir-explicit", []string{"--state-backend", "forst"}, []flink.SavepointFormat{flink.SavepointFormatNative}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			root := fmt.Sprintf("/user/app/%s/tests/metadata2-%s-%d", cluster.Tenant, tc.name, time.Now().UnixNano())
			// Removed only once the job has ended: ForSt writes its working files there
			// until its task is gone, and removing them under a live task poisons it.
			var jobID string
			t.Cleanup(func() {
				if jobID != "" {
					cancelAndAwait(t, fc, jobID)
				}
				_ = hc.RemoveAll(root)
			})
			jarID, err := fc.UploadJar(ctx, peers.SampleJob.Jar)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = fc.DeleteJar(context.Background(), jarID) })
			args := append([]string{"--job-name", "metadata2-" + tc.name, "--keys", "3000", "--value-bytes", "256", "--rate", "1000",
				"--checkpoint-dir", peers.HDFS.URI + root + "/checkpoints"}, tc.args...)
			if tc.primary {
				args = append(args, "--forst-primary-dir", peers.HDFS.URI+root+"/forst")
			}
			run, err := fc.RunJar(ctx, jarID, flink.RunJarRequest{EntryClass: peers.SampleJob.EntryClass, ProgramArgs: args})
			if err != nil {
				t.Fatal(err)
			}
			jobID = run.JobID

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
			// Savepoints first: the running job keeps its retained checkpoints meanwhile.
			var savepoints []string
			for _, f := range tc.formats {
				tr, err := fc.TriggerSavepoint(ctx, run.JobID, flink.SavepointRequest{TargetDirectory: peers.HDFS.URI + root + "/savepoints", FormatType: f})
				if err != nil {
					t.Fatal(err)
				}
				sp, err := fc.AwaitSavepoint(ctx, run.JobID, tr.TriggerID)
				if err != nil {
					t.Fatalf("%s savepoint: %v", f, err)
				}
				savepoints = append(savepoints, sp)
			}
			stats, err := fc.Checkpoints(ctx, run.JobID)
			if err != nil || stats.Latest.Completed == nil {
				t.Fatalf("checkpoint stats: %+v, %v", stats.Latest, err)
			}
			chk := strings.TrimPrefix(stats.Latest.Completed.ExternalPath, peers.HDFS.URI)
			jobDir := root + "/checkpoints/" + run.JobID
			owned := []string{jobDir + "/"}
			if tc.primary {
				owned = append(owned, root+"/forst/"+run.JobID+"/")
			}
			md := accountFor(t, hc, peers.HDFS.URI, chk, owned)
			if md.CheckpointID != stats.Latest.Completed.ID {
				t.Errorf("parsed checkpoint id %d, Flink says %d", md.CheckpointID, stats.Latest.Completed.ID)
			}
			if tc.name == "rocksdb-incremental" {
				if n := countScope(md, checkpoint.ScopeShared); n == 0 {
					t.Errorf("incremental RocksDB checkpoint %s references no shared files", chk)
				}
			}
			for i, sp := range savepoints {
				spDir := strings.TrimRight(strings.TrimPrefix(sp, peers.HDFS.URI), "/")
				smd := accountFor(t, hc, peers.HDFS.URI, spDir, []string{spDir + "/"})
				if smd.Properties == nil || smd.Properties.FormatType != string(tc.formats[i]) {
					t.Errorf("savepoint %s: properties %+v, want formatType %s", sp, smd.Properties, tc.formats[i])
				}
			}
		})
	}
}

// accountFor parses dir/_metadata and checks that every referenced file
// exists under one of the owned prefixes, and that every file in dir itself
// (recursively, but _metadata) is referenced.
func accountFor(t *testing.T, hc *hdfs.Client, uri, dir string, owned []string) *checkpoint.Metadata {
	t.Helper()
	md := parseHDFS(t, hc, uri, dir+"/_metadata")
	refs := map[string]checkpoint.File{}
	byScope := map[string]int{}
	for _, f := range md.Files {
		p := strings.TrimPrefix(f.Path, uri)
		refs[p] = f
		parent := p[:strings.LastIndex(p, "/")]
		for _, o := range owned {
			parent = strings.Replace(parent, strings.TrimSuffix(o, "/"), "<"+o[strings.LastIndex(strings.TrimSuffix(o, "/"), "/")+1:len(o)-1]+">", 1)
		}
		byScope[f.Scope.String()+" "+f.Kind.String()+" in "+parent]++
		inside := false
		for _, o := range owned {
			inside = inside || strings.HasPrefix(p, o)
		}
		if !inside {
			t.Errorf("%s references %s outside %v", dir, f.Path, owned)
		}
		if _, err := hc.Stat(p); err != nil {
			t.Errorf("%s references %s: %v", dir, f.Path, err)
		}
	}
	var unreferenced []string
	var walk func(string)
	walk = func(d string) {
		entries, err := hc.ReadDir(d)
		if err != nil && !os.IsNotExist(err) {
			t.Errorf("list %s: %v", d, err)
			return
		}
		for _, e := range entries {
			p := d + "/" + e.Name()
			switch {
			case e.IsDir():
				walk(p)
			case p == dir+"/_metadata":
			default:
				if _, ok := refs[p]; !ok {
					unreferenced = append(unreferenced, p)
				}
			}
		}
	}
	walk(dir)
	sort.Strings(unreferenced)
	if len(unreferenced) > 0 {
		t.Errorf("%s holds files its _metadata does not reference: %v", dir, unreferenced)
	}
	t.Logf("%s: %d files referenced (by scope/kind %v); every file in the dir referenced", dir, len(md.Files), byScope)
	return md
}

func countScope(md *checkpoint.Metadata, s checkpoint.Scope) int {
	n := 0
	for _, f := range md.Files {
		if f.Scope == s {
			n++
		}
	}
	return n
}

const cancelWait = 3 * time.Minute

// cancelAndAwait cancels a job and waits until Flink reports it ended.
// A ForSt task cancelled with a checkpoint in flight can wait in its
// backend's dispose until the TaskManager's cancellation watchdog acts,
// 60 s later; cancelWait leaves room beyond that.
func cancelAndAwait(t *testing.T, fc *flink.Client, jobID string) {
	ctx, cancel := context.WithTimeout(context.Background(), cancelWait)
	defer cancel()
	_ = fc.CancelJob(ctx, jobID)
	for {
		st, err := fc.JobState(ctx, jobID)
		if err == nil && st.IsGloballyTerminal() {
			return
		}
		select {
		case <-ctx.Done():
			t.Errorf("job %s not ended %s after cancel: %s, %v", jobID, cancelWait, st, err)
			return
		case <-time.After(300 * time.Millisecond):
		}
	}
}
