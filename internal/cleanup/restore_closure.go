package cleanup

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/checkpoint"
	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// restoreItem is one item a governance run trashed, as its manifest
// says, and what a restore found and did about it.
type restoreItem struct {
	run  string
	rec  Record
	orig string // the original path, normalised
	// selected: the restore's paths chose it; otherwise a _metadata of a
	// selected item names a file in it (namedBy).
	selected bool
	namedBy  string
	// roots are the selected items whose snapshots need this one: it
	// goes back if one of them can go back whole. A selected item is its
	// own root.
	roots []*restoreItem
	// relocatable: every _metadata read in it names its files relative to
	// its own dir, so a job can restore from its trash path.
	relocatable bool
	notes       []string

	// What the checks found.
	why   string // why it cannot go back
	gone  bool   // neither in the trash nor at home
	back  bool   // an earlier restore put it back
	merge bool   // its original path is a dir it merges into

	out     Record // what the restore did or would do; Path is "" until decided
	decided bool
}

func (it *restoreItem) neededBy(root *restoreItem) {
	if !slices.Contains(it.roots, root) {
		it.roots = append(it.roots, root)
	}
}

// restoreRun is a run's trash as a restore reads it.
type restoreRun struct {
	records int // records of its manifest, of any outcome
	items   []*restoreItem
	objects []Record
}

// restoreState is what the restores of a run recorded.
type restoreState struct {
	man     *manifest
	earlier map[string]Record
}

// restorer holds what one restore read: the runs whose manifests it
// loaded (the restored run first, every run of the audit root once a
// named file is in none of those), the listings of the dirs it looked
// into, and what it found of writers.
type restorer struct {
	cfg   RestoreConfig
	base  string
	pre   string // scheme://authority of base
	trash string
	audit string

	runs       map[string]*restoreRun
	all        bool              // every run of the audit root is loaded
	unreadable map[string]string // runs whose manifest could not be read
	index      map[string][]*restoreItem
	states     map[string]*restoreState
	holds      map[string]func()

	listed  map[string]map[string]bool // dir -> entry name -> is a dir
	writers map[string]string          // dir -> writer evidence ("" none)
	live    *Live
	missing map[*restoreItem][]string // by selected item: files found nowhere
	foreign map[*restoreItem]int      // by selected item: files on other file systems
}

func newRestorer(cfg RestoreConfig, base, trash, audit string) *restorer {
	return &restorer{cfg: cfg, base: base, pre: prefixOf(strings.TrimSuffix(base, "/") + "/"), trash: trash, audit: audit,
		runs: map[string]*restoreRun{}, unreadable: map[string]string{}, index: map[string][]*restoreItem{},
		states: map[string]*restoreState{}, holds: map[string]func(){}, listed: map[string]map[string]bool{},
		writers: map[string]string{}, missing: map[*restoreItem][]string{}, foreign: map[*restoreItem]int{}}
}

func (rs *restorer) runTrash(run string) string { return rs.trash + "/" + run }

// load reads the manifest of run: its trashed paths, indexed by original
// path, and its trashed Kubernetes objects.
func (rs *restorer) load(ctx context.Context, run string) (*restoreRun, error) {
	if r, ok := rs.runs[run]; ok {
		return r, nil
	}
	recs, err := ReadManifest(ctx, rs.cfg.FS, rs.audit, run)
	if err != nil {
		return nil, err
	}
	r := &restoreRun{records: len(recs)}
	for _, rec := range recs {
		switch {
		case rec.Outcome != OutcomeTrashed:
		case IsObjectPath(rec.Path):
			r.objects = append(r.objects, rec)
		default:
			it := &restoreItem{run: run, rec: rec, orig: rec.Path}
			if n, err := normPath(rec.Path, rs.base); err == nil {
				it.orig = n
			}
			r.items = append(r.items, it)
			rs.index[it.orig] = append(rs.index[it.orig], it)
		}
	}
	rs.runs[run] = r
	return r, nil
}

