// Package checkpointtest describes the _metadata a test needs by the files
// it names: a test that guards a deletion builds the bytes here instead
// of depending on fixtures outside the repository. The bytes are written
// by internal/testsupport/mdwrite, from the format spec, independently of
// the reader.
package checkpointtest

import (
	"fmt"

	"github.com/flinkmaint/flinkmaint/internal/testsupport/mdwrite"
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

// Metadata returns the bytes of the _metadata spec describes (see
// mdwrite.Snapshot): shared files by absolute path in an incremental
// handle's shared list, private ones by absolute path (a checkpoint's
// FileStateHandle) or relative to the _metadata's dir (a savepoint's
// RelativeFileStateHandle).
func Metadata(spec Spec) []byte {
	s := mdwrite.Snapshot{CheckpointID: spec.CheckpointID}
	for _, f := range spec.Files {
		mf := mdwrite.File{Path: f.Path, Size: f.Size}
		switch {
		case f.Shared && f.Relative:
			panic(fmt.Sprintf("checkpointtest: shared file %q named relative: Flink names shared state by absolute path", f.Path))
		case f.Shared:
			s.Shared = append(s.Shared, mf)
		case f.Relative:
			s.Exclusive = append(s.Exclusive, mf)
		default:
			s.Private = append(s.Private, mf)
		}
	}
	return s.Bytes()
}
