package cleanup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/checkpoint"
	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// GatherOptions tune Gather.
type GatherOptions struct {
	// BatchSize is passed to List; <= 0 uses the file system's default.
	BatchSize int
	// ReferencesOnly reads just the _metadata (a reference root, scanned
	// read-only): no state files, no pin markers.
	ReferencesOnly bool
	// Part, if set, gathers only the root entries (job dirs, savepoints,
	// HA cluster dirs) it accepts; see GatherPart and MergeListings.
	Part func(name string) bool
}

// GatherPart accepts the root entries of part shard of shards: each name
// belongs to exactly one part, whichever worker gathers it.
func GatherPart(shard, shards int) func(name string) bool {
	return func(name string) bool {
		h := fnv.New32a()
		h.Write([]byte(name))
		return int(h.Sum32()%uint32(shards)) == shard
	}
}

// MergeListings merges the listings of every part of roots into the
// listing one Gather of roots makes. Each part must have gathered exactly
// roots.
func MergeListings(roots []layout.Root, parts ...Listing) (Listing, error) {
	// Sized up front: grown by appending, a million state files were
	// copied several times over.
	files, metas := 0, 0
	for _, p := range parts {
		files, metas = files+len(p.StateFiles), metas+len(p.Metadata)
	}
	l := Listing{Roots: append([]layout.Root(nil), roots...), StateFiles: make([]StateFile, 0, files), Metadata: make(map[string]MetadataResult, metas)}
	reports := make([]layout.Report, 0, len(parts))
	for i, p := range parts {
		if !slices.Equal(p.Roots, roots) {
			return Listing{}, invalidInput("listing part %d covers roots %v; the plan's roots are %v", i+1, p.Roots, roots)
		}
		reports = append(reports, p.Report)
		l.StateFiles = append(l.StateFiles, p.StateFiles...)
		l.PinMarkers = append(l.PinMarkers, p.PinMarkers...)
		for k, v := range p.Metadata {
			if _, dup := l.Metadata[k]; dup {
				return Listing{}, invalidInput("listing parts overlap: %s is in two", k)
			}
			l.Metadata[k] = v
		}
	}
	l.Report = layout.MergeReports(reports...)
	for i, p := range parts {
		// The earliest start; one unknown makes the whole unknown.
		if p.StartedAt.IsZero() {
			l.StartedAt = time.Time{}
			break
		}
		if i == 0 || p.StartedAt.Before(l.StartedAt) {
			l.StartedAt = p.StartedAt
		}
	}
	sort.Slice(l.StateFiles, func(i, k int) bool { return l.StateFiles[i].Path < l.StateFiles[k].Path })
	sort.Strings(l.PinMarkers)
	var paths []string
	for _, j := range l.Report.Jobs {
		paths = append(paths, j.Path)
	}
	for _, sp := range l.Report.Savepoints {
		paths = append(paths, sp.Path)
	}
	for _, c := range l.Report.HAClusters {
		paths = append(paths, c.Path)
	}
	for _, u := range l.Report.Unknown {
		paths = append(paths, u.Path)
	}
	slices.Sort(paths)
	for i := 1; i < len(paths); i++ {
		if paths[i] == paths[i-1] {
			return Listing{}, invalidInput("listing parts overlap: %s is in two", paths[i])
		}
	}
	return l, nil
}

