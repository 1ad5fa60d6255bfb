package cleanup

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/layout"
)

// BuildPlan decides, for everything in the listing, whether it is deleted
// (and by which rule) or kept (and why). It is pure: same input, same plan.
func BuildPlan(in Input) (Plan, error) {
	if in.Now.IsZero() {
		return Plan{}, invalidInput("now is zero; pass the planning time explicitly")
	}
	pol := in.Policy.ApplyDefaults()
	if err := pol.Validate(); err != nil {
		return Plan{}, err
	}
	p, err := newPlanner(in, pol)
	if err != nil {
		return Plan{}, err
	}
	objects, keepObjects, err := p.planObjects()
	if err != nil {
		return Plan{}, err
	}
	p.run()
	p.markRelocatable()
	plan := p.finish(objects, keepObjects)
	return plan, nil
}

type candidate struct {
	item  Item
	metas []string // _metadata files deleted with the item
	dir   bool     // a directory whose deletion may be vetoed by a reference
}

type planner struct {
	in          Input
	pol         Policy
	now         time.Time
	liveJobs    map[string]LiveJob
	liveCluster map[string]bool
	restore     map[string]need   // dir of a live job's restore point or latest checkpoint, or of a snapshot on record
	haDirs      map[string]string // configured HA dir -> live cluster
	haUnknown   []string          // live clusters whose HA configuration is unknown
	retired     map[string]bool   // clusters the inventory declares gone
	canon       canon
	// liveRefs are the references of live jobs' restore points and latest
	// checkpoints: always retained, whatever is planned.
	liveRefs []*References
	pinned   map[string]string // savepoint dir -> what pins it
	// released are the FlinkStateSnapshot resources deleted with their
	// savepoint dir, if it is deleted.
	released map[string][]SnapshotRef
	// lineage is the logical job of each savepoint dir.
	lineage map[string]string
	// unknownRestore names a writer outside the inventory whose restore
	// point is unknown; while it is set no snapshot is a candidate.
	unknownRestore string
	// ended are the job dirs of jobs an inventory cluster lists as ended,
	// by the cluster's checkpoint dirs, and when (see Live.ended).
	ended map[string]time.Time
	// drilled are the savepoint dirs whose latest restore drill passed.
	drilled map[string]bool
	unknown []string // normalised unknown paths
	meta    map[string]MetadataResult
	badMeta bool
	tenants []tenantRoot

	cands map[string]*candidate
	keep  []Kept
	// savepointJobID is the full job id each savepoint dir is proven to be
	// of; jobLineage the logical job each full job id is proven to run.
	savepointJobID map[string]string
	jobLineage     map[string]string
	// newestByJobID and newestByJob are the newest completed, parseable
	// savepoint, by its own time, of each full job id and logical job that
	// evidence proves it to be of, per tenant whose root holds it (see
	// ownerKey). Never keyed by a job id prefix: whole fleets share one
	// (see REFERENCES.md, identity on evidence).
	newestByJobID map[string]provenSavepoint
	newestByJob   map[string]provenSavepoint
}

// provenSavepoint is a savepoint whose owner is proven, at its own time.
type provenSavepoint struct {
	path    string
	written time.Time
}

type tenantRoot struct {
	name, root string
	plain      bool
}

