package checkpoint

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/flinkmaint/flinkmaint/internal/testsupport/mdwrite"
)

// mustFail parses data and checks it fails with a *FormatError of kind.
func mustFail(t *testing.T, data []byte, location string, kind error) *FormatError {
	t.Helper()
	md, err := ParseBytes(data, location)
	if md != nil {
		t.Fatalf("got metadata with %d files alongside error %v", len(md.Files), err)
	}
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *FormatError", err, err)
	}
	if !errors.Is(err, kind) {
		t.Fatalf("error %v is not %v", err, kind)
	}
	if fe.Offset < 0 || fe.Offset > int64(len(data)) || fe.Expected == "" {
		t.Fatalf("error %v has offset %d of %d bytes / empty expectation", err, fe.Offset, len(data))
	}
	return fe
}

func truncationInputs(t *testing.T) map[string][]byte {
	inputs := map[string][]byte{}
	for _, name := range []string{
		"v2-flink1.8-operatorstate-complexkeyed",
		"v3-flink1.15-hashmap-checkpoint",
		"v4-flink1.17-hashmap-changelog-checkpoint",
		"v5-stateprocessor-table-state-nulls",
		"v6-flink2.2-broadcast-rocksdb-checkpoint",
	} {
		data, err := os.ReadFile(filepath.Join(fixtureDir(t), name, "_metadata"))
		if err != nil {
			t.Fatal(err)
		}
		inputs["fixture "+name] = data
	}
	for name, tc := range roundTripCases() {
		inputs["synthetic "+name] = buildRoundTrip(tc, tc.maxVersion)
	}
	return inputs
}

func TestTruncationAtEveryOffset(t *testing.T) {
	for name, data := range truncationInputs(t) {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseBytes(data, "/cp/chk-1/_metadata"); err != nil {
				t.Fatalf("untruncated input: %v", err)
			}
			for cut := range len(data) {
				md, err := ParseBytes(data[:cut], "/cp/chk-1/_metadata")
				var fe *FormatError
				if md != nil || !errors.As(err, &fe) {
					t.Fatalf("cut at %d of %d: metadata %v, error %v", cut, len(data), md != nil, err)
				}
				if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrOutOfRange) {
					t.Fatalf("cut at %d: %v, want ErrTruncated or ErrOutOfRange", cut, err)
				}
				if fe.Offset > int64(cut) {
					t.Fatalf("cut at %d: error offset %d beyond the input", cut, fe.Offset)
				}
			}
		})
	}
}

func header(version int32) []byte {
	b := binary.BigEndian.AppendUint32(nil, MetadataMagic)
	return binary.BigEndian.AppendUint32(b, uint32(version))
}

func TestHeaderErrors(t *testing.T) {
	cases := map[string]struct {
		data   []byte
		kind   error
		offset int64
	}{
		"empty":             {nil, ErrTruncated, 0},
		"bad magic":         {append([]byte{0xCA, 0xFE, 0xBA, 0xBE}, header(3)[4:]...), ErrBadMagic, 0},
		"version 1":         {header(1), ErrUnknownVersion, 4},
		"version 0":         {header(0), ErrUnknownVersion, 4},
		"version 7":         {header(7), ErrUnknownVersion, 4},
		"version -1":        {header(-1), ErrUnknownVersion, 4},
		"no checkpoint id":  {header(3), ErrTruncated, 8},
		"negative chk id":   {binary.BigEndian.AppendUint64(header(3), 1<<63), ErrOutOfRange, 8},
		"huge master count": {binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(header(3), 1), 0x7FFFFFFF), ErrOutOfRange, 16},
		"negative operator count": {binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(header(3), 1), 0), 0xFFFFFFFF),
			ErrOutOfRange, 20},
		"huge operator count": {binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(header(6), 1), 0), 0x7FFFFFFF),
			ErrOutOfRange, 20},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fe := mustFail(t, tc.data, "", tc.kind)
			if fe.Offset != tc.offset {
				t.Errorf("offset = %d, want %d (%v)", fe.Offset, tc.offset, fe)
			}
		})
	}
}