// loadAll loads every run of the audit root. A run whose manifest cannot
// be read is noted: a file it holds is then reported missing, naming it.
func (rs *restorer) loadAll(ctx context.Context) error {
	rs.all = true
	var runs []string
	err := rs.cfg.FS.List(ctx, rs.audit, 0, func(b []storage.FileInfo) error {
		for _, fi := range b {
			if fi.IsDir && !strings.HasPrefix(fi.Name, "_") && checkRunID(fi.Name) == nil {
				runs = append(runs, fi.Name)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return classify("list the audit root", rs.audit, err)
	}
	sort.Strings(runs)
	for _, run := range runs {
		if _, err := rs.load(ctx, run); err != nil {
			if isStorageError(err) && !errors.Is(err, storage.ErrNotFound) {
				return err
			}
			rs.unreadable[run] = err.Error()
		}
	}
	return nil
}

// state is what the restores of run recorded.
func (rs *restorer) state(ctx context.Context, run string) (*restoreState, error) {
	if st, ok := rs.states[run]; ok {
		return st, nil
	}
	m, earlier, err := loadManifest(ctx, rs.cfg.FS, RestoreManifestDir(rs.audit, run), "")
	if err != nil {
		return nil, err
	}
	st := &restoreState{man: m, earlier: earlier}
	rs.states[run] = st
	return st, nil
}

// hold keeps a purge away from run while this restore lasts.
func (rs *restorer) hold(ctx context.Context, run string) error {
	if _, ok := rs.holds[run]; ok {
		return nil
	}
	release, err := holdOffPurge(ctx, rs.cfg.FS, rs.runTrash(run), rs.cfg.Now())
	if err != nil {
		return err
	}
	rs.holds[run] = release
	return nil
}

func (rs *restorer) release() {
	for _, r := range rs.holds {
		r()
	}
}

// entry says whether p exists and is a dir, from one listing of its
// parent per restore.
func (rs *restorer) entry(ctx context.Context, p string) (exists, isDir bool, err error) {
	p = strings.TrimSuffix(p, "/")
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return false, false, nil
	}
	dir, name := p[:i], p[i+1:]
	names, ok := rs.listed[dir]
	if !ok {
		names = map[string]bool{}
		err := rs.cfg.FS.List(ctx, dir, 0, func(b []storage.FileInfo) error {
			for _, fi := range b {
				names[fi.Name] = fi.IsDir
			}
			return nil
		})
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return false, false, classify("list", dir, err)
		}
		rs.listed[dir] = names
	}
	isDir, exists = names[name]
	return exists, isDir, nil
}

// holder is the trashed item of a loaded run whose trash holds p (the
// last trashed, if several do), or nil.
func (rs *restorer) holder(ctx context.Context, p string) (*restoreItem, error) {
	var best *restoreItem
	var err error
	ancestors(p, func(a string) {
		for _, it := range rs.index[a] {
			if err != nil {
				return
			}
			ok, _, e := rs.entry(ctx, it.rec.TrashPath+p[len(a):])
			if e != nil {
				err = e
			} else if ok && (best == nil || it.rec.Time.After(best.rec.Time)) {
				best = it
			}
		}
	})
	return best, err
}

// selectsInside says whether a glob names a path strictly inside p: a
// chk-N of a job dir trashed whole selects the job dir.
func selectsInside(p string, globs []string) bool {
	plain := stripScheme(p)
	for _, g := range globs {
		target := plain
		if strings.Contains(g, "://") {
			target = p
		}
		gs := strings.Split(strings.TrimSuffix(g, "/"), "/")
		ts := strings.Split(strings.TrimSuffix(target, "/"), "/")
		if len(gs) <= len(ts) {
			continue
		}
		inside := true
		for i := range ts {
			if ok, _ := path.Match(gs[i], ts[i]); !ok {
				inside = false
				break
			}
		}
		if inside {
			return true
		}
	}
	return false
}

// closure adds to set every trashed item, of any run, that holds a file
// a _metadata in a selected item names (the selected part of it, when a
// glob names a path inside it) and that is not at home, each noting the
// selected items that need it. A file found nowhere is recorded missing
// for the item whose _metadata names it.
func (rs *restorer) closure(ctx context.Context, set []*restoreItem) ([]*restoreItem, error) {
	fsys := rs.cfg.FS
	in := map[*restoreItem]bool{}
	for _, it := range set {
		in[it] = true
		it.neededBy(it)
	}
	type need struct {
		path, by string
		root     *restoreItem
	}
	var needs []need
	for _, it := range set {
		src := ""
		for _, p := range []string{it.rec.TrashPath, it.orig} {
			fi, err := fsys.Stat(ctx, p)
			if errors.Is(err, storage.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, classify("stat", p, err)
			}
			if fi.IsDir {
				src = p
			}
			break
		}
		if src == "" {
			continue // a file, or gone: the checks say which
		}
		var metas []string
		err := fsys.Walk(ctx, src, func(fi storage.FileInfo) error {
			if !fi.IsDir && fi.Name == layout.MetadataFileName {
				metas = append(metas, fi.Path)
			}
			return nil
		})
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return nil, classify("walk", src, err)
		}
		sort.Strings(metas)
		it.relocatable = len(metas) > 0
		for _, m := range metas {
			at := it.orig + strings.TrimPrefix(pathPart(m), pathPart(src))
			if len(rs.cfg.Paths) > 0 && !selected(parentDir(at), rs.cfg.Paths) {
				continue // another snapshot of an item a path inside it selected
			}
			data, err := fsys.ReadFile(ctx, m, checkpoint.MaxMetadataSize)
			if err != nil && !errors.Is(err, storage.ErrTooLarge) {
				return nil, classify("read", m, err)
			}
			refs, err := ParseReferences(data, at, rs.base)
			if err != nil {
				it.relocatable = false
				it.notes = append(it.notes, fmt.Sprintf("%s cannot be read (%v): the files it names were not looked for", at, err))
				continue
			}
			it.relocatable = it.relocatable && refs.Relocatable
			for _, f := range append(append([]string(nil), refs.Files...), refs.ManagedDirs...) {
				needs = append(needs, need{path: f, by: at, root: it})
			}
		}
	}
	for _, n := range needs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p := n.path
		if pre := prefixOf(p); pre != rs.pre {
			// Another spelling of this file system holds it only if a run
			// trashed it; otherwise it is on a file system this restore
			// cannot look into.
			alias := strings.TrimSuffix(rs.pre, "/") + pathPart(p)
			if h, err := rs.holder(ctx, alias); err != nil {
				return nil, err
			} else if h == nil {
				rs.foreign[n.root]++
				continue
			}
			p = alias
		}
		if home, _, err := rs.entry(ctx, p); err != nil {
			return nil, err
		} else if home {
			continue
		}
		h, err := rs.holder(ctx, p)
		if err == nil && h == nil && !rs.all {
			if err = rs.loadAll(ctx); err == nil {
				h, err = rs.holder(ctx, p)
			}
		}
		if err != nil {
			return nil, err
		}
		if h == nil {
			rs.missing[n.root] = append(rs.missing[n.root], p)
			continue
		}
		if !in[h] {
			in[h] = true
			h.namedBy = n.by
			set = append(set, h)
			if !rs.cfg.DryRun {
				if err := rs.hold(ctx, h.run); err != nil {
					return nil, err
				}
			}
		}
		h.neededBy(n.root)
	}
	return set, nil
}

