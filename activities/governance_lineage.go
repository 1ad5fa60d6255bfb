package activities

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// snapshotOwners is what evidence proves about whose savepoint is whose
// (REFERENCES.md, identity on evidence). Nothing in it is inferred from a
// job id prefix or a time: what no evidence proves is absent, and the
// planner keeps it.
type snapshotOwners struct {
	// lineage is the logical job of each savepoint dir.
	lineage map[string]string
	// jobIDs is the full job id that took each savepoint dir.
	jobIDs map[string]string
	// jobs is the logical job each full job id is a run of.
	jobs map[string]string
}

// ownerClaim is one source's word on whose a savepoint is.
type ownerClaim struct {
	job   catalog.LogicalJob
	jobID string // "" when the source does not tell it
	by    string
	// adopted: a person assigned it (savepoints adopt); it settles a
	// disagreement of the other sources.
	adopted bool
	// catalogued: it is already in the catalog (nothing to remember).
	catalogued bool
	trigger    string
}

// savepointOwners tells, for the completed savepoints of the listing, whose
// each is, from three kinds of evidence:
//   - the tenants' savepoint catalogs: entries flinkmaint wrote when it took,
//     adopted or proved a savepoint. The catalog lies under the tenant's own
//     root, so each entry is a claim: it counts only if its file is the one
//     its path names, its path lies under that tenant's root and its job is
//     that tenant's. An entry found by an earlier release from a job id
//     prefix carries no evidence and counts for nothing.
//   - operator records (records may be nil) of a resource in the tenant's own
//     namespaces whose resource is an inventory job of that tenant.
//   - Flink's checkpoint history of every inventory cluster's jobs: a
//     savepoint it names by exact path is that full job id's. The job id
//     prefix in a savepoint's dir name only picks which jobs to ask.
//
// Claims that disagree leave the owner unknown (a person's adoption settles
// it). What records and history prove is written to the catalog with its
// evidence, so it outlives the resource and the JobManager's job store.
func (a *Activities) savepointOwners(ctx context.Context, inv inventory.Inventory, tenants []inventory.Tenant, listing cleanup.Listing,
	records []cleanup.LiveRecord, history jobHistoryRead, notes *[]string) (snapshotOwners, error) {
	owners := snapshotOwners{lineage: map[string]string{}, jobIDs: map[string]string{}, jobs: map[string]string{}}
	// Which job id is which logical job: every inventory cluster's job list.
	jobNames := map[string]map[catalog.LogicalJob]bool{}
	addJob := func(id string, job catalog.LogicalJob) {
		if jobNames[id] == nil {
			jobNames[id] = map[catalog.LogicalJob]bool{}
		}
		jobNames[id][job] = true
	}
	for _, r := range history.runs {
		addJob(r.id, r.job)
	}
	defer func() {
		for id, jobs := range jobNames {
			if len(jobs) == 1 && layout.IsJobID(id) {
				for j := range jobs {
					owners.jobs[id] = j.String()
				}
			}
		}
	}()
	if len(listing.Report.Savepoints) == 0 {
		return owners, nil
	}
	clusterTenant := map[string]string{} // cluster id -> tenant; "" when two tenants share the id
	for _, c := range inv.Clusters {
		if t, ok := clusterTenant[c.ClusterID]; ok && t != c.Tenant {
			clusterTenant[c.ClusterID] = ""
			continue
		}
		clusterTenant[c.ClusterID] = c.Tenant
	}
	roots, err := a.tenantRoots(ctx, tenants)
	if err != nil {
		return owners, err
	}
	completed := map[string]layout.Savepoint{}
	for _, sp := range listing.Report.Savepoints {
		if sp.Completed {
			completed[strings.TrimRight(sp.Path, "/")] = sp
		}
	}
	claims := map[string][]ownerClaim{}

	// The catalogs.
	for _, r := range roots {
		entries, rejected, err := r.store.Claims(ctx)
		if err != nil {
			return owners, core.Classify("read the savepoint catalog of tenant "+r.tenant, err)
		}
		for _, rj := range rejected {
			*notes = append(*notes, fmt.Sprintf("savepoint catalog of tenant %s: %s is no evidence (%s); its savepoint is judged without it", r.tenant, rj.File, rj.Reason))
		}
		guesses := 0
		for _, e := range entries {
			why := ""
			switch {
			case !e.Proves():
				guesses++
				continue
			case e.Job.Tenant != r.tenant:
				why = "its job " + e.Job.String() + " is not of tenant " + r.tenant
			case clusterTenant[e.Job.Cluster] != "" && clusterTenant[e.Job.Cluster] != r.tenant:
				why = "cluster " + e.Job.Cluster + " is tenant " + clusterTenant[e.Job.Cluster] + "'s"
			case e.JobID != "" && !layout.IsJobID(e.JobID):
				why = fmt.Sprintf("job id %q is not 32 lower-case hex characters", e.JobID)
			}
			if why == "" {
				if t, ok := a.tenantOfPath(ctx, roots, e.Path); !ok || t != r.tenant {
					why = "its path is not under the root of tenant " + r.tenant
				}
			}
			if why != "" {
				*notes = append(*notes, fmt.Sprintf("savepoint catalog of tenant %s: the entry for %s is no evidence: %s", r.tenant, e.Path, why))
				continue
			}
			path := strings.TrimRight(e.Path, "/")
			claims[path] = append(claims[path], ownerClaim{job: e.Job, jobID: e.JobID, by: "catalog of tenant " + r.tenant + " (" + e.Trigger + ")",
				adopted: e.Trigger == catalog.TriggerAdopted, catalogued: true, trigger: e.Trigger})
			if e.JobID != "" && (e.Trigger == catalog.TriggerWindow || e.Trigger == catalog.TriggerScheduled || e.Trigger == catalog.TriggerRehearsal) {
				addJob(e.JobID, e.Job) // flinkmaint took it of that very job
			}
		}
		if guesses > 0 {
			*notes = append(*notes, fmt.Sprintf("savepoint catalog of tenant %s: %d entries found from a job id prefix by an earlier release are no evidence; their savepoints are attributed again or kept", r.tenant, guesses))
		}
	}

	// flinkmaint's records of which job id ran which logical job: claims
	// under the tenant's root, each checked to be that tenant's.
	for _, r := range roots {
		recs, err := catalog.JobStore{FS: r.store.FS, Root: r.store.Root}.List(ctx)
		if errors.Is(err, catalog.ErrInvalid) {
			*notes = append(*notes, fmt.Sprintf("job records of tenant %s are no evidence: %v", r.tenant, err))
			continue
		}
		if err != nil {
			return owners, core.Classify("read the job records of tenant "+r.tenant, err)
		}
		for _, rec := range recs {
			if rec.Job.Tenant != r.tenant || !layout.IsJobID(rec.JobID) ||
				clusterTenant[rec.Job.Cluster] != "" && clusterTenant[rec.Job.Cluster] != r.tenant {
				*notes = append(*notes, fmt.Sprintf("job records of tenant %s: job %s as %s is no evidence: not a job of that tenant", r.tenant, rec.JobID, rec.Job))
				continue
			}
			addJob(rec.JobID, rec.Job)
		}
	}

	// Operator records: a resource in the savepoint's own tenant's
	// namespaces, whose resource is an inventory job of that tenant.
	resources := map[inventory.ObjectRef]catalog.LogicalJob{}
	for _, c := range inv.Clusters {
		for _, js := range c.Jobs {
			if r := js.Restart.Resource; r != nil {
				resources[ownerKey(*r)] = catalog.LogicalJob{Tenant: c.Tenant, Cluster: c.ClusterID, Job: js.Name}
			}
		}
	}
	for _, r := range records {
		path := strings.TrimRight(r.Path, "/")
		if _, ok := completed[path]; !ok || r.Owner == nil {
			continue
		}
		job, ok := resources[ownerKey(*r.Owner)]
		if !ok {
			continue // a resource gone from the inventory tells no job
		}
		t, ok := a.tenantOfPath(ctx, roots, path)
		if !ok || r.Tenant == "" || r.Tenant != t || job.Tenant != t {
			*notes = append(*notes, fmt.Sprintf("%s names %s of %s, but the record's namespace, the job and the savepoint's root are not all one tenant's: no evidence", r.By, path, job))
			continue
		}
		claims[path] = append(claims[path], ownerClaim{job: job, by: r.By, trigger: catalog.TriggerOperator})
	}

	// Flink's checkpoint history, asked only of jobs whose id prefix a
	// savepoint without a claim carries.
	if err := a.historyClaims(ctx, history, completed, claims, notes); err != nil {
		return owners, err
	}

	paths := make([]string, 0, len(claims))
	for p := range claims {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, path := range paths {
		owner, ok := settle(claims[path])
		if !ok {
			var said []string
			for _, c := range claims[path] {
				said = append(said, c.job.String()+" ("+c.by+")")
			}
			*notes = append(*notes, fmt.Sprintf("savepoint %s is claimed by %s: its owner is unknown until a person adopts it", path, strings.Join(said, " and ")))
			continue
		}
		owners.lineage[path] = owner.job.String()
		if owner.jobID != "" {
			owners.jobIDs[path] = owner.jobID
		}
		if !owner.catalogued {
			sp := completed[path]
			a.rememberOwner(ctx, roots, catalog.Entry{Path: path, Job: owner.job, JobID: owner.jobID, Trigger: owner.trigger, Evidence: owner.by,
				Bytes: sp.Usage.Bytes, Files: sp.Usage.Files}, notes)
		}
	}
	return owners, nil
}

// settle merges the claims on one savepoint: all must name one logical
// job and at most one job id, unless a person's adoption decides.
func settle(claims []ownerClaim) (ownerClaim, bool) {
	var adopted []ownerClaim
	for _, c := range claims {
		if c.adopted {
			adopted = append(adopted, c)
		}
	}
	if len(adopted) > 0 {
		claims = adopted
	}
	out := claims[0]
	for _, c := range claims[1:] {
		if c.job != out.job {
			return ownerClaim{}, false
		}
		switch {
		case c.jobID == "":
		case out.jobID == "":
			out.jobID = c.jobID
		case c.jobID != out.jobID:
			return ownerClaim{}, false
		}
		out.catalogued = out.catalogued || c.catalogued
	}
	return out, true
}

// historyClaims adds, for each completed savepoint without a claim, the
// claim of the job whose checkpoint history names its exact path.
func (a *Activities) historyClaims(ctx context.Context, history jobHistoryRead, completed map[string]layout.Savepoint,
	claims map[string][]ownerClaim, notes *[]string) error {
	for _, u := range history.unread {
		*notes = append(*notes, fmt.Sprintf("job history of cluster %s not readable (%v): savepoints only it could attribute are kept as %s", u.cluster, u.err, cleanup.KeepLineageUnknown))
	}
	prefixes := map[string]bool{}
	for path, sp := range completed {
		if len(claims[path]) == 0 {
			prefixes[sp.JobIDPrefix] = true
		}
	}
	for _, r := range history.runs {
		if len(r.id) < 6 || !prefixes[r.id[:6]] {
			continue
		}
		client, err := core.FlinkFor(ctx, a.Flink, r.restURL)
		if err != nil {
			return err
		}
		st, err := client.Checkpoints(ctx, r.id)
		if err != nil {
			*notes = append(*notes, fmt.Sprintf("checkpoint history of job %s (%s) not readable (%v): savepoints only it could attribute are kept as %s", r.id, r.job, err, cleanup.KeepLineageUnknown))
			continue
		}
		named := append([]flink.CheckpointStatistics(nil), st.History...)
		if st.Latest.Savepoint != nil {
			named = append(named, *st.Latest.Savepoint)
		}
		seen := map[string]bool{}
		for _, h := range named {
			if !h.IsSavepoint || h.Status != "COMPLETED" || !onStorage(h.ExternalPath) {
				continue
			}
			path, err := a.qualify(ctx, h.ExternalPath)
			if err != nil || seen[path] {
				continue // a path on no file system we know names nothing listed
			}
			seen[path] = true
			if _, ok := completed[path]; !ok {
				continue
			}
			claims[path] = append(claims[path], ownerClaim{job: r.job, jobID: r.id, trigger: catalog.TriggerDiscovered,
				by: "Flink checkpoint history of job " + r.id + " on cluster " + r.job.Cluster})
		}
		activity.RecordHeartbeat(ctx, "checkpoint history of "+r.id)
	}
	return nil
}

// tenantRoot is a tenant's root as resolved, with its catalog: a root
// spelled as a plain path and a savepoint listed as a URI are on one file
// system.
type tenantRoot struct {
	tenant   string
	fs, root string
	store    catalog.Store
}

// tenantRoots resolves the roots of tenants, innermost first, so that
// nested roots attribute a path to the inner tenant.
func (a *Activities) tenantRoots(ctx context.Context, tenants []inventory.Tenant) ([]tenantRoot, error) {
	var out []tenantRoot
	for _, t := range tenants {
		if t.Root == "" {
			continue
		}
		fs, p, err := a.Storage.Resolve(ctx, t.Root)
		if err != nil {
			return nil, core.Classify("resolve tenant root "+t.Root, err)
		}
		out = append(out, tenantRoot{tenant: t.Name, fs: fs.URI().String(), root: strings.TrimRight(p, "/"), store: catalog.Store{FS: fs, Root: p}})
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i].root) > len(out[j].root) })
	return out, nil
}

