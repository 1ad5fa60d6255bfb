package checkpoint

import "fmt"

// HandleKind says which stream-handle type referenced a file. It is one
// byte (a big checkpoint has hundreds of thousands of Files) and reads
// and writes as its name in JSON.
type HandleKind uint8

const (
	// KindRelative is a RelativeFileStateHandle (tag 6): a path relative to the
	// directory holding _metadata, resolved by the reader.
	KindRelative HandleKind = iota + 1
	// KindAbsolute is a FileStateHandle (tag 2): an absolute path string.
	KindAbsolute
	// KindSegment is a SegmentFileStateHandle (tag 15): a byte range inside a
	// physical file shared by many handles (file merging, Flink 1.20+).
	KindSegment
)

var handleKindNames = [...]string{"", "relative", "absolute", "segment"}

func (k HandleKind) String() string { return enumName(handleKindNames[:], int(k)) }

// MarshalText writes the kind's name.
func (k HandleKind) MarshalText() ([]byte, error) {
	return enumText(handleKindNames[:], int(k), "handle kind")
}

// UnmarshalText reads a kind's name.
func (k *HandleKind) UnmarshalText(b []byte) error {
	i, err := enumParse(handleKindNames[:], string(b), "handle kind")
	*k = HandleKind(i)
	return err
}

// Scope says who owns a referenced file, which decides when it may go away.
// Like HandleKind it is one byte that reads and writes as its name.
type Scope uint8

const (
	// ScopeExclusive: state of this checkpoint only (chk-N/ or savepoint dir):
	// operator state, key-group state, RocksDB metadata, channel state.
	ScopeExclusive Scope = iota + 1
	// ScopeShared: may be referenced by other checkpoints too: incremental
	// RocksDB shared files (shared/), changelog (DSTL) files, file-merging
	// segments written with SHARED scope.
	ScopeShared
	// ScopePrivate: RocksDB private files of an incremental handle (MANIFEST,
	// CURRENT, OPTIONS, and every file of a native full snapshot).
	ScopePrivate
	// ScopeTaskOwned: file-merging segments written with EXCLUSIVE scope, which
	// live in the TaskManager-owned taskowned/ directory.
	ScopeTaskOwned
)

var scopeNames = [...]string{"", "exclusive", "shared", "private", "task-owned"}

func (s Scope) String() string { return enumName(scopeNames[:], int(s)) }

// MarshalText writes the scope's name.
func (s Scope) MarshalText() ([]byte, error) { return enumText(scopeNames[:], int(s), "scope") }

// UnmarshalText reads a scope's name.
func (s *Scope) UnmarshalText(b []byte) error {
	i, err := enumParse(scopeNames[:], string(b), "scope")
	*s = Scope(i)
	return err
}

func enumName(names []string, i int) string {
	if i < len(names) {
		return names[i]
	}
	return fmt.Sprintf("unknown(%d)", i)
}

func enumText(names []string, i int, what string) ([]byte, error) {
	if i < len(names) {
		return []byte(names[i]), nil
	}
	return nil, fmt.Errorf("checkpoint: %s %d has no name", what, i)
}

func enumParse(names []string, s, what string) (int, error) {
	for i, n := range names {
		if n == s {
			return i, nil
		}
	}
	return 0, fmt.Errorf("checkpoint: %s %q is not one of %q", what, s, names[1:])
}

// scopeRank orders scopes by how long the file may outlive this checkpoint;
// when one path is referenced with several scopes the widest one is reported.
func scopeRank(s Scope) int {
	switch s {
	case ScopeShared:
		return 3
	case ScopeTaskOwned:
		return 2
	case ScopePrivate:
		return 1
	default:
		return 0
	}
}

// ByteRange is a segment [Offset, Offset+Length) of a physical file.
type ByteRange struct {
	Offset int64 `json:"offset"`
	Length int64 `json:"length"`
}

// File is one referenced file, de-duplicated over all handles that point at it.
type File struct {
	// Path is absolute and normalised (see NormalizePath).
	Path  string     `json:"path"`
	Kind  HandleKind `json:"kind"`
	Scope Scope      `json:"scope"` // the widest of its handles' scopes (scopeRank)
	// Size is the largest state size Flink recorded for the file, -1 if no
	// handle recorded one (Flink writes -1 for unknown; segments have none,
	// their extent is in Ranges).
	Size int64 `json:"size"`
	// Ranges lists the distinct byte ranges of segment handles, by offset.
	Ranges []ByteRange `json:"ranges,omitempty"`
	// References counts the handles pointing at this file.
	References int `json:"references"`
}

