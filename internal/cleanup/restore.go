package cleanup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// OutcomeRestored: an item moved from the trash back to its original path.
const OutcomeRestored Outcome = "restored"

// restoreDirName holds, under the audit root, one manifest per trash run
// that was restored: <AuditRoot>/_restore/<run>/manifest-NNNNNN.jsonl.
// Every restore of one run appends to it, so a second restore knows what
// the first put back.
const restoreDirName = "_restore"

// RestoreConfig configures Restore.
type RestoreConfig struct {
	FS storage.FileSystem
	// Guard confines where items go back to (the writable roots); the
	// trash root must be inside it too.
	Guard *storage.Guard
	// TrashRoot and AuditRoot are the execution's (AuditRoot defaults to
	// <TrashRoot>/_audit).
	TrashRoot, AuditRoot string
	// RunID is the run whose trash is put back.
	RunID string
	// Paths, when set, are globs (path.Match, on the item's path without
	// scheme and authority, or on the whole URI): only items matching one,
	// or lying under a dir matching one, go back.
	Paths []string
	// DryRun says what would be done and does nothing.
	DryRun bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Progress, when set, hears each item done.
	Progress func(done, total int)
	// Objects re-creates the run's Kubernetes objects; nil refuses each,
	// saying where its JSON is.
	Objects ObjectRecreator
}

// RestoreResult says what a restore did (or, dry, would do) with each
// trashed item of the run it selected.
type RestoreResult struct {
	RunID    string `json:"runId"`
	DryRun   bool   `json:"dryRun,omitempty"`
	Manifest string `json:"manifest,omitempty"`
	// Items are the selected items, each with its outcome: restored (or,
	// dry, to be restored: OutcomeStarted), refused with the reason.
	Items  []Record        `json:"items"`
	Counts map[Outcome]int `json:"counts"`
	// AlreadyBack counts items an earlier restore put back.
	AlreadyBack int   `json:"alreadyBack,omitempty"`
	Files       int64 `json:"files"`
	Bytes       int64 `json:"bytes"`
}

// RestoreManifestDir is where the restores of run are recorded.
func RestoreManifestDir(auditRoot, run string) string {
	return strings.TrimSuffix(auditRoot, "/") + "/" + restoreDirName + "/" + run
}

