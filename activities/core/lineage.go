package core

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

// Lineage tells whose a snapshot is: from flinkmaint's own records, the
// operator's and each cluster's job history (see DESIGN: evidence, never a
// job-id prefix).
type Lineage struct {
	Flink   FlinkClients
	Storage Storage
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// SnapshotOwners is what evidence proves about whose savepoint is whose
// (REFERENCES.md, identity on evidence). Nothing in it is inferred from a
// job id prefix or a time: what no evidence proves is absent, and the
// planner keeps it.
type SnapshotOwners struct {
	// lineage is the logical job of each savepoint dir.
	Lineage map[string]string
	// jobIDs is the full job id that took each savepoint dir.
	JobIDs map[string]string
	// jobs is the logical job each full job id is a run of.
	Jobs map[string]string
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

// Owners tells, for the completed savepoints of the listing, whose
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
func (l Lineage) Owners(ctx context.Context, inv inventory.Inventory, tenants []inventory.Tenant, listing cleanup.Listing,
	records []cleanup.LiveRecord, history JobHistoryRead, notes *[]string) (SnapshotOwners, error) {
	owners := SnapshotOwners{Lineage: map[string]string{}, JobIDs: map[string]string{}, Jobs: map[string]string{}}
	// Which job id is which logical job: every inventory cluster's job list.
	jobNames := map[string]map[catalog.LogicalJob]bool{}
	addJob := func(id string, job catalog.LogicalJob) {
		if jobNames[id] == nil {
			jobNames[id] = map[catalog.LogicalJob]bool{}
		}
		jobNames[id][job] = true
	}
	for _, r := range history.Runs {
		addJob(r.Id, r.Job)
	}
	defer func() {
		for id, jobs := range jobNames {
			if len(jobs) == 1 && layout.IsJobID(id) {
				for j := range jobs {
					owners.Jobs[id] = j.String()
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
	roots, err := l.TenantRoots(ctx, tenants)
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
		entries, rejected, err := r.Store.Claims(ctx)
		if err != nil {
			return owners, Classify("read the savepoint catalog of tenant "+r.Tenant, err)
		}
		for _, rj := range rejected {
			*notes = append(*notes, fmt.Sprintf("savepoint catalog of tenant %s: %s is no evidence (%s); its savepoint is judged without it", r.Tenant, rj.File, rj.Reason))
		}
		guesses := 0
		for _, e := range entries {
			why := ""
			switch {
			case !e.Proves():
				guesses++
				continue
			case e.Job.Tenant != r.Tenant:
				why = "its job " + e.Job.String() + " is not of tenant " + r.Tenant
			case clusterTenant[e.Job.Cluster] != "" && clusterTenant[e.Job.Cluster] != r.Tenant:
				why = "cluster " + e.Job.Cluster + " is tenant " + clusterTenant[e.Job.Cluster] + "'s"
			case e.JobID != "" && !layout.IsJobID(e.JobID):
				why = fmt.Sprintf("job id %q is not 32 lower-case hex characters", e.JobID)
			}
			if why == "" {
				if t, ok := l.tenantOfPath(ctx, roots, e.Path); !ok || t != r.Tenant {
					why = "its path is not under the root of tenant " + r.Tenant
				}
			}
			if why != "" {
				*notes = append(*notes, fmt.Sprintf("savepoint catalog of tenant %s: the entry for %s is no evidence: %s", r.Tenant, e.Path, why))
				continue
			}
			path := strings.TrimRight(e.Path, "/")
			claims[path] = append(claims[path], ownerClaim{job: e.Job, jobID: e.JobID, by: "catalog of tenant " + r.Tenant + " (" + e.Trigger + ")",
				adopted: e.Trigger == catalog.TriggerAdopted, catalogued: true, trigger: e.Trigger})
			if e.JobID != "" && (e.Trigger == catalog.TriggerWindow || e.Trigger == catalog.TriggerScheduled || e.Trigger == catalog.TriggerRehearsal) {
				addJob(e.JobID, e.Job) // flinkmaint took it of that very job
			}
		}
		if guesses > 0 {
			*notes = append(*notes, fmt.Sprintf("savepoint catalog of tenant %s: %d entries found from a job id prefix by an earlier release are no evidence; their savepoints are attributed again or kept", r.Tenant, guesses))
		}
	}

	// flinkmaint's records of which job id ran which logical job: claims
	// under the tenant's root, each checked to be that tenant's.
	for _, r := range roots {
		recs, err := catalog.JobStore{FS: r.Store.FS, Root: r.Store.Root}.List(ctx)
		if errors.Is(err, catalog.ErrInvalid) {
			*notes = append(*notes, fmt.Sprintf("job records of tenant %s are no evidence: %v", r.Tenant, err))
			continue
		}
		if err != nil {
			return owners, Classify("read the job records of tenant "+r.Tenant, err)
		}
		for _, rec := range recs {
			if rec.Job.Tenant != r.Tenant || !layout.IsJobID(rec.JobID) ||
				clusterTenant[rec.Job.Cluster] != "" && clusterTenant[rec.Job.Cluster] != r.Tenant {
				*notes = append(*notes, fmt.Sprintf("job records of tenant %s: job %s as %s is no evidence: not a job of that tenant", r.Tenant, rec.JobID, rec.Job))
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
		t, ok := l.tenantOfPath(ctx, roots, path)
		if !ok || r.Tenant == "" || r.Tenant != t || job.Tenant != t {
			*notes = append(*notes, fmt.Sprintf("%s names %s of %s, but the record's namespace, the job and the savepoint's root are not all one tenant's: no evidence", r.By, path, job))
			continue
		}
		claims[path] = append(claims[path], ownerClaim{job: job, by: r.By, trigger: catalog.TriggerOperator})
	}

	// Flink's checkpoint history, asked only of jobs whose id prefix a
	// savepoint without a claim carries.
	if err := l.historyClaims(ctx, history, completed, claims, notes); err != nil {
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
		owners.Lineage[path] = owner.job.String()
		if owner.jobID != "" {
			owners.JobIDs[path] = owner.jobID
		}
		if !owner.catalogued {
			sp := completed[path]
			l.rememberOwner(ctx, roots, catalog.Entry{Path: path, Job: owner.job, JobID: owner.jobID, Trigger: owner.trigger, Evidence: owner.by,
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
func (l Lineage) historyClaims(ctx context.Context, history JobHistoryRead, completed map[string]layout.Savepoint,
	claims map[string][]ownerClaim, notes *[]string) error {
	for _, u := range history.Unread {
		*notes = append(*notes, fmt.Sprintf("job history of cluster %s not readable (%v): savepoints only it could attribute are kept as %s", u.Cluster, u.Err, cleanup.KeepLineageUnknown))
	}
	prefixes := map[string]bool{}
	for path, sp := range completed {
		if len(claims[path]) == 0 {
			prefixes[sp.JobIDPrefix] = true
		}
	}
	for _, r := range history.Runs {
		if len(r.Id) < 6 || !prefixes[r.Id[:6]] {
			continue
		}
		client, err := FlinkFor(ctx, l.Flink, r.restURL)
		if err != nil {
			return err
		}
		st, err := client.Checkpoints(ctx, r.Id)
		if err != nil {
			*notes = append(*notes, fmt.Sprintf("checkpoint history of job %s (%s) not readable (%v): savepoints only it could attribute are kept as %s", r.Id, r.Job, err, cleanup.KeepLineageUnknown))
			continue
		}
		named := append([]flink.CheckpointStatistics(nil), st.History...)
		if st.Latest.Savepoint != nil {
			named = append(named, *st.Latest.Savepoint)
		}
		seen := map[string]bool{}
		for _, h := range named {
			if !h.IsSavepoint || h.Status != "COMPLETED" || !OnStorage(h.ExternalPath) {
				continue
			}
			path, err := l.Qualify(ctx, h.ExternalPath)
			if err != nil || seen[path] {
				continue // a path on no file system we know names nothing listed
			}
			seen[path] = true
			if _, ok := completed[path]; !ok {
				continue
			}
			claims[path] = append(claims[path], ownerClaim{job: r.Job, jobID: r.Id, trigger: catalog.TriggerDiscovered,
				by: "Flink checkpoint history of job " + r.Id + " on cluster " + r.Job.Cluster})
		}
		activity.RecordHeartbeat(ctx, "checkpoint history of "+r.Id)
	}
	return nil
}

// TenantRoot is a tenant's root as resolved, with its catalog: a root
// spelled as a plain path and a savepoint listed as a URI are on one file
// system.
type TenantRoot struct {
	Tenant   string
	Fs, Root string
	Store    catalog.Store
}

// TenantRoots resolves the roots of tenants, innermost first, so that
// nested roots attribute a path to the inner tenant.
func (l Lineage) TenantRoots(ctx context.Context, tenants []inventory.Tenant) ([]TenantRoot, error) {
	var out []TenantRoot
	for _, t := range tenants {
		if t.Root == "" {
			continue
		}
		fs, p, err := l.Storage.Resolve(ctx, t.Root)
		if err != nil {
			return nil, Classify("resolve tenant root "+t.Root, err)
		}
		out = append(out, TenantRoot{Tenant: t.Name, Fs: fs.URI().String(), Root: strings.TrimRight(p, "/"), Store: catalog.Store{FS: fs, Root: p}})
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i].Root) > len(out[j].Root) })
	return out, nil
}

// tenantOfPath is the tenant whose root holds path (the innermost).
func (l Lineage) tenantOfPath(ctx context.Context, roots []TenantRoot, path string) (string, bool) {
	fs, p, err := l.Storage.Resolve(ctx, path)
	if err != nil {
		return "", false
	}
	for _, r := range roots {
		if fs.URI().String() == r.Fs && strings.HasPrefix(p, r.Root+"/") {
			return r.Tenant, true
		}
	}
	return "", false
}

// Qualify spells a path as listings do: its file system's URI and path.
func (l Lineage) Qualify(ctx context.Context, path string) (string, error) {
	fs, p, err := l.Storage.Resolve(ctx, strings.TrimRight(path, "/"))
	if err != nil {
		return "", err
	}
	return FullPath(fs, strings.TrimRight(p, "/")), nil
}

// rememberOwner writes what evidence proved to the catalog of the tenant
// whose root holds the savepoint; a failure only costs the next run the
// same questions, and is noted.
func (l Lineage) rememberOwner(ctx context.Context, roots []TenantRoot, e catalog.Entry, notes *[]string) {
	t, ok := l.tenantOfPath(ctx, roots, e.Path)
	if !ok {
		*notes = append(*notes, fmt.Sprintf("savepoint %s of %s is under no tenant root in scope: not catalogued", e.Path, e.Job))
		return
	}
	for _, r := range roots {
		if r.Tenant != t {
			continue
		}
		e.RecordedAt = Now(l.Now).UTC()
		if err := r.Store.Put(ctx, e, false); err != nil {
			*notes = append(*notes, fmt.Sprintf("savepoint %s of %s not written to the catalog of tenant %s: %v", e.Path, e.Job, r.Tenant, err))
		}
		return
	}
}

// jobRun is one run of a logical job in a cluster's job history.
type jobRun struct {
	Job     catalog.LogicalJob
	Id      string
	restURL string // of the cluster that lists it
}

// unreadCluster is an inventory cluster whose jobs could not be listed.
type unreadCluster struct {
	Cluster string
	Err     error
}

// JobHistoryRead is what JobHistory read: every run, and the clusters
// that did not answer (for the caller to say what that costs).
type JobHistoryRead struct {
	Runs   []jobRun
	Unread []unreadCluster
}

// JobHistory lists the runs every inventory cluster knows (its running
// jobs and its job history), in inventory order. One read serves every
// use in an activity.
func (l Lineage) JobHistory(ctx context.Context, inv inventory.Inventory) JobHistoryRead {
	var runs []jobRun
	var unread []unreadCluster
	for _, c := range inv.Clusters {
		client, err := FlinkFor(ctx, l.Flink, c.RESTURL)
		if err == nil {
			var jobs []flink.JobOverview
			if jobs, err = client.ListJobs(ctx); err == nil {
				for _, j := range jobs {
					if j.ID == "" || j.Name == "" {
						continue
					}
					runs = append(runs, jobRun{Job: catalog.LogicalJob{Tenant: c.Tenant, Cluster: c.ClusterID, Job: j.Name}, Id: j.ID, restURL: c.RESTURL})
				}
				continue
			}
		}
		unread = append(unread, unreadCluster{Cluster: c.ClusterID, Err: err})
	}
	activity.RecordHeartbeat(ctx, "job history")
	return JobHistoryRead{Runs: runs, Unread: unread}
}

// ownerKey is a resource without its API version, which the operator's
// jobReference does not carry.
func ownerKey(r inventory.ObjectRef) inventory.ObjectRef {
	return inventory.ObjectRef{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, KubeCluster: r.KubeCluster}
}

// OnStorage reports whether Flink names a snapshot on a file system; it
// says "<checkpoint-not-externalized>" for one kept in JobManager memory,
// which leaves no file to protect.
func OnStorage(externalPath string) bool {
	return strings.HasPrefix(externalPath, "/") || strings.Contains(externalPath, ":/")
}