// sortParentsFirst orders items so that a dir goes back before anything
// that lies in it: by depth, then the last trashed first.
func sortParentsFirst(set []*restoreItem) {
	sort.SliceStable(set, func(i, j int) bool {
		di, dj := depth(set[i]), depth(set[j])
		switch {
		case di != dj:
			return di < dj
		case !set[i].rec.Time.Equal(set[j].rec.Time):
			return set[i].rec.Time.After(set[j].rec.Time)
		}
		return set[i].rec.Path > set[j].rec.Path
	})
}

func depth(it *restoreItem) int {
	return strings.Count(strings.TrimSuffix(pathPart(it.orig), "/"), "/")
}

// existsAgain is why an item whose original path exists again and cannot
// take it is refused.
const existsAgain = "its original path exists again (re-created since it was trashed) and is not a dir of a job, checkpoint or savepoint " +
	"it could be merged into: nothing is overwritten and nothing is merged into it; if nothing uses what is there now " +
	"(no cluster or job writes there), move that aside and restore again"

// check finds whether and how item it can go back now.
func (rs *restorer) check(ctx context.Context, it *restoreItem) error {
	fsys := rs.cfg.FS
	r := it.rec
	orig, err := normPath(r.Path, rs.base)
	if err != nil {
		it.why = fmt.Sprintf("the manifest's path %q does not parse: %v", r.Path, err)
		return nil
	}
	if prefixOf(orig) != rs.pre {
		it.why = fmt.Sprintf("%s is on another file system than the trash (%s): a move cannot put it back", orig, rs.base)
		return nil
	}
	// The trash path the run itself would have used: a manifest naming
	// another one was not written by that run, or was edited.
	if want := rs.runTrash(it.run) + stripScheme(orig); r.TrashPath != want {
		it.why = fmt.Sprintf("the manifest names trash path %q, not %q where run %s puts this item: the manifest does not match the run", r.TrashPath, want, it.run)
		return nil
	}
	if _, err := rs.cfg.Guard.Check(fsys.URI(), orig); err != nil {
		it.why = fmt.Sprintf("%s is outside the roots a restore may write into (the tenants' roots): %v", orig, err)
		return nil
	}
	inTrash, err := exists(ctx, fsys, r.TrashPath)
	if err != nil {
		return err
	}
	atHome, err := exists(ctx, fsys, orig)
	if err != nil {
		return err
	}
	st, err := rs.state(ctx, it.run)
	if err != nil {
		return err
	}
	prev := st.earlier[r.Path]
	wasMoved := prev.Outcome == OutcomeRestored || prev.Outcome == OutcomeStarted
	switch {
	case !inTrash && atHome && wasMoved:
		it.back = true
	case !inTrash && atHome:
		it.why = "its original path exists again and its trash path does not: there is nothing of it to put back"
	case atHome:
		return rs.mergeCheck(ctx, it, orig)
	case !inTrash:
		it.gone = true
	default:
		// Into a job dir that exists: only if nothing writes there.
		if dir := jobDirOf(orig, r.Kind); dir != "" && dir != orig {
			ev, err := rs.writer(ctx, dir)
			if err != nil {
				return err
			}
			if ev != "" {
				it.why = rs.writerWhy(it, dir, ev)
			}
		}
	}
	return nil
}

