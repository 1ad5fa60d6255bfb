package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gohdfs "github.com/colinmarc/hdfs/v2"
	"github.com/colinmarc/hdfs/v2/hadoopconf"
)

// fakeRemote has the shape of the library's namenode error (which lives in
// an internal package), so mapping can be tested on every exception class.
type fakeRemote struct{ exception, message string }

func (f *fakeRemote) Method() string    { return "mkdirs" }
func (f *fakeRemote) Desc() string      { return "ERROR_APPLICATION" }
func (f *fakeRemote) Exception() string { return f.exception }
func (f *fakeRemote) Message() string   { return f.message }
func (f *fakeRemote) Error() string {
	return "mkdirs call failed with ERROR_APPLICATION (" + f.exception + ")"
}

var _ gohdfs.Error = (*fakeRemote)(nil)

func TestMapHDFSError(t *testing.T) {
	remote := func(ex string) error {
		// The library wraps remote errors in *os.PathError.
		return &os.PathError{Op: "mkdir", Path: "/x", Err: &fakeRemote{exception: ex, message: "first line of the message\n\tat org.apache.Foo"}}
	}
	tests := map[string]struct {
		err  error
		want []error
		not  []error
	}{
		"namespace quota": {err: remote("org.apache.hadoop.hdfs.protocol.NSQuotaExceededException"),
			want: []error{ErrNamespaceQuotaExceeded, ErrQuotaExceeded}, not: []error{ErrSpaceQuotaExceeded}},
		"space quota": {err: remote("org.apache.hadoop.hdfs.protocol.DSQuotaExceededException"),
			want: []error{ErrSpaceQuotaExceeded, ErrQuotaExceeded}, not: []error{ErrNamespaceQuotaExceeded}},
		"storage type quota": {err: remote("org.apache.hadoop.hdfs.protocol.QuotaByStorageTypeExceededException"),
			want: []error{ErrSpaceQuotaExceeded, ErrQuotaExceeded}},
		"generic quota": {err: remote("org.apache.hadoop.hdfs.protocol.QuotaExceededException"),
			want: []error{ErrQuotaExceeded}, not: []error{ErrNamespaceQuotaExceeded, ErrSpaceQuotaExceeded}},
		"unknown quota subclass": {err: remote("com.example.FancyQuotaExceededException"), want: []error{ErrQuotaExceeded}},
		"access control":         {err: remote("org.apache.hadoop.security.AccessControlException"), want: []error{ErrPermission, os.ErrPermission}},
		"file not found remote":  {err: remote("java.io.FileNotFoundException"), want: []error{ErrNotFound, os.ErrNotExist}},
		"safe mode":              {err: remote("org.apache.hadoop.hdfs.server.namenode.SafeModeException"), want: []error{ErrUnavailable}},
		"standby":                {err: remote("org.apache.hadoop.ipc.StandbyException"), want: []error{ErrUnavailable}},
		"parent not dir":         {err: remote("org.apache.hadoop.fs.ParentNotDirectoryException"), want: []error{ErrNotDir}},
		"unknown remote":         {err: remote("java.lang.IllegalStateException"), not: []error{ErrQuotaExceeded, ErrNotFound, ErrUnavailable}},
		// The library itself turns these exceptions into os errors.
		"lib not exist":   {err: &os.PathError{Op: "stat", Path: "/x", Err: os.ErrNotExist}, want: []error{ErrNotFound}},
		"lib permission":  {err: &os.PathError{Op: "stat", Path: "/x", Err: os.ErrPermission}, want: []error{ErrPermission}},
		"lib exist":       {err: &os.PathError{Op: "mkdir", Path: "/x", Err: os.ErrExist}, want: []error{ErrExist}},
		"lib not empty":   {err: &os.PathError{Op: "remove", Path: "/x", Err: syscall.ENOTEMPTY}, want: []error{ErrNotEmpty}, not: []error{ErrExist}},
		"conn refused":    {err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, want: []error{ErrUnavailable}},
		"no namenodes":    {err: errors.New("no available namenodes: dial tcp 127.0.0.1:1: connect: connection refused"), want: []error{ErrUnavailable}},
		"eof":             {err: io.ErrUnexpectedEOF, want: []error{ErrUnavailable}},
		"deadline on net": {err: &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, want: []error{ErrUnavailable}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := mapHDFSError("mkdir", "hdfs://ns1/x", tc.err)
			for _, w := range tc.want {
				if !errors.Is(got, w) {
					t.Errorf("%v: not errors.Is %v", got, w)
				}
			}
			for _, n := range tc.not {
				if errors.Is(got, n) {
					t.Errorf("%v: unexpectedly errors.Is %v", got, n)
				}
			}
			if !strings.Contains(got.Error(), "hdfs://ns1/x") {
				t.Errorf("%v: does not name the path", got)
			}
			var se *Error
			if !errors.As(got, &se) || se.Op != "mkdir" {
				t.Errorf("%v: not an *Error", got)
			}
		})
	}
	// The remote error stays reachable and its message's first line is shown.
	got := mapHDFSError("mkdir", "/x", remote("org.apache.hadoop.hdfs.protocol.NSQuotaExceededException"))
	var re gohdfs.Error
	if !errors.As(got, &re) || re.Exception() != "org.apache.hadoop.hdfs.protocol.NSQuotaExceededException" {
		t.Fatalf("remote error lost: %v", got)
	}
	if !strings.Contains(got.Error(), "first line of the message") || strings.Contains(got.Error(), "at org.apache.Foo") {
		t.Fatalf("message detail wrong: %v", got)
	}
}

