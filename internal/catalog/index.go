package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// IndexName is the compacted form of a record directory (the savepoint
// catalog, the drill records) beside its record files: Compact merges
// every record into it and removes their files, so the directory costs
// the tenant's namespace quota a few files however many snapshots it has
// recorded, and records of snapshots that are gone are dropped.
const IndexName = "index.json"

// Index formats, one per record kind.
const (
	catalogIndexFormat   = "flinkmaint-catalog-index/1"
	drillIndexFormat     = "flinkmaint-drill-index/1"
	rehearsalIndexFormat = "flinkmaint-rehearsal-index/1"
	failedRestoreFormat  = "flinkmaint-failed-restore-index/1"
)

// maxIndexBytes bounds an index read back: about 200,000 records.
const maxIndexBytes = 64 << 20

type indexDoc[T any] struct {
	Format  string `json:"format"`
	Entries []T    `json:"entries"`
}

// recordKind is what compaction needs to know of one kind of record.
type recordKind[T any] struct {
	format string
	// path is the snapshot a record is of, and whether the record is a
	// valid one stored under its right file name.
	path func(file string, r T) (string, bool)
}

var (
	catalogRecords = recordKind[Entry]{format: catalogIndexFormat, path: func(file string, e Entry) (string, bool) {
		return e.Path, e.Path != "" && e.Job.Valid() && file == entryName(e.Path)
	}}
	drillRecords = recordKind[DrillRecord]{format: drillIndexFormat, path: func(file string, r DrillRecord) (string, bool) {
		return r.Snapshot, r.Snapshot != "" && file == entryName(r.Snapshot)
	}}
	rehearsalRecords = recordKind[RehearsalRecord]{format: rehearsalIndexFormat, path: func(file string, r RehearsalRecord) (string, bool) {
		return r.Snapshot, r.Snapshot != "" && file == entryName(r.Snapshot)
	}}
	failedRestoreRecords = recordKind[FailedRestoreRecord]{format: failedRestoreFormat, path: func(file string, r FailedRestoreRecord) (string, bool) {
		return r.Snapshot, r.Snapshot != "" && r.JobID != "" && r.Cluster != "" && !r.LastSeen.IsZero() && file == entryName(r.Snapshot)
	}}
)

// readIndex reads the index of dir by snapshot path; a missing index is
// empty, one that does not decode is ErrInvalid.
func readIndex[T any](ctx context.Context, fs storage.FileSystem, dir string, kind recordKind[T]) (map[string]T, error) {
	data, err := fs.ReadFile(ctx, dir+"/"+IndexName, maxIndexBytes)
	if errors.Is(err, storage.ErrNotFound) {
		return map[string]T{}, nil
	}
	if err != nil {
		return nil, err
	}
	var doc indexDoc[T]
	if err := json.Unmarshal(data, &doc); err != nil || doc.Format != kind.format {
		return nil, fmt.Errorf("%w: %s/%s: format %q, %v; want %s", ErrInvalid, dir, IndexName, doc.Format, err, kind.format)
	}
	out := make(map[string]T, len(doc.Entries))
	for _, r := range doc.Entries {
		p, _ := kind.path("", r)
		out[p] = r
	}
	return out, nil
}

// CompactResult says what Compact did.
type CompactResult struct {
	// Kept records are in the index; Dropped ones were of snapshots that
	// are gone; Merged record files were folded into the index and removed.
	Kept, Dropped, Merged int
}

// compact folds every record file of dir into its index and drops the
// records whose snapshot exists no more (exists says; an error keeps the
// record). The index is written first (through a temporary file renamed
// over the old one), then each merged file is removed only if it still
// holds what was merged, so a crash or a concurrent write loses nothing.
// A file that does not decode is left where it is, to be reported.
func compact[T any](ctx context.Context, fs storage.FileSystem, dir string, kind recordKind[T],
	exists func(ctx context.Context, path string) (bool, error)) (CompactResult, error) {
	var res CompactResult
	merged, err := readIndex(ctx, fs, dir, kind)
	if err != nil {
		return res, err
	}
	files, err := jsonFiles(ctx, fs, dir)
	if err != nil {
		return res, err
	}
	raw := map[string][]byte{}
	for _, f := range files {
		data, err := fs.ReadFile(ctx, f, maxEntryBytes)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return res, err
		}
		var r T
		if json.Unmarshal(data, &r) != nil {
			continue
		}
		p, ok := kind.path(f[strings.LastIndex(f, "/")+1:], r)
		if !ok {
			continue
		}
		merged[p] = r // a file is newer than the index
		raw[f] = data
	}
	doc := indexDoc[T]{Format: kind.format}
	paths := make([]string, 0, len(merged))
	for p := range merged {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		ok, err := exists(ctx, p)
		if err == nil && !ok {
			res.Dropped++
			continue
		}
		doc.Entries = append(doc.Entries, merged[p])
	}
	res.Kept = len(doc.Entries)
	data, err := json.Marshal(doc)
	if err != nil {
		return res, err
	}
	if err := replaceFile(ctx, fs, dir, IndexName, data); err != nil {
		return res, err
	}
	for f, was := range raw {
		now, err := fs.ReadFile(ctx, f, maxEntryBytes)
		if err != nil || string(now) != string(was) {
			continue // replaced meanwhile: the next compaction takes it
		}
		if err := fs.Remove(ctx, f); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return res, err
		}
		res.Merged++
	}
	return res, nil
}

// readIndex reads the catalog's index.
func (s Store) readIndex(ctx context.Context) (map[string]Entry, error) {
	return readIndex(ctx, s.FS, s.dir(), catalogRecords)
}

// Compact folds the catalog's entry files into its index and drops the
// entries of savepoints that are gone; see compact.
func (s Store) Compact(ctx context.Context, exists func(ctx context.Context, path string) (bool, error)) (CompactResult, error) {
	return compact(ctx, s.FS, s.dir(), catalogRecords, exists)
}

// Compact folds the drill records into their index and drops the records
// of snapshots that are gone; see compact.
func (s DrillStore) Compact(ctx context.Context, exists func(ctx context.Context, path string) (bool, error)) (CompactResult, error) {
	return compact(ctx, s.FS, s.dir(), drillRecords, exists)
}
