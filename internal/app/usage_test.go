//go:build realpeers

package app_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/metrics"
	"github.com/flinkmaint/flinkmaint/internal/storage"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/internal/usage"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// testFigures are files, dirs and bytes as the test counts them.
type testFigures struct{ files, dirs, bytes int64 }

func (f testFigures) String() string {
	return fmt.Sprintf("%d files, %d dirs, %d bytes", f.files, f.dirs, f.bytes)
}

var (
	usageJobID     = regexp.MustCompile(`^[0-9a-f]{32}$`)
	usageSavepoint = regexp.MustCompile(`^savepoint-[0-9a-f]{6}-[0-9a-f]{12}$`)
)

// usageKindOf classifies a path of the test tenant by its place alone,
// apart from internal/usage: checkpoints/, savepoints/, ha/, trash/ and
// .flinkmaint/ right under the tenant root, anything else unknown.
func usageKindOf(rel string, isDir bool) string {
	parts := strings.Split(rel, "/")
	known := len(parts) > 2 || isDir // a file right in a root is no job dir or savepoint
	switch {
	case rel == "":
		return "structure"
	case rel == "checkpoints", rel == "savepoints", rel == "ha":
		return rel
	case parts[0] == "checkpoints" && usageJobID.MatchString(parts[1]) && known:
		if len(parts) > 2 && (parts[2] == "shared" || parts[2] == "taskowned") {
			return parts[2]
		}
		return "checkpoints"
	case parts[0] == "savepoints" && usageSavepoint.MatchString(parts[1]) && known:
		return "savepoints"
	case parts[0] == "ha" && known:
		return "ha"
	case parts[0] == "trash":
		return "trash"
	case parts[0] == ".flinkmaint":
		return "flinkmaint"
	}
	return "unknown"
}