func newPlanner(in Input, pol Policy) (*planner, error) {
	p := &planner{
		in: in, pol: pol, now: in.Now,
		liveJobs:       in.Live.jobs(),
		liveCluster:    in.Live.clusterIDs(),
		haDirs:         map[string]string{},
		retired:        map[string]bool{},
		pinned:         map[string]string{},
		meta:           map[string]MetadataResult{},
		cands:          map[string]*candidate{},
		lineage:        map[string]string{},
		drilled:        map[string]bool{},
		savepointJobID: map[string]string{},
		jobLineage:     map[string]string{},
		newestByJobID:  map[string]provenSavepoint{},
		newestByJob:    map[string]provenSavepoint{},
	}
	for _, id := range in.RetiredClusters {
		p.retired[id] = true
	}
	var roots []string
	for _, r := range in.Listing.Roots {
		roots = append(roots, r.Path)
	}
	var err error
	if p.canon, err = newCanon(in.Spellings, roots); err != nil {
		return nil, err
	}
	p.ended = in.Live.ended(p.canon)
	// path is canon.path for inputs, its errors classified as for every
	// restore source (unknownSource).
	path := func(what, v string) (string, error) {
		n, err := p.canon.path(v)
		if err != nil {
			return "", unknownSource(fmt.Sprintf("%s %q", what, v), err)
		}
		return n, nil
	}
	for dir, job := range in.Lineage {
		n, err := p.canon.path(dir)
		if err != nil {
			continue // a spelling not known to be this file system: no lineage, kept
		}
		if job == "" {
			return nil, invalidInput("lineage of savepoint %s is empty; leave the savepoint out instead", dir)
		}
		n = strings.TrimSuffix(n, "/"+layout.MetadataFileName)
		if prev, ok := p.lineage[n]; ok && prev != job {
			return nil, invalidInput("savepoint %s has two logical jobs, %s and %s", n, prev, job)
		}
		p.lineage[n] = job
	}
	for dir, id := range in.SavepointJobIDs {
		n, err := p.canon.path(dir)
		if err != nil {
			continue // a spelling not known to be this file system: no owner, kept
		}
		if !layout.IsJobID(id) {
			return nil, invalidInput("job id %q of savepoint %s is not 32 lower-case hex characters", id, dir)
		}
		n = strings.TrimSuffix(n, "/"+layout.MetadataFileName)
		if prev, ok := p.savepointJobID[n]; ok && prev != id {
			return nil, invalidInput("savepoint %s has two job ids, %s and %s", n, prev, id)
		}
		p.savepointJobID[n] = id
	}
	for id, job := range in.JobLineage {
		if !layout.IsJobID(id) || job == "" {
			return nil, invalidInput("job lineage %q -> %q: want a 32 lower-case hex job id and a logical job", id, job)
		}
		p.jobLineage[id] = job
	}
	for _, dir := range in.Drilled {
		if n, err := p.canon.path(dir); err == nil {
			p.drilled[n] = true
		} // a spelling not known to be this file system names nothing listed
	}
	for _, m := range in.Listing.PinMarkers {
		n, err := path("pin marker", m)
		if err != nil {
			return nil, err
		}
		p.pinned[strings.TrimSuffix(n, "/"+PinMarkerName)] = "marker " + PinMarkerName
	}
	for _, s := range pol.PinnedSavepoints {
		n, err := path("policy pinnedSavepoints entry", s)
		if err != nil {
			return nil, err
		}
		p.pinned[n] = "policy pinnedSavepoints"
	}
	// A _metadata that does not parse may name anything: nothing proves
	// it relative, a savepoint's no more than a checkpoint's (a savepoint
	// may name files by absolute path), so any one of them stops what a
	// reference could veto (badMeta).
	for _, src := range []struct {
		what string
		m    map[string]MetadataResult
	}{{"metadata", in.Listing.Metadata}, {"reference-root metadata", in.References}} {
		for k, v := range src.m {
			n, err := path(src.what+" key", k)
			if err != nil {
				return nil, err
			}
			if v.Refs == nil && v.Error == "" {
				return nil, invalidInput("%s %s has neither references nor an error", src.what, k)
			}
			if v.Error != "" {
				v.Refs = nil
				p.badMeta = true
			} else if v.Refs, err = p.canon.refs(v.Refs); err != nil {
				return nil, sourceUnknown("%v", err)
			}
			p.meta[n] = v
		}
	}
	for _, c := range in.Live.Clusters {
		if c.ClusterID == "" {
			return nil, invalidInput("live cluster with an empty clusterId")
		}
		if c.HAUnknown {
			p.haUnknown = append(p.haUnknown, c.ClusterID)
		}
		if c.HADir != "" {
			d, err := path("live cluster "+c.ClusterID+" HA dir", c.HADir)
			if err != nil {
				return nil, err
			}
			p.haDirs[d] = c.ClusterID
		}
		for _, j := range c.Jobs {
			if !layout.IsJobID(j.JobID) {
				return nil, invalidInput("live job id %q of cluster %s is not 32 lower-case hex characters", j.JobID, c.ClusterID)
			}
			if j.InFlightCheckpoint < 0 {
				return nil, invalidInput("live job %s: inFlightCheckpoint %d is negative; want 0 (none) or a checkpoint id", j.JobID, j.InFlightCheckpoint)
			}
			if j.CheckpointTimeout > pol.MaxCheckpointTimeout {
				return nil, invalidInput("policy maxCheckpointTimeout %v is shorter than the checkpoint timeout %v of live job %s on cluster %s: "+
					"it must be the longest the fleet allows, jobs outside the inventory included; set it to at least %v",
					pol.MaxCheckpointTimeout, j.CheckpointTimeout, j.JobID, c.ClusterID, j.CheckpointTimeout)
			}
			if j.CheckpointTimeout > pol.Grace {
				return nil, invalidInput("policy grace %v is shorter than the checkpoint timeout %v of live job %s on cluster %s: "+
					"a checkpoint may upload files that long before its _metadata exists; set grace to at least %v",
					pol.Grace, j.CheckpointTimeout, j.JobID, c.ClusterID, j.CheckpointTimeout)
			}
		}
	}
	for _, t := range in.Tenants {
		if t.Name == "" || t.Root == "" {
			return nil, invalidInput("tenant %q with root %q: both name and root are required", t.Name, t.Root)
		}
		r, err := p.canon.path(t.Root)
		if err != nil {
			// A tenant root only attributes items; keep its own spelling.
			if r, err = normPath(t.Root, ""); err != nil {
				return nil, invalidInput("tenant %s root %q: %v", t.Name, t.Root, err)
			}
		}
		p.tenants = append(p.tenants, tenantRoot{name: t.Name, root: r, plain: strings.HasPrefix(r, "/")})
	}
	// Longest root first, so nested tenant roots attribute to the inner one.
	sort.Slice(p.tenants, func(i, j int) bool { return len(p.tenants[i].root) > len(p.tenants[j].root) })
	// A completed savepoint a FlinkStateSnapshot names goes with the
	// resource when no other rule keeps it (planSavepoints), unless the
	// policy keeps such savepoints.
	completed := map[string]bool{}
	for _, sp := range in.Listing.Report.Savepoints {
		if sp.Completed {
			completed[p.norm(sp.Path)] = true
		}
	}
	live := in.Live
	// Only a resource in the savepoint's own tenant's namespaces goes: a run
	// scoped to one tenant never deletes another's.
	live.Records, p.released, err = releaseSnapshots(p.canon, in.Live.Records, func(dir string, r LiveRecord) bool {
		return pol.OperatorSnapshots == OperatorSnapshotsDelete && completed[dir] && r.Tenant != "" && r.Tenant == p.tenantOf(dir)
	})
	if err != nil {
		return nil, err
	}
	// What the live jobs need: their restore points and latest
	// checkpoints, and everything those reference.
	if p.liveRefs, p.restore, err = liveNeeds(p.canon, live, p.meta, p.released); err != nil {
		return nil, err
	}
	for _, u := range in.Listing.Report.Unknown {
		n, err := normPath(u.Path, "")
		if err != nil {
			return nil, invalidInput("unknown entry %q: %v", u.Path, err)
		}
		p.unknown = append(p.unknown, n)
	}
	return p, nil
}