func rawTag(tag byte) mdwrite.Handle { return func(w *mdwrite.Writer) { w.I8(tag) } }

func oneSubtask(v int, st mdwrite.Subtask) []byte {
	return mdwrite.Metadata(mdwrite.Spec{Version: v, CheckpointID: 1, Operators: []mdwrite.Operator{
		{ID: mdwrite.OpID(1), Parallelism: 4, MaxParallelism: 128, Subtasks: []mdwrite.Subtask{st}}}})
}

func TestUnknownAndMisplacedTags(t *testing.T) {
	cases := map[string]struct {
		version int
		st      mdwrite.Subtask
		coord   mdwrite.Handle
		tag     byte
		kind    error
	}{
		"unknown keyed tag":              {3, mdwrite.Subtask{ManagedKeyed: rawTag(99)}, nil, 99, ErrUnknownHandleTag},
		"stream tag 4 in keyed position": {6, mdwrite.Subtask{RawKeyed: rawTag(4)}, nil, 4, ErrUnknownHandleTag},
		"unknown stream tag":             {2, mdwrite.Subtask{ManagedKeyed: mdwrite.KeyGroups(12, 0, nil, rawTag(5), "x")}, nil, 5, ErrUnknownHandleTag},
		"unknown operator tag":           {4, mdwrite.Subtask{ManagedOp: rawTag(12)}, nil, 12, ErrUnknownHandleTag},
		"unknown channel tag":            {6, mdwrite.Subtask{InputChannels: []mdwrite.Channel{{Delegate: mdwrite.NullStream()}}, ManagedKeyed: nil}, nil, 0, nil},
		"coordinator as file":            {3, mdwrite.Subtask{}, mdwrite.FileStream(1, "/a"), 2, ErrUnexpectedHandle},
		"coordinator unknown tag":        {5, mdwrite.Subtask{}, rawTag(42), 42, ErrUnknownHandleTag},
		"file-merging delegate not a segment": {4, mdwrite.Subtask{ManagedOp: mdwrite.FileMergingOperator(nil, "/t", "/s", false, mdwrite.RelativeStream("x", 1))},
			nil, 6, ErrUnexpectedHandle},
	}
	for name, tc := range cases {
		if tc.kind == nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			data := mdwrite.Metadata(mdwrite.Spec{Version: tc.version, CheckpointID: 1, Operators: []mdwrite.Operator{
				{ID: mdwrite.OpID(1), Parallelism: 4, MaxParallelism: 128, Coordinator: tc.coord, Subtasks: []mdwrite.Subtask{tc.st}}}})
			fe := mustFail(t, data, "/cp/_metadata", tc.kind)
			if data[fe.Offset] != tc.tag {
				t.Errorf("error offset %d holds byte %d, want the tag %d (%v)", fe.Offset, data[fe.Offset], tc.tag, fe)
			}
		})
	}

	// V6 channel tags: an output tag in the input list, and an unknown tag.
	for name, tc := range map[string]struct {
		tag  byte
		kind error
	}{"output tag in input list": {2, ErrUnexpectedHandle}, "merged output tag in input list": {4, ErrUnexpectedHandle}, "unknown channel tag": {9, ErrUnknownHandleTag}} {
		t.Run(name, func(t *testing.T) {
			data := oneSubtask(6, mdwrite.Subtask{InputChannels: []mdwrite.Channel{{Subtask: 0, Delegate: mdwrite.NullStream()}}})
			// The input channel tag follows the two keyed NULL tags and the channel count.
			at := len(data) - len(mdwrite.CheckpointProperties(false)) - 4 /*output count*/ - (1 + 4 + 8 + 4 + 8 + 1)
			if data[at] != 1 {
				t.Fatalf("test layout: byte at %d is %d, want input tag 1", at, data[at])
			}
			data[at] = tc.tag
			fe := mustFail(t, data, "", tc.kind)
			if fe.Offset != int64(at) {
				t.Errorf("offset %d, want %d", fe.Offset, at)
			}
		})
	}
}

