package flinksim

import (
	"encoding/binary"
)

// Flink _metadata constants (Checkpoints.java, MetadataV4Serializer).
const (
	metadataMagic   = 0x4960672D
	metadataVersion = 4 // what Flink 1.16 to 1.20 write
)

// snapshotKind selects the CheckpointProperties a _metadata trailer carries.
type snapshotKind struct {
	savepoint bool
	// Savepoints: SavepointType name ("Savepoint", "Suspend Savepoint",
	// "Terminate Savepoint"), its post-checkpoint action (NONE, SUSPEND,
	// TERMINATE) and format (CANONICAL, NATIVE).
	name, action, format string
	// The seven booleans of CheckpointProperties, in the alphabetical order
	// Java serialization writes them: discardCancelled, discardFailed,
	// discardFinished, discardSubsumed, discardSuspended, forced, unclaimed.
	flags [7]bool
}

// savepointKind is what Flink records for a savepoint: a stop-with-savepoint
// is a "synchronous" savepoint that suspends (or, with drain, terminates)
// the job. Savepoints discard nothing and are forced.
func savepointKind(stop, drain bool, format string) snapshotKind {
	k := snapshotKind{savepoint: true, name: "Savepoint", action: "NONE", format: format}
	switch {
	case stop && drain:
		k.name, k.action = "Terminate Savepoint", "TERMINATE"
	case stop:
		k.name, k.action = "Suspend Savepoint", "SUSPEND"
	}
	k.flags[5] = true // forced
	return k
}

// retainedCheckpointKind is a periodic checkpoint retained on cancellation
// (externalized): discarded when subsumed or when the job finishes only.
func retainedCheckpointKind() snapshotKind {
	return snapshotKind{name: "Checkpoint", flags: [7]bool{false, false, true, true, false, false, false}}
}

// operatorRef is one operator entry of a snapshot: stateless, so it holds
// no subtask state and references no file.
type operatorRef struct {
	id                          [16]byte
	parallelism, maxParallelism int32
}

// encodeMetadata writes a version 4 _metadata: header, no master state, one
// entry per operator with no subtask state, then the Java-serialized
// CheckpointProperties trailer, byte for byte as Flink 1.20 writes it.
func encodeMetadata(checkpointID int64, ops []operatorRef, kind snapshotKind) []byte {
	b := make([]byte, 0, 1024)
	b = binary.BigEndian.AppendUint32(b, metadataMagic)
	b = binary.BigEndian.AppendUint32(b, metadataVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(checkpointID))
	b = binary.BigEndian.AppendUint32(b, 0) // master states
	b = binary.BigEndian.AppendUint32(b, uint32(len(ops)))
	for _, op := range ops {
		b = append(b, op.id[:]...)
		b = binary.BigEndian.AppendUint32(b, uint32(op.parallelism))
		b = binary.BigEndian.AppendUint32(b, uint32(op.maxParallelism))
		b = append(b, 0)                        // coordinator state: NULL handle
		b = binary.BigEndian.AppendUint32(b, 0) // subtask states
	}
	return append(b, checkpointProperties(kind)...)
}

// Java object serialization stream constants (java.io.ObjectStreamConstants).
const (
	tcNull         = 0x70
	tcReference    = 0x71
	tcClassDesc    = 0x72
	tcObject       = 0x73
	tcString       = 0x74
	tcEnum         = 0x7E
	tcEndBlockData = 0x78
	baseHandle     = 0x7E0000
	scSerializable = 0x02
	scEnum         = 0x10
)

// javaStream writes the small subset of Java serialization Flink uses for
// CheckpointProperties: objects, class descriptors, strings and enums, with
// back-references to strings and classes already written.
type javaStream struct {
	b       []byte
	handles int32
	refs    map[string]int32 // "s:" strings and "c:" class names
}

type javaField struct {
	typ       byte // 'Z' boolean, 'L' object
	name, sig string
}

func (j *javaStream) newHandle() int32 { h := j.handles; j.handles++; return h }

func (j *javaStream) utf(s string) {
	// Every string written here is ASCII, so modified UTF-8 is plain bytes.
	j.b = binary.BigEndian.AppendUint16(j.b, uint16(len(s)))
	j.b = append(j.b, s...)
}

