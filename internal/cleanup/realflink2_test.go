//go:build realpeers

package cleanup_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// TestRealForStWorkingFilesNeverPlannedWhileLive plans a cleanup over a
// real Flink 2.3 ForSt job whose working files live on HDFS under
// <job>/shared/op_…__attempt_<n>/ (primary dir default), with the planner's
// clock a quarter year ahead so every file is past every grace period.
// While the job runs nothing in its working dir is planned; once it is gone
// the usual rules apply and nothing its retained checkpoints reference is
// planned. (No failover here: on 2.3.0 a DFS-resident ForSt job that failed
// over could hang when cancelled, see sandbox/java/README.md; the planner
// test covers an old attempt's dir.)
func TestRealForStWorkingFilesNeverPlannedWhileLive(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	peers := sandbox.RequirePeersLine(t, sandbox.Line2)
	cluster := peers.Clusters[0]
	base := realTestBase + "/forst-" + randHex(6)
	if _, err := peers.HadoopShell(ctx, "-mkdir", "-p", base+"/checkpoints"); err != nil {
		t.Fatalf("create test tree: %v", err)
	}
	guard, err := storage.NewGuard(realTestBase)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := storage.NewHDFS(ctx, storage.HDFSOptions{URI: peers.HDFS.URI, User: peers.HDFS.User, HadoopConfDir: t.TempDir(), Guard: guard})
	if err != nil {
		t.Fatalf("HDFS: %v", err)
	}
	fl, err := flink.New(flink.Options{BaseURL: cluster.RESTURL, RequestTimeout: 30 * time.Second, PollInterval: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	jarID, err := fl.UploadJar(ctx, peers.SampleJob.Jar)
	if err != nil {
		t.Fatalf("upload sample job: %v", err)
	}
	var jobID string
	// One cleanup, in order: the job ends before its files go (ForSt writes
	// there until its task is gone).
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if jobID != "" {
			_ = fl.CancelJob(ctx, jobID)
			awaitTerminal(ctx, t, fl, jobID)
		}
		_ = fl.DeleteJar(ctx, jarID)
		if err := fs.RemoveAll(ctx, base); err != nil {
			t.Errorf("remove test tree %s: %v", base, err)
		}
		fs.Close()
	})

	ckptRoot := peers.HDFS.URI + base + "/checkpoints"
	run, err := fl.RunJar(ctx, jarID, flink.RunJarRequest{EntryClass: peers.SampleJob.EntryClass, ProgramArgs: []string{
		"--checkpoint-dir", ckptRoot, "--keys", "2000", "--value-bytes", "256", "--rate", "500",
		"--job-name", "cleanup-forst", "--state-backend", "forst"}})
	if err != nil {
		t.Fatalf("start ForSt job: %v", err)
	}
	jobID = run.JobID
	awaitCompleted(ctx, t, fl, jobID, 5)

	roots := []layout.Root{{Path: ckptRoot, Kind: layout.CheckpointRoot}}
	jobDir := ckptRoot + "/" + jobID
	plan := func(live bool) cleanup.Plan {
		t.Helper()
		listing, err := cleanup.Gather(ctx, fs, roots, cleanup.GatherOptions{})
		if err != nil {
			t.Fatalf("gather: %v", err)
		}
		inv := cleanup.Live{Clusters: []cleanup.LiveCluster{{ClusterID: cluster.ClusterID}}}
		if live {
			inv.Clusters[0].Jobs = []cleanup.LiveJob{{JobID: jobID}}
		}
		p, err := cleanup.BuildPlan(cleanup.Input{Now: time.Now().Add(90 * 24 * time.Hour), Listing: listing, Live: inv,
			Policy: cleanup.Policy{Grace: 3 * time.Second}, Tenants: []inventory.Tenant{{Name: cluster.Tenant, Root: peers.HDFS.URI + base}}})
		if err != nil {
			t.Fatalf("plan: %v", err)
		}
		return p
	}
	working := func(p string) bool {
		rel, ok := strings.CutPrefix(p, jobDir+"/shared/")
		first, _, nested := strings.Cut(rel, "/")
		_, forst := layout.ParseForStWorkingDir(first)
		return ok && nested && forst
	}

	p := plan(true)
	attempts := map[string]bool{}
	keptForSt := 0
	for _, k := range p.Keep {
		if working(k.Path) {
			attempts[strings.SplitN(strings.TrimPrefix(k.Path, jobDir+"/shared/"), "/", 2)[0]] = true
		}
		if k.Reason == cleanup.KeepForStWorkingState {
			keptForSt++
		}
	}
	for _, d := range p.Delete {
		if working(d.Path) || strings.HasPrefix(jobDir, d.Path) {
			t.Errorf("live ForSt job %s: planned %s (%s: %s)", jobID, d.Path, d.Rule, d.Detail)
		}
	}
	if len(attempts) == 0 {
		t.Errorf("no ForSt working dir under %s/shared among the kept files", jobDir)
	}
	t.Logf("live: %d deletions, %d kept; %d working files kept as %s (unreferenced by any checkpoint); attempts %v",
		len(p.Delete), len(p.Keep), keptForSt, cleanup.KeepForStWorkingState, attempts)

	// Gone: cancelled (its checkpoints retained). Only what no retained
	// checkpoint references may be planned now.
	_ = fl.CancelJob(ctx, jobID)
	awaitTerminal(ctx, t, fl, jobID)
	p = plan(false)
	planned := 0
	for _, d := range p.Delete {
		if working(d.Path) {
			planned++
		}
	}
	for _, k := range p.Keep {
		if k.Reason == cleanup.KeepForStWorkingState {
			t.Errorf("job %s is gone, yet %s is kept as %s", jobID, k.Path, k.Reason)
		}
	}
	t.Logf("gone: %d deletions (%d in ForSt working dirs), %d kept", len(p.Delete), planned, len(p.Keep))
}

func awaitCompleted(ctx context.Context, t *testing.T, fl *flink.Client, jobID string, n int64) int64 {
	t.Helper()
	for {
		st, err := fl.Checkpoints(ctx, jobID)
		if err == nil && st.Counts.Completed >= n {
			return st.Counts.Completed
		}
		select {
		case <-ctx.Done():
			t.Fatalf("job %s: fewer than %d completed checkpoints (%v)", jobID, n, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func awaitTerminal(ctx context.Context, t *testing.T, fl *flink.Client, jobID string) {
	t.Helper()
	for {
		st, err := fl.JobState(ctx, jobID)
		if err == nil && st.IsGloballyTerminal() {
			return
		}
		select {
		case <-ctx.Done():
			t.Errorf("job %s not ended: %s, %v", jobID, st, err)
			return
		case <-time.After(300 * time.Millisecond):
		}
	}
}
