package cleanup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/mdwrite"
)

// localEnv is a tenant tree and a trash root on the local file system.
type localEnv struct {
	t      *testing.T
	dir    string
	tenant string
	trash  string
	fs     *storage.Local
	guard  *storage.Guard
	past   time.Time
}

func newLocalEnv(t *testing.T) *localEnv {
	t.Helper()
	dir := t.TempDir()
	e := &localEnv{t: t, dir: dir, tenant: filepath.Join(dir, "tenant"), trash: filepath.Join(dir, "trash"), past: time.Now().Add(-30 * 24 * time.Hour)}
	for _, d := range []string{"checkpoints", "savepoints", "ha"} {
		if err := os.MkdirAll(filepath.Join(e.tenant, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(e.trash, 0o755); err != nil {
		t.Fatal(err)
	}
	var err error
	e.guard, err = storage.NewGuard(e.tenant, e.trash)
	if err != nil {
		t.Fatal(err)
	}
	e.fs = storage.NewLocal(e.guard)
	return e
}

func (e *localEnv) uri(rel string) string { return "file://" + filepath.Join(e.tenant, rel) }

func (e *localEnv) roots() []layout.Root {
	return []layout.Root{{Path: e.uri("checkpoints"), Kind: layout.CheckpointRoot}, {Path: e.uri("savepoints"), Kind: layout.SavepointRoot},
		{Path: e.uri("ha"), Kind: layout.HARoot}}
}

// file writes tenant-relative rel with size bytes, aged to when.
func (e *localEnv) file(rel string, size int, when time.Time) string {
	e.t.Helper()
	p := filepath.Join(e.tenant, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
		e.t.Fatal(err)
	}
	e.age(filepath.Dir(rel), when)
	// Creating the file touched its ancestors; age them too.
	for d := filepath.Dir(filepath.Dir(p)); d != e.tenant && strings.HasPrefix(d, e.tenant); d = filepath.Dir(d) {
		if err := os.Chtimes(d, when, when); err != nil {
			e.t.Fatal(err)
		}
	}
	return "file://" + p
}

// age sets the mtime of rel and everything below it.
func (e *localEnv) age(rel string, when time.Time) {
	e.t.Helper()
	root := filepath.Join(e.tenant, rel)
	var dirs []string
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.IsDir() {
			dirs = append(dirs, p)
			return nil
		}
		return os.Chtimes(p, when, when)
	})
	if err != nil {
		e.t.Fatal(err)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chtimes(dirs[i], when, when); err != nil {
			e.t.Fatal(err)
		}
	}
}

// metadata writes data as the _metadata of tenant-relative dir rel, aged
// with the dir to when, and returns the dir's URI.
func (e *localEnv) metadata(rel string, data []byte, when time.Time) string {
	e.t.Helper()
	e.file(rel+"/"+layout.MetadataFileName, 0, when)
	if err := os.WriteFile(filepath.Join(e.tenant, rel, layout.MetadataFileName), data, 0o644); err != nil {
		e.t.Fatal(err)
	}
	e.age(rel, when)
	return e.uri(rel)
}

func (e *localEnv) exists(uri string) bool {
	_, err := os.Stat(strings.TrimPrefix(uri, "file://"))
	return err == nil
}

func (e *localEnv) plan(live Live, pol Policy) Plan {
	e.t.Helper()
	l, err := Gather(context.Background(), e.fs, e.roots(), GatherOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	if len(live.Clusters) == 0 {
		live.Clusters = []LiveCluster{{ClusterID: "c1"}}
	}
	p, err := BuildPlan(Input{Now: time.Now(), Listing: l, Live: live, Policy: pol, Lineage: byPrefix(l),
		Tenants: []inventory.Tenant{{Name: "team-t", Root: e.uri("")}}})
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *localEnv) executor(runID string, mod func(*ExecutorConfig)) *Executor {
	e.t.Helper()
	cfg := ExecutorConfig{FS: e.fs, Guard: e.guard, TrashRoot: "file://" + e.trash, RunID: runID}
	if mod != nil {
		mod(&cfg)
	}
	ex, err := NewExecutor(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return ex
}

// garbage lays out one item of most kinds, all old.
func (e *localEnv) garbage() []string {
	const retired = "0123456789abcdef0123456789abcdef"
	const live = "fedcba9876543210fedcba9876543210"
	e.file("checkpoints/"+retired+"/chk-3/state", 10, e.past)
	e.file("checkpoints/"+retired+"/shared/s1", 20, e.past)
	e.file("checkpoints/"+live+"/chk-7/x", 5, e.past)
	e.file("checkpoints/"+live+"/shared/zero", 0, e.past)
	e.file("savepoints/savepoint-fedcba-0123456789ab/partial", 7, e.past)
	e.file("ha/gone/completedCheckpoint0123456789ab", 3, e.past)
	e.file("ha/c1/completedCheckpoint0123456789ab", 3, e.past)
	// The live job's zero-byte shared file is kept: without a completed
	// checkpoint it may belong to the first one.
	return []string{e.uri("checkpoints/" + retired), e.uri("checkpoints/" + live + "/chk-7"),
		e.uri("ha/gone"), e.uri("savepoints/savepoint-fedcba-0123456789ab")}
}

func liveWith(jobs ...LiveJob) Live {
	return Live{Clusters: []LiveCluster{{ClusterID: "c1", Jobs: jobs}}}
}

func TestExecutorTrashAndDelete(t *testing.T) {
	for name, action := range map[string]Action{"trash": ActionTrash, "delete": ActionDelete} {
		t.Run(name, func(t *testing.T) {
			e := newLocalEnv(t)
			want := e.garbage()
			plan := e.plan(liveWith(LiveJob{JobID: "fedcba9876543210fedcba9876543210"}), Policy{Action: action})
			if len(plan.Delete) != len(want) {
				t.Fatalf("planned %d items; want %d: %+v", len(plan.Delete), len(want), plan.Delete)
			}
			for i, it := range plan.Delete {
				if it.Path != want[i] {
					t.Fatalf("item %d is %s; want %s", i, it.Path, want[i])
				}
			}
			var mu sync.Mutex
			var calls []Progress
			ex := e.executor("run-"+name, func(c *ExecutorConfig) {
				c.Progress = func(p Progress) { mu.Lock(); calls = append(calls, p); mu.Unlock() }
			})
			res, err := ex.Run(context.Background(), plan)
			if err != nil {
				t.Fatal(err)
			}
			final := OutcomeTrashed
			if action == ActionDelete {
				final = OutcomeDeleted
			}
			if res.Counts[final] != len(want) || res.Reclaimed.Items != int64(len(want)) {
				t.Fatalf("result %+v; want %d %s", res, len(want), final)
			}
			if len(calls) != len(want) || calls[len(calls)-1].Done != len(want) {
				t.Fatalf("progress calls %+v", calls)
			}
			recs, err := ReadManifest(context.Background(), e.fs, "file://"+e.trash+"/_audit", "run-"+name)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range recs {
				if r.Path != want[i] || r.Outcome != final || r.Rule == "" || r.Time.IsZero() {
					t.Errorf("manifest record %d: %+v", i, r)
				}
				if e.exists(r.Path) {
					t.Errorf("%s still exists", r.Path)
				}
				if action == ActionTrash && (r.TrashPath != "file://"+e.trash+"/run-trash"+strings.TrimPrefix(r.Path, "file://") || !e.exists(r.TrashPath)) {
					t.Errorf("trash copy of %s: %q", r.Path, r.TrashPath)
				}
			}
			if !e.exists(e.uri("ha/c1")) || !e.exists(e.uri("checkpoints/fedcba9876543210fedcba9876543210/shared/zero")) {
				t.Error("live cluster's HA dir or live job's state file removed")
			}
			// A second run with the same id does nothing more.
			res2, err := e.executor("run-"+name, nil).Run(context.Background(), plan)
			if err != nil || res2.Counts[final] != len(want) {
				t.Fatalf("rerun: %+v %v", res2, err)
			}
		})
	}
}

// A plan made before the upgrade that added Kubernetes objects (version 1)
// may wait for approval across it; it still runs.
func TestExecutorRunsAVersion1Plan(t *testing.T) {
	e := newLocalEnv(t)
	want := e.garbage()
	plan := e.plan(liveWith(LiveJob{JobID: "fedcba9876543210fedcba9876543210"}), Policy{})
	plan.Version = 1
	res, err := e.executor("run-v1", nil).Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts[OutcomeTrashed] != len(want) {
		t.Fatalf("result %+v; want %d trashed", res, len(want))
	}
}

func TestExecutorReverification(t *testing.T) {
	const live = "fedcba9876543210fedcba9876543210"
	const retired = "0123456789abcdef0123456789abcdef"
	t.Run("checkpoint completed since planning", func(t *testing.T) {
		e := newLocalEnv(t)
		e.file("checkpoints/"+live+"/chk-9/state", 10, e.past)
		plan := e.plan(liveWith(LiveJob{JobID: live}), Policy{})
		if len(plan.Delete) != 1 || plan.Delete[0].Rule != RuleIncompleteCheckpoint {
			t.Fatalf("plan %+v", plan.Delete)
		}
		// The checkpoint completes late; its _metadata is aged like the
		// rest so only the reference check can catch it.
		e.metadata("checkpoints/"+live+"/chk-9", mdwrite.Snapshot{CheckpointID: 9, Exclusive: []mdwrite.File{{Path: "state", Size: 10}}}.Bytes(), e.past)
		res, err := e.executor("r1", nil).Run(context.Background(), plan)
		if err != nil {
			t.Fatal(err)
		}
		if res.Counts[OutcomeRefused] != 1 || !strings.Contains(res.Refused[0].Detail, "completed since planning") {
			t.Fatalf("result %+v; want the checkpoint refused as referenced", res)
		}
		if !e.exists(plan.Delete[0].Path) {
			t.Fatal("refused item removed")
		}
	})
	t.Run("modified since planning", func(t *testing.T) {
		e := newLocalEnv(t)
		e.file("checkpoints/"+retired+"/shared/f", 3, e.past)
		plan := e.plan(Live{}, Policy{})
		if len(plan.Delete) != 1 {
			t.Fatalf("plan %+v", plan.Delete)
		}
		e.file("checkpoints/"+retired+"/shared/f", 3, time.Now())
		res, err := e.executor("r1", nil).Run(context.Background(), plan)
		if err != nil || res.Counts[OutcomeRefused] != 1 || !strings.Contains(res.Refused[0].Detail, "modified since planning") {
			t.Fatalf("result %+v err %v", res, err)
		}
	})
	t.Run("job live again", func(t *testing.T) {
		e := newLocalEnv(t)
		e.file("checkpoints/"+retired+"/chk-1/x", 3, e.past)
		e.file("ha/gone/completedCheckpoint0123456789ab", 3, e.past)
		plan := e.plan(Live{}, Policy{})
		if len(plan.Delete) != 2 {
			t.Fatalf("plan %+v", plan.Delete)
		}
		back := func(context.Context) (Live, error) {
			return Live{Clusters: []LiveCluster{{ClusterID: "gone", Jobs: []LiveJob{{JobID: retired}}}}}, nil
		}
		res, err := e.executor("r1", func(c *ExecutorConfig) { c.Live = back }).Run(context.Background(), plan)
		if err != nil || res.Counts[OutcomeRefused] != 2 {
			t.Fatalf("result %+v err %v", res, err)
		}
	})
	t.Run("inventory unavailable is retryable", func(t *testing.T) {
		e := newLocalEnv(t)
		e.garbage()
		plan := e.plan(Live{}, Policy{})
		down := func(context.Context) (Live, error) { return Live{}, errors.New("apiserver unreachable") }
		_, err := e.executor("r1", func(c *ExecutorConfig) { c.Live = down }).Run(context.Background(), plan)
		if err == nil || !IsRetryable(err) {
			t.Fatalf("err %v; want a retryable error", err)
		}
	})
}

func TestExecutorResumesExactlyOnce(t *testing.T) {
	e := newLocalEnv(t)
	const n = 23
	for i := range n {
		e.file("ha/gone-"+string(rune('a'+i))+"/completedCheckpoint0123456789ab", 1, e.past)
	}
	plan := e.plan(Live{}, Policy{})
	if len(plan.Delete) != n {
		t.Fatalf("planned %d; want %d", len(plan.Delete), n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	seen := 0
	ex := e.executor("crashy", func(c *ExecutorConfig) {
		c.BatchSize, c.Concurrency = 5, 2
		c.Progress = func(Progress) {
			mu.Lock()
			defer mu.Unlock()
			if seen++; seen == 7 {
				cancel()
			}
		}
	})
	res, err := ex.Run(ctx, plan)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: %v; want context.Canceled", err)
	}
	done1 := res.Counts[OutcomeTrashed]
	if done1 < 7 || done1 >= n {
		t.Fatalf("first run trashed %d of %d", done1, n)
	}
	// A crash after acting but before the manifest: move one untouched
	// item to its trash path by hand.
	var victim string
	for _, it := range plan.Delete {
		if e.exists(it.Path) {
			victim = it.Path
			break
		}
	}
	dst := ex.trashPath(victim)
	if err := e.fs.MkdirAll(context.Background(), storage.ParentOf(dst)); err != nil {
		t.Fatal(err)
	}
	if err := e.fs.Rename(context.Background(), victim, dst); err != nil {
		t.Fatal(err)
	}
	res, err = e.executor("crashy", func(c *ExecutorConfig) { c.BatchSize = 5 }).Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts[OutcomeTrashed] != n || len(res.Counts) != 1 {
		t.Fatalf("after resume: %+v", res.Counts)
	}
	// Every item has exactly one final record over all segments.
	finals := map[string]int{}
	segs, _ := filepath.Glob(filepath.Join(e.trash, "_audit", "crashy", "manifest-*.jsonl"))
	for _, s := range segs {
		data, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			var r Record
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			if r.Outcome.final() {
				finals[r.Path]++
			}
			if r.Path == victim && r.Outcome == OutcomeTrashed && !strings.Contains(r.Detail, "resume") {
				t.Errorf("victim recorded as %+v; want found in trash on resume", r)
			}
		}
	}
	for _, it := range plan.Delete {
		if finals[it.Path] != 1 {
			t.Errorf("%s has %d final records", it.Path, finals[it.Path])
		}
		if e.exists(it.Path) {
			t.Errorf("%s still exists", it.Path)
		}
	}
}

func TestExecutorRefusesOutsideRootsAndInvalidPlans(t *testing.T) {
	e := newLocalEnv(t)
	e.garbage()
	good := e.plan(Live{}, Policy{})
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "precious"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		mod  func(p *Plan)
		cfg  func(c *ExecutorConfig)
		kind error
	}{
		"item outside the roots": {mod: func(p *Plan) {
			p.Delete = append(p.Delete, Item{Path: "file://" + filepath.Join(outside, "precious"), Kind: KindSharedFile, Rule: RuleUnreferencedState})
		}, kind: ErrOutsideRoots},
		"a root itself": {mod: func(p *Plan) {
			p.Delete = append(p.Delete, Item{Path: "file://" + e.tenant, Kind: KindJobDir, Rule: RuleRetiredJob})
		}, kind: ErrOutsideRoots},
		"trash root not guarded": {cfg: func(c *ExecutorConfig) {
			g, _ := storage.NewGuard(e.tenant)
			c.Guard = g
		}, kind: ErrOutsideRoots},
		"nested items": {mod: func(p *Plan) {
			p.Delete = append(p.Delete, Item{Path: p.Delete[0].Path + "/chk-3", Kind: KindCheckpointDir, Rule: RuleRetiredJob})
		}, kind: ErrInvalidPlan},
		"duplicate item": {mod: func(p *Plan) { p.Delete = append(p.Delete, p.Delete[0]) }, kind: ErrInvalidPlan},
		"wrong version":  {mod: func(p *Plan) { p.Version = 99 }, kind: ErrInvalidPlan},
		"no version":     {mod: func(p *Plan) { p.Version = 0 }, kind: ErrInvalidPlan},
		"version 1 with objects": {mod: func(p *Plan) {
			p.Version = 1
			p.Objects = append(p.Objects, ObjectItem{Path: "kubernetes://team-a/ConfigMap/gone-cluster-config-map", Kind: KindHAConfigMap, Rule: RuleOrphanHAConfigMap})
		}, kind: ErrInvalidPlan},
		"no rule":      {mod: func(p *Plan) { p.Delete[0].Rule = "" }, kind: ErrInvalidPlan},
		"unnormalised": {mod: func(p *Plan) { p.Delete[0].Path += "/" }, kind: ErrInvalidPlan},
		"bad action":   {mod: func(p *Plan) { p.Policy.Action = "shred" }, kind: ErrInvalidPlan},
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
			if tc.kind == ErrOutsideRoots && !errors.Is(err, storage.ErrOutsideRoots) {
				t.Fatalf("err %v does not match storage.ErrOutsideRoots", err)
			}
			for _, it := range good.Delete {
				if !e.exists(it.Path) {
					t.Fatalf("%s touched by a refused plan", it.Path)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "precious")); err != nil {
		t.Fatal("file outside the roots removed")
	}
	for name, cfg := range map[string]ExecutorConfig{
		"no fs":        {Guard: e.guard, TrashRoot: e.trash, RunID: "x"},
		"no guard":     {FS: e.fs, TrashRoot: e.trash, RunID: "x"},
		"bad run id":   {FS: e.fs, Guard: e.guard, TrashRoot: e.trash, RunID: "../x"},
		"no home":      {FS: e.fs, Guard: e.guard, RunID: "x"},
		"negative cap": {FS: e.fs, Guard: e.guard, TrashRoot: e.trash, RunID: "x", Concurrency: -1},
	} {
		if _, err := NewExecutor(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v; want ErrInvalidConfig", name, err)
		}
	}
}

func TestPurgeTrash(t *testing.T) {
	e := newLocalEnv(t)
	e.garbage()
	plan := e.plan(Live{}, Policy{})
	if _, err := e.executor("old-run", nil).Run(context.Background(), plan); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(e.trash, "young-run", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	oldRun := filepath.Join(e.trash, "old-run")
	filepath.Walk(oldRun, func(p string, _ os.FileInfo, _ error) error { return os.Chtimes(p, e.past, e.past) })
	res, err := PurgeTrash(context.Background(), PurgeConfig{FS: e.fs, TrashRoot: "file://" + e.trash, TTL: 7 * 24 * time.Hour, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Purged) != 1 || res.Purged[0].Path != "file://"+oldRun || len(res.Kept) != 1 {
		t.Fatalf("purge %+v", res)
	}
	if _, err := os.Stat(oldRun); !os.IsNotExist(err) {
		t.Fatal("old run still in trash")
	}
	if _, err := os.Stat(filepath.Join(e.trash, "_audit", "old-run")); err != nil {
		t.Fatal("audit manifest purged with the trash")
	}
	if !e.exists(res.Manifest) {
		t.Fatalf("purge manifest %s missing", res.Manifest)
	}
	if _, err := PurgeTrash(context.Background(), PurgeConfig{FS: e.fs, TrashRoot: "/", TTL: time.Hour, Now: time.Now()}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("purge of /: %v; want ErrInvalidConfig", err)
	}
}

func TestErrorClassification(t *testing.T) {
	unavailable := &storage.Error{Op: "rename", Path: "/x", Kind: storage.ErrUnavailable}
	if err := classify("act", "/x", unavailable); !IsRetryable(err) || !errors.Is(err, ErrStorageUnavailable) || !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("unavailable storage: %v", err)
	}
	quota := &storage.Error{Op: "mkdir", Path: "/x", Kind: storage.ErrNamespaceQuotaExceeded}
	if err := classify("act", "/x", quota); IsRetryable(err) || !errors.Is(err, storage.ErrNamespaceQuotaExceeded) {
		t.Fatalf("quota: %v", err)
	}
	g, _ := storage.NewGuard("/a")
	_, gerr := g.Check(storage.URI{Scheme: "file"}, "/b")
	if err := classify("act", "/b", gerr); IsRetryable(err) || !errors.Is(err, ErrOutsideRoots) {
		t.Fatalf("guard: %v", err)
	}
}
