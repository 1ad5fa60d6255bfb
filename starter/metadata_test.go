package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

func TestMetadataInspect(t *testing.T) {
	shared := sandbox.RequireShared(t)
	dir := filepath.Join(shared, "fixtures", "flink-metadata", "v4-flink1.19-rocksdb-checkpoint")
	var expected struct {
		Unique []string `json:"unique_referenced_paths"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &expected); err != nil {
		t.Fatal(err)
	}

	// The directory or the file itself; JSON for scripts.
	for _, arg := range []string{dir, dir + "/_metadata"} {
		code, stdout, stderr := runCLI([]string{"metadata", "inspect", "-o", "json", arg}, nil)
		if code != exitOK {
			t.Fatalf("inspect %s: exit %d: %s", arg, code, stderr)
		}
		var out struct {
			Version      int   `json:"version"`
			CheckpointID int64 `json:"checkpointId"`
			Files        []struct {
				Path, Kind, Scope string
			} `json:"files"`
		}
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("%v\n%s", err, stdout)
		}
		if out.Version != 4 || out.CheckpointID == 0 || len(out.Files) != len(expected.Unique) {
			t.Fatalf("version %d checkpoint %d files %d, want 4, >0, %d", out.Version, out.CheckpointID, len(out.Files), len(expected.Unique))
		}
		for _, f := range out.Files {
			if !filepath.IsAbs(f.Path) || !strings.HasPrefix(f.Path, dir) || f.Kind == "" || f.Scope == "" {
				t.Fatalf("file entry %+v", f)
			}
		}
	}

	// A table for people.
	code, stdout, _ := runCLI([]string{"metadata", "inspect", dir}, nil)
	if code != exitOK || !strings.Contains(stdout, "version       4") || !strings.Contains(stdout, "SCOPE") {
		t.Fatalf("table output (exit %d):\n%s", code, stdout)
	}

	// Corrupt input: a clear error with the byte offset, exit 1, no panic.
	trunc := filepath.Join(t.TempDir(), "chk-1")
	if err := os.MkdirAll(trunc, 0o755); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(trunc, "_metadata"), raw[:len(raw)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI([]string{"metadata", "inspect", trunc}, nil)
	if code != exitFailure || !strings.Contains(stderr, "offset") {
		t.Fatalf("truncated _metadata: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCLI([]string{"metadata", "inspect", "/nonexistent/chk-1"}, nil)
	if code != exitFailure || !strings.Contains(stderr, "/nonexistent/chk-1/_metadata") {
		t.Fatalf("missing path: exit %d, stderr %q", code, stderr)
	}
}

// Exit codes of metadata inspect follow docs/cli.md: 2 only for how the
// command was called (argument count, a path that is no path, a scheme it
// cannot read), 1 when the storage fails or the file cannot be read.
func TestMetadataInspectExitCodes(t *testing.T) {
	t.Setenv("HADOOP_CONF_DIR", t.TempDir()) // no ambient Hadoop configuration
	pipeDir := filepath.Join(t.TempDir(), "chk-1")
	if err := os.MkdirAll(pipeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(pipeDir, "_metadata"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		args []string
		code int
		want []string
	}{
		"no path":             {[]string{"metadata", "inspect"}, exitUsage, []string{"exactly one PATH", "got 0", "usage: flinkmaint metadata inspect PATH"}},
		"two paths":           {[]string{"metadata", "inspect", "/a/chk-1", "/b/chk-2"}, exitUsage, []string{"exactly one PATH", "got 2", "usage: flinkmaint metadata inspect PATH"}},
		"unsupported scheme":  {[]string{"metadata", "inspect", "s3://bucket/chk-1"}, exitUsage, []string{`scheme "s3" is not supported`}},
		"dotdot in uri":       {[]string{"metadata", "inspect", "hdfs://nn:8020/a/../chk-1"}, exitUsage, []string{`".."`}},
		"namenode refuses":    {[]string{"metadata", "inspect", "hdfs://127.0.0.1:1/x/_metadata"}, exitFailure, []string{"127.0.0.1:1", "storage unavailable"}},
		"named pipe metadata": {[]string{"metadata", "inspect", pipeDir}, exitFailure, []string{filepath.Join(pipeDir, "_metadata"), "named pipe"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			type result struct {
				code           int
				stdout, stderr string
			}
			done := make(chan result, 1)
			go func() {
				code, stdout, stderr := runCLI(tc.args, nil)
				done <- result{code, stdout, stderr}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("%v still running after 30s", tc.args)
			}
			if r.code != tc.code {
				t.Fatalf("%v: exit %d, want %d; stderr %q", tc.args, r.code, tc.code, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Fatalf("%v: stderr %q does not say %q", tc.args, r.stderr, w)
				}
			}
		})
	}
}
