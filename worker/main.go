// Command flinkmaint-worker runs flinkmaint's workflows and activities.
//
// Exit codes: 0 clean shutdown, 1 runtime failure, 2 invalid configuration
// or flags (storage credentials refused at start included), 3 Temporal
// frontend unreachable at start.
//
// --check-config makes every check of the configuration a start makes that
// needs no network (and reads the static inventory), and exits 0 or 2.
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
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/buildinfo"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/logging"
	"github.com/flinkmaint/flinkmaint/internal/metrics"
	"github.com/flinkmaint/flinkmaint/internal/storage"
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
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	// The version is told without reading any configuration.
	if slices.ContainsFunc(args, func(a string) bool { return a == "--version" || a == "-version" }) {
		fmt.Fprintln(stdout, buildinfo.Describe("flinkmaint-worker", version))
		return exitOK
	}
	var mode modeFlags
	cfg, err := config.Load(args, getenv, stderr, mode.bind)
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
	if mode.checkConfig {
		if err := checkConfig(ctx, cfg); err != nil {
			fmt.Fprintf(stderr, "flinkmaint-worker: %s: %v\n", configSource(cfg), err)
			return exitConfig
		}
		fmt.Fprintf(stdout, "configuration valid: Temporal %s namespace %s task queue %s, storage %s (%s)\n%s\n",
			cfg.Temporal.Address, cfg.Temporal.Namespace, cfg.Worker.TaskQueue, cfg.Storage.DefaultFS, configSource(cfg), notChecked)
		return exitOK
	}
	if err := serve(ctx, cfg, zl); err != nil {
		var cerr *configError
		switch {
		case errors.As(err, &cerr):
			zl.Error().Err(cerr.err).Msg("invalid configuration")
			return exitConfig
		case errors.Is(err, temporalconn.ErrUnreachable):
			zl.Error().Err(err).Msg("worker stopped with an error")
			return exitUnreachable
		}
		zl.Error().Err(err).Msg("worker stopped with an error")
		return exitFailure
	}
	return exitOK
}

// modeFlags choose what the worker does rather than configure it; Load
// lists them in -h with the others.
type modeFlags struct{ checkConfig, version bool }

func (m *modeFlags) bind(fs *flag.FlagSet) {
	fs.BoolVar(&m.checkConfig, "check-config", false, "check the configuration and every file it names as a start does, without the network, and exit 0 (valid) or 2")
	fs.BoolVar(&m.version, "version", false, "print the release, the commit and the Go version, and exit")
}

// notChecked is what --check-config leaves to the start: what needs the
// network.
const notChecked = "not checked, as they need the network: reaching Temporal, the KDC's login, HDFS NameNodes, the Kubernetes API, Flink REST endpoints and notification sinks"

// configSource names where the configuration came from, for messages.
func configSource(cfg config.Config) string {
	if cfg.File == "" {
		return "configuration from defaults, environment and flags (no file)"
	}
	return "config file " + cfg.File
}

// checkConfig makes every check of the configuration the worker makes at
// start that needs no network (Load has validated the keys and the files
// they name: TLS, Kerberos, the codec token, notification secrets), builds
// what serve builds before it reaches storage and Temporal, and checks
// what runs read later: the file systems of every storage directory
// (Hadoop configuration, namenode principal) and the static inventory.
func checkConfig(ctx context.Context, cfg config.Config) error {
	p, err := prepare(cfg)
	if err != nil {
		return err
	}
	defer p.closeAdapters() //nolint:errcheck // nothing was opened yet
	var errs []error
	if r, ok := p.acts.Storage.(*storage.Resolver); ok {
		errs = append(errs, app.CheckStorage(cfg, r)...)
	}
	if f := cfg.Inventory.StaticFile; f != "" {
		if _, err := (app.StaticInventory{Path: f}).Discover(ctx); err != nil {
			errs = append(errs, fmt.Errorf("inventory.staticFile=%q: %w", f, err))
		}
	}
	return errors.Join(errs...)
}

