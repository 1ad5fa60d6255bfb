package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gohdfs "github.com/colinmarc/hdfs/v2"
)

// HDFS is the FileSystem over one HDFS cluster (one namenode or one HA
// nameservice).
//
// A namenode connection of colinmarc/hdfs handles one RPC at a time (the
// Java client sends many on one), so an HDFS value keeps a small pool of
// connections (HDFSOptions.Connections) and runs a call on each at once:
// create one per worker and share it between activities and goroutines.
//
// The library takes no context. Every call runs under a deadline (the
// context's, capped by RPCTimeout) on the namenode socket and on datanode
// streams, and a cancelled context interrupts the socket at once. A call
// that timed out or was interrupted leaves the RPC stream in an unknown
// state, so the client is closed and the next call reconnects.
type HDFS struct {
	base        URI
	guard       *Guard
	clientOpts  gohdfs.ClientOptions
	dialTimeout time.Duration
	rpcTimeout  time.Duration
	batch       int

	conns []*nnConn // every connection, for Close
	rpcs  atomic.Uint64
	// who names the Kerberos principal (user@REALM) or the simple user,
	// for errors about who the cluster refused.
	who string
	// ha is set when there are several namenodes to fail over between.
	ha bool
	// afterReplicating, if set, runs when a file's first completion is
	// answered "replication in progress" (tests).
	afterReplicating func()

	mu     sync.Mutex // guards the fields below and those of every nnConn
	closed bool
	// free are the connections no call is using, the most recently used
	// last: a caller alone keeps reusing one connection and spare ones
	// stay unopened. A listing goes on on the connection it was opened on
	// (the library cannot resume it elsewhere without reading it again
	// from the start), so other calls take a connection no listing holds
	// while there is one.
	free []*nnConn
	// released is closed, and replaced, whenever a call gives its
	// connection back.
	released chan struct{}
	// preferred is the namenode that answered last; a new connection
	// tries it first, so that after a failover every reconnect does not
	// ask the standby first.
	preferred string
}

var _ FileSystem = (*HDFS)(nil)

// nnConn is one namenode connection of the pool: a library client, made on
// first use and again after the connection broke, and its socket.
type nnConn struct {
	client  *gohdfs.Client
	conn    *deadlineConn
	dialCtx context.Context // of the call that is connecting
	// listings are the listings in progress on this connection.
	listings int
}

// hdfsPlan is what NewHDFS decides from its options and local files
// alone, before it contacts a KDC or a namenode.
type hdfsPlan struct {
	base     URI
	addrs    []string
	copts    gohdfs.ClientOptions
	kerberos *kerberosCreds
}

// CheckHDFS runs every check NewHDFS makes before it contacts a KDC or a
// namenode: the URI, the Hadoop configuration and the namenodes it names,
// the data transfer protection, the Kerberos files and the namenode's
// principal, the HDFS user. It never dials.
func CheckHDFS(opts HDFSOptions) error {
	_, err := planHDFS(opts)
	return err
}

func planHDFS(opts HDFSOptions) (hdfsPlan, error) {
	var p hdfsPlan
	base := URI{Scheme: "hdfs"}
	if opts.URI != "" {
		u, err := ParseURI(opts.URI)
		if err != nil {
			return p, fmt.Errorf("storage: HDFS URI: %w", err)
		}
		if u.Scheme != "hdfs" {
			return p, newError("connect", opts.URI, ErrWrongFileSystem, fmt.Errorf("scheme %q: want hdfs://", u.Scheme))
		}
		base = u.Base()
	}
	conf, err := loadHadoopConf(opts.HadoopConfDir)
	if err != nil {
		return p, fmt.Errorf("storage: %w", err)
	}
	if base.Authority == "" && len(opts.Addresses) == 0 {
		def, _ := ParseURI(conf["fs.defaultFS"])
		base.Authority = def.Authority
	}
	addrs := opts.Addresses
	if len(addrs) == 0 {
		addrs, err = namenodeAddresses(conf, base.Authority)
		if err != nil {
			return p, fmt.Errorf("storage: %w", err)
		}
	}
	if err := checkDataTransferProtection(conf); err != nil {
		return p, newError("connect", base.String(), ErrInvalidPath, err)
	}
	copts := gohdfs.ClientOptionsFromConf(conf)
	copts.Addresses = addrs
	kerberosByConf := copts.KerberosClient != nil
	copts.KerberosClient = nil
	switch {
	case opts.Kerberos != nil:
		if opts.User != "" {
			return p, errors.New("storage: HDFS User and Kerberos together: the client library cannot impersonate (proxy user); with Kerberos the principal is the user")
		}
		creds, errs := kerberosSetup(opts.Kerberos)
		if len(errs) > 0 {
			var se *Error
			if errors.As(errs[0], &se) {
				se.Path = base.String()
				return p, se
			}
			return p, fmt.Errorf("storage: %w", errs[0].Err)
		}
		p.kerberos = &creds
		if opts.Kerberos.ServicePrincipal != "" {
			copts.KerberosServicePrincipleName = opts.Kerberos.ServicePrincipal
		}
		if copts.KerberosServicePrincipleName == "" {
			return p, errors.New("storage: Kerberos needs the namenode principal: set the Kerberos servicePrincipal (such as nn/_HOST) or dfs.namenode.kerberos.principal in the Hadoop configuration")
		}
	case kerberosByConf:
		return p, errors.New("storage: hadoop.security.authentication is kerberos but no Kerberos options (keytab or ticket cache) were given")
	default:
		copts.User, err = hdfsUser(opts.User)
		if err != nil {
			return p, fmt.Errorf("storage: %w", err)
		}
	}
	if n := opts.Connections; n < 0 || n > MaxConnections {
		return p, fmt.Errorf("storage: HDFS Connections %d: want 1 to %d (0 means %d)", n, MaxConnections, DefaultConnections)
	}
	p.base, p.addrs, p.copts = base, addrs, copts
	return p, nil
}

