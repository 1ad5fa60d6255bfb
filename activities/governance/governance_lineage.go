package governance

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// drilledSavepoints lists the savepoints whose latest restore drill
// restored a copy of the job and passed, from each tenant's drill records.
// Unreadable records only cost that preference, and say so: retention
// still keeps the newest savepoints.
func (a *Activities) drilledSavepoints(ctx context.Context, tenants []inventory.Tenant, notes *[]string) ([]string, error) {
	var out []string
	for _, t := range tenants {
		if t.Root == "" {
			continue
		}
		records, err := a.catalog().Drills(ctx, t)
		if errors.Is(err, catalog.ErrInvalid) {
			*notes = append(*notes, fmt.Sprintf("restore drill records of tenant %s are not readable (%v): no savepoint is kept for its passing drill", t.Name, err))
			continue
		}
		if err != nil {
			return nil, core.Classify("read the restore drill records of tenant "+t.Name, err)
		}
		for _, r := range records {
			if r.Kind == core.SnapshotSavepoint && r.Outcome == catalog.DrillPassed && r.Tier >= 2 {
				out = append(out, r.Snapshot)
			}
		}
	}
	return out, nil
}

// recordJobs writes, for each tenant in scope, which job id ran which
// logical job as the inventory clusters list them now, and drops the
// records of job ids with no checkpoint dir left in the listing: lineage
// of a job id then survives its cluster (an application cluster's history
// ends with it), and the records stay as few as the job dirs. A record that
// cannot be written costs only that, and is noted.
func (a *Activities) recordJobs(ctx context.Context, tenants []inventory.Tenant, history core.JobHistoryRead, listing cleanup.Listing, notes *[]string) {
	roots, err := a.lineage().TenantRoots(ctx, tenants)
	if err != nil {
		*notes = append(*notes, fmt.Sprintf("job records not written: %v", err))
		return
	}
	dirs := map[string]bool{}
	for _, j := range listing.Report.Jobs {
		dirs[j.JobID] = true
	}
	now := core.Now(a.Now).UTC()
	for _, r := range roots {
		var seen []catalog.JobRecord
		live := map[string]bool{}
		for _, run := range history.Runs {
			if run.Job.Tenant == r.Tenant && layout.IsJobID(run.Id) {
				seen = append(seen, catalog.JobRecord{JobID: run.Id, Job: run.Job, SeenAt: now})
				live[run.Id] = true
			}
		}
		store := catalog.JobStore{FS: r.Store.FS, Root: r.Store.Root}
		if _, err := store.Record(ctx, seen, func(id string) bool { return dirs[id] || live[id] }); err != nil {
			*notes = append(*notes, fmt.Sprintf("job records of tenant %s not written: %v", r.Tenant, err))
		}
	}
}

// compactCatalogs folds each tenant's savepoint catalog and drill records
// into their indexes and drops the records of snapshots that are gone, so
// they never become the quota problem themselves. A savepoint in the listing exists; any other is
// asked of storage, and one that cannot be asked keeps its entry. A
// catalog that cannot be compacted costs only files, and is noted.
func (a *Activities) compactCatalogs(ctx context.Context, tenants []inventory.Tenant, listing cleanup.Listing, notes *[]string) {
	listed := map[string]bool{}
	for _, sp := range listing.Report.Savepoints {
		listed[strings.TrimRight(sp.Path, "/")] = true
	}
	exists := func(ctx context.Context, path string) (bool, error) {
		if listed[path] {
			return true, nil
		}
		fs, p, err := a.Storage.Resolve(ctx, path)
		if err != nil {
			return false, err
		}
		if _, err = fs.Stat(ctx, p); errors.Is(err, storage.ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	}
	roots, err := a.lineage().TenantRoots(ctx, tenants)
	if err != nil {
		*notes = append(*notes, fmt.Sprintf("savepoint catalogs not compacted: %v", err))
		return
	}
	for _, r := range roots {
		for _, c := range []struct {
			what    string
			compact func(context.Context, func(context.Context, string) (bool, error)) (catalog.CompactResult, error)
		}{
			{"savepoint catalog", r.Store.Compact},
			{"restore drill records", catalog.DrillStore{FS: r.Store.FS, Root: r.Store.Root}.Compact},
			{"rehearsal records", catalog.RehearsalStore{FS: r.Store.FS, Root: r.Store.Root}.Compact},
			{"failed-restore records", catalog.FailedRestoreStore{FS: r.Store.FS, Root: r.Store.Root}.Compact},
		} {
			res, err := c.compact(ctx, exists)
			if err != nil {
				*notes = append(*notes, fmt.Sprintf("%s of tenant %s not compacted: %v", c.what, r.Tenant, err))
				continue
			}
			if res.Dropped > 0 {
				*notes = append(*notes, fmt.Sprintf("%s of tenant %s: %d of snapshots that are gone dropped, %d kept", c.what, r.Tenant, res.Dropped, res.Kept))
			}
		}
		activity.RecordHeartbeat(ctx, "catalog of "+r.Tenant)
	}
}