// Restore moves the trashed items of a run back to their original paths,
// the last trashed first. Each item is checked right before it moves and
// refused, with the reason, when it cannot go back safely: its original
// path exists again, it lies on another file system, the manifest names a
// trash path the run would not have used, or it is no longer in the trash
// (purged). A move is atomic: a crash leaves each item back or still in
// the trash, and the next restore finds which from this manifest and the
// file system. A restore of items already back does nothing.
//
// Then the run's Kubernetes objects come back through cfg.Objects: the
// HA ConfigMaps it deleted, and the FlinkStateSnapshot resources deleted
// with a savepoint that is now back; an object whose name is taken again
// is refused, and a Pod or Deployment is never re-created (it would start
// a Flink process of a cluster judged gone).
func Restore(ctx context.Context, cfg RestoreConfig) (RestoreResult, error) {
	res := RestoreResult{RunID: cfg.RunID, DryRun: cfg.DryRun, Counts: map[Outcome]int{}}
	bad := func(format string, args ...any) error {
		return &Error{Op: "restore", Kind: ErrInvalidConfig, Err: fmt.Errorf(format, args...)}
	}
	if cfg.FS == nil || cfg.Guard == nil {
		return res, bad("FS and Guard are required")
	}
	if err := checkRunID(cfg.RunID); err != nil {
		return res, err
	}
	for _, g := range cfg.Paths {
		if _, err := path.Match(g, "/"); err != nil {
			return res, bad("path glob %q: %v", g, err)
		}
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	base := cfg.FS.URI().String()
	trash, err := normPath(cfg.TrashRoot, base)
	if err != nil || cfg.TrashRoot == "" {
		return res, bad("TrashRoot %q: want an absolute path or URI", cfg.TrashRoot)
	}
	trash = strings.TrimSuffix(trash, "/")
	audit := trash + "/" + auditDirName
	if cfg.AuditRoot != "" {
		if audit, err = normPath(cfg.AuditRoot, base); err != nil {
			return res, bad("AuditRoot %q: %v", cfg.AuditRoot, err)
		}
		audit = strings.TrimSuffix(audit, "/")
	}
	runTrash := trash + "/" + cfg.RunID
	recs, err := ReadManifest(ctx, cfg.FS, audit, cfg.RunID)
	if err != nil {
		return res, err
	}
	if len(recs) == 0 {
		return res, &Error{Op: "restore", Path: audit + "/" + cfg.RunID, Kind: ErrNoManifest, Err: errors.New("no audit manifest for this run: check the run name (a run's report names it and its trash: flinkmaint governance report NAME)")}
	}
	m, earlier, err := loadManifest(ctx, cfg.FS, RestoreManifestDir(audit, cfg.RunID), "")
	if err != nil {
		return res, err
	}
	var todo, objects []Record
	for _, r := range recs {
		switch {
		case r.Outcome != OutcomeTrashed || !selected(r.Path, cfg.Paths):
		case IsObjectPath(r.Path):
			objects = append(objects, r)
		default:
			todo = append(todo, r)
		}
	}
	// The last trashed goes back first.
	sort.SliceStable(todo, func(i, j int) bool {
		if !todo[i].Time.Equal(todo[j].Time) {
			return todo[i].Time.After(todo[j].Time)
		}
		return todo[i].Path > todo[j].Path
	})
	if !cfg.DryRun && len(todo)+len(objects) > 0 {
		release, err := holdOffPurge(ctx, cfg.FS, runTrash, now())
		if err != nil {
			return res, err
		}
		defer release()
	}
	var purged map[string]Record
	done := 0
	tick := func() {
		done++
		if cfg.Progress != nil {
			cfg.Progress(done, len(todo))
		}
	}
	for start := 0; start < len(todo); start += restoreBatch {
		batch := todo[start:min(start+restoreBatch, len(todo))]
		outs := make([]Record, len(batch))
		var move []int
		for i, r := range batch {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			out := restoreRecord(r, OutcomeRefused, now(), "")
			why, isBack, err := restoreCheck(ctx, cfg, r, runTrash, earlier[r.Path])
			if err != nil {
				return res, err
			}
			switch {
			case isBack:
				out.Outcome, out.Detail = OutcomeRestored, AlreadyBack
				res.AlreadyBack++
			case why == errGoneFromTrash:
				if purged == nil {
					purged = purgedRuns(ctx, cfg.FS, audit)
				}
				out.Detail = "not in the trash any more: " + goneReason(purged, runTrash)
			case why != "":
				out.Detail = why
			case cfg.DryRun:
				out.Outcome, out.Detail = OutcomeStarted, "would be moved back from "+r.TrashPath
			default:
				move = append(move, i)
				continue
			}
			outs[i] = out
			tick()
		}
		err := restoreMoves(ctx, cfg.FS, m, batch, move, outs, now, tick)
		// What was decided and done is recorded even when a move failed.
		var final []Record
		for _, o := range outs {
			if o.Path != "" && o.Detail != AlreadyBack {
				final = append(final, o)
			}
		}
		if !cfg.DryRun {
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), manifestWriteLimit)
			werr := m.append(wctx, final)
			cancel()
			if err == nil {
				err = werr
			}
		}
		for i, o := range outs {
			if o.Path == "" {
				continue // not moved: a failed move
			}
			res.Items = append(res.Items, o)
			res.Counts[o.Outcome]++
			if o.Outcome == OutcomeRestored || o.Outcome == OutcomeStarted {
				res.Files += batch[i].Files
				res.Bytes += batch[i].Bytes
			}
		}
		if err != nil {
			return res, err
		}
	}
	// Kubernetes objects after the files, so that a FlinkStateSnapshot
	// comes back only once its savepoint is there.
	back := map[string]bool{}
	for _, it := range res.Items {
		if it.Kind == KindSavepointDir && (it.Outcome == OutcomeRestored || it.Outcome == OutcomeStarted) {
			if n, err := normPath(it.Path, base); err == nil {
				back[n] = true
			}
		}
	}
	objs, err := restoreObjects(ctx, cfg, objects, back, runTrash, earlier, now)
	if !cfg.DryRun {
		var final []Record
		for _, o := range objs {
			if o.Detail != AlreadyBack {
				final = append(final, o)
			}
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), manifestWriteLimit)
		werr := m.append(wctx, final)
		cancel()
		if err == nil {
			err = werr
		}
	}
	for _, o := range objs {
		res.Items = append(res.Items, o)
		res.Counts[o.Outcome]++
		if o.Detail == AlreadyBack {
			res.AlreadyBack++
		}
	}
	if err != nil {
		return res, err
	}
	if !cfg.DryRun {
		res.Manifest = m.dir
	}
	return res, nil
}