// PendingMargin is how much older than a pending checkpoint's trigger an
// upload for it may look: the clocks of TaskManagers and NameNode differ.
const PendingMargin = 5 * time.Minute

// pending reports whether a file modified at t may belong to a checkpoint
// of the live job still in progress.
func (p *planner) pending(j LiveJob, t time.Time) bool {
	return !j.OldestPending.IsZero() && !t.Before(j.OldestPending.Add(-PendingMargin))
}

func (p *planner) pendingBy(j LiveJob) string {
	return "live job " + j.JobID + " has a checkpoint in progress since " + j.OldestPending.UTC().Format(time.RFC3339)
}

func (p *planner) old(t time.Time, d time.Duration) bool {
	return !t.IsZero() && p.now.Sub(t) >= d
}

func (p *planner) tenantOf(path string) string {
	for _, t := range p.tenants {
		if t.plain && under(stripScheme(path), t.root) || !t.plain && under(path, t.root) {
			return t.name
		}
	}
	return ""
}

func (p *planner) norm(path string) string {
	n, err := normPath(path, "")
	if err != nil {
		// Listings come from storage and are already absolute; keep the raw
		// string so the item is still reported.
		return path
	}
	return n
}

func (p *planner) unknownUnder(dir string) (string, bool) {
	for _, u := range p.unknown {
		if u != dir && under(u, dir) {
			return u, true
		}
	}
	return "", false
}

func (p *planner) addKeep(k Kept) {
	k.Tenant = p.tenantOf(k.Path)
	p.keep = append(p.keep, k)
}

func (p *planner) addCand(c *candidate) {
	c.item.Tenant = p.tenantOf(c.item.Path)
	if p.unknownRestore != "" && len(c.metas) > 0 && (c.item.Kind == KindCheckpointDir || c.item.Kind == KindSavepointDir) {
		p.addKeep(Kept{Path: c.item.Path, Kind: c.item.Kind, Reason: KeepUnknownRestore, JobID: c.item.JobID, By: p.unknownRestore,
			Files: c.item.Files, Dirs: c.item.Dirs, Bytes: c.item.Bytes})
		return
	}
	p.cands[c.item.Path] = c
}

func (p *planner) metaFor(dir string) MetadataResult {
	return p.meta[dir+"/"+layout.MetadataFileName]
}

func (p *planner) run() {
	p.indexSavepoints()
	jobs := p.in.Listing.Report.Jobs
	p.unknownRestore = p.restoredFromTheUnknown(jobs)
	if p.unknownRestore == "" {
		p.unknownRestore = p.in.Live.UnknownRestore()
	}
	whole := map[string]bool{} // job dirs kept whole
	for _, j := range jobs {
		if p.planJobDir(j) {
			whole[p.norm(j.Path)] = true
		}
	}
	p.planSavepoints()
	p.planHA()
	for _, r := range p.in.Listing.Report.JobResults {
		p.addKeep(Kept{Path: p.norm(r.Path), Kind: KindJobResult, Reason: KeepNotCovered, JobID: r.JobID,
			By: "job result store entries are Flink's own bookkeeping", Files: 1})
	}
	for _, u := range p.in.Listing.Report.Unknown {
		p.addKeep(Kept{Path: p.norm(u.Path), Kind: KindUnknown, Reason: KeepUnknown, By: u.Reason,
			Files: u.Usage.Files, Dirs: u.Usage.Dirs, Bytes: u.Usage.Bytes})
	}
	ix := p.fixpoint()
	p.planStateFiles(jobs, whole, ix)
	p.collapseRetiredJobs(jobs, whole)
}

// indexSavepoints finds, per full job id and per logical job, the newest
// savepoint proven to be theirs, by the savepoint's own time.
func (p *planner) indexSavepoints() {
	for _, sp := range p.in.Listing.Report.Savepoints {
		path := p.norm(sp.Path)
		if !sp.Completed || sp.Written.IsZero() || p.metaFor(path).Refs == nil {
			continue
		}
		this := provenSavepoint{path: path, written: sp.Written}
		tenant := p.tenantOf(path)
		if id := p.savepointJobID[path]; id != "" && sp.Written.After(p.newestByJobID[ownerKey(tenant, id)].written) {
			p.newestByJobID[ownerKey(tenant, id)] = this
		}
		if job := p.lineage[path]; job != "" && sp.Written.After(p.newestByJob[ownerKey(tenant, job)].written) {
			p.newestByJob[ownerKey(tenant, job)] = this
		}
	}
}