func (j *javaStream) backRef(key string) bool {
	h, ok := j.refs[key]
	if ok {
		j.b = append(j.b, tcReference)
		j.b = binary.BigEndian.AppendUint32(j.b, uint32(baseHandle+h))
	}
	return ok
}

func (j *javaStream) str(s string) {
	if j.backRef("s:" + s) {
		return
	}
	j.b = append(j.b, tcString)
	j.refs["s:"+s] = j.newHandle()
	j.utf(s)
}

// classDesc writes a class descriptor, or a reference to it if written
// before; super writes the superclass descriptor (nil: none).
func (j *javaStream) classDesc(name string, suid int64, flags byte, fields []javaField, super func()) {
	if j.backRef("c:" + name) {
		return
	}
	j.b = append(j.b, tcClassDesc)
	j.utf(name)
	j.refs["c:"+name] = j.newHandle()
	j.b = binary.BigEndian.AppendUint64(j.b, uint64(suid))
	j.b = append(j.b, flags)
	j.b = binary.BigEndian.AppendUint16(j.b, uint16(len(fields)))
	for _, f := range fields {
		j.b = append(j.b, f.typ)
		j.utf(f.name)
		if f.typ == 'L' {
			j.str(f.sig)
		}
	}
	j.b = append(j.b, tcEndBlockData)
	if super == nil {
		j.b = append(j.b, tcNull)
		return
	}
	super()
}

func (j *javaStream) enum(class, constant string) {
	j.b = append(j.b, tcEnum)
	j.classDesc(class, 0, scSerializable|scEnum, nil, func() {
		j.classDesc("java.lang.Enum", 0, scSerializable|scEnum, nil, nil)
	})
	j.newHandle()
	j.str(constant)
}

// Serial version UIDs of the Flink classes, as found in real _metadata.
const (
	suidCheckpointProperties = 2
	suidSavepointType        = -0x5f782cf75ba7eb48 // a087d308a45814b8
	suidCheckpointType       = -0x2921b0fcfa51e2c6 // d6de4f0305ae1d3a
)

// checkpointProperties serializes a CheckpointProperties object the way
// Flink's ObjectOutputStream does.
func checkpointProperties(k snapshotKind) []byte {
	j := &javaStream{b: []byte{0xAC, 0xED, 0x00, 0x05}, refs: map[string]int32{}}
	j.b = append(j.b, tcObject)
	j.classDesc("org.apache.flink.runtime.checkpoint.CheckpointProperties", suidCheckpointProperties, scSerializable, []javaField{
		{'Z', "discardCancelled", ""}, {'Z', "discardFailed", ""}, {'Z', "discardFinished", ""},
		{'Z', "discardSubsumed", ""}, {'Z', "discardSuspended", ""}, {'Z', "forced", ""}, {'Z', "unclaimed", ""},
		{'L', "checkpointType", "Lorg/apache/flink/runtime/checkpoint/SnapshotType;"},
	}, nil)
	j.newHandle()
	for _, f := range k.flags {
		if f {
			j.b = append(j.b, 1)
		} else {
			j.b = append(j.b, 0)
		}
	}
	j.b = append(j.b, tcObject)
	if k.savepoint {
		j.classDesc("org.apache.flink.runtime.checkpoint.SavepointType", suidSavepointType, scSerializable, []javaField{
			{'L', "formatType", "Lorg/apache/flink/core/execution/SavepointFormatType;"},
			{'L', "name", "Ljava/lang/String;"},
			{'L', "postCheckpointAction", "Lorg/apache/flink/runtime/checkpoint/SavepointType$PostCheckpointAction;"},
		}, nil)
		j.newHandle()
		j.enum("org.apache.flink.core.execution.SavepointFormatType", k.format)
		j.str(k.name)
		j.enum("org.apache.flink.runtime.checkpoint.SavepointType$PostCheckpointAction", k.action)
		return j.b
	}
	j.classDesc("org.apache.flink.runtime.checkpoint.CheckpointType", suidCheckpointType, scSerializable, []javaField{
		{'L', "name", "Ljava/lang/String;"},
		{'L', "sharingFilesStrategy", "Lorg/apache/flink/runtime/checkpoint/SnapshotType$SharingFilesStrategy;"},
	}, nil)
	j.newHandle()
	j.str(k.name)
	j.enum("org.apache.flink.runtime.checkpoint.SnapshotType$SharingFilesStrategy", "FORWARD_BACKWARD")
	return j.b
}
