// Package mdwrite writes Flink _metadata files for tests: the byte layout
// FLINK_METADATA_FORMAT.md (in ../shared/fixtures) describes, written from
// that text independently of the reader in internal/checkpoint.
//
// Snapshot writes a whole checkpoint or savepoint that names given files,
// for a test that needs a valid _metadata of its own instead of a fixture
// that a clone may not have. The handle writers below it (one per tag of the
// spec) let the reader's tests lay out any file, including the handle kinds
// no real fixture contains: absolute files, segments, changelog files and
// channel state. Only tests import this package.
package mdwrite

import (
	"encoding/binary"
	"fmt"
	"unicode/utf16"
)

// Constants of the format (sections 3 and 10 of the spec).
const (
	// Magic starts every _metadata file.
	Magic = 0x4960672D
	// masterStateMagic starts each master state.
	masterStateMagic = int32(-0x3694E96A) // 0xC96B1696

	// Java object serialization (java.io.ObjectStreamConstants).
	jBaseHandle    = 0x7E0000
	tcNull         = 0x70
	tcReference    = 0x71
	tcClassDesc    = 0x72
	tcObject       = 0x73
	tcString       = 0x74
	tcEndBlockData = 0x78
	tcEnum         = 0x7E
	scSerializable = 0x02

	checkpointPropertiesClass = "org.apache.flink.runtime.checkpoint.CheckpointProperties"
)

// Writer appends the spec's primitives (section 2) to Buf; Version is the
// metadata version being written, which decides the layout of some parts.
type Writer struct {
	Buf     []byte
	Version int
}

// I8 writes one byte.
func (w *Writer) I8(v byte) { w.Buf = append(w.Buf, v) }

// I32 writes a big-endian int32.
func (w *Writer) I32(v int32) { w.Buf = binary.BigEndian.AppendUint32(w.Buf, uint32(v)) }

// I64 writes a big-endian int64.
func (w *Writer) I64(v int64) { w.Buf = binary.BigEndian.AppendUint64(w.Buf, uint64(v)) }

// Raw writes b as it is.
func (w *Writer) Raw(b []byte) { w.Buf = append(w.Buf, b...) }

// Bool writes 1 or 0.
func (w *Writer) Bool(v bool) {
	if v {
		w.I8(1)
	} else {
		w.I8(0)
	}
}

// UTF writes Java DataOutput.writeUTF: u16 length + modified UTF-8.
func (w *Writer) UTF(s string) {
	enc := EncodeModifiedUTF8(s)
	if len(enc) > 0xFFFF {
		panic(fmt.Sprintf("writeUTF: %d bytes is too long", len(enc)))
	}
	w.Buf = binary.BigEndian.AppendUint16(w.Buf, uint16(len(enc)))
	w.Buf = append(w.Buf, enc...)
}

// EncodeModifiedUTF8 encodes s as Java does: U+0000 as C0 80, characters
// outside the BMP as two 3-byte surrogates.
func EncodeModifiedUTF8(s string) []byte {
	var out []byte
	for _, u := range utf16.Encode([]rune(s)) {
		switch {
		case u >= 0x0001 && u <= 0x007F:
			out = append(out, byte(u))
		case u <= 0x07FF: // includes U+0000 as C0 80
			out = append(out, 0xC0|byte(u>>6), 0x80|byte(u&0x3F))
		default:
			out = append(out, 0xE0|byte(u>>12), 0x80|byte(u>>6&0x3F), 0x80|byte(u&0x3F))
		}
	}
	return out
}

// Handle writes one state handle (any family) into w.
type Handle func(w *Writer)

// ---- stream handles (section 4)

// NullStream writes tag 0.
func NullStream() Handle { return func(w *Writer) { w.I8(0) } }

// ByteStream writes tag 1: inline data, which names no file.
func ByteStream(name string, data []byte) Handle {
	return func(w *Writer) {
		w.I8(1)
		w.UTF(name)
		w.I32(int32(len(data)))
		w.Raw(data)
	}
}