// ownerKey keys a job id or logical job by the tenant whose root holds
// the savepoint: a savepoint proves something of a job dir only in the
// same tenant, so that a claim a tenant can write (its catalog, its job
// records) never decides about another tenant's checkpoints.
func ownerKey(tenant, owner string) string { return tenant + "\x00" + owner }

// newerSavepoint returns a savepoint in the same tenant, proven to be of
// the same job as job dir jobID (the same full job id, or the same logical
// job) and written after the checkpoint c: then c is not the job's newest
// restore point.
func (p *planner) newerSavepoint(jobID string, c layout.Checkpoint) (provenSavepoint, bool) {
	tenant := p.tenantOf(p.norm(c.Path))
	// The checkpoint's own time; without it, the newest time in its dir,
	// which is never older.
	at := c.Written
	if at.IsZero() {
		at = c.Usage.Newest
	}
	if sp := p.newestByJobID[ownerKey(tenant, jobID)]; sp.written.After(at) {
		return sp, true
	}
	if job := p.jobLineage[jobID]; job != "" {
		if sp := p.newestByJob[ownerKey(tenant, job)]; sp.written.After(at) {
			return sp, true
		}
	}
	return provenSavepoint{}, false
}

func (p *planner) hasNewerSavepoint(jobID string, c layout.Checkpoint) bool {
	_, ok := p.newerSavepoint(jobID, c)
	return ok
}

// planJobDir plans the chk-N dirs of one job dir; it reports whether the
// whole dir is kept (unknown layout or unparseable metadata).
func (p *planner) planJobDir(j layout.JobCheckpoints) bool {
	jobPath := p.norm(j.Path)
	keepWhole := func(reason Reason, by string) bool {
		p.addKeep(Kept{Path: jobPath, Kind: KindJobDir, Reason: reason, JobID: j.JobID, By: by,
			Files: j.Total.Files, Dirs: j.Total.Dirs, Bytes: j.Total.Bytes})
		return true
	}
	if u, ok := p.unknownUnder(jobPath); ok {
		return keepWhole(KeepUnknownLayout, "unknown entry "+u)
	}
	for _, c := range j.Checkpoints {
		if !c.Completed {
			continue
		}
		if m := p.metaFor(p.norm(c.Path)); m.Refs == nil {
			by := m.Error
			if by == "" {
				by = "not parsed"
			}
			return keepWhole(KeepUnparseable, p.norm(c.Path)+"/"+layout.MetadataFileName+": "+by)
		}
	}
	live, isLive := p.liveJobs[j.JobID]
	retiredPastTTL := !isLive && p.old(j.Total.Newest, p.pol.RetiredJobTTL)
	writer, mayBeWritten := p.possiblyLiveWriter(j, isLive)
	// The checkpoints that may be a run's last state: by time, never by
	// id (a dir holds many runs of a fixed job id).
	last, runs := lastStates(j.JobID, chkEntries(j))
	for _, c := range j.Checkpoints {
		cp := p.norm(c.Path)
		k := Kept{Path: cp, Kind: KindCheckpointDir, JobID: j.JobID, Files: c.Usage.Files, Dirs: c.Usage.Dirs, Bytes: c.Usage.Bytes}
		item := Item{Path: cp, Kind: KindCheckpointDir, JobID: j.JobID, Files: c.Usage.Files, Dirs: c.Usage.Dirs,
			Bytes: c.Usage.Bytes, Newest: c.Usage.Newest}
		if n, ok := p.restore[cp]; ok {
			k.Reason, k.By = n.reason, n.by
			p.addKeep(k)
			continue
		}
		if !c.Completed {
			switch {
			case isLive && c.ID == live.InFlightCheckpoint:
				k.Reason, k.By = KeepInFlight, "live job "+j.JobID
				p.addKeep(k)
			case isLive && p.pending(live, c.Usage.Newest):
				k.Reason, k.By = KeepPendingUpload, p.pendingBy(live)
				p.addKeep(k)
			case mayBeWritten:
				k.Reason, k.By = KeepPossiblyLive, writer
				p.addKeep(k)
			case p.old(c.Usage.Newest, p.pol.Grace):
				item.Rule = RuleIncompleteCheckpoint
				item.Detail = fmt.Sprintf("no %s, last modified %s", layout.MetadataFileName, c.Usage.Newest.UTC().Format(time.RFC3339))
				p.addCand(&candidate{item: item, dir: true})
			default:
				k.Reason, k.By = KeepWithinGrace, "no _metadata yet, possibly in flight"
				p.addKeep(k)
			}
			continue
		}
		switch {
		case isLive:
			k.Reason, k.By = KeepLiveJob, "live job "+j.JobID+" (Flink subsumes its checkpoints)"
			p.addKeep(k)
		case !retiredPastTTL:
			k.Reason, k.By = KeepWithinTTL, "job absent from the inventory, last modified "+j.Total.Newest.UTC().Format(time.RFC3339)
			p.addKeep(k)
		case last[c.ID] && !p.pol.DeleteLatestRetiredCheckpoint && !p.hasNewerSavepoint(j.JobID, c):
			k.Reason, k.By = KeepLatestRetired, "no savepoint proven to be of job "+j.JobID+" (by its job id or logical job) is newer"
			if runs != "" {
				k.By += "; " + runs
			}
			p.addKeep(k)
		case p.badMeta:
			k.Reason, k.By = KeepUnparseableInScope, "an unparseable _metadata in scope may reference it"
			p.addKeep(k)
		default:
			item.Rule = RuleRetiredJob
			item.Detail = "job absent from the inventory, last modified " + j.Total.Newest.UTC().Format(time.RFC3339)
			if sp, ok := p.newerSavepoint(j.JobID, c); ok && last[c.ID] {
				item.Detail += "; newer savepoint of the same job: " + sp.path + ", written " + sp.written.UTC().Format(time.RFC3339)
			}
			p.addCand(&candidate{item: item, metas: []string{cp + "/" + layout.MetadataFileName}, dir: true})
		}
	}
	return false
}

