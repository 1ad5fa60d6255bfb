package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// Catalog reads and writes the records flinkmaint keeps beside a tenant's
// snapshots (internal/catalog): the savepoint catalog, drill and rehearsal
// records, failed restores and the recipes of record.
type Catalog struct {
	Inventory InventorySource
	Storage   Storage
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Record records a savepoint this worker took in the catalog of
// the job's tenant, under its logical job. A failure is logged, not
// returned: the savepoint exists either way, governance attributes it
// through the cluster's job history while that lasts, and keeps it as
// lineage-unknown after.
func (c Catalog) Record(ctx context.Context, job JobTarget, e catalog.Entry) {
	if c.Inventory == nil || c.Storage == nil || e.Path == "" {
		return
	}
	if err := c.Put(ctx, job, e); err != nil {
		activity.GetLogger(ctx).Warn("savepoint not catalogued; governance keeps it unless the cluster's job history names its job",
			"job", job.Key, "savepoint", e.Path, "error", err)
	}
}

// Put records e as a savepoint of job in its tenant's catalog;
// it fills in the logical job, job id, the cluster's Flink version and the
// time.
func (c Catalog) Put(ctx context.Context, job JobTarget, e catalog.Entry) error {
	inv, err := c.Inventory.Discover(ctx)
	if err != nil {
		return err
	}
	for _, cl := range inv.Clusters {
		if cl.ClusterID == job.ClusterID && cl.KubeCluster == job.KubeCluster && e.FlinkVersion == "" {
			e.FlinkVersion = cl.FlinkVersion
		}
	}
	for _, t := range inv.Tenants {
		if t.Name != job.Tenant || t.Root == "" {
			continue
		}
		fs, p, err := c.Storage.Resolve(ctx, t.Root)
		if err != nil {
			return err
		}
		e.Job = catalog.LogicalJob{Tenant: job.Tenant, Cluster: job.ClusterID, Job: job.JobName}
		e.JobID, e.RecordedAt = job.JobID, Now(c.Now).UTC()
		return catalog.Store{FS: fs, Root: p}.Put(ctx, e, false)
	}
	return fmt.Errorf("tenant %s has no root in the inventory", job.Tenant)
}

// SplitJob parses cluster/name.
func SplitJob(job string) (cluster, name string, ok bool) {
	cluster, name, ok = strings.Cut(job, "/")
	return cluster, name, ok && cluster != "" && name != "" && !strings.Contains(name, "/")
}

// Drills reads the drill records of tenant t.
func (c Catalog) Drills(ctx context.Context, t inventory.Tenant) ([]catalog.DrillRecord, error) {
	fs, p, err := c.Storage.Resolve(ctx, t.Root)
	if err != nil {
		return nil, err
	}
	return catalog.DrillStore{FS: fs, Root: p}.List(ctx)
}

// Rehearsals reads the rehearsal records of tenant t.
func (c Catalog) Rehearsals(ctx context.Context, t inventory.Tenant) ([]catalog.RehearsalRecord, error) {
	fs, p, err := c.Storage.Resolve(ctx, t.Root)
	if err != nil {
		return nil, err
	}
	return catalog.RehearsalStore{FS: fs, Root: p}.List(ctx)
}

// FailedRestores reads the failed-restore records of tenant t, and
// those it cannot stand on.
func (c Catalog) FailedRestores(ctx context.Context, t inventory.Tenant) ([]catalog.FailedRestoreRecord, []catalog.Rejected, error) {
	fs, p, err := c.Storage.Resolve(ctx, t.Root)
	if err != nil {
		return nil, nil, err
	}
	return catalog.FailedRestoreStore{FS: fs, Root: p}.Claims(ctx)
}

// Recipes is the recipe records of tenant t.
func (c Catalog) Recipes(ctx context.Context, t inventory.Tenant) (catalog.RecipeStore, error) {
	fs, p, err := c.Storage.Resolve(ctx, t.Root)
	if err != nil {
		return catalog.RecipeStore{}, Classify("resolve tenant root "+t.Root, err)
	}
	return catalog.RecipeStore{FS: fs, Root: p}, nil
}

// Entries reads the catalog of tenant t.
func (c Catalog) Entries(ctx context.Context, t inventory.Tenant) ([]catalog.Entry, error) {
	fs, p, err := c.Storage.Resolve(ctx, t.Root)
	if err != nil {
		return nil, err
	}
	return catalog.Store{FS: fs, Root: p}.List(ctx)
}

// FullPath qualifies a path of fs with its URI, as listings spell it.
func FullPath(fs storage.FileSystem, p string) string {
	if strings.Contains(p, "://") {
		return p
	}
	return strings.TrimRight(fs.URI().String(), "/") + p
}

// ApplyRecipes restarts jobs with the recipe a committed upgrade
// recorded while the inventory still holds the recipe it replaced. A job
// whose inventory recipe is neither is skipped: which version is right is
// for a person to say. Unreadable records fail discovery.
func (c Catalog) ApplyRecipes(ctx context.Context, inv inventory.Inventory, targets []JobTarget) ([]JobTarget, []SkippedJob, error) {
	if c.Storage == nil || len(targets) == 0 {
		return targets, nil, nil
	}
	records := map[string]catalog.RecipeRecord{}
	stores := map[string]catalog.RecipeStore{}
	for _, t := range inv.Tenants {
		if t.Root == "" {
			continue
		}
		store, err := c.Recipes(ctx, t)
		if err != nil {
			return nil, nil, err
		}
		list, err := store.List(ctx)
		if errors.Is(err, catalog.ErrInvalid) {
			return nil, nil, NonRetryable(ErrTypeInventory, "recipe records of tenant %s are not readable (%v): which version of its jobs to restart is unknown; fix or remove the file", t.Name, err)
		}
		if err != nil {
			return nil, nil, Classify("read the recipe records of tenant "+t.Name, err)
		}
		for _, r := range list {
			if r.Job.Tenant == t.Name {
				records[JobKey(r.Job.Cluster, r.Job.Job)] = r
				stores[JobKey(r.Job.Cluster, r.Job.Job)] = store
			}
		}
	}
	var kept []JobTarget
	var skipped []SkippedJob
	for _, t := range targets {
		r, ok := records[t.Key]
		if !ok {
			kept = append(kept, t)
			continue
		}
		switch r.Resolve(t.Restart) {
		case catalog.UseInventory:
			// The inventory caught up: the record has done its work, and
			// left in place it would contradict the inventory's next change.
			if err := stores[t.Key].Remove(ctx, r.Job); err != nil {
				activity.GetLogger(ctx).Warn("recipe record not removed", "job", t.Key, "error", err)
			}
		case catalog.UseRecorded:
			t.Restart = r.Recipe
		case catalog.Conflict:
			skipped = append(skipped, SkippedJob{Key: t.Key, JobID: t.JobID, Reason: fmt.Sprintf(
				"upgrade %s recorded a recipe for this job, and the inventory's recipe has changed since to neither that one nor the one it replaced: "+
					"update the inventory to the recorded recipe (flinkmaint upgrade status %s shows it) so it catches up, then change it; left running", r.UpgradeID, r.UpgradeID)})
			continue
		}
		kept = append(kept, t)
	}
	return kept, skipped, nil
}