// mergeCheck decides about an item whose original path exists again: a
// dir of a job, checkpoint or savepoint takes it entry by entry when
// nothing writes there and nothing there would be overwritten.
func (rs *restorer) mergeCheck(ctx context.Context, it *restoreItem, orig string) error {
	fsys := rs.cfg.FS
	switch it.rec.Kind {
	case KindJobDir, KindCheckpointDir, KindSavepointDir:
	default:
		it.why = existsAgain
		return nil
	}
	for _, p := range []string{it.rec.TrashPath, orig} {
		fi, err := fsys.Stat(ctx, p)
		if err != nil {
			return classify("stat", p, err)
		}
		if !fi.IsDir {
			it.why = existsAgain
			return nil
		}
	}
	dir := jobDirOf(orig, it.rec.Kind)
	if dir == "" {
		dir = orig
	}
	ev, err := rs.writer(ctx, dir)
	if err != nil {
		return err
	}
	if ev != "" {
		it.why = "its original path exists again: " + rs.writerWhy(it, dir, ev)
		return nil
	}
	var taken []string
	src := pathPart(it.rec.TrashPath)
	err = fsys.Walk(ctx, it.rec.TrashPath, func(fi storage.FileInfo) error {
		rel := strings.TrimPrefix(pathPart(fi.Path), src)
		if rel == "" {
			return nil
		}
		there, isDir, err := rs.entry(ctx, orig+rel)
		if err != nil {
			return err
		}
		if there && !(isDir && fi.IsDir) {
			taken = append(taken, orig+rel)
		}
		return nil
	})
	if err != nil {
		return classify("walk", it.rec.TrashPath, err)
	}
	if len(taken) > 0 {
		sort.Strings(taken)
		it.why = fmt.Sprintf("its original path exists again, and a merge into it would overwrite %s: nothing is overwritten, so nothing of it was moved; "+
			"whatever wrote those (a run of the same job id numbering its checkpoints like this one) keeps them", listSome(taken, 5))
		return nil
	}
	it.merge = true
	return nil
}

// jobDirOf is the job dir an item of kind at p goes into or is, "" when
// it is not in one.
func jobDirOf(p string, kind ItemKind) string {
	switch kind {
	case KindJobDir:
		return p
	case KindCheckpointDir, KindSharedFile, KindTaskOwnedFile:
		for d := parentDir(p); strings.Contains(d, "/"); d = parentDir(d) {
			if layout.IsJobID(path.Base(d)) {
				return d
			}
			if parentDir(d) == d {
				break
			}
		}
	}
	return ""
}