// tenantOfPath is the tenant whose root holds path (the innermost).
func (a *Activities) tenantOfPath(ctx context.Context, roots []tenantRoot, path string) (string, bool) {
	fs, p, err := a.Storage.Resolve(ctx, path)
	if err != nil {
		return "", false
	}
	for _, r := range roots {
		if fs.URI().String() == r.fs && strings.HasPrefix(p, r.root+"/") {
			return r.tenant, true
		}
	}
	return "", false
}

// qualify spells a path as listings do: its file system's URI and path.
func (a *Activities) qualify(ctx context.Context, path string) (string, error) {
	fs, p, err := a.Storage.Resolve(ctx, strings.TrimRight(path, "/"))
	if err != nil {
		return "", err
	}
	return fullPath(fs, strings.TrimRight(p, "/")), nil
}

// rememberOwner writes what evidence proved to the catalog of the tenant
// whose root holds the savepoint; a failure only costs the next run the
// same questions, and is noted.
func (a *Activities) rememberOwner(ctx context.Context, roots []tenantRoot, e catalog.Entry, notes *[]string) {
	t, ok := a.tenantOfPath(ctx, roots, e.Path)
	if !ok {
		*notes = append(*notes, fmt.Sprintf("savepoint %s of %s is under no tenant root in scope: not catalogued", e.Path, e.Job))
		return
	}
	for _, r := range roots {
		if r.tenant != t {
			continue
		}
		e.RecordedAt = core.Now(a.Now).UTC()
		if err := r.store.Put(ctx, e, false); err != nil {
			*notes = append(*notes, fmt.Sprintf("savepoint %s of %s not written to the catalog of tenant %s: %v", e.Path, e.Job, r.tenant, err))
		}
		return
	}
}

