package storage

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// deadlineConn bounds every namenode read and write, because the HDFS
// library takes no context: while an operation runs, I/O must finish by the
// operation's deadline; between operations (the library renews leases every
// second) by now+idle. interrupt makes pending and future I/O fail at once,
// which is how a cancelled context stops a call in flight.
type deadlineConn struct {
	net.Conn
	idle time.Duration
	rpcs *atomic.Uint64 // of the HDFS value
	// sent counts this connection's RPCs, for CountNamenodeCalls.
	sent atomic.Uint64
	// addr is the namenode address as configured (host:port).
	addr string
	// kerberos: the SASL negotiation writes before the first RPC are not
	// counted either.
	kerberos bool

	mu          sync.Mutex
	opDeadline  time.Time
	interrupted bool
	// handshake counts the two writes of the connection preamble, which
	// are not RPCs.
	handshake int
}

// preambleWrites is the number of writes the library makes to open a
// connection without Kerberos (header, then connection context); with
// Kerberos the SASL negotiate, initiate and response messages come between.
const (
	preambleWrites         = 2
	kerberosPreambleWrites = 5
)

func (c *deadlineConn) deadline() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.interrupted:
		return time.Unix(1, 0)
	case !c.opDeadline.IsZero():
		return c.opDeadline
	default:
		return time.Now().Add(c.idle)
	}
}

func (c *deadlineConn) Read(p []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(c.deadline()); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

func (c *deadlineConn) Write(p []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(c.deadline()); err != nil {
		return 0, err
	}
	c.mu.Lock()
	limit := preambleWrites
	if c.kerberos {
		limit = kerberosPreambleWrites
	}
	if c.handshake < limit {
		c.handshake++
	} else {
		c.rpcs.Add(1)
		c.sent.Add(1)
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *deadlineConn) begin(d time.Time) {
	c.mu.Lock()
	c.opDeadline = d
	c.mu.Unlock()
}

// end clears the operation deadline and reports whether it was interrupted.
func (c *deadlineConn) end() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opDeadline = time.Time{}
	return c.interrupted
}

func (c *deadlineConn) interrupt() {
	c.mu.Lock()
	c.interrupted = true
	c.mu.Unlock()
	_ = c.Conn.SetDeadline(time.Unix(1, 0))
}
