package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/temporalconn"
)

// healthState is where the worker is: a start-up step, running, or
// stopping.
type healthState struct {
	step     atomic.Pointer[string] // the start-up step under way; nil once running
	up       atomic.Bool
	stopping atomic.Bool
}

// setStep records the start-up step under way, for /readyz.
func (h *healthState) setStep(s string) { h.step.Store(&s) }

func (h *healthState) setRunning(v bool) {
	h.up.Store(v)
	if v {
		h.step.Store(nil)
	}
}

func (h *healthState) setStopping() {
	h.stopping.Store(true)
	h.up.Store(false)
}

// notReady says why the worker does not serve runs yet ("" when it does).
func (h *healthState) notReady() string {
	switch {
	case h.stopping.Load():
		return "worker stopping"
	case h.up.Load():
		return ""
	}
	if s := h.step.Load(); s != nil {
		return "starting: " + *s
	}
	return "worker not running"
}

// httpRoutes are what the worker serves over HTTP: /healthz (liveness:
// the process is starting or polls; not once it stops), /readyz (it polls
// and the Temporal frontend answers; else what it waits for), /metrics
// and /codec/ (the payload codec of the Web UI).
type httpRoutes struct {
	metrics http.Handler
	codec   http.Handler
	health  *healthState
	// ready asks the Temporal frontend for its health.
	ready func(context.Context) error
}

func (rt httpRoutes) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", rt.metrics)
	mux.Handle("/codec/", rt.codec)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		// A worker still starting is alive: its start-up waits are
		// bounded (storage.rpcTimeout, worker.temporalConnectTimeout) and
		// end in a running worker or an exit, never in a hang to kill.
		switch why := rt.health.notReady(); {
		case why == "":
			fmt.Fprintln(w, "ok")
		case rt.health.stopping.Load():
			http.Error(w, why, http.StatusServiceUnavailable)
		default:
			fmt.Fprintln(w, "ok ("+why+")")
		}
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyzTimeout)
		defer cancel()
		if why := rt.health.notReady(); why != "" {
			http.Error(w, why, http.StatusServiceUnavailable)
			return
		}
		if err := rt.ready(ctx); err != nil {
			http.Error(w, "temporal frontend: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// readyzTimeout bounds the health call /readyz makes to Temporal.
const readyzTimeout = 3 * time.Second

// codecRoute returns the /codec/ handler for a listener on addr, and how
// it is served, for the log. Fail-closed: with http.codecTokenFile every
// request must carry the token; without one the codec is served, without
// authentication, only on a loopback address (the dev server and the
// demo); on any other address it is not served.
func codecRoute(cfg config.HTTP, token string, addr net.Addr) (http.Handler, string) {
	opts := temporalconn.CodecOptions{Token: token, AllowOrigin: cfg.CodecAllowOrigin}
	switch {
	case token != "":
		return temporalconn.CodecHandler(opts), "bearer token"
	case isLoopback(addr):
		opts.AllowUnauthenticated = true
		return temporalconn.CodecHandler(opts), "loopback, no token"
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, fmt.Sprintf("the codec endpoint is off: http.listen=%q is not a loopback address and http.codecTokenFile is not set", cfg.Listen), http.StatusNotFound)
	}), "off (set http.codecTokenFile, or listen on a loopback address)"
}

func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// httpLimits bound what one client can hold of the HTTP server.
type httpLimits struct {
	readHeader, read, write, idle time.Duration
	maxHeaderBytes                int
}

func defaultHTTPLimits() httpLimits {
	return httpLimits{
		readHeader: 10 * time.Second,
		// The largest body is a codec request (at most 4 MiB): 30 s
		// allow it at 140 KiB/s; a client slower than that is cut off.
		read: 30 * time.Second,
		// From the end of the request headers to the end of the answer:
		// /readyz waits up to readyzTimeout for Temporal, a decoded codec
		// answer may be tens of MB.
		write: time.Minute,
		idle:  2 * time.Minute,
		// Room for an access token and the cookies a browser sends to
		// localhost, far below the 1 MiB net/http allows by default.
		maxHeaderBytes: 64 << 10,
	}
}

// newHTTPServer is the worker's HTTP server: h under the limits l.
func newHTTPServer(h http.Handler, l httpLimits) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.readHeader,
		ReadTimeout:       l.read,
		WriteTimeout:      l.write,
		IdleTimeout:       l.idle,
		MaxHeaderBytes:    l.maxHeaderBytes,
	}
}
