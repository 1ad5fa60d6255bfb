package flinksim

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/flinkmaint/flinkmaint/internal/checkpoint"
)

// Trailers of two real Flink 1.20 _metadata files, copied from the
// reference fixtures v4-flink1.20-hashmap-savepoint and
// v4-flink1.20-rocksdb-checkpoint (../shared/fixtures/flink-metadata):
// a savepoint and a never-retained checkpoint.
const (
	realSavepointTrailer = "" +
		"aced0005737200386f72672e6170616368652e666c696e6b2e72756e74696d652e636865636b706f696e742e43686563" +
		"6b706f696e7450726f7065727469657300000000000000020200085a00106469736361726443616e63656c6c65645a00" +
		"0d646973636172644661696c65645a000f6469736361726446696e69736865645a000f6469736361726453756273756d" +
		"65645a00106469736361726453757370656e6465645a0006666f726365645a0009756e636c61696d65644c000e636865" +
		"636b706f696e74547970657400324c6f72672f6170616368652f666c696e6b2f72756e74696d652f636865636b706f69" +
		"6e742f536e617073686f74547970653b787000000000000100737200316f72672e6170616368652e666c696e6b2e7275" +
		"6e74696d652e636865636b706f696e742e53617665706f696e7454797065a087d308a45814b80200034c000a666f726d" +
		"6174547970657400354c6f72672f6170616368652f666c696e6b2f636f72652f657865637574696f6e2f53617665706f" +
		"696e74466f726d6174547970653b4c00046e616d657400124c6a6176612f6c616e672f537472696e673b4c0014706f73" +
		"74436865636b706f696e74416374696f6e7400484c6f72672f6170616368652f666c696e6b2f72756e74696d652f6368" +
		"65636b706f696e742f53617665706f696e745479706524506f7374436865636b706f696e74416374696f6e3b78707e72" +
		"00336f72672e6170616368652e666c696e6b2e636f72652e657865637574696f6e2e53617665706f696e74466f726d61" +
		"745479706500000000000000001200007872000e6a6176612e6c616e672e456e756d0000000000000000120000787074" +
		"000943414e4f4e4943414c74000953617665706f696e747e7200466f72672e6170616368652e666c696e6b2e72756e74" +
		"696d652e636865636b706f696e742e53617665706f696e745479706524506f7374436865636b706f696e74416374696f" +
		"6e00000000000000001200007871007e00097400044e4f4e45"
	realCheckpointTrailer = "" +
		"aced0005737200386f72672e6170616368652e666c696e6b2e72756e74696d652e636865636b706f696e742e43686563" +
		"6b706f696e7450726f7065727469657300000000000000020200085a00106469736361726443616e63656c6c65645a00" +
		"0d646973636172644661696c65645a000f6469736361726446696e69736865645a000f6469736361726453756273756d" +
		"65645a00106469736361726453757370656e6465645a0006666f726365645a0009756e636c61696d65644c000e636865" +
		"636b706f696e74547970657400324c6f72672f6170616368652f666c696e6b2f72756e74696d652f636865636b706f69" +
		"6e742f536e617073686f74547970653b787001010101010000737200326f72672e6170616368652e666c696e6b2e7275" +
		"6e74696d652e636865636b706f696e742e436865636b706f696e7454797065d6de4f0305ae1d3a0200024c00046e616d" +
		"657400124c6a6176612f6c616e672f537472696e673b4c001473686172696e6746696c65735374726174656779740047" +
		"4c6f72672f6170616368652f666c696e6b2f72756e74696d652f636865636b706f696e742f536e617073686f74547970" +
		"652453686172696e6746696c657353747261746567793b787074000a436865636b706f696e747e7200456f72672e6170" +
		"616368652e666c696e6b2e72756e74696d652e636865636b706f696e742e536e617073686f7454797065245368617269" +
		"6e6746696c6573537472617465677900000000000000001200007872000e6a6176612e6c616e672e456e756d00000000" +
		"000000001200007870740010464f52574152445f4241434b57415244"
)