// FileStream writes tag 2: a file by absolute path, size first.
func FileStream(size int64, path string) Handle {
	return func(w *Writer) { w.I8(2); w.I64(size); w.UTF(path) }
}

// RelativeStream writes tag 6: a file relative to the dir of the
// _metadata, path first.
func RelativeStream(path string, size int64) Handle {
	return func(w *Writer) { w.I8(6); w.UTF(path); w.I64(size) }
}

// KeyGroupsStream writes tag 3 in a stream-handle position.
func KeyGroupsStream(start int32, offsets []int64, delegate Handle) Handle {
	return func(w *Writer) {
		w.I8(3)
		w.I32(start)
		w.I32(int32(len(offsets)))
		for _, o := range offsets {
			w.I64(o)
		}
		delegate(w)
	}
}

// SegmentStream writes tag 15, a range of a merged file; scope 0 is
// EXCLUSIVE, 1 SHARED.
func SegmentStream(start, size int64, scope int32, path, logicalID string) Handle {
	return func(w *Writer) {
		w.I8(15)
		w.I64(start)
		w.I64(size)
		w.I32(scope)
		w.UTF(path)
		w.UTF(logicalID)
	}
}

// EmptySegment writes tag 16.
func EmptySegment() Handle { return func(w *Writer) { w.I8(16) } }

// ---- keyed handles (section 5)

// NullKeyed writes a keyed tag 0 (no keyed state).
func NullKeyed() Handle { return func(w *Writer) { w.I8(0) } }

// KeyGroups writes tag 3, 7 or 12 (12 adds the state handle id).
func KeyGroups(tag byte, start int32, offsets []int64, delegate Handle, id string) Handle {
	return func(w *Writer) {
		w.I8(tag)
		w.I32(start)
		w.I32(int32(len(offsets)))
		for _, o := range offsets {
			w.I64(o)
		}
		delegate(w)
		if tag == 12 {
			w.UTF(id)
		}
	}
}

// LocalFile is one entry of an incremental handle's shared or private
// list: the RocksDB local file name and the handle of its copy.
type LocalFile struct {
	Name string
	H    Handle
}

func writeFileList(w *Writer, files []LocalFile) {
	w.I32(int32(len(files)))
	for _, f := range files {
		w.UTF(f.Name)
		f.H(w)
	}
}

// Incremental writes tag 5 (old form) or 11.
func Incremental(tag byte, checkpointID int64, backendID string, start, count int32, meta Handle, shared, private []LocalFile, id string) Handle {
	return func(w *Writer) {
		w.I8(tag)
		w.I64(checkpointID)
		w.UTF(backendID)
		w.I32(start)
		w.I32(count)
		if tag == 11 {
			w.I64(12345) // checkpointed size
		}
		meta(w)
		writeFileList(w, shared)
		writeFileList(w, private)
		if tag == 11 {
			w.UTF(id)
		}
	}
}

// Changelog writes tag 8 (old form) or 14.
func Changelog(tag byte, start, count int32, materialized, nonMaterialized []Handle, materializationID, checkpointID int64, id string) Handle {
	return func(w *Writer) {
		w.I8(tag)
		w.I32(start)
		w.I32(count)
		w.I64(999) // checkpointed size
		w.I32(int32(len(materialized)))
		for _, h := range materialized {
			h(w)
		}
		w.I32(int32(len(nonMaterialized)))
		for _, h := range nonMaterialized {
			h(w)
		}
		w.I64(materializationID)
		if tag == 14 {
			w.I64(checkpointID)
		}
		w.UTF(id)
	}
}

// Change is one key group's bytes in an in-memory changelog handle.
type Change struct {
	KeyGroup int32
	Data     []byte
}

