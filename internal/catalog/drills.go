package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// DrillDir holds the latest restore-drill result of every snapshot drilled,
// one file per snapshot, beside the savepoint catalog.
const DrillDir = ".flinkmaint/drills"

// Drill outcomes.
const (
	DrillPassed = "passed"
	DrillFailed = "failed"
	// DrillInconclusive: the snapshot disappeared during the drill (its job
	// subsumed the checkpoint), so the drill proves nothing either way.
	DrillInconclusive = "inconclusive"
)

// DrillRecord is the latest drill of one snapshot.
type DrillRecord struct {
	// Snapshot is the checkpoint or savepoint directory, fully qualified.
	Snapshot string     `json:"snapshot"`
	Kind     string     `json:"kind"` // checkpoint or savepoint
	Job      LogicalJob `json:"job"`
	RunID    string     `json:"runId"`
	// Tier is 1 (storage proof) or 2 (a real restore on the drill cluster).
	Tier    int       `json:"tier"`
	Outcome string    `json:"outcome"`
	Error   string    `json:"error,omitempty"`
	At      time.Time `json:"at"`
}

// DrillStore keeps drill records under Root/.flinkmaint/drills on FS.
type DrillStore struct {
	FS   storage.FileSystem
	Root string
}

func (s DrillStore) dir() string { return strings.TrimRight(s.Root, "/") + "/" + DrillDir }

// Put records r as the snapshot's latest drill, replacing an older one. It
// writes a new file and renames it over the old, so a reader sees one or
// the other, and a retry writes the same again.
func (s DrillStore) Put(ctx context.Context, r DrillRecord) error {
	r.Snapshot = strings.TrimRight(r.Snapshot, "/")
	if r.Snapshot == "" || r.RunID == "" || r.Outcome == "" {
		return fmt.Errorf("%w: drill record of %q by run %q with outcome %q: all are required", ErrInvalid, r.Snapshot, r.RunID, r.Outcome)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return replaceFile(ctx, s.FS, s.dir(), entryName(r.Snapshot), data)
}

// replaceFile writes dir/name through a temporary file renamed over the
// old one, so a reader sees one or the other, and a retry writes the same
// again.
func replaceFile(ctx context.Context, fs storage.FileSystem, dir, name string, data []byte) error {
	if err := fs.MkdirAll(ctx, dir); err != nil {
		return err
	}
	file := dir + "/" + name
	tmp := file + ".tmp"
	if err := fs.Remove(ctx, tmp); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	if err := fs.WriteFile(ctx, tmp, data); err != nil {
		return err
	}
	if err := fs.Remove(ctx, file); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	return fs.Rename(ctx, tmp, file)
}

// List reads every record, sorted by snapshot; a missing directory is
// empty.
func (s DrillStore) List(ctx context.Context) ([]DrillRecord, error) {
	return listLatest(ctx, s.FS, s.dir(), drillRecords)
}

// listLatest reads the index and the record files of dir, a file
// replacing the index's record of the same snapshot, sorted by snapshot.
func listLatest[T any](ctx context.Context, fs storage.FileSystem, dir string, kind recordKind[T]) ([]T, error) {
	bySnapshot, err := readIndex(ctx, fs, dir, kind)
	if err != nil {
		return nil, err
	}
	files, err := readRecords[T](ctx, fs, dir)
	for _, r := range files {
		p, _ := kind.path("", r)
		bySnapshot[p] = r // a file is newer than the index
	}
	keys := make([]string, 0, len(bySnapshot))
	for p := range bySnapshot {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	out := make([]T, 0, len(keys))
	for _, p := range keys {
		out = append(out, bySnapshot[p])
	}
	return out, err
}

// readRecords reads every JSON record in dir; a missing directory is
// empty, one that does not decode is ErrInvalid naming the file.
func readRecords[T any](ctx context.Context, fs storage.FileSystem, dir string) ([]T, error) {
	files, err := jsonFiles(ctx, fs, dir)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(files))
	for _, f := range files {
		data, err := fs.ReadFile(ctx, f, maxEntryBytes)
		if errors.Is(err, storage.ErrNotFound) {
			continue // replaced meanwhile
		}
		if err != nil {
			return nil, err
		}
		var r T
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, f, err)
		}
		out = append(out, r)
	}
	return out, nil
}
