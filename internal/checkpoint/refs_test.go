package checkpoint

import (
	"fmt"
	"reflect"
	"testing"
	"unsafe"
)

// The compact records give back every field a Reference had: drills read
// the local name, operator and subtask of a file's first handle, and the
// segment's range, to say which file is missing or short.
func TestReferenceRecordsKeepEveryField(t *testing.T) {
	var tab refTable
	var want []Reference
	add := func(r Reference) {
		tab.recs = append(tab.recs, tab.record(r))
		want = append(want, r)
	}
	dir := "hdfs://nn:8020/flink/checkpoints/job/chk-7"
	for i := range maxInterned + 10 { // more local names than are interned
		add(Reference{Path: fmt.Sprintf("hdfs://nn:8020/flink/checkpoints/job/shared/%08x", i),
			Raw: fmt.Sprintf("hdfs://nn:8020/flink/checkpoints/job/shared/%08x", i), Kind: KindAbsolute, Scope: ScopeShared,
			Size: int64(i), Context: "managed-keyed-incremental-shared", LocalName: fmt.Sprintf("%06d.sst", i),
			OperatorID: fmt.Sprintf("op-%d", i%3), Subtask: i % 5, Offset: int64(i) * 100})
	}
	add(Reference{Path: dir + "/a1b2", Raw: "a1b2", Kind: KindRelative, Scope: ScopeExclusive, Size: -1,
		Context: "managed-operator", Subtask: -1, Offset: MaxMetadataSize - 1})
	add(Reference{Path: "hdfs://nn:8020/flink/checkpoints/job/x", Raw: "hdfs://nn:8020//flink/./checkpoints/job/x",
		Kind: KindAbsolute, Scope: ScopePrivate, Size: 3, Context: "raw-keyed"})
	add(Reference{Path: "hdfs://nn:8020/flink/checkpoints/job/taskowned/seg-1", Raw: "hdfs://nn:8020/flink/checkpoints/job/taskowned/seg-1",
		Kind: KindSegment, Scope: ScopeTaskOwned, Size: 42, Range: &ByteRange{Offset: 1 << 40, Length: 42},
		LogicalID: "logical-1", Context: "managed-keyed", OperatorID: "op-9", Subtask: 2})
	add(Reference{Path: "hdfs://nn:8020/flink/checkpoints/job/shared/seg-2", Raw: "hdfs://nn:8020/flink/checkpoints/job/shared/seg-2",
		Kind: KindSegment, Scope: ScopeShared, Range: &ByteRange{}})

	md := Metadata{refs: tab}
	if md.NumReferences() != len(want) {
		t.Fatalf("%d records, want %d", md.NumReferences(), len(want))
	}
	i := 0
	for got := range md.References() {
		if !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("reference %d = %+v\nwant %+v", i, got, want[i])
		}
		if got := md.Reference(i); !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("Reference(%d) = %+v\nwant %+v", i, got, want[i])
		}
		i++
	}
	if i != len(want) {
		t.Fatalf("References yielded %d, want %d", i, len(want))
	}
}

// A record stays 56 bytes and a File 64: the heap of a big parse is
// mostly these (make bench-metadata prints it).
func TestReferenceRecordSizes(t *testing.T) {
	if n := unsafe.Sizeof(refRecord{}); n != 56 {
		t.Errorf("refRecord is %d bytes, want 56", n)
	}
	if n := unsafe.Sizeof(File{}); n != 64 {
		t.Errorf("File is %d bytes, want 64", n)
	}
	if n := unsafe.Sizeof(fileKey{}); n != 16 {
		t.Errorf("fileKey is %d bytes, want 16", n)
	}
}

// textEnum is HandleKind or Scope: a one-byte enum written as its name.
type textEnum interface {
	~uint8
	String() string
	MarshalText() ([]byte, error)
}

// roundTripNames writes each value as text and reads it back with read.
func roundTripNames[E textEnum](t *testing.T, values []E, read func([]byte) (E, error)) {
	t.Helper()
	for _, v := range values {
		b, err := v.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		if back, err := read(b); err != nil || back != v || v.String() != string(b) {
			t.Errorf("%T %d: %q -> %d, %v", v, v, b, back, err)
		}
	}
}

func TestKindAndScopeReadAndWriteTheirNames(t *testing.T) {
	roundTripNames(t, []HandleKind{KindRelative, KindAbsolute, KindSegment}, func(b []byte) (k HandleKind, err error) {
		err = k.UnmarshalText(b)
		return k, err
	})
	roundTripNames(t, []Scope{ScopeExclusive, ScopeShared, ScopePrivate, ScopeTaskOwned}, func(b []byte) (s Scope, err error) {
		err = s.UnmarshalText(b)
		return s, err
	})
	var k HandleKind
	if err := k.UnmarshalText([]byte("symlink")); err == nil {
		t.Error("unknown kind accepted")
	}
	if _, err := Scope(9).MarshalText(); err == nil {
		t.Error("scope 9 written")
	}
}
