package cleanup

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

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
// nothing does): a job of that id live on an inventory cluster whose
// latest checkpoint lies in dir or that has none yet (cfg.Live; it may be
// about to write there), or a file written there within cfg.QuietFor, or,
// in a dir holding no file yet, a change within it (a job that just
// started).
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
	switch {
	case it.relocatable:
		s += "; meanwhile a job can restore from its trash path as it is (" + it.rec.TrashPath + "): its _metadata names every file relative to its own dir"
	case it.parsed:
		s += "; its _metadata names files by absolute path, so a job restores from it only once they are where they were written, not from the trash or a copy beside it"
	}
	return s
}