func TestOutOfRangeValues(t *testing.T) {
	cases := map[string]struct {
		data []byte
		kind error
	}{
		"subtask index beyond parallelism":    {oneSubtask(3, mdwrite.Subtask{Index: 4}), ErrOutOfRange},
		"finished subtask beyond parallelism": {oneSubtask(3, mdwrite.Subtask{Index: 9, Finished: true}), ErrOutOfRange},
		"parallelism above max":               {mdwrite.Metadata(mdwrite.Spec{Version: 3, Operators: []mdwrite.Operator{{ID: mdwrite.OpID(1), Parallelism: 8, MaxParallelism: 4}}}), ErrOutOfRange},
		"zero parallelism":                    {mdwrite.Metadata(mdwrite.Spec{Version: 3, Operators: []mdwrite.Operator{{ID: mdwrite.OpID(1), Parallelism: 0, MaxParallelism: 4}}}), ErrOutOfRange},
		"fully finished with coordinator": {mdwrite.Metadata(mdwrite.Spec{Version: 3, Operators: []mdwrite.Operator{
			{ID: mdwrite.OpID(1), Parallelism: 1, MaxParallelism: 4, FullyFinished: true, Coordinator: mdwrite.ByteStream("c", nil)}}}), ErrUnexpectedHandle},
		"negative subtask count in V2": {mdwrite.Metadata(mdwrite.Spec{Version: 2, Operators: []mdwrite.Operator{{ID: mdwrite.OpID(1), Parallelism: 1, MaxParallelism: 4, FullyFinished: true}}}), ErrOutOfRange},
		"segment scope 2":              {oneSubtask(4, mdwrite.Subtask{ManagedKeyed: mdwrite.KeyGroups(7, 0, nil, mdwrite.SegmentStream(0, 1, 2, "/f", "l"), "")}), ErrOutOfRange},
		"negative segment start":       {oneSubtask(4, mdwrite.Subtask{ManagedKeyed: mdwrite.KeyGroups(7, 0, nil, mdwrite.SegmentStream(-1, 1, 0, "/f", "l"), "")}), ErrOutOfRange},
		"distribution mode 3":          {oneSubtask(5, mdwrite.Subtask{ManagedOp: mdwrite.OperatorStream([]mdwrite.OpStateMeta{{Name: "s", Mode: 3}}, mdwrite.NullStream())}), ErrOutOfRange},
		"negative key-group start":     {oneSubtask(6, mdwrite.Subtask{ManagedKeyed: mdwrite.KeyGroups(12, -1, nil, mdwrite.NullStream(), "x")}), ErrOutOfRange},
		"huge key-group count":         {oneSubtask(6, mdwrite.Subtask{ManagedKeyed: func(w *mdwrite.Writer) { w.I8(12); w.I32(0); w.I32(0x7FFFFFFF) }}), ErrOutOfRange},
		"huge inline length":           {oneSubtask(6, mdwrite.Subtask{ManagedKeyed: mdwrite.KeyGroups(7, 0, nil, func(w *mdwrite.Writer) { w.I8(1); w.UTF("n"); w.I32(0x7FFFFFF0) }, "")}), ErrOutOfRange},
		"huge shared file count": {oneSubtask(6, mdwrite.Subtask{ManagedKeyed: func(w *mdwrite.Writer) {
			w.I8(11)
			w.I64(1)
			w.UTF("b")
			w.I32(0)
			w.I32(1)
			w.I64(0)
			w.I8(0)
			w.I32(0x40000000)
		}}), ErrOutOfRange},
		"huge changelog count": {oneSubtask(6, mdwrite.Subtask{ManagedKeyed: func(w *mdwrite.Writer) { w.I8(14); w.I32(0); w.I32(1); w.I64(0); w.I32(0x7FFFFFFF) }}), ErrOutOfRange},
		"huge channel count":   {oneSubtask(4, mdwrite.Subtask{InputChannels: nil, ManagedKeyed: nil, RawKeyed: func(w *mdwrite.Writer) { w.I8(0); w.I32(0x10000000) }}), ErrOutOfRange},
		"legacy state in V2": {func() []byte {
			d := oneSubtask(2, mdwrite.Subtask{})
			// V2 subtask: index, duration, legacy count(4), two operator flags(4+4), two keyed tags(1+1).
			binary.BigEndian.PutUint32(d[len(d)-14:], 1)
			return d
		}(), ErrOutOfRange},
		"master state bad magic": {func() []byte {
			d := mdwrite.Metadata(mdwrite.Spec{Version: 3, Masters: []mdwrite.Master{{Version: 1, Name: "m", Payload: nil}}})
			d[20] ^= 0xFF
			return d
		}(), ErrBadMagic},
		"master state with extra bytes": {func() []byte {
			d := mdwrite.Metadata(mdwrite.Spec{Version: 3, Masters: []mdwrite.Master{{Version: 1, Name: "m", Payload: []byte{1, 2}}}})
			// magic at 20, length 24, version 28, name 32..34, payload length 35
			binary.BigEndian.PutUint32(d[35:], 1) // payload length 2 -> 1 leaves one byte over
			return d
		}(), ErrTrailingData},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { mustFail(t, tc.data, "/cp/_metadata", tc.kind) })
	}
}

