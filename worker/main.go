// Command flinkmaint-worker runs flinkmaint's workflows and activities.
//
// Exit codes: 0 clean shutdown, 1 runtime failure, 2 invalid configuration
// or flags, 3 Temporal frontend unreachable at start.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/logging"
	"github.com/flinkmaint/flinkmaint/internal/metrics"
	"github.com/flinkmaint/flinkmaint/internal/temporalconn"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const (
	exitOK          = 0
	exitFailure     = 1
	exitConfig      = 2
	exitUnreachable = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stderr))
}

func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	cfg, err := config.Load(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "flinkmaint-worker: %v\n", err)
		return exitConfig
	}
	zl, err := logging.New(logging.Options{Level: cfg.Log.Level, Format: cfg.Log.Format, Output: stderr})
	if err != nil { // unreachable after Validate, kept so a future field cannot panic
		fmt.Fprintf(stderr, "flinkmaint-worker: %v\n", err)
		return exitConfig
	}
	if err := serve(ctx, cfg, zl); err != nil {
		zl.Error().Err(err).Msg("worker stopped with an error")
		if errors.Is(err, temporalconn.ErrUnreachable) {
			return exitUnreachable
		}
		return exitFailure
	}
	return exitOK
}

func serve(ctx context.Context, cfg config.Config, zl zerolog.Logger) error {
	m, err := metrics.New(version)
	if err != nil {
		return err
	}
	defer m.Close() //nolint:errcheck // flushing metrics on exit is best effort

	c, err := cfg.Temporal.Dial(ctx, cfg.Worker.TemporalConnectTimeout.D(), logging.NewTemporalLogger(zl), m.SDK)
	if err != nil {
		return err
	}
	defer c.Close()

	identity := workerIdentity()
	fatal := make(chan error, 1)
	w := worker.New(c, cfg.Worker.TaskQueue, worker.Options{
		Identity:                               identity,
		MaxConcurrentActivityExecutionSize:     cfg.Worker.MaxConcurrentActivities,
		MaxConcurrentWorkflowTaskExecutionSize: cfg.Worker.MaxConcurrentWorkflowTasks,
		WorkerStopTimeout:                      cfg.Worker.ShutdownTimeout.D(),
		OnFatalError:                           func(err error) { fatal <- err },
	})
	acts, closeAdapters, err := app.NewActivities(cfg, identity)
	if err != nil {
		return err
	}
	defer closeAdapters() //nolint:errcheck // connections close on exit anyway
	acts.Metrics = m.Governance
	app.Register(w, acts)

	health := &healthState{}
	srv, err := startHTTP(cfg.HTTP.Listen, m, c, health, zl)
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker on task queue %q: %w", cfg.Worker.TaskQueue, err)
	}
	health.setRunning(true)
	zl.Info().Str("task_queue", cfg.Worker.TaskQueue).Str("temporal", cfg.Temporal.Address).
		Str("namespace", cfg.Temporal.Namespace).Str("http", cfg.HTTP.Listen).Str("version", version).
		Msg("worker started")

	var runErr error
	select {
	case <-ctx.Done():
		zl.Info().Dur("timeout", cfg.Worker.ShutdownTimeout.D()).Msg("shutdown requested; letting running activities finish")
	case runErr = <-fatal:
	}
	health.setRunning(false)
	w.Stop()
	if srv != nil {
		shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutCtx)
	}
	zl.Info().Msg("worker stopped")
	return runErr
}

func workerIdentity() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	return fmt.Sprintf("flinkmaint-worker@%s/%d", host, os.Getpid())
}

// startHTTP serves /healthz (liveness: the worker polls), /readyz (the
// Temporal frontend answers), /metrics, and /codec/ (the payload codec for
// the Web UI). An empty address disables it.
func startHTTP(addr string, m *metrics.Metrics, c client.Client, health *healthState, zl zerolog.Logger) (*http.Server, error) {
	if addr == "" {
		return nil, nil
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	mux.Handle("/codec/", temporalconn.CodecHandler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if !health.running() {
			http.Error(w, "worker not running", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		if !health.running() {
			http.Error(w, "worker not running", http.StatusServiceUnavailable)
			return
		}
		if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			http.Error(w, "temporal frontend: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http.listen=%q: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			zl.Error().Err(err).Msg("http listener failed")
		}
	}()
	return srv, nil
}
