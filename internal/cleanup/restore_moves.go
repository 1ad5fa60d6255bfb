package cleanup

import (
	"context"
	"errors"
	"sort"
	"sync"

	"github.com/flinkmaint/flinkmaint/internal/storage"
)

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