// prepared is what the configuration alone decides, built by serve and
// --check-config alike before anything is reached.
type prepared struct {
	acts          *app.Ports
	closeAdapters func() error
	codecToken    string
}

func prepare(cfg config.Config) (prepared, error) {
	acts, closeAdapters, err := app.NewPorts(cfg, workerIdentity())
	if err != nil {
		return prepared{}, err
	}
	codecToken, err := cfg.HTTP.CodecToken()
	if err != nil {
		_ = closeAdapters()
		return prepared{}, err
	}
	return prepared{acts: acts, closeAdapters: closeAdapters, codecToken: codecToken}, nil
}

// configError is a setting the worker cannot start with, found while
// building what the configuration describes (exit code 2).
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

func serve(ctx context.Context, cfg config.Config, zl zerolog.Logger) error {
	// Everything the configuration alone decides is built before the
	// worker dials Temporal, so a bad setting stops it naming the setting,
	// whether Temporal is up or not.
	p, err := prepare(cfg)
	if err != nil {
		return &configError{err}
	}
	defer p.closeAdapters() //nolint:errcheck // connections close on exit anyway
	acts, codecToken := p.acts, p.codecToken
	acts.Worker.Version = fmt.Sprintf("%s (commit %s)", version, buildinfo.Commit())
	m, err := metrics.New(version, buildinfo.Commit())
	if err != nil {
		return err
	}
	defer m.Close() //nolint:errcheck // flushing metrics on exit is best effort
	acts.Metrics = m.Governance

	// The listener answers from here on: /healthz says the process lives
	// while storage and Temporal are still being reached (a liveness probe
	// must not kill a worker that only waits), /readyz says what it waits
	// for.
	health := &healthState{}
	health.setStep("connecting to storage")
	var temporalClient atomic.Pointer[client.Client]
	routes := httpRoutes{
		metrics: m.Handler(),
		health:  health,
		ready: func(ctx context.Context) error {
			c := temporalClient.Load()
			if c == nil {
				return errors.New("no Temporal client yet")
			}
			_, err := (*c).CheckHealth(ctx, &client.CheckHealthRequest{})
			return err
		},
	}
	srv, err := startHTTP(cfg.HTTP, codecToken, routes, zl)
	if err != nil {
		return err
	}
	if srv != nil {
		defer func() {
			shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(shutCtx)
		}()
	}

	// Log in to storage and reach it now: credentials the KDC or the
	// cluster refuses stop the worker here, naming principal and realm.
	// Storage that does not answer yet does not: activities retry it.
	if err := app.ConnectStorage(ctx, cfg, acts.Storage); err != nil {
		if !storage.IsRetryable(err) && !errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return &configError{err}
		}
		zl.Warn().Err(err).Msg("storage did not answer at start; activities retry it")
	}
	warnMissingDirs(ctx, cfg, acts.Storage, zl)

	c, err := dialTemporal(ctx, cfg, zl, m.SDK, health)
	if err != nil {
		return err
	}
	defer c.Close()
	temporalClient.Store(&c)

	fatal := make(chan error, 1)
	w := worker.New(c, cfg.Worker.TaskQueue, worker.Options{
		Identity:                               acts.Identity,
		MaxConcurrentActivityExecutionSize:     cfg.Worker.MaxConcurrentActivities,
		MaxConcurrentWorkflowTaskExecutionSize: cfg.Worker.MaxConcurrentWorkflowTasks,
		WorkerStopTimeout:                      cfg.Worker.ShutdownTimeout.D(),
		OnFatalError:                           func(err error) { fatal <- err },
		Interceptors:                           faultHooks(),
	})
	app.Register(w, acts)

	health.setStep("starting the worker on task queue " + cfg.Worker.TaskQueue)
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker on task queue %q: %w", cfg.Worker.TaskQueue, err)
	}
	health.setRunning(true)
	zl.Info().Str("task_queue", cfg.Worker.TaskQueue).Str("temporal", cfg.Temporal.Address).
		Str("namespace", cfg.Temporal.Namespace).Str("http", cfg.HTTP.Listen).Str("version", version).Str("commit", buildinfo.Commit()).
		Msg("worker started")

	var runErr error
	select {
	case <-ctx.Done():
		zl.Info().Dur("timeout", cfg.Worker.ShutdownTimeout.D()).Msg("shutdown requested; letting running activities finish")
	case runErr = <-fatal:
	}
	health.setStopping()
	w.Stop()
	zl.Info().Msg("worker stopped")
	return runErr
}

