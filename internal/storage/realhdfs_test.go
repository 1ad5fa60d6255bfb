//go:build realpeers

package storage_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/storage"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// testBase is where these tests write on the sandbox HDFS; each test uses
// its own random directory below it and removes it afterwards.
const testBase = "/flinkmaint-test/storage"

type realHDFS struct {
	peers *sandbox.Peers
	fs    *storage.HDFS
	dir   string // this test's directory, strictly under testBase
}

func newRealHDFS(t *testing.T) *realHDFS {
	t.Helper()
	peers := sandbox.RequirePeers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := peers.HadoopShell(ctx, "-mkdir", "-p", testBase); err != nil {
		t.Fatalf("create %s: %v", testBase, err)
	}
	guard, err := storage.NewGuard(testBase)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := storage.NewHDFS(ctx, storage.HDFSOptions{
		URI:           peers.HDFS.URI,
		User:          peers.HDFS.User,
		HadoopConfDir: t.TempDir(), // no ambient Hadoop configuration
		Guard:         guard,
	})
	if err != nil {
		t.Fatalf("connect to sandbox HDFS %s: %v", peers.HDFS.URI, err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	r := &realHDFS{peers: peers, fs: fs, dir: path.Join(testBase, t.Name()+"-"+hex.EncodeToString(b))}
	if err := fs.Mkdir(ctx, r.dir); err != nil {
		t.Fatalf("mkdir %s: %v", r.dir, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = peers.ClearNamespaceQuota(ctx, r.dir+"/tenant")
		if err := fs.RemoveAll(ctx, r.dir); err != nil {
			t.Errorf("cleanup %s: %v", r.dir, err)
		}
		fs.Close()
	})
	return r
}

// shellCount runs `hdfs dfs -count -q path` and parses its eight columns.
func (r *realHDFS) shellCount(t *testing.T, ctx context.Context, p string) storage.ContentSummary {
	t.Helper()
	out, err := r.peers.HadoopShell(ctx, "-count", "-q", p)
	if err != nil {
		t.Fatalf("-count -q %s: %v", p, err)
	}
	f := strings.Fields(out)
	if len(f) != 8 {
		t.Fatalf("-count -q %s printed %q; want 8 columns", p, out)
	}
	num := func(s string) int64 {
		if s == "none" || s == "inf" {
			return -1
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("-count -q column %q: %v", s, err)
		}
		return n
	}
	// QUOTA REM_QUOTA SPACE_QUOTA REM_SPACE_QUOTA DIR_COUNT FILE_COUNT CONTENT_SIZE PATHNAME
	cs := storage.ContentSummary{NamespaceQuota: num(f[0]), SpaceQuota: num(f[2]), Dirs: num(f[4]), Files: num(f[5]), Length: num(f[6])}
	if cs.NamespaceQuota >= 0 && num(f[1]) != cs.NamespaceQuota-cs.Dirs-cs.Files {
		t.Fatalf("-count -q %s: REM_QUOTA %s does not add up: %q", p, f[1], out)
	}
	return cs
}

func TestRealHDFSContentSummaryMatchesShell(t *testing.T) {
	r := newRealHDFS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tenant := r.dir + "/tenant"
	if err := r.fs.MkdirAll(ctx, tenant+"/job/chk-1"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if err := r.fs.WriteFile(ctx, fmt.Sprintf("%s/job/chk-1/f%d", tenant, i), []byte(strings.Repeat("x", 100*i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.fs.MkdirAll(ctx, r.dir+"/other/a/b"); err != nil {
		t.Fatal(err)
	}
	if err := r.peers.SetNamespaceQuota(ctx, tenant, 50); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{tenant, r.dir + "/other", r.dir} {
		got, err := r.fs.ContentSummary(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		want := r.shellCount(t, ctx, p)
		got.SpaceConsumed = 0 // -count -q prints space quota, not consumption
		if got != want {
			t.Fatalf("%s: ContentSummary %+v; hdfs dfs -count -q %+v", p, got, want)
		}
		t.Logf("%s: %+v", p, got)
	}
	cs, _ := r.fs.ContentSummary(ctx, tenant)
	if cs.NamespaceQuota != 50 || cs.Files != 5 || cs.Dirs != 3 || cs.Length != 1000 || cs.SpaceConsumed < cs.Length {
		t.Fatalf("tenant summary %+v", cs)
	}
}

func TestRealHDFSNamespaceQuotaAndTrash(t *testing.T) {
	r := newRealHDFS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tenant, trash := r.dir+"/tenant", r.dir+"/trash"
	for _, d := range []string{tenant, trash, tenant + "/old-job"} {
		if err := r.fs.Mkdir(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 4; i++ {
		if err := r.fs.WriteFile(ctx, fmt.Sprintf("%s/old-job/f%d", tenant, i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	// tenant + old-job + 4 files = 6 names; allow 10.
	const quota = 10
	if err := r.peers.SetNamespaceQuota(ctx, tenant, quota); err != nil {
		t.Fatal(err)
	}
	var writeErr error
	written := 0
	for i := 0; i < quota; i++ {
		writeErr = r.fs.WriteFile(ctx, fmt.Sprintf("%s/new-%d", tenant, i), nil)
		if writeErr != nil {
			break
		}
		written++
	}
	if written != quota-6 {
		t.Fatalf("wrote %d files before the quota stopped us; want %d (last error %v)", written, quota-6, writeErr)
	}
	if !errors.Is(writeErr, storage.ErrNamespaceQuotaExceeded) || !errors.Is(writeErr, storage.ErrQuotaExceeded) || errors.Is(writeErr, storage.ErrSpaceQuotaExceeded) {
		t.Fatalf("write past quota = %v; want ErrNamespaceQuotaExceeded", writeErr)
	}
	t.Logf("write past quota: %v", writeErr)
	// A directory counts too.
	if err := r.fs.Mkdir(ctx, tenant+"/one-more-dir"); !errors.Is(err, storage.ErrNamespaceQuotaExceeded) {
		t.Fatalf("mkdir past quota = %v", err)
	}
	before, err := r.fs.ContentSummary(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := r.fs.ContentSummary(ctx, tenant+"/old-job")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.fs.Rename(ctx, tenant+"/old-job", trash+"/old-job"); err != nil {
		t.Fatalf("move to trash: %v", err)
	}
	after, err := r.fs.ContentSummary(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	if freed := before.Namespace() - after.Namespace(); freed != sub.Namespace() || freed != 5 {
		t.Fatalf("moving old-job (%d names) to trash freed %d (before %+v after %+v)", sub.Namespace(), freed, before, after)
	}
	if want := r.shellCount(t, ctx, tenant); want.Files != after.Files || want.Dirs != after.Dirs {
		t.Fatalf("after trash: ours %+v, shell %+v", after, want)
	}
	if err := r.fs.WriteFile(ctx, tenant+"/after-trash", []byte("ok")); err != nil {
		t.Fatalf("write after freeing quota: %v", err)
	}
	// Never overwrite: renaming onto an existing path is refused.
	if err := r.fs.Rename(ctx, tenant+"/after-trash", tenant+"/new-0"); !errors.Is(err, storage.ErrExist) {
		t.Fatalf("rename onto existing = %v; want ErrExist", err)
	}
}

func TestRealHDFSOperations(t *testing.T) {
	r := newRealHDFS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	file := r.dir + "/a/_metadata"
	if err := r.fs.MkdirAll(ctx, r.dir+"/a/b/c"); err != nil {
		t.Fatal(err)
	}
	payload := []byte(strings.Repeat("flink", 3000))
	if err := r.fs.WriteFile(ctx, file, payload); err != nil {
		t.Fatal(err)
	}
	if err := r.fs.WriteFile(ctx, file, payload); !errors.Is(err, storage.ErrExist) {
		t.Fatalf("second write = %v; want ErrExist", err)
	}
	got, err := r.fs.ReadFile(ctx, r.peers.HDFS.URI+file, 0)
	if err != nil || string(got) != string(payload) {
		t.Fatalf("ReadFile = %d bytes, %v", len(got), err)
	}
	if _, err := r.fs.ReadFile(ctx, file, 100); !errors.Is(err, storage.ErrTooLarge) {
		t.Fatalf("ReadFile over cap = %v", err)
	}
	// An empty file reads as empty (after the second look ReadFile takes).
	if err := r.fs.WriteFile(ctx, r.dir+"/empty", nil); err != nil {
		t.Fatal(err)
	}
	if got, err := r.fs.ReadFile(ctx, r.dir+"/empty", 0); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("ReadFile(empty) = %q (nil: %v), %v", got, got == nil, err)
	}
	fi, err := r.fs.Stat(ctx, file)
	if err != nil || fi.Size != int64(len(payload)) || fi.IsDir || fi.Name != "_metadata" || fi.Path != r.peers.HDFS.URI+file || fi.Owner != r.peers.HDFS.User {
		t.Fatalf("Stat = %+v, %v", fi, err)
	}
	if _, err := r.fs.Stat(ctx, r.dir+"/missing"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Stat(missing) = %v", err)
	}
	if err := r.fs.Remove(ctx, r.dir+"/a"); !errors.Is(err, storage.ErrNotEmpty) {
		t.Fatalf("Remove(non-empty) = %v; want ErrNotEmpty", err)
	}
	var walked []string
	if err := r.fs.Walk(ctx, r.dir+"/a", func(fi storage.FileInfo) error {
		walked = append(walked, strings.TrimPrefix(fi.Path, r.peers.HDFS.URI+r.dir))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(walked) != "[/a /a/_metadata /a/b /a/b/c]" {
		t.Fatalf("walk: %v", walked)
	}
	// Walk reads its root's entry from the open its listing makes: two
	// calls for an empty dir, where a Stat first made three, and one for
	// a file (the least of three tries: the library renews leases every
	// second in between).
	for _, c := range []struct {
		root string
		want uint64
	}{{r.dir + "/a/b/c", 2}, {file, 1}} {
		least, leastCounted := uint64(math.MaxUint64), uint64(math.MaxUint64)
		for range 3 {
			var counted atomic.Uint64
			before, visited := r.fs.RPCs(), 0
			if err := r.fs.Walk(storage.CountNamenodeCalls(ctx, &counted), c.root, func(storage.FileInfo) error { visited++; return nil }); err != nil || visited != 1 {
				t.Fatalf("Walk(%s) visited %d, %v; want the root alone", c.root, visited, err)
			}
			least, leastCounted = min(least, r.fs.RPCs()-before), min(leastCounted, counted.Load())
		}
		if least != c.want || leastCounted != c.want {
			t.Fatalf("Walk(%s) took %d namenode calls, %d counted in its context; want %d", c.root, least, leastCounted, c.want)
		}
	}
	if err := r.fs.Walk(ctx, r.dir+"/missing", func(storage.FileInfo) error { return nil }); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Walk(missing) = %v; want ErrNotFound", err)
	}
	walked = nil
	if err := r.fs.Walk(ctx, r.dir+"/a", func(fi storage.FileInfo) error {
		walked = append(walked, fi.Name)
		return storage.SkipDir
	}); err != nil || fmt.Sprint(walked) != "[a]" {
		t.Fatalf("Walk skipping its root visited %v, %v; want [a]", walked, err)
	}
	stop := errors.New("stop")
	if err := r.fs.Walk(ctx, r.dir+"/a", func(storage.FileInfo) error { return stop }); err != stop {
		t.Fatalf("Walk whose func fails at the root = %v; want that error as is", err)
	}
	for name, p := range map[string]string{
		"outside":      "/user/app/x",
		"base root":    testBase,
		"dotdot":       r.dir + "/../../x",
		"other nn":     "hdfs://127.0.0.1:1" + r.dir + "/x",
		"other scheme": "file://" + r.dir + "/x",
	} {
		if err := r.fs.RemoveAll(ctx, p); !errors.Is(err, storage.ErrOutsideRoots) {
			t.Fatalf("%s: RemoveAll(%s) = %v; want ErrOutsideRoots", name, p, err)
		}
	}
	if err := r.fs.RemoveAll(ctx, r.dir+"/a"); err != nil {
		t.Fatal(err)
	}
	if err := r.fs.RemoveAll(ctx, r.dir+"/a"); err != nil {
		t.Fatalf("RemoveAll(missing) = %v", err)
	}
	// A cancelled context stops before any call.
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	if _, err := r.fs.Stat(cctx, r.dir); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stat(cancelled) = %v", err)
	}
	if _, err := r.fs.Stat(ctx, r.dir); err != nil {
		t.Fatalf("Stat after a cancelled call: %v", err)
	}
}

func TestRealHDFSBatchedList(t *testing.T) {
	r := newRealHDFS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := r.dir + "/many"
	if err := r.fs.Mkdir(ctx, dir); err != nil {
		t.Fatal(err)
	}
	const n = 2345
	if _, err := r.peers.HadoopShell(ctx, append([]string{"-touchz"}, names(dir, 0, n)...)...); err != nil {
		t.Fatalf("touchz: %v", err)
	}
	for _, batchSize := range []int{1000, 500} {
		var sizes []int
		var all []string
		rpcs := r.fs.RPCs()
		err := r.fs.List(ctx, dir, batchSize, func(batch []storage.FileInfo) error {
			sizes = append(sizes, len(batch))
			for _, fi := range batch {
				all = append(all, fi.Name)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		used := r.fs.RPCs() - rpcs
		wantBatches := (n + batchSize - 1) / batchSize
		if len(sizes) != wantBatches || sizes[0] != batchSize || sizes[len(sizes)-1] != n-(wantBatches-1)*batchSize {
			t.Fatalf("batch %d: sizes %v", batchSize, sizes)
		}
		if !sort.StringsAreSorted(all) || len(all) != n || all[0] != "f00000" || all[n-1] != fmt.Sprintf("f%05d", n-1) {
			t.Fatalf("batch %d: %d names, sorted=%v", batchSize, len(all), sort.StringsAreSorted(all))
		}
		// One stat to open, then one getListing per 1000 entries (the
		// namenode's dfs.ls.limit); a lease renewal may slip in.
		t.Logf("batch %d: %d entries in %v batches, %d namenode RPCs", batchSize, n, sizes, used)
		if min := uint64(1 + (n+999)/1000); used < min || used > uint64(1+2*wantBatches+2) {
			t.Fatalf("batch %d: %d RPCs; want about %d", batchSize, used, min)
		}
	}
	// While other calls keep every connection busy, a listing goes on on
	// the connection it was opened on: reopened elsewhere, the library
	// would read it again from the start, batch after batch.
	busy, stopBusy := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 2 * storage.DefaultConnections {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for busy.Err() == nil {
				_, _ = r.fs.Stat(busy, dir)
			}
		}()
	}
	var counted atomic.Uint64
	listed := 0
	err := r.fs.List(storage.CountNamenodeCalls(ctx, &counted), dir, 500, func(batch []storage.FileInfo) error {
		listed += len(batch)
		_, err := r.fs.Stat(ctx, dir) // the listing's caller uses a connection between batches
		return err
	})
	stopBusy()
	wg.Wait()
	// One open and a getListing per batch of 500, 6 calls; a lease
	// renewal may slip in.
	if err != nil || listed != n || counted.Load() > 1+5+2 {
		t.Fatalf("listing among busy connections: %d entries, %d namenode calls, %v; want %d entries in at most %d calls", listed, counted.Load(), err, n, 1+5+2)
	}
	// Stopping early reads one batch only.
	calls := 0
	if err := r.fs.List(ctx, dir, 1000, func([]storage.FileInfo) error { calls++; return storage.ErrStopListing }); err != nil || calls != 1 {
		t.Fatalf("stop: %d calls, %v", calls, err)
	}
	cs, err := r.fs.ContentSummary(ctx, dir)
	if err != nil || cs.Files != n {
		t.Fatalf("summary %+v %v", cs, err)
	}
}

func names(dir string, from, to int) []string {
	out := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s/f%05d", dir, i))
	}
	return out
}

// TestRealHDFSWriteFileCompletesFiles writes small files back to back, as
// manifests and reports are written. Each write must return only once the
// namenode has completed the file (the datanode's block report races the
// first "complete" call), and each file must read back whole.
func TestRealHDFSWriteFileCompletesFiles(t *testing.T) {
	r := newRealHDFS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for i := 0; i < 40; i++ {
		file := fmt.Sprintf("%s/doc-%02d.json", r.dir, i)
		payload := []byte(strings.Repeat(fmt.Sprintf("{\"n\":%d}", i), 50+i))
		if err := r.fs.WriteFile(ctx, file, payload); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		got, err := r.fs.ReadFile(ctx, file, 0)
		if err != nil || string(got) != string(payload) {
			t.Fatalf("read back %d: %d bytes, %v", i, len(got), err)
		}
	}
}