// NewHDFS validates opts and connects to the namenode.
func NewHDFS(ctx context.Context, opts HDFSOptions) (*HDFS, error) {
	p, err := planHDFS(opts)
	if err != nil {
		return nil, err
	}
	base, addrs, copts := p.base, p.addrs, p.copts
	who := copts.User + " (simple authentication, no Kerberos)"
	if p.kerberos != nil {
		cl, err := kerberosLogin(*p.kerberos, opts.Kerberos.Keytab)
		if err != nil {
			var se *Error
			if errors.As(err, &se) {
				se.Path = base.String()
				return nil, se
			}
			return nil, fmt.Errorf("storage: %w", err)
		}
		copts.KerberosClient = cl
		who = cl.Credentials.UserName() + "@" + cl.Credentials.Realm()
	}
	h := &HDFS{
		base:        base,
		guard:       opts.Guard,
		dialTimeout: opts.DialTimeout,
		rpcTimeout:  opts.RPCTimeout,
		batch:       opts.ListBatchSize,
		who:         who,
		ha:          len(addrs) > 1,
	}
	if h.dialTimeout <= 0 {
		h.dialTimeout = defaultDialTimeout
	}
	if h.rpcTimeout <= 0 {
		h.rpcTimeout = defaultRPCTimeout
	}
	if h.batch <= 0 {
		h.batch = defaultListBatch
	}
	n := opts.Connections
	if n == 0 {
		n = DefaultConnections
	}
	for range n {
		h.conns = append(h.conns, &nnConn{})
	}
	h.free = slices.Clone(h.conns)
	h.released = make(chan struct{})
	copts.DatanodeDialFunc = (&net.Dialer{Timeout: h.dialTimeout}).DialContext
	h.clientOpts = copts
	// Connect and ask the namenode something now, so that bad addresses,
	// credentials or a user the cluster refuses fail at startup.
	err = h.do(ctx, "connect", base.String(), func(c *gohdfs.Client, _ time.Time) error {
		if opts.connectOnly {
			return nil
		}
		_, err := c.Stat("/")
		return err
	})
	if err != nil {
		_ = h.Close()
		return nil, h.connectError(base.String(), err)
	}
	return h, nil
}

// URI returns hdfs://<authority>.
func (h *HDFS) URI() URI { return h.base }

type namenodeCallsKey struct{}

// CountNamenodeCalls returns a context under which every HDFS call adds
// the namenode requests it sends to n: what one task costs the namenode
// while other tasks share the connections (a lease renewal the library
// sends meanwhile on the same connection counts too).
func CountNamenodeCalls(ctx context.Context, n *atomic.Uint64) context.Context {
	return context.WithValue(ctx, namenodeCallsKey{}, n)
}

// RPCs returns the namenode requests sent so far (connection preambles
// excluded, the library's once-a-second lease renewals included).
func (h *HDFS) RPCs() uint64 { return h.rpcs.Load() }

// Close closes the namenode connections; later calls fail.
func (h *HDFS) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	var errs []error
	for _, c := range h.conns {
		errs = append(errs, c.resetLocked())
	}
	return errors.Join(errs...)
}

