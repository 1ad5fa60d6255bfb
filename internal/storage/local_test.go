package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func newLocalForTest(t *testing.T) (*Local, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	g, err := NewGuard(root)
	if err != nil {
		t.Fatal(err)
	}
	return NewLocal(g), root
}

func TestLocalWriteReadStat(t *testing.T) {
	ctx := context.Background()
	l, root := newLocalForTest(t)
	dir := filepath.Join(root, "a", "b")
	if err := l.MkdirAll(ctx, dir); err != nil {
		t.Fatal(err)
	}
	file := "file://" + filepath.Join(dir, "_metadata")
	if err := l.WriteFile(ctx, file, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := l.WriteFile(ctx, file, []byte("again")); !errors.Is(err, ErrExist) {
		t.Fatalf("second WriteFile = %v; want ErrExist", err)
	}
	fi, err := l.Stat(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Path != file || fi.Name != "_metadata" || fi.Size != 5 || fi.IsDir {
		t.Fatalf("Stat = %+v", fi)
	}
	data, err := l.ReadFile(ctx, file, 0)
	if err != nil || string(data) != "hello" {
		t.Fatalf("ReadFile = %q, %v", data, err)
	}
	if _, err := l.ReadFile(ctx, file, 4); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadFile over cap = %v; want ErrTooLarge", err)
	}
	if _, err := l.ReadFile(ctx, dir, 0); !errors.Is(err, ErrIsDir) {
		t.Fatalf("ReadFile(dir) = %v; want ErrIsDir", err)
	}
	if _, err := l.Stat(ctx, filepath.Join(root, "missing")); !errors.Is(err, ErrNotFound) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Stat(missing) = %v; want ErrNotFound", err)
	}
	if _, err := l.Stat(ctx, "hdfs://nn:8020"+dir); !errors.Is(err, ErrWrongFileSystem) {
		t.Fatalf("Stat(hdfs uri) = %v; want ErrWrongFileSystem", err)
	}
	if _, err := l.Stat(ctx, "file://otherhost"+dir); !errors.Is(err, ErrWrongFileSystem) {
		t.Fatalf("Stat(file://otherhost) = %v; want ErrWrongFileSystem", err)
	}
}

