package cleanup

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/storage"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/mdwrite"
)

// The checks an executor makes on its configuration and the plan before it
// touches anything, each in a case of its own: with the others passing, the
// case's plan would otherwise be carried out.
func TestExecutorRefusesBeforeItTouchesAnything(t *testing.T) {
	e := newLocalEnv(t)
	e.garbage()
	good := e.plan(Live{}, Policy{})
	retired := e.uri("checkpoints/0123456789abcdef0123456789abcdef")
	if good.Delete[0].Path != retired {
		t.Fatalf("first item %s; want the retired job's dir %s", good.Delete[0].Path, retired)
	}
	outside := t.TempDir()
	// A second trash root, so a case using it fails only by its own check.
	if err := os.MkdirAll(filepath.Join(e.trash, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	guard := func(roots ...string) *storage.Guard {
		g, err := storage.NewGuard(roots...)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	cases := map[string]struct {
		mod  func(p *Plan)
		cfg  func(c *ExecutorConfig)
		kind error
	}{
		"item inside the trash root": {mod: func(p *Plan) {
			p.Delete = append(p.Delete, Item{Path: "file://" + e.trash + "/x", Kind: KindSharedFile, Rule: RuleUnreferencedState})
		}, kind: ErrInvalidPlan},
		"item holding the trash root": {cfg: func(c *ExecutorConfig) {
			c.TrashRoot, c.AuditRoot = retired+"/trash", "file://"+e.trash+"/_audit"
		}, kind: ErrInvalidPlan},
		"item inside the audit root": {mod: func(p *Plan) {
			p.Delete = append(p.Delete, Item{Path: "file://" + e.trash + "/_audit/x", Kind: KindSharedFile, Rule: RuleUnreferencedState})
		}, cfg: func(c *ExecutorConfig) {
			c.TrashRoot, c.AuditRoot = "file://"+e.trash+"/bin", "file://"+e.trash+"/_audit"
		}, kind: ErrInvalidPlan},
		"item holding the audit root": {cfg: func(c *ExecutorConfig) { c.AuditRoot = retired + "/audit" }, kind: ErrInvalidPlan},
		// The manifest may be written, the moves to the trash may not.
		"trash paths not guarded": {cfg: func(c *ExecutorConfig) { c.Guard = guard(e.tenant, e.trash+"/_audit") }, kind: ErrOutsideRoots},
		// The file system would write the manifest there; the executor's
		// guard does not allow it.
		"audit root not guarded": {cfg: func(c *ExecutorConfig) {
			c.FS = storage.NewLocal(guard(e.tenant, e.trash, outside))
			c.AuditRoot = "file://" + outside + "/audit"
		}, kind: ErrOutsideRoots},
		"trash root missing": {cfg: func(c *ExecutorConfig) { c.TrashRoot = "file://" + e.trash + "/missing" }, kind: ErrInvalidConfig},
		// Version 2 may hold objects: it is refused for want of Kubernetes
		// access, not as a version that cannot hold them.
		"version 2 with objects without Kubernetes access": {mod: func(p *Plan) {
			p.Version = 2
			p.Objects = append(p.Objects, ObjectItem{Path: "kubernetes://team-a/ConfigMap/gone-cluster-config-map", Kind: KindHAConfigMap, Rule: RuleOrphanHAConfigMap})
		}, kind: ErrInvalidConfig},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var p Plan
			data, _ := json.Marshal(good)
			_ = json.Unmarshal(data, &p)
			if tc.mod != nil {
				tc.mod(&p)
			}
			_, err := e.executor("r-"+strings.ReplaceAll(name, " ", "-"), tc.cfg).Run(context.Background(), p)
			if !errors.Is(err, tc.kind) || IsRetryable(err) {
				t.Fatalf("err %v; want non-retryable %v", err, tc.kind)
			}
			for _, it := range good.Delete {
				if !e.exists(it.Path) {
					t.Fatalf("%s touched by a refused plan", it.Path)
				}
			}
		})
	}
	if matches, _ := filepath.Glob(filepath.Join(outside, "*")); len(matches) != 0 {
		t.Fatalf("a refused plan wrote %v outside the executor's roots", matches)
	}
	if _, err := NewExecutor(ExecutorConfig{FS: e.fs, Guard: &storage.Guard{}, TrashRoot: e.trash, RunID: "x"}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("a guard without roots: %v; want ErrInvalidConfig", err)
	}
}

// What the executor re-reads right before it acts decides, item by item,
// whether it still may: each case changes one thing since planning.
func TestExecutorReverifiesEachItem(t *testing.T) {
	const live = "fedcba9876543210fedcba9876543210"
	const retired = "0123456789abcdef0123456789abcdef"
	liveNow := func(l Live) func(context.Context) (Live, error) {
		return func(context.Context) (Live, error) { return l, nil }
	}
	// A _metadata written where a checkpoint or savepoint completes after
	// the plan was made, naming a file of its own, aged like the rest.
	metadata := func(t *testing.T, e *localEnv, dir string) {
		t.Helper()
		e.metadata(dir, mdwrite.Savepoint("state"), e.past)
		e.age(filepath.Dir(dir), e.past)
	}
	t.Run("nothing changed: every item acted on", func(t *testing.T) {
		// The live job and cluster are the planned ones: an item of the live
		// job (its incomplete checkpoint) and the HA dir of a gone cluster
		// are not refused as live again, nor as the live cluster's own HA
		// dir.
		e := newLocalEnv(t)
		want := e.garbage()
		l := Live{Clusters: []LiveCluster{{ClusterID: "c1", HADir: e.uri("ha/c1"), Jobs: []LiveJob{{JobID: live}}}}}
		plan := e.plan(l, Policy{})
		res, err := e.executor("r1", func(c *ExecutorConfig) { c.Live = liveNow(l) }).Run(context.Background(), plan)
		if err != nil || res.Counts[OutcomeTrashed] != len(want) {
			t.Fatalf("result %+v err %v; want all %d items trashed", res, err, len(want))
		}
	})
	t.Run("a live cluster's HA configuration unreadable", func(t *testing.T) {
		e := newLocalEnv(t)
		e.file("ha/gone/completedCheckpoint0123456789ab", 3, e.past)
		plan := e.plan(Live{}, Policy{})
		if len(plan.Delete) != 1 || plan.Delete[0].Kind != KindHAClusterDir {
			t.Fatalf("plan %+v; want the HA dir of cluster gone", plan.Delete)
		}
		unknown := Live{Clusters: []LiveCluster{{ClusterID: "c1", HAUnknown: true}}}
		res, err := e.executor("r1", func(c *ExecutorConfig) { c.Live = liveNow(unknown) }).Run(context.Background(), plan)
		if err != nil || res.Counts[OutcomeRefused] != 1 || !strings.Contains(res.Refused[0].Detail, "cannot be read") {
			t.Fatalf("result %+v err %v; want the HA dir refused: it may be c1's", res, err)
		}
		if !e.exists(plan.Delete[0].Path) {
			t.Fatal("refused HA dir removed")
		}
	})
	t.Run("a live cluster configured with the HA dir", func(t *testing.T) {
		e := newLocalEnv(t)
		e.file("ha/gone/completedCheckpoint0123456789ab", 3, e.past)
		plan := e.plan(Live{}, Policy{})
		if len(plan.Delete) != 1 || plan.Delete[0].Kind != KindHAClusterDir {
			t.Fatalf("plan %+v; want the HA dir of cluster gone", plan.Delete)
		}
		reused := Live{Clusters: []LiveCluster{{ClusterID: "c2", HADir: e.uri("ha/gone")}}}
		res, err := e.executor("r1", func(c *ExecutorConfig) { c.Live = liveNow(reused) }).Run(context.Background(), plan)
		if err != nil || res.Counts[OutcomeRefused] != 1 || !strings.Contains(res.Refused[0].Detail, "HA dir of live cluster c2") {
			t.Fatalf("result %+v err %v; want the HA dir refused as c2's", res, err)
		}
		if !e.exists(plan.Delete[0].Path) {
			t.Fatal("refused HA dir removed")
		}
	})
	t.Run("a job restored from a checkpoint inside an item", func(t *testing.T) {
		e := newLocalEnv(t)
		e.file("checkpoints/"+retired+"/shared/s1", 20, e.past)
		plan := e.plan(Live{}, Policy{})
		if len(plan.Delete) != 1 || plan.Delete[0].Path != e.uri("checkpoints/"+retired) {
			t.Fatalf("plan %+v; want the retired job's dir", plan.Delete)
		}
		metadata(t, e, "checkpoints/"+retired+"/chk-3")
		back := liveWith(LiveJob{JobID: strings.Repeat("ab", 16), RestorePath: e.uri("checkpoints/" + retired + "/chk-3")})
		res, err := e.executor("r1", func(c *ExecutorConfig) { c.Live = liveNow(back) }).Run(context.Background(), plan)
		if err != nil || res.Counts[OutcomeRefused] != 1 || !strings.Contains(res.Refused[0].Detail, "needed now") {
			t.Fatalf("result %+v err %v; want the job dir refused as needed now", res, err)
		}
		if !e.exists(plan.Delete[0].Path) {
			t.Fatal("refused job dir removed")
		}
	})
	t.Run("a file a savepoint completed since planning references", func(t *testing.T) {
		// The item is one state file of a savepoint dir that had no
		// _metadata when planned (here put in the plan by hand); the
		// _metadata written since references it. Only the rescan of the
		// savepoint root for what completed since planning finds that.
		e := newLocalEnv(t)
		const sp = "savepoints/savepoint-fedcba-0123456789ab"
		state := e.file(sp+"/state", 10, e.past)
		plan := e.plan(Live{}, Policy{})
		if len(plan.Delete) != 1 {
			t.Fatalf("plan %+v; want the incomplete savepoint", plan.Delete)
		}
		plan.Delete[0] = Item{Path: state, Kind: KindSharedFile, Rule: RuleUnreferencedState, Tenant: plan.Delete[0].Tenant, Files: 1, Bytes: 10, Newest: e.past}
		if err := os.WriteFile(filepath.Join(e.tenant, sp, "_metadata"), mdwrite.Savepoint("state"), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := e.executor("r1", nil).Run(context.Background(), plan)
		if err != nil || res.Counts[OutcomeRefused] != 1 || !strings.Contains(res.Refused[0].Detail, "completed since planning") {
			t.Fatalf("result %+v err %v; want the state file refused as referenced by the new savepoint", res, err)
		}
		if !e.exists(state) {
			t.Fatal("refused state file removed")
		}
	})
	t.Run("a _metadata completed since planning that cannot be parsed", func(t *testing.T) {
		// Its references are unknown: nothing may be acted on.
		e := newLocalEnv(t)
		e.file("checkpoints/"+retired+"/shared/s1", 20, e.past)
		plan := e.plan(Live{}, Policy{})
		if len(plan.Delete) != 1 {
			t.Fatalf("plan %+v; want the retired job's dir", plan.Delete)
		}
		e.file("savepoints/savepoint-abcdef-0123456789ab/_metadata", 12, time.Now())
		res, err := e.executor("r1", nil).Run(context.Background(), plan)
		if err != nil || res.Counts[OutcomeRefused] != 1 || !strings.Contains(res.Refused[0].Detail, "cannot be parsed") {
			t.Fatalf("result %+v err %v; want the job dir refused: an unreadable _metadata may reference it", res, err)
		}
		if !e.exists(plan.Delete[0].Path) {
			t.Fatal("refused job dir removed")
		}
	})
	t.Run("savepoint completed since planning", func(t *testing.T) {
		e := newLocalEnv(t)
		e.file("savepoints/savepoint-fedcba-0123456789ab/partial", 7, e.past)
		plan := e.plan(Live{}, Policy{})
		if len(plan.Delete) != 1 {
			t.Fatalf("plan %+v; want the incomplete savepoint", plan.Delete)
		}
		metadata(t, e, "savepoints/savepoint-fedcba-0123456789ab")
		res, err := e.executor("r1", nil).Run(context.Background(), plan)
		if err != nil || res.Counts[OutcomeRefused] != 1 || !strings.Contains(res.Refused[0].Detail, "completed since planning") {
			t.Fatalf("result %+v err %v; want the savepoint refused as completed since planning", res, err)
		}
		if !e.exists(plan.Delete[0].Path) {
			t.Fatal("refused savepoint removed")
		}
	})
}

// A job the inventory does not know that writes a checkpoint into a
// scanned root after the listing may use what the plan holds as garbage:
// in its own dir, an in-flight checkpoint may use any file no _metadata
// names; in a new dir, before its first checkpoint completes, what it
// restored from is unknown. Each refuses what it could need until the job
// is in the inventory or its checkpoint is complete.
func TestExecutorRefusesForAWriterOutsideTheInventory(t *testing.T) {
	const quiet = "0123456789abcdef0123456789abcdef"
	const other = "00000000000000000000000000000042"
	const started = "fedcba9876543210fedcba9876543210"
	// Old enough to be planned, young enough not to be a retired job's.
	was := time.Now().Add(-24 * time.Hour)
	layoutWithGarbage := func(t *testing.T) (*localEnv, Plan) {
		e := newLocalEnv(t)
		// The quiet job's completed checkpoint, kept as its latest.
		e.metadata("checkpoints/"+quiet+"/chk-2", mdwrite.Checkpoint(2, e.uri("checkpoints/"+quiet+"/shared/s1")), was)
		e.file("checkpoints/"+quiet+"/shared/s1", 20, was)
		e.age("checkpoints/"+quiet, was)
		e.file("checkpoints/"+quiet+"/chk-3/state", 10, was)
		e.file("checkpoints/"+quiet+"/shared/orphan", 20, was)
		e.file("checkpoints/"+other+"/chk-5/state", 10, was)
		e.file("checkpoints/"+other+"/shared/orphan", 20, was)
		plan := e.plan(Live{}, Policy{})
		if len(plan.Delete) != 4 {
			t.Fatalf("planned %+v; want the incomplete checkpoint and orphan of each job dir", plan.Delete)
		}
		return e, plan
	}
	// mkdirNow makes dirs written now by this clock: the file system's
	// own stamp comes from a coarser clock and may fall before the plan's.
	mkdirNow := func(t *testing.T, e *localEnv, rels ...string) {
		t.Helper()
		for _, rel := range rels {
			p := filepath.Join(e.tenant, rel)
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			if err := os.Chtimes(p, now, now); err != nil {
				t.Fatal(err)
			}
		}
	}
	byPath := func(res Result) map[string]string {
		out := map[string]string{}
		for _, r := range res.Refused {
			out[r.Path] = r.Detail
		}
		return out
	}
	t.Run("a quiet job dir written again by the run that checkpoints there", func(t *testing.T) {
		e, plan := layoutWithGarbage(t)
		// Its newest checkpoint completed just now, the next is under way:
		// the run names what it uses.
		dir := filepath.Join(e.tenant, "checkpoints", quiet, "chk-4")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "_metadata"), mdwrite.Checkpoint(4, e.uri("checkpoints/"+quiet+"/shared/s1")), 0o644); err != nil {
			t.Fatal(err)
		}
		mkdirNow(t, e, "checkpoints/"+quiet+"/chk-4", "checkpoints/"+quiet+"/chk-5")
		res, err := e.executor("r1", nil).Run(context.Background(), plan)
		if err != nil {
			t.Fatal(err)
		}
		refused := byPath(res)
		for _, p := range []string{e.uri("checkpoints/" + quiet + "/chk-3"), e.uri("checkpoints/" + quiet + "/shared/orphan")} {
			if !strings.Contains(refused[p], "outside the inventory wrote into") || !e.exists(p) {
				t.Errorf("%s: refused %q, exists %v; want it refused for the writer and kept", p, refused[p], e.exists(p))
			}
		}
		if res.Counts[OutcomeTrashed] != 2 {
			t.Errorf("result %+v; want the other job dir's two items trashed", res)
		}
	})
	// A fixed job id's dir: a new run writes there, its numbering going on
	// from what it restored. The completed checkpoint an earlier run left
	// a day ago is not its own and names nothing of what it restored from.
	for name, next := range map[string]string{
		"a new run numbering below the earlier run's checkpoint": "chk-1",
		"a new run numbering above the earlier run's checkpoint": "chk-101",
	} {
		t.Run(name, func(t *testing.T) {
			e, plan := layoutWithGarbage(t)
			mkdirNow(t, e, "checkpoints/"+quiet+"/"+next)
			res, err := e.executor("r1", nil).Run(context.Background(), plan)
			if err != nil {
				t.Fatal(err)
			}
			if res.Counts[OutcomeRefused] != 4 {
				t.Fatalf("result %+v; want every item refused", res)
			}
			for p, why := range byPath(res) {
				if !strings.Contains(why, "what it restored from is unknown") || !strings.Contains(why, quiet) {
					t.Errorf("%s refused for %q; want the new run's unknown restore named", p, why)
				}
			}
		})
	}
	t.Run("a new job with no checkpoint yet", func(t *testing.T) {
		e, plan := layoutWithGarbage(t)
		mkdirNow(t, e, "checkpoints/"+started+"/shared", "checkpoints/"+started+"/taskowned")
		res, err := e.executor("r1", nil).Run(context.Background(), plan)
		if err != nil {
			t.Fatal(err)
		}
		if res.Counts[OutcomeRefused] != 4 {
			t.Fatalf("result %+v; want every item refused", res)
		}
		for p, why := range byPath(res) {
			if !strings.Contains(why, "what it restored from is unknown") || !strings.Contains(why, started) {
				t.Errorf("%s refused for %q; want the new job's unknown restore named", p, why)
			}
		}
		// Its first checkpoint under way, not completed yet: still unknown.
		e1, plan1 := layoutWithGarbage(t)
		mkdirNow(t, e1, "checkpoints/"+started+"/chk-1")
		res, err = e1.executor("r1", nil).Run(context.Background(), plan1)
		if err != nil || res.Counts[OutcomeRefused] != 4 || !strings.Contains(res.Refused[0].Detail, "what it restored from is unknown") {
			t.Fatalf("result %+v err %v; want every item refused while the first checkpoint is under way", res, err)
		}
		// A job that began writing just before the listing was the
		// planner's to judge: not an unknown restore.
		e3, plan3 := layoutWithGarbage(t)
		mkdirNow(t, e3, "checkpoints/"+started+"/chk-1")
		before := plan3.CreatedAt.Add(-time.Minute)
		for _, d := range []string{"checkpoints/" + started + "/chk-1", "checkpoints/" + started} {
			if err := os.Chtimes(filepath.Join(e3.tenant, d), before, before); err != nil {
				t.Fatal(err)
			}
		}
		res, err = e3.executor("r1", nil).Run(context.Background(), plan3)
		if err != nil || res.Counts[OutcomeTrashed] != 4 {
			t.Fatalf("result %+v err %v; want everything trashed: the writer was there before the listing", res, err)
		}
		// The same job in the inventory: its cluster says what it needs.
		e2, plan2 := layoutWithGarbage(t)
		mkdirNow(t, e2, "checkpoints/"+started+"/shared")
		live := func(context.Context) (Live, error) { return liveWith(LiveJob{JobID: started}), nil }
		res, err = e2.executor("r1", func(c *ExecutorConfig) { c.Live = live }).Run(context.Background(), plan2)
		if err != nil || res.Counts[OutcomeTrashed] != 4 {
			t.Fatalf("result %+v err %v; want everything trashed", res, err)
		}
		// A job its cluster lists as ended (stopped with a savepoint,
		// cancelled): it writes and restores nothing.
		e4, plan4 := layoutWithGarbage(t)
		mkdirNow(t, e4, "checkpoints/"+started+"/shared")
		endedAt := func(at time.Time, root string) func(context.Context) (Live, error) {
			return func(context.Context) (Live, error) {
				return Live{Clusters: []LiveCluster{{ClusterID: "c1", Ended: []EndedJob{{ID: started, At: at}}, CheckpointDirs: []string{root}}}}, nil
			}
		}
		res, err = e4.executor("r1", func(c *ExecutorConfig) { c.Live = endedAt(time.Now(), e4.uri("checkpoints")) }).Run(context.Background(), plan4)
		if err != nil || res.Counts[OutcomeTrashed] != 4 {
			t.Fatalf("result %+v err %v; want everything trashed: the writer ended", res, err)
		}
		// The same id listed as ended by a cluster that writes another
		// root (a fixed job id, its cluster-id started elsewhere too):
		// no evidence for this dir.
		e6, plan6 := layoutWithGarbage(t)
		mkdirNow(t, e6, "checkpoints/"+started+"/shared")
		res, err = e6.executor("r1", func(c *ExecutorConfig) { c.Live = endedAt(time.Now(), e6.uri("elsewhere")) }).Run(context.Background(), plan6)
		if err != nil || res.Counts[OutcomeRefused] != 4 || !strings.Contains(res.Refused[0].Detail, "what it restored from is unknown") {
			t.Fatalf("result %+v err %v; want every item refused: the end was listed for another root", res, err)
		}
		// The same id listed as ended an hour before the dir was written:
		// the write is another job's, and what it restored from is unknown.
		e5, plan5 := layoutWithGarbage(t)
		mkdirNow(t, e5, "checkpoints/"+started+"/shared")
		res, err = e5.executor("r1", func(c *ExecutorConfig) { c.Live = endedAt(time.Now().Add(-time.Hour), e5.uri("checkpoints")) }).Run(context.Background(), plan5)
		if err != nil || res.Counts[OutcomeRefused] != 4 || !strings.Contains(res.Refused[0].Detail, "what it restored from is unknown") {
			t.Fatalf("result %+v err %v; want every item refused: the dir was written after that end", res, err)
		}
	})
	t.Run("a new job whose first checkpoint completed", func(t *testing.T) {
		e, plan := layoutWithGarbage(t)
		dir := filepath.Join(e.tenant, "checkpoints", started, "chk-6")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "_metadata"), mdwrite.Checkpoint(6, e.uri("checkpoints/"+started+"/shared/s1")), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := e.executor("r1", nil).Run(context.Background(), plan)
		if err != nil || res.Counts[OutcomeTrashed] != 4 {
			t.Fatalf("result %+v err %v; want everything trashed: the checkpoint names what it uses", res, err)
		}
	})
}