// restoreHoldName is written into a trash run while it is restored and
// removed after: the run's newest change is then the restore's, so a purge
// (which removes only runs unchanged for its TTL) leaves it alone.
const restoreHoldName = "_restore-in-progress"

// holdOffPurge writes the restore hold into a trash run that exists, and
// returns what removes it.
func holdOffPurge(ctx context.Context, fsys storage.FileSystem, run string, now time.Time) (func(), error) {
	if ok, err := exists(ctx, fsys, run); err != nil || !ok {
		return func() {}, err // gone: each item says so
	}
	hold := run + "/" + restoreHoldName
	if err := fsys.WriteFile(ctx, hold, []byte(now.UTC().Format(time.RFC3339))); err != nil && !errors.Is(err, storage.ErrExist) {
		return nil, classify("write the restore hold", hold, err)
	}
	return func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = fsys.Remove(rctx, hold) // one left behind only delays the purge by a TTL
	}, nil
}

// restoreBatch is how many items are checked, recorded as started, moved
// and recorded as done together: two manifest segments per batch.
const restoreBatch = 256

// AlreadyBack is the detail of an item an earlier restore put back.
const AlreadyBack = "already back: put back by an earlier restore"

// restoreMoves records the intent to move the items of batch at the
// indexes move, then moves them, restoreConcurrency at a time, filling
// outs; after the first move that fails (or when ctx ends) it starts no
// more, leaving the outs of the items not moved empty, and returns that
// error.
func restoreMoves(ctx context.Context, fsys storage.FileSystem, m *manifest, batch []Record, move []int, outs []Record, now func() time.Time, tick func()) error {
	if len(move) == 0 {
		return nil
	}
	intent := make([]Record, 0, len(move))
	for _, i := range move {
		intent = append(intent, restoreRecord(batch[i], OutcomeStarted, now(), ""))
	}
	if err := m.append(ctx, intent); err != nil {
		return err
	}
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	next := make(chan int)
	for range min(restoreConcurrency, len(move)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := batch[i]
				err := fsys.MkdirAll(ctx, parentDir(r.Path))
				if err != nil {
					err = classify("create the parent of", r.Path, err)
				} else if err = fsys.Rename(ctx, r.TrashPath, r.Path); err != nil {
					err = classify("move back", r.TrashPath, err)
				}
				mu.Lock()
				if err != nil {
					if first == nil {
						first = err
					}
				} else {
					outs[i] = restoreRecord(r, OutcomeRestored, now(), "moved back from "+r.TrashPath)
					tick()
				}
				mu.Unlock()
			}
		}()
	}
	for _, i := range move {
		mu.Lock()
		stop := first != nil
		mu.Unlock()
		if stop || ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// restoreConcurrency is how many moves of a batch are in flight at once:
// each is one rename at the NameNode, independent of the others.
const restoreConcurrency = 16

// errGoneFromTrash marks an item whose trash path and original path are
// both missing.
const errGoneFromTrash = "gone from the trash"

// restoreCheck says why item r cannot go back now (""), or that it is
// back already (done). prev is what an earlier restore recorded of it.
func restoreCheck(ctx context.Context, cfg RestoreConfig, r Record, runTrash string, prev Record) (why string, done bool, err error) {
	base := cfg.FS.URI().String()
	orig, err := normPath(r.Path, base)
	if err != nil {
		return fmt.Sprintf("the manifest's path %q does not parse: %v", r.Path, err), false, nil
	}
	if prefixOf(orig) != prefixOf(strings.TrimSuffix(base, "/")+"/") {
		return fmt.Sprintf("%s is on another file system than the trash (%s): a move cannot put it back", orig, base), false, nil
	}
	// The trash path the run itself would have used: a manifest naming
	// another one was not written by that run, or was edited.
	if want := runTrash + stripScheme(orig); r.TrashPath != want {
		return fmt.Sprintf("the manifest names trash path %q, not %q where run %s puts this item: the manifest does not match the run", r.TrashPath, want, cfg.RunID), false, nil
	}
	if _, err := cfg.Guard.Check(cfg.FS.URI(), orig); err != nil {
		return fmt.Sprintf("%s is outside the roots a restore may write into (the tenants' roots): %v", orig, err), false, nil
	}
	inTrash, err := exists(ctx, cfg.FS, r.TrashPath)
	if err != nil {
		return "", false, err
	}
	atHome, err := exists(ctx, cfg.FS, orig)
	if err != nil {
		return "", false, err
	}
	wasMoved := prev.Outcome == OutcomeRestored || prev.Outcome == OutcomeStarted
	switch {
	case !inTrash && atHome && wasMoved:
		return "", true, nil
	case atHome:
		return "its original path exists again (re-created since it was trashed): nothing is overwritten; move it aside to restore this item", false, nil
	case !inTrash:
		return errGoneFromTrash, false, nil
	}
	return "", false, nil
}

func restoreRecord(r Record, o Outcome, at time.Time, detail string) Record {
	return Record{Path: r.Path, Kind: r.Kind, Rule: r.Rule, Files: r.Files, Dirs: r.Dirs, Bytes: r.Bytes, Outcome: o, Time: at.UTC(),
		TrashPath: r.TrashPath, Detail: detail}
}

// selected says whether p matches one of globs (all when there are none),
// or lies under a dir that does.
func selected(p string, globs []string) bool {
	if len(globs) == 0 {
		return true
	}
	plain := stripScheme(p)
	for _, g := range globs {
		target := plain
		if strings.Contains(g, "://") {
			target = p
		}
		for t := target; t != "" && t != "/" && !strings.HasSuffix(t, ":/"); t = path.Dir(t) {
			if ok, _ := path.Match(strings.TrimSuffix(g, "/"), t); ok {
				return true
			}
			if strings.HasSuffix(t, "//") || path.Dir(t) == t {
				break
			}
		}
	}
	return false
}

func parentDir(p string) string {
	i := strings.LastIndex(p, "/")
	if i <= 0 {
		return p
	}
	return p[:i]
}

func exists(ctx context.Context, fsys storage.FileSystem, p string) (bool, error) {
	_, err := fsys.Stat(ctx, p)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, storage.ErrNotFound):
		return false, nil
	}
	return false, classify("stat", p, err)
}

