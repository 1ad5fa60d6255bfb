package cleanup

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

// trashTree is a trash root on the local file system whose runs are aged
// to exact times.
type trashTree struct {
	t    *testing.T
	root string
	fs   *storage.Local
}

func newTrashTree(t *testing.T) *trashTree {
	t.Helper()
	root := filepath.Join(t.TempDir(), "trash")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	guard, err := storage.NewGuard(root)
	if err != nil {
		t.Fatal(err)
	}
	return &trashTree{t: t, root: root, fs: storage.NewLocal(guard)}
}

// run writes a trash run with files d/f1 (3 bytes) and f2 (5 bytes), every
// entry last changed at when.
func (tr *trashTree) run(name string, when time.Time) string {
	tr.t.Helper()
	dir := filepath.Join(tr.root, name)
	for rel, size := range map[string]int{"d/f1": 3, "f2": 5} {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tr.t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
			tr.t.Fatal(err)
		}
	}
	for _, p := range []string{filepath.Join(dir, "d", "f1"), filepath.Join(dir, "f2"), filepath.Join(dir, "d"), dir} {
		if err := os.Chtimes(p, when, when); err != nil {
			tr.t.Fatal(err)
		}
	}
	return dir
}

func (tr *trashTree) purge(ttl time.Duration, now time.Time) (PurgeResult, error) {
	return PurgeTrash(context.Background(), PurgeConfig{FS: tr.fs, TrashRoot: "file://" + tr.root, TTL: ttl, Now: now})
}

// A run unchanged for exactly the TTL is purged; one changed a second
// later is kept. Runs are purged in path order, each recorded with what it
// held.
func TestPurgeTrashAtTheTTL(t *testing.T) {
	tr := newTrashTree(t)
	t0 := time.Unix(1_700_000_000, 0)
	ttl := 7 * 24 * time.Hour
	b, a := tr.run("run-b", t0), tr.run("run-a", t0)
	young := tr.run("run-c", t0.Add(time.Second))
	res, err := tr.purge(ttl, t0.Add(ttl))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Purged) != 2 || res.Purged[0].Path != "file://"+a || res.Purged[1].Path != "file://"+b {
		t.Fatalf("purged %+v; want run-a then run-b, unchanged for exactly the TTL", res.Purged)
	}
	for _, r := range res.Purged {
		if r.Files != 2 || r.Dirs != 2 || r.Bytes != 8 || r.Outcome != OutcomePurged {
			t.Errorf("purge record %+v; want 2 files, 2 dirs (the run and d), 8 bytes", r)
		}
	}
	if len(res.Kept) != 1 || res.Kept[0] != "file://"+young {
		t.Fatalf("kept %v; want run-c, changed a second short of the TTL", res.Kept)
	}
	for _, p := range []string{a, b} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still in the trash: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(young, "f2")); err != nil {
		t.Errorf("the young run lost a file: %v", err)
	}
	data, err := os.ReadFile(strings.TrimPrefix(res.Manifest, "file://"))
	if err != nil || strings.Count(string(data), "\n") != 2 {
		t.Fatalf("purge manifest %s: %v\n%s", res.Manifest, err, data)
	}
}

// A purge that removes nothing writes no manifest.
func TestPurgeTrashOfNothingWritesNoManifest(t *testing.T) {
	tr := newTrashTree(t)
	now := time.Unix(1_700_000_000, 0)
	tr.run("run-a", now)
	res, err := tr.purge(time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Purged) != 0 || res.Manifest != "" {
		t.Fatalf("purge %+v; want nothing purged and no manifest", res)
	}
	if _, err := os.Stat(filepath.Join(tr.root, "_audit")); !os.IsNotExist(err) {
		t.Fatalf("an audit dir was made for a purge of nothing: %v", err)
	}
}

// A purge whose manifest cannot be written fails: the runs it removed
// must not go unrecorded.
func TestPurgeTrashFailsWhenItsManifestIsNotWritten(t *testing.T) {
	tr := newTrashTree(t)
	now := time.Unix(1_700_000_000, 0)
	tr.run("run-a", now.Add(-2*time.Hour))
	taken := filepath.Join(tr.root, "_audit", "_purge", "purge-"+now.UTC().Format("20060102T150405.000000000Z")+".jsonl")
	if err := os.MkdirAll(filepath.Dir(taken), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(taken, []byte("another purge's records\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err := tr.purge(time.Hour, now); err == nil {
		t.Fatalf("purge %+v with its manifest not written succeeded; want an error", res)
	}
}

// A purge refuses a TTL that would purge every run at once, and a trash
// root that is not an absolute path, before it touches anything.
func TestPurgeTrashRefusesItsConfig(t *testing.T) {
	tr := newTrashTree(t)
	now := time.Unix(1_700_000_000, 0)
	run := tr.run("run-a", now.Add(-time.Hour))
	for name, cfg := range map[string]PurgeConfig{
		"zero ttl":      {FS: tr.fs, TrashRoot: "file://" + tr.root, Now: now},
		"negative ttl":  {FS: tr.fs, TrashRoot: "file://" + tr.root, TTL: -time.Hour, Now: now},
		"relative root": {FS: tr.fs, TrashRoot: "trash", TTL: time.Minute, Now: now},
		"no root":       {FS: tr.fs, TTL: time.Minute, Now: now},
	} {
		if res, err := PurgeTrash(context.Background(), cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: purge %+v, %v; want ErrInvalidConfig", name, res, err)
		}
	}
	if _, err := os.Stat(filepath.Join(run, "f2")); err != nil {
		t.Fatalf("a refused purge removed %s: %v", run, err)
	}
}
