// Package checkpointtest writes _metadata files for tests of the packages
// that read them: a test that guards a deletion builds the bytes it needs
// here instead of depending on fixtures outside the repository.
//
// The writer follows FLINK_METADATA_FORMAT.md, independently of the
// reader: a version 3 file (no properties trailer) with one operator whose
// one subtask holds one incremental RocksDB keyed handle. Shared files go
// in its shared list; every other file in its private list, named by
// absolute path (a checkpoint's FileStateHandle) or, when Relative, by a
// name relative to the _metadata's dir (a savepoint's
// RelativeFileStateHandle).
package checkpointtest

import (
	"encoding/binary"
	"fmt"
	"unicode/utf16"

	"github.com/flinkmaint/flinkmaint/internal/checkpoint"
)

// File is one file a _metadata names.
type File struct {
	// Path is the absolute path or URI; with Relative, the file's name
	// relative to the dir holding the _metadata.
	Path     string
	Relative bool
	// Shared puts the file in the handle's shared list (incremental
	// state other checkpoints may name too); otherwise it is private.
	Shared bool
	Size   int64
}

// Spec is one _metadata.
type Spec struct {
	CheckpointID int64
	Files        []File
}

// Metadata returns the bytes of the _metadata spec describes.
func Metadata(spec Spec) []byte {
	w := &writer{}
	w.i32(checkpoint.MetadataMagic)
	w.i32(3) // version
	w.i64(spec.CheckpointID)
	w.i32(0) // master states
	w.i32(1) // operators
	w.raw(operatorID(spec.CheckpointID))
	w.i32(1)   // parallelism
	w.i32(128) // max parallelism
	w.i8(0)    // no coordinator state
	w.i32(1)   // subtask states
	w.i32(0)   // subtask index
	w.i32(0)   // managed operator state handles
	w.i32(0)   // raw operator state handles
	// Managed keyed state: IncrementalRemoteKeyedStateHandle (tag 11).
	w.i8(11)
	w.i64(spec.CheckpointID)
	w.utf("backend-0")
	w.i32(0)   // key-group range start
	w.i32(128) // key-group count
	w.i64(0)   // checkpointed size
	w.i8(0)    // no meta state handle
	var shared, private []File
	for _, f := range spec.Files {
		if f.Shared {
			shared = append(shared, f)
		} else {
			private = append(private, f)
		}
	}
	for _, list := range [][]File{shared, private} {
		w.i32(int32(len(list)))
		for i, f := range list {
			w.utf(fmt.Sprintf("%06d.sst", i))
			if f.Relative {
				w.i8(6) // RelativeFileStateHandle: path, size
				w.utf(f.Path)
				w.i64(f.Size)
			} else {
				w.i8(2) // FileStateHandle: size, path
				w.i64(f.Size)
				w.utf(f.Path)
			}
		}
	}
	w.utf("handle-0") // state handle id
	w.i8(0)           // no raw keyed state
	w.i32(0)          // input channel states
	w.i32(0)          // output channel states
	return w.buf
}

type writer struct{ buf []byte }

func (w *writer) i8(v byte)    { w.buf = append(w.buf, v) }
func (w *writer) i32(v int32)  { w.buf = binary.BigEndian.AppendUint32(w.buf, uint32(v)) }
func (w *writer) i64(v int64)  { w.buf = binary.BigEndian.AppendUint64(w.buf, uint64(v)) }
func (w *writer) raw(b []byte) { w.buf = append(w.buf, b...) }
func (w *writer) utf(s string) {
	// Java DataOutput.writeUTF: u16 length, modified UTF-8.
	var enc []byte
	for _, u := range utf16.Encode([]rune(s)) {
		switch {
		case u >= 0x0001 && u <= 0x007F:
			enc = append(enc, byte(u))
		case u <= 0x07FF:
			enc = append(enc, 0xC0|byte(u>>6), 0x80|byte(u&0x3F))
		default:
			enc = append(enc, 0xE0|byte(u>>12), 0x80|byte(u>>6&0x3F), 0x80|byte(u&0x3F))
		}
	}
	w.buf = binary.BigEndian.AppendUint16(w.buf, uint16(len(enc)))
	w.buf = append(w.buf, enc...)
}

func operatorID(n int64) []byte {
	id := make([]byte, 16)
	binary.BigEndian.PutUint64(id[:8], uint64(n)*0x9E3779B97F4A7C15)
	binary.BigEndian.PutUint64(id[8:], uint64(n)+1)
	return id
}