// purgedRuns reads the purge manifests: each trash run a purge removed,
// with its record. An unreadable purge manifest leaves the reason vaguer,
// never the outcome different.
func purgedRuns(ctx context.Context, fsys storage.FileSystem, audit string) map[string]Record {
	out := map[string]Record{}
	dir := strings.TrimSuffix(audit, "/") + "/_purge"
	var names []string
	_ = fsys.List(ctx, dir, 0, func(b []storage.FileInfo) error {
		for _, fi := range b {
			if !fi.IsDir && strings.HasPrefix(fi.Name, "purge-") && strings.HasSuffix(fi.Name, ".jsonl") {
				names = append(names, fi.Name)
			}
		}
		return nil
	})
	for _, n := range names {
		data, err := fsys.ReadFile(ctx, dir+"/"+n, 0)
		if err != nil {
			continue
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			var r Record
			if json.Unmarshal(line, &r) == nil && r.Outcome == OutcomePurged {
				out[pathPart(r.Path)] = r
			}
		}
	}
	return out
}

func goneReason(purged map[string]Record, runTrash string) string {
	if r, ok := purged[pathPart(runTrash)]; ok {
		return fmt.Sprintf("the trash purge removed run %s on %s (%s); it cannot be restored", runTrash, r.Time.UTC().Format(time.RFC3339), r.Detail)
	}
	return "neither its trash path nor its original path exists, and no purge manifest names the run: someone removed it"
}
