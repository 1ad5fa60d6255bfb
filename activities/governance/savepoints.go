package governance

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// SavepointRow is one completed savepoint on storage and the logical job
// it belongs to, if known.
type SavepointRow struct {
	Path   string `json:"path"`
	Tenant string `json:"tenant"`
	// Job is tenant/cluster/job, or empty when lineage is unknown.
	Job     string `json:"job,omitempty"`
	JobID   string `json:"jobId,omitempty"`
	Trigger string `json:"trigger,omitempty"` // catalog trigger; "" with unknown lineage
	RunID   string `json:"runId,omitempty"`
	// Format and FlinkVersion as the catalog records them, if at all.
	Format       string    `json:"format,omitempty"`
	FlinkVersion string    `json:"flinkVersion,omitempty"`
	Files        int64     `json:"files"`
	Bytes        int64     `json:"bytes"`
	Written      time.Time `json:"written"`
	// Drill is the savepoint's latest restore drill, if any.
	Drill *catalog.DrillRecord `json:"drill,omitempty"`
	// Rehearsal is the savepoint's latest compatibility rehearsal, if any.
	Rehearsal *catalog.RehearsalRecord `json:"rehearsal,omitempty"`
	// FailedRestore is the latest job seen FAILED restoring from the
	// savepoint, if any, and until when governance keeps it for a retry.
	FailedRestore *FailedRestoreHold `json:"failedRestore,omitempty"`
}

// FailedRestoreHold is a failed-restore record and the end of its hold
// (cleanup.failedRestoreHold after it was last seen).
type FailedRestoreHold struct {
	catalog.FailedRestoreRecord
	HeldUntil time.Time `json:"heldUntil"`
}

// ListSavepointsInput selects tenants (all when empty) and, optionally, one
// logical job as cluster/name.
type ListSavepointsInput struct {
	Tenants []string `json:"tenants,omitempty"`
	Job     string   `json:"job,omitempty"`
	// Unknown lists only the savepoints whose logical job no evidence
	// proves (kept by governance as lineage-unknown until adopted).
	Unknown bool `json:"unknown,omitempty"`
}

// ListSavepointsResult lists savepoints oldest first.
type ListSavepointsResult struct {
	Savepoints []SavepointRow `json:"savepoints"`
	Notes      []string       `json:"notes,omitempty"`
}

// AdoptSavepointsInput assigns savepoints to the logical job cluster/name.
// Force replaces another job a savepoint is catalogued for.
type AdoptSavepointsInput struct {
	Job   string   `json:"job"`
	Paths []string `json:"paths"`
	Force bool     `json:"force,omitempty"`
}

// AdoptSavepointsResult lists what was adopted.
type AdoptSavepointsResult struct {
	Adopted []SavepointRow `json:"adopted"`
}

