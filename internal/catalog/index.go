package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// IndexName is the compacted catalog beside the entry files: Compact
// merges every entry into it and removes their files, so a tenant's
// catalog costs its namespace quota a few files however many savepoints
// it has recorded, and entries of savepoints that are gone are dropped.
const IndexName = "index.json"

const indexFormat = "flinkmaint-catalog-index/1"

// maxIndexBytes bounds the index read back: about 200,000 entries.
const maxIndexBytes = 64 << 20

type indexDoc struct {
	Format  string  `json:"format"`
	Entries []Entry `json:"entries"`
}

// readIndex reads the index by savepoint path; a missing index is empty.
func (s Store) readIndex(ctx context.Context) (map[string]Entry, error) {
	data, err := s.FS.ReadFile(ctx, s.dir()+"/"+IndexName, maxIndexBytes)
	if errors.Is(err, storage.ErrNotFound) {
		return map[string]Entry{}, nil
	}
	if err != nil {
		return nil, err
	}
	var doc indexDoc
	if err := json.Unmarshal(data, &doc); err != nil || doc.Format != indexFormat {
		return nil, fmt.Errorf("%w: %s/%s: format %q, %v; want %s", ErrInvalid, s.dir(), IndexName, doc.Format, err, indexFormat)
	}
	out := make(map[string]Entry, len(doc.Entries))
	for _, e := range doc.Entries {
		out[e.Path] = e
	}
	return out, nil
}

// CompactResult says what Compact did.
type CompactResult struct {
	// Kept entries are in the index; Dropped ones named savepoints that
	// are gone; Merged entry files were folded into the index and removed.
	Kept, Dropped, Merged int
}

// Compact folds every entry file into the index and drops the entries
// whose savepoint exists no more (exists says; an error keeps the entry).
// The index is written first (through a temporary file renamed over the
// old one), then each merged file is removed only if it still holds what
// was merged, so a crash or a concurrent Put loses nothing. A file that
// does not decode is left where it is, for Claims to report.
func (s Store) Compact(ctx context.Context, exists func(ctx context.Context, path string) (bool, error)) (CompactResult, error) {
	var res CompactResult
	merged, err := s.readIndex(ctx)
	if err != nil {
		return res, err
	}
	files, err := jsonFiles(ctx, s.FS, s.dir())
	if err != nil {
		return res, err
	}
	raw := map[string][]byte{}
	for _, f := range files {
		data, err := s.FS.ReadFile(ctx, f, maxEntryBytes)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return res, err
		}
		var e Entry
		if json.Unmarshal(data, &e) != nil || e.Path == "" || !e.Job.Valid() || f[strings.LastIndex(f, "/")+1:] != entryName(e.Path) {
			continue // not an entry: left for Claims to report
		}
		merged[e.Path] = e // a file is newer than the index
		raw[f] = data
	}
	doc := indexDoc{Format: indexFormat}
	for _, e := range merged {
		ok, err := exists(ctx, e.Path)
		if err == nil && !ok {
			res.Dropped++
			continue
		}
		doc.Entries = append(doc.Entries, e)
	}
	sortEntries(doc.Entries)
	res.Kept = len(doc.Entries)
	data, err := json.Marshal(doc)
	if err != nil {
		return res, err
	}
	if err := replaceFile(ctx, s.FS, s.dir(), IndexName, data); err != nil {
		return res, err
	}
	for f, was := range raw {
		now, err := s.FS.ReadFile(ctx, f, maxEntryBytes)
		if err != nil || string(now) != string(was) {
			continue // replaced meanwhile: the next compaction takes it
		}
		if err := s.FS.Remove(ctx, f); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return res, err
		}
		res.Merged++
	}
	return res, nil
}