// writer says what shows that a job may be writing into dir now ("" when
// nothing does, or dir does not exist): a job of that id live on an
// inventory cluster whose latest checkpoint lies in dir or that has none
// yet (cfg.Live), or a file written there within cfg.QuietFor, or, in a
// dir holding no file yet, a change within it (a job that just started).
func (rs *restorer) writer(ctx context.Context, dir string) (string, error) {
	if ev, ok := rs.writers[dir]; ok {
		return ev, nil
	}
	ev, err := rs.findWriter(ctx, dir)
	if err != nil {
		return "", err
	}
	rs.writers[dir] = ev
	return ev, nil
}

func (rs *restorer) findWriter(ctx context.Context, dir string) (string, error) {
	if id := path.Base(dir); layout.IsJobID(id) && rs.cfg.Live != nil {
		if rs.live == nil {
			l, err := rs.cfg.Live(ctx)
			if err != nil {
				return "", &Error{Op: "read the live jobs before a restore", Retryable: true, Err: err}
			}
			rs.live = &l
		}
		for _, c := range rs.live.Clusters {
			for _, j := range c.Jobs {
				if j.JobID != id {
					continue
				}
				// Evidence is bound to where it was seen: a live job of the
				// same id whose checkpoints go elsewhere does not write here.
				if j.LatestCheckpoint != "" && !under(pathPart(j.LatestCheckpoint), pathPart(dir)) {
					continue
				}
				if j.LatestCheckpoint == "" {
					return fmt.Sprintf("job %s is live on cluster %s and has no completed checkpoint yet, so it may write there", id, c.ClusterID), nil
				}
				return fmt.Sprintf("job %s is live on cluster %s, its latest checkpoint %s", id, c.ClusterID, j.LatestCheckpoint), nil
			}
		}
	}
	var newestFile, newestDir storage.FileInfo
	files := 0
	err := rs.cfg.FS.Walk(ctx, dir, func(fi storage.FileInfo) error {
		switch {
		case !fi.IsDir:
			files++
			if fi.ModTime.After(newestFile.ModTime) {
				newestFile = fi
			}
		case fi.ModTime.After(newestDir.ModTime):
			newestDir = fi
		}
		return nil
	})
	if errors.Is(err, storage.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", classify("walk", dir, err)
	}
	now := rs.cfg.Now()
	switch {
	case files > 0 && now.Sub(newestFile.ModTime) < rs.cfg.QuietFor:
		return fmt.Sprintf("%s was written at %s, within %v", newestFile.Path, newestFile.ModTime.UTC().Format(time.RFC3339), rs.cfg.QuietFor), nil
	case files == 0 && now.Sub(newestDir.ModTime) < rs.cfg.QuietFor:
		return fmt.Sprintf("it holds no file yet and %s changed at %s, within %v: a job may have just started there", newestDir.Path,
			newestDir.ModTime.UTC().Format(time.RFC3339), rs.cfg.QuietFor), nil
	}
	return "", nil
}

// writerWhy says why an item does not go into dir, where a job may be
// writing, and what can be done without touching that job.
func (rs *restorer) writerWhy(it *restoreItem, dir, evidence string) string {
	who := "a job"
	if !layout.IsJobID(path.Base(dir)) {
		who = "a job (taking a savepoint), or someone,"
	}
	s := fmt.Sprintf("%s writes into %s now, or may (%s): nothing goes into a dir a running job uses, so nothing of this was moved and the writer is not touched; "+
		"once nothing has written there for %v (the writer stopped), restore again: it goes back beside what is there, overwriting nothing", who, dir, evidence, rs.cfg.QuietFor)
	if it.relocatable {
		s += "; meanwhile a job can restore from its trash path as it is (" + it.rec.TrashPath + "): its _metadata names every file relative to its own dir"
	} else if it.rec.Kind == KindJobDir || it.rec.Kind == KindCheckpointDir {
		s += "; its checkpoints name their files by absolute path under " + dir + ", so they restore only from there, not from the trash or a copy beside it"
	}
	return s
}

func listSome(paths []string, n int) string {
	if len(paths) <= n {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:n], ", "), len(paths)-n)
}

