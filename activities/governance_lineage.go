package activities

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
)

// savepointLineage tells, for the completed savepoints of the listing, the
// logical job each belongs to: from the tenants' savepoint catalogs first,
// then from the operator records whose owner resource is an inventory job
// (records may be nil), then from the job history of every inventory
// cluster (a savepoint dir name carries the first six hex digits of its
// job id). What records and history tell is written to the catalog, so it
// outlives the resource and the JobManager's job store. A prefix that jobs
// of two logical jobs share tells nothing: such a savepoint stays without
// lineage and is kept.
func (a *Activities) savepointLineage(ctx context.Context, inv inventory.Inventory, tenants []inventory.Tenant, listing cleanup.Listing,
	records []cleanup.LiveRecord, history jobHistoryRead, notes *[]string) (map[string]string, error) {
	lineage := map[string]string{}
	if len(listing.Report.Savepoints) == 0 {
		return lineage, nil
	}
	// Each tenant's catalog with its root as resolved: a root spelled as a
	// plain path and a savepoint listed as a URI are on one file system.
	type tenantCatalog struct {
		tenant   string
		fs, root string
		store    catalog.Store
	}
	var catalogs []tenantCatalog
	for _, t := range tenants {
		if t.Root == "" {
			continue
		}
		fs, p, err := a.Storage.Resolve(ctx, t.Root)
		if err != nil {
			return nil, classify("resolve tenant root "+t.Root, err)
		}
		st := catalog.Store{FS: fs, Root: p}
		entries, err := st.List(ctx)
		if errors.Is(err, catalog.ErrInvalid) {
			*notes = append(*notes, fmt.Sprintf("savepoint catalog of tenant %s is not readable (%v): its savepoints are judged without it", t.Name, err))
			continue
		}
		if err != nil {
			return nil, classify("read the savepoint catalog of tenant "+t.Name, err)
		}
		catalogs = append(catalogs, tenantCatalog{tenant: t.Name, fs: fs.URI().String(), root: strings.TrimRight(p, "/"), store: st})
		for _, e := range entries {
			lineage[e.Path] = e.Job.String()
		}
	}
	sort.Slice(catalogs, func(i, j int) bool { return len(catalogs[i].root) > len(catalogs[j].root) })
	// remember writes what was learnt to the catalog of the tenant whose
	// root holds the savepoint (the innermost, should roots nest).
	remember := func(e catalog.Entry) {
		fs, p, err := a.Storage.Resolve(ctx, e.Path)
		if err != nil {
			*notes = append(*notes, fmt.Sprintf("savepoint %s of %s not catalogued: %v", e.Path, e.Job, err))
			return
		}
		for _, c := range catalogs {
			if fs.URI().String() != c.fs || !strings.HasPrefix(p, c.root+"/") {
				continue
			}
			e.RecordedAt = a.now().UTC()
			if err := c.store.Put(ctx, e, false); err != nil {
				*notes = append(*notes, fmt.Sprintf("savepoint %s of %s not written to the catalog of tenant %s: %v", e.Path, e.Job, c.tenant, err))
			}
			return
		}
		*notes = append(*notes, fmt.Sprintf("savepoint %s of %s is under no tenant root with a readable catalog: not catalogued", e.Path, e.Job))
	}
	completed := map[string]layout.Savepoint{}
	for _, sp := range listing.Report.Savepoints {
		if sp.Completed {
			completed[strings.TrimRight(sp.Path, "/")] = sp
		}
	}

	// Operator records: the resource a snapshot is of is an inventory job.
	owners := map[inventory.ObjectRef]catalog.LogicalJob{}
	for _, c := range inv.Clusters {
		for _, js := range c.Jobs {
			if r := js.Restart.Resource; r != nil {
				owners[ownerKey(*r)] = catalog.LogicalJob{Tenant: c.Tenant, Cluster: c.ClusterID, Job: js.Name}
			}
		}
	}
	for _, r := range records {
		path := strings.TrimRight(r.Path, "/")
		sp, ok := completed[path]
		if !ok || lineage[path] != "" || r.Owner == nil {
			continue
		}
		job, ok := owners[ownerKey(*r.Owner)]
		if !ok {
			continue // a resource gone from the inventory tells no job
		}
		lineage[path] = job.String()
		remember(catalog.Entry{Path: path, Job: job, Trigger: catalog.TriggerOperator, Bytes: sp.Usage.Bytes, Files: sp.Usage.Files})
	}

	// Job history: job id prefix -> the runs of that prefix.
	for _, u := range history.unread {
		*notes = append(*notes, fmt.Sprintf("job history of cluster %s not readable (%v): savepoints only it could attribute are kept as %s", u.cluster, u.err, cleanup.KeepLineageUnknown))
	}
	byPrefix := map[string][]jobRun{}
	for _, r := range history.runs {
		if len(r.id) >= 6 {
			byPrefix[r.id[:6]] = append(byPrefix[r.id[:6]], r)
		}
	}
	for _, sp := range listing.Report.Savepoints {
		path := strings.TrimRight(sp.Path, "/")
		if !sp.Completed || lineage[path] != "" {
			continue
		}
		// A run attributes the savepoint only if the savepoint was written
		// while it ran (give or take the clock skew between TaskManagers,
		// JobManager and NameNode): a prefix collision with a job long gone
		// from the history must not pull the savepoint into another job.
		var match []jobRun
		for _, r := range byPrefix[sp.JobIDPrefix] {
			written := sp.Usage.Newest
			if written.Before(r.start.Add(-cleanup.PendingMargin)) || (!r.end.IsZero() && written.After(r.end.Add(cleanup.PendingMargin))) {
				continue
			}
			if len(match) == 0 || match[0].job == r.job {
				match = append(match, r)
			} else {
				match = nil // two logical jobs: tells nothing
				break
			}
		}
		if len(match) == 0 {
			continue
		}
		job := match[0].job
		lineage[path] = job.String()
		remember(catalog.Entry{Path: path, Job: job, JobID: match[0].id, Trigger: catalog.TriggerDiscovered, Bytes: sp.Usage.Bytes, Files: sp.Usage.Files})
	}
	return lineage, nil
}

