package checkpoint

import (
	"encoding/binary"
	"fmt"
	"unicode/utf16"
)

// This file is a test-only writer that lays out _metadata bytes exactly as
// FLINK_METADATA_FORMAT.md describes, for the handle kinds no real fixture
// contains (absolute files, segments, changelog files, channel state). It is
// written from the spec, independently of the reader.

type mdWriter struct {
	buf     []byte
	version int
}

func (w *mdWriter) i8(v byte)   { w.buf = append(w.buf, v) }
func (w *mdWriter) i32(v int32) { w.buf = binary.BigEndian.AppendUint32(w.buf, uint32(v)) }
func (w *mdWriter) i64(v int64) { w.buf = binary.BigEndian.AppendUint64(w.buf, uint64(v)) }
func (w *mdWriter) raw(b []byte) {
	w.buf = append(w.buf, b...)
}
func (w *mdWriter) bool(v bool) {
	if v {
		w.i8(1)
	} else {
		w.i8(0)
	}
}

// utf writes Java DataOutput.writeUTF: u16 length + modified UTF-8.
func (w *mdWriter) utf(s string) {
	enc := encodeModifiedUTF8(s)
	if len(enc) > 0xFFFF {
		panic(fmt.Sprintf("writeUTF: %d bytes is too long", len(enc)))
	}
	w.buf = binary.BigEndian.AppendUint16(w.buf, uint16(len(enc)))
	w.buf = append(w.buf, enc...)
}