// InMemoryChangelog writes tag 9, which names no file.
func InMemoryChangelog(start, count int32, from, to int64, changes []Change, id string) Handle {
	return func(w *Writer) {
		w.I8(9)
		w.I32(start)
		w.I32(count)
		w.I64(from)
		w.I64(to)
		w.I32(int32(len(changes)))
		for _, c := range changes {
			w.I32(c.KeyGroup)
			w.I32(int32(len(c.Data)))
			w.Raw(c.Data)
		}
		w.UTF(id)
	}
}

// Increment is one stream handle of a changelog file handle, at its offset.
type Increment struct {
	Offset int64
	H      Handle
}

// ChangelogFiles writes tag 10 (old form) or 13 (adds the storage identifier).
func ChangelogFiles(tag byte, start, count int32, incs []Increment, id, storage string) Handle {
	return func(w *Writer) {
		w.I8(tag)
		w.I32(start)
		w.I32(count)
		w.I32(int32(len(incs)))
		for _, inc := range incs {
			w.I64(inc.Offset)
			inc.H(w)
		}
		w.I64(4096) // state size
		w.I64(4096) // checkpointed size
		w.UTF(id)
		if tag == 13 {
			w.UTF(storage)
		}
	}
}

// ---- operator handles (section 6)

// OpStateMeta is one named operator state: its distribution mode and
// offsets.
type OpStateMeta struct {
	Name    string
	Mode    byte
	Offsets []int64
}

func writeOpStates(w *Writer, states []OpStateMeta) {
	w.I32(int32(len(states)))
	for _, s := range states {
		w.UTF(s.Name)
		w.I8(s.Mode)
		w.I32(int32(len(s.Offsets)))
		for _, o := range s.Offsets {
			w.I64(o)
		}
	}
}

// OperatorStream writes tag 4.
func OperatorStream(states []OpStateMeta, delegate Handle) Handle {
	return func(w *Writer) {
		w.I8(4)
		writeOpStates(w, states)
		delegate(w)
	}
}

// FileMergingOperator writes tag 17, which declares two managed dirs.
func FileMergingOperator(states []OpStateMeta, taskOwnedDir, sharedDir string, isEmpty bool, delegate Handle) Handle {
	return func(w *Writer) {
		w.I8(17)
		writeOpStates(w, states)
		w.UTF(taskOwnedDir)
		w.UTF(sharedDir)
		w.Bool(isEmpty)
		delegate(w)
	}
}

// ---- channel handles (section 7)

// Channel is one channel-state handle; merged handles exist only in V6.
type Channel struct {
	Merged   bool
	Subtask  int32
	A, B     int32
	Offsets  []int64
	Size     int64
	Delegate Handle
	Info     []byte // merged only
}

func writeChannels(w *Writer, input bool, chans []Channel) {
	w.I32(int32(len(chans)))
	for _, c := range chans {
		if w.Version >= 6 {
			tag := byte(2)
			if input {
				tag = 1
			}
			if c.Merged {
				tag += 2
			}
			w.I8(tag)
		} else if c.Merged {
			panic("merged channel handles exist only in version 6")
		}
		w.I32(c.Subtask)
		if c.Merged {
			w.I64(c.Size)
			c.Delegate(w)
			w.I32(int32(len(c.Info)))
			w.Raw(c.Info)
			continue
		}
		w.I32(c.A)
		w.I32(c.B)
		w.I32(int32(len(c.Offsets)))
		for _, o := range c.Offsets {
			w.I64(o)
		}
		w.I64(c.Size)
		c.Delegate(w)
	}
}

// ---- file structure (section 3)

// Subtask is one subtask state of an operator; a nil handle writes none.
type Subtask struct {
	Index          int32
	Finished       bool // V3+: finished marker, no body
	ManagedOp      Handle
	RawOp          Handle
	ManagedKeyed   Handle
	RawKeyed       Handle
	InputChannels  []Channel
	OutputChannels []Channel
}

// Operator is one operator state.
type Operator struct {
	Name, UID      string // V5+
	ID             [16]byte
	Parallelism    int32
	MaxParallelism int32
	Coordinator    Handle // V3+; nil = NULL
	FullyFinished  bool   // V3+
	Subtasks       []Subtask
}

