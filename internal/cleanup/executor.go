package cleanup

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// Executor defaults. A batch costs two manifest writes and a reload of the
// live inventory, an item a handful of NameNode round trips: 4 items at
// once in batches of 64 moved under 300 items/s per shard on the sandbox
// HDFS (make bench-governance), bound by those waits, not by CPU.
const (
	DefaultConcurrency = 16
	DefaultBatchSize   = 256
	auditDirName       = "_audit"
	manifestWriteLimit = time.Minute
)

// ExecutorConfig configures an Executor.
type ExecutorConfig struct {
	// FS acts on the plan's paths; its own guard applies as well.
	FS storage.FileSystem
	// Guard holds the roots every destructive path (items, trash paths,
	// manifest) must lie strictly under: the tenant roots and the trash root.
	Guard *storage.Guard
	// TrashRoot receives items in trash mode as
	// <TrashRoot>/<RunID>/<path without scheme>. It must exist, lie outside
	// the tenants' quota'd trees and be on FS.
	TrashRoot string
	// AuditRoot holds the manifests, <AuditRoot>/<RunID>/manifest-*.jsonl.
	// Default <TrashRoot>/_audit.
	AuditRoot string
	// RunID names the run; a second Run with the same id resumes it.
	RunID string
	// Part names this executor's share of a sharded run (see ShardPart);
	// its manifest segments are its own, so parts can run at once on
	// several workers. Empty for a whole plan.
	Part string
	// Concurrency bounds items acted on at once (default 16).
	Concurrency int
	// BatchSize is the number of items between manifest writes and
	// reference refreshes (default 256).
	BatchSize int
	// Live, if set, returns the current inventory with the _metadata of
	// every live job's restore point and latest checkpoint; it is called
	// before each batch. An item that a live job restored from, or that its
	// latest checkpoint references, or whose job or cluster became live
	// since planning, is refused; an error pauses the run (retryable).
	// Without it the plan's inventory is trusted.
	Live func(ctx context.Context) (Live, error)
	// Objects acts on the plan's Kubernetes objects; a plan with objects
	// needs it.
	Objects ObjectStore
	// Snapshots deletes the FlinkStateSnapshot resources that go with
	// savepoints; a plan that lists such resources needs it.
	Snapshots SnapshotStore
	// Progress is called after every item (for activity heartbeats).
	Progress func(Progress)
	// Now is the clock for manifest times (default time.Now).
	Now func() time.Time
}

// Progress reports how far a run is.
type Progress struct {
	RunID string
	Done  int // items with a final outcome, this run and earlier attempts
	Total int
	Last  Record
}

// Result summarises a run from its manifest.
type Result struct {
	RunID       string          `json:"runId"`
	ManifestDir string          `json:"manifestDir"`
	Total       int             `json:"total"`
	Counts      map[Outcome]int `json:"counts"`
	// Reclaimed counts trashed and deleted paths; ObjectsRemoved the
	// Kubernetes objects trashed or deleted.
	Reclaimed      Totals   `json:"reclaimed"`
	ObjectsRemoved int      `json:"objectsRemoved,omitempty"`
	Refused        []Record `json:"refused,omitempty"`
	Failed         []Record `json:"failed,omitempty"`
}

// Executor carries out plans.
type Executor struct {
	cfg ExecutorConfig
}

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

func checkRunID(id string) error {
	if !runIDPattern.MatchString(id) {
		return &Error{Op: "configure", Kind: ErrInvalidConfig, Err: fmt.Errorf("run id %q: want 1-128 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit", id)}
	}
	return nil
}