// ListSavepoints lists the completed savepoints under the savepoint dirs
// of the tenants' clusters with their logical job: from the catalog, or
// from a cluster's job history (which catalogues them), or unknown.
func (a *Activities) ListSavepoints(ctx context.Context, in ListSavepointsInput) (ListSavepointsResult, error) {
	if a.Inventory == nil || a.Storage == nil {
		return ListSavepointsResult{}, core.NonRetryable(core.ErrTypeInventory, "worker has no inventory source or storage configured")
	}
	var wantCluster, wantName string
	if in.Job != "" {
		var ok bool
		if wantCluster, wantName, ok = core.SplitJob(in.Job); !ok {
			return ListSavepointsResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "job %q: want <cluster>/<job name>, such as cluster-a/orders", in.Job)
		}
	}
	inv, err := a.Inventory.Discover(ctx)
	if err != nil {
		return ListSavepointsResult{}, core.Classify("discover inventory", err)
	}
	var res ListSavepointsResult
	var roots []layout.Root
	var fs storage.FileSystem
	seen := map[string]bool{}
	for _, c := range inv.Clusters {
		if !core.InScope(in.Tenants, c.Tenant) || c.SavepointDir == "" {
			continue
		}
		rfs, p, err := a.Storage.Resolve(ctx, c.SavepointDir)
		if err != nil {
			return res, core.Classify("resolve savepoint dir "+c.SavepointDir, err)
		}
		if fs != nil && rfs.URI().String() != fs.URI().String() {
			res.Notes = append(res.Notes, fmt.Sprintf("savepoint dir %s of cluster %s is on another file system than %s: list its tenant alone", c.SavepointDir, c.ClusterID, fs.URI()))
			continue
		}
		p = strings.TrimRight(p, "/")
		if seen[p] {
			continue
		}
		seen[p] = true
		if _, err := rfs.Stat(ctx, p); errors.Is(err, storage.ErrNotFound) {
			continue
		} else if err != nil {
			return res, core.Classify("stat "+p, err)
		}
		fs = rfs
		roots = append(roots, layout.Root{Path: p, Kind: layout.SavepointRoot})
	}
	var tenants []inventory.Tenant
	for _, t := range inv.Tenants {
		if core.InScope(in.Tenants, t.Name) {
			tenants = append(tenants, t)
		}
	}
	if len(roots) == 0 {
		return res, nil
	}
	listing, err := cleanup.Gather(ctx, fs, roots, cleanup.GatherOptions{ReferencesOnly: true})
	if err != nil {
		return res, core.Classify("list savepoint dirs", err)
	}
	owners, err := a.lineage().Owners(ctx, inv, tenants, listing, nil, a.lineage().JobHistory(ctx, inv), &res.Notes)
	if err != nil {
		return res, err
	}
	lineage := owners.Lineage
	entries := map[string]catalog.Entry{}
	drills := map[string]catalog.DrillRecord{}
	rehearsals := map[string]catalog.RehearsalRecord{}
	failed := map[string]catalog.FailedRestoreRecord{}
	for _, t := range tenants {
		if e, err := a.catalog().Entries(ctx, t); err == nil {
			for _, en := range e {
				entries[en.Path] = en
			}
		}
		if d, err := a.catalog().Drills(ctx, t); err == nil {
			for _, r := range d {
				drills[r.Snapshot] = r
			}
		} else {
			res.Notes = append(res.Notes, fmt.Sprintf("drill records of tenant %s unreadable: %v", t.Name, err))
		}
		if recs, err := a.catalog().Rehearsals(ctx, t); err == nil {
			for _, r := range recs {
				rehearsals[r.Snapshot] = r
			}
		} else {
			res.Notes = append(res.Notes, fmt.Sprintf("rehearsal records of tenant %s unreadable: %v", t.Name, err))
		}
		recs, rejected, err := a.catalog().FailedRestores(ctx, t)
		if err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("failed-restore records of tenant %s unreadable: %v", t.Name, err))
		}
		for _, r := range recs {
			failed[r.Snapshot] = r
		}
		for _, rj := range rejected {
			res.Notes = append(res.Notes, fmt.Sprintf("failed-restore record %s of tenant %s cannot be read (%s): governance plans no snapshot until it is repaired or removed", rj.File, t.Name, rj.Reason))
		}
	}
	for _, sp := range listing.Report.Savepoints {
		if !sp.Completed {
			continue
		}
		path := strings.TrimRight(sp.Path, "/")
		row := SavepointRow{Path: path, Job: lineage[path], Files: sp.Usage.Files, Bytes: sp.Usage.Bytes, Written: sp.Written}
		if e, ok := entries[path]; ok {
			row.JobID, row.Trigger, row.RunID, row.Format, row.FlinkVersion = e.JobID, e.Trigger, e.RunID, e.Format, e.FlinkVersion
		}
		if d, ok := drills[path]; ok {
			row.Drill = &d
		}
		if r, ok := rehearsals[path]; ok {
			row.Rehearsal = &r
		}
		if r, ok := failed[path]; ok {
			row.FailedRestore = &FailedRestoreHold{FailedRestoreRecord: r, HeldUntil: r.LastSeen.Add(a.sources().failedRestoreHold())}
		}
		for _, t := range tenants {
			if strings.HasPrefix(path, strings.TrimRight(t.Root, "/")+"/") {
				row.Tenant = t.Name
			}
		}
		if in.Unknown && row.Job != "" || in.Job != "" && !strings.HasSuffix(row.Job, "/"+wantCluster+"/"+wantName) {
			continue
		}
		res.Savepoints = append(res.Savepoints, row)
	}
	sort.Slice(res.Savepoints, func(i, j int) bool {
		if !res.Savepoints[i].Written.Equal(res.Savepoints[j].Written) {
			return res.Savepoints[i].Written.Before(res.Savepoints[j].Written)
		}
		return res.Savepoints[i].Path < res.Savepoints[j].Path
	})
	return res, nil
}

