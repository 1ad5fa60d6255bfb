package drills

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/internal/acttest"
	"github.com/flinkmaint/flinkmaint/internal/checkpoint"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/storage"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/mdwrite"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// copyFixture copies a real Flink 1.20 RocksDB checkpoint (its _metadata
// and the files it references) from ../shared to a temporary dir.
func copyFixture(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join(sandbox.RequireShared(t), "fixtures/flink-metadata", name)
	dst := filepath.Join(t.TempDir(), "chk-10")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// writtenCheckpoint lays out an incremental RocksDB checkpoint whose
// _metadata is written from the spec: shared files named by absolute path
// and private files in its own dir, each as long as its handle says.
func writtenCheckpoint(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "chk-10")
	var shared, private []mdwrite.File
	for i, size := range []int64{300, 200, 100} {
		p := filepath.Join(base, "shared", fmt.Sprintf("%06d.sst", i+1))
		shared = append(shared, mdwrite.File{Path: "file:" + p, Size: size})
		private = append(private, mdwrite.File{Path: fmt.Sprintf("private-%d", i), Size: size / 10})
	}
	for _, f := range shared {
		writeSized(t, strings.TrimPrefix(f.Path, "file:"), f.Size)
	}
	for _, f := range private {
		writeSized(t, filepath.Join(dir, f.Path), f.Size)
	}
	md := mdwrite.Snapshot{CheckpointID: 10, Exclusive: private, Shared: shared}.Bytes()
	if err := os.WriteFile(filepath.Join(dir, "_metadata"), md, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeSized(t *testing.T, p string, size int64) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestProveSnapshotStorageFindsMissingAndShortFiles runs tier 1 over a
// RocksDB checkpoint: whole, it passes; with one referenced file deleted
// and another cut short, it names both, with the bytes the handle reads
// and the operator and subtask whose state needs them; a _metadata that is
// gone or does not parse is reported, not raised. A checkpoint written
// from the spec proves that everywhere; a real one where ../shared is.
func TestProveSnapshotStorageFindsMissingAndShortFiles(t *testing.T) {
	for name, checkpointIn := range map[string]func(t *testing.T) string{
		"written from the spec":        writtenCheckpoint,
		"a real Flink 1.20 checkpoint": func(t *testing.T) string { return copyFixture(t, "v4-flink1.20-rocksdb-checkpoint") },
	} {
		t.Run(name, func(t *testing.T) { proveStorage(t, checkpointIn(t)) })
	}
}

func proveStorage(t *testing.T, dir string) {
	t.Helper()
	a := &Activities{Storage: &storage.Resolver{}}
	prove := func() StorageProof {
		t.Helper()
		var p StorageProof
		if err := acttest.Run(t, a, a.ProveSnapshotStorage, ProveSnapshotInput{Snapshot: dir}, &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	data, err := os.ReadFile(filepath.Join(dir, "_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	md, err := checkpoint.ParseBytes(data, dir+"/_metadata")
	if err != nil {
		t.Fatal(err)
	}
	whole := prove()
	// Every file the _metadata names, and the _metadata itself.
	if !whole.Passed() || whole.Files != int64(len(md.Files))+1 || whole.CheckpointID == 0 {
		t.Fatalf("proof of the whole checkpoint %+v; want it passed over its %d files", whole, len(md.Files))
	}
	var files []checkpoint.Reference
	for r := range md.References() {
		if r.Path != "" && r.Size > 1 {
			files = append(files, r)
		}
	}
	if len(files) < 2 {
		t.Fatalf("fixture references %d files; want 2 or more", len(files))
	}
	gone, cut := files[0], files[1]
	if err := os.Remove(strings.TrimPrefix(gone.Path, "file:")); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(strings.TrimPrefix(cut.Path, "file:"), cut.Size-1); err != nil {
		t.Fatal(err)
	}
	broken := prove()
	if broken.Passed() || len(broken.Problems) != 2 || broken.Files != whole.Files-2 {
		t.Fatalf("proof %+v; want two problems, the other files found", broken)
	}
	for _, p := range broken.Problems {
		want := map[string]string{gone.Path: "missing", cut.Path: "short"}[p.Path]
		if want == "" || p.Problem != want || !strings.HasPrefix(p.Operator, map[string]string{gone.Path: gone.OperatorID, cut.Path: cut.OperatorID}[p.Path]) {
			t.Errorf("problem %+v; want %s naming its operator", p, want)
		}
		if p.Problem == "short" && (p.Have != cut.Size-1 || p.Need < cut.Size) {
			t.Errorf("short file %+v; want have %d, need at least %d", p, cut.Size-1, cut.Size)
		}
	}

	if err := os.WriteFile(filepath.Join(dir, "_metadata"), []byte("not a checkpoint"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p := prove(); p.Passed() || !strings.Contains(p.Unreadable, "does not parse") {
		t.Fatalf("proof of a corrupt _metadata %+v; want it unreadable", p)
	}
	if err := os.Remove(filepath.Join(dir, "_metadata")); err != nil {
		t.Fatal(err)
	}
	if p := prove(); p.Passed() || !strings.Contains(p.Unreadable, "no _metadata") {
		t.Fatalf("proof without _metadata %+v; want it unreadable", p)
	}
}

// TestSelectDrillTargetsRefusesWhatCouldTouchProduction: a real restore
// needs a drill cluster and root of its own; the cluster must not be an
// inventory cluster and the root must not lie in or around a tenant root
// or a cluster's state dirs.
func TestSelectDrillTargetsRefusesWhatCouldTouchProduction(t *testing.T) {
	base := t.TempDir()
	inv := inventory.Inventory{
		Tenants: []inventory.Tenant{{Name: "team-a", Root: base + "/tenants/a"}},
		Clusters: []inventory.Cluster{{Tenant: "team-a", ClusterID: "c1", RESTURL: "http://c1:8081",
			CheckpointDir: base + "/tenants/a/ck", HAStorageDir: base + "/ha/c1"}},
	}
	ff := &acttest.Flink{}
	cases := map[string]struct {
		drill core.DrillSettings
		want  string
	}{
		"no drill cluster":           {core.DrillSettings{Root: base + "/drills"}, "needs drill.clusterRestUrl and drill.root"},
		"an inventory cluster":       {core.DrillSettings{ClusterRESTURL: "http://c1:8081/", Root: base + "/drills"}, "is inventory cluster c1"},
		"root inside a tenant":       {core.DrillSettings{ClusterRESTURL: "http://drill:8081", Root: base + "/tenants/a/drills"}, "overlaps the tenant team-a root"},
		"root around a tenant":       {core.DrillSettings{ClusterRESTURL: "http://drill:8081", Root: base + "/tenants"}, "overlaps the tenant team-a root"},
		"root inside a cluster's HA": {core.DrillSettings{ClusterRESTURL: "http://drill:8081", Root: base + "/ha/c1/drills"}, "overlaps the cluster c1 HA storage dir"},
		"root of its own":            {core.DrillSettings{ClusterRESTURL: "http://drill:8081", Root: base + "/drills"}, ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			a := &Activities{Inventory: acttest.Inventory(inv), Flink: acttest.OneClient{C: ff}, Storage: &storage.Resolver{}, Drill: c.drill}
			var res SelectDrillTargetsResult
			err := acttest.Run(t, a, a.SelectDrillTargets, SelectDrillTargetsInput{Restore: true, RunID: "drill-x"}, &res)
			if c.want == "" {
				if err != nil {
					t.Fatalf("select: %v; want it accepted", err)
				}
				return
			}
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || !appErr.NonRetryable() || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("select: %v; want a final error saying %q", err, c.want)
			}
		})
	}
}

// TestSelectDrillTargetsPicksWhatItIsAskedFor: the latest retained
// checkpoint of each running job in scope (not a savepoint, not a job
// without one), each with its drill recipe completed from the restart
// recipe and a drill dir of its own below the drill root; one named
// snapshot; a random sample per tenant.
func TestSelectDrillTargetsPicksWhatItIsAskedFor(t *testing.T) {
	base := t.TempDir()
	drill := &inventory.DrillRecipe{ProgramArgs: []string{"--sink", "discard"}, SandboxArgs: []string{"--sink", "discard"}}
	inv := inventory.Inventory{
		Tenants: []inventory.Tenant{{Name: "team-a", Root: base + "/a"}},
		Clusters: []inventory.Cluster{{Tenant: "team-a", ClusterID: "c1", RESTURL: "http://c1:8081", Jobs: []inventory.JobSpec{
			{Name: "orders", Restart: inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun, Jar: "/jars/o.jar", EntryClass: "com.example.Orders", Parallelism: 3}, Drill: drill},
		}}},
	}
	ff := &acttest.Flink{
		Jobs: []flink.JobOverview{{ID: "aa", Name: "orders", State: flink.JobRunning}, {ID: "bb", Name: "done", State: flink.JobFinished},
			{ID: "cc", Name: "other", State: flink.JobRunning}},
		Stats: flink.CheckpointingStatistics{
			Latest: flink.LatestCheckpoints{Completed: &flink.CheckpointStatistics{ID: 9, IsSavepoint: true, ExternalPath: base + "/a/sp/savepoint-aa-1"}},
			History: []flink.CheckpointStatistics{
				{ID: 8, Status: "COMPLETED", ExternalPath: base + "/a/ck/aa/chk-8"},
				{ID: 7, Status: "COMPLETED", ExternalPath: base + "/a/ck/aa/chk-7"},
			}},
	}
	a := &Activities{Inventory: acttest.Inventory(inv), Flink: acttest.OneClient{C: ff}, Storage: &storage.Resolver{},
		Drill: core.DrillSettings{ClusterRESTURL: "http://drill:8081", Root: base + "/drills"}}
	var res SelectDrillTargetsResult
	if err := acttest.Run(t, a, a.SelectDrillTargets, SelectDrillTargetsInput{Restore: true, RunID: "drill-nightly-2026-12-01T00:00:00Z",
		Scope: scopeOfJobs("orders", "other")}, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Targets) != 2 {
		t.Fatalf("targets %+v; want orders and other", res.Targets)
	}
	o := res.Targets[0]
	if o.Key != "c1/orders" || o.Snapshot != base+"/a/ck/aa/chk-8" || o.Kind != core.SnapshotCheckpoint || o.JobID != "aa" || o.Recipe == nil ||
		o.Recipe.Jar != "/jars/o.jar" || o.Recipe.EntryClass != "com.example.Orders" || o.Recipe.Parallelism != 3 ||
		o.DrillCluster != "http://drill:8081" || !strings.HasPrefix(o.DrillDir, base+"/drills/drill-nightly-2026-12-01T00_00_00Z/c1/orders-") {
		t.Fatalf("orders %+v; want its latest retained checkpoint, the recipe completed, a drill dir below the root without ':'", o)
	}
	if res.Targets[1].Recipe != nil || res.Targets[1].DrillDir == o.DrillDir {
		t.Fatalf("other %+v; want no recipe (tier 1 only), a drill dir of its own", res.Targets[1])
	}

	sel := DrillSelection{Mode: DrillSnapshot, Job: "c1/orders", Snapshot: base + "/a/sp/savepoint-aa-1/"}
	res = SelectDrillTargetsResult{}
	if err := acttest.Run(t, a, a.SelectDrillTargets, SelectDrillTargetsInput{Selection: sel, RunID: "r"}, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Targets) != 1 || res.Targets[0].Kind != core.SnapshotSavepoint || res.Targets[0].Snapshot != base+"/a/sp/savepoint-aa-1" || res.Targets[0].DrillDir != "" {
		t.Fatalf("named snapshot %+v; want the one savepoint, no drill dir for tier 1", res.Targets)
	}
	sel.Job = "c9/orders"
	if err := acttest.Run(t, a, a.SelectDrillTargets, SelectDrillTargetsInput{Selection: sel, RunID: "r"}, &res); err == nil || !strings.Contains(err.Error(), `no cluster "c9"`) {
		t.Fatalf("snapshot of an unknown cluster: %v; want it named", err)
	}

	many := []core.DrillTarget{{Tenant: "a", Key: "1"}, {Tenant: "a", Key: "2"}, {Tenant: "a", Key: "3"}, {Tenant: "b", Key: "4"}}
	got := samplePerTenant(many, 2)
	per := map[string]int{}
	for _, g := range got {
		per[g.Tenant]++
	}
	if per["a"] != 2 || per["b"] != 1 {
		t.Fatalf("sample %+v; want 2 of tenant a, the 1 of b", got)
	}
}

func scopeOfJobs(jobs ...string) core.Scope { return core.Scope{IncludeJobs: jobs} }

// TestEndDrillRemovesOnlyBelowTheDrillRoot: a drill dir outside the drill
// root, or the root itself, is refused; one below it goes, with the empty
// run dirs above it, and a second call finds nothing to do.
func TestEndDrillRemovesOnlyBelowTheDrillRoot(t *testing.T) {
	base := t.TempDir()
	g, err := storage.NewGuard(base)
	if err != nil {
		t.Fatal(err)
	}
	a := &Activities{Storage: &storage.Resolver{Guard: g}, Drill: core.DrillSettings{ClusterRESTURL: "http://drill:8081", Root: base + "/drills"}}
	for _, bad := range []string{base + "/drills", base + "/tenants/a/ck", base + "/drills/../tenants"} {
		var res EndDrillResult
		err := acttest.Run(t, a, a.EndDrill, EndDrillInput{DrillDir: bad}, &res)
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != core.ErrTypeOutsideRoots {
			t.Errorf("end drill of %s: %v; want %s", bad, err, core.ErrTypeOutsideRoots)
		}
	}
	job := base + "/drills/run-1/c1/orders-0"
	if err := os.MkdirAll(job+"/aa/chk-3", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(job+"/aa/chk-3/_metadata", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		var res EndDrillResult
		if err := acttest.Run(t, a, a.EndDrill, EndDrillInput{DrillDir: job, Snapshot: base + "/gone/chk-1"}, &res); err != nil {
			t.Fatal(err)
		}
		if (i == 0) != (res.Removed == job) || !res.SnapshotGone {
			t.Fatalf("end drill #%d: %+v; want the dir removed once, the snapshot gone", i, res)
		}
		if _, err := os.Stat(base + "/drills/run-1"); !os.IsNotExist(err) {
			t.Fatalf("end drill #%d: run dir left behind: %v", i, err)
		}
	}
	if _, err := os.Stat(base + "/drills"); err != nil {
		t.Fatalf("drill root removed: %v", err)
	}
}

// cancelRecorder is a drill cluster that runs the given jobs until they
// are cancelled.
type cancelRecorder struct {
	core.FlinkAPI
	running   map[string]bool
	cancelled []string
}

func (c *cancelRecorder) JobDetails(_ context.Context, id string) (flink.JobDetails, error) {
	if c.running[id] {
		return flink.JobDetails{ID: id, State: flink.JobRunning}, nil
	}
	return flink.JobDetails{ID: id, State: flink.JobCanceled}, nil
}

func (c *cancelRecorder) CancelJob(_ context.Context, id string) error {
	c.cancelled = append(c.cancelled, id)
	c.running[id] = false
	return nil
}

// TestEndDrillCancelsTheDrillJobs: the copies a drill runs on the drill
// cluster are cancelled when it ends, and said so; one already ended is
// not reported as cancelled.
func TestEndDrillCancelsTheDrillJobs(t *testing.T) {
	const running, ended = "d0000000000000000000000000000001", "d0000000000000000000000000000002"
	drill := &cancelRecorder{running: map[string]bool{running: true}}
	a := &Activities{Flink: acttest.OneClient{C: drill}, PollInterval: time.Millisecond}
	var res EndDrillResult
	if err := acttest.Run(t, a, a.EndDrill, EndDrillInput{DrillCluster: "http://drill:8081", JobIDs: []string{running, ended}}, &res); err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Cancelled, ",") != running || !slices.Contains(drill.cancelled, running) {
		t.Fatalf("cancelled %v (asked %v); want %s", res.Cancelled, drill.cancelled, running)
	}
}

// TestDrillRootMustLieOutsideEveryTenantTree: a drill root inside a
// tenant root or a cluster's state dir, or around one, on the same file
// system, is refused before any drill runs (its cleanup would reach
// production state); one beside them is fine.
func TestDrillRootMustLieOutsideEveryTenantTree(t *testing.T) {
	base := t.TempDir()
	g, err := storage.NewGuard(base)
	if err != nil {
		t.Fatal(err)
	}
	inv := inventory.Inventory{Tenants: []inventory.Tenant{{Name: "a", Root: base + "/tenants/a"}},
		Clusters: []inventory.Cluster{{Tenant: "a", ClusterID: "c1", RESTURL: "http://c1", CheckpointDir: base + "/state/c1/checkpoints"}}}
	for root, refused := range map[string]bool{
		base + "/tenants/a/drills":         true,
		base + "/state/c1/checkpoints/drl": true,
		base + "/state":                    true,
		base + "/drills":                   false,
	} {
		a := &Activities{Storage: &storage.Resolver{Guard: g}, Drill: core.DrillSettings{ClusterRESTURL: "http://drill:8081", Root: root}}
		err := a.checkDrillIsolation(context.Background(), inv)
		if (err != nil) != refused {
			t.Errorf("drill.root %s: %v; want refused %v", root, err, refused)
		}
	}
}