// dialTemporal dials until Temporal answers or worker.temporalConnectTimeout
// has passed: a frontend that is not there yet (its Service not created,
// its pods starting, a name DNS does not know yet) is waited for, with
// /readyz saying why, rather than a reason to exit into a crash loop.
func dialTemporal(ctx context.Context, cfg config.Config, zl zerolog.Logger, sdkMetrics client.MetricsHandler, health *healthState) (client.Client, error) {
	const maxAttempt, maxBackoff = 10 * time.Second, 30 * time.Second
	deadline := time.Now().Add(cfg.Worker.TemporalConnectTimeout.D())
	backoff := time.Second
	health.setStep("connecting to Temporal at " + cfg.Temporal.Address)
	for {
		c, err := cfg.Temporal.Dial(ctx, min(time.Until(deadline), maxAttempt), logging.NewTemporalLogger(zl), sdkMetrics)
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil || time.Until(deadline) <= backoff {
			return nil, err
		}
		health.setStep(fmt.Sprintf("connecting to Temporal at %s, retrying: %v", cfg.Temporal.Address, err))
		zl.Warn().Err(err).Dur("retry_in", backoff).Msg("Temporal did not answer; waiting for it")
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

func workerIdentity() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	return fmt.Sprintf("flinkmaint-worker@%s/%d", host, os.Getpid())
}

// startHTTP listens on cfg.Listen and serves the routes there, with
// /codec/ as codecRoute decides for that listener. An empty address
// disables it.
func startHTTP(cfg config.HTTP, codecToken string, routes httpRoutes, zl zerolog.Logger) (*http.Server, error) {
	if cfg.Listen == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("http.listen=%q: %w", cfg.Listen, err)
	}
	codec, how := codecRoute(cfg, codecToken, ln.Addr())
	routes.codec = codec
	zl.Info().Str("http", ln.Addr().String()).Str("codec", how).Msg("http listener started")
	srv := newHTTPServer(routes.handler(), defaultHTTPLimits())
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			zl.Error().Err(err).Msg("http listener failed")
		}
	}()
	return srv, nil
}

// warnMissingDirs says at startup which writable roots and cleanup
// directories do not exist: an approved cleanup would fail at its first
// step, and nothing can be written in a missing root. The worker does not
// create them; where state may be moved is for people to decide (and a
// tenant root may come with the tenant). A storage that does not answer
// within a few seconds is left to the runs.
func warnMissingDirs(ctx context.Context, cfg config.Config, fs core.Storage, zl zerolog.Logger) {
	if fs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	type dir struct{ setting, path, missing string }
	var dirs []dir
	for _, r := range cfg.Storage.WritableRoots {
		dirs = append(dirs, dir{"storage.writableRoots", r, "does not exist: nothing is written, moved or deleted there until it is created"})
	}
	c := cfg.Cleanup
	for _, d := range []dir{{"cleanup.trashRoot", c.TrashRoot, ""}, {"cleanup.planDir", c.PlanDir, ""}, {"cleanup.auditRoot", c.AuditRoot, ""}} {
		d.missing = "does not exist: cleanup runs will fail until it is created (create it under storage.writableRoots)"
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		if d.path == "" {
			continue
		}
		rfs, p, err := fs.Resolve(ctx, d.path)
		if err == nil {
			_, err = rfs.Stat(ctx, p)
		}
		switch {
		case errors.Is(err, storage.ErrNotFound):
			zl.Warn().Str("setting", d.setting).Str("path", d.path).Msg(d.missing)
		case err != nil:
			zl.Warn().Err(err).Str("setting", d.setting).Str("path", d.path).Msg("could not be checked at startup")
		}
	}
}