// NewExecutor validates cfg. It does no I/O.
func NewExecutor(cfg ExecutorConfig) (*Executor, error) {
	bad := func(format string, args ...any) error {
		return &Error{Op: "configure", Kind: ErrInvalidConfig, Err: fmt.Errorf(format, args...)}
	}
	if cfg.FS == nil {
		return nil, bad("FS is nil")
	}
	if cfg.Guard == nil || len(cfg.Guard.Roots()) == 0 {
		return nil, bad("Guard has no roots; name the tenant roots and the trash root")
	}
	if err := checkRunID(cfg.RunID); err != nil {
		return nil, err
	}
	if err := checkPart(cfg.Part); err != nil {
		return nil, err
	}
	base := cfg.FS.URI().String()
	for _, f := range []struct {
		name string
		v    *string
	}{{"TrashRoot", &cfg.TrashRoot}, {"AuditRoot", &cfg.AuditRoot}} {
		if *f.v == "" {
			continue
		}
		n, err := normPath(*f.v, base)
		if err != nil {
			return nil, bad("%s %q: %v", f.name, *f.v, err)
		}
		*f.v = strings.TrimSuffix(n, "/")
	}
	if cfg.AuditRoot == "" {
		if cfg.TrashRoot == "" {
			return nil, bad("neither TrashRoot nor AuditRoot is set; the audit manifest needs a home")
		}
		cfg.AuditRoot = cfg.TrashRoot + "/" + auditDirName
	}
	if cfg.Concurrency < 0 || cfg.BatchSize < 0 {
		return nil, bad("Concurrency %d and BatchSize %d must not be negative", cfg.Concurrency, cfg.BatchSize)
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Executor{cfg: cfg}, nil
}

// ManifestDir is where this run's manifest lives.
func (e *Executor) ManifestDir() string { return e.cfg.AuditRoot + "/" + e.cfg.RunID }

func (e *Executor) trashPath(item string) string {
	return e.cfg.TrashRoot + "/" + e.cfg.RunID + stripScheme(item)
}

// validate checks the plan as a whole before anything is touched: one bad
// item makes the plan invalid, never a partial run.
func (e *Executor) validate(plan Plan) error {
	if plan.Version < oldestPlanVersion || plan.Version > PlanVersion {
		return invalidPlan("version %d; this executor reads versions %d to %d (a sharded plan runs part by part, see PartPlan)", plan.Version, oldestPlanVersion, PlanVersion)
	}
	if plan.Version < 2 && len(plan.Objects) > 0 {
		return invalidPlan("version %d cannot hold Kubernetes objects, yet it lists %d", plan.Version, len(plan.Objects))
	}
	switch plan.Policy.Action {
	case ActionTrash:
		if e.cfg.TrashRoot == "" {
			return &Error{Op: "validate plan", Kind: ErrInvalidConfig, Err: errors.New("the plan's action is trash but no TrashRoot is configured")}
		}
	case ActionDelete:
	default:
		return invalidPlan("policy action %q; want %q or %q", plan.Policy.Action, ActionTrash, ActionDelete)
	}
	base := e.cfg.FS.URI().String()
	seen := map[string]bool{}
	paths := make([]string, 0, len(plan.Delete))
	check := func(p string) error {
		if _, err := e.cfg.Guard.Check(e.cfg.FS.URI(), p); err != nil {
			return &Error{Op: "guard", Path: p, Kind: ErrOutsideRoots, Err: err}
		}
		return nil
	}
	for i, it := range plan.Delete {
		n, err := normPath(it.Path, base)
		if err != nil || n != it.Path {
			return invalidPlan("item %d path %q is not a normalised absolute path on %s", i, it.Path, base)
		}
		if it.Rule == "" || it.Kind == "" {
			return invalidPlan("item %d (%s) has no rule or kind", i, it.Path)
		}
		if seen[it.Path] {
			return invalidPlan("item %s listed twice", it.Path)
		}
		seen[it.Path] = true
		paths = append(paths, it.Path)
		if err := check(it.Path); err != nil {
			return err
		}
		if e.cfg.TrashRoot != "" && (under(it.Path, e.cfg.TrashRoot) || under(e.cfg.TrashRoot, it.Path)) {
			return invalidPlan("item %s overlaps the trash root %s", it.Path, e.cfg.TrashRoot)
		}
		if under(it.Path, e.cfg.AuditRoot) || under(e.cfg.AuditRoot, it.Path) {
			return invalidPlan("item %s overlaps the audit root %s", it.Path, e.cfg.AuditRoot)
		}
		if plan.Policy.Action == ActionTrash {
			if err := check(e.trashPath(it.Path)); err != nil {
				return err
			}
		}
	}
	if err := checkNesting(paths); err != nil {
		return err
	}
	if err := e.validateObjects(plan, check); err != nil {
		return err
	}
	if err := e.validateSnapshots(plan, check); err != nil {
		return err
	}
	return check(e.ManifestDir() + "/" + segmentName(e.cfg.Part, 1))
}

// Run carries out plan. It is safe to call again with the same RunID after
// a crash or cancellation: finished items are not redone, unfinished ones
// are re-verified and done. Cancellation is honoured between items.
func (e *Executor) Run(ctx context.Context, plan Plan) (Result, error) {
	if err := e.validate(plan); err != nil {
		return Result{}, err
	}
	if plan.Policy.Action == ActionTrash {
		fi, err := e.cfg.FS.Stat(ctx, e.cfg.TrashRoot)
		if err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				return Result{}, &Error{Op: "stat trash root", Path: e.cfg.TrashRoot, Kind: ErrInvalidConfig, Err: err}
			}
			return Result{}, classify("stat trash root", e.cfg.TrashRoot, err)
		}
		if !fi.IsDir {
			return Result{}, &Error{Op: "stat trash root", Path: e.cfg.TrashRoot, Kind: ErrInvalidConfig, Err: errors.New("not a directory")}
		}
	}
	man, last, err := loadManifest(ctx, e.cfg.FS, e.ManifestDir(), e.cfg.Part)
	if err != nil {
		return Result{}, err
	}
	var roots []string
	for _, rt := range plan.Roots {
		roots = append(roots, rt.Path)
	}
	cn, err := newCanon(plan.Spellings, roots)
	if err != nil {
		return Result{}, invalidPlan("spellings: %v", err)
	}
	r := &run{e: e, plan: plan, man: man, last: last, seen: map[string]bool{}, planned: map[string]bool{}, canon: cn}
	for _, m := range plan.SeenMetadata {
		r.seen[m] = true
		r.planned[m] = true
	}
	for _, it := range plan.Delete {
		if rec, ok := last[it.Path]; ok && rec.Outcome.final() {
			r.done++
			continue
		}
		r.todo = append(r.todo, it)
	}
	for _, it := range plan.Objects {
		if rec, ok := last[it.Path]; ok && rec.Outcome.final() {
			r.done++
			continue
		}
		r.objTodo = append(r.objTodo, it)
	}
	runErr := r.loop(ctx)
	res := r.result()
	return res, runErr
}