// Reference is one file-referencing handle occurrence, in file order, with
// where it was found (Metadata.References). Use it for diagnostics; Files
// is the de-duplicated set.
type Reference struct {
	Path       string     // resolved, normalised
	Raw        string     // path string as written in the file
	Kind       HandleKind //
	Scope      Scope      //
	Size       int64      // state size field (segment: segment length)
	Range      *ByteRange // segment handles only
	LogicalID  string     // segment handles only
	Context    string     // e.g. managed-keyed-incremental-shared, input-channel
	LocalName  string     // RocksDB local file name for incremental shared/private entries
	OperatorID string     //
	Subtask    int        // subtask index, -1 when not inside a subtask (never for files today)
	Offset     int64      // byte offset of the handle's tag in _metadata
}

// ManagedDir is a file-merging directory a FileMergingOperatorStreamStateHandle
// (tag 17) declares as in use by the job.
type ManagedDir struct {
	Path  string `json:"path"`
	Scope Scope  `json:"scope"` // ScopeTaskOwned or ScopeShared
}

// InlineStats counts ByteStreamStateHandles: state stored inside _metadata.
// Their names look like paths but no such file was ever written.
type InlineStats struct {
	Handles int   `json:"handles"`
	Bytes   int64 `json:"bytes"`
}

// MasterState is a JobManager checkpoint hook state; never references files.
type MasterState struct {
	Name         string `json:"name"`
	Version      int32  `json:"version"`
	PayloadBytes int    `json:"payloadBytes"`
}

// Operator is one operator state entry.
type Operator struct {
	// ID is the 32-hex-char operator ID exactly as Flink prints it.
	ID             string `json:"id"`
	Name           string `json:"name,omitempty"` // V5+, empty = not set
	UID            string `json:"uid,omitempty"`  // V5+, empty = not set
	Parallelism    int    `json:"parallelism"`
	MaxParallelism int    `json:"maxParallelism"`
	// Subtasks is the number of stored subtask entries (stateful or finished);
	// subtasks without any state are not stored, so it can be < Parallelism.
	Subtasks         int  `json:"subtasks"`
	FinishedSubtasks int  `json:"finishedSubtasks,omitempty"`
	FullyFinished    bool `json:"fullyFinished,omitempty"`
	CoordinatorState bool `json:"coordinatorState,omitempty"`
}

// Properties is the V4+ CheckpointProperties trailer.
type Properties struct {
	// SnapshotType is "checkpoint" or "savepoint" (from the class of checkpointType).
	SnapshotType string `json:"snapshotType"`
	// Name is CheckpointType/SavepointType.name, e.g. "Checkpoint", "Full Checkpoint",
	// "Savepoint", "Terminate Savepoint".
	Name                 string `json:"name,omitempty"`
	SharingFilesStrategy string `json:"sharingFilesStrategy,omitempty"` // checkpoints
	FormatType           string `json:"formatType,omitempty"`           // savepoints: CANONICAL or NATIVE
	PostCheckpointAction string `json:"postCheckpointAction,omitempty"` // savepoints
	Forced               bool   `json:"forced"`
	Unclaimed            bool   `json:"unclaimed"`
	DiscardSubsumed      bool   `json:"discardSubsumed"`
	DiscardFinished      bool   `json:"discardFinished"`
	DiscardCancelled     bool   `json:"discardCancelled"`
	DiscardFailed        bool   `json:"discardFailed"`
	DiscardSuspended     bool   `json:"discardSuspended"`
}

// Metadata is everything the reader extracts from one _metadata file.
type Metadata struct {
	Version      int   `json:"version"`
	CheckpointID int64 `json:"checkpointId"`
	// Location is the normalised location of the _metadata file and Dir the
	// directory relative handles were resolved against (empty if not given).
	Location     string        `json:"location,omitempty"`
	Dir          string        `json:"dir,omitempty"`
	MasterStates []MasterState `json:"masterStates,omitempty"`
	Operators    []Operator    `json:"operators"`
	// Files is the complete set of referenced files, sorted by path.
	Files       []File       `json:"files"`
	ManagedDirs []ManagedDir `json:"managedDirs,omitempty"`
	Inline      InlineStats  `json:"inline"`
	// HandleCounts counts every tag byte read, keyed "stream:N", "keyed:N",
	// "operator:N", "channel:N" (V6 tags) or "channel:untagged" (V3-V5).
	HandleCounts map[string]int `json:"handleCounts"`
	// TrailerBytes is the length of the V4+ Java-serialized trailer.
	TrailerBytes int `json:"trailerBytes"`
	// Properties is nil for V2/V3 and when the trailer is a serialized null.
	Properties     *Properties `json:"properties,omitempty"`
	PropertiesNull bool        `json:"propertiesNull,omitempty"`
	// refs holds every file-referencing handle in file order (References).
	refs refTable
}