func TestHugeCountsDoNotAllocate(t *testing.T) {
	inputs := map[string][]byte{
		"operators":  binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(header(6), 1), 0), 0x7FFFFFFF),
		"key groups": oneSubtask(6, mdwrite.Subtask{ManagedKeyed: func(w *mdwrite.Writer) { w.I8(12); w.I32(0); w.I32(0x7FFFFFFF) }}),
		"subtasks": func() []byte {
			w := &mdwrite.Writer{Version: 3}
			w.Raw(header(3))
			w.I64(1)
			w.I32(0)
			w.I32(1)
			w.Raw(make([]byte, 16))
			w.I32(1)
			w.I32(1)
			w.I8(0)
			w.I32(0x7FFFFFFF)
			return w.Buf
		}(),
	}
	for name, data := range inputs {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := ParseBytes(data, "")
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrOutOfRange) {
				t.Fatalf("err = %v, want ErrOutOfRange", err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
				t.Errorf("allocated %d bytes for a %d-byte input", alloc, len(data))
			}
		})
	}
}

func TestDeepNestingIsBounded(t *testing.T) {
	cases := map[string]mdwrite.Handle{
		"key-group stream handles": func() mdwrite.Handle {
			h := mdwrite.NullStream()
			for range 100000 {
				h = mdwrite.KeyGroupsStream(0, nil, h)
			}
			return mdwrite.KeyGroups(7, 0, nil, h, "")
		}(),
		"changelog in changelog": func() mdwrite.Handle {
			h := mdwrite.NullKeyed()
			for range 100000 {
				h = mdwrite.Changelog(14, 0, 1, []mdwrite.Handle{h}, nil, 1, 1, "x")
			}
			return h
		}(),
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			mustFail(t, oneSubtask(6, mdwrite.Subtask{ManagedKeyed: h}), "", ErrTooDeep)
		})
	}
}