type run struct {
	e    *Executor
	plan Plan
	man  *manifest
	last map[string]Record
	todo []Item
	// objTodo are the Kubernetes objects still to do, after the paths.
	objTodo []ObjectItem
	done    int

	mu sync.Mutex
	// madeTrashDirs are the trash dirs this run created or found.
	madeTrashDirs sync.Map

	canon canon
	// planned are the _metadata known at planning; a _metadata found
	// inside an item that is not among them refuses the item.
	planned map[string]bool
	// sinceRescan counts items done since the roots were last re-listed,
	// rescanEvery how many may be done between two re-listings.
	sinceRescan, rescanEvery int
	// References found since planning, and their index.
	seen    map[string]bool
	fresh   []*References
	freshIx *refIndex
	// freshBad are the _metadata completed since planning that do not
	// parse, by path: read again at every rescan, each refuses items
	// until it parses.
	freshBad map[string]string
	// writers are the job dirs a checkpoint was written into since the
	// listing, from the latest rescan.
	writers []jobDirWriter
	live    *Live
	// liveJobs and liveClusters index live, from the same refresh.
	liveJobs     map[string]LiveJob
	liveClusters map[string]bool
	ended        map[string]time.Time
	// What the live jobs need now, from the latest refresh.
	liveRefs *refIndex
	liveDirs map[string]need // snapshot dirs live jobs and records need
	liveBad  string          // why a live job's state cannot be told
}