// resetLocked closes the connection; the next call on it reconnects.
func (c *nnConn) resetLocked() error {
	if c.client == nil {
		return nil
	}
	err := c.client.Close()
	c.client, c.conn = nil, nil
	return err
}

func (h *HDFS) dialNamenode(nc *nnConn, network, addr string) (net.Conn, error) {
	h.mu.Lock()
	ctx := nc.dialCtx
	h.mu.Unlock()
	if ctx == nil {
		ctx = context.Background()
	}
	conn, err := (&net.Dialer{Timeout: h.dialTimeout}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	dc := &deadlineConn{Conn: conn, idle: h.rpcTimeout, rpcs: &h.rpcs, addr: addr, kerberos: h.clientOpts.KerberosClient != nil}
	h.mu.Lock()
	nc.conn = dc
	h.mu.Unlock()
	return dc, nil
}

// do runs one library call under the call discipline described on HDFS.
// fn receives the client and the deadline to put on datanode streams.
//
// With several namenodes, a call that failed before any namenode acted on
// it (a standby answered, none was reachable) is tried again, on a new
// connection when the old one broke, until it succeeds or the call's
// deadline passes: the library moves to the next namenode only within one
// request and gives up when both are briefly standby during a failover.
// Read-only calls are also tried again after a connection broke mid-call;
// a write whose fate is unknown is not, and returns ErrUnavailable.
func (h *HDFS) do(ctx context.Context, op, p string, fn func(c *gohdfs.Client, deadline time.Time) error) error {
	return h.doOn(ctx, nil, op, p, fn)
}

// doOn is do on the connection *listing names, for the batches of one
// listing: the first call sets it (and counts the listing on it), later
// ones wait for it. The caller ends the listing with endListing.
func (h *HDFS) doOn(ctx context.Context, listing **nnConn, op, p string, fn func(c *gohdfs.Client, deadline time.Time) error) error {
	var want *nnConn
	if listing != nil {
		want = *listing
	}
	nc, err := h.acquire(ctx, want)
	if err != nil {
		return newError(op, p, nil, err)
	}
	if listing != nil && *listing == nil {
		h.mu.Lock()
		nc.listings++
		h.mu.Unlock()
		*listing = nc
	}
	defer h.release(nc)
	if err := ctx.Err(); err != nil {
		return newError(op, p, nil, err)
	}
	deadline := time.Now().Add(h.rpcTimeout)
	ctxDeadline, hasCtxDeadline := ctx.Deadline()
	if hasCtxDeadline && ctxDeadline.Before(deadline) {
		deadline = ctxDeadline
	}
	wait := 50 * time.Millisecond
	for {
		err := h.once(ctx, nc, op, p, deadline, fn)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return newError(op, p, nil, ctx.Err())
		}
		// The socket deadline may fire a moment before the context's timer.
		if hasCtxDeadline && !time.Now().Before(ctxDeadline) {
			return newError(op, p, nil, context.DeadlineExceeded)
		}
		if !h.ha || !(notExecuted(err) || (readOnly[op] && connectionLost(err))) || !time.Now().Add(wait).Before(deadline) {
			if authFailure(err) {
				return newError(op, p, ErrAuthentication, fmt.Errorf("the namenode did not accept %s: %w", h.who, err))
			}
			return mapHDFSError(op, p, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return newError(op, p, nil, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// acquire takes connection want once it is free or, with want nil, the
// most recently used free one no listing holds, else any free one.
func (h *HDFS) acquire(ctx context.Context, want *nnConn) (*nnConn, error) {
	for {
		h.mu.Lock()
		pick := -1
		for i := len(h.free) - 1; i >= 0; i-- {
			c := h.free[i]
			if c == want || want == nil && (c.listings == 0 || pick < 0) {
				pick = i
				if want != nil || c.listings == 0 {
					break
				}
			}
		}
		if pick >= 0 {
			nc := h.free[pick]
			h.free = slices.Delete(h.free, pick, pick+1)
			h.mu.Unlock()
			return nc, nil
		}
		released := h.released
		h.mu.Unlock()
		select {
		case <-released:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// release gives nc back and wakes the calls waiting for a connection.
func (h *HDFS) release(nc *nnConn) {
	h.mu.Lock()
	h.free = append(h.free, nc)
	close(h.released)
	h.released = make(chan struct{})
	h.mu.Unlock()
}

// endListing ends a listing doOn counted on nc (nil: none was).
func (h *HDFS) endListing(nc *nnConn) {
	if nc == nil {
		return
	}
	h.mu.Lock()
	nc.listings--
	h.mu.Unlock()
}

// connectionLost reports a connection that broke mid-call (the namenode
// went away), as opposed to one the namenode refused to serve.
func connectionLost(err error) bool {
	return brokenConnection(err) && !authFailure(err) && !strings.Contains(err.Error(), "unexpected sequence number")
}

// readOnly are the operations that change nothing, so running one again
// after a connection broke mid-call is harmless.
var readOnly = map[string]bool{"connect": true, "stat": true, "list": true, "read": true, "content-summary": true}

// once is one attempt of do on connection nc: connect if needed, run fn,
// and drop the connection if fn left it in an unknown state. It returns
// fn's error as is.
func (h *HDFS) once(ctx context.Context, nc *nnConn, op, p string, deadline time.Time, fn func(c *gohdfs.Client, deadline time.Time) error) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return newError(op, p, ErrUnavailable, errors.New("HDFS client closed"))
	}
	client := nc.client
	if client == nil {
		nc.dialCtx = ctx
		opts := h.clientOpts
		opts.Addresses = preferFirst(opts.Addresses, h.preferred)
		opts.NamenodeDialFunc = func(_ context.Context, network, addr string) (net.Conn, error) {
			return h.dialNamenode(nc, network, addr)
		}
		h.mu.Unlock()
		// NewClient dials and writes the preamble (and, with Kerberos,
		// authenticates); the dial is bounded by DialTimeout and ctx.
		c, err := gohdfs.NewClient(opts)
		h.mu.Lock()
		nc.dialCtx = nil
		if err != nil {
			h.mu.Unlock()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &connectError{addrs: opts.Addresses, err: err}
		}
		if h.closed {
			// Closed while connecting: Close did not see this client.
			h.mu.Unlock()
			_ = c.Close()
			return newError(op, p, ErrUnavailable, errors.New("HDFS client closed"))
		}
		nc.client, client = c, c
	}
	conn := nc.conn
	h.mu.Unlock()

	var sent uint64
	if conn != nil {
		conn.begin(deadline)
		sent = conn.sent.Load()
	}
	interrupting := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(interrupting)
		h.mu.Lock()
		c := nc.conn
		h.mu.Unlock()
		if c != nil {
			c.interrupt()
		}
	})
	err := fn(client, deadline)
	if !stop() {
		// The context ended meanwhile: let the interrupt land before the
		// connection is looked at and handed on, or it would break the
		// next call on it.
		<-interrupting
	}
	if n, ok := ctx.Value(namenodeCallsKey{}).(*atomic.Uint64); ok && conn != nil {
		n.Add(conn.sent.Load() - sent)
	}
	interrupted := false
	h.mu.Lock()
	if nc.conn != nil {
		interrupted = nc.conn.end()
		if err == nil {
			h.preferred = nc.conn.addr
		}
	}
	if interrupted || (err != nil && brokenConnection(err)) {
		_ = nc.resetLocked()
	}
	h.mu.Unlock()
	return err
}

// connectError is a failed connection to every namenode: nothing was sent.
type connectError struct {
	addrs []string
	err   error
}

func (e *connectError) Error() string {
	return "connect to namenode " + strings.Join(e.addrs, ",") + ": " + e.err.Error()
}

func (e *connectError) Unwrap() error { return e.err }

// preferFirst returns addrs with preferred moved to the front.
func preferFirst(addrs []string, preferred string) []string {
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		if a == preferred {
			out = append(out, a)
		}
	}
	for _, a := range addrs {
		if a != preferred {
			out = append(out, a)
		}
	}
	return out
}

// notExecuted reports whether err shows that no namenode acted on the
// request: a standby or a starting namenode refused it, or no namenode
// could be reached or authenticated to before it was sent.
func notExecuted(err error) bool {
	var ae *afterEffect
	if errors.As(err, &ae) {
		return false
	}
	var remote gohdfs.Error
	if errors.As(err, &remote) {
		switch remote.Exception() {
		case "org.apache.hadoop.ipc.StandbyException", "org.apache.hadoop.ipc.RetriableException":
			return true
		}
		return false
	}
	if authFailure(err) {
		return false
	}
	var ce *connectError
	if errors.As(err, &ce) {
		return true
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return true
	}
	// The library names the last error of each namenode it gave up on.
	return strings.Contains(err.Error(), "no available namenodes")
}

// authFailure recognises a namenode that did not accept our credentials.
func authFailure(err error) bool {
	msg := err.Error()
	if strings.Contains(msg, "SASL handshake") && !unavailableText(msg) {
		return true
	}
	return strings.Contains(msg, "authentication is not enabled") ||
		strings.Contains(msg, "kerberos authentication not supported by namenode") ||
		strings.Contains(msg, "AccessControlException") && strings.Contains(msg, "SASL")
}

func unavailableText(msg string) bool {
	for _, s := range []string{"EOF", "connection reset", "connection refused", "broken pipe", "i/o timeout", "StandbyException"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// connectError explains a failure of the startup check: authentication
// failures, and a namenode that hangs up on an authenticated user (a
// service-level ACL or proxy-user rule refused it: the library then reads
// the refusal as a reply out of sequence), are ErrAuthentication naming the
// principal and realm; the rest keep their kind.
func (h *HDFS) connectError(p string, err error) error {
	var se *Error
	if !errors.As(err, &se) || se.Kind == ErrAuthentication {
		return err
	}
	cause := se.Cause
	switch {
	case cause != nil && authFailure(cause):
		return newError("connect", p, ErrAuthentication, fmt.Errorf("the namenode did not accept %s: %w", h.who, cause))
	case cause != nil && strings.Contains(cause.Error(), "unexpected sequence number"):
		return newError("connect", p, ErrAuthentication, fmt.Errorf("the namenode hung up on %s before answering its first request: the cluster refuses this user or this authentication method (Kerberos required, service-level ACL security.client.protocol.acl, or a proxy-user rule): %w", h.who, cause))
	}
	return err
}

// brokenConnection reports whether err may have left the RPC stream
// half-read: anything that is not a clean answer from the namenode.
func brokenConnection(err error) bool {
	var remote gohdfs.Error
	if errors.As(err, &remote) {
		return false
	}
	var se *Error
	if errors.As(err, &se) {
		return false
	}
	for _, clean := range []error{os.ErrNotExist, os.ErrExist, os.ErrPermission, os.ErrInvalid, syscall.ENOTEMPTY} {
		if errors.Is(err, clean) && !isNetError(err) {
			return false
		}
	}
	return true
}

func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF)
}

func (h *HDFS) path(op, p string) (URI, error) { return qualifyPath(op, h.base, p) }

func hdfsInfo(u URI, fi os.FileInfo) FileInfo {
	info := infoOf(u, fi)
	if hf, ok := fi.(*gohdfs.FileInfo); ok {
		info.Owner, info.Group = hf.Owner(), hf.OwnerGroup()
	}
	if u.Path == "/" {
		info.Name = "/"
	} else {
		info.Name = u.Path[strings.LastIndex(u.Path, "/")+1:]
	}
	return info
}

// Stat describes one path.
func (h *HDFS) Stat(ctx context.Context, p string) (FileInfo, error) {
	u, err := h.path("stat", p)
	if err != nil {
		return FileInfo{}, err
	}
	var info FileInfo
	err = h.do(ctx, "stat", u.String(), func(c *gohdfs.Client, _ time.Time) error {
		fi, err := c.Stat(u.Path)
		if err != nil {
			return err
		}
		info = hdfsInfo(u, fi)
		return nil
	})
	return info, err
}

// List streams a directory in batches, sorted by name (namenode order).
// Each batch is one getListing call on the connection of the first; the
// first call also stats dir. When that connection was replaced between
// batches (a namenode went away), the listing is opened again on the new
// one and continues after the last name delivered.
func (h *HDFS) List(ctx context.Context, dir string, batchSize int, fn ListFunc) error {
	return h.list(ctx, dir, batchSize, nil, fn)
}

// errListedFile ends a listing whose path is a file, for self.
var errListedFile = errors.New("a file")

// list is List; self, if set, is given dir's own entry, which opening the
// listing reads anyway, before the first batch, or alone if dir is a file.
func (h *HDFS) list(ctx context.Context, dir string, batchSize int, self func(FileInfo) error, fn ListFunc) error {
	if batchSize <= 0 {
		batchSize = h.batch
	}
	u, err := h.path("list", dir)
	if err != nil {
		return err
	}
	var (
		f        *gohdfs.FileReader
		openedOn *gohdfs.Client
		on       *nnConn // the connection the listing runs on
		last     string  // the last name delivered to fn
		started  bool
		entry    FileInfo // dir's own, from the first open
	)
	defer func() { h.endListing(on) }()
	open := func(c *gohdfs.Client) error {
		if f != nil {
			_ = f.Close()
			f = nil
		}
		nf, err := c.Open(u.Path)
		if err != nil {
			return err
		}
		if !started {
			entry = hdfsInfo(u, nf.Stat())
		}
		if !nf.Stat().IsDir() {
			_ = nf.Close()
			if self != nil && !started {
				return errListedFile
			}
			return newError("list", u.String(), ErrNotDir, nil)
		}
		f, openedOn = nf, c
		return nil
	}
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	// Sized to what the namenode returns, not to batchSize: most dirs hold
	// a few entries, and a full-size batch per dir was most of what a
	// large walk allocated.
	var batch []FileInfo
	for {
		var (
			infos []os.FileInfo
			eof   bool
		)
		err := h.doOn(ctx, &on, "list", u.String(), func(c *gohdfs.Client, _ time.Time) error {
			if f == nil || c != openedOn {
				if err := open(c); err != nil {
					return err
				}
			}
			for {
				var err error
				infos, err = f.Readdir(batchSize)
				if err == io.EOF {
					eof, err = true, nil
				}
				if err != nil {
					return err
				}
				// Readdir returns fewer than asked only when the namenode
				// reported no remaining entries, so this saves the final
				// empty call.
				eof = eof || len(infos) < batchSize
				if !started || last == "" {
					return nil
				}
				// Reopened: skip what was delivered before.
				i := 0
				for i < len(infos) && infos[i].Name() <= last {
					i++
				}
				if i == 0 {
					return nil
				}
				infos = infos[i:]
				if len(infos) > 0 || eof {
					return nil
				}
			}
		})
		if errors.Is(err, errListedFile) {
			return self(entry)
		}
		if err != nil {
			return err
		}
		if !started && self != nil {
			if err := self(entry); err != nil {
				return err
			}
		}
		started = true
		batch = slices.Grow(batch[:0], len(infos))
		for _, fi := range infos {
			batch = append(batch, hdfsInfo(u.Join(fi.Name()), fi))
		}
		if len(batch) > 0 {
			last = batch[len(batch)-1].Name
			if err := fn(batch); err != nil {
				if errors.Is(err, ErrStopListing) {
					return nil
				}
				return err
			}
		}
		if eof {
			return nil
		}
	}
}

// Walk visits root and everything below it, depth first, in name order.
// Root's own entry comes from opening it for its listing: a getFileInfo
// fewer than a Stat first, which a cleanup run saves on every item.
func (h *HDFS) Walk(ctx context.Context, root string, fn WalkFunc) error {
	skipped := false
	err := h.list(ctx, root, h.batch, func(info FileInfo) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := fn(info)
		if errors.Is(err, SkipDir) {
			skipped = true
			return ErrStopListing
		}
		if err != nil {
			return userError{err}
		}
		return nil
	}, walkBatch(ctx, h, h.batch, fn))
	var ue userError
	switch {
	case skipped && errors.Is(err, ErrStopListing):
		return nil
	case errors.As(err, &ue):
		return ue.err
	}
	return err
}

// ReadFile reads a whole file of at most maxBytes from the datanodes.
func (h *HDFS) ReadFile(ctx context.Context, p string, maxBytes int64) ([]byte, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxReadBytes
	}
	data, err := h.readOnce(ctx, p, maxBytes)
	if err == nil && len(data) == 0 {
		return h.confirmEmpty(ctx, p, maxBytes)
	}
	return data, err
}

// readOnce is one read of a whole file of at most maxBytes.
func (h *HDFS) readOnce(ctx context.Context, p string, maxBytes int64) ([]byte, error) {
	u, err := h.path("read", p)
	if err != nil {
		return nil, err
	}
	var data []byte
	err = h.do(ctx, "read", u.String(), func(c *gohdfs.Client, deadline time.Time) error {
		f, err := c.Open(u.Path)
		if err != nil {
			return err
		}
		defer f.Close()
		if f.Stat().IsDir() {
			return newError("read", u.String(), ErrIsDir, nil)
		}
		if size := f.Stat().Size(); size > maxBytes {
			return newError("read", u.String(), ErrTooLarge, fmt.Errorf("size %d bytes, limit %d", size, maxBytes))
		}
		if err := f.SetDeadline(deadline); err != nil {
			return err
		}
		data, err = io.ReadAll(io.LimitReader(f, maxBytes+1))
		if err != nil {
			return err
		}
		if int64(len(data)) > maxBytes {
			return newError("read", u.String(), ErrTooLarge, fmt.Errorf("grew past the limit of %d bytes while reading", maxBytes))
		}
		return nil
	})
	return data, err
}

// confirmEmpty asks again about a file a read found empty: a namenode
// answering while it shuts down has been seen to report a written file
// with no length. An empty file is rare, so a second look costs little,
// and an empty answer is returned only when the namenode says so again.
func (h *HDFS) confirmEmpty(ctx context.Context, p string, maxBytes int64) ([]byte, error) {
	for range 3 {
		st, err := h.Stat(ctx, p)
		if err != nil {
			return nil, err
		}
		if st.Size == 0 {
			return []byte{}, nil
		}
		data, err := h.readOnce(ctx, p, maxBytes)
		if err != nil || len(data) > 0 {
			return data, err
		}
	}
	u, _ := h.path("read", p)
	return nil, newError("read", u.String(), ErrUnavailable, errors.New("the namenode reported the file empty on reading and not empty on a stat, three times"))
}

// ContentSummary returns the namenode's counts and quotas for a subtree.
func (h *HDFS) ContentSummary(ctx context.Context, p string) (ContentSummary, error) {
	u, err := h.path("content-summary", p)
	if err != nil {
		return ContentSummary{}, err
	}
	var cs ContentSummary
	err = h.do(ctx, "content-summary", u.String(), func(c *gohdfs.Client, _ time.Time) error {
		s, err := c.GetContentSummary(u.Path)
		if err != nil {
			return err
		}
		cs = ContentSummary{
			Files:          int64(s.FileCount()),
			Dirs:           int64(s.DirectoryCount()),
			Length:         s.Size(),
			SpaceConsumed:  s.SizeAfterReplication(),
			NamespaceQuota: noQuota(int64(s.NameQuota())),
			SpaceQuota:     noQuota(s.SpaceQuota()),
		}
		return nil
	})
	return cs, err
}

// noQuota normalises "no quota", which arrives as -1 in an unsigned field.
func noQuota(q int64) int64 {
	if q < 0 {
		return -1
	}
	return q
}

func (h *HDFS) guarded(op, p string) (URI, error) {
	return h.guard.Check(h.base, p)
}

// Mkdir creates one directory; its parent must exist.
func (h *HDFS) Mkdir(ctx context.Context, p string) error {
	u, err := h.guarded("mkdir", p)
	if err != nil {
		return err
	}
	return h.do(ctx, "mkdir", u.String(), func(c *gohdfs.Client, _ time.Time) error {
		return c.Mkdir(u.Path, 0o755)
	})
}

// MkdirAll creates p and missing parents below its root, which must exist.
func (h *HDFS) MkdirAll(ctx context.Context, p string) error {
	u, err := h.guarded("mkdir", p)
	if err != nil {
		return err
	}
	root, _ := h.guard.rootFor(h.base, u)
	return h.do(ctx, "mkdir", u.String(), func(c *gohdfs.Client, _ time.Time) error {
		if _, err := c.Stat(root.Path); err != nil {
			return newError("mkdir", u.String(), ErrNotFound, fmt.Errorf("root %s must exist before anything is created under it: %w", root, err))
		}
		return c.MkdirAll(u.Path, 0o755)
	})
}

// WriteFile creates a new file holding data.
//
// Once the namenode created the file, a failure is not tried again as a
// whole (that would find the file existing); the steps after it (block
// allocation, completing the file) are themselves asked again while no
// namenode acted on them, e.g. both were standby during a failover. One
// case is written again: a file whose completion a failover lost (see
// closeReplicated) is removed, still open and ours, and written anew.
func (h *HDFS) WriteFile(ctx context.Context, p string, data []byte) error {
	u, err := h.guarded("write", p)
	if err != nil {
		return err
	}
	return h.do(ctx, "write", u.String(), func(c *gohdfs.Client, deadline time.Time) error {
		for rewrites := 0; ; rewrites++ {
			err := writeOnce(c, u.Path, data, deadline, h.afterReplicating)
			if !errors.Is(err, errCompletionLost) || rewrites >= maxRewrites {
				return err
			}
			// The file is ours (this call created it) and was never
			// completed: nobody has read a whole of it. Remove it and
			// write it again.
			if err := retryNotExecuted(deadline, func() error { return c.Remove(u.Path) }); err != nil && !errors.Is(err, os.ErrNotExist) {
				return &afterEffect{fmt.Errorf("remove %s, whose completion a failover lost, to write it again: %w", u.Path, err)}
			}
		}
	})
}

// maxRewrites bounds how often WriteFile writes a file again whose
// completion was lost.
const maxRewrites = 2

func writeOnce(c *gohdfs.Client, p string, data []byte, deadline time.Time, afterReplicating func()) error {
	w, err := c.Create(p)
	if err != nil {
		return err
	}
	if err := w.SetDeadline(deadline); err != nil {
		_ = w.Close()
		return &afterEffect{err}
	}
	if len(data) > 0 {
		err := retryNotExecuted(deadline, func() error {
			_, err := w.Write(data)
			return err
		})
		if err != nil {
			_ = w.Close()
			return &afterEffect{err}
		}
	}
	if err := retryNotExecuted(deadline, func() error { return closeReplicated(w, deadline, afterReplicating) }); err != nil {
		return &afterEffect{err}
	}
	return nil
}

// afterEffect marks an error that came after the call changed something on
// the namenode, so the call must not be run again as a whole.
type afterEffect struct{ err error }

func (e *afterEffect) Error() string { return e.err.Error() }
func (e *afterEffect) Unwrap() error { return e.err }

// retryNotExecuted runs step again while it fails in a way no namenode
// acted on, until deadline.
func retryNotExecuted(deadline time.Time, step func() error) error {
	wait := 50 * time.Millisecond
	for {
		err := step()
		if err == nil || !notExecuted(err) || !time.Now().Add(wait).Before(deadline) {
			return err
		}
		time.Sleep(wait)
		wait = min(2*wait, time.Second)
	}
}

// errCompletionLost: the namenode kept answering "replication in progress"
// for longer than a datanode takes to report a block.
var errCompletionLost = errors.New("the file was not completed although its block was written: a NameNode failover may have lost the commit of its last block")

// completionLostAfter is how long "replication in progress" may last
// before closeReplicated gives up on the file; a datanode reports a
// written block within a second or two.
const completionLostAfter = 10 * time.Second

// closeReplicated closes a written file. The namenode answers "replication
// in progress" while the datanode has not yet reported the last block;
// like the Java client, ask again with backoff. The first Close committed
// the block, so the library's repeated Close only asks the namenode to
// complete the file, without naming the block. That commit lives in the
// memory of the namenode that took it until the file completes: after a
// failover the new active namenode holds the block under construction, and
// a completion that does not name it never succeeds. The Java client names
// the block on every retry; this library cannot, so after
// completionLostAfter it returns errCompletionLost and WriteFile writes the
// file again. afterReplicating, if set, is called on the first "replication
// in progress" (tests fail the namenodes over there).
func closeReplicated(w *gohdfs.FileWriter, deadline time.Time, afterReplicating func()) error {
	err := w.Close()
	if errors.Is(err, gohdfs.ErrReplicating) && afterReplicating != nil {
		afterReplicating()
	}
	start := time.Now()
	// The datanode's report usually arrives within milliseconds: starting
	// at 100 ms made a small file cost 60 ms on average, at 10 ms 13 ms
	// (each manifest segment of a cleanup is one).
	wait := 10 * time.Millisecond
	for errors.Is(err, gohdfs.ErrReplicating) && time.Now().Add(wait).Before(deadline) {
		if time.Since(start) > completionLostAfter {
			return fmt.Errorf("%w (%w for %v)", errCompletionLost, err, time.Since(start).Round(time.Second))
		}
		time.Sleep(wait)
		wait = min(2*wait, 2*time.Second)
		err = w.Close()
	}
	return err
}

// Rename moves oldPath to newPath. The library would overwrite an existing
// file at newPath, so its absence is checked first.
func (h *HDFS) Rename(ctx context.Context, oldPath, newPath string) error {
	from, err := h.guarded("rename", oldPath)
	if err != nil {
		return err
	}
	to, err := h.guarded("rename", newPath)
	if err != nil {
		return err
	}
	return h.do(ctx, "rename", from.String(), func(c *gohdfs.Client, _ time.Time) error {
		if _, err := c.Stat(to.Path); err == nil {
			return newError("rename", to.String(), ErrExist, errors.New("destination exists; refusing to overwrite"))
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return c.Rename(from.Path, to.Path)
	})
}

// Remove deletes a file or an empty directory.
func (h *HDFS) Remove(ctx context.Context, p string) error {
	u, err := h.guarded("remove", p)
	if err != nil {
		return err
	}
	return h.do(ctx, "remove", u.String(), func(c *gohdfs.Client, _ time.Time) error {
		return c.Remove(u.Path)
	})
}

// RemoveAll deletes p recursively in one namenode call; a missing path is
// not an error.
func (h *HDFS) RemoveAll(ctx context.Context, p string) error {
	u, err := h.guarded("remove", p)
	if err != nil {
		return err
	}
	return h.do(ctx, "remove", u.String(), func(c *gohdfs.Client, _ time.Time) error {
		return c.RemoveAll(u.Path)
	})
}