func encodeModifiedUTF8(s string) []byte {
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

// handle writes one state handle (any family) into w.
type handle func(w *mdWriter)

// ---- stream handles (section 4)

func nullStream() handle { return func(w *mdWriter) { w.i8(0) } }

func byteStream(name string, data []byte) handle {
	return func(w *mdWriter) {
		w.i8(1)
		w.utf(name)
		w.i32(int32(len(data)))
		w.raw(data)
	}
}

func fileStream(size int64, path string) handle {
	return func(w *mdWriter) { w.i8(2); w.i64(size); w.utf(path) }
}

func relativeStream(path string, size int64) handle {
	return func(w *mdWriter) { w.i8(6); w.utf(path); w.i64(size) }
}

func keyGroupsStream(start int32, offsets []int64, delegate handle) handle {
	return func(w *mdWriter) {
		w.i8(3)
		w.i32(start)
		w.i32(int32(len(offsets)))
		for _, o := range offsets {
			w.i64(o)
		}
		delegate(w)
	}
}

// segmentStream: scope 0 = EXCLUSIVE, 1 = SHARED.
func segmentStream(start, size int64, scope int32, path, logicalID string) handle {
	return func(w *mdWriter) {
		w.i8(15)
		w.i64(start)
		w.i64(size)
		w.i32(scope)
		w.utf(path)
		w.utf(logicalID)
	}
}

func emptySegment() handle { return func(w *mdWriter) { w.i8(16) } }

// ---- keyed handles (section 5)

func nullKeyed() handle { return func(w *mdWriter) { w.i8(0) } }

// keyGroups writes tag 3, 7 or 12 (12 adds the state handle id).
func keyGroups(tag byte, start int32, offsets []int64, delegate handle, id string) handle {
	return func(w *mdWriter) {
		w.i8(tag)
		w.i32(start)
		w.i32(int32(len(offsets)))
		for _, o := range offsets {
			w.i64(o)
		}
		delegate(w)
		if tag == 12 {
			w.utf(id)
		}
	}
}

type localFile struct {
	name string
	h    handle
}

func writeFileList(w *mdWriter, files []localFile) {
	w.i32(int32(len(files)))
	for _, f := range files {
		w.utf(f.name)
		f.h(w)
	}
}

// incremental writes tag 5 (old form) or 11.
func incremental(tag byte, checkpointID int64, backendID string, start, count int32, meta handle, shared, private []localFile, id string) handle {
	return func(w *mdWriter) {
		w.i8(tag)
		w.i64(checkpointID)
		w.utf(backendID)
		w.i32(start)
		w.i32(count)
		if tag == 11 {
			w.i64(12345) // checkpointed size
		}
		meta(w)
		writeFileList(w, shared)
		writeFileList(w, private)
		if tag == 11 {
			w.utf(id)
		}
	}
}

// changelog writes tag 8 (old form) or 14.
func changelog(tag byte, start, count int32, materialized, nonMaterialized []handle, materializationID, checkpointID int64, id string) handle {
	return func(w *mdWriter) {
		w.i8(tag)
		w.i32(start)
		w.i32(count)
		w.i64(999) // checkpointed size
		w.i32(int32(len(materialized)))
		for _, h := range materialized {
			h(w)
		}
		w.i32(int32(len(nonMaterialized)))
		for _, h := range nonMaterialized {
			h(w)
		}
		w.i64(materializationID)
		if tag == 14 {
			w.i64(checkpointID)
		}
		w.utf(id)
	}
}

type change struct {
	keyGroup int32
	data     []byte
}

func inMemoryChangelog(start, count int32, from, to int64, changes []change, id string) handle {
	return func(w *mdWriter) {
		w.i8(9)
		w.i32(start)
		w.i32(count)
		w.i64(from)
		w.i64(to)
		w.i32(int32(len(changes)))
		for _, c := range changes {
			w.i32(c.keyGroup)
			w.i32(int32(len(c.data)))
			w.raw(c.data)
		}
		w.utf(id)
	}
}

type increment struct {
	offset int64
	h      handle
}

// changelogFiles writes tag 10 (old form) or 13 (adds the storage identifier).
func changelogFiles(tag byte, start, count int32, incs []increment, id, storage string) handle {
	return func(w *mdWriter) {
		w.i8(tag)
		w.i32(start)
		w.i32(count)
		w.i32(int32(len(incs)))
		for _, inc := range incs {
			w.i64(inc.offset)
			inc.h(w)
		}
		w.i64(4096) // state size
		w.i64(4096) // checkpointed size
		w.utf(id)
		if tag == 13 {
			w.utf(storage)
		}
	}
}

// ---- operator handles (section 6)

type opStateMeta struct {
	name    string
	mode    byte
	offsets []int64
}

func writeOpStates(w *mdWriter, states []opStateMeta) {
	w.i32(int32(len(states)))
	for _, s := range states {
		w.utf(s.name)
		w.i8(s.mode)
		w.i32(int32(len(s.offsets)))
		for _, o := range s.offsets {
			w.i64(o)
		}
	}
}

func operatorStream(states []opStateMeta, delegate handle) handle {
	return func(w *mdWriter) {
		w.i8(4)
		writeOpStates(w, states)
		delegate(w)
	}
}

func fileMergingOperator(states []opStateMeta, taskOwnedDir, sharedDir string, isEmpty bool, delegate handle) handle {
	return func(w *mdWriter) {
		w.i8(17)
		writeOpStates(w, states)
		w.utf(taskOwnedDir)
		w.utf(sharedDir)
		w.bool(isEmpty)
		delegate(w)
	}
}

// ---- channel handles (section 7)

// channel is one channel-state handle. merged handles exist only in V6.
type channel struct {
	merged   bool
	subtask  int32
	a, b     int32
	offsets  []int64
	size     int64
	delegate handle
	info     []byte // merged only
}

func writeChannels(w *mdWriter, input bool, chans []channel) {
	w.i32(int32(len(chans)))
	for _, c := range chans {
		if w.version >= 6 {
			tag := byte(2)
			if input {
				tag = 1
			}
			if c.merged {
				tag += 2
			}
			w.i8(tag)
		} else if c.merged {
			panic("merged channel handles exist only in version 6")
		}
		w.i32(c.subtask)
		if c.merged {
			w.i64(c.size)
			c.delegate(w)
			w.i32(int32(len(c.info)))
			w.raw(c.info)
			continue
		}
		w.i32(c.a)
		w.i32(c.b)
		w.i32(int32(len(c.offsets)))
		for _, o := range c.offsets {
			w.i64(o)
		}
		w.i64(c.size)
		c.delegate(w)
	}
}

// ---- file structure (section 3)

type subtaskSpec struct {
	index         int32
	finished      bool // V3+: finished marker, no body
	managedOp     handle
	rawOp         handle
	managedKeyed  handle
	rawKeyed      handle
	inputChannels []channel
	outputChans   []channel
}

type operatorSpec struct {
	name, uid      string // V5+
	id             [16]byte
	parallelism    int32
	maxParallelism int32
	coordinator    handle // V3+; nil = NULL
	fullyFinished  bool   // V3+
	subtasks       []subtaskSpec
}

type masterSpec struct {
	version int32
	name    string
	payload []byte
}

type metadataSpec struct {
	version      int
	checkpointID int64
	masters      []masterSpec
	operators    []operatorSpec
	// trailer replaces the V4+ CheckpointProperties trailer when non-nil.
	trailer []byte
	// savepoint selects the default trailer's snapshot type.
	savepoint bool
}

func writeMetadata(spec metadataSpec) []byte {
	w := &mdWriter{version: spec.version}
	w.i32(MetadataMagic)
	w.i32(int32(spec.version))
	w.i64(spec.checkpointID)
	w.i32(int32(len(spec.masters)))
	for _, m := range spec.masters {
		inner := &mdWriter{}
		inner.i32(m.version)
		inner.utf(m.name)
		inner.i32(int32(len(m.payload)))
		inner.raw(m.payload)
		w.i32(masterStateMagic)
		w.i32(int32(len(inner.buf)))
		w.raw(inner.buf)
	}
	w.i32(int32(len(spec.operators)))
	for _, op := range spec.operators {
		writeOperator(w, op)
	}
	if spec.version >= 4 {
		if spec.trailer != nil {
			w.raw(spec.trailer)
		} else {
			w.raw(javaCheckpointProperties(spec.savepoint))
		}
	}
	return w.buf
}

func orNull(h handle) handle {
	if h == nil {
		return func(w *mdWriter) { w.i8(0) }
	}
	return h
}

func writeOperator(w *mdWriter, op operatorSpec) {
	if w.version >= 5 {
		w.utf(op.name)
		w.utf(op.uid)
	}
	w.raw(op.id[:])
	w.i32(op.parallelism)
	w.i32(op.maxParallelism)
	if w.version == 2 {
		w.i32(1) // chain length
	} else {
		orNull(op.coordinator)(w)
	}
	if op.fullyFinished {
		w.i32(-1)
		return
	}
	w.i32(int32(len(op.subtasks)))
	for _, st := range op.subtasks {
		if st.finished {
			w.i32(-st.index - 1)
			continue
		}
		w.i32(st.index)
		if w.version == 2 {
			w.i64(-1) // duration
			w.i32(0)  // legacy state count
		}
		for _, h := range []handle{st.managedOp, st.rawOp} {
			if h == nil {
				w.i32(0)
				continue
			}
			w.i32(1)
			h(w)
		}
		orNull(st.managedKeyed)(w)
		orNull(st.rawKeyed)(w)
		if w.version >= 3 {
			writeChannels(w, true, st.inputChannels)
			writeChannels(w, false, st.outputChans)
		}
	}
}

// ---- V4+ trailer: CheckpointProperties via Java object serialization

type javaWriter struct {
	w       mdWriter
	handles int32
	strs    map[string]int32
	classes map[string]int32
}

func (j *javaWriter) newHandle() int32 { h := j.handles; j.handles++; return h }

func (j *javaWriter) str(s string) {
	if h, ok := j.strs[s]; ok {
		j.w.i8(tcReference)
		j.w.i32(jBaseHandle + h)
		return
	}
	j.w.i8(tcString)
	j.strs[s] = j.newHandle()
	j.w.utf(s)
}

type javaField struct {
	typ       byte
	name, sig string
}

// classDesc writes a class descriptor (or a back-reference to it); super
// writes the superclass descriptor.
func (j *javaWriter) classDesc(name string, suid int64, flags byte, fields []javaField, super func()) {
	if h, ok := j.classes[name]; ok {
		j.w.i8(tcReference)
		j.w.i32(jBaseHandle + h)
		return
	}
	j.w.i8(tcClassDesc)
	j.w.utf(name)
	j.classes[name] = j.newHandle()
	j.w.i64(suid)
	j.w.i8(flags)
	j.w.buf = binary.BigEndian.AppendUint16(j.w.buf, uint16(len(fields)))
	for _, f := range fields {
		j.w.i8(f.typ)
		j.w.utf(f.name)
		if f.typ == 'L' {
			j.str(f.sig)
		}
	}
	j.w.i8(tcEndBlockData)
	if super == nil {
		j.w.i8(tcNull)
	} else {
		super()
	}
}

func (j *javaWriter) enum(class, constant string) {
	j.w.i8(tcEnum)
	j.classDesc(class, 0, 0x12, nil, func() { j.classDesc("java.lang.Enum", 0, 0x12, nil, nil) })
	j.newHandle()
	j.str(constant)
}

// javaCheckpointProperties writes what Flink's CheckpointProperties
// serialization produces for a retained checkpoint or a savepoint.
func javaCheckpointProperties(savepoint bool) []byte {
	j := &javaWriter{strs: map[string]int32{}, classes: map[string]int32{}}
	j.w.buf = []byte{0xAC, 0xED, 0x00, 0x05}
	j.w.i8(tcObject)
	j.classDesc(checkpointPropertiesClass, 2, scSerializable, []javaField{
		{'Z', "discardCancelled", ""}, {'Z', "discardFailed", ""}, {'Z', "discardFinished", ""},
		{'Z', "discardSubsumed", ""}, {'Z', "discardSuspended", ""}, {'Z', "forced", ""}, {'Z', "unclaimed", ""},
		{'L', "checkpointType", "Lorg/apache/flink/runtime/checkpoint/SnapshotType;"},
	}, nil)
	j.newHandle()
	if savepoint {
		j.w.raw([]byte{0, 0, 0, 0, 0, 1, 0})
		j.w.i8(tcObject)
		j.classDesc("org.apache.flink.runtime.checkpoint.SavepointType", -0x5f782cf75ba7eb48, scSerializable, []javaField{
			{'L', "formatType", "Lorg/apache/flink/core/execution/SavepointFormatType;"},
			{'L', "name", "Ljava/lang/String;"},
			{'L', "postCheckpointAction", "Lorg/apache/flink/runtime/checkpoint/SavepointType$PostCheckpointAction;"},
		}, nil)
		j.newHandle()
		j.enum("org.apache.flink.core.execution.SavepointFormatType", "CANONICAL")
		j.str("Savepoint")
		j.enum("org.apache.flink.runtime.checkpoint.SavepointType$PostCheckpointAction", "NONE")
		return j.w.buf
	}
	j.w.raw([]byte{1, 1, 1, 1, 1, 0, 0})
	j.w.i8(tcObject)
	j.classDesc("org.apache.flink.runtime.checkpoint.CheckpointType", -0x2921b0fcfa51e2c6, scSerializable, []javaField{
		{'L', "name", "Ljava/lang/String;"},
		{'L', "sharingFilesStrategy", "Lorg/apache/flink/runtime/checkpoint/SnapshotType$SharingFilesStrategy;"},
	}, nil)
	j.newHandle()
	j.str("Checkpoint")
	j.enum("org.apache.flink.runtime.checkpoint.SnapshotType$SharingFilesStrategy", "FORWARD_BACKWARD")
	return j.w.buf
}

func opID(n int) [16]byte {
	var id [16]byte
	binary.BigEndian.PutUint64(id[:8], uint64(n)*0x9E3779B97F4A7C15)
	binary.BigEndian.PutUint64(id[8:], uint64(n)+1)
	return id
}

// uuidFor makes a deterministic UUID-shaped file name.
func uuidFor(n int) string {
	a := uint64(n)*0x9E3779B97F4A7C15 + 0x1234
	b := uint64(n)*0xBF58476D1CE4E5B9 + 0x5678
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", uint32(a>>32), uint16(a>>16), uint16(a), uint16(b>>48), b&0xFFFFFFFFFFFF)
}