// jobRun is one run of a logical job in a cluster's job history.
type jobRun struct {
	job        catalog.LogicalJob
	id         string
	start, end time.Time // end zero while it runs
}

// unreadCluster is an inventory cluster whose jobs could not be listed.
type unreadCluster struct {
	cluster string
	err     error
}

// jobHistoryRead is what jobHistory read: every run, and the clusters
// that did not answer (for the caller to say what that costs).
type jobHistoryRead struct {
	runs   []jobRun
	unread []unreadCluster
}

// jobHistory lists the runs every inventory cluster knows (its running
// jobs and its job history), in inventory order. One read serves every
// use in an activity.
func (a *Activities) jobHistory(ctx context.Context, inv inventory.Inventory) jobHistoryRead {
	var runs []jobRun
	var unread []unreadCluster
	for _, c := range inv.Clusters {
		client, err := a.flinkFor(c.RESTURL)
		if err == nil {
			var jobs []flink.JobOverview
			if jobs, err = client.ListJobs(ctx); err == nil {
				for _, j := range jobs {
					if j.ID == "" || j.Name == "" {
						continue
					}
					r := jobRun{job: catalog.LogicalJob{Tenant: c.Tenant, Cluster: c.ClusterID, Job: j.Name}, id: j.ID, start: j.Started()}
					if j.State.IsGloballyTerminal() {
						r.end = j.Ended()
					}
					runs = append(runs, r)
				}
				continue
			}
		}
		unread = append(unread, unreadCluster{cluster: c.ClusterID, err: err})
	}
	activity.RecordHeartbeat(ctx, "job history")
	return jobHistoryRead{runs: runs, unread: unread}
}

// ownerKey is a resource without its API version, which the operator's
// jobReference does not carry.
func ownerKey(r inventory.ObjectRef) inventory.ObjectRef {
	return inventory.ObjectRef{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, KubeCluster: r.KubeCluster}
}

// catalogSavepoint records a savepoint this worker took in the catalog of
// the job's tenant, under its logical job. A failure is logged, not
// returned: the savepoint exists either way, governance attributes it
// through the cluster's job history while that lasts, and keeps it as
// lineage-unknown after.
func (a *Activities) catalogSavepoint(ctx context.Context, job JobTarget, e catalog.Entry) {
	if a.Inventory == nil || a.Storage == nil || e.Path == "" {
		return
	}
	if err := a.putCatalogEntry(ctx, job, e); err != nil {
		activity.GetLogger(ctx).Warn("savepoint not catalogued; governance keeps it unless the cluster's job history names its job",
			"job", job.Key, "savepoint", e.Path, "error", err)
	}
}

// putCatalogEntry records e as a savepoint of job in its tenant's catalog;
// it fills in the logical job, job id, the cluster's Flink version and the
// time.
func (a *Activities) putCatalogEntry(ctx context.Context, job JobTarget, e catalog.Entry) error {
	inv, err := a.Inventory.Discover(ctx)
	if err != nil {
		return err
	}
	for _, c := range inv.Clusters {
		if c.ClusterID == job.ClusterID && c.KubeCluster == job.KubeCluster && e.FlinkVersion == "" {
			e.FlinkVersion = c.FlinkVersion
		}
	}
	for _, t := range inv.Tenants {
		if t.Name != job.Tenant || t.Root == "" {
			continue
		}
		fs, p, err := a.Storage.Resolve(ctx, t.Root)
		if err != nil {
			return err
		}
		e.Job = catalog.LogicalJob{Tenant: job.Tenant, Cluster: job.ClusterID, Job: job.JobName}
		e.JobID, e.RecordedAt = job.JobID, a.now().UTC()
		return catalog.Store{FS: fs, Root: p}.Put(ctx, e, false)
	}
	return fmt.Errorf("tenant %s has no root in the inventory", job.Tenant)
}

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
		records, err := a.drillsOf(ctx, t)
		if errors.Is(err, catalog.ErrInvalid) {
			*notes = append(*notes, fmt.Sprintf("restore drill records of tenant %s are not readable (%v): no savepoint is kept for its passing drill", t.Name, err))
			continue
		}
		if err != nil {
			return nil, classify("read the restore drill records of tenant "+t.Name, err)
		}
		for _, r := range records {
			if r.Kind == SnapshotSavepoint && r.Outcome == catalog.DrillPassed && r.Tier >= 2 {
				out = append(out, r.Snapshot)
			}
		}
	}
	return out, nil
}
