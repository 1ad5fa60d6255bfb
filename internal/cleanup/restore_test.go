package cleanup

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// trashedRun trashes e.garbage() in run "r1" and returns the items.
func trashedRun(t *testing.T, e *localEnv) []string {
	t.Helper()
	want := e.garbage()
	plan := e.plan(liveWith(LiveJob{JobID: "fedcba9876543210fedcba9876543210"}), Policy{Action: ActionTrash})
	res, err := e.executor("r1", nil).Run(context.Background(), plan)
	if err != nil || res.Counts[OutcomeTrashed] != len(want) {
		t.Fatalf("trash run: %+v %v", res, err)
	}
	for _, p := range want {
		if e.exists(p) {
			t.Fatalf("%s not trashed", p)
		}
	}
	// The manifest says how each comes back.
	recs, err := ReadManifest(context.Background(), e.fs, "file://"+e.trash+"/_audit", "r1")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		// The savepoint has no _metadata: nothing proves a job could
		// restore from its trash path.
		for _, hint := range []string{"put it back", ": flinkmaint governance restore r1 --path '" + strings.TrimPrefix(r.Path, "file://") + "'"} {
			if !strings.Contains(r.Restore, hint) {
				t.Errorf("%s (%s): restore hint %q; want %q", r.Path, r.Kind, r.Restore, hint)
			}
		}
	}
	return want
}

func (e *localEnv) restoreConfig(mod func(*RestoreConfig)) RestoreConfig {
	cfg := RestoreConfig{FS: e.fs, Guard: e.guard, TrashRoot: "file://" + e.trash, RunID: "r1"}
	if mod != nil {
		mod(&cfg)
	}
	return cfg
}

func outcomes(res RestoreResult) map[string]Record {
	out := map[string]Record{}
	for _, r := range res.Items {
		out[r.Path] = r
	}
	return out
}

// A run's trash goes back where it was; a second restore finds it back
// and does nothing; a dry run moves nothing.
func TestRestorePutsTheTrashBack(t *testing.T) {
	e := newLocalEnv(t)
	items := trashedRun(t, e)
	ctx := context.Background()

	dry, err := Restore(ctx, e.restoreConfig(func(c *RestoreConfig) { c.DryRun = true }))
	if err != nil || dry.Counts[OutcomeStarted] != len(items) || dry.Manifest != "" {
		t.Fatalf("dry run: %+v %v; want every item to be restored and no manifest", dry, err)
	}
	for _, p := range items {
		if e.exists(p) {
			t.Fatalf("dry run moved %s back", p)
		}
	}

	res, err := Restore(ctx, e.restoreConfig(nil))
	if err != nil || res.Counts[OutcomeRestored] != len(items) || res.AlreadyBack != 0 {
		t.Fatalf("restore: %+v %v", res, err)
	}
	for _, p := range items {
		if !e.exists(p) {
			t.Errorf("%s not back", p)
		}
	}
	// The last trashed went back first.
	for i := 1; i < len(res.Items); i++ {
		if res.Items[i].Path == res.Items[i-1].Path {
			t.Fatalf("item restored twice: %s", res.Items[i].Path)
		}
	}
	again, err := Restore(ctx, e.restoreConfig(nil))
	if err != nil || again.AlreadyBack != len(items) || again.Counts[OutcomeRefused] != 0 {
		t.Fatalf("second restore: %+v %v; want every item already back", again, err)
	}
}