func TestNamenodeAddresses(t *testing.T) {
	conf := hadoopconf.HadoopConf{
		"fs.defaultFS":                       "hdfs://ns1",
		"dfs.ha.namenodes.ns1":               "nn1, nn2",
		"dfs.namenode.rpc-address.ns1.nn1":   "h1:8020",
		"dfs.namenode.rpc-address.ns1.nn2":   "h2:8020",
		"dfs.namenode.rpc-address.single":    "s1:9000",
		"dfs.ha.namenodes.broken":            "nnx",
		"dfs.namenode.rpc-address.ns2.other": "ignored:1",
	}
	tests := map[string]struct {
		authority string
		want      string
		wantErr   string
	}{
		"host port":        {authority: "nn:9820", want: "[nn:9820]"},
		"ha nameservice":   {authority: "ns1", want: "[h1:8020 h2:8020]"},
		"single nn by key": {authority: "single", want: "[s1:9000]"},
		"default fs":       {authority: "", want: "[h1:8020 h2:8020]"},
		"bare host":        {authority: "namenode.example", want: "[namenode.example:8020]"},
		"broken ns":        {authority: "broken", wantErr: "dfs.namenode.rpc-address.broken.nnx is not set"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := namenodeAddresses(conf, tc.authority)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, %v; want error %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || fmt.Sprint(got) != tc.want {
				t.Fatalf("got %v, %v; want %s", got, err, tc.want)
			}
		})
	}
	if _, err := namenodeAddresses(hadoopconf.HadoopConf{}, ""); err == nil || !strings.Contains(err.Error(), "fs.defaultFS") {
		t.Fatalf("empty conf, empty authority: %v", err)
	}
}