// possiblyLiveWriter reports whether a job dir absent from the inventory
// was written within the longest checkpoint timeout the fleet allows: a
// job outside the inventory may still be uploading a checkpoint into it,
// its files older than the grace period and no _metadata yet. A job its
// inventory cluster lists as ended after the dir's last write (a window
// stopped it) writes nothing more.
func (p *planner) possiblyLiveWriter(j layout.JobCheckpoints, isLive bool) (string, bool) {
	if isLive || endedBy(p.ended, p.norm(j.Path), j.Total.Newest) || p.old(j.Total.Newest, p.pol.MaxCheckpointTimeout) {
		return "", false
	}
	return fmt.Sprintf("job %s is absent from the inventory, but its dir was written %s, within the longest checkpoint timeout the fleet allows (%v): "+
		"a job outside the inventory may be uploading a checkpoint", j.JobID, j.Total.Newest.UTC().Format(time.RFC3339), p.pol.MaxCheckpointTimeout), true
}

// restoredFromTheUnknown names a job outside the inventory that may be
// running from a snapshot nothing names: its dir was written within the
// longest checkpoint timeout, no inventory cluster writing that dir lists
// the job as ended (Flink removes a finished job's checkpoints), and the
// run writing it has no completed checkpoint of its own yet, whose
// _metadata would name its restore point. Completed checkpoints an
// earlier run of the same job id left in the dir say nothing of what
// this run restored from (see ownCheckpoint). Restored in CLAIM mode, any
// of the plan's snapshots may be its own now, so while it is there none
// is planned ("" when there is no such job; the first by path otherwise).
func (p *planner) restoredFromTheUnknown(jobs []layout.JobCheckpoints) string {
	first := ""
	for _, j := range jobs {
		_, isLive := p.liveJobs[j.JobID]
		if _, mayBeWritten := p.possiblyLiveWriter(j, isLive); !mayBeWritten || ownCheckpoint(chkEntries(j), j.Total.Newest, p.pol.MaxCheckpointTimeout+PendingMargin) {
			continue
		}
		if dir := p.norm(j.Path); first == "" || dir < first {
			first = dir
		}
	}
	if first == "" {
		return ""
	}
	return fmt.Sprintf("a job outside the inventory writes into %s (written within the longest checkpoint timeout, %v) and has no completed checkpoint of its own yet: "+
		"what it restored from is unknown, so no checkpoint or savepoint is planned until its first checkpoint names it (or its cluster joins the inventory)",
		first, p.pol.MaxCheckpointTimeout)
}