// An item whose original path was re-created is refused and left in the
// trash; the rest goes back. Only the selected paths go back.
func TestRestoreRefusesWhatCannotGoBack(t *testing.T) {
	e := newLocalEnv(t)
	items := trashedRun(t, e)
	ctx := context.Background()
	recreated := items[0]
	if err := os.MkdirAll(strings.TrimPrefix(recreated, "file://"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := Restore(ctx, e.restoreConfig(nil))
	if err != nil {
		t.Fatal(err)
	}
	got := outcomes(res)
	if r := got[recreated]; r.Outcome != OutcomeRefused || !strings.Contains(r.Detail, "exists again") || !e.exists(r.TrashPath) {
		t.Errorf("re-created %s: %+v; want it refused and kept in the trash", recreated, r)
	}
	for _, p := range items[1:] {
		if got[p].Outcome != OutcomeRestored || !e.exists(p) {
			t.Errorf("%s: %+v; want it back", p, got[p])
		}
	}

	// Selected by glob: only the savepoint.
	e2 := newLocalEnv(t)
	items2 := trashedRun(t, e2)
	sel, err := Restore(ctx, e2.restoreConfig(func(c *RestoreConfig) { c.Paths = []string{filepath.Join(e2.tenant, "savepoints", "savepoint-*")} }))
	if err != nil || len(sel.Items) != 1 || !strings.Contains(sel.Items[0].Path, "/savepoints/savepoint-") || sel.Items[0].Outcome != OutcomeRestored {
		t.Fatalf("restore of the savepoints only: %+v %v", sel, err)
	}
	// A glob naming a parent dir selects what is under it.
	under, err := Restore(ctx, e2.restoreConfig(func(c *RestoreConfig) { c.Paths = []string{filepath.Join(e2.tenant, "ha")} }))
	if err != nil || len(under.Items) != 1 || under.Items[0].Path != e2.uri("ha/gone") {
		t.Fatalf("restore under ha: %+v %v", under, err)
	}
	if _, err := Restore(ctx, e2.restoreConfig(func(c *RestoreConfig) { c.Paths = []string{"[bad"} })); err == nil {
		t.Fatal("a bad glob was accepted")
	}
	_ = items2
}

// A manifest that names a trash path the run would not have used (edited,
// or not the run's) moves nothing; an item outside the writable roots is
// refused; a purged run says so plainly.
func TestRestoreTrustsOnlyWhatTheRunWrote(t *testing.T) {
	e := newLocalEnv(t)
	items := trashedRun(t, e)
	ctx := context.Background()
	// Rewrite the manifest so the first item's trash path points at the
	// second item's copy.
	dir := filepath.Join(e.trash, "_audit", "r1")
	segs, _ := filepath.Glob(filepath.Join(dir, "manifest-*.jsonl"))
	var last []Record
	for _, s := range segs {
		data, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var r Record
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatal(err)
			}
			last = append(last, r)
		}
	}
	var forged Record
	for _, r := range last {
		if r.Path == items[0] && r.Outcome == OutcomeTrashed {
			forged = r
		}
	}
	forged.TrashPath = strings.Replace(forged.TrashPath, "/r1/", "/other-run/", 1)
	data, _ := json.Marshal(forged)
	if err := os.WriteFile(filepath.Join(dir, "manifest-999999.jsonl"), append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Restore(ctx, e.restoreConfig(nil))
	if err != nil {
		t.Fatal(err)
	}
	if r := outcomes(res)[items[0]]; r.Outcome != OutcomeRefused || !strings.Contains(r.Detail, "does not match the run") || e.exists(items[0]) {
		t.Errorf("forged trash path: %+v; want it refused, nothing moved", r)
	}

	// A guard without the tenant: every item is outside the roots.
	e2 := newLocalEnv(t)
	trashedRun(t, e2)
	narrow, err := storage.NewGuard(e2.trash)
	if err != nil {
		t.Fatal(err)
	}
	res, err = Restore(ctx, e2.restoreConfig(func(c *RestoreConfig) { c.Guard = narrow }))
	if err != nil || res.Counts[OutcomeRefused] != len(res.Items) || !strings.Contains(res.Items[0].Detail, "outside the roots a restore may write into") {
		t.Fatalf("restore outside the roots: %+v %v; want every item refused", res, err)
	}

	// Purged: the run's trash is gone and a purge manifest says so.
	e3 := newLocalEnv(t)
	trashedRun(t, e3)
	e3.age("../trash/r1", time.Now().Add(-30*24*time.Hour))
	if _, err := PurgeTrash(ctx, PurgeConfig{FS: e3.fs, TrashRoot: "file://" + e3.trash, TTL: 24 * time.Hour, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	res, err = Restore(ctx, e3.restoreConfig(nil))
	if err != nil || res.Counts[OutcomeRefused] != len(res.Items) || !strings.Contains(res.Items[0].Detail, "the trash purge removed run") {
		t.Fatalf("restore of a purged run: %+v %v; want every item refused, naming the purge", res, err)
	}

	// No manifest at all: the run name is wrong.
	if _, err := Restore(ctx, e3.restoreConfig(func(c *RestoreConfig) { c.RunID = "no-such-run" })); err == nil || !strings.Contains(err.Error(), "no audit manifest") {
		t.Fatalf("unknown run: %v", err)
	}
}

// A restore interrupted between items leaves each item back or in the
// trash, never lost; the next restore finishes it.
func TestRestoreResumesAfterAnInterruption(t *testing.T) {
	e := newLocalEnv(t)
	items := trashedRun(t, e)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := Restore(ctx, e.restoreConfig(func(c *RestoreConfig) {
		c.FS = &slowRenames{FileSystem: e.fs}
		c.Progress = func(done, total int) {
			if done == 1 {
				cancel()
			}
		}
	}))
	if err == nil {
		t.Fatal("an interrupted restore reported success")
	}
	back := 0
	for _, p := range items {
		trash := "file://" + e.trash + "/r1" + strings.TrimPrefix(p, "file://")
		switch home, inTrash := e.exists(p), e.exists(trash); {
		case home && !inTrash:
			back++
		case !home && inTrash:
		default:
			t.Fatalf("%s: at home %v, in the trash %v; want exactly one", p, home, inTrash)
		}
	}
	if back != 1 {
		t.Fatalf("%d items back after an interruption after the first; want 1", back)
	}
	res, err := Restore(context.Background(), e.restoreConfig(nil))
	if err != nil || res.AlreadyBack != back || res.Counts[OutcomeRestored] != len(items) {
		t.Fatalf("resumed restore: %+v %v; want the rest back and %d back already", res, err, back)
	}
}

// slowRenames is a file system whose renames after the first take until
// their context ends, as an HDFS rename does when the NameNode is slow.
type slowRenames struct {
	storage.FileSystem
	mu    sync.Mutex
	calls int
}

func (s *slowRenames) Rename(ctx context.Context, from, to string) error {
	s.mu.Lock()
	s.calls++
	first := s.calls == 1
	s.mu.Unlock()
	if !first {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.FileSystem.Rename(ctx, from, to)
}

// A purge while a run is being restored leaves that run alone, however
// old its trash: the restore wrote into it first.
func TestPurgeLeavesARunBeingRestored(t *testing.T) {
	e := newLocalEnv(t)
	items := trashedRun(t, e)
	e.age("../trash/r1", time.Now().Add(-30*24*time.Hour))
	// The first item in restore order is refused (its path re-created), so
	// nothing has moved yet when the purge runs.
	dry, err := Restore(context.Background(), e.restoreConfig(func(c *RestoreConfig) { c.DryRun = true }))
	if err != nil {
		t.Fatal(err)
	}
	first := dry.Items[0].Path
	if err := os.MkdirAll(strings.TrimPrefix(first, "file://"), 0o755); err != nil {
		t.Fatal(err)
	}
	var purge PurgeResult
	var purgeErr error
	res, err := Restore(context.Background(), e.restoreConfig(func(c *RestoreConfig) {
		c.Progress = func(done, total int) {
			if done == 1 {
				purge, purgeErr = PurgeTrash(context.Background(), PurgeConfig{FS: e.fs, TrashRoot: "file://" + e.trash, TTL: 24 * time.Hour, Now: time.Now()})
			}
		}
	}))
	if err != nil || res.Counts[OutcomeRestored] != len(items)-1 {
		t.Fatalf("restore: %+v %v; want every item but %s back", res, err, first)
	}
	if purgeErr != nil || len(purge.Purged) != 0 || len(purge.Kept) != 1 {
		t.Fatalf("purge during the restore: %+v %v; want the run kept", purge, purgeErr)
	}
	if e.exists("file://" + e.trash + "/r1/" + "_restore-in-progress") {
		t.Error("the restore hold was left behind")
	}
}

// TestRestoreCallsBackOnlyWhatARestoreMoved: an item found at its original
// path and no longer in the trash is back only if a restore moved it or
// began to (the restore stopped before it recorded the move done). When
// its trash copy is gone and something else was written where it was,
// that is not the item: it is refused, not counted back.
func TestRestoreCallsBackOnlyWhatARestoreMoved(t *testing.T) {
	for name, tc := range map[string]struct {
		// change does what happened to item p (trashed to trash) since.
		change func(t *testing.T, e *localEnv, p, trash string)
		back   bool
	}{
		"its trash copy gone, its path written anew": {change: func(t *testing.T, e *localEnv, p, trash string) {
			if err := os.RemoveAll(trash); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		"moved back by a restore stopped before it recorded so": {back: true, change: func(t *testing.T, e *localEnv, p, trash string) {
			if _, err := Restore(context.Background(), e.restoreConfig(nil)); err != nil {
				t.Fatal(err)
			}
			// What the restore manifest holds when the restore stops between
			// a move and its record: the move begun, not done.
			dir := strings.TrimPrefix(RestoreManifestDir("file://"+e.trash+"/_audit", "r1"), "file://")
			segs, err := filepath.Glob(filepath.Join(dir, "manifest-*.jsonl"))
			if err != nil || len(segs) == 0 {
				t.Fatalf("restore manifest segments %v, %v", segs, err)
			}
			for _, seg := range segs {
				data, err := os.ReadFile(seg)
				if err != nil {
					t.Fatal(err)
				}
				var kept []string
				for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
					var r Record
					if err := json.Unmarshal([]byte(line), &r); err != nil {
						t.Fatal(err)
					}
					if r.Outcome != OutcomeRestored {
						kept = append(kept, line)
					}
				}
				if err := os.WriteFile(seg, []byte(strings.Join(kept, "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			e := newLocalEnv(t)
			items := trashedRun(t, e)
			item := items[0]
			p := strings.TrimPrefix(item, "file://")
			tc.change(t, e, p, filepath.Join(e.trash, "r1", p))
			res, err := Restore(context.Background(), e.restoreConfig(nil))
			if err != nil {
				t.Fatal(err)
			}
			r := outcomes(res)[item]
			switch {
			case tc.back && (r.Outcome != OutcomeRestored || r.Detail != AlreadyBack):
				t.Fatalf("%s: %+v; want it already back: a restore moved it", item, r)
			case !tc.back && (r.Outcome != OutcomeRefused || !strings.Contains(r.Detail, "exists again") || res.AlreadyBack != 0):
				t.Fatalf("%s: %+v (%d already back); want it refused: what is there now is not what was trashed", item, r, res.AlreadyBack)
			}
		})
	}
}