func TestNewHDFSRejectsBadOptions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tests := map[string]struct {
		opts HDFSOptions
		want string
	}{
		"wrong scheme": {HDFSOptions{URI: "file:///x", HadoopConfDir: dir}, "want hdfs://"},
		"relative uri": {HDFSOptions{URI: "nn:8020/x", HadoopConfDir: dir}, "invalid path"},
		"user and kerberos": {HDFSOptions{URI: "hdfs://nn:8020", HadoopConfDir: dir, User: "flink",
			Kerberos: &KerberosOptions{Keytab: "/nonexistent"}}, "cannot impersonate"},
		"missing krb5.conf": {HDFSOptions{URI: "hdfs://nn:8020", HadoopConfDir: dir,
			Kerberos: &KerberosOptions{Krb5Conf: dir + "/missing.conf", Keytab: "/k", Principal: "a@B"}}, "krb5.conf"},
		"no default fs": {HDFSOptions{URI: "hdfs:///x", HadoopConfDir: dir}, "fs.defaultFS"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h, err := NewHDFS(ctx, tc.opts)
			if err == nil {
				h.Close()
				t.Fatal("NewHDFS succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestHDFSUnreachableIsUnavailable(t *testing.T) {
	// A port nothing listens on: bind, note the port, close.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = NewHDFS(ctx, HDFSOptions{URI: "hdfs://" + addr, HadoopConfDir: t.TempDir(), User: "u", DialTimeout: time.Second})
	if !errors.Is(err, ErrUnavailable) || !IsRetryable(err) {
		t.Fatalf("NewHDFS to closed port = %v; want ErrUnavailable", err)
	}
}

func TestHDFSStalledNamenodeTimesOut(t *testing.T) {
	// A server that accepts and never answers: the call must end by the
	// context deadline, not hang, and report the context error.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	// The startup check asks the namenode something, so it times out too.
	sctx, scancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer scancel()
	if _, err := NewHDFS(sctx, HDFSOptions{URI: "hdfs://" + ln.Addr().String(), HadoopConfDir: t.TempDir(), User: "u"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("NewHDFS against a stalled namenode = %v; want DeadlineExceeded", err)
	}
	h, err := NewHDFS(context.Background(), HDFSOptions{URI: "hdfs://" + ln.Addr().String(), HadoopConfDir: t.TempDir(), User: "u", RPCTimeout: 5 * time.Second, connectOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = h.Stat(ctx, "/x")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stat = %v; want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Stat took %v", d)
	}
	// Cancelling (rather than a deadline) interrupts a call in flight too.
	ctx2, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel2)
	start = time.Now()
	_, err = h.Stat(ctx2, "/x")
	if !errors.Is(err, context.Canceled) || time.Since(start) > 2*time.Second {
		t.Fatalf("Stat = %v after %v; want Canceled quickly", err, time.Since(start))
	}
	// Without a context deadline the RPC timeout applies.
	h.rpcTimeout = 300 * time.Millisecond
	_, err = h.Stat(context.Background(), "/x")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Stat past RPCTimeout = %v; want ErrUnavailable", err)
	}
}

func TestHDFSRunsCallsOnSeveralConnections(t *testing.T) {
	// A namenode that accepts and never answers holds every call in
	// flight: three connections must carry three calls at once, and no
	// more connections than that are opened however many calls wait.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	h, err := NewHDFS(context.Background(), HDFSOptions{URI: "hdfs://" + ln.Addr().String(), HadoopConfDir: t.TempDir(), User: "u", Connections: 3, connectOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = h.Stat(ctx, "/x")
		}()
	}
	for accepted.Load() < 3 && ctx.Err() == nil {
		runtime.Gosched()
	}
	cancel()
	wg.Wait()
	if n := accepted.Load(); n != 3 {
		t.Fatalf("%d connections accepted; want 3: the startup one and two more for calls in flight at once", n)
	}
}

func TestHDFSConnectionsOutOfRangeAreRefused(t *testing.T) {
	for _, n := range []int{-1, MaxConnections + 1} {
		_, err := NewHDFS(context.Background(), HDFSOptions{URI: "hdfs://127.0.0.1:1", HadoopConfDir: t.TempDir(), User: "u", Connections: n, connectOnly: true})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("Connections %d", n)) {
			t.Errorf("Connections %d: %v; want an error naming it", n, err)
		}
	}
}
