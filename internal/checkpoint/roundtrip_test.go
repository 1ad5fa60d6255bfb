package checkpoint

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/flinkmaint/flinkmaint/internal/testsupport/mdwrite"
)

const (
	synthLocation = "hdfs://NameNode:8020/flink/cp/job1/chk-42/_metadata"
	synthDir      = "hdfs://namenode:8020/flink/cp/job1/chk-42"
	sharedDir     = "hdfs://namenode:8020/flink/cp/job1/shared"
)

type wantRef struct {
	path  string
	kind  HandleKind
	scope Scope
	size  int64
	rng   *ByteRange
	ctx   string
	local string
}

type roundTripCase struct {
	minVersion, maxVersion int
	subtask                func(version int) mdwrite.Subtask
	want                   []wantRef
	wantDirs               []ManagedDir
	wantInline             int
	wantFiles              int
}

func roundTripCases() map[string]roundTripCase {
	opState := []mdwrite.OpStateMeta{{Name: "source-offsets", Mode: 0, Offsets: []int64{0, 17}}, {Name: "broadcast", Mode: 2, Offsets: []int64{40}}}
	return map[string]roundTripCase{
		"incremental RocksDB: absolute shared SSTs, relative private files, inline CURRENT": {
			minVersion: 2, maxVersion: 6,
			subtask: func(int) mdwrite.Subtask {
				return mdwrite.Subtask{Index: 0, ManagedKeyed: mdwrite.Incremental(11, 42, "backend-1", 0, 128,
					mdwrite.RelativeStream("meta-uuid", 505),
					[]mdwrite.LocalFile{
						{Name: "000010.sst", H: mdwrite.FileStream(982, "hdfs://namenode:8020/flink/cp/job1/shared/sst-a")},
						{Name: "000011.sst", H: mdwrite.FileStream(-1, "hdfs://NAMENODE:8020//flink/cp/job1/shared//sst-b/")},
						// CLAIM restore: a shared file in the previous job's directory.
						{Name: "000007.sst", H: mdwrite.FileStream(4096, "hdfs://namenode:8020/flink/cp/job0/shared/sst-old")},
					},
					[]mdwrite.LocalFile{
						{Name: "MANIFEST-000004", H: mdwrite.RelativeStream("manifest-uuid", 120)},
						{Name: "CURRENT", H: mdwrite.ByteStream("hdfs://namenode:8020/flink/cp/job1/chk-42/never-written", []byte("MANIFEST-000004\n"))},
					}, "handle-1")}
			},
			want: []wantRef{
				{synthDir + "/meta-uuid", KindRelative, ScopeExclusive, 505, nil, "managed-keyed-incremental-meta", ""},
				{sharedDir + "/sst-a", KindAbsolute, ScopeShared, 982, nil, "managed-keyed-incremental-shared", "000010.sst"},
				{sharedDir + "/sst-b", KindAbsolute, ScopeShared, -1, nil, "managed-keyed-incremental-shared", "000011.sst"},
				{"hdfs://namenode:8020/flink/cp/job0/shared/sst-old", KindAbsolute, ScopeShared, 4096, nil, "managed-keyed-incremental-shared", "000007.sst"},
				{synthDir + "/manifest-uuid", KindRelative, ScopePrivate, 120, nil, "managed-keyed-incremental-private", "MANIFEST-000004"},
			},
			wantInline: 1, wantFiles: 5,
		},
		"incremental handle, old form (tag 5)": {
			minVersion: 2, maxVersion: 6,
			subtask: func(int) mdwrite.Subtask {
				return mdwrite.Subtask{Index: 0, RawKeyed: mdwrite.Incremental(5, 7, "b", 0, 4, mdwrite.FileStream(10, "/flink/cp/job1/chk-42/meta"),
					[]mdwrite.LocalFile{{Name: "1.sst", H: mdwrite.FileStream(20, "/flink/cp/job1/shared/1.sst")}}, nil, "")}
			},
			want: []wantRef{
				{"/flink/cp/job1/chk-42/meta", KindAbsolute, ScopeExclusive, 10, nil, "raw-keyed-incremental-meta", ""},
				{"/flink/cp/job1/shared/1.sst", KindAbsolute, ScopeShared, 20, nil, "raw-keyed-incremental-shared", "1.sst"},
			},
			wantFiles: 2,
		},
		"key-group handles with absolute delegates (entropy injection, file: paths)": {
			minVersion: 2, maxVersion: 6,
			subtask: func(int) mdwrite.Subtask {
				return mdwrite.Subtask{Index: 0,
					ManagedKeyed: mdwrite.KeyGroups(12, 0, []int64{0, 10, 20}, mdwrite.FileStream(30, "file:/tmp/cp/chk-42/kg"), "id-1"),
					RawKeyed:     mdwrite.KeyGroups(7, 3, []int64{0}, mdwrite.FileStream(5, "file:///tmp/cp/chk-42/kg"), ""),
					ManagedOp:    mdwrite.OperatorStream(opState, mdwrite.KeyGroupsStream(0, []int64{1, 2}, mdwrite.FileStream(8, "/plain/dir/op"))),
					RawOp:        mdwrite.OperatorStream(nil, mdwrite.NullStream()),
				}
			},
			want: []wantRef{
				{"/plain/dir/op", KindAbsolute, ScopeExclusive, 8, nil, "managed-operator", ""},
				{"file:///tmp/cp/chk-42/kg", KindAbsolute, ScopeExclusive, 30, nil, "managed-keyed-keygroups", ""},
				{"file:///tmp/cp/chk-42/kg", KindAbsolute, ScopeExclusive, 5, nil, "raw-keyed-savepoint-keygroups", ""},
			},
			wantFiles: 2,
		},
		"key-group handle, old form (tag 3) with relative delegate": {
			minVersion: 2, maxVersion: 6,
			subtask: func(int) mdwrite.Subtask {
				return mdwrite.Subtask{Index: 0, ManagedKeyed: mdwrite.KeyGroups(3, 0, []int64{0}, mdwrite.RelativeStream("kg-uuid", 77), "")}
			},
			want:      []wantRef{{synthDir + "/kg-uuid", KindRelative, ScopeExclusive, 77, nil, "managed-keyed-keygroups", ""}},
			wantFiles: 1,
		},
		"file merging: segments, empty segments, managed directories": {
			minVersion: 2, maxVersion: 6,
			subtask: func(int) mdwrite.Subtask {
				phys := "hdfs://namenode:8020/flink/cp/job1/taskowned/job_j1_tm_tm1/phys-1"
				sharedPhys := "hdfs://namenode:8020/flink/cp/job1/shared/job_j1_op_o1_0_2/phys-2"
				return mdwrite.Subtask{Index: 0,
					ManagedOp: mdwrite.FileMergingOperator(opState, "hdfs://namenode:8020/flink/cp/job1/taskowned/job_j1_tm_tm1",
						"hdfs://namenode:8020/flink/cp/job1/shared/job_j1_op_o1_0_2", false, mdwrite.SegmentStream(100, 50, 0, phys, "logical-1")),
					RawOp: mdwrite.FileMergingOperator(nil, "hdfs://namenode:8020/flink/cp/job1/taskowned/job_j1_tm_tm1/",
						"hdfs://namenode:8020/flink/cp/job1/shared/job_j1_op_o1_0_2", true, mdwrite.EmptySegment()),
					ManagedKeyed: mdwrite.Incremental(11, 42, "b", 0, 2, mdwrite.SegmentStream(0, 100, 0, phys, "logical-2"),
						[]mdwrite.LocalFile{
							{Name: "1.sst", H: mdwrite.SegmentStream(0, 400, 1, sharedPhys, "l3")},
							{Name: "2.sst", H: mdwrite.SegmentStream(400, 300, 1, sharedPhys, "l4")},
							{Name: "3.sst", H: mdwrite.SegmentStream(0, 400, 1, sharedPhys, "l5")}, // same range again
							{Name: "4.sst", H: mdwrite.EmptySegment()},
						}, nil, "id"),
				}
			},
			want: []wantRef{
				{"hdfs://namenode:8020/flink/cp/job1/taskowned/job_j1_tm_tm1/phys-1", KindSegment, ScopeTaskOwned, 50, &ByteRange{100, 50}, "managed-operator", ""},
				{"hdfs://namenode:8020/flink/cp/job1/taskowned/job_j1_tm_tm1/phys-1", KindSegment, ScopeTaskOwned, 100, &ByteRange{0, 100}, "managed-keyed-incremental-meta", ""},
				{"hdfs://namenode:8020/flink/cp/job1/shared/job_j1_op_o1_0_2/phys-2", KindSegment, ScopeShared, 400, &ByteRange{0, 400}, "managed-keyed-incremental-shared", "1.sst"},
				{"hdfs://namenode:8020/flink/cp/job1/shared/job_j1_op_o1_0_2/phys-2", KindSegment, ScopeShared, 300, &ByteRange{400, 300}, "managed-keyed-incremental-shared", "2.sst"},
				{"hdfs://namenode:8020/flink/cp/job1/shared/job_j1_op_o1_0_2/phys-2", KindSegment, ScopeShared, 400, &ByteRange{0, 400}, "managed-keyed-incremental-shared", "3.sst"},
			},
			wantDirs: []ManagedDir{
				{"hdfs://namenode:8020/flink/cp/job1/shared/job_j1_op_o1_0_2", ScopeShared},
				{"hdfs://namenode:8020/flink/cp/job1/taskowned/job_j1_tm_tm1", ScopeTaskOwned},
			},
			wantFiles: 2,
		},
		"changelog backend: materialized incremental, DSTL files, in-memory changes": {
			minVersion: 2, maxVersion: 6,
			subtask: func(int) mdwrite.Subtask {
				dstl := "hdfs://namenode:8020/dstl/job1/dstl/"
				return mdwrite.Subtask{Index: 0, ManagedKeyed: mdwrite.Changelog(14, 0, 128,
					[]mdwrite.Handle{mdwrite.Incremental(11, 40, "b", 0, 128, mdwrite.RelativeStream("m", 1), []mdwrite.LocalFile{{Name: "9.sst", H: mdwrite.FileStream(9, sharedDir+"/9")}}, nil, "i"), mdwrite.NullKeyed()},
					[]mdwrite.Handle{
						mdwrite.ChangelogFiles(13, 0, 128, []mdwrite.Increment{{Offset: 0, H: mdwrite.FileStream(100, dstl+"f1")}, {Offset: 100, H: mdwrite.FileStream(100, dstl+"f1")}, {Offset: 0, H: mdwrite.ByteStream("x", []byte{1})}}, "c1", "filesystem"),
						mdwrite.ChangelogFiles(10, 0, 128, []mdwrite.Increment{{Offset: 5, H: mdwrite.FileStream(-1, dstl+"f2")}}, "c2", ""),
						mdwrite.InMemoryChangelog(0, 128, 1, 5, []mdwrite.Change{{KeyGroup: 3, Data: []byte("abc")}, {KeyGroup: 7, Data: nil}}, "c3"),
					}, 3, 42, "cl")}
			},
			want: []wantRef{
				{synthDir + "/m", KindRelative, ScopeExclusive, 1, nil, "managed-keyed-changelog-materialized-incremental-meta", ""},
				{sharedDir + "/9", KindAbsolute, ScopeShared, 9, nil, "managed-keyed-changelog-materialized-incremental-shared", "9.sst"},
				{"hdfs://namenode:8020/dstl/job1/dstl/f1", KindAbsolute, ScopeShared, 100, nil, "managed-keyed-changelog-nonmaterialized-changelog-increment", ""},
				{"hdfs://namenode:8020/dstl/job1/dstl/f1", KindAbsolute, ScopeShared, 100, nil, "managed-keyed-changelog-nonmaterialized-changelog-increment", ""},
				{"hdfs://namenode:8020/dstl/job1/dstl/f2", KindAbsolute, ScopeShared, -1, nil, "managed-keyed-changelog-nonmaterialized-changelog-increment", ""},
			},
			wantInline: 1, wantFiles: 4,
		},
		"changelog handle, old form (tag 8)": {
			minVersion: 2, maxVersion: 6,
			subtask: func(int) mdwrite.Subtask {
				return mdwrite.Subtask{Index: 0, ManagedKeyed: mdwrite.Changelog(8, 0, 1, nil,
					[]mdwrite.Handle{mdwrite.ChangelogFiles(10, 0, 1, []mdwrite.Increment{{Offset: 0, H: mdwrite.FileStream(1, "/dstl/a")}}, "c", "")}, 1, 0, "x")}
			},
			want:      []wantRef{{"/dstl/a", KindAbsolute, ScopeShared, 1, nil, "managed-keyed-changelog-nonmaterialized-changelog-increment", ""}},
			wantFiles: 1,
		},
		"unaligned checkpoint channel state (V1 serializer)": {
			minVersion: 3, maxVersion: 5,
			subtask: func(int) mdwrite.Subtask {
				f := mdwrite.FileStream(300, "hdfs://namenode:8020/flink/cp/job1/chk-42/channels")
				return mdwrite.Subtask{Index: 1,
					InputChannels:  []mdwrite.Channel{{Subtask: 1, A: 0, B: 0, Offsets: []int64{0, 10}, Size: 20, Delegate: f}, {Subtask: 1, A: 0, B: 1, Offsets: []int64{20}, Size: 30, Delegate: f}},
					OutputChannels: []mdwrite.Channel{{Subtask: 1, A: 0, B: 3, Offsets: nil, Size: 0, Delegate: mdwrite.RelativeStream("out-uuid", 64)}},
				}
			},
			want: []wantRef{
				{synthDir + "/channels", KindAbsolute, ScopeExclusive, 300, nil, "input-channel", ""},
				{synthDir + "/channels", KindAbsolute, ScopeExclusive, 300, nil, "input-channel", ""},
				{synthDir + "/out-uuid", KindRelative, ScopeExclusive, 64, nil, "result-subpartition", ""},
			},
			wantFiles: 2,
		},
		"unaligned checkpoint channel state (V2 serializer, merged handles)": {
			minVersion: 6, maxVersion: 6,
			subtask: func(int) mdwrite.Subtask {
				f := mdwrite.RelativeStream("ch-uuid", 500)
				return mdwrite.Subtask{Index: 1,
					InputChannels:  []mdwrite.Channel{{Subtask: 1, A: 1, B: 2, Offsets: []int64{0}, Size: 20, Delegate: f}, {Merged: true, Subtask: 1, Size: 480, Delegate: f, Info: []byte{1, 2, 3}}},
					OutputChannels: []mdwrite.Channel{{Merged: true, Subtask: 1, Size: 7, Delegate: mdwrite.SegmentStream(7, 7, 0, "/tm/seg", "l")}, {Subtask: 1, Delegate: mdwrite.ByteStream("n", []byte("xy"))}},
				}
			},
			want: []wantRef{
				{synthDir + "/ch-uuid", KindRelative, ScopeExclusive, 500, nil, "input-channel", ""},
				{synthDir + "/ch-uuid", KindRelative, ScopeExclusive, 500, nil, "input-channel", ""},
				{"/tm/seg", KindSegment, ScopeTaskOwned, 7, &ByteRange{7, 7}, "result-subpartition", ""},
			},
			wantInline: 1, wantFiles: 2,
		},
	}
}