// planSavepoints applies retention per logical job: a job's id changes on
// every restart, so the id prefix in the dir name cannot group one job's
// savepoints; the lineage can.
func (p *planner) planSavepoints() {
	groups := map[string][]layout.Savepoint{}
	for _, sp := range p.in.Listing.Report.Savepoints {
		if job := p.lineage[p.norm(sp.Path)]; sp.Completed && job != "" && p.metaFor(p.norm(sp.Path)).Refs != nil {
			groups[job] = append(groups[job], sp)
		}
	}
	rank := map[string]int{}
	lastDrilled := map[string]bool{} // the newest drilled savepoint of each job
	undated := map[string]bool{}     // logical jobs with a savepoint of unknown time
	for job, g := range groups {
		// Ranked by each savepoint's own time: a pin marker or any other file
		// written into an old savepoint's dir must not make it the newest.
		for _, sp := range g {
			if sp.Written.IsZero() {
				undated[job] = true
			}
		}
		sort.Slice(g, func(i, j int) bool {
			if !g[i].Written.Equal(g[j].Written) {
				return g[i].Written.After(g[j].Written)
			}
			return g[i].Path > g[j].Path
		})
		drilledSeen := p.pol.IgnoreDrills
		for i, sp := range g {
			rank[p.norm(sp.Path)] = i
			if !drilledSeen && p.drilled[p.norm(sp.Path)] {
				lastDrilled[p.norm(sp.Path)], drilledSeen = true, true
			}
		}
	}
	for _, sp := range p.in.Listing.Report.Savepoints {
		sp2 := p.norm(sp.Path)
		k := Kept{Path: sp2, Kind: KindSavepointDir, Files: sp.Usage.Files, Dirs: sp.Usage.Dirs, Bytes: sp.Usage.Bytes}
		item := Item{Path: sp2, Kind: KindSavepointDir, Files: sp.Usage.Files, Dirs: sp.Usage.Dirs,
			Bytes: sp.Usage.Bytes, Newest: sp.Usage.Newest}
		m := p.metaFor(sp2)
		readOnly := p.readOnlySnapshot(sp2)
		switch {
		case p.pinned[sp2] != "":
			k.Reason, k.By = KeepPinned, p.pinned[sp2]
		case p.restore[sp2].by != "":
			k.Reason, k.By = p.restore[sp2].reason, p.restore[sp2].by
		case !sp.Completed && p.old(sp.Usage.Newest, p.pol.Grace):
			item.Rule, item.Detail = RuleIncompleteSavepoint, "no _metadata, last modified "+sp.Usage.Newest.UTC().Format(time.RFC3339)
			p.addCand(&candidate{item: item, dir: true})
			continue
		case !sp.Completed:
			k.Reason, k.By = KeepWithinGrace, "no _metadata yet, possibly in progress"
		case m.Refs == nil:
			k.Reason, k.By = KeepUnparseable, sp2+"/"+layout.MetadataFileName+": "+m.Error
		case p.lineage[sp2] == "":
			k.Reason, k.By = KeepLineageUnknown, "no evidence of its logical job: no valid savepoint catalog entry, operator record of its tenant "+
				"or Flink checkpoint history names this path (a job id prefix is no evidence; flinkmaint savepoints adopt assigns one)"
		case undated[p.lineage[sp2]]:
			k.Reason, k.By = KeepLineageUnknown, "a savepoint of job "+p.lineage[sp2]+" was listed without its _metadata time: its newest cannot be told"
		case rank[sp2] < p.pol.KeepSavepoints:
			k.Reason, k.By = KeepNewestSavepoints, fmt.Sprintf("newest #%d of job %s", rank[sp2]+1, p.lineage[sp2])
		case lastDrilled[sp2]:
			k.Reason, k.By = KeepLastDrilled, fmt.Sprintf("newest savepoint of job %s whose restore drill passed", p.lineage[sp2])
		case !p.old(sp.Written, p.pol.SavepointMaxAge):
			k.Reason, k.By = KeepWithinMaxAge, "written "+sp.Written.UTC().Format(time.RFC3339)+", job "+p.lineage[sp2]
		case p.badMeta:
			k.Reason, k.By = KeepUnparseableInScope, "an unparseable _metadata in scope may reference it"
		case readOnly != nil:
			k.Reason, k.By = KeepKubernetesReadOnly, kubernetesReadOnlyBy+" ("+readOnly.String()+" would be deleted with it)"
		default:
			item.Rule = RuleSavepointRetention
			item.Detail = fmt.Sprintf("#%d of job %s, written %s", rank[sp2]+1, p.lineage[sp2], sp.Written.UTC().Format(time.RFC3339))
			item.Snapshots = p.released[sp2]
			for _, s := range item.Snapshots {
				item.Detail += "; " + s.String() + " is deleted with it"
			}
			p.addCand(&candidate{item: item, metas: []string{sp2 + "/" + layout.MetadataFileName}, dir: true})
			continue
		}
		p.addKeep(k)
	}
}

// readOnlySnapshot is a FlinkStateSnapshot resource deleting savepoint sp
// would delete in a Kubernetes cluster where the worker may not delete.
func (p *planner) readOnlySnapshot(sp string) *SnapshotRef {
	for i, s := range p.released[sp] {
		if p.in.ReadOnlyKubeClusters[s.Ref.KubeCluster] {
			return &p.released[sp][i]
		}
	}
	return nil
}

func (p *planner) planHA() {
	for _, cl := range p.in.Listing.Report.HAClusters {
		cp := p.norm(cl.Path)
		k := Kept{Path: cp, Kind: KindHAClusterDir, Files: cl.Total.Files, Dirs: cl.Total.Dirs, Bytes: cl.Total.Bytes}
		u, unknown := p.unknownUnder(cp)
		switch {
		case p.liveCluster[cl.ClusterID]:
			k.Reason, k.By = KeepLiveCluster, "cluster "+cl.ClusterID
		case p.haDirs[cp] != "":
			k.Reason, k.By = KeepLiveCluster, "HA dir of live cluster "+p.haDirs[cp]+" (its configured high-availability.cluster-id)"
		case len(p.haUnknown) > 0 && !p.retired[cl.ClusterID]:
			k.Reason, k.By = KeepHAOwnerUnknown, "the HA configuration of live clusters "+strings.Join(p.haUnknown, ", ")+" cannot be read; this may be theirs"
		case unknown:
			k.Reason, k.By = KeepUnknownLayout, "unknown entry "+u
		case !p.old(cl.Total.Newest, p.pol.HATTL):
			k.Reason, k.By = KeepWithinTTL, "cluster absent from the inventory, last modified "+cl.Total.Newest.UTC().Format(time.RFC3339)
		default:
			p.addCand(&candidate{item: Item{Path: cp, Kind: KindHAClusterDir, Rule: RuleRetiredHACluster, ClusterID: cl.ClusterID,
				Files: cl.Total.Files, Dirs: cl.Total.Dirs, Bytes: cl.Total.Bytes, Newest: cl.Total.Newest,
				Detail: "cluster absent from the inventory, last modified " + cl.Total.Newest.UTC().Format(time.RFC3339)}, dir: true})
			continue
		}
		p.addKeep(k)
	}
}