func (r *run) loop(ctx context.Context) error {
	var failures []error
	for start := 0; start < len(r.todo); start += r.e.cfg.BatchSize {
		if err := ctx.Err(); err != nil {
			return err
		}
		batch := r.todo[start:min(start+r.e.cfg.BatchSize, len(r.todo))]
		if err := r.refresh(ctx); err != nil {
			return err
		}
		r.sinceRescan += len(batch)
		intent := make([]Record, 0, len(batch))
		for _, it := range batch {
			intent = append(intent, r.record(it, OutcomeStarted, "", ""))
		}
		if err := r.man.append(ctx, intent); err != nil {
			return err
		}
		recs := r.doBatch(ctx, batch)
		// Record what was done even if ctx was cancelled meanwhile.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), manifestWriteLimit)
		err := r.man.append(wctx, recs)
		cancel()
		if err != nil {
			return err
		}
		for _, rec := range recs {
			r.last[rec.Path] = rec
			if rec.Outcome == OutcomeFailed {
				failures = append(failures, &Error{Op: "act", Path: rec.Path, Retryable: rec.Retryable, Kind: kindFor(rec), Err: errors.New(rec.Detail)})
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	objFailures, err := r.objectLoop(ctx)
	if err != nil {
		return err
	}
	failures = append(failures, objFailures...)
	if len(failures) > 0 {
		retryable := false
		for _, f := range failures {
			retryable = retryable || IsRetryable(f)
		}
		return &Error{Op: "run " + r.e.cfg.RunID, Retryable: retryable, Kind: kindFor(Record{Retryable: retryable}),
			Err: fmt.Errorf("%d items failed; first: %w", len(failures), failures[0])}
	}
	return nil
}

func kindFor(rec Record) error {
	if rec.Retryable {
		return ErrStorageUnavailable
	}
	return nil
}

func (r *run) doBatch(ctx context.Context, batch []Item) []Record {
	recs := make([]Record, len(batch))
	ok := make([]bool, len(batch))
	sem := make(chan struct{}, r.e.cfg.Concurrency)
	var wg sync.WaitGroup
	for i, it := range batch {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		if ctx.Err() != nil {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rec := r.process(ctx, it)
			recs[i], ok[i] = rec, true
			r.mu.Lock()
			if rec.Outcome.final() {
				r.done++
			}
			p := Progress{RunID: r.e.cfg.RunID, Done: r.done, Total: r.total(), Last: rec}
			r.mu.Unlock()
			if r.e.cfg.Progress != nil {
				r.e.cfg.Progress(p)
			}
		}()
	}
	wg.Wait()
	out := recs[:0]
	for i := range recs {
		if ok[i] {
			out = append(out, recs[i])
		}
	}
	return out
}

func (r *run) trashDirMade(dir string) bool {
	_, ok := r.madeTrashDirs.Load(dir)
	return ok
}

func (r *run) record(it Item, o Outcome, trash, detail string) Record {
	rec := Record{Path: it.Path, Kind: it.Kind, Rule: it.Rule, Files: it.Files, Dirs: it.Dirs, Bytes: it.Bytes,
		Outcome: o, Time: r.e.cfg.Now().UTC(), TrashPath: trash, Detail: detail}
	if o == OutcomeTrashed {
		rec.Restore = restoreHint(r.e.cfg.RunID, it)
	}
	return rec
}

// restoreHint says how a trashed item comes back. The command it names
// restores the item with everything the _metadata in it name that
// governance trashed, from any run (Restore). A savepoint whose _metadata
// the planner read as naming every file relative to its own dir
// (Item.Relocatable) restores from its trash path as it is; any other
// snapshot names files by absolute path and restores only where it was
// written, once put back.
func restoreHint(run string, it Item) string {
	back := "flinkmaint governance restore " + run + " --path '" + stripScheme(it.Path) + "' --reason TEXT"
	switch {
	case it.Kind == KindSavepointDir && it.Relocatable:
		return "a job restores from the trash path as it is (its _metadata names every file relative to its own dir); to put it back: " + back
	case it.Kind == KindSavepointDir:
		return "put it back before a job restores from it (its _metadata names files by absolute path, or was not read); " +
			"every file its _metadata names that governance trashed comes back with it: " + back
	case it.Kind == KindCheckpointDir || it.Kind == KindJobDir:
		return "put it back before a job restores from it; every file its _metadata names that governance trashed, " +
			"in this run or an earlier one, comes back with it: " + back
	}
	return "put it back: " + back
}

// vanished is the outcome of an item (a path or an object) found missing
// right before acting: done by an attempt that crashed before writing its
// manifest, or removed by someone else. It returns the outcome, the trash
// path and the detail to record.
func (r *run) vanished(ctx context.Context, path, trash string) (Outcome, string, string) {
	if trash != "" {
		if _, err := r.e.cfg.FS.Stat(ctx, trash); err == nil {
			return OutcomeTrashed, trash, "found in trash on resume"
		}
	}
	if prev, ok := r.last[path]; ok && prev.Outcome == OutcomeStarted && trash == "" {
		return OutcomeDeleted, "", "found deleted on resume"
	}
	return OutcomeGone, "", "no longer exists"
}

func (r *run) process(ctx context.Context, it Item) Record {
	fsys := r.e.cfg.FS
	trash := ""
	if r.plan.Policy.Action == ActionTrash {
		trash = r.e.trashPath(it.Path)
	}
	failed := func(op string, err error) Record {
		rec := r.record(it, OutcomeFailed, trash, op+": "+err.Error())
		rec.Retryable = IsRetryable(classify(op, it.Path, err))
		return rec
	}
	now, err := r.walkItem(ctx, it.Path)
	if errors.Is(err, storage.ErrNotFound) {
		o, tp, detail := r.vanished(ctx, it.Path, trash)
		return r.record(it, o, tp, detail)
	}
	if err != nil {
		return failed("walk", err)
	}
	if reason := r.verify(it, now); reason != "" {
		return r.record(it, OutcomeRefused, "", reason)
	}
	// The resources that name the savepoint go first: a savepoint left
	// without its resource is whole, a resource left naming nothing is not.
	var resources []string
	if len(it.Snapshots) > 0 {
		done, refused, err := r.releaseSnapshots(ctx, it)
		resources = done
		switch {
		case refused != "":
			if err != nil {
				refused += "; " + err.Error()
			}
			rec := r.record(it, OutcomeRefused, "", refused)
			rec.Resources = resources
			return rec
		case err != nil:
			rec := failed("delete FlinkStateSnapshot resources", err)
			rec.Resources = resources
			return rec
		}
	}
	withResources := func(rec Record) Record {
		rec.Resources = resources
		return rec
	}
	if trash != "" {
		// Items side by side share a trash dir: create it once per run.
		if parent := storage.ParentOf(trash); !r.trashDirMade(parent) {
			if err := fsys.MkdirAll(ctx, parent); err != nil {
				return failed("create trash dir", err)
			}
			r.madeTrashDirs.Store(parent, true)
		}
		if err := fsys.Rename(ctx, it.Path, trash); err != nil {
			return withResources(failed("move to trash", err))
		}
		return withResources(r.record(it, OutcomeTrashed, trash, ""))
	}
	if err := fsys.RemoveAll(ctx, it.Path); err != nil {
		return withResources(failed("delete", err))
	}
	return withResources(r.record(it, OutcomeDeleted, "", ""))
}

// itemNow is what a walk of an item right before acting found.
type itemNow struct {
	// newest is the newest modification of the item and everything in it.
	newest time.Time
	// completed is a _metadata in it the plan did not know of, if any.
	completed string
}

// walkItem walks the item at p; a missing item is ErrNotFound.
func (r *run) walkItem(ctx context.Context, p string) (itemNow, error) {
	var now itemNow
	base := r.e.cfg.FS.URI().String()
	err := r.e.cfg.FS.Walk(ctx, p, func(fi storage.FileInfo) error {
		if fi.ModTime.After(now.newest) {
			now.newest = fi.ModTime
		}
		if !fi.IsDir && fi.Name == layout.MetadataFileName && now.completed == "" {
			if key, err := normPath(fi.Path, base); err != nil || !r.planned[key] {
				now.completed = fi.Path
			}
		}
		return nil
	})
	return now, err
}

// verify re-checks an item right before acting, now what a walk of it
// just found; it returns why the item must not be touched, or "" if it may.
func (r *run) verify(it Item, now itemNow) string {
	r.mu.Lock()
	bad, fresh, live, liveJobs, liveClusters, ended := firstBad(r.freshBad), r.freshIx, r.live, r.liveJobs, r.liveClusters, r.ended
	r.mu.Unlock()
	if bad != "" {
		return "a _metadata completed since planning cannot be parsed (" + bad + "); its references are unknown"
	}
	if fresh != nil {
		if by, ok := fresh.find(it.Path); ok {
			return "referenced by " + by + ", completed since planning"
		}
	}
	r.mu.Lock()
	liveBad, liveRefs, liveDirs := r.liveBad, r.liveRefs, r.liveDirs
	r.mu.Unlock()
	if liveBad != "" {
		return liveBad
	}
	if live != nil && it.snapshot() {
		if why := live.UnknownRestore(); why != "" {
			return why
		}
	}
	for dir, n := range liveDirs {
		if under(dir, it.Path) || under(it.Path, dir) {
			return "needed now (" + string(n.reason) + "): " + dir + " is the " + n.by
		}
	}
	if liveRefs != nil {
		if by, ok := liveRefs.find(it.Path); ok {
			return "referenced now by " + by + ", the restore point or latest checkpoint of a live job"
		}
	}
	if live != nil {
		if it.JobID != "" && (it.Rule == RuleRetiredJob) {
			if _, ok := liveJobs[it.JobID]; ok {
				return "job " + it.JobID + " is live again"
			}
		}
		if it.ClusterID != "" && liveClusters[it.ClusterID] {
			return "cluster " + it.ClusterID + " is live again"
		}
		if it.Kind == KindHAClusterDir {
			for _, c := range live.Clusters {
				if c.HAUnknown && !slices.Contains(r.plan.RetiredClusters, it.ClusterID) {
					return "the HA configuration of live cluster " + c.ClusterID + " cannot be read; this HA dir may be its own"
				}
				if hd, err := r.canon.path(c.HADir); c.HADir != "" && (err != nil || hd == it.Path) {
					return "HA dir of live cluster " + c.ClusterID
				}
			}
		}
	}
	if now.completed != "" {
		return "holds " + now.completed + ", a checkpoint or savepoint completed since planning"
	}
	if now.newest.After(it.Newest) {
		return fmt.Sprintf("modified since planning (newest %s, planned %s)", now.newest.UTC().Format(time.RFC3339Nano), it.Newest.UTC().Format(time.RFC3339Nano))
	}
	r.mu.Lock()
	writers := r.writers
	r.mu.Unlock()
	for _, w := range writers {
		if _, ok := liveJobs[w.job]; ok {
			continue // a live job's needs are read from its cluster
		}
		if endedBy(ended, w.dir, w.newest) {
			continue // a cluster writing this dir lists it as ended since its last write: it writes and restores nothing now
		}
		switch {
		case w.started && !w.completed && it.Kind != KindHAClusterDir:
			return "a job outside the inventory started writing into " + w.dir + " since planning (" + w.evidence +
				") and has no completed checkpoint yet: what it restored from is unknown"
		case under(it.Path, w.dir):
			return "a job outside the inventory wrote into " + w.dir + " since planning (" + w.evidence +
				"): it may be uploading a checkpoint that uses this"
		}
	}
	return ""
}

// rescanShare bounds the cost of re-listing the roots: they are re-listed
// at most once every (entries listed last time)/rescanShare items, and
// before every batch while they are small.
const rescanShare = 64

// refresh reloads the live inventory before each batch and parses the
// _metadata completed since planning: it re-lists the roots, and the job
// dirs and savepoints touched since a grace before planning (a checkpoint
// or savepoint started later made its dir's entry newer; one older than
// that is abandoned by the planner's own rule, and a _metadata completed
// inside an item refuses the item, see verify).
func (r *run) refresh(ctx context.Context) error {
	if r.sinceRescan >= r.rescanEvery {
		if err := r.rescan(ctx); err != nil {
			return err
		}
	}
	return r.reloadLive(ctx)
}

// rescanCutoff is the oldest modification a rescan reads: a grace before
// the listing began (not before the plan was built: a dir created after
// its root was listed may be older than the plan). Zero reads everything.
func (p Plan) rescanCutoff() time.Time {
	since := p.CreatedAt
	if !p.ListedAt.IsZero() && p.ListedAt.Before(since) {
		since = p.ListedAt
	}
	if since.IsZero() {
		return time.Time{}
	}
	return since.Add(-p.Policy.ApplyDefaults().Grace)
}

// jobDirWriter is a job dir a checkpoint was written into since the
// listing began: a job writes there that the plan did not know writing.
type jobDirWriter struct {
	dir, job string
	// evidence says what was written when.
	evidence string
	// metadata are the _metadata paths of its checkpoints, chks those
	// checkpoints by id with their dirs' modification times; completed
	// says the run writing it has a completed checkpoint of its own (see
	// ownCheckpoint): one that an earlier run of the same job id left
	// there says nothing of what this run restored from.
	metadata  []string
	chks      []chkEntry
	completed bool
	// started says the writing began after the listing did, read without
	// the skew margin: a dir written just before the listing was the
	// planner's to judge (it keeps what no _metadata names there), while
	// a job that started writing after it, with no completed checkpoint
	// yet, was restored from something the plan could not see.
	started bool
	// newest is the last write into the dir's entries.
	newest time.Time
}

// writtenSince is the time after which a write into a job dir is news to
// the plan: the start of the listing, less the clock skew a NameNode and
// this worker may have.
func (p Plan) writtenSince() time.Time {
	since := p.CreatedAt
	if !p.ListedAt.IsZero() && p.ListedAt.Before(since) {
		since = p.ListedAt
	}
	return since.Add(-PendingMargin)
}

// writerIn says whether the entries of a job dir show a checkpoint
// written since the listing: a chk-N dir modified since, or, in a dir
// with no checkpoint yet, its shared or task-owned dir made since (a job
// that started and has not triggered its first checkpoint). at is that
// entry's modification.
func writerIn(entries []storage.FileInfo, since time.Time) (evidence string, at time.Time) {
	var setup string
	var setupAt time.Time
	checkpoints := false
	for _, fi := range entries {
		if !fi.IsDir {
			continue
		}
		when := fi.Path + " at " + fi.ModTime.UTC().Format(time.RFC3339)
		switch {
		case layout.ClassifyJobDirEntry(fi.Name, true).Kind == layout.KindCheckpoint:
			checkpoints = true
			if fi.ModTime.After(since) {
				return "checkpoint dir " + when, fi.ModTime
			}
		case (fi.Name == "shared" || fi.Name == "taskowned") && fi.ModTime.After(since) && setup == "":
			setup, setupAt = "state dir "+when, fi.ModTime
		}
	}
	if checkpoints {
		return "", time.Time{}
	}
	return setup, setupAt
}

func (r *run) rescan(ctx context.Context) error {
	fsys := r.e.cfg.FS
	base := fsys.URI().String()
	cutoff := r.plan.rescanCutoff()
	touched := func(fi storage.FileInfo) bool { return !fi.ModTime.Before(cutoff) }
	since := r.plan.writtenSince()
	entries := 0
	var found []string
	var writers []jobDirWriter
	list := func(dir string, fn func(storage.FileInfo)) error {
		err := fsys.List(ctx, dir, 0, func(b []storage.FileInfo) error {
			entries += len(b)
			for _, fi := range b {
				fn(fi)
			}
			return nil
		})
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		return err
	}
	for _, root := range append(append([]layout.Root(nil), r.plan.Roots...), r.plan.ReferenceRoots...) {
		var dirs []string
		switch root.Kind {
		case layout.CheckpointRoot:
			if err := list(root.Path, func(fi storage.FileInfo) {
				if fi.IsDir && layout.IsJobID(fi.Name) && touched(fi) {
					dirs = append(dirs, fi.Path)
				}
			}); err != nil {
				return classify("re-list checkpoint root", root.Path, err)
			}
			for _, jd := range dirs {
				var inDir []storage.FileInfo
				if err := list(jd, func(fi storage.FileInfo) { inDir = append(inDir, fi) }); err != nil {
					return classify("re-list job dir", jd, err)
				}
				var metadata []string
				var chks []chkEntry
				for _, fi := range inDir {
					if e := layout.ClassifyJobDirEntry(fi.Name, true); fi.IsDir && e.Kind == layout.KindCheckpoint {
						metadata = append(metadata, fi.Path+"/"+layout.MetadataFileName)
						chks = append(chks, chkEntry{ID: e.CheckpointID, At: fi.ModTime})
					}
				}
				found = append(found, metadata...)
				if ev, at := writerIn(inDir, since); ev != "" {
					dir, err := normPath(jd, base)
					if err != nil {
						return classify("re-list job dir", jd, err)
					}
					newest := at
					for _, fi := range inDir {
						if fi.ModTime.After(newest) {
							newest = fi.ModTime
						}
					}
					writers = append(writers, jobDirWriter{dir: dir, job: path.Base(dir), evidence: ev, metadata: metadata, chks: chks,
						started: at.After(since.Add(PendingMargin)), newest: newest})
				}
			}
		case layout.SavepointRoot:
			if err := list(root.Path, func(fi storage.FileInfo) {
				if fi.IsDir && layout.ClassifySavepointRootEntry(fi.Name, true).Kind == layout.KindSavepoint && touched(fi) {
					found = append(found, fi.Path+"/"+layout.MetadataFileName)
				}
			}); err != nil {
				return classify("re-list savepoint root", root.Path, err)
			}
		}
	}
	// Index what this rescan found once, not per _metadata.
	indexed := len(r.fresh)
	defer func() {
		if len(r.fresh) != indexed {
			r.mu.Lock()
			r.freshIx = newRefIndex(r.fresh)
			r.mu.Unlock()
		}
	}()
	for _, m := range found {
		key, err := normPath(m, base)
		if err != nil || r.seen[key] {
			continue
		}
		refs, err := readReferences(ctx, fsys, m, base)
		if err == nil {
			refs, err = r.canon.refs(refs)
		}
		switch {
		case errors.Is(err, storage.ErrNotFound):
			continue // not completed yet; a later batch looks again
		case err != nil && isStorageError(err) && !errors.Is(err, storage.ErrTooLarge):
			return classify("read new metadata", m, err)
		case err != nil:
			// Not marked seen: the next rescan reads it again.
			r.mu.Lock()
			if r.freshBad == nil {
				r.freshBad = map[string]string{}
			}
			r.freshBad[key] = err.Error()
			r.mu.Unlock()
			continue
		default:
			r.mu.Lock()
			r.fresh = append(r.fresh, refs)
			delete(r.freshBad, key)
			r.mu.Unlock()
		}
		r.seen[key] = true
	}
	// A writer's checkpoint known complete (seen holds those known at
	// planning and those read since) names what it uses; until then, what
	// it restored from is unknown.
	gap := r.plan.Policy.ApplyDefaults().MaxCheckpointTimeout + PendingMargin
	for i := range writers {
		w := &writers[i]
		for k, m := range w.metadata {
			if key, err := normPath(m, base); err == nil && r.seen[key] {
				w.chks[k].Completed = true
			}
		}
		w.completed = ownCheckpoint(w.chks, w.newest, gap)
	}
	r.mu.Lock()
	r.writers = writers
	r.mu.Unlock()
	r.sinceRescan, r.rescanEvery = 0, entries/rescanShare
	return nil
}

// firstBad names one unparseable _metadata of bad (the first by path),
// "" when there is none.
func firstBad(bad map[string]string) string {
	first := ""
	for k := range bad {
		if first == "" || k < first {
			first = k
		}
	}
	if first == "" {
		return ""
	}
	return first + ": " + bad[first]
}

// reloadLive reads what the live jobs and records need now.
func (r *run) reloadLive(ctx context.Context) error {
	if r.e.cfg.Live != nil {
		l, err := r.e.cfg.Live(ctx)
		if err != nil {
			return &Error{Op: "reload inventory", Retryable: true, Err: err}
		}
		if err := r.readMissingLive(ctx, &l); err != nil {
			return err
		}
		// A resource the plan deletes with its savepoint does not keep it;
		// any other record, a resource created since planning included, does.
		held, released, err := releaseSnapshots(r.canon, l.Records, releasedIn(r.plan))
		var refs []*References
		var dirs map[string]need
		if err == nil {
			l.Records = held
			refs, dirs, err = liveNeeds(r.canon, l, nil, released)
		}
		bad := ""
		if err != nil {
			bad = err.Error() // nothing is safe while a live job cannot be told
		}
		r.mu.Lock()
		r.live = &l
		r.liveJobs, r.liveClusters, r.ended = l.jobs(), l.clusterIDs(), l.ended(r.canon)
		r.liveRefs, r.liveDirs, r.liveBad = newRefIndex(refs), dirs, bad
		r.mu.Unlock()
	}
	return nil
}

// readMissingLive reads, from the plan's file system, the _metadata of
// live restore points and latest checkpoints that the inventory callback
// did not supply.
func (r *run) readMissingLive(ctx context.Context, l *Live) error {
	have := map[string]bool{}
	for k := range l.Metadata {
		if n, err := r.canon.path(k); err == nil {
			have[n] = true
		}
	}
	for _, c := range l.Clusters {
		for _, j := range c.Jobs {
			for _, v := range []string{j.RestorePath, j.LatestCheckpoint} {
				if v == "" {
					continue
				}
				n, err := r.canon.path(v)
				if err != nil || prefixOf(n) != r.canon.base {
					continue // liveNeeds reports it
				}
				m := strings.TrimSuffix(n, "/"+layout.MetadataFileName) + "/" + layout.MetadataFileName
				if have[m] {
					continue
				}
				res, found, err := ReadMetadata(ctx, r.e.cfg.FS, m)
				if err != nil {
					return err
				}
				if found {
					if l.Metadata == nil {
						l.Metadata = map[string]MetadataResult{}
					}
					l.Metadata[m] = res
					have[m] = true
				}
			}
		}
	}
	return nil
}

func (r *run) total() int { return len(r.plan.Delete) + len(r.plan.Objects) }

func (r *run) result() Result {
	res := Result{RunID: r.e.cfg.RunID, ManifestDir: r.e.ManifestDir(), Total: r.total(), Counts: map[Outcome]int{}}
	tally := func(path string, removed func(Record)) {
		rec, ok := r.last[path]
		if !ok {
			return
		}
		res.Counts[rec.Outcome]++
		switch rec.Outcome {
		case OutcomeTrashed, OutcomeDeleted:
			removed(rec)
		case OutcomeRefused:
			res.Refused = append(res.Refused, rec)
		case OutcomeFailed:
			res.Failed = append(res.Failed, rec)
		}
	}
	for _, it := range r.plan.Delete {
		tally(it.Path, func(rec Record) { res.Reclaimed.add(rec.Files, rec.Dirs, rec.Bytes) })
	}
	for _, it := range r.plan.Objects {
		tally(it.Path, func(Record) { res.ObjectsRemoved++ })
	}
	return res
}