func TestTrailerErrors(t *testing.T) {
	body := mdwrite.Metadata(mdwrite.Spec{Version: 4, Trailer: []byte{}})
	good := mdwrite.CheckpointProperties(false)
	wrongClass := mdwrite.CheckpointProperties(false)
	copy(wrongClass[9:], "com") // class name "org.apache..." -> "com.apache..."
	cases := map[string]struct {
		trailer []byte
		kind    error
	}{
		"missing trailer":         {nil, ErrTruncated},
		"not a Java stream":       {[]byte{0xAC, 0xED, 0x00, 0x06, 0x70}, ErrBadTrailer},
		"bytes after the object":  {append(append([]byte{}, good...), 0x70), ErrTrailingData},
		"bytes after null":        {[]byte{0xAC, 0xED, 0x00, 0x05, 0x70, 0x70}, ErrTrailingData},
		"other class":             {wrongClass, ErrBadTrailer},
		"a string, not an object": {[]byte{0xAC, 0xED, 0x00, 0x05, 0x74, 0x00, 0x01, 'x'}, ErrBadTrailer},
		"dangling back-reference": {[]byte{0xAC, 0xED, 0x00, 0x05, 0x71, 0x00, 0x7E, 0x00, 0x05}, ErrBadTrailer},
		"array":                   {[]byte{0xAC, 0xED, 0x00, 0x05, 0x75}, ErrBadTrailer},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			data := append(append([]byte{}, body...), tc.trailer...)
			fe := mustFail(t, data, "", tc.kind)
			if fe.Offset < int64(len(body)) {
				t.Errorf("offset %d is before the trailer at %d", fe.Offset, len(body))
			}
		})
	}
	if _, err := ParseBytes(append(append([]byte{}, body...), 0xAC, 0xED, 0x00, 0x05, 0x70), ""); err != nil {
		t.Errorf("serialized null trailer: %v", err)
	}
	mustFail(t, append(mdwrite.Metadata(mdwrite.Spec{Version: 3}), 0), "", ErrTrailingData)
}

func TestInvalidPaths(t *testing.T) {
	cases := map[string]struct {
		st       mdwrite.Subtask
		location string
	}{
		"relative path in a file handle":     {mdwrite.Subtask{ManagedKeyed: mdwrite.KeyGroups(7, 0, nil, mdwrite.FileStream(1, "chk-1/x"), "")}, "/cp/chk-1/_metadata"},
		"empty path in a file handle":        {mdwrite.Subtask{ManagedKeyed: mdwrite.KeyGroups(7, 0, nil, mdwrite.FileStream(1, ""), "")}, "/cp/chk-1/_metadata"},
		"scheme without path in a segment":   {mdwrite.Subtask{ManagedKeyed: mdwrite.KeyGroups(7, 0, nil, mdwrite.SegmentStream(0, 1, 0, "hdfs:x", "l"), "")}, "/cp/chk-1/_metadata"},
		"relative handle without location":   {mdwrite.Subtask{ManagedKeyed: mdwrite.KeyGroups(7, 0, nil, mdwrite.RelativeStream("x", 1), "")}, ""},
		"absolute path in a relative handle": {mdwrite.Subtask{ManagedKeyed: mdwrite.KeyGroups(7, 0, nil, mdwrite.RelativeStream("/etc/x", 1), "")}, "/cp/chk-1/_metadata"},
		"scheme in a relative handle":        {mdwrite.Subtask{ManagedKeyed: mdwrite.KeyGroups(7, 0, nil, mdwrite.RelativeStream("hdfs://nn/x", 1), "")}, "/cp/chk-1/_metadata"},
		"relative file-merging directory":    {mdwrite.Subtask{ManagedOp: mdwrite.FileMergingOperator(nil, "taskowned", "/s", false, mdwrite.EmptySegment())}, "/cp/_metadata"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { mustFail(t, oneSubtask(6, tc.st), tc.location, ErrInvalidPath) })
	}
	if _, err := ParseBytes(oneSubtask(6, mdwrite.Subtask{}), "relative/_metadata"); !errors.Is(err, ErrInvalidPath) {
		t.Errorf("relative metadata location: err = %v, want ErrInvalidPath", err)
	}
}

func TestInvalidStringIsRejected(t *testing.T) {
	data := mdwrite.Metadata(mdwrite.Spec{Version: 5, Operators: []mdwrite.Operator{{Name: "ab", ID: mdwrite.OpID(1), Parallelism: 1, MaxParallelism: 1}}})
	// Operator name bytes start after header(8) + id(8) + masters(4) + count(4) + length(2).
	data[26] = 0xF0
	fe := mustFail(t, data, "", ErrInvalidString)
	if fe.Offset != 26 {
		t.Errorf("offset %d, want 26", fe.Offset)
	}
}