func buildRoundTrip(tc roundTripCase, v int) []byte {
	op := mdwrite.Operator{Name: "Keyed Process -> Sink", UID: "proc-uid", ID: mdwrite.OpID(1), Parallelism: 2, MaxParallelism: 128,
		Subtasks: []mdwrite.Subtask{tc.subtask(v)}}
	return mdwrite.Metadata(mdwrite.Spec{Version: v, CheckpointID: 42, Operators: []mdwrite.Operator{op}})
}

func TestRoundTripSyntheticHandles(t *testing.T) {
	for name, tc := range roundTripCases() {
		for v := tc.minVersion; v <= tc.maxVersion; v++ {
			t.Run(name+"/v"+string(rune('0'+v)), func(t *testing.T) {
				data := buildRoundTrip(tc, v)
				md, err := ParseBytes(data, synthLocation)
				if err != nil {
					t.Fatalf("ParseBytes: %v", err)
				}
				if md.Version != v || md.CheckpointID != 42 || md.Dir != synthDir || md.Location != synthDir+"/_metadata" {
					t.Errorf("header = v%d chk %d dir %q loc %q", md.Version, md.CheckpointID, md.Dir, md.Location)
				}
				if len(md.Operators) != 1 || md.Operators[0].Parallelism != 2 || md.Operators[0].MaxParallelism != 128 ||
					md.Operators[0].Subtasks != 1 || md.Operators[0].ID != "9e3779b97f4a7c150000000000000002" {
					t.Errorf("operators = %+v", md.Operators)
				}
				if wantName := map[bool]string{true: "Keyed Process -> Sink", false: ""}[v >= 5]; md.Operators[0].Name != wantName {
					t.Errorf("operator name = %q, want %q", md.Operators[0].Name, wantName)
				}
				if md.NumReferences() != len(tc.want) {
					t.Fatalf("got %d references, want %d: %+v", md.NumReferences(), len(tc.want), slices.Collect(md.References()))
				}
				for i, w := range tc.want {
					r := md.Reference(i)
					got := wantRef{r.Path, r.Kind, r.Scope, r.Size, r.Range, r.Context, r.LocalName}
					if got.path != w.path || got.kind != w.kind || got.scope != w.scope || got.size != w.size ||
						got.ctx != w.ctx || got.local != w.local || (got.rng == nil) != (w.rng == nil) || (w.rng != nil && *got.rng != *w.rng) {
						t.Errorf("reference %d = %+v\n           want %+v", i, got, w)
					}
					if r.OperatorID != md.Operators[0].ID || r.Subtask < 0 {
						t.Errorf("reference %d context operator %q subtask %d", i, r.OperatorID, r.Subtask)
					}
				}
				if len(md.Files) != tc.wantFiles {
					t.Errorf("files = %+v, want %d", md.Files, tc.wantFiles)
				}
				checkFilesConsistent(t, md)
				if !slices.Equal(md.ManagedDirs, tc.wantDirs) {
					t.Errorf("managed dirs = %+v, want %+v", md.ManagedDirs, tc.wantDirs)
				}
				if md.Inline.Handles != tc.wantInline {
					t.Errorf("inline handles = %d, want %d", md.Inline.Handles, tc.wantInline)
				}
				if v >= 4 && (md.Properties == nil || md.Properties.SnapshotType != "checkpoint" || md.Properties.SharingFilesStrategy != "FORWARD_BACKWARD" || !md.Properties.DiscardSubsumed) {
					t.Errorf("properties = %+v", md.Properties)
				}
			})
		}
	}
}