// missingText says why the snapshots of selected item it cannot be made
// whole, or "".
func (rs *restorer) missingText(it *restoreItem) string {
	m := rs.missing[it]
	if len(m) == 0 {
		return ""
	}
	sort.Strings(m)
	s := fmt.Sprintf("the snapshot cannot be made whole: %d files its _metadata names are neither at home nor in the trash of any run: %s",
		len(m), listSome(m, 10))
	if len(rs.unreadable) > 0 {
		var runs []string
		for r, err := range rs.unreadable {
			runs = append(runs, r+" ("+err+")")
		}
		sort.Strings(runs)
		s += "; the manifests of these runs could not be read: " + strings.Join(runs, ", ")
	}
	return s + "; nothing of it was moved"
}

// decide checks every item, then lets a selected item's snapshot go back
// only whole: when no file its _metadata names is missing and every item
// it needs can go back. An item goes back when a selected item that needs
// it does; the others are decided here (already back, refused or, dry,
// to be moved) and recorded.
func (rs *restorer) decide(ctx context.Context, set []*restoreItem, tick func()) error {
	for _, it := range set {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := rs.check(ctx, it); err != nil {
			return err
		}
	}
	// blocked says why a selected item's snapshot cannot go back whole.
	blocked := map[*restoreItem]string{}
	for _, it := range set {
		if t := rs.missingText(it); t != "" {
			blocked[it] = t
		}
	}
	for _, it := range set {
		own := ""
		switch {
		case it.why != "":
			own = it.rec.Path + ": " + it.why
		case it.gone:
			own = it.rec.Path + " is not in the trash any more"
		}
		for _, r := range it.roots {
			if own != "" && blocked[r] == "" {
				blocked[r] = "nothing of it was moved: the snapshot cannot go back whole: " + own
			}
		}
	}
	now := rs.cfg.Now()
	var purged map[string]Record
	finals := map[string][]Record{}
	for _, it := range set {
		var with *restoreItem // a selected item that needs it and cannot go back whole
		goes := false
		for _, r := range it.roots {
			if blocked[r] == "" {
				goes = true
			} else if with == nil {
				with = r
			}
		}
		refuse := func(detail string) Record { return restoreRecord(it.rec, OutcomeRefused, now, detail) }
		switch {
		case it.why != "":
			it.out = refuse(it.why)
		case it.gone:
			if purged == nil {
				purged = purgedRuns(ctx, rs.cfg.FS, rs.audit)
			}
			it.out = refuse("not in the trash any more: " + goneReason(purged, rs.runTrash(it.run)))
		case it.selected && blocked[it] != "" && !goes:
			it.out = refuse(blocked[it])
		case it.back:
			it.out = restoreRecord(it.rec, OutcomeRestored, now, AlreadyBack)
		case !goes:
			it.out = refuse("not moved: it goes back only together with " + with.rec.Path + ", and " + blocked[with])
		case rs.cfg.DryRun:
			it.out = restoreRecord(it.rec, OutcomeStarted, now, "would be "+rs.moveDetail(it))
		default:
			if it.selected && blocked[it] != "" {
				it.notes = append(it.notes, "it goes back for another snapshot that names it, but its own "+strings.TrimPrefix(blocked[it], "nothing of it was moved: "))
			}
			continue // to be moved
		}
		rs.annotate(it)
		it.decided = true
		if it.out.Detail != AlreadyBack && !rs.cfg.DryRun {
			finals[it.run] = append(finals[it.run], it.out)
		}
		tick()
	}
	return rs.record(ctx, finals)
}

// annotate adds to an item's outcome why it is in the restore and what
// was not looked at.
func (rs *restorer) annotate(it *restoreItem) {
	if it.namedBy != "" {
		it.out.Detail = "named by " + it.namedBy + ": " + it.out.Detail
	}
	notes := it.notes
	if n := rs.foreign[it]; n > 0 {
		notes = append(notes, fmt.Sprintf("%d files its _metadata names are on another file system: not looked for", n))
	}
	if len(notes) > 0 {
		it.out.Detail += "; " + strings.Join(notes, "; ")
	}
}

// moveDetail says how an item goes back (after "would be", dry).
func (rs *restorer) moveDetail(it *restoreItem) string {
	if it.merge {
		return fmt.Sprintf("merged back from %s into %s, which exists again (nothing there is overwritten)", it.rec.TrashPath, it.orig)
	}
	return "moved back from " + it.rec.TrashPath
}

