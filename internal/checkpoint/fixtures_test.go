package checkpoint

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// expectedFixture mirrors expected.json of a fixture directory, written by an
// independent reader (see SOURCES.md beside the fixtures).
type expectedFixture struct {
	MetadataVersion int   `json:"metadata_version"`
	CheckpointID    int64 `json:"checkpoint_id"`
	NumMasterStates int   `json:"num_master_states"`
	NumOperators    int   `json:"num_operators"`
	Operators       []struct {
		OperatorID     string  `json:"operator_id"`
		Parallelism    int     `json:"parallelism"`
		MaxParallelism int     `json:"max_parallelism"`
		Subtasks       int     `json:"subtasks"`
		Coordinator    bool    `json:"coordinator"`
		FullyFinished  bool    `json:"fully_finished"`
		Name           *string `json:"name"`
		UID            *string `json:"uid"`
	} `json:"operators"`
	HandleTypeCounts map[string]int `json:"handle_type_counts"`
	InlineHandles    int            `json:"inline_bytestream_handles"`
	References       []struct {
		Ctx   string `json:"ctx"`
		Kind  string `json:"kind"`
		Path  string `json:"path"`
		Size  int64  `json:"size"`
		Local string `json:"local"`
	} `json:"references"`
	TrailerBytes          int      `json:"trailer_bytes_after_operator_states"`
	UniqueReferencedPaths []string `json:"unique_referenced_paths"`
	FilesInDirectory      []string `json:"files_in_directory_besides_metadata"`
	UnreferencedFiles     []string `json:"unreferenced_files_in_directory"`
}

type fixture struct {
	dir      string
	metadata []byte
	expected expectedFixture
}

// fixtureDir returns ../shared/fixtures/flink-metadata, skipping the test
// only when the reference material is not beside the repository.
func fixtureDir(tb testing.TB) string {
	tb.Helper()
	shared := sandbox.RequireShared(tb)
	return filepath.Join(shared, "fixtures", "flink-metadata")
}

// loadFixtures reads every fixture directory, keyed by directory name.
func loadFixtures(tb testing.TB) map[string]fixture {
	tb.Helper()
	root := fixtureDir(tb)
	entries, err := os.ReadDir(root)
	if err != nil {
		tb.Fatalf("listing fixtures: %v", err)
	}
	out := map[string]fixture{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		data, err := os.ReadFile(filepath.Join(dir, "_metadata"))
		if err != nil {
			tb.Fatalf("fixture %s: %v", e.Name(), err)
		}
		raw, err := os.ReadFile(filepath.Join(dir, "expected.json"))
		if err != nil {
			tb.Fatalf("fixture %s: %v", e.Name(), err)
		}
		var exp expectedFixture
		if err := json.Unmarshal(raw, &exp); err != nil {
			tb.Fatalf("fixture %s expected.json: %v", e.Name(), err)
		}
		out[e.Name()] = fixture{dir: dir, metadata: data, expected: exp}
	}
	if len(out) != 40 {
		tb.Fatalf("found %d fixture directories under %s, want 40", len(out), root)
	}
	return out
}

var expectedKind = map[string]HandleKind{"relative": KindRelative, "file": KindAbsolute, "segment": KindSegment}

