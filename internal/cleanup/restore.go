package cleanup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
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
	// lying under a dir matching one, or holding a path matching one go
	// back, each with what its _metadata name.
	Paths []string
	// DryRun says what would be done and does nothing.
	DryRun bool
	// Live, when set, returns the live inventory: nothing goes into a job
	// dir that a job live on an inventory cluster may write (its latest
	// checkpoint lies there, or it has none yet). An error stops the
	// restore before anything moves.
	Live func(ctx context.Context) (Live, error)
	// QuietFor: a dir that a file was written into within this long (or,
	// holding no file, that changed within it) may have a running writer,
	// a job outside the inventory: nothing goes into it. Default
	// DefaultGrace.
	QuietFor time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Progress, when set, hears each item done.
	Progress func(done, total int)
	// Objects re-creates the run's Kubernetes objects; nil refuses each,
	// saying where its JSON is.
	Objects ObjectRecreator
}

// RestoreResult says what a restore did (or, dry, would do) with each
// trashed item it selected, and each item of any run that holds a file
// their _metadata name (Record.Run names that run).
type RestoreResult struct {
	RunID    string `json:"runId"`
	DryRun   bool   `json:"dryRun,omitempty"`
	Manifest string `json:"manifest,omitempty"`
	// Items are the items, each with its outcome: restored (or, dry, to
	// be restored: OutcomeStarted), refused with the reason.
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

// Restore puts trashed items back where they were, a whole snapshot at a
// time. It selects the items of run cfg.RunID that cfg.Paths name (all of
// them without paths): an item a glob matches, one under a dir a glob
// matches, and one holding a path a glob matches (a chk-N of a job dir
// trashed whole). Then, for every _metadata in what it selected, it adds
// each item that holds a file that _metadata names and that is not at
// home now, from this run's trash or any other run's (the audit root's
// manifests say which): a checkpoint comes back with the shared files
// trashed apart from it, by this run or an earlier one, and with the files
// of another job's dir it names after a restore in CLAIM mode. A snapshot
// goes back whole or not at all: when a file it names is in no run's
// trash and not at home, or an item it needs cannot go back, nothing of
// it moves and each of its items says why.
//
// Every item is checked before anything moves and refused, with the
// reason, when it cannot go back safely: it lies on another file system,
// the manifest names a trash path its run would not have used, it lies
// outside the writable roots, it is not in the trash any more (purged),
// a job may be writing into the job dir it goes into (a live job of the
// inventory, cfg.Live, or a file written there within cfg.QuietFor), or
// its original path exists again and cannot take it: a dir of a job,
// checkpoint or savepoint that exists again is merged into, entry by
// entry, never over anything there (another restore re-created it, or a
// stopped run of the same job id wrote there), anything else is refused.
// Parents go back before what lies in them.
//
// A move is a rename: a crash leaves each item, each entry of a merge,
// back or still in the trash, and the next restore finds which from the
// restore manifests of the runs involved and the file system. A restore
// of items already back does nothing.
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
	if cfg.QuietFor < 0 {
		return res, bad("QuietFor %v is negative", cfg.QuietFor)
	}
	if cfg.QuietFor == 0 {
		cfg.QuietFor = DefaultGrace
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
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
	rs := newRestorer(cfg, base, trash, audit)
	own, err := rs.load(ctx, cfg.RunID)
	if err != nil {
		return res, err
	}
	if own.records == 0 {
		return res, &Error{Op: "restore", Path: audit + "/" + cfg.RunID, Kind: ErrNoManifest, Err: errors.New("no audit manifest for this run: check the run name (a run's report names it and its trash: flinkmaint governance report NAME)")}
	}
	var set []*restoreItem
	for _, it := range own.items {
		if selected(it.rec.Path, cfg.Paths) || selectsInside(it.rec.Path, cfg.Paths) {
			it.selected = true
			set = append(set, it)
		}
	}
	var objects []Record
	for _, r := range own.objects {
		if selected(r.Path, cfg.Paths) {
			objects = append(objects, r)
		}
	}
	defer rs.release()
	if !cfg.DryRun && len(set)+len(objects) > 0 {
		if err := rs.hold(ctx, cfg.RunID); err != nil {
			return res, err
		}
	}
	// collect is the result so far: what was decided and done, also when
	// a move failed.
	collect := func() {
		for _, it := range set {
			if it.out.Path == "" {
				continue // not decided, or its move failed
			}
			o := it.out
			if it.run != cfg.RunID {
				o.Run = it.run
			}
			res.Items = append(res.Items, o)
			res.Counts[o.Outcome]++
			if o.Detail == AlreadyBack {
				res.AlreadyBack++
			}
			if o.Outcome == OutcomeRestored || o.Outcome == OutcomeStarted {
				res.Files += it.rec.Files
				res.Bytes += it.rec.Bytes
			}
		}
	}
	if set, err = rs.closure(ctx, set); err != nil {
		return res, err
	}
	sortParentsFirst(set)
	done := 0
	tick := func() {
		done++
		if cfg.Progress != nil {
			cfg.Progress(done, len(set))
		}
	}
	if err := rs.decide(ctx, set, tick); err != nil {
		collect()
		return res, err
	}
	err = rs.moveAll(ctx, set, tick)
	collect()
	if err != nil {
		return res, err
	}
	// Kubernetes objects after the files, so that a FlinkStateSnapshot
	// comes back only once its savepoint is there.
	back := map[string]bool{}
	for _, it := range res.Items {
		if it.Kind == KindSavepointDir && it.Run == "" && (it.Outcome == OutcomeRestored || it.Outcome == OutcomeStarted) {
			if n, err := normPath(it.Path, base); err == nil {
				back[n] = true
			}
		}
	}
	st, err := rs.state(ctx, cfg.RunID)
	if err != nil {
		return res, err
	}
	objs, err := restoreObjects(ctx, cfg, objects, back, rs.runTrash(cfg.RunID), st.earlier, cfg.Now)
	if !cfg.DryRun {
		var final []Record
		for _, o := range objs {
			if o.Detail != AlreadyBack {
				final = append(final, o)
			}
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), manifestWriteLimit)
		werr := st.man.append(wctx, final)
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
		res.Manifest = st.man.dir
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

// restoreBatch is how many items are recorded as started, moved and
// recorded as done together: two manifest segments per batch and run.
const restoreBatch = 256

// AlreadyBack is the detail of an item an earlier restore put back.
const AlreadyBack = "already back: put back by an earlier restore"

// restoreConcurrency is how many moves of a batch are in flight at once:
// each is one rename at the NameNode (a merge, one per entry).
const restoreConcurrency = 16

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