// checkFilesConsistent checks Files is exactly the de-duplicated References.
func checkFilesConsistent(t *testing.T, md *Metadata) {
	t.Helper()
	byPath := map[string][]Reference{}
	for r := range md.References() {
		byPath[r.Path] = append(byPath[r.Path], r)
	}
	if len(byPath) != len(md.Files) {
		t.Errorf("%d files for %d distinct referenced paths", len(md.Files), len(byPath))
	}
	for i, f := range md.Files {
		if i > 0 && md.Files[i-1].Path >= f.Path {
			t.Errorf("files not sorted/unique at %q", f.Path)
		}
		refs := byPath[f.Path]
		if len(refs) != f.References {
			t.Errorf("file %s: References = %d, want %d", f.Path, f.References, len(refs))
		}
		var ranges []ByteRange
		for _, r := range refs {
			if r.Range != nil && !slices.Contains(ranges, *r.Range) {
				ranges = append(ranges, *r.Range)
			}
		}
		if len(ranges) != len(f.Ranges) {
			t.Errorf("file %s: ranges %v, want the %d distinct %v", f.Path, f.Ranges, len(ranges), ranges)
		}
	}
}

func TestWriterTrailerMatchesFlink(t *testing.T) {
	cases := map[string]struct {
		fixture   string
		savepoint bool
	}{
		"retained checkpoint": {"v4-flink1.17-hashmap-changelog-checkpoint", false},
		"canonical savepoint": {"v4-flink1.20-hashmap-savepoint", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(fixtureDir(t), tc.fixture, "_metadata"))
			if err != nil {
				t.Fatal(err)
			}
			want := mdwrite.CheckpointProperties(tc.savepoint)
			if !bytes.HasSuffix(data, want) {
				t.Fatalf("writer trailer (%d bytes) is not the trailer Flink wrote in %s", len(want), tc.fixture)
			}
		})
	}
}

