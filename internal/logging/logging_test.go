package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestNewRejectsBadOptions(t *testing.T) {
	for name, opts := range map[string]Options{
		"unknown level":  {Level: "loud"},
		"unknown format": {Format: "xml"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := New(opts); err == nil {
				t.Fatalf("New(%+v) = nil error, want one", opts)
			}
		})
	}
}

func TestTemporalLoggerWritesJSONWithFields(t *testing.T) {
	var buf bytes.Buffer
	zl, err := New(Options{Level: "debug", Output: &buf})
	if err != nil {
		t.Fatal(err)
	}
	l := NewTemporalLogger(zl).With(KeyCluster, "cluster-a")
	l.Info("savepoint done", KeyJobID, "abc", "error", errors.New("boom"), "dangling")

	var entry map[string]interface{}
	if err := json.Unmarshal(buf.Bytes(), &entry); err != nil {
		t.Fatalf("log line is not JSON: %v: %q", err, buf.String())
	}
	want := map[string]interface{}{
		"level": "info", "message": "savepoint done", KeyCluster: "cluster-a",
		KeyJobID: "abc", "error": "boom", "dangling": "(MISSING)",
	}
	for k, v := range want {
		if entry[k] != v {
			t.Errorf("field %q = %v, want %v (line %s)", k, entry[k], v, buf.String())
		}
	}
}

func TestTemporalLoggerHonoursLevel(t *testing.T) {
	var buf bytes.Buffer
	zl, err := New(Options{Level: "warn", Output: &buf})
	if err != nil {
		t.Fatal(err)
	}
	l := NewTemporalLogger(zl)
	l.Debug("hidden")
	l.Info("hidden")
	l.Warn("shown")
	if strings.Contains(buf.String(), "hidden") || !strings.Contains(buf.String(), "shown") {
		t.Fatalf("level filtering wrong: %q", buf.String())
	}
}

func TestConsoleFormat(t *testing.T) {
	var buf bytes.Buffer
	zl, err := New(Options{Format: FormatConsole, Output: &buf})
	if err != nil {
		t.Fatal(err)
	}
	zl.Info().Str(KeyTenant, "team-a").Msg("hello")
	if strings.HasPrefix(buf.String(), "{") || !strings.Contains(buf.String(), "hello") {
		t.Fatalf("console output looks wrong: %q", buf.String())
	}
}
