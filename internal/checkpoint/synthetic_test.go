package checkpoint

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
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
	keyed := operatorSpec{name: "KeyedProcess", uid: "keyed-process", id: opID(10), parallelism: int32(subtasks), maxParallelism: 32768}
	source := operatorSpec{name: "Source: Kafka", uid: "kafka-source", id: opID(11), parallelism: int32(subtasks), maxParallelism: 32768}
	perSubtask := 32768 / subtasks
	file := 0
	for s := range subtasks {
		var shared []localFile
		for k := range sharedPerSubtask {
			shared = append(shared, localFile{fmt.Sprintf("%06d.sst", k+10),
				fileStream(int64(64<<20+k), syntheticJob+"/shared/"+uuidFor(file))})
			file++
		}
		if s%10 == 1 {
			shared = append(shared, localFile{"000009.sst", fileStream(64<<20, syntheticJob+"/shared/"+uuidFor(file-2*sharedPerSubtask))})
		}
		private := []localFile{
			{"MANIFEST-000004", relativeStream(uuidFor(1_000_000+3*s), 1024)},
			{"OPTIONS-000009", relativeStream(uuidFor(1_000_001+3*s), 7000)},
			{"CURRENT", byteStream(syntheticJob+"/chk-1000/"+uuidFor(1_000_002+3*s), []byte("MANIFEST-000004\n"))},
		}
		keyed.subtasks = append(keyed.subtasks, subtaskSpec{index: int32(s),
			managedKeyed: incremental(11, 1000, fmt.Sprintf("backend-%d", s), int32(s*perSubtask), int32(perSubtask),
				relativeStream(uuidFor(2_000_000+s), 4096), shared, private, uuidFor(3_000_000+s))})
		st := subtaskSpec{index: int32(s),
			managedOp: operatorStream([]opStateMeta{{name: "topic-partition-offset-states", mode: 1, offsets: []int64{0, 80}}},
				relativeStream(uuidFor(4_000_000+s), 160))}
		if version >= 3 {
			ch := fileStream(2048, syntheticJob+"/chk-1000/"+uuidFor(5_000_000+s))
			st.outputChans = []channel{{subtask: int32(s), a: 0, b: 0, offsets: []int64{0, 512}, size: 1024, delegate: ch},
				{subtask: int32(s), a: 0, b: 1, offsets: []int64{1024}, size: 1024, delegate: ch}}
		}
		source.subtasks = append(source.subtasks, st)
	}
	return writeMetadata(metadataSpec{version: version, checkpointID: 1000, operators: []operatorSpec{source, keyed}})
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
