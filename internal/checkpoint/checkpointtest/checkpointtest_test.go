package checkpointtest

import (
	"testing"

	"github.com/flinkmaint/flinkmaint/internal/checkpoint"
)

// The reader reads what the writer wrote: every file, with its kind and
// scope, relative names resolved against the _metadata's dir.
func TestTheReaderReadsWhatTheWriterWrote(t *testing.T) {
	data := Metadata(Spec{CheckpointID: 42, Files: []File{
		{Path: "hdfs://nn:8020/t/checkpoints/job/shared/a", Shared: true, Size: 10},
		{Path: "hdfs://nn:8020/t/checkpoints/job/chk-42/b", Size: 20},
		{Path: "c", Relative: true, Size: 30},
	}})
	md, err := checkpoint.ParseBytes(data, "hdfs://nn:8020/t/checkpoints/job/chk-42/_metadata")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]checkpoint.File{
		"hdfs://nn:8020/t/checkpoints/job/shared/a": {Kind: checkpoint.KindAbsolute, Scope: checkpoint.ScopeShared},
		"hdfs://nn:8020/t/checkpoints/job/chk-42/b": {Kind: checkpoint.KindAbsolute, Scope: checkpoint.ScopePrivate},
		"hdfs://nn:8020/t/checkpoints/job/chk-42/c": {Kind: checkpoint.KindRelative, Scope: checkpoint.ScopePrivate},
	}
	if md.CheckpointID != 42 || len(md.Files) != len(want) {
		t.Fatalf("checkpoint %d, files %+v; want 42 and %d files", md.CheckpointID, md.Files, len(want))
	}
	for _, f := range md.Files {
		w, ok := want[f.Path]
		if !ok || f.Kind != w.Kind || f.Scope != w.Scope {
			t.Errorf("file %+v; want one of %+v", f, want)
		}
	}
}