// record appends records to the restore manifests of their runs, also
// when ctx ended: what was decided and done is written down.
func (rs *restorer) record(ctx context.Context, byRun map[string][]Record) error {
	runs := make([]string, 0, len(byRun))
	for r := range byRun {
		runs = append(runs, r)
	}
	sort.Strings(runs)
	for _, run := range runs {
		st, err := rs.state(ctx, run)
		if err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), manifestWriteLimit)
		err = st.man.append(wctx, byRun[run])
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// moveAll moves the items decide left to move, parents first: one depth
// at a time, in batches recorded as started before and as done after.
func (rs *restorer) moveAll(ctx context.Context, set []*restoreItem, tick func()) error {
	var todo []*restoreItem
	for _, it := range set {
		if !it.decided {
			todo = append(todo, it)
		}
	}
	for start := 0; start < len(todo); {
		end := start + 1
		for end < len(todo) && end-start < restoreBatch && depth(todo[end]) == depth(todo[start]) {
			end++
		}
		if err := rs.moveBatch(ctx, todo[start:end], tick); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// moveBatch records the intent to move batch, moves its items,
// restoreConcurrency at a time, and records what moved; after the first
// move that fails (or when ctx ends) it starts no more and returns that
// error.
func (rs *restorer) moveBatch(ctx context.Context, batch []*restoreItem, tick func()) error {
	intent := map[string][]Record{}
	for _, it := range batch {
		intent[it.run] = append(intent[it.run], restoreRecord(it.rec, OutcomeStarted, rs.cfg.Now(), ""))
	}
	if err := rs.record(ctx, intent); err != nil {
		return err
	}
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	next := make(chan *restoreItem)
	for range min(restoreConcurrency, len(batch)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range next {
				err := rs.moveOne(ctx, it)
				mu.Lock()
				if err != nil {
					if first == nil {
						first = err
					}
				} else {
					it.out = restoreRecord(it.rec, OutcomeRestored, rs.cfg.Now(), rs.moveDetail(it))
					rs.annotate(it)
					it.decided = true
					tick()
				}
				mu.Unlock()
			}
		}()
	}
	for _, it := range batch {
		mu.Lock()
		stop := first != nil
		mu.Unlock()
		if stop || ctx.Err() != nil {
			break
		}
		next <- it
	}
	close(next)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	done := map[string][]Record{}
	for _, it := range batch {
		if it.decided {
			done[it.run] = append(done[it.run], it.out)
		}
	}
	if err := rs.record(ctx, done); first == nil {
		first = err
	}
	return first
}

// moveOne moves an item back: one rename, or, into a dir that exists
// again, one per entry that is not there.
func (rs *restorer) moveOne(ctx context.Context, it *restoreItem) error {
	fsys := rs.cfg.FS
	if it.merge {
		return mergeInto(ctx, fsys, it.rec.TrashPath, it.orig)
	}
	if err := fsys.MkdirAll(ctx, parentDir(it.orig)); err != nil {
		return classify("create the parent of", it.orig, err)
	}
	if err := fsys.Rename(ctx, it.rec.TrashPath, it.orig); err != nil {
		return classify("move back", it.rec.TrashPath, err)
	}
	return nil
}

// mergeInto moves the entries of dir from into dir to, merging the dirs
// both hold, and removes what it emptied in the trash. It never moves an
// entry onto one that exists: the checks found none, and one that
// appeared since stops the merge with an error.
func mergeInto(ctx context.Context, fsys storage.FileSystem, from, to string) error {
	var entries []storage.FileInfo
	if err := fsys.List(ctx, from, 0, func(b []storage.FileInfo) error {
		entries = append(entries, b...)
		return nil
	}); err != nil {
		return classify("list", from, err)
	}
	for _, e := range entries {
		dst := to + "/" + e.Name
		fi, err := fsys.Stat(ctx, dst)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			if err := fsys.Rename(ctx, e.Path, dst); err != nil {
				return classify("move back", e.Path, err)
			}
		case err != nil:
			return classify("stat", dst, err)
		case e.IsDir && fi.IsDir:
			if err := mergeInto(ctx, fsys, e.Path, dst); err != nil {
				return err
			}
		default:
			return &Error{Op: "merge back", Path: dst, Err: errors.New("it appeared at home since the restore checked: nothing is overwritten; restore again")}
		}
	}
	if err := fsys.Remove(ctx, from); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return classify("remove the emptied trash dir", from, err)
	}
	return nil
}
