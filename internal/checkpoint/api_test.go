package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"
)

func TestJSONShape(t *testing.T) {
	data := buildRoundTrip(roundTripCases()["file merging: segments, empty segments, managed directories"], 6)
	md, err := ParseBytes(data, synthLocation)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Version      *int             `json:"version"`
		CheckpointID *int64           `json:"checkpointId"`
		Files        []map[string]any `json:"files"`
		References   any              `json:"References"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if out.Version == nil || *out.Version != 6 || out.CheckpointID == nil || *out.CheckpointID != 42 || len(out.Files) != 2 {
		t.Fatalf("JSON = %s", raw)
	}
	for _, f := range out.Files {
		for _, key := range []string{"path", "kind", "scope", "size", "ranges", "references"} {
			if _, ok := f[key]; !ok {
				t.Errorf("file %v lacks %q", f, key)
			}
		}
	}
	if out.References != nil {
		t.Errorf("per-handle references leaked into JSON")
	}
}

func TestParseReader(t *testing.T) {
	data := buildRoundTrip(roundTripCases()["key-group handle, old form (tag 3) with relative delegate"], 6)
	// One byte at a time exercises the read loop.
	md, err := ParseReader(context.Background(), iotest.OneByteReader(bytes.NewReader(data)), "file:/sp/s1/_metadata")
	if err != nil || len(md.Files) != 1 || md.Files[0].Path != "file:///sp/s1/kg-uuid" {
		t.Fatalf("ParseReader = %+v, %v", md, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ParseReader(ctx, bytes.NewReader(data), "/sp/_metadata"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err = %v", err)
	}
	readErr := errors.New("datanode went away")
	if _, err := ParseReader(context.Background(), iotest.ErrReader(readErr), "/sp/_metadata"); !errors.Is(err, readErr) {
		t.Errorf("read error: err = %v", err)
	}
	if _, err := readAll(context.Background(), bytes.NewReader(data), len(data)-1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the limit: err = %v", err)
	}
	if got, err := readAll(context.Background(), bytes.NewReader(data), len(data)); err != nil || !bytes.Equal(got, data) {
		t.Errorf("at the limit: %d bytes, %v", len(got), err)
	}
}

func TestParseFileErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ParseFile(filepath.Join(dir, "missing", "_metadata")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
	bad := filepath.Join(dir, "_metadata")
	if err := os.WriteFile(bad, []byte("not a checkpoint"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ParseFile(bad)
	var fe *FormatError
	if !errors.As(err, &fe) || !errors.Is(err, ErrBadMagic) || fe.Offset != 0 {
		t.Errorf("garbage file: err = %v", err)
	}
}