// Gather reads everything BuildPlan needs from storage. It only reads.
// Storage failures are returned classified (IsRetryable); a _metadata that
// cannot be parsed is recorded in the listing, not returned as an error,
// because the planner must see it to keep what it may reference.
func Gather(ctx context.Context, fsys storage.FileSystem, roots []layout.Root, opts GatherOptions) (Listing, error) {
	if fsys == nil {
		return Listing{}, invalidInput("gather: no file system")
	}
	if len(roots) == 0 {
		return Listing{}, invalidInput("gather: no roots; name the checkpoint, savepoint and HA roots in scope")
	}
	sc := &layout.Scanner{FS: fsys, BatchSize: opts.BatchSize, Part: opts.Part}
	rep, err := sc.Scan(ctx, roots)
	if err != nil {
		return Listing{}, classify("scan", "", err)
	}
	g := &gatherer{fs: fsys, base: fsys.URI().String()}
	l := Listing{Roots: append([]layout.Root(nil), roots...), Metadata: map[string]MetadataResult{}}
	for _, j := range rep.Jobs {
		for _, sub := range []struct {
			has  bool
			name string
			kind ItemKind
		}{{j.HasShared, "shared", KindSharedFile}, {j.HasTaskOwn, "taskowned", KindTaskOwnedFile}} {
			if !sub.has || opts.ReferencesOnly {
				continue
			}
			dir := strings.TrimSuffix(j.Path, "/") + "/" + sub.name
			err := fsys.Walk(ctx, dir, func(fi storage.FileInfo) error {
				if !fi.IsDir {
					l.StateFiles = append(l.StateFiles, StateFile{Path: fi.Path, JobDir: j.Path, Kind: sub.kind, Size: fi.Size, ModTime: fi.ModTime})
				}
				return nil
			})
			if err != nil && !errors.Is(err, storage.ErrNotFound) {
				return Listing{}, classify("list state files", dir, err)
			}
		}
		for k, c := range j.Checkpoints {
			if c.Completed {
				present, err := g.read(ctx, l.Metadata, c.Path+"/"+layout.MetadataFileName)
				if err != nil {
					return Listing{}, err
				}
				// Subsumed by Flink since the scan: no longer a completed
				// checkpoint, whatever is left of it.
				j.Checkpoints[k].Completed = present
			}
		}
	}
	for i, sp := range rep.Savepoints {
		if sp.Completed {
			present, err := g.read(ctx, l.Metadata, sp.Path+"/"+layout.MetadataFileName)
			if err != nil {
				return Listing{}, err
			}
			rep.Savepoints[i].Completed = present
		}
		if opts.ReferencesOnly {
			continue
		}
		marker := sp.Path + "/" + PinMarkerName
		switch _, err := fsys.Stat(ctx, marker); {
		case err == nil:
			l.PinMarkers = append(l.PinMarkers, marker)
		case !errors.Is(err, storage.ErrNotFound):
			return Listing{}, classify("stat pin marker", marker, err)
		}
	}
	sort.Slice(l.StateFiles, func(i, k int) bool { return l.StateFiles[i].Path < l.StateFiles[k].Path })
	sort.Strings(l.PinMarkers)
	l.Report = rep
	return l, nil
}

type gatherer struct {
	fs   storage.FileSystem
	base string
}

// read parses one _metadata into out and reports whether it exists. One
// that cannot be parsed is recorded with its error, so the planner keeps
// what it may reference; one that vanished (Flink subsumed the checkpoint
// since the scan) is not recorded.
func (g *gatherer) read(ctx context.Context, out map[string]MetadataResult, p string) (bool, error) {
	key, err := normPath(p, g.base)
	if err != nil {
		return false, invalidInput("metadata path %q: %v", p, err)
	}
	refs, err := readReferences(ctx, g.fs, p, g.base)
	switch {
	case err == nil:
		out[key] = MetadataResult{Refs: refs}
	case errors.Is(err, storage.ErrNotFound):
		return false, nil
	case errors.Is(err, storage.ErrTooLarge):
		out[key] = MetadataResult{Error: err.Error()}
	case isStorageError(err):
		return false, classify("read metadata", p, err)
	default:
		out[key] = MetadataResult{Error: err.Error()}
	}
	return true, nil
}

// ReadMetadata reads and parses the _metadata at p on fsys (a live job's
// restore point or latest checkpoint, wherever it lies). found is false
// when it does not exist; a storage failure is returned classified, and a
// _metadata that cannot be parsed is a result with its Error set.
func ReadMetadata(ctx context.Context, fsys storage.FileSystem, p string) (res MetadataResult, found bool, err error) {
	out := map[string]MetadataResult{}
	g := &gatherer{fs: fsys, base: fsys.URI().String()}
	found, err = g.read(ctx, out, p)
	for _, v := range out {
		res = v
	}
	return res, found, err
}

// settleWaits are the pauses before a _metadata that does not parse is
// read again: Flink writes it in place, so a reader can catch it half
// written; it is called unparseable only when it is the same twice.
var settleWaits = []time.Duration{100 * time.Millisecond, 400 * time.Millisecond, 1500 * time.Millisecond}

func readReferences(ctx context.Context, fsys storage.FileSystem, p, base string) (*References, error) {
	data, err := fsys.ReadFile(ctx, p, checkpoint.MaxMetadataSize)
	if err != nil {
		return nil, err
	}
	refs, err := ParseReferences(data, p, base)
	for _, wait := range settleWaits {
		if err == nil {
			return refs, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		again, rerr := fsys.ReadFile(ctx, p, checkpoint.MaxMetadataSize)
		if rerr != nil {
			return nil, rerr
		}
		if bytes.Equal(again, data) {
			break // the same bytes: settled, and unparseable
		}
		data = again
		refs, err = ParseReferences(data, p, base)
	}
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", p, err)
	}
	return refs, nil
}

func isStorageError(err error) bool {
	var se *storage.Error
	return errors.As(err, &se) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