func TestModifiedUTF8(t *testing.T) {
	cases := map[string]struct {
		encoded []byte
		want    string
	}{
		"ascii":                  {[]byte("chk-1/uuid"), "chk-1/uuid"},
		"NUL as C0 80":           {[]byte{'a', 0xC0, 0x80, 'b'}, "a\x00b"},
		"raw NUL accepted":       {[]byte{'a', 0x00}, "a\x00"},
		"two-byte":               {[]byte{0xC3, 0xA9}, "é"},
		"three-byte":             {[]byte{0xE6, 0xB5, 0x81}, "流"},
		"surrogate pair":         {[]byte{0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80}, "😀"},
		"lone high surrogate":    {[]byte{0xED, 0xA0, 0xBD, 'x'}, "\uFFFDx"},
		"lone low surrogate":     {[]byte{0xED, 0xB8, 0x80}, "\uFFFD"},
		"writer round trip text": {mdwrite.EncodeModifiedUTF8("Op \x00 😀 流 é"), "Op \x00 😀 流 é"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, bad := decodeModifiedUTF8(tc.encoded)
			if bad >= 0 || got != tc.want {
				t.Errorf("decode(% x) = %q, bad at %d; want %q", tc.encoded, got, bad, tc.want)
			}
		})
	}
	invalid := map[string][]byte{
		"four-byte UTF-8":      {0xF0, 0x9F, 0x98, 0x80},
		"lone continuation":    {'a', 0x80},
		"truncated two-byte":   {0xC3},
		"truncated three-byte": {0xE6, 0xB5},
		"bad second byte":      {0xC3, 0x41},
		"bad third byte":       {0xE6, 0xB5, 0x41},
	}
	for name, b := range invalid {
		t.Run("invalid/"+name, func(t *testing.T) {
			if s, bad := decodeModifiedUTF8(b); bad < 0 {
				t.Errorf("decode(% x) = %q, want an error", b, s)
			}
		})
	}
}