// fixpoint drops every candidate directory that a retained _metadata
// references into; dropping one retains its own _metadata, which can veto
// others, so it repeats until nothing changes. Candidates only shrink, so
// it terminates.
func (p *planner) fixpoint() *refIndex {
	for {
		removed := map[string]bool{}
		for _, c := range p.cands {
			for _, m := range c.metas {
				removed[m] = true
			}
		}
		retained := append([]*References(nil), p.liveRefs...)
		for k, v := range p.meta {
			if v.Refs != nil && !removed[k] {
				retained = append(retained, v.Refs)
			}
		}
		ix := newRefIndex(retained)
		var vetoed []string
		for path, c := range p.cands {
			if !c.dir {
				continue
			}
			if by, ok := ix.find(path); ok {
				vetoed = append(vetoed, path)
				c.item.Detail = by
			}
		}
		if len(vetoed) == 0 {
			return ix
		}
		sort.Strings(vetoed)
		for _, path := range vetoed {
			c := p.cands[path]
			delete(p.cands, path)
			p.addKeep(Kept{Path: path, Kind: c.item.Kind, Reason: KeepReferenced, JobID: c.item.JobID, By: c.item.Detail,
				Files: c.item.Files, Dirs: c.item.Dirs, Bytes: c.item.Bytes})
		}
	}
}

func (p *planner) planStateFiles(jobs []layout.JobCheckpoints, whole map[string]bool, ix *refIndex) {
	byJob := map[string][]StateFile{}
	for _, f := range p.in.Listing.StateFiles {
		jd := p.norm(f.JobDir)
		byJob[jd] = append(byJob[jd], f)
	}
	for _, j := range jobs {
		jobPath := p.norm(j.Path)
		if whole[jobPath] {
			continue
		}
		live, isLive := p.liveJobs[j.JobID]
		retiredPastTTL := !isLive && p.old(j.Total.Newest, p.pol.RetiredJobTTL)
		writer, mayBeWritten := p.possiblyLiveWriter(j, isLive)
		var newestMeta time.Time
		for _, c := range j.Checkpoints {
			if c.Completed && c.Usage.Newest.After(newestMeta) {
				newestMeta = c.Usage.Newest
			}
		}
		for _, f := range byJob[jobPath] {
			fp := p.norm(f.Path)
			k := Kept{Path: fp, Kind: f.Kind, JobID: j.JobID, Files: 1, Bytes: f.Size}
			forst, isForSt := forStWorkingDir(jobPath, fp, f.Kind)
			switch by, ok := ix.find(fp); {
			case ok:
				k.Reason, k.By = KeepReferenced, by
			case isForSt && isLive:
				// However old: ForSt reuses these files across checkpoints and keeps an
				// old attempt's files after a failover; only the instance knows which
				// it still reads. The normal rules apply once the job is gone.
				k.Reason, k.By = KeepForStWorkingState, "live job "+j.JobID+" owns ForSt working dir "+forst
			case mayBeWritten:
				k.Reason, k.By = KeepPossiblyLive, writer
			case !p.old(f.ModTime, p.pol.Grace):
				k.Reason, k.By = KeepWithinGrace, "possibly uploaded for a checkpoint not completed yet"
			case isLive && !f.ModTime.Before(newestMeta):
				k.Reason, k.By = KeepNewerThanCheckpoint, "live job "+j.JobID+" may be uploading it for its next checkpoint"
			case isLive && p.pending(live, f.ModTime):
				k.Reason, k.By = KeepPendingUpload, p.pendingBy(live)
			case p.badMeta:
				k.Reason, k.By = KeepUnparseableInScope, "an unparseable _metadata in scope may reference it"
			default:
				rule := RuleUnreferencedState
				if retiredPastTTL {
					rule = RuleRetiredJob
				}
				p.addCand(&candidate{item: Item{Path: fp, Kind: f.Kind, Rule: rule, JobID: j.JobID, Files: 1,
					Bytes: f.Size, Newest: f.ModTime, Detail: "no retained _metadata references it"}})
				continue
			}
			p.addKeep(k)
		}
	}
}

// forStWorkingDir reports whether a shared/ state file lies in a ForSt
// working dir (<job>/shared/op_…__attempt_<n>/…, Flink 2.x with the primary
// dir defaulting to the checkpoint dir), and returns that dir's name.
func forStWorkingDir(jobPath, file string, kind ItemKind) (string, bool) {
	if kind != KindSharedFile {
		return "", false
	}
	rel, ok := strings.CutPrefix(file, strings.TrimSuffix(jobPath, "/")+"/shared/")
	if !ok {
		return "", false
	}
	first, _, nested := strings.Cut(rel, "/")
	if !nested {
		return "", false
	}
	if _, ok := layout.ParseForStWorkingDir(first); !ok {
		return "", false
	}
	return first, true
}