// jobRun is one run of a logical job in a cluster's job history.
type jobRun struct {
	job     catalog.LogicalJob
	id      string
	restURL string // of the cluster that lists it
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
		client, err := core.FlinkFor(ctx, a.Flink, c.RESTURL)
		if err == nil {
			var jobs []flink.JobOverview
			if jobs, err = client.ListJobs(ctx); err == nil {
				for _, j := range jobs {
					if j.ID == "" || j.Name == "" {
						continue
					}
					runs = append(runs, jobRun{job: catalog.LogicalJob{Tenant: c.Tenant, Cluster: c.ClusterID, Job: j.Name}, id: j.ID, restURL: c.RESTURL})
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
func (a *Activities) catalogSavepoint(ctx context.Context, job core.JobTarget, e catalog.Entry) {
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
func (a *Activities) putCatalogEntry(ctx context.Context, job core.JobTarget, e catalog.Entry) error {
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
		e.JobID, e.RecordedAt = job.JobID, core.Now(a.Now).UTC()
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
			return nil, core.Classify("read the restore drill records of tenant "+t.Name, err)
		}
		for _, r := range records {
			if r.Kind == SnapshotSavepoint && r.Outcome == catalog.DrillPassed && r.Tier >= 2 {
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
func (a *Activities) recordJobs(ctx context.Context, tenants []inventory.Tenant, history jobHistoryRead, listing cleanup.Listing, notes *[]string) {
	roots, err := a.tenantRoots(ctx, tenants)
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
		for _, run := range history.runs {
			if run.job.Tenant == r.tenant && layout.IsJobID(run.id) {
				seen = append(seen, catalog.JobRecord{JobID: run.id, Job: run.job, SeenAt: now})
				live[run.id] = true
			}
		}
		store := catalog.JobStore{FS: r.store.FS, Root: r.store.Root}
		if _, err := store.Record(ctx, seen, func(id string) bool { return dirs[id] || live[id] }); err != nil {
			*notes = append(*notes, fmt.Sprintf("job records of tenant %s not written: %v", r.tenant, err))
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
	roots, err := a.tenantRoots(ctx, tenants)
	if err != nil {
		*notes = append(*notes, fmt.Sprintf("savepoint catalogs not compacted: %v", err))
		return
	}
	for _, r := range roots {
		for _, c := range []struct {
			what    string
			compact func(context.Context, func(context.Context, string) (bool, error)) (catalog.CompactResult, error)
		}{
			{"savepoint catalog", r.store.Compact},
			{"restore drill records", catalog.DrillStore{FS: r.store.FS, Root: r.store.Root}.Compact},
			{"rehearsal records", catalog.RehearsalStore{FS: r.store.FS, Root: r.store.Root}.Compact},
			{"failed-restore records", catalog.FailedRestoreStore{FS: r.store.FS, Root: r.store.Root}.Compact},
		} {
			res, err := c.compact(ctx, exists)
			if err != nil {
				*notes = append(*notes, fmt.Sprintf("%s of tenant %s not compacted: %v", c.what, r.tenant, err))
				continue
			}
			if res.Dropped > 0 {
				*notes = append(*notes, fmt.Sprintf("%s of tenant %s: %d of snapshots that are gone dropped, %d kept", c.what, r.tenant, res.Dropped, res.Kept))
			}
		}
		activity.RecordHeartbeat(ctx, "catalog of "+r.tenant)
	}
}
