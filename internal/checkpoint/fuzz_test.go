package checkpoint

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/flinkmaint/flinkmaint/internal/testsupport/mdwrite"
)

var updateFuzzCorpus = flag.Bool("update-fuzz-corpus", false, "rewrite testdata/fuzz/FuzzParse seeds from the test writer")

// writerSeeds returns writer outputs keyed by a file-name-safe scenario name.
func writerSeeds() map[string][]byte {
	slug := regexp.MustCompile(`[^a-z0-9]+`)
	seeds := map[string][]byte{}
	for name, tc := range roundTripCases() {
		for v := tc.minVersion; v <= tc.maxVersion; v++ {
			key := fmt.Sprintf("writer-%s-v%d", strings.Trim(slug.ReplaceAllString(strings.ToLower(name), "-"), "-"), v)
			seeds[key] = buildRoundTrip(tc, v)
		}
	}
	for v := 3; v <= 6; v++ {
		seeds[fmt.Sprintf("writer-structure-v%d", v)] = mdwrite.Metadata(mdwrite.Spec{Version: v, CheckpointID: 7, Savepoint: v%2 == 0,
			Masters: []mdwrite.Master{{Version: 1, Name: "hook", Payload: []byte{1, 2, 3}}},
			Operators: []mdwrite.Operator{
				{Name: "Map \x00 😀", UID: "u", ID: mdwrite.OpID(1), Parallelism: 3, MaxParallelism: 128, Coordinator: mdwrite.ByteStream("coord", []byte("state")),
					Subtasks: []mdwrite.Subtask{{Index: 1, Finished: true}, {Index: 2, ManagedOp: mdwrite.OperatorStream(nil, mdwrite.RelativeStream("a", 1))}}},
				{ID: mdwrite.OpID(2), Parallelism: 1, MaxParallelism: 1, FullyFinished: true},
			}})
	}
	seeds["writer-synthetic-small-v6"] = syntheticMetadata(6, 8, 4)
	seeds["writer-synthetic-small-v3"] = syntheticMetadata(3, 4, 3)
	return seeds
}

func encodeCorpusEntry(data []byte) []byte {
	return fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", data)
}

// TestFuzzCorpusUpToDate keeps the committed seed corpus equal to what the
// writer produces (run with -update-fuzz-corpus after changing the writer).
func TestFuzzCorpusUpToDate(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzParse")
	for name, data := range writerSeeds() {
		want := encodeCorpusEntry(data)
		path := filepath.Join(dir, name)
		if *updateFuzzCorpus {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("seed %s missing (run go test -run TestFuzzCorpusUpToDate -update-fuzz-corpus): %v", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("seed %s is stale (run go test -run TestFuzzCorpusUpToDate -update-fuzz-corpus)", name)
		}
	}
}

func FuzzParse(f *testing.F) {
	root := fixtureDir(f)
	entries, err := os.ReadDir(root)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if data, err := os.ReadFile(filepath.Join(root, e.Name(), "_metadata")); err == nil {
			f.Add(data)
		}
	}
	for _, data := range writerSeeds() {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// parseBytes, not ParseBytes: a panic must surface here rather than
		// be turned into ErrInternal by the last-resort recover.
		md, err := parseBytes(data, synthLocation)
		if err != nil {
			var fe *FormatError
			if md != nil || !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) with metadata %v; want a *FormatError and nil metadata", err, err, md != nil)
			}
			if fe.Offset < 0 || fe.Offset > int64(len(data)) {
				t.Fatalf("error offset %d outside the %d-byte input", fe.Offset, len(data))
			}
			return
		}
		if md.Version < MinVersion || md.Version > MaxVersion || md.CheckpointID < 0 {
			t.Fatalf("accepted version %d checkpoint %d", md.Version, md.CheckpointID)
		}
		seen := map[string]bool{}
		for r := range md.References() {
			if n, err := NormalizePath(r.Path); err != nil || n != r.Path {
				t.Fatalf("reference path %q is not normalised (%q, %v)", r.Path, n, err)
			}
			seen[r.Path] = true
		}
		if len(seen) != len(md.Files) {
			t.Fatalf("%d files for %d distinct paths", len(md.Files), len(seen))
		}
		if !slices.IsSortedFunc(md.Files, func(a, b File) int { return strings.Compare(a.Path, b.Path) }) {
			t.Fatal("files not sorted")
		}
		for _, f := range md.Files {
			if !seen[f.Path] || f.References < 1 {
				t.Fatalf("file %+v without references", f)
			}
		}
		// Parsing is deterministic.
		again, err := parseBytes(data, synthLocation)
		if err != nil || !equalFiles(again.Files, md.Files) {
			t.Fatalf("second parse differs: %v", err)
		}
	})
}

func equalFiles(a, b []File) bool {
	return slices.EqualFunc(a, b, func(x, y File) bool {
		return x.Path == y.Path && x.Kind == y.Kind && x.Scope == y.Scope && x.Size == y.Size && x.References == y.References && slices.Equal(x.Ranges, y.Ranges)
	})
}
