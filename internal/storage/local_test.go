package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
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

// A directory below the root swapped for a symlink between the guard check
// and the act (by a racing process, or an attacker with write access to the
// tree) must not redirect the act outside the root: every component below
// the root is opened without following links at the moment of acting.
func TestLocalSymlinkSwappedInAfterCheck(t *testing.T) {
	ctx := context.Background()
	type op struct {
		run func(l *Local, root string) error
		// The path the act names, below the swapped component.
		target string
	}
	ops := map[string]op{
		"Remove":    {func(l *Local, r string) error { return l.Remove(ctx, filepath.Join(r, "a/b/file")) }, "a/b/file"},
		"RemoveAll": {func(l *Local, r string) error { return l.RemoveAll(ctx, filepath.Join(r, "a/b")) }, "a/b"},
		"RenameFrom": {func(l *Local, r string) error {
			return l.Rename(ctx, filepath.Join(r, "a/b/file"), filepath.Join(r, "moved"))
		}, "a/b/file"},
		"RenameTo": {func(l *Local, r string) error {
			return l.Rename(ctx, filepath.Join(r, "src"), filepath.Join(r, "a/b/planted"))
		}, "a/b/planted"},
		"WriteFile": {func(l *Local, r string) error { return l.WriteFile(ctx, filepath.Join(r, "a/b/planted"), []byte("x")) }, "a/b/planted"},
		"Mkdir":     {func(l *Local, r string) error { return l.Mkdir(ctx, filepath.Join(r, "a/b/planted")) }, "a/b/planted"},
		"MkdirAll":  {func(l *Local, r string) error { return l.MkdirAll(ctx, filepath.Join(r, "a/b/planted/deeper")) }, "a/b/planted/deeper"},
	}
	// The component swapped: the top directory below the root, or the
	// target's parent.
	for _, swapped := range []string{"a", "a/b"} {
		for name, o := range ops {
			t.Run(swapped+"/"+name, func(t *testing.T) {
				l, root := newLocalForTest(t)
				outside := t.TempDir()
				mustWrite(t, filepath.Join(root, "a/b/file"), "inside")
				mustWrite(t, filepath.Join(root, "src"), "src")
				// outside mirrors what lies below the swapped component.
				below := strings.TrimPrefix("a/b", swapped)
				mustWrite(t, filepath.Join(outside, below, "file"), "precious")
				before := treeOf(t, outside)
				swaps := 0
				l.afterCheck = func() {
					swaps++
					p := filepath.Join(root, swapped)
					if err := os.Rename(p, p+".orig"); err != nil {
						t.Fatal(err)
					}
					if err := os.Symlink(outside, p); err != nil {
						t.Fatal(err)
					}
				}
				err := o.run(l, root)
				if swaps == 0 {
					t.Fatal("the act ran without a guard check before it")
				}
				if after := treeOf(t, outside); after != before {
					t.Fatalf("%s acted outside the root:\nbefore %s\nafter  %s", name, before, after)
				}
				if o.target == swapped && err == nil {
					// The target itself became a link: removing the link,
					// not what it points to, is just as safe.
					if _, err := os.Lstat(filepath.Join(root, swapped)); !errors.Is(err, os.ErrNotExist) {
						t.Fatalf("%s returned nil but %s is still there: %v", name, swapped, err)
					}
				} else if !errors.Is(err, ErrOutsideRoots) {
					t.Fatalf("%s after swapping %s for a symlink = %v; want ErrOutsideRoots", name, swapped, err)
				} else if !strings.Contains(err.Error(), filepath.Join(root, swapped)) || !strings.Contains(err.Error(), "symlink") {
					t.Fatalf("error %q does not name the symlinked component %s", err, filepath.Join(root, swapped))
				}
				if data, err := os.ReadFile(filepath.Join(root, "src")); err != nil || string(data) != "src" {
					t.Fatalf("rename source changed: %q %v", data, err)
				}
			})
		}
	}
}