// walkTenant lists the tenant root recursively through the storage
// package's HDFS client and counts every entry under its kind, and under
// the subtree it lies in when subtrees names one.
func walkTenant(t *testing.T, ctx context.Context, e *failClosedEnv, root string, subtrees ...string) (map[string]testFigures, map[string]testFigures) {
	t.Helper()
	fs, p, err := e.acts.Storage.Resolve(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	base := strings.TrimRight(p, "/")
	kinds, under := map[string]testFigures{}, map[string]testFigures{}
	err = fs.Walk(ctx, p, func(fi storage.FileInfo) error {
		rel := strings.TrimPrefix(strings.TrimPrefix(fi.Path, base), "/")
		one := testFigures{dirs: 1}
		if !fi.IsDir {
			one = testFigures{files: 1, bytes: fi.Size}
		}
		add := func(m map[string]testFigures, k string) {
			f := m[k]
			m[k] = testFigures{f.files + one.files, f.dirs + one.dirs, f.bytes + one.bytes}
		}
		add(kinds, usageKindOf(rel, fi.IsDir))
		for _, s := range subtrees {
			if rel == s || strings.HasPrefix(rel, s+"/") {
				add(under, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return kinds, under
}

// TestUsageEqualsAWalkOfTheTenantRootOnRealPeers runs a real Flink job
// with RocksDB incremental checkpoints and a savepoint on the sandbox
// HDFS, copies its HA blob dir into the tenant's HA root, adds what no
// layout explains, and runs `usage` through the StorageUsage workflow on a
// worker: files, dirs and bytes per kind equal a walk of the tenant root;
// the job's checkpoints, shared files, savepoint and HA blobs are its
// logical job's; the second sample reports the first as growth; the
// gauges carry the per-kind figures.
func TestUsageEqualsAWalkOfTheTenantRootOnRealPeers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	name := "usage-orders-" + peertest.RandomHex(4)
	var tenantRoot string
	e := newFailClosedEnvWith(t, ctx, func(e *failClosedEnv, s *inventory.Static, cfg *config.Config) {
		tenantRoot = e.root + "/a"
		s.Clusters[0].HAStorageDir = tenantRoot + "/ha"
		// Trash inside the tenant root: it counts against the quota there.
		cfg.Cleanup.TrashRoot = tenantRoot + "/trash"
	})
	gov, err := metrics.NewGovernance(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	e.acts.Metrics = gov
	const queue = "usage-e2e"
	w := worker.New(tmp.Client, queue, worker.Options{})
	app.Register(w, e.acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	ca := e.peers.Clusters[0]
	fc, jobID := e.start(ctx, ca, name, tenantRoot+"/checkpoints", "", "", nil)
	e.checkpointed(ctx, fc, jobID, 2)
	tr, err := fc.TriggerSavepoint(ctx, jobID, flink.SavepointRequest{TargetDirectory: tenantRoot + "/savepoints"})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := fc.AwaitSavepoint(ctx, jobID, tr.TriggerID)
	if err != nil {
		t.Fatal(err)
	}
	// The job's blobs as Flink's HA blob store wrote them, while it runs.
	haBlob := "ha/" + ca.ClusterID + "/blob/job_" + jobID
	src := strings.TrimPrefix(ca.HAStorageDir, e.peers.HDFS.URI) + "/" + ca.ClusterID + "/blob/job_" + jobID
	if _, err := e.peers.HadoopShell(ctx, "-mkdir", "-p", e.plain+"/a/ha/"+ca.ClusterID+"/blob"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.peers.HadoopShell(ctx, "-cp", src, e.plain+"/a/"+haBlob); err != nil {
		t.Fatal(err)
	}
	e.cancel(ctx, fc, jobID) // checkpoints are retained on cancellation
	// What no job is known for, and what no layout explains.
	stray := "checkpoints/" + peertest.RandomHex(16)
	fs, _, err := e.acts.Storage.Resolve(ctx, tenantRoot)
	if err != nil {
		t.Fatal(err)
	}
	for path, size := range map[string]int{
		stray + "/chk-1/_metadata":       10,
		"savepoints/not-a-savepoint.txt": 20,
		"trash/run-1/user/old/file":      30,
		"loose/file":                     40,
	} {
		if err := fs.MkdirAll(ctx, storage.ParentOf(tenantRoot+"/"+path)); err != nil {
			t.Fatal(err)
		}
		if err := fs.WriteFile(ctx, tenantRoot+"/"+path, make([]byte, size)); err != nil {
			t.Fatal(err)
		}
	}
	// Flink discards the checkpoint in flight at cancellation on its own
	// time: wait until two walks agree.
	var last string
	e.waitFor(ctx, time.Minute, "a quiet tenant root", func() (bool, string) {
		k, _ := walkTenant(t, ctx, e, tenantRoot)
		now := fmt.Sprint(k)
		quiet := now == last
		last = now
		return quiet, now
	})

	sample := func() usage.Report {
		t.Helper()
		run, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.UsageWorkflowID(peertest.RandomHex(6)), TaskQueue: queue},
			workflows.UsageWorkflowType, capacity.TenantUsageInput{Tenants: []string{e.tenant[0]}, Top: 3})
		if err != nil {
			t.Fatal(err)
		}
		var res capacity.TenantUsageResult
		if err := run.Get(ctx, &res); err != nil {
			t.Fatalf("usage: %v", err)
		}
		if len(res.Tenants) != 1 || res.Tenants[0].Tenant != e.tenant[0] {
			t.Fatalf("usage %+v; want tenant %s alone", res, e.tenant[0])
		}
		return res.Tenants[0]
	}
	first := sample()
	for _, k := range first.Kinds {
		if k.Growth != nil {
			t.Fatalf("first sample reports growth %+v for %s; want none", *k.Growth, k.Kind)
		}
	}
	// The first run catalogued the savepoint and wrote its sample; the
	// second walks a tree that no longer changes.
	want, subtree := walkTenant(t, ctx, e, tenantRoot, "checkpoints/"+jobID, haBlob, "savepoints/"+sp[strings.LastIndex(sp, "/")+1:], stray)
	rep := sample()

	var sum testFigures
	for _, k := range rep.Kinds {
		got := testFigures{k.Files, k.Dirs, k.Bytes}
		if got != want[string(k.Kind)] {
			t.Errorf("kind %s: usage says %s; the walk of %s finds %s", k.Kind, got, tenantRoot, want[string(k.Kind)])
		}
		sum = testFigures{sum.files + got.files, sum.dirs + got.dirs, sum.bytes + got.bytes}
		if m := metricValue(t, gov.UsageFiles.WithLabelValues(e.tenant[0], string(k.Kind))); int64(m) != k.Files {
			t.Errorf("flinkmaint_usage_files{kind=%q} = %v; want %d", k.Kind, m, k.Files)
		}
		if m := metricValue(t, gov.UsageBytes.WithLabelValues(e.tenant[0], string(k.Kind))); int64(m) != k.Bytes {
			t.Errorf("flinkmaint_usage_bytes{kind=%q} = %v; want %d", k.Kind, m, k.Bytes)
		}
		if k.Growth == nil {
			t.Errorf("second sample has no growth for %s", k.Kind)
		} else if g, prev := *k.Growth, first.Kinds; g != k.Figures.Sub(kindFigures(prev, k.Kind)) {
			t.Errorf("kind %s: growth %+v; want %+v", k.Kind, g, k.Figures.Sub(kindFigures(prev, k.Kind)))
		}
	}
	if total := (testFigures{rep.Total.Files, rep.Total.Dirs, rep.Total.Bytes}); total != sum {
		t.Errorf("total %s; kinds add up to %s", total, sum)
	}
	for _, k := range []string{"checkpoints", "shared", "savepoints", "ha", "trash", "flinkmaint", "unknown"} {
		if want[k].files == 0 {
			t.Errorf("the walk finds no files of kind %s: the test tree lacks what it should prove", k)
		}
	}
	if g := rep.Kinds; kindGrowth(g, usage.KindFlinkmaint).Files < 2 {
		t.Errorf("flinkmaint growth %+v; want at least the catalog entry and the sample of the first run", kindGrowth(g, usage.KindFlinkmaint))
	}

	// The job's rows: its job dir (checkpoints, shared, taskowned), its
	// savepoint and its HA blobs.
	logical := e.tenant[0] + "/" + ca.ClusterID + "/" + name
	var job *usage.JobUsage
	for i := range rep.Jobs {
		if rep.Jobs[i].Job == logical {
			job = &rep.Jobs[i]
		}
	}
	if job == nil {
		t.Fatalf("no row for %s in %+v", logical, rep.Jobs)
	}
	byKind := map[usage.Kind]usage.Figures{}
	for _, k := range job.Kinds {
		byKind[k.Kind] = k.Figures
	}
	jobDir := byKind[usage.KindCheckpoints].Add(byKind[usage.KindShared]).Add(byKind[usage.KindTaskOwned])
	for _, c := range []struct {
		what string
		got  usage.Figures
		want testFigures
	}{
		{"job dir", jobDir, subtree["checkpoints/"+jobID]},
		{"savepoint", byKind[usage.KindSavepoints], subtree["savepoints/"+sp[strings.LastIndex(sp, "/")+1:]]},
		{"HA blobs", byKind[usage.KindHA], subtree[haBlob]},
	} {
		if (testFigures{c.got.Files, c.got.Dirs, c.got.Bytes}) != c.want || c.want.files == 0 {
			t.Errorf("%s of %s: usage says %+v; the walk finds %s", c.what, logical, c.got, c.want)
		}
	}
	if byKind[usage.KindShared].Files == 0 {
		t.Errorf("%s has no shared/ files: RocksDB incremental checkpoints write there", logical)
	}
	if len(rep.TopFiles) == 0 || rep.TopFiles[0].Job != logical {
		t.Errorf("top offenders by files %+v; want %s first", rep.TopFiles, logical)
	}
	for _, j := range rep.Jobs {
		if j.Job != usage.Unattributed {
			continue
		}
		for _, k := range j.Kinds {
			if k.Kind == usage.KindCheckpoints && k.Files < subtree[stray].files {
				t.Errorf("unattributed checkpoints %+v; want at least the job dir no history knows (%s)", k.Figures, subtree[stray])
			}
		}
	}
}

func kindFigures(ks []usage.KindUsage, k usage.Kind) usage.Figures {
	for _, x := range ks {
		if x.Kind == k {
			return x.Figures
		}
	}
	return usage.Figures{}
}

func kindGrowth(ks []usage.KindUsage, k usage.Kind) usage.Figures {
	for _, x := range ks {
		if x.Kind == k && x.Growth != nil {
			return *x.Growth
		}
	}
	return usage.Figures{}
}