// Master is one master (JobManager hook) state.
type Master struct {
	Version int32
	Name    string
	Payload []byte
}

// Spec is a whole _metadata file.
type Spec struct {
	Version      int
	CheckpointID int64
	Masters      []Master
	Operators    []Operator
	// Trailer replaces the V4+ CheckpointProperties trailer when non-nil.
	Trailer []byte
	// Savepoint selects the default trailer's snapshot type.
	Savepoint bool
}

// Metadata writes spec.
func Metadata(spec Spec) []byte {
	w := &Writer{Version: spec.Version}
	w.I32(Magic)
	w.I32(int32(spec.Version))
	w.I64(spec.CheckpointID)
	w.I32(int32(len(spec.Masters)))
	for _, m := range spec.Masters {
		inner := &Writer{}
		inner.I32(m.Version)
		inner.UTF(m.Name)
		inner.I32(int32(len(m.Payload)))
		inner.Raw(m.Payload)
		w.I32(masterStateMagic)
		w.I32(int32(len(inner.Buf)))
		w.Raw(inner.Buf)
	}
	w.I32(int32(len(spec.Operators)))
	for _, op := range spec.Operators {
		writeOperator(w, op)
	}
	if spec.Version >= 4 {
		if spec.Trailer != nil {
			w.Raw(spec.Trailer)
		} else {
			w.Raw(CheckpointProperties(spec.Savepoint))
		}
	}
	return w.Buf
}

func orNull(h Handle) Handle {
	if h == nil {
		return func(w *Writer) { w.I8(0) }
	}
	return h
}

func writeOperator(w *Writer, op Operator) {
	if w.Version >= 5 {
		w.UTF(op.Name)
		w.UTF(op.UID)
	}
	w.Raw(op.ID[:])
	w.I32(op.Parallelism)
	w.I32(op.MaxParallelism)
	if w.Version == 2 {
		w.I32(1) // chain length
	} else {
		orNull(op.Coordinator)(w)
	}
	if op.FullyFinished {
		w.I32(-1)
		return
	}
	w.I32(int32(len(op.Subtasks)))
	for _, st := range op.Subtasks {
		if st.Finished {
			w.I32(-st.Index - 1)
			continue
		}
		w.I32(st.Index)
		if w.Version == 2 {
			w.I64(-1) // duration
			w.I32(0)  // legacy state count
		}
		for _, h := range []Handle{st.ManagedOp, st.RawOp} {
			if h == nil {
				w.I32(0)
				continue
			}
			w.I32(1)
			h(w)
		}
		orNull(st.ManagedKeyed)(w)
		orNull(st.RawKeyed)(w)
		if w.Version >= 3 {
			writeChannels(w, true, st.InputChannels)
			writeChannels(w, false, st.OutputChannels)
		}
	}
}

// ---- V4+ trailer: CheckpointProperties via Java object serialization

type javaWriter struct {
	w       Writer
	handles int32
	strs    map[string]int32
	classes map[string]int32
}

func (j *javaWriter) newHandle() int32 { h := j.handles; j.handles++; return h }

func (j *javaWriter) str(s string) {
	if h, ok := j.strs[s]; ok {
		j.w.I8(tcReference)
		j.w.I32(jBaseHandle + h)
		return
	}
	j.w.I8(tcString)
	j.strs[s] = j.newHandle()
	j.w.UTF(s)
}

type javaField struct {
	typ       byte
	name, sig string
}

// classDesc writes a class descriptor (or a back-reference to it); super
// writes the superclass descriptor.
func (j *javaWriter) classDesc(name string, suid int64, flags byte, fields []javaField, super func()) {
	if h, ok := j.classes[name]; ok {
		j.w.I8(tcReference)
		j.w.I32(jBaseHandle + h)
		return
	}
	j.w.I8(tcClassDesc)
	j.w.UTF(name)
	j.classes[name] = j.newHandle()
	j.w.I64(suid)
	j.w.I8(flags)
	j.w.Buf = binary.BigEndian.AppendUint16(j.w.Buf, uint16(len(fields)))
	for _, f := range fields {
		j.w.I8(f.typ)
		j.w.UTF(f.name)
		if f.typ == 'L' {
			j.str(f.sig)
		}
	}
	j.w.I8(tcEndBlockData)
	if super == nil {
		j.w.I8(tcNull)
	} else {
		super()
	}
}