// collapseRetiredJobs replaces the items of a retired job dir by the dir
// itself when nothing in it is kept: one rename or delete instead of many,
// and the dir, shared/ and taskowned/ are reclaimed too.
func (p *planner) collapseRetiredJobs(jobs []layout.JobCheckpoints, whole map[string]bool) {
	// What is kept or planned under each job dir, found by walking up from
	// each path once (not by comparing every path with every job dir).
	jobPaths := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		jobPaths[p.norm(j.Path)] = true
	}
	keptUnder := map[string]bool{}
	for _, k := range p.keep {
		ancestors(k.Path, func(a string) {
			if jobPaths[a] {
				keptUnder[a] = true
			}
		})
	}
	candsUnder := map[string][]string{}
	for path := range p.cands {
		ancestors(path, func(a string) {
			if jobPaths[a] {
				candsUnder[a] = append(candsUnder[a], path)
			}
		})
	}
	for _, j := range jobs {
		jobPath := p.norm(j.Path)
		if whole[jobPath] || p.liveJobs[j.JobID].JobID != "" || !p.old(j.Total.Newest, p.pol.RetiredJobTTL) || keptUnder[jobPath] {
			continue
		}
		var metas []string
		for _, path := range candsUnder[jobPath] {
			if c, ok := p.cands[path]; ok {
				metas = append(metas, c.metas...)
				delete(p.cands, path)
			}
		}
		sort.Strings(metas)
		p.addCand(&candidate{item: Item{Path: jobPath, Kind: KindJobDir, Rule: RuleRetiredJob, JobID: j.JobID,
			Files: j.Total.Files, Dirs: j.Total.Dirs, Bytes: j.Total.Bytes, Newest: j.Total.Newest,
			Detail: "job absent from the inventory, last modified " + j.Total.Newest.UTC().Format(time.RFC3339)}, metas: metas, dir: true})
	}
}

// ancestors calls fn with path and each of its parents.
func ancestors(path string, fn func(string)) {
	path = strings.TrimRight(path, "/")
	for {
		fn(path)
		i := strings.LastIndexByte(path, '/')
		if i <= 0 {
			return
		}
		path = path[:i]
	}
}

func (p *planner) finish(objects []ObjectItem, keepObjects []KeptObject) Plan {
	plan := Plan{Version: PlanVersion, CreatedAt: p.now, ListedAt: p.in.Listing.StartedAt, Policy: p.pol, Roots: append([]layout.Root(nil), p.in.Listing.Roots...),
		Objects: objects, KeepObjects: keepObjects, Spellings: p.spellings(), RetiredClusters: append([]string(nil), p.in.RetiredClusters...),
		ReferenceRoots: append([]layout.Root(nil), p.in.ReferenceRoots...)}
	sort.Strings(plan.RetiredClusters)
	for _, c := range p.cands {
		plan.Delete = append(plan.Delete, c.item)
	}
	sort.Slice(plan.Delete, func(i, j int) bool { return plan.Delete[i].Path < plan.Delete[j].Path })
	plan.Keep = p.keep
	sort.SliceStable(plan.Keep, func(i, j int) bool {
		if plan.Keep[i].Path != plan.Keep[j].Path {
			return plan.Keep[i].Path < plan.Keep[j].Path
		}
		return plan.Keep[i].Reason < plan.Keep[j].Reason
	})
	for k := range p.meta {
		plan.SeenMetadata = append(plan.SeenMetadata, k)
	}
	sort.Strings(plan.SeenMetadata)
	for id := range p.liveJobs {
		plan.LiveJobs = append(plan.LiveJobs, id)
	}
	sort.Strings(plan.LiveJobs)
	for id := range p.liveCluster {
		plan.LiveClusters = append(plan.LiveClusters, id)
	}
	sort.Strings(plan.LiveClusters)
	plan.Summary = summarize(plan)
	return plan
}

func summarize(plan Plan) []TenantSummary {
	by := map[string]*TenantSummary{}
	get := func(t string) *TenantSummary {
		s, ok := by[t]
		if !ok {
			s = &TenantSummary{Tenant: t, ByRule: map[Rule]Totals{}, KeptItems: map[Reason]Totals{}}
			by[t] = s
		}
		return s
	}
	for _, it := range plan.Delete {
		s := get(it.Tenant)
		s.Reclaim.add(it.Files, it.Dirs, it.Bytes)
		t := s.ByRule[it.Rule]
		t.add(it.Files, it.Dirs, it.Bytes)
		s.ByRule[it.Rule] = t
	}
	for _, k := range plan.Keep {
		s := get(k.Tenant)
		t := s.KeptItems[k.Reason]
		t.add(k.Files, k.Dirs, k.Bytes)
		s.KeptItems[k.Reason] = t
	}
	objects := func(tenant string) *ObjectTotals {
		s := get(tenant)
		if s.Objects == nil {
			s.Objects = &ObjectTotals{ByRule: map[Rule]int64{}, Kept: map[Reason]int64{}}
		}
		return s.Objects
	}
	for _, o := range plan.Objects {
		t := objects(o.Tenant)
		t.Planned++
		t.ByRule[o.Rule]++
	}
	for _, o := range plan.KeepObjects {
		objects(o.Tenant).Kept[o.Reason]++
	}
	out := make([]TenantSummary, 0, len(by))
	for _, s := range by {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tenant < out[j].Tenant })
	return out
}

// spellings records the names the plan was made with, for the executor.
func (p *planner) spellings() Spellings {
	sp := Spellings{Base: p.canon.base}
	for a := range p.canon.aliases {
		sp.Aliases = append(sp.Aliases, a)
	}
	for d := range p.canon.distinct {
		sp.Distinct = append(sp.Distinct, d)
	}
	sort.Strings(sp.Aliases)
	sort.Strings(sp.Distinct)
	return sp
}
