package mdwrite

import "fmt"

// File is one file a snapshot's _metadata names, with the state size its
// handle records (0 records none).
type File struct {
	Path string
	Size int64
}

// Snapshot is a checkpoint or savepoint whose _metadata Bytes writes, as
// Flink 1.16 to 1.20 write it (version 4): one keyed operator whose state
// handles name exactly the files given.
type Snapshot struct {
	// CheckpointID is the id the _metadata records.
	CheckpointID int64
	// Savepoint makes it a canonical savepoint; otherwise it is a
	// checkpoint.
	Savepoint bool
	// Exclusive are files named relative to the dir of the _metadata, as
	// Flink names a savepoint's files and a checkpoint's own chk-N files.
	Exclusive []File
	// Shared are files named by absolute path, as an incremental RocksDB
	// checkpoint names its shared/ files (its own job's, or those of the
	// job it was restored from in CLAIM mode). With any, the state is one
	// incremental handle whose shared list they are and whose private list
	// the exclusive files are; without, one key-groups handle per
	// exclusive file.
	Shared []File
	// Private are files named by absolute path that are not shared: a
	// checkpoint's own exclusive state as a FileStateHandle names it. With
	// any, the state is one incremental handle as with Shared.
	Private []File
}

// Bytes writes the snapshot's _metadata.
func (s Snapshot) Bytes() []byte {
	op := Operator{ID: OpID(1), Parallelism: 1, MaxParallelism: 128}
	if len(s.Shared) > 0 || len(s.Private) > 0 {
		shared := make([]LocalFile, len(s.Shared))
		for i, f := range s.Shared {
			shared[i] = LocalFile{Name: fmt.Sprintf("%06d.sst", i+1), H: FileStream(f.Size, f.Path)}
		}
		var private []LocalFile
		for i, f := range s.Exclusive {
			private = append(private, LocalFile{Name: fmt.Sprintf("MANIFEST-%06d", i+1), H: RelativeStream(f.Path, f.Size)})
		}
		for i, f := range s.Private {
			private = append(private, LocalFile{Name: fmt.Sprintf("OPTIONS-%06d", i+1), H: FileStream(f.Size, f.Path)})
		}
		op.Subtasks = []Subtask{{ManagedKeyed: Incremental(11, s.CheckpointID, UUIDFor(0), 0, 128,
			ByteStream("meta", []byte{1}), shared, private, UUIDFor(1))}}
	} else {
		tag := byte(12) // a checkpoint's key groups, with their handle id
		if s.Savepoint {
			tag = 7 // a canonical savepoint's
		}
		for i, f := range s.Exclusive {
			op.Subtasks = append(op.Subtasks, Subtask{Index: int32(i),
				ManagedKeyed: KeyGroups(tag, int32(i), []int64{0}, RelativeStream(f.Path, f.Size), UUIDFor(i+2))})
		}
		op.Parallelism = max(1, int32(len(s.Exclusive)))
	}
	return Metadata(Spec{Version: 4, CheckpointID: s.CheckpointID, Operators: []Operator{op}, Savepoint: s.Savepoint})
}

// Savepoint is the _metadata of a canonical savepoint that names files,
// relative to its own dir.
func Savepoint(files ...string) []byte {
	return Snapshot{CheckpointID: 1, Savepoint: true, Exclusive: named(files)}.Bytes()
}

// Checkpoint is the _metadata of incremental RocksDB checkpoint id
// that names shared files by absolute path (fully qualified, as Flink
// writes them: hdfs://nn:8020/…/<job>/shared/<uuid>, file:/…).
func Checkpoint(id int64, shared ...string) []byte {
	return Snapshot{CheckpointID: id, Shared: named(shared)}.Bytes()
}

func named(paths []string) []File {
	files := make([]File, len(paths))
	for i, p := range paths {
		files[i] = File{Path: p}
	}
	return files
}