// A symlinked component that points back inside the root is refused too:
// the act never resolves a link below the root.
func TestLocalRefusesSymlinkInsideRootAtAct(t *testing.T) {
	ctx := context.Background()
	l, root := newLocalForTest(t)
	mustWrite(t, filepath.Join(root, "a/b/file"), "a")
	mustWrite(t, filepath.Join(root, "other/b/file"), "other")
	l.afterCheck = func() {
		if err := os.RemoveAll(filepath.Join(root, "a")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(root, "other"), filepath.Join(root, "a")); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.RemoveAll(ctx, filepath.Join(root, "a/b")); !errors.Is(err, ErrOutsideRoots) {
		t.Fatalf("RemoveAll through an inside symlink = %v; want ErrOutsideRoots", err)
	}
	if data, err := os.ReadFile(filepath.Join(root, "other/b/file")); err != nil || string(data) != "other" {
		t.Fatalf("the symlink's target was touched: %q %v", data, err)
	}
}

// Acting on paths without symlinks still works end to end, including
// RemoveAll of a tree holding symlinks to the outside (removed, not
// followed) and MkdirAll of several missing levels.
func TestLocalActsBelowRoot(t *testing.T) {
	ctx := context.Background()
	l, root := newLocalForTest(t)
	outside := t.TempDir()
	mustWrite(t, filepath.Join(outside, "precious"), "keep")
	if err := l.MkdirAll(ctx, filepath.Join(root, "t/x/y/z")); err != nil {
		t.Fatal(err)
	}
	if err := l.MkdirAll(ctx, filepath.Join(root, "t/x/y/z")); err != nil {
		t.Fatalf("MkdirAll of an existing tree = %v", err)
	}
	for i := 0; i < 1500; i++ { // more than one directory read
		mustWrite(t, filepath.Join(root, "t/x", fmt.Sprintf("f%04d", i)), "")
	}
	if err := os.Symlink(outside, filepath.Join(root, "t/x/y/link")); err != nil {
		t.Fatal(err)
	}
	if err := l.WriteFile(ctx, filepath.Join(root, "t/x/y/z/f"), []byte("data")); err != nil {
		t.Fatal(err)
	}
	if err := l.MkdirAll(ctx, filepath.Join(root, "t/x/y/z/f")); !errors.Is(err, ErrNotDir) {
		t.Fatalf("MkdirAll over a file = %v; want ErrNotDir", err)
	}
	if err := l.Rename(ctx, filepath.Join(root, "t/x/y/z/f"), filepath.Join(root, "t/g")); err != nil {
		t.Fatal(err)
	}
	if err := l.Rename(ctx, filepath.Join(root, "t/g"), filepath.Join(root, "t/x")); !errors.Is(err, ErrExist) {
		t.Fatalf("Rename onto existing = %v; want ErrExist", err)
	}
	if err := l.Remove(ctx, filepath.Join(root, "t/g")); err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveAll(ctx, filepath.Join(root, "t")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, "t")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("tree still there: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(outside, "precious")); err != nil || string(data) != "keep" {
		t.Fatalf("outside file touched: %q %v", data, err)
	}
	if err := l.Mkdir(ctx, filepath.Join(root, "t", "u")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Mkdir without parent = %v; want ErrNotFound", err)
	}
	if err := l.WriteFile(ctx, filepath.Join(root, "missing", "f"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("WriteFile without parent = %v; want ErrNotFound", err)
	}
}

func mustWrite(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// treeOf lists every entry below dir with its type and content, without
// following symlinks.
func treeOf(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s:%s", rel, d.Type())
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "=%q", data)
		}
		b.WriteString(" ")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// ReadFile reads regular files only: a named pipe as _metadata would block
// the read forever, a device such as /dev/zero would feed it up to the
// limit. Both are refused at once, naming the path and what it is.
func TestLocalReadFileRefusesNonRegular(t *testing.T) {
	l, root := newLocalForTest(t)
	fifo := filepath.Join(root, "chk-1", "_metadata")
	if err := os.MkdirAll(filepath.Dir(fifo), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	linkToFIFO := filepath.Join(root, "link-to-fifo")
	if err := os.Symlink(fifo, linkToFIFO); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		path, kind string
	}{
		"fifo":            {fifo, "named pipe"},
		"symlink to fifo": {linkToFIFO, "named pipe"},
		"char device":     {"/dev/zero", "character device"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := os.Stat(tc.path); err != nil {
				t.Skipf("%s: %v", tc.path, err)
			}
			type result struct {
				data []byte
				err  error
			}
			done := make(chan result, 1)
			go func() {
				data, err := l.ReadFile(context.Background(), tc.path, 1<<20)
				done <- result{data, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("ReadFile(%s) still blocked after 10s", tc.path)
			}
			if r.err == nil {
				t.Fatalf("ReadFile(%s) read %d bytes; want a refusal", tc.path, len(r.data))
			}
			if !strings.Contains(r.err.Error(), tc.path) || !strings.Contains(r.err.Error(), tc.kind) || !strings.Contains(r.err.Error(), "not a regular file") {
				t.Fatalf("ReadFile(%s) = %v; want an error naming the path and %q", tc.path, r.err, tc.kind)
			}
		})
	}
	// A regular file swapped for a pipe after the type check: the open
	// does not block and the opened file is checked again.
	swapped := filepath.Join(root, "chk-2", "_metadata")
	mustWrite(t, swapped, "regular at check time")
	l.afterCheck = func() {
		if err := os.Remove(swapped); err != nil {
			t.Error(err)
		}
		if err := syscall.Mkfifo(swapped, 0o644); err != nil {
			t.Error(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.ReadFile(context.Background(), swapped, 1<<20)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "named pipe") {
			t.Fatalf("ReadFile of a file swapped for a pipe = %v; want a refusal naming the pipe", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadFile of a file swapped for a pipe still blocked after 10s")
	}
	l.afterCheck = nil
	// A directory keeps its own kind.
	if _, err := l.ReadFile(context.Background(), filepath.Dir(fifo), 0); !errors.Is(err, ErrIsDir) {
		t.Fatalf("ReadFile(dir) = %v; want ErrIsDir", err)
	}
}