func TestFixtures(t *testing.T) {
	for name, fx := range loadFixtures(t) {
		t.Run(name, func(t *testing.T) {
			exp := fx.expected
			md, err := ParseFile(filepath.Join(fx.dir, "_metadata"))
			if err != nil {
				t.Fatalf("ParseFile: %v", err)
			}
			dir := filepath.ToSlash(fx.dir)
			if md.Dir != dir || md.Location != dir+"/_metadata" {
				t.Errorf("Dir, Location = %q, %q; want %q and its _metadata", md.Dir, md.Location, dir)
			}
			if md.Version != exp.MetadataVersion || md.CheckpointID != exp.CheckpointID {
				t.Errorf("version, checkpoint id = %d, %d; want %d, %d", md.Version, md.CheckpointID, exp.MetadataVersion, exp.CheckpointID)
			}
			if len(md.MasterStates) != exp.NumMasterStates {
				t.Errorf("master states = %d, want %d", len(md.MasterStates), exp.NumMasterStates)
			}
			if len(md.Operators) != exp.NumOperators || len(exp.Operators) != exp.NumOperators {
				t.Fatalf("operators = %d, want %d", len(md.Operators), exp.NumOperators)
			}
			for i, want := range exp.Operators {
				got := md.Operators[i]
				wantSubtasks := want.Subtasks
				if want.Subtasks < 0 {
					wantSubtasks = 0
				}
				if got.ID != want.OperatorID || got.Parallelism != want.Parallelism || got.MaxParallelism != want.MaxParallelism ||
					got.Subtasks != wantSubtasks || got.FullyFinished != (want.Subtasks < 0) || got.CoordinatorState != want.Coordinator {
					t.Errorf("operator %d = %+v, want %+v", i, got, want)
				}
				if want.FullyFinished != got.FullyFinished {
					t.Errorf("operator %d fully finished = %v, want %v", i, got.FullyFinished, want.FullyFinished)
				}
				if want.Name != nil && (got.Name != *want.Name || got.UID != *want.UID) {
					t.Errorf("operator %d name/uid = %q/%q, want %q/%q", i, got.Name, got.UID, *want.Name, *want.UID)
				}
				if want.Name == nil && (got.Name != "" || got.UID != "") {
					t.Errorf("operator %d has name/uid %q/%q in a version %d file", i, got.Name, got.UID, md.Version)
				}
			}
			if !maps.Equal(md.HandleCounts, exp.HandleTypeCounts) {
				t.Errorf("handle counts = %v, want %v", md.HandleCounts, exp.HandleTypeCounts)
			}
			if md.Inline.Handles != exp.InlineHandles {
				t.Errorf("inline handles = %d, want %d", md.Inline.Handles, exp.InlineHandles)
			}
			if md.TrailerBytes != exp.TrailerBytes {
				t.Errorf("trailer bytes = %d, want %d", md.TrailerBytes, exp.TrailerBytes)
			}

			// Every reference, in file order.
			if md.NumReferences() != len(exp.References) {
				t.Fatalf("references = %d, want %d", md.NumReferences(), len(exp.References))
			}
			for i, want := range exp.References {
				got := md.Reference(i)
				if got.Kind != expectedKind[want.Kind] || got.Raw != want.Path || got.Path != dir+"/"+want.Path ||
					got.Size != want.Size || got.Context != want.Ctx || got.LocalName != want.Local {
					t.Errorf("reference %d = %+v, want %+v", i, got, want)
				}
			}

			// The de-duplicated file set equals unique_referenced_paths.
			var gotPaths []string
			for _, f := range md.Files {
				gotPaths = append(gotPaths, f.Path)
			}
			var wantPaths []string
			for _, p := range exp.UniqueReferencedPaths {
				wantPaths = append(wantPaths, dir+"/"+p)
			}
			sort.Strings(wantPaths)
			if !slices.Equal(gotPaths, wantPaths) {
				t.Errorf("files = %v\nwant %v", gotPaths, wantPaths)
			}

			// Every file in the directory is accounted for: referenced, or
			// listed as unreferenced in expected.json.
			entries, err := os.ReadDir(fx.dir)
			if err != nil {
				t.Fatal(err)
			}
			var listed []string
			for _, e := range entries {
				if e.Name() != "_metadata" && e.Name() != "expected.json" {
					listed = append(listed, e.Name())
				}
			}
			if !slices.Equal(listed, sorted(exp.FilesInDirectory)) {
				t.Errorf("directory holds %v, expected.json lists %v", listed, exp.FilesInDirectory)
			}
			referenced := map[string]File{}
			for _, f := range md.Files {
				referenced[f.Path] = f
			}
			unreferenced := []string{}
			for _, name := range listed {
				f, ok := referenced[dir+"/"+name]
				if !ok {
					unreferenced = append(unreferenced, name)
					continue
				}
				st, err := os.Stat(filepath.Join(fx.dir, name))
				if err != nil {
					t.Fatal(err)
				}
				if f.Kind != KindRelative || f.Scope == ScopeShared || f.Size != st.Size() {
					t.Errorf("file %s = %+v; want a relative, non-shared reference of size %d", name, f, st.Size())
				}
			}
			if !slices.Equal(unreferenced, sorted(exp.UnreferencedFiles)) {
				t.Errorf("unreferenced files = %v, want %v", unreferenced, exp.UnreferencedFiles)
			}
			for p := range referenced {
				if _, err := os.Stat(filepath.FromSlash(p)); err != nil {
					t.Errorf("referenced file missing: %v", err)
				}
			}

			// The trailer tells checkpoints from savepoints.
			switch {
			case md.Version <= 3:
				if md.Properties != nil || md.PropertiesNull {
					t.Errorf("version %d file has properties %+v", md.Version, md.Properties)
				}
			case md.PropertiesNull:
				if md.TrailerBytes != 5 {
					t.Errorf("null properties with a %d-byte trailer", md.TrailerBytes)
				}
			case md.Properties == nil:
				t.Errorf("version %d file without properties", md.Version)
			default:
				wantType := snapshotKinds(t)[name]
				if name == "v5-stateprocessor-table-state" {
					// SavepointWriter stores CheckpointProperties of a plain
					// checkpoint (CheckpointType "Checkpoint", FORWARD_BACKWARD).
					wantType = "checkpoint"
				}
				if md.Properties.SnapshotType != wantType {
					t.Logf("properties %+v", *md.Properties)
					t.Errorf("snapshot type = %q, want %q", md.Properties.SnapshotType, wantType)
				}
			}
		})
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// snapshotKinds reads the "snapshot kind" column of the fixture table in
// SOURCES.md ("checkpoint", "savepoint (native)", ...) as checkpoint or savepoint.
func snapshotKinds(tb testing.TB) map[string]string {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(fixtureDir(tb), "SOURCES.md"))
	if err != nil {
		tb.Fatal(err)
	}
	kinds := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		cols := strings.Split(line, "|")
		if len(cols) < 8 || !strings.HasPrefix(strings.TrimSpace(cols[1]), "`") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cols[1]), "`")
		kind := strings.TrimSpace(cols[6])
		switch {
		case strings.HasPrefix(kind, "savepoint"):
			kinds[name] = "savepoint"
		case strings.HasPrefix(kind, "checkpoint"):
			kinds[name] = "checkpoint"
		}
	}
	if len(kinds) != 40 {
		tb.Fatalf("SOURCES.md names the snapshot kind of %d fixtures, want 40", len(kinds))
	}
	return kinds
}