// AdoptSavepoints catalogues savepoints under the logical job cluster/name,
// bringing them under retention: each must be a completed savepoint (its
// _metadata parses) under the root of the cluster's tenant. A savepoint
// catalogued for another job is refused unless Force is set. Nothing is
// written unless every path passes.
func (a *Activities) AdoptSavepoints(ctx context.Context, in AdoptSavepointsInput) (AdoptSavepointsResult, error) {
	if a.Inventory == nil || a.Storage == nil {
		return AdoptSavepointsResult{}, core.NonRetryable(core.ErrTypeInventory, "worker has no inventory source or storage configured")
	}
	clusterID, name, ok := core.SplitJob(in.Job)
	if !ok {
		return AdoptSavepointsResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "job %q: want <cluster>/<job name>, such as cluster-a/orders", in.Job)
	}
	if len(in.Paths) == 0 {
		return AdoptSavepointsResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "no savepoint paths given: name the savepoint directories to adopt")
	}
	inv, err := a.Inventory.Discover(ctx)
	if err != nil {
		return AdoptSavepointsResult{}, core.Classify("discover inventory", err)
	}
	var tenant *inventory.Tenant
	for _, c := range inv.Clusters {
		if c.ClusterID != clusterID {
			continue
		}
		for i := range inv.Tenants {
			if inv.Tenants[i].Name == c.Tenant {
				tenant = &inv.Tenants[i]
			}
		}
	}
	if tenant == nil || tenant.Root == "" {
		return AdoptSavepointsResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "job %q: cluster %s is not in the inventory (or its tenant has no root)", in.Job, clusterID)
	}
	tfs, troot, err := a.Storage.Resolve(ctx, tenant.Root)
	if err != nil {
		return AdoptSavepointsResult{}, core.Classify("resolve tenant root "+tenant.Root, err)
	}
	store := catalog.Store{FS: tfs, Root: troot}
	job := catalog.LogicalJob{Tenant: tenant.Name, Cluster: clusterID, Job: name}
	var entries []catalog.Entry
	for _, raw := range in.Paths {
		path := strings.TrimRight(raw, "/")
		fs, p, err := a.Storage.Resolve(ctx, path)
		if err != nil {
			return AdoptSavepointsResult{}, core.Classify("resolve "+path, err)
		}
		if fs.URI().String() != tfs.URI().String() || !strings.HasPrefix(p, strings.TrimRight(troot, "/")+"/") {
			return AdoptSavepointsResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "savepoint %s is not under the root %s of tenant %s (cluster %s)", path, tenant.Root, tenant.Name, clusterID)
		}
		res, found, err := cleanup.ReadMetadata(ctx, fs, strings.TrimRight(p, "/")+"/"+layout.MetadataFileName)
		if err != nil {
			return AdoptSavepointsResult{}, core.Classify("read the _metadata of "+path, err)
		}
		if !found || res.Refs == nil {
			why := "it has no _metadata"
			if found {
				why = "its _metadata does not parse: " + res.Error
			}
			return AdoptSavepointsResult{}, core.NonRetryable(core.ErrTypeSavepointInvalid, "savepoint %s cannot be adopted: %s", path, why)
		}
		var files, bytes int64
		if err := fs.Walk(ctx, p, func(fi storage.FileInfo) error {
			if !fi.IsDir {
				files++
				bytes += fi.Size
			}
			return nil
		}); err != nil {
			return AdoptSavepointsResult{}, core.Classify("walk "+path, err)
		}
		entries = append(entries, catalog.Entry{Path: core.FullPath(fs, p), Job: job, Trigger: catalog.TriggerAdopted, Files: files, Bytes: bytes, RecordedAt: core.Now(a.Now).UTC()})
	}
	// Refuse before writing anything: a conflict anywhere stops the lot.
	if !in.Force {
		current, err := store.List(ctx)
		if err != nil {
			return AdoptSavepointsResult{}, core.Classify("read the savepoint catalog of tenant "+tenant.Name, err)
		}
		for _, e := range entries {
			for _, c := range current {
				if c.Path == e.Path && c.Job != e.Job {
					return AdoptSavepointsResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "savepoint %s is catalogued for %s; use --force to assign it to %s", e.Path, c.Job, e.Job)
				}
			}
		}
	}
	var out AdoptSavepointsResult
	for _, e := range entries {
		if err := store.Put(ctx, e, in.Force); err != nil {
			if errors.Is(err, catalog.ErrConflict) || errors.Is(err, catalog.ErrInvalid) {
				return out, core.NonRetryable(core.ErrTypeInvalidInput, "%v", err)
			}
			return out, core.Classify("write the savepoint catalog of tenant "+tenant.Name, err)
		}
		out.Adopted = append(out.Adopted, SavepointRow{Path: e.Path, Tenant: tenant.Name, Job: job.String(), Trigger: e.Trigger, Files: e.Files, Bytes: e.Bytes})
	}
	return out, nil
}