func TestLocalListBatches(t *testing.T) {
	ctx := context.Background()
	l, root := newLocalForTest(t)
	const n = 2503
	for i := 0; i < n; i++ {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("f%05d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	var sizes []int
	err := l.List(ctx, root, 1000, func(batch []FileInfo) error {
		sizes = append(sizes, len(batch))
		for _, fi := range batch {
			names = append(names, fi.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sizes) != "[1000 1000 503]" {
		t.Fatalf("batch sizes %v", sizes)
	}
	sort.Strings(names)
	for i, name := range names {
		if want := fmt.Sprintf("f%05d", i); name != want {
			t.Fatalf("entry %d = %s; want %s", i, name, want)
		}
	}
	// Stopping early is not an error and reads no further batch.
	calls := 0
	err = l.List(ctx, root, 100, func([]FileInfo) error { calls++; return ErrStopListing })
	if err != nil || calls != 1 {
		t.Fatalf("stop: calls=%d err=%v", calls, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := l.List(cctx, root, 100, func([]FileInfo) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("List with cancelled ctx = %v", err)
	}
	if err := l.List(ctx, filepath.Join(root, "f00001"), 10, func([]FileInfo) error { return nil }); !errors.Is(err, ErrNotDir) {
		t.Fatalf("List(file) = %v; want ErrNotDir", err)
	}
}

func TestLocalWalkAndSummary(t *testing.T) {
	ctx := context.Background()
	l, root := newLocalForTest(t)
	mk := func(p string, data string) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk("job/chk-1/_metadata", "12345")
	mk("job/chk-1/x", "1")
	mk("job/shared/s1", "22")
	mk("job/taskowned/.keep", "")
	mk("skipme/deep/file", "zzz")
	var seen []string
	err := l.Walk(ctx, root, func(fi FileInfo) error {
		rel := strings.TrimPrefix(strings.TrimPrefix(fi.Path, "file://"+root), "/")
		seen = append(seen, rel)
		if fi.Name == "skipme" {
			return SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(seen)
	want := []string{"", "job", "job/chk-1", "job/chk-1/_metadata", "job/chk-1/x", "job/shared", "job/shared/s1", "job/taskowned", "job/taskowned/.keep", "skipme"}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("walk saw %v\nwant %v", seen, want)
	}
	// A WalkFunc error is returned as is, even a not-found one.
	sentinel := fmt.Errorf("mine: %w", ErrNotFound)
	if err := l.Walk(ctx, root, func(fi FileInfo) error {
		if fi.Name == "x" {
			return sentinel
		}
		return nil
	}); err != sentinel {
		t.Fatalf("walk returned %v; want the WalkFunc's error", err)
	}
	cs, err := l.ContentSummary(ctx, filepath.Join(root, "job"))
	if err != nil {
		t.Fatal(err)
	}
	want2 := ContentSummary{Files: 4, Dirs: 4, Length: 8, SpaceConsumed: 8, NamespaceQuota: -1, SpaceQuota: -1}
	if cs != want2 {
		t.Fatalf("summary %+v; want %+v", cs, want2)
	}
}

func TestLocalDestructive(t *testing.T) {
	ctx := context.Background()
	l, root := newLocalForTest(t)
	a := filepath.Join(root, "a")
	if err := l.Mkdir(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := l.WriteFile(ctx, filepath.Join(a, "f"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := l.Remove(ctx, a); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("Remove(non-empty) = %v; want ErrNotEmpty", err)
	}
	b := filepath.Join(root, "b")
	if err := l.Mkdir(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := l.Rename(ctx, a, b); !errors.Is(err, ErrExist) {
		t.Fatalf("Rename onto existing = %v; want ErrExist", err)
	}
	c := filepath.Join(root, "c")
	if err := l.Rename(ctx, a, c); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(c, "f")); err != nil {
		t.Fatalf("renamed tree: %v", err)
	}
	if err := l.RemoveAll(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveAll(ctx, c); err != nil {
		t.Fatalf("RemoveAll(missing) = %v; want nil", err)
	}
	if err := l.Remove(ctx, c); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Remove(missing) = %v; want ErrNotFound", err)
	}
	if err := l.Mkdir(ctx, filepath.Join(root, "x", "y")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Mkdir without parent = %v; want ErrNotFound", err)
	}
	if err := l.Remove(ctx, b); err != nil {
		t.Fatal(err)
	}
}

func TestLocalGuardRefusals(t *testing.T) {
	ctx := context.Background()
	l, root := newLocalForTest(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "precious"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	// root/escape -> outside; root/self -> root.
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(root, "self")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "ok"), 0o755); err != nil {
		t.Fatal(err)
	}
	type op func(p string) error
	ops := map[string]op{
		"Mkdir":     func(p string) error { return l.Mkdir(ctx, p) },
		"MkdirAll":  func(p string) error { return l.MkdirAll(ctx, p) },
		"WriteFile": func(p string) error { return l.WriteFile(ctx, p, []byte("x")) },
		"Remove":    func(p string) error { return l.Remove(ctx, p) },
		"RemoveAll": func(p string) error { return l.RemoveAll(ctx, p) },
		"RenameFrom": func(p string) error {
			return l.Rename(ctx, p, filepath.Join(root, "ok", "dst"))
		},
		"RenameTo": func(p string) error { return l.Rename(ctx, filepath.Join(root, "ok"), p) },
	}
	paths := map[string]string{
		"empty":           "",
		"relative":        "root/x",
		"dotdot":          root + "/ok/../../x",
		"root itself":     root,
		"root as uri":     "file://" + root,
		"outside":         outside + "/precious",
		"other scheme":    "hdfs://nn:8020" + root + "/x",
		"through symlink": root + "/escape/precious",
		"new via symlink": root + "/escape/newdir",
		"symlink to root": root + "/self",
		"sibling prefix":  root + "x/y",
	}
	for opName, run := range ops {
		for pathName, p := range paths {
			t.Run(opName+"/"+pathName, func(t *testing.T) {
				err := run(p)
				if !errors.Is(err, ErrOutsideRoots) {
					t.Fatalf("%s(%q) = %v; want ErrOutsideRoots", opName, p, err)
				}
				if !strings.Contains(err.Error(), root) {
					t.Fatalf("error %q does not name the root", err)
				}
			})
		}
	}
	if data, err := os.ReadFile(filepath.Join(outside, "precious")); err != nil || string(data) != "keep" {
		t.Fatalf("outside file touched: %q %v", data, err)
	}
	// A plain directory under the root can still be removed.
	if err := l.Remove(ctx, filepath.Join(root, "ok")); err != nil {
		t.Fatalf("Remove(inside) = %v", err)
	}
}

func TestLocalCancelledContext(t *testing.T) {
	l, root := newLocalForTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Stat(ctx, root); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stat = %v", err)
	}
	if err := l.Mkdir(ctx, filepath.Join(root, "x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Mkdir = %v", err)
	}
	if err := l.Walk(ctx, root, func(FileInfo) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Walk = %v", err)
	}
}
