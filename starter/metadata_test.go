package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flinkmaint/flinkmaint/internal/sandbox"
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
