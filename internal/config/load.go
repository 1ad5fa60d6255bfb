package config

import (
	"flag"
	"fmt"
	"io"

	"github.com/flinkmaint/flinkmaint/internal/duration"
)

// Load builds the configuration from defaults, the file named by --config or
// FLINKMAINT_CONFIG, the environment and the flags in args, then validates it.
// Flag parse errors and validation errors are returned, never printed here.
// extra binds flags of the caller's own (the worker's --check-config) to
// the same set, so -h lists them with the rest.
func Load(args []string, getenv func(string) string, usage io.Writer, extra ...func(*flag.FlagSet)) (Config, error) {
	cfg := Default()
	fs := flag.NewFlagSet("flinkmaint-worker", flag.ContinueOnError)
	fs.SetOutput(usage)
	for _, bind := range extra {
		bind(fs)
	}
	var (
		file          = fs.String("config", "", "YAML config file (env "+EnvConfigFile+")")
		address       = fs.String("temporal-address", "", "Temporal frontend host:port (env TEMPORAL_ADDRESS, default "+cfg.Temporal.Address+")")
		namespace     = fs.String("namespace", "", "Temporal namespace (env TEMPORAL_NAMESPACE, default "+cfg.Temporal.Namespace+")")
		taskQueue     = fs.String("task-queue", "", "task queue to poll (env "+EnvTaskQueue+", default "+cfg.Worker.TaskQueue+")")
		listen        = fs.String("http-listen", "", "address of /healthz, /readyz, /metrics and /codec/ (env "+EnvHTTPListen+", default "+cfg.HTTP.Listen+")")
		logLevel      = fs.String("log-level", "", "trace, debug, info, warn or error (env "+EnvLogLevel+")")
		logFormat     = fs.String("log-format", "", "json or console (env "+EnvLogFormat+")")
		shutdown      = durationFlag(fs, "shutdown-timeout", "time running activities get to finish on SIGTERM")
		connectTimout = durationFlag(fs, "temporal-connect-timeout", "how long to wait for the Temporal frontend at start")
		staticFile    = fs.String("inventory", "", "static inventory file (clusters outside Kubernetes)")
	)
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q: the worker takes only flags (see -h)", fs.Arg(0))
	}
	path := *file
	if path == "" {
		path = getenv(EnvConfigFile)
	}
	if path != "" {
		if err := cfg.LoadFile(path); err != nil {
			return cfg, err
		}
		cfg.File = path
	}
	if err := cfg.ApplyEnv(getenv); err != nil {
		return cfg, err
	}
	setFlags := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { setFlags[f.Name] = true })
	override := func(name string, dst *string, v string) {
		if setFlags[name] {
			*dst = v
		}
	}
	override("temporal-address", &cfg.Temporal.Address, *address)
	override("namespace", &cfg.Temporal.Namespace, *namespace)
	override("task-queue", &cfg.Worker.TaskQueue, *taskQueue)
	override("http-listen", &cfg.HTTP.Listen, *listen)
	override("log-level", &cfg.Log.Level, *logLevel)
	override("log-format", &cfg.Log.Format, *logFormat)
	override("inventory", &cfg.Inventory.StaticFile, *staticFile)
	if setFlags["shutdown-timeout"] {
		cfg.Worker.ShutdownTimeout = *shutdown
	}
	if setFlags["temporal-connect-timeout"] {
		cfg.Worker.TemporalConnectTimeout = *connectTimout
	}
	if err := cfg.Validate(); err != nil {
		if path != "" {
			return cfg, fmt.Errorf("config file %s: %w", path, err)
		}
		return cfg, err
	}
	return cfg, nil
}

// durationValue is a flag.Value read by duration.Parse, as the file's
// durations are, so --shutdown-timeout takes 1d12h too.
type durationValue struct{ d *Duration }

func (v durationValue) String() string {
	if v.d == nil {
		return "0s"
	}
	return v.d.D().String()
}

func (v durationValue) Set(s string) error {
	d, err := duration.Parse(s)
	if err != nil {
		return err
	}
	*v.d = Duration(d)
	return nil
}

// durationFlag defines a duration flag; the flag package names the flag
// and the value in a parse error, duration.Parse what would be valid.
func durationFlag(fs *flag.FlagSet, name, usage string) *Duration {
	d := new(Duration)
	fs.Var(durationValue{d}, name, usage+", a `duration` such as "+duration.Examples)
	return d
}
