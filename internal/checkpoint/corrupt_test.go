package checkpoint

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
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

func rawTag(tag byte) handle { return func(w *mdWriter) { w.i8(tag) } }

func oneSubtask(v int, st subtaskSpec) []byte {
	return writeMetadata(metadataSpec{version: v, checkpointID: 1, operators: []operatorSpec{
		{id: opID(1), parallelism: 4, maxParallelism: 128, subtasks: []subtaskSpec{st}}}})
}

func TestUnknownAndMisplacedTags(t *testing.T) {
	cases := map[string]struct {
		version int
		st      subtaskSpec
		coord   handle
		tag     byte
		kind    error
	}{
		"unknown keyed tag":              {3, subtaskSpec{managedKeyed: rawTag(99)}, nil, 99, ErrUnknownHandleTag},
		"stream tag 4 in keyed position": {6, subtaskSpec{rawKeyed: rawTag(4)}, nil, 4, ErrUnknownHandleTag},
		"unknown stream tag":             {2, subtaskSpec{managedKeyed: keyGroups(12, 0, nil, rawTag(5), "x")}, nil, 5, ErrUnknownHandleTag},
		"unknown operator tag":           {4, subtaskSpec{managedOp: rawTag(12)}, nil, 12, ErrUnknownHandleTag},
		"unknown channel tag":            {6, subtaskSpec{inputChannels: []channel{{delegate: nullStream()}}, managedKeyed: nil}, nil, 0, nil},
		"coordinator as file":            {3, subtaskSpec{}, fileStream(1, "/a"), 2, ErrUnexpectedHandle},
		"coordinator unknown tag":        {5, subtaskSpec{}, rawTag(42), 42, ErrUnknownHandleTag},
		"file-merging delegate not a segment": {4, subtaskSpec{managedOp: fileMergingOperator(nil, "/t", "/s", false, relativeStream("x", 1))},
			nil, 6, ErrUnexpectedHandle},
	}
	for name, tc := range cases {
		if tc.kind == nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			data := writeMetadata(metadataSpec{version: tc.version, checkpointID: 1, operators: []operatorSpec{
				{id: opID(1), parallelism: 4, maxParallelism: 128, coordinator: tc.coord, subtasks: []subtaskSpec{tc.st}}}})
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
			data := oneSubtask(6, subtaskSpec{inputChannels: []channel{{subtask: 0, delegate: nullStream()}}})
			// The input channel tag follows the two keyed NULL tags and the channel count.
			at := len(data) - len(javaCheckpointProperties(false)) - 4 /*output count*/ - (1 + 4 + 8 + 4 + 8 + 1)
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
		"subtask index beyond parallelism":    {oneSubtask(3, subtaskSpec{index: 4}), ErrOutOfRange},
		"finished subtask beyond parallelism": {oneSubtask(3, subtaskSpec{index: 9, finished: true}), ErrOutOfRange},
		"parallelism above max":               {writeMetadata(metadataSpec{version: 3, operators: []operatorSpec{{id: opID(1), parallelism: 8, maxParallelism: 4}}}), ErrOutOfRange},
		"zero parallelism":                    {writeMetadata(metadataSpec{version: 3, operators: []operatorSpec{{id: opID(1), parallelism: 0, maxParallelism: 4}}}), ErrOutOfRange},
		"fully finished with coordinator": {writeMetadata(metadataSpec{version: 3, operators: []operatorSpec{
			{id: opID(1), parallelism: 1, maxParallelism: 4, fullyFinished: true, coordinator: byteStream("c", nil)}}}), ErrUnexpectedHandle},
		"negative subtask count in V2": {writeMetadata(metadataSpec{version: 2, operators: []operatorSpec{{id: opID(1), parallelism: 1, maxParallelism: 4, fullyFinished: true}}}), ErrOutOfRange},
		"segment scope 2":              {oneSubtask(4, subtaskSpec{managedKeyed: keyGroups(7, 0, nil, segmentStream(0, 1, 2, "/f", "l"), "")}), ErrOutOfRange},
		"negative segment start":       {oneSubtask(4, subtaskSpec{managedKeyed: keyGroups(7, 0, nil, segmentStream(-1, 1, 0, "/f", "l"), "")}), ErrOutOfRange},
		"distribution mode 3":          {oneSubtask(5, subtaskSpec{managedOp: operatorStream([]opStateMeta{{name: "s", mode: 3}}, nullStream())}), ErrOutOfRange},
		"negative key-group start":     {oneSubtask(6, subtaskSpec{managedKeyed: keyGroups(12, -1, nil, nullStream(), "x")}), ErrOutOfRange},
		"huge key-group count":         {oneSubtask(6, subtaskSpec{managedKeyed: func(w *mdWriter) { w.i8(12); w.i32(0); w.i32(0x7FFFFFFF) }}), ErrOutOfRange},
		"huge inline length":           {oneSubtask(6, subtaskSpec{managedKeyed: keyGroups(7, 0, nil, func(w *mdWriter) { w.i8(1); w.utf("n"); w.i32(0x7FFFFFF0) }, "")}), ErrOutOfRange},
		"huge shared file count": {oneSubtask(6, subtaskSpec{managedKeyed: func(w *mdWriter) {
			w.i8(11)
			w.i64(1)
			w.utf("b")
			w.i32(0)
			w.i32(1)
			w.i64(0)
			w.i8(0)
			w.i32(0x40000000)
		}}), ErrOutOfRange},
		"huge changelog count": {oneSubtask(6, subtaskSpec{managedKeyed: func(w *mdWriter) { w.i8(14); w.i32(0); w.i32(1); w.i64(0); w.i32(0x7FFFFFFF) }}), ErrOutOfRange},
		"huge channel count":   {oneSubtask(4, subtaskSpec{inputChannels: nil, managedKeyed: nil, rawKeyed: func(w *mdWriter) { w.i8(0); w.i32(0x10000000) }}), ErrOutOfRange},
		"legacy state in V2": {func() []byte {
			d := oneSubtask(2, subtaskSpec{})
			// V2 subtask: index, duration, legacy count(4), two operator flags(4+4), two keyed tags(1+1).
			binary.BigEndian.PutUint32(d[len(d)-14:], 1)
			return d
		}(), ErrOutOfRange},
		"master state bad magic": {func() []byte {
			d := writeMetadata(metadataSpec{version: 3, masters: []masterSpec{{1, "m", nil}}})
			d[20] ^= 0xFF
			return d
		}(), ErrBadMagic},
		"master state with extra bytes": {func() []byte {
			d := writeMetadata(metadataSpec{version: 3, masters: []masterSpec{{1, "m", []byte{1, 2}}}})
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
		"key groups": oneSubtask(6, subtaskSpec{managedKeyed: func(w *mdWriter) { w.i8(12); w.i32(0); w.i32(0x7FFFFFFF) }}),
		"subtasks": func() []byte {
			w := &mdWriter{version: 3}
			w.raw(header(3))
			w.i64(1)
			w.i32(0)
			w.i32(1)
			w.raw(make([]byte, 16))
			w.i32(1)
			w.i32(1)
			w.i8(0)
			w.i32(0x7FFFFFFF)
			return w.buf
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
	cases := map[string]handle{
		"key-group stream handles": func() handle {
			h := nullStream()
			for range 100000 {
				h = keyGroupsStream(0, nil, h)
			}
			return keyGroups(7, 0, nil, h, "")
		}(),
		"changelog in changelog": func() handle {
			h := nullKeyed()
			for range 100000 {
				h = changelog(14, 0, 1, []handle{h}, nil, 1, 1, "x")
			}
			return h
		}(),
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			mustFail(t, oneSubtask(6, subtaskSpec{managedKeyed: h}), "", ErrTooDeep)
		})
	}
}

func TestTrailerErrors(t *testing.T) {
	body := writeMetadata(metadataSpec{version: 4, trailer: []byte{}})
	good := javaCheckpointProperties(false)
	wrongClass := javaCheckpointProperties(false)
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
	mustFail(t, append(writeMetadata(metadataSpec{version: 3}), 0), "", ErrTrailingData)
}

func TestInvalidPaths(t *testing.T) {
	cases := map[string]struct {
		st       subtaskSpec
		location string
	}{
		"relative path in a file handle":     {subtaskSpec{managedKeyed: keyGroups(7, 0, nil, fileStream(1, "chk-1/x"), "")}, "/cp/chk-1/_metadata"},
		"empty path in a file handle":        {subtaskSpec{managedKeyed: keyGroups(7, 0, nil, fileStream(1, ""), "")}, "/cp/chk-1/_metadata"},
		"scheme without path in a segment":   {subtaskSpec{managedKeyed: keyGroups(7, 0, nil, segmentStream(0, 1, 0, "hdfs:x", "l"), "")}, "/cp/chk-1/_metadata"},
		"relative handle without location":   {subtaskSpec{managedKeyed: keyGroups(7, 0, nil, relativeStream("x", 1), "")}, ""},
		"absolute path in a relative handle": {subtaskSpec{managedKeyed: keyGroups(7, 0, nil, relativeStream("/etc/x", 1), "")}, "/cp/chk-1/_metadata"},
		"scheme in a relative handle":        {subtaskSpec{managedKeyed: keyGroups(7, 0, nil, relativeStream("hdfs://nn/x", 1), "")}, "/cp/chk-1/_metadata"},
		"relative file-merging directory":    {subtaskSpec{managedOp: fileMergingOperator(nil, "taskowned", "/s", false, emptySegment())}, "/cp/_metadata"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { mustFail(t, oneSubtask(6, tc.st), tc.location, ErrInvalidPath) })
	}
	if _, err := ParseBytes(oneSubtask(6, subtaskSpec{}), "relative/_metadata"); !errors.Is(err, ErrInvalidPath) {
		t.Errorf("relative metadata location: err = %v, want ErrInvalidPath", err)
	}
}

func TestInvalidStringIsRejected(t *testing.T) {
	data := writeMetadata(metadataSpec{version: 5, operators: []operatorSpec{{name: "ab", id: opID(1), parallelism: 1, maxParallelism: 1}}})
	// Operator name bytes start after header(8) + id(8) + masters(4) + count(4) + length(2).
	data[26] = 0xF0
	fe := mustFail(t, data, "", ErrInvalidString)
	if fe.Offset != 26 {
		t.Errorf("offset %d, want 26", fe.Offset)
	}
}
