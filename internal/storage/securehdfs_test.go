//go:build realpeers

package storage_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/storage"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// Tests against the secure sandbox: a real KDC and a kerberized HDFS whose
// nameservice ns1 has two NameNodes (sandbox.RequireSecureStorage).

type secureHDFS struct {
	s   *sandbox.SecureStorage
	fs  *storage.HDFS
	dir string // this test's directory under team-a's root
}

func secureOptions(s *sandbox.SecureStorage, as sandbox.Principal, guard *storage.Guard) storage.HDFSOptions {
	return storage.HDFSOptions{
		URI:           s.URI,
		HadoopConfDir: s.HadoopConfDir,
		Kerberos:      &storage.KerberosOptions{Krb5Conf: s.Krb5Conf, Principal: as.Principal, Keytab: as.Keytab},
		Guard:         guard,
	}
}

func newSecureHDFS(t *testing.T) *secureHDFS {
	t.Helper()
	s := sandbox.RequireSecureStorage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := s.RestartStopped(ctx); err != nil {
		t.Fatalf("two NameNodes are needed: %v", err)
	}
	root := s.Tenants[0].Root
	guard, err := storage.NewGuard(root)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := storage.NewHDFS(ctx, secureOptions(s, s.Principals.Worker, guard))
	if err != nil {
		t.Fatalf("connect to %s as %s by keytab: %v", s.URI, s.Principals.Worker.Principal, err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	r := &secureHDFS{s: s, fs: fs, dir: path.Join(root, "test-"+t.Name()+"-"+hex.EncodeToString(b))}
	if err := fs.Mkdir(ctx, r.dir); err != nil {
		t.Fatalf("mkdir %s: %v", r.dir, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := fs.RemoveAll(ctx, r.dir); err != nil {
			t.Errorf("cleanup %s: %v", r.dir, err)
		}
		fs.Close()
	})
	return r
}

func TestSecureHDFSKeytabAuthentication(t *testing.T) {
	r := newSecureHDFS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := r.dir + "/a"
	if err := r.fs.WriteFile(ctx, p, []byte("written by keytab")); err != nil {
		t.Fatalf("write %s: %v", p, err)
	}
	data, err := r.fs.ReadFile(ctx, p, 0)
	if err != nil || string(data) != "written by keytab" {
		t.Fatalf("read %s = %q, %v", p, data, err)
	}
	info, err := r.fs.Stat(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	// The namenode saw the principal's short name: Kerberos, not a claimed user.
	if info.Owner != "flinkmaint" {
		t.Fatalf("owner of %s = %q; want flinkmaint (from %s)", p, info.Owner, r.s.Principals.Worker.Principal)
	}
	// Java's client through the same HADOOP_CONF_DIR sees the same file.
	out, err := r.s.HadoopShell(ctx, r.s.Principals.Flink, "-cat", "hdfs://ns1"+p)
	if err != nil {
		t.Fatalf("hdfs dfs -cat as flink: %v", err)
	}
	if out != "written by keytab" {
		t.Fatalf("hdfs dfs -cat = %q", out)
	}
}

func TestSecureHDFSRefusals(t *testing.T) {
	s := sandbox.RequireSecureStorage(t)
	guard, err := storage.NewGuard(s.Tenants[0].Root)
	if err != nil {
		t.Fatal(err)
	}
	realm := s.Realm
	cases := map[string]struct {
		opts storage.HDFSOptions
		want []string // in the message
	}{
		"no ticket (empty ticket cache)": {
			opts: storage.HDFSOptions{URI: s.URI, HadoopConfDir: s.HadoopConfDir, Guard: guard,
				Kerberos: &storage.KerberosOptions{Krb5Conf: s.Krb5Conf, CCache: filepath.Join(t.TempDir(), "krb5cc_none")}},
			want: []string{"no ticket", "krb5cc_none"},
		},
		"keytab without the principal": {
			opts: secureOptions(s, sandbox.Principal{Principal: s.Principals.Worker.Principal, Keytab: s.Principals.Flink.Keytab}, guard),
			want: []string{"flinkmaint@" + realm, "realm " + realm, "flink.keytab"},
		},
		"principal the KDC does not know": {
			opts: secureOptions(s, sandbox.Principal{Principal: "ghost@" + realm, Keytab: s.Principals.Worker.Keytab}, guard),
			want: []string{"ghost@" + realm, "realm " + realm},
		},
		"denied user": {
			opts: secureOptions(s, s.Principals.Denied, guard),
			want: []string{s.Principals.Denied.Principal, "refuses this user"},
		},
		"simple authentication, no ticket": {
			opts: storage.HDFSOptions{URI: s.URI, Addresses: s.NameNodes, HadoopConfDir: t.TempDir(), User: "flinkmaint", Guard: guard},
			want: []string{"flinkmaint (simple authentication", "Kerberos required"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Now()
			fs, err := storage.NewHDFS(ctx, tc.opts)
			if err == nil {
				fs.Close()
				t.Fatal("NewHDFS succeeded; want an authentication error")
			}
			if !errors.Is(err, storage.ErrAuthentication) || storage.IsRetryable(err) {
				t.Fatalf("err = %v; want ErrAuthentication, not retryable", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v; want it to mention %q", err, w)
				}
			}
			// Refused at once, not after retrying until a timeout.
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("refusal took %v", d)
			}
		})
	}
	t.Run("data transfer protection the client cannot read", func(t *testing.T) {
		conf := t.TempDir()
		for _, f := range []string{"core-site.xml", "hdfs-site.xml"} {
			data, err := os.ReadFile(filepath.Join(s.HadoopConfDir, f))
			if err != nil {
				t.Fatal(err)
			}
			data = []byte(strings.ReplaceAll(string(data), "<name>dfs.data.transfer.protection</name><value>"+s.DataTransferProtection+"</value>",
				"<name>dfs.data.transfer.protection</name><value>privacy</value>"))
			if err := os.WriteFile(filepath.Join(conf, f), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		opts := secureOptions(s, s.Principals.Worker, guard)
		opts.HadoopConfDir = conf
		_, err := storage.NewHDFS(context.Background(), opts)
		if err == nil || !strings.Contains(err.Error(), `dfs.data.transfer.protection="privacy"`) || !strings.Contains(err.Error(), "valid: authentication") {
			t.Fatalf("NewHDFS with privacy data transfer = %v; want a refusal naming the setting and the valid values", err)
		}
	})
}

func TestSecureHDFSQuotaMatchesShell(t *testing.T) {
	r := newSecureHDFS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := r.s.DFSAdmin(ctx, r.s.Principals.Service, "-setQuota", "50", r.dir); err != nil {
		t.Fatalf("dfsadmin -setQuota: %v", err)
	}
	for i := range 7 {
		if err := r.fs.MkdirAll(ctx, fmt.Sprintf("%s/d%d", r.dir, i%3)); err != nil {
			t.Fatal(err)
		}
		if err := r.fs.WriteFile(ctx, fmt.Sprintf("%s/d%d/f%d", r.dir, i%3, i), []byte(strings.Repeat("x", 100*i))); err != nil {
			t.Fatal(err)
		}
	}
	got, err := r.fs.ContentSummary(ctx, r.dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.s.HadoopShell(ctx, r.s.Principals.Worker, "-count", "-q", r.dir)
	if err != nil {
		t.Fatalf("hdfs dfs -count -q: %v", err)
	}
	// QUOTA REM_QUOTA SPACE_QUOTA REM_SPACE_QUOTA DIR_COUNT FILE_COUNT CONTENT_SIZE PATHNAME
	f := strings.Fields(out)
	if len(f) != 8 {
		t.Fatalf("-count -q printed %q; want 8 columns", out)
	}
	num := func(s string) int64 {
		if s == "none" || s == "inf" {
			return -1
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("column %q of %q: %v", s, out, err)
		}
		return n
	}
	want := storage.ContentSummary{NamespaceQuota: num(f[0]), SpaceQuota: num(f[2]), Dirs: num(f[4]), Files: num(f[5]), Length: num(f[6])}
	if got.NamespaceQuota != want.NamespaceQuota || got.SpaceQuota != want.SpaceQuota || got.Dirs != want.Dirs || got.Files != want.Files || got.Length != want.Length {
		t.Fatalf("ContentSummary = %+v; hdfs dfs -count -q = %q", got, out)
	}
	if rem := num(f[1]); rem != got.NamespaceQuota-got.Dirs-got.Files {
		t.Fatalf("REM_QUOTA %d != quota %d - dirs %d - files %d", rem, got.NamespaceQuota, got.Dirs, got.Files)
	}
	t.Logf("ContentSummary %+v == hdfs dfs -count -q %q", got, strings.TrimSpace(out))
}

// TestSecureHDFSFailoverDuringWork fails the NameNodes over while one
// client writes, lists and reads: first administratively (the active one
// becomes standby: StandbyException), then by stopping the active one
// (connection refused, a connection cut mid-call). Every call succeeds and
// every file is there exactly once with its content. The writer keeps
// writing through each failover and writes a third of its files after
// each; the stop lands between two pages of a listing.
func TestSecureHDFSFailoverDuringWork(t *testing.T) {
	sandbox.RequireSecureStorage(t).HoldFailovers(t)
	r := newSecureHDFS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	// Each phase writes at least step files; the phase ends once the
	// failover begun at its start is done.
	const step = 40
	var (
		written    atomic.Int64
		failedOver = make(chan struct{}, 2)
		reached    = make(chan int64, 2)
		wg         sync.WaitGroup
		workEr     error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(reached)
		write := func() bool {
			i := written.Load()
			p := fmt.Sprintf("%s/f%04d", r.dir, i)
			if err := r.fs.WriteFile(ctx, p, []byte(p)); err != nil {
				workEr = fmt.Errorf("write %d: %w", i, err)
				return false
			}
			if _, err := r.fs.Stat(ctx, p); err != nil {
				workEr = fmt.Errorf("stat %d: %w", i, err)
				return false
			}
			written.Add(1)
			return true
		}
		for phase := range 3 {
			for n := 0; n < step; n++ {
				if !write() {
					return
				}
			}
			if phase == 2 {
				return
			}
			// Ask for a failover, and write on until it is done.
			reached <- written.Load()
			for done := false; !done; {
				select {
				case <-failedOver:
					done = true
				default:
					if !write() {
						return
					}
				}
			}
		}
	}()
	var failovers []string
	for at := range reached {
		st, err := r.s.Failover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := st.Active()
		failovers = append(failovers, fmt.Sprintf("standby failover at file %d, done at file %d, now %s active", at, written.Load(), a.ID))
		failedOver <- struct{}{}
	}
	wg.Wait()
	if workEr != nil {
		t.Fatalf("during failover: %v (failovers: %v)", workEr, failovers)
	}
	if len(failovers) != 2 {
		t.Fatalf("failovers %v; want 2 while the writer writes", failovers)
	}
	t.Log(strings.Join(failovers, "; "))
	files := int(written.Load())

	// Now the active NameNode dies while a client lists and reads: after
	// the first page, before the next.
	readAll := func(between func()) map[string]string {
		seen := map[string]string{}
		pages := 0
		err := r.fs.List(ctx, r.dir, 7, func(batch []storage.FileInfo) error {
			for _, fi := range batch {
				if _, dup := seen[fi.Name]; dup {
					return fmt.Errorf("%s listed twice", fi.Name)
				}
				data, err := r.fs.ReadFile(ctx, r.dir+"/"+fi.Name, 0)
				if err != nil {
					return err
				}
				seen[fi.Name] = string(data)
			}
			if pages++; pages == 1 && between != nil {
				between()
			}
			return nil
		})
		if err != nil {
			t.Fatalf("list and read: %v", err)
		}
		return seen
	}
	var stopped sandbox.HAState
	seen := readAll(func() {
		st, err := r.s.FailoverStop(ctx)
		if err != nil {
			t.Fatal(err)
		}
		stopped = st
	})
	seen2 := readAll(nil) // wholly after the stop
	for _, s := range []map[string]string{seen, seen2} {
		if len(s) != files {
			t.Fatalf("listed %d files; want %d", len(s), files)
		}
		for i := range files {
			name := fmt.Sprintf("f%04d", i)
			if s[name] != r.dir+"/"+name {
				t.Fatalf("%s holds %q; want its own path", name, s[name])
			}
		}
	}
	if _, err := r.s.RestartStopped(ctx); err != nil {
		t.Fatalf("restart the NameNode stopped at %+v: %v", stopped, err)
	}
}

// TestSecureHDFSWriteAcrossLostCompletion fails the NameNodes over right
// after a file's first completion was answered "replication in progress".
// The old active NameNode had committed the file's last block in memory
// only, so the new one holds it under construction, and the library's
// retried completion does not name the block: it would never complete.
// The write succeeds anyway (the file is written again) and every file
// holds its data.
func TestSecureHDFSWriteAcrossLostCompletion(t *testing.T) {
	sandbox.RequireSecureStorage(t).HoldFailovers(t)
	r := newSecureHDFS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var fired atomic.Int32
	var failedOver string
	storage.SetAfterReplicating(r.fs, func() {
		if fired.Add(1) != 1 {
			return
		}
		st, err := r.s.Failover(ctx)
		if err != nil {
			t.Errorf("failover: %v", err)
			return
		}
		a, _ := st.Active()
		failedOver = a.ID
	})
	written := 0
	var took time.Duration
	for written < 300 && fired.Load() == 0 {
		p := fmt.Sprintf("%s/f%03d", r.dir, written)
		start := time.Now()
		if err := r.fs.WriteFile(ctx, p, []byte(p)); err != nil {
			t.Fatalf("write %s (failover after replication in progress: %v): %v", p, fired.Load() > 0, err)
		}
		took = time.Since(start)
		written++
	}
	if fired.Load() == 0 {
		t.Fatalf("none of %d writes was answered replication in progress; nothing was tested", written)
	}
	t.Logf("write %d was answered replication in progress; failed over to %s; the write took %v", written, failedOver, took.Round(time.Millisecond))
	n := 0
	err := r.fs.List(ctx, r.dir, 0, func(batch []storage.FileInfo) error {
		for _, fi := range batch {
			data, err := r.fs.ReadFile(ctx, r.dir+"/"+fi.Name, 0)
			if err != nil {
				return err
			}
			if string(data) != r.dir+"/"+fi.Name {
				return fmt.Errorf("%s holds %q", fi.Name, data)
			}
			n++
		}
		return nil
	})
	if err != nil || n != written {
		t.Fatalf("read back %d of %d files: %v", n, written, err)
	}
}

// TestSecureHDFSOutlivesTicket keeps one client working for longer than the
// KDC's ticket lifetime, reconnecting (a failover) after the first tickets
// expired: the keytab login renews and logs in again by itself.
func TestSecureHDFSOutlivesTicket(t *testing.T) {
	sandbox.RequireSecureStorage(t).HoldFailovers(t)
	r := newSecureHDFS(t)
	lifetime := time.Duration(r.s.TicketLifetimeSeconds) * time.Second
	if lifetime <= 0 || lifetime > 5*time.Minute {
		t.Fatalf("ticket lifetime %v: the secure sandbox must run with short tickets (FLINKMAINT_SECURE_TICKET_LIFETIME)", lifetime)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lifetime*2+3*time.Minute)
	defer cancel()
	start := time.Now()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	ops, failovers := 0, 0
	for time.Since(start) < lifetime+lifetime/2 {
		p := fmt.Sprintf("%s/t%04d", r.dir, ops)
		if err := r.fs.WriteFile(ctx, p, []byte("x")); err != nil {
			t.Fatalf("after %v (%d ops, %d failovers): write: %v", time.Since(start).Round(time.Second), ops, failovers, err)
		}
		if _, err := r.fs.ContentSummary(ctx, r.dir); err != nil {
			t.Fatalf("after %v: content summary: %v", time.Since(start).Round(time.Second), err)
		}
		ops++
		// Every lifetime/3 a failover: the client connects anew, needing a
		// valid service ticket (past the first lifetime, a renewed one).
		if time.Since(start) > time.Duration(failovers+1)*lifetime/3 {
			if _, err := r.s.Failover(ctx); err != nil {
				t.Fatal(err)
			}
			failovers++
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	// A brand-new connection, well past the first tickets' end.
	st, err := r.s.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.fs.Stat(ctx, r.dir); err != nil {
		t.Fatalf("stat after %v: %v", time.Since(start), err)
	}
	a, _ := st.Active()
	t.Logf("%d write+count rounds and %d failovers over %v with %v tickets; %s active at the end", ops, failovers+1, time.Since(start).Round(time.Second), lifetime, a.ID)
}