// TestAManifestLineThatIsNoRecordIsCorrupt: a manifest line without a
// path or an outcome, anywhere but last (a crash cuts only the last), is
// a corrupt manifest, not a record to resume or restore from; the sorted
// records of a valid one come back by path.
func TestAManifestLineThatIsNoRecordIsCorrupt(t *testing.T) {
	e := newLocalEnv(t)
	dir := filepath.Join(e.trash, "_audit", "run-1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	good := []string{`{"path":"file:///b","outcome":"trashed"}`, `{"path":"file:///a","outcome":"deleted"}`}
	for name, bad := range map[string]string{
		"no outcome": `{"path":"file:///c"}`,
		"no path":    `{"outcome":"deleted"}`,
	} {
		data := strings.Join([]string{good[0], bad, good[1]}, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(dir, "manifest-000001.jsonl"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadManifest(context.Background(), e.fs, "file://"+e.trash+"/_audit", "run-1"); !errors.Is(err, ErrManifestCorrupt) {
			t.Errorf("%s: ReadManifest %v; want ErrManifestCorrupt", name, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest-000001.jsonl"), []byte(strings.Join(good, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadManifest(context.Background(), e.fs, "file://"+e.trash+"/_audit", "run-1")
	if err != nil || len(recs) != 2 || recs[0].Path != "file:///a" || recs[1].Path != "file:///b" {
		t.Fatalf("records %+v, %v; want a then b", recs, err)
	}
}

// A job that failed while restoring, listed since planning with a restore
// source that cannot be read, may be retried from any snapshot: right
// before acting, every item that may be a snapshot is refused; what is no
// snapshot (a checkpoint that never completed) still goes.
func TestExecutorRefusesSnapshotsWhileARestoreSourceIsUnknown(t *testing.T) {
	const retired = "0123456789abcdef0123456789abcdef"
	const recent = "00000000000000000000000000000042"
	e := newLocalEnv(t)
	e.file("checkpoints/"+retired+"/chk-3/state", 10, e.past)
	two := time.Now().Add(-48 * time.Hour)
	e.file("checkpoints/"+recent+"/chk-5/state", 10, two)
	e.age("checkpoints/"+recent, two)
	plan := e.plan(Live{}, Policy{})
	kinds := map[string]ItemKind{}
	for _, it := range plan.Delete {
		kinds[it.Path] = it.Kind
	}
	jobDir, incomplete := e.uri("checkpoints/"+retired), e.uri("checkpoints/"+recent+"/chk-5")
	if kinds[jobDir] != KindJobDir || kinds[incomplete] != KindCheckpointDir || len(kinds) != 2 {
		t.Fatalf("planned %v; want the retired job dir and the incomplete checkpoint", kinds)
	}
	for name, live := range map[string]Live{
		"a failed job's unreadable restore source": liveWith(LiveJob{JobID: "fedcba9876543210fedcba9876543210", RestoreUnknown: "its exception history cannot be read"}),
		"an unreadable operator record":            {Clusters: []LiveCluster{{ClusterID: "c1"}}, UnknownSources: []string{"FlinkDeployment ns/orders status.jobStatus.upgradeSnapshotReference names FlinkStateSnapshot ns/gone, which does not exist"}},
	} {
		t.Run(name, func(t *testing.T) {
			e2 := *e
			res, err := e2.executor("r-"+strings.ReplaceAll(name, " ", "-")[:12], func(c *ExecutorConfig) {
				c.Live = func(context.Context) (Live, error) { return live, nil }
			}).Run(context.Background(), plan)
			if err != nil {
				t.Fatal(err)
			}
			refused := map[string]string{}
			for _, r := range res.Refused {
				refused[r.Path] = r.Detail
			}
			if !strings.Contains(refused[jobDir], "cannot") || !e.exists(jobDir) {
				t.Errorf("job dir refused %q, exists %v; want it refused and kept", refused[jobDir], e.exists(jobDir))
			}
			if _, ok := refused[incomplete]; ok {
				t.Errorf("incomplete checkpoint refused %q; want it acted on: it is no snapshot", refused[incomplete])
			}
		})
	}
}