func TestTrailerMatchesRealFlink(t *testing.T) {
	cases := map[string]struct {
		kind snapshotKind
		want string
	}{
		"savepoint": {savepointKind(false, false, "CANONICAL"), realSavepointTrailer},
		"never-retained checkpoint": {snapshotKind{name: "Checkpoint", flags: [7]bool{true, true, true, true, true, false, false}},
			realCheckpointTrailer},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := hex.EncodeToString(checkpointProperties(tc.kind)); got != tc.want {
				t.Errorf("trailer differs from the one Flink wrote:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestMetadataParses(t *testing.T) {
	ops := []operatorRef{{id: vertexID("job-a", 0), parallelism: 2, maxParallelism: 128}, {id: vertexID("job-a", 1), parallelism: 2, maxParallelism: 128}}
	cases := map[string]struct {
		kind                         snapshotKind
		snapshot, name, action, form string
	}{
		"savepoint":           {savepointKind(false, false, "CANONICAL"), "savepoint", "Savepoint", "NONE", "CANONICAL"},
		"stop":                {savepointKind(true, false, "CANONICAL"), "savepoint", "Suspend Savepoint", "SUSPEND", "CANONICAL"},
		"stop with drain":     {savepointKind(true, true, "NATIVE"), "savepoint", "Terminate Savepoint", "TERMINATE", "NATIVE"},
		"retained checkpoint": {retainedCheckpointKind(), "checkpoint", "Checkpoint", "", ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			const id = 4711
			loc := "file:/tmp/sp/savepoint-0a1b2c-0123456789ab/_metadata"
			md, err := checkpoint.ParseBytes(encodeMetadata(id, ops, tc.kind), loc)
			if err != nil {
				t.Fatalf("ParseBytes: %v", err)
			}
			if md.Version != 4 || md.CheckpointID != id || len(md.Files) != 0 || len(md.Operators) != 2 {
				t.Fatalf("parsed version %d, checkpoint %d, %d files, %d operators; want 4, %d, 0, 2",
					md.Version, md.CheckpointID, len(md.Files), len(md.Operators), id)
			}
			if op := md.Operators[1]; op.ID != hex.EncodeToString(ops[1].id[:]) || op.Parallelism != 2 || op.MaxParallelism != 128 {
				t.Errorf("operator = %+v, want ID %x, parallelism 2 of 128", op, ops[1].id)
			}
			p := md.Properties
			if p == nil || p.SnapshotType != tc.snapshot || p.Name != tc.name || p.PostCheckpointAction != tc.action || p.FormatType != tc.form {
				t.Errorf("properties = %+v, want %s %q action %q format %q", p, tc.snapshot, tc.name, tc.action, tc.form)
			}
		})
	}
}

func TestReadSnapshotHeader(t *testing.T) {
	dir := t.TempDir()
	loc, err := parseLocation(dir)
	if err != nil {
		t.Fatal(err)
	}
	sp, cp := loc.join("sp"), loc.join("chk-9")
	if err := writeSnapshot(sp.local, encodeMetadata(42, nil, savepointKind(true, false, "CANONICAL"))); err != nil {
		t.Fatal(err)
	}
	if err := writeSnapshot(cp.local, encodeMetadata(9, nil, retainedCheckpointKind())); err != nil {
		t.Fatal(err)
	}
	if h, msg := readSnapshotHeader(sp); msg != "" || h != (snapshotHeader{checkpointID: 42, savepoint: true}) {
		t.Errorf("savepoint header = %+v, %q", h, msg)
	}
	if h, msg := readSnapshotHeader(cp); msg != "" || h != (snapshotHeader{checkpointID: 9}) {
		t.Errorf("checkpoint header = %+v, %q", h, msg)
	}
	if _, msg := readSnapshotHeader(loc.join("missing")); msg == "" {
		t.Error("missing snapshot: no error")
	}
	if err := os.WriteFile(filepath.Join(loc.local, "_metadata"), []byte("not a snapshot at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, msg := readSnapshotHeader(loc); msg == "" {
		t.Error("garbage _metadata: no error")
	}
}

func TestParseLocation(t *testing.T) {
	cases := map[string]struct {
		in, qualified, local string
		err, unsupported     bool
	}{
		"plain path":        {in: "/data/sp/", qualified: "file:/data/sp", local: "/data/sp"},
		"file triple slash": {in: "file:///data/sp", qualified: "file:/data/sp", local: "/data/sp"},
		"file short form":   {in: "file:/data//sp", qualified: "file:/data/sp", local: "/data/sp"},
		"file localhost":    {in: "file://localhost/data", qualified: "file:/data", local: "/data"},
		"hdfs":              {in: "hdfs://nn:8020/sp/", qualified: "hdfs://nn:8020/sp", unsupported: true},
		"relative":          {in: "sp/x", err: true},
		"dot dot":           {in: "/data/../etc", err: true},
		"file with a host":  {in: "file://other/data", err: true},
		"empty":             {in: "", err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			loc, err := parseLocation(tc.in)
			var unsupported errUnsupportedScheme
			isUnsupported := err != nil && errors.As(err, &unsupported)
			switch {
			case tc.unsupported:
				if !isUnsupported || loc.qualified != tc.qualified || loc.local != "" {
					t.Errorf("parseLocation(%q) = %+v, %v; want unsupported scheme, %s", tc.in, loc, err, tc.qualified)
				}
			case tc.err:
				if err == nil || isUnsupported {
					t.Errorf("parseLocation(%q) = %+v; want an error", tc.in, loc)
				}
			case err != nil || loc.qualified != tc.qualified || loc.local != filepath.FromSlash(tc.local):
				t.Errorf("parseLocation(%q) = %+v, %v; want %s at %s", tc.in, loc, err, tc.qualified, tc.local)
			}
		})
	}
}