func (j *javaWriter) enum(class, constant string) {
	j.w.I8(tcEnum)
	j.classDesc(class, 0, 0x12, nil, func() { j.classDesc("java.lang.Enum", 0, 0x12, nil, nil) })
	j.newHandle()
	j.str(constant)
}

// CheckpointProperties writes what Flink's CheckpointProperties
// serialization produces for a retained checkpoint or a savepoint.
func CheckpointProperties(savepoint bool) []byte {
	j := &javaWriter{strs: map[string]int32{}, classes: map[string]int32{}}
	j.w.Buf = []byte{0xAC, 0xED, 0x00, 0x05}
	j.w.I8(tcObject)
	j.classDesc(checkpointPropertiesClass, 2, scSerializable, []javaField{
		{'Z', "discardCancelled", ""}, {'Z', "discardFailed", ""}, {'Z', "discardFinished", ""},
		{'Z', "discardSubsumed", ""}, {'Z', "discardSuspended", ""}, {'Z', "forced", ""}, {'Z', "unclaimed", ""},
		{'L', "checkpointType", "Lorg/apache/flink/runtime/checkpoint/SnapshotType;"},
	}, nil)
	j.newHandle()
	if savepoint {
		j.w.Raw([]byte{0, 0, 0, 0, 0, 1, 0})
		j.w.I8(tcObject)
		j.classDesc("org.apache.flink.runtime.checkpoint.SavepointType", -0x5f782cf75ba7eb48, scSerializable, []javaField{
			{'L', "formatType", "Lorg/apache/flink/core/execution/SavepointFormatType;"},
			{'L', "name", "Ljava/lang/String;"},
			{'L', "postCheckpointAction", "Lorg/apache/flink/runtime/checkpoint/SavepointType$PostCheckpointAction;"},
		}, nil)
		j.newHandle()
		j.enum("org.apache.flink.core.execution.SavepointFormatType", "CANONICAL")
		j.str("Savepoint")
		j.enum("org.apache.flink.runtime.checkpoint.SavepointType$PostCheckpointAction", "NONE")
		return j.w.Buf
	}
	j.w.Raw([]byte{1, 1, 1, 1, 1, 0, 0})
	j.w.I8(tcObject)
	j.classDesc("org.apache.flink.runtime.checkpoint.CheckpointType", -0x2921b0fcfa51e2c6, scSerializable, []javaField{
		{'L', "name", "Ljava/lang/String;"},
		{'L', "sharingFilesStrategy", "Lorg/apache/flink/runtime/checkpoint/SnapshotType$SharingFilesStrategy;"},
	}, nil)
	j.newHandle()
	j.str("Checkpoint")
	j.enum("org.apache.flink.runtime.checkpoint.SnapshotType$SharingFilesStrategy", "FORWARD_BACKWARD")
	return j.w.Buf
}

// OpID makes a deterministic operator id.
func OpID(n int) [16]byte {
	var id [16]byte
	binary.BigEndian.PutUint64(id[:8], uint64(n)*0x9E3779B97F4A7C15)
	binary.BigEndian.PutUint64(id[8:], uint64(n)+1)
	return id
}

// UUIDFor makes a deterministic UUID-shaped file name.
func UUIDFor(n int) string {
	a := uint64(n)*0x9E3779B97F4A7C15 + 0x1234
	b := uint64(n)*0xBF58476D1CE4E5B9 + 0x5678
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", uint32(a>>32), uint16(a>>16), uint16(a), uint16(b>>48), b&0xFFFFFFFFFFFF)
}
