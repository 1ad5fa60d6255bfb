package checkpoint

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/flinkmaint/flinkmaint/internal/testsupport/mdwrite"
)

var (
	syntheticOut     = flag.String("synthetic-out", "", "TestWriteSynthetic writes the large synthetic _metadata to this path")
	syntheticVersion = flag.Int("synthetic-version", 6, "format version of the synthetic _metadata (2-6; Flink 1.20 loads 2-4)")
)

const (
	syntheticJob      = "hdfs://namenode:8020/flink/checkpoints/0123456789abcdef0123456789abcdef"
	syntheticLocation = syntheticJob + "/chk-1000/_metadata"
)

// syntheticMetadata builds a RocksDB incremental checkpoint of one keyed
// operator with the given parallelism, each subtask holding sharedPerSubtask
// absolute shared/ SSTs (every 10th subtask also re-lists its neighbour's
// first SST, as after rescaling), a relative meta file, MANIFEST and OPTIONS
// as relative private files and an inline CURRENT; plus a source operator
// with operator state and, for V3+, unaligned channel state.
func syntheticMetadata(version, subtasks, sharedPerSubtask int) []byte {
	keyed := mdwrite.Operator{Name: "KeyedProcess", UID: "keyed-process", ID: mdwrite.OpID(10), Parallelism: int32(subtasks), MaxParallelism: 32768}
	source := mdwrite.Operator{Name: "Source: Kafka", UID: "kafka-source", ID: mdwrite.OpID(11), Parallelism: int32(subtasks), MaxParallelism: 32768}
	perSubtask := 32768 / subtasks
	file := 0
	for s := range subtasks {
		var shared []mdwrite.LocalFile
		for k := range sharedPerSubtask {
			shared = append(shared, mdwrite.LocalFile{Name: fmt.Sprintf("%06d.sst", k+10),
				H: mdwrite.FileStream(int64(64<<20+k), syntheticJob+"/shared/"+mdwrite.UUIDFor(file))})
			file++
		}
		if s%10 == 1 {
			shared = append(shared, mdwrite.LocalFile{Name: "000009.sst", H: mdwrite.FileStream(64<<20, syntheticJob+"/shared/"+mdwrite.UUIDFor(file-2*sharedPerSubtask))})
		}
		private := []mdwrite.LocalFile{
			{Name: "MANIFEST-000004", H: mdwrite.RelativeStream(mdwrite.UUIDFor(1_000_000+3*s), 1024)},
			{Name: "OPTIONS-000009", H: mdwrite.RelativeStream(mdwrite.UUIDFor(1_000_001+3*s), 7000)},
			{Name: "CURRENT", H: mdwrite.ByteStream(syntheticJob+"/chk-1000/"+mdwrite.UUIDFor(1_000_002+3*s), []byte("MANIFEST-000004\n"))},
		}
		keyed.Subtasks = append(keyed.Subtasks, mdwrite.Subtask{Index: int32(s),
			ManagedKeyed: mdwrite.Incremental(11, 1000, fmt.Sprintf("backend-%d", s), int32(s*perSubtask), int32(perSubtask),
				mdwrite.RelativeStream(mdwrite.UUIDFor(2_000_000+s), 4096), shared, private, mdwrite.UUIDFor(3_000_000+s))})
		st := mdwrite.Subtask{Index: int32(s),
			ManagedOp: mdwrite.OperatorStream([]mdwrite.OpStateMeta{{Name: "topic-partition-offset-states", Mode: 1, Offsets: []int64{0, 80}}},
				mdwrite.RelativeStream(mdwrite.UUIDFor(4_000_000+s), 160))}
		if version >= 3 {
			ch := mdwrite.FileStream(2048, syntheticJob+"/chk-1000/"+mdwrite.UUIDFor(5_000_000+s))
			st.OutputChannels = []mdwrite.Channel{{Subtask: int32(s), A: 0, B: 0, Offsets: []int64{0, 512}, Size: 1024, Delegate: ch},
				{Subtask: int32(s), A: 0, B: 1, Offsets: []int64{1024}, Size: 1024, Delegate: ch}}
		}
		source.Subtasks = append(source.Subtasks, st)
	}
	return mdwrite.Metadata(mdwrite.Spec{Version: version, CheckpointID: 1000, Operators: []mdwrite.Operator{source, keyed}})
}

// syntheticFileCount is how many distinct files syntheticMetadata references.
func syntheticFileCount(version, subtasks, sharedPerSubtask int) int {
	n := subtasks * (sharedPerSubtask + 1 /*meta*/ + 2 /*private*/ + 1 /*operator state*/)
	if version >= 3 {
		n += subtasks // channel state file
	}
	return n
}

// TestWriteSynthetic checks the large synthetic checkpoint parses to exactly
// the files it was built with; with -synthetic-out=path it also writes the
// file there (for comparing against Flink's own loader).
func TestWriteSynthetic(t *testing.T) {
	const subtasks, shared = 5000, 20
	version := *syntheticVersion
	if version < 2 || version > 6 {
		t.Fatalf("-synthetic-version=%d: use 2..6", version)
	}
	data := syntheticMetadata(version, subtasks, shared)
	out := *syntheticOut
	if out == "" {
		out = filepath.Join(t.TempDir(), "chk-1000", "_metadata")
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
	}
	md, err := ParseFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := syntheticFileCount(version, subtasks, shared); len(md.Files) != want {
		t.Errorf("files = %d, want %d", len(md.Files), want)
	}
	var nShared int
	for _, f := range md.Files {
		if f.Scope == ScopeShared {
			nShared++
		}
	}
	if nShared != subtasks*shared {
		t.Errorf("shared files = %d, want %d", nShared, subtasks*shared)
	}
	if md.Inline.Handles != subtasks || len(md.Operators) != 2 || md.Operators[1].Subtasks != subtasks {
		t.Errorf("inline %+v, operators %+v", md.Inline, md.Operators)
	}
	t.Logf("wrote %d bytes, %d files, to %s", len(data), len(md.Files), out)
}
