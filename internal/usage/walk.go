package usage

import (
	"context"
	"sort"
	"strings"

	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// Layout says where things live under one tenant root. Paths are plain
// paths or URIs of the walked file system; those not under Root are
// ignored.
type Layout struct {
	// Root is the tenant root, walked whole.
	Root string
	// Roots are the configured checkpoint, savepoint and HA roots. One path
	// may carry several kinds (savepoints written into the checkpoint dir).
	Roots []layout.Root
	// Trash holds cleanup's trash and audit roots.
	Trash []string
	// Own holds flinkmaint's directories besides <Root>/.flinkmaint, such
	// as the plan directory.
	Own []string
}

// Tree is what one walk found: figures per kind, per job id where the
// layout names one (checkpoint job dirs, HA blob dirs, job results), and
// every savepoint directory with its usage, for lineage.
type Tree struct {
	Kinds      map[Kind]Figures
	JobIDs     map[string]map[Kind]Figures
	Savepoints []layout.Savepoint
	// Entries is the number of files and directories walked.
	Entries int64
}

// progressEvery is how many entries pass between two progress calls.
const progressEvery = 1000

// where says how the children of a directory are classified.
type where uint8

const (
	inTenant           where = iota // outside every root: unknown, or leading to one
	inRoot                          // a configured root: its kinds' classifiers
	inJobDir                        // <checkpoint root>/<job id>
	inHACluster                     // <ha root>/<cluster id>
	inBlob                          // <ha root>/<cluster id>/blob
	inJobResults                    // <ha root>/job-result-store
	inJobResultCluster              // <ha root>/job-result-store/<cluster id>
	inside                          // below a classified entry: inherits
)

// frame is one directory on the walk's path, and what its entries inherit.
type frame struct {
	path  string
	kind  Kind
	where where
	roots []layout.RootKind // with inRoot
	jobID string
	sp    int // index into Tree.Savepoints, -1 outside a savepoint
}

// special is a path the layout names: a configured root, trash or own dir.
type special struct {
	kind  Kind
	roots []layout.RootKind
}

// walker classifies one walk's entries.
type walker struct {
	special   map[string]special
	ancestors map[string]bool // dirs between the tenant root and a special path
	tree      Tree
}

// Walk walks the tenant root once, with the file system's batched walker,
// and attributes every file and directory to exactly one kind (see Kind).
// progress, when set, is called with the entries walked so far every
// thousand entries and at the end. A missing root is storage.ErrNotFound.
func Walk(ctx context.Context, fsys storage.FileSystem, l Layout, progress func(entries int64)) (Tree, error) {
	root, err := qualified(fsys, l.Root)
	if err != nil {
		return Tree{}, err
	}
	w := &walker{special: map[string]special{}, ancestors: map[string]bool{},
		tree: Tree{Kinds: map[Kind]Figures{}, JobIDs: map[string]map[Kind]Figures{}}}
	w.mark(fsys, root, root+"/"+ownDir, KindFlinkmaint, 0)
	for _, p := range l.Own {
		w.mark(fsys, root, p, KindFlinkmaint, 0)
	}
	for _, p := range l.Trash {
		w.mark(fsys, root, p, KindTrash, 0)
	}
	for _, r := range l.Roots {
		w.mark(fsys, root, r.Path, rootKind(r.Kind), r.Kind)
	}
	var stack []frame
	err = fsys.Walk(ctx, root, func(fi storage.FileInfo) error {
		path := strings.TrimRight(fi.Path, "/")
		for len(stack) > 0 && !isChild(stack[len(stack)-1].path, path, fi.Name) {
			stack = stack[:len(stack)-1]
		}
		var f frame
		if len(stack) == 0 {
			f = w.top(path)
		} else {
			f = w.classify(stack[len(stack)-1], path, fi)
		}
		w.count(f, path, fi)
		if fi.IsDir {
			stack = append(stack, f)
		}
		if progress != nil && w.tree.Entries%progressEvery == 0 {
			progress(w.tree.Entries)
		}
		return nil
	})
	if err != nil {
		return Tree{}, err
	}
	if progress != nil {
		progress(w.tree.Entries)
	}
	sort.Slice(w.tree.Savepoints, func(i, j int) bool { return w.tree.Savepoints[i].Path < w.tree.Savepoints[j].Path })
	return w.tree, nil
}

// qualified spells p as the file system's listings do.
func qualified(fsys storage.FileSystem, p string) (string, error) {
	u, err := storage.ParseURI(p)
	if err != nil {
		return "", err
	}
	if u.Scheme == "" {
		base := fsys.URI()
		u.Scheme, u.Authority = base.Scheme, base.Authority
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// mark records a path the layout names, if it lies under the tenant root,
// and the directories that lead to it. A path that does not parse or lies
// elsewhere names nothing in this walk.
func (w *walker) mark(fsys storage.FileSystem, root, p string, kind Kind, rk layout.RootKind) {
	q, err := qualified(fsys, p)
	if err != nil || (q != root && !strings.HasPrefix(q, root+"/")) {
		return
	}
	// The first trash or own mark wins; root kinds on one path add up.
	s, seen := w.special[q]
	switch {
	case !seen && rk == 0:
		s.kind = kind
	case rk != 0 && (!seen || len(s.roots) > 0):
		if !containsKind(s.roots, rk) {
			s.roots = append(s.roots, rk)
			sort.Slice(s.roots, func(i, j int) bool { return s.roots[i] < s.roots[j] })
		}
		s.kind = rootKind(s.roots[0])
	}
	w.special[q] = s
	for d := storage.ParentOf(q); d != root && strings.HasPrefix(d, root+"/"); d = storage.ParentOf(d) {
		w.ancestors[d] = true
	}
}

func containsKind(ks []layout.RootKind, k layout.RootKind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

func rootKind(k layout.RootKind) Kind {
	switch k {
	case layout.CheckpointRoot:
		return KindCheckpoints
	case layout.SavepointRoot:
		return KindSavepoints
	case layout.HARoot:
		return KindHA
	}
	return KindUnknown
}

// isChild reports whether path, named name, lies directly in dir.
func isChild(dir, path, name string) bool {
	return len(path) == len(dir)+1+len(name) && path[len(dir)] == '/' && strings.HasPrefix(path, dir)
}

// top classifies the tenant root itself.
func (w *walker) top(path string) frame {
	if f, ok := w.named(path); ok {
		return f
	}
	return frame{path: path, kind: KindStructure, where: inTenant, sp: -1}
}

// named classifies a path the layout names, or one leading to such a path.
func (w *walker) named(path string) (frame, bool) {
	if s, ok := w.special[path]; ok {
		f := frame{path: path, kind: s.kind, where: inside, sp: -1}
		if len(s.roots) > 0 {
			f.where, f.roots = inRoot, s.roots
		}
		return f, true
	}
	if w.ancestors[path] {
		return frame{path: path, kind: KindStructure, where: inTenant, sp: -1}, true
	}
	return frame{}, false
}

// classify places one entry of the directory parent.
func (w *walker) classify(parent frame, path string, fi storage.FileInfo) frame {
	if f, ok := w.named(path); ok {
		return f
	}
	f := frame{path: path, kind: parent.kind, where: inside, jobID: parent.jobID, sp: parent.sp}
	switch parent.where {
	case inTenant:
		f.kind = KindUnknown
	case inRoot:
		f.kind = KindUnknown
		for _, rk := range parent.roots {
			if w.rootEntry(rk, &f, fi) {
				break
			}
		}
	case inJobDir:
		// Whatever else lies in a job dir counts with its checkpoints.
		switch layout.ClassifyJobDirEntry(fi.Name, fi.IsDir).Kind {
		case layout.KindSharedDir:
			f.kind = KindShared
		case layout.KindTaskOwnedDir:
			f.kind = KindTaskOwned
		default:
			f.kind = KindCheckpoints
		}
	case inHACluster:
		if layout.ClassifyHAClusterEntry(fi.Name, fi.IsDir).Kind == layout.KindHABlobDir {
			f.where = inBlob
		}
	case inBlob:
		f.jobID = layout.ClassifyBlobEntry(fi.Name, fi.IsDir).JobID
	case inJobResults:
		if fi.IsDir {
			f.where = inJobResultCluster
		}
	case inJobResultCluster:
		f.jobID = layout.ClassifyJobResultEntry(fi.Name, fi.IsDir).JobID
	}
	return f
}

// rootEntry classifies an entry directly under a root of kind rk into f,
// and reports whether that kind's layout knows it.
func (w *walker) rootEntry(rk layout.RootKind, f *frame, fi storage.FileInfo) bool {
	switch rk {
	case layout.CheckpointRoot:
		c := layout.ClassifyCheckpointRootEntry(fi.Name, fi.IsDir)
		if c.Kind != layout.KindCheckpointJobDir {
			return false
		}
		f.kind, f.where, f.jobID = KindCheckpoints, inJobDir, c.JobID
	case layout.SavepointRoot:
		c := layout.ClassifySavepointRootEntry(fi.Name, fi.IsDir)
		if c.Kind != layout.KindSavepoint {
			return false
		}
		f.kind, f.sp = KindSavepoints, len(w.tree.Savepoints)
		w.tree.Savepoints = append(w.tree.Savepoints, layout.Savepoint{Root: storage.ParentOf(f.path), Path: f.path, JobIDPrefix: c.JobIDPrefix})
	case layout.HARoot:
		switch layout.ClassifyHARootEntry(fi.Name, fi.IsDir).Kind {
		case layout.KindHACluster:
			f.where = inHACluster
		case layout.KindJobResultStore:
			f.where = inJobResults
		default:
			return false
		}
		f.kind = KindHA
	default:
		return false
	}
	return true
}

// count adds one entry to its kind, its job id and its savepoint.
func (w *walker) count(f frame, path string, fi storage.FileInfo) {
	var one Figures
	if fi.IsDir {
		one.Dirs = 1
	} else {
		one.Files, one.Bytes = 1, fi.Size
	}
	w.tree.Entries++
	w.tree.Kinds[f.kind] = w.tree.Kinds[f.kind].Add(one)
	if f.jobID != "" {
		byKind := w.tree.JobIDs[f.jobID]
		if byKind == nil {
			byKind = map[Kind]Figures{}
			w.tree.JobIDs[f.jobID] = byKind
		}
		byKind[f.kind] = byKind[f.kind].Add(one)
	}
	if f.sp >= 0 {
		sp := &w.tree.Savepoints[f.sp]
		sp.Usage.Add(fi)
		if !fi.IsDir && path == sp.Path+"/"+layout.MetadataFileName {
			sp.Completed, sp.Written = true, fi.ModTime
		}
	}
}
