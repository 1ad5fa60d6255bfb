package cleanup

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

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
	// parsed: a _metadata in it was read; relocatable: every one read
	// names its files relative to its own dir, so a job can restore from
	// its trash path.
	parsed, relocatable bool
	notes               []string

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
		relocatable := true
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
				relocatable = false
				it.notes = append(it.notes, fmt.Sprintf("%s cannot be read (%v): the files it names were not looked for", at, err))
				continue
			}
			it.parsed = true
			relocatable = relocatable && refs.Relocatable
			for _, f := range append(append([]string(nil), refs.Files...), refs.ManagedDirs...) {
				needs = append(needs, need{path: f, by: at, root: it})
			}
		}
		it.relocatable = it.parsed && relocatable
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