func TestOperatorNamesInModifiedUTF8(t *testing.T) {
	for _, v := range []int{5, 6} {
		op := mdwrite.Operator{Name: "Map \x00 😀 流", UID: "uid-é", ID: mdwrite.OpID(3), Parallelism: 1, MaxParallelism: 1}
		md, err := ParseBytes(mdwrite.Metadata(mdwrite.Spec{Version: v, CheckpointID: 1, Operators: []mdwrite.Operator{op}}), "")
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if md.Operators[0].Name != op.Name || md.Operators[0].UID != op.UID {
			t.Errorf("v%d: name/uid = %q/%q, want %q/%q", v, md.Operators[0].Name, md.Operators[0].UID, op.Name, op.UID)
		}
	}
}

func TestStructureRoundTrip(t *testing.T) {
	for v := 3; v <= 6; v++ {
		spec := mdwrite.Spec{Version: v, CheckpointID: 7, Savepoint: true,
			Masters: []mdwrite.Master{{Version: 1, Name: "hook", Payload: []byte{1, 2, 3}}},
			Operators: []mdwrite.Operator{
				{ID: mdwrite.OpID(1), Parallelism: 3, MaxParallelism: 128, Coordinator: mdwrite.ByteStream("coord", []byte("state")),
					Subtasks: []mdwrite.Subtask{{Index: 1, Finished: true}, {Index: 2, ManagedOp: mdwrite.OperatorStream(nil, mdwrite.RelativeStream("a", 1))}}},
				{ID: mdwrite.OpID(2), Parallelism: 1, MaxParallelism: 1, FullyFinished: true},
			}}
		md, err := ParseBytes(mdwrite.Metadata(spec), "/sp/savepoint-1/_metadata")
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		op0, op1 := md.Operators[0], md.Operators[1]
		if !op0.CoordinatorState || op0.Subtasks != 2 || op0.FinishedSubtasks != 1 || op0.FullyFinished || !op1.FullyFinished || op1.Subtasks != 0 {
			t.Errorf("v%d operators = %+v", v, md.Operators)
		}
		if len(md.MasterStates) != 1 || md.MasterStates[0] != (MasterState{Name: "hook", Version: 1, PayloadBytes: 3}) {
			t.Errorf("v%d master states = %+v", v, md.MasterStates)
		}
		if len(md.Files) != 1 || md.Files[0].Path != "/sp/savepoint-1/a" || md.Inline.Handles != 1 || md.Inline.Bytes != 5 {
			t.Errorf("v%d files %+v inline %+v", v, md.Files, md.Inline)
		}
		if v >= 4 && (md.Properties == nil || md.Properties.SnapshotType != "savepoint" || md.Properties.FormatType != "CANONICAL" || md.Properties.Name != "Savepoint") {
			t.Errorf("v%d properties = %+v", v, md.Properties)
		}
	}
}
