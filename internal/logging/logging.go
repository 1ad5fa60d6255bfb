// Package logging sets up zerolog, the project's one logger, and adapts it to
// the Temporal SDK's log.Logger so SDK, workflow and activity logs share one
// stream and one format.
package logging

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/log"
)

// Formats accepted by New.
const (
	FormatJSON    = "json"
	FormatConsole = "console"
)

// Shared log keys, so every component names the same thing the same way.
const (
	KeyCluster    = "cluster"
	KeyJobID      = "job_id"
	KeySavepoint  = "savepoint"
	KeyTenant     = "tenant"
	KeyPath       = "path"
	KeyWorkflowID = "workflow_id"
	KeyComponent  = "component"
)

// Options selects level and format.
type Options struct {
	Level  string // trace, debug, info, warn, error
	Format string // json (default) or console
	Output io.Writer
}

// New returns a configured zerolog.Logger or an error naming the bad option.
func New(opts Options) (zerolog.Logger, error) {
	out := opts.Output
	if out == nil {
		out = os.Stderr
	}
	level := zerolog.InfoLevel
	if opts.Level != "" {
		l, err := ParseLevel(opts.Level)
		if err != nil {
			return zerolog.Nop(), err
		}
		level = l
	}
	switch opts.Format {
	case "", FormatJSON:
	case FormatConsole:
		out = zerolog.ConsoleWriter{Out: out, TimeFormat: time.RFC3339}
	default:
		return zerolog.Nop(), fmt.Errorf("log format %q is not valid: use %q or %q", opts.Format, FormatJSON, FormatConsole)
	}
	return zerolog.New(out).Level(level).With().Timestamp().Logger(), nil
}

// ParseLevel accepts trace, debug, info, warn and error.
func ParseLevel(s string) (zerolog.Level, error) {
	switch strings.ToLower(s) {
	case "trace":
		return zerolog.TraceLevel, nil
	case "debug":
		return zerolog.DebugLevel, nil
	case "info":
		return zerolog.InfoLevel, nil
	case "warn", "warning":
		return zerolog.WarnLevel, nil
	case "error":
		return zerolog.ErrorLevel, nil
	}
	return zerolog.NoLevel, fmt.Errorf("log level %q is not valid: use trace, debug, info, warn or error", s)
}

// TemporalLogger adapts zerolog to the SDK's log.Logger and log.WithLogger.
type TemporalLogger struct {
	zl zerolog.Logger
}

var (
	_ log.Logger     = TemporalLogger{}
	_ log.WithLogger = TemporalLogger{}
)

// NewTemporalLogger wraps zl for client.Options.Logger.
func NewTemporalLogger(zl zerolog.Logger) TemporalLogger {
	return TemporalLogger{zl: zl}
}

func (l TemporalLogger) Debug(msg string, keyvals ...interface{}) {
	l.emit(l.zl.Debug(), msg, keyvals)
}

func (l TemporalLogger) Info(msg string, keyvals ...interface{}) {
	l.emit(l.zl.Info(), msg, keyvals)
}

func (l TemporalLogger) Warn(msg string, keyvals ...interface{}) {
	l.emit(l.zl.Warn(), msg, keyvals)
}

func (l TemporalLogger) Error(msg string, keyvals ...interface{}) {
	l.emit(l.zl.Error(), msg, keyvals)
}

// With returns a logger carrying keyvals on every entry.
func (l TemporalLogger) With(keyvals ...interface{}) log.Logger {
	ctx := l.zl.With()
	for i := 0; i < len(keyvals); i += 2 {
		key, val := pair(keyvals, i)
		ctx = ctx.Interface(key, val)
	}
	return TemporalLogger{zl: ctx.Logger()}
}

func (l TemporalLogger) emit(ev *zerolog.Event, msg string, keyvals []interface{}) {
	if ev == nil { // level disabled
		return
	}
	for i := 0; i < len(keyvals); i += 2 {
		key, val := pair(keyvals, i)
		if err, ok := val.(error); ok {
			ev = ev.AnErr(key, err)
			continue
		}
		ev = ev.Interface(key, val)
	}
	ev.Msg(msg)
}

// pair returns the key and value at i; an odd trailing key gets a marker
// value rather than being dropped, so a logging mistake stays visible.
func pair(keyvals []interface{}, i int) (string, interface{}) {
	key := fmt.Sprint(keyvals[i])
	if i+1 >= len(keyvals) {
		return key, "(MISSING)"
	}
	return key, keyvals[i+1]
}
