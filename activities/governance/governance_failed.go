package governance

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

func (s restoreSources) failedRestoreHold() time.Duration {
	if s.Cleanup.FailedRestoreHold > 0 {
		return s.Cleanup.FailedRestoreHold
	}
	return cleanup.DefaultFailedRestoreHold
}

// failedRestores remembers every snapshot a job was just seen FAILED
// restoring from (seen, as Flink spells it) in the failed-restore records
// of the tenant whose root holds it, and adds each snapshot those records
// name to live as a record for the hold after it was last seen so: a
// session cluster forgets a FAILED job after jobstore.expiration-time and
// an application cluster shuts down, while its team retries from the same
// snapshot.
//
// A snapshot that cannot be recorded is still kept by its job while the
// cluster lists it, and said. A record that cannot be read may name any
// snapshot, so it is an unknown source (nothing is planned until it is
// repaired or removed); records that cannot be listed fail the read.
func (s restoreSources) failedRestores(ctx context.Context, inv inventory.Inventory, seen []catalog.FailedRestoreRecord, live *cleanup.Live) ([]string, error) {
	roots, err := s.lineage().TenantRoots(ctx, inv.Tenants)
	if err != nil {
		return nil, err
	}
	now := core.Now(s.Now).UTC()
	var notes []string
	listed := map[string]bool{} // snapshots a listed FAILED job keeps as its restore point
	for _, r := range seen {
		where := "failed job " + r.JobID + " on " + r.Cluster
		q, err := s.lineage().Qualify(ctx, r.Snapshot)
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: its restore point %s is not recorded (%v): kept while the cluster lists the job, not after", where, r.Snapshot, err))
			continue
		}
		listed[q] = true
		root, ok := s.rootHolding(ctx, roots, q)
		if !ok {
			notes = append(notes, fmt.Sprintf("%s: its restore point %s lies under no tenant root, so it is not recorded: kept while the cluster lists the job, then judged by the other rules", where, q))
			continue
		}
		r.Snapshot, r.FirstSeen, r.LastSeen = q, time.Time{}, now
		if _, err := (catalog.FailedRestoreStore{FS: root.Store.FS, Root: root.Store.Root}).Seen(ctx, r); err != nil {
			notes = append(notes, fmt.Sprintf("%s: its restore point %s is not recorded in the failed-restore records of tenant %s (%v): kept while the cluster lists the job; once it forgets the job, only the records of an earlier plan hold it", where, q, root.Tenant, err))
		}
	}
	hold := s.failedRestoreHold()
	for _, root := range roots {
		recs, rejected, err := catalog.FailedRestoreStore{FS: root.Store.FS, Root: root.Store.Root}.Claims(ctx)
		if err != nil {
			return nil, core.Classify("failed-restore records of tenant "+root.Tenant, err)
		}
		for _, rj := range rejected {
			live.UnknownSources = append(live.UnknownSources, "failed-restore record "+rj.File+" of tenant "+root.Tenant+": "+rj.Reason)
			notes = append(notes, fmt.Sprintf("failed-restore record %s of tenant %s cannot be read (%s): it may name any snapshot a failed job is retried from, so no snapshot is planned until it is repaired or removed", rj.File, root.Tenant, rj.Reason))
		}
		for _, r := range recs {
			by := "failed job " + r.JobID + " on " + r.Cluster
			if r.Job.Valid() {
				by += " (" + r.Job.String() + ")"
			}
			if !s.underRoot(ctx, root, r.Snapshot) {
				notes = append(notes, fmt.Sprintf("the failed-restore records of tenant %s name %s for %s, outside the tenant's root %s: a claim the tenant cannot make, rejected", root.Tenant, r.Snapshot, by, root.Root))
				continue
			}
			until := r.LastSeen.Add(hold)
			if !now.Before(until) {
				notes = append(notes, fmt.Sprintf("%s was last seen FAILED restoring from %s at %s; cleanup.failedRestoreHold %s has passed, so the other rules judge it", by, r.Snapshot, r.LastSeen.UTC().Format(time.RFC3339), hold))
				continue
			}
			if listed[r.Snapshot] {
				continue // its job is listed: kept as its restore point
			}
			read := map[string]cleanup.MetadataResult{}
			found, err := s.readLiveMetadata(ctx, r.Snapshot, read)
			if err != nil {
				return nil, err
			}
			if !found {
				notes = append(notes, fmt.Sprintf("%s was seen FAILED restoring from %s, which no longer exists; its record goes at the next compaction", by, r.Snapshot))
				continue
			}
			unreadable := false
			for k, m := range read {
				if m.Error != "" {
					// As for a listed failed job: a retry would fail the same way.
					notes = append(notes, fmt.Sprintf("%s was seen FAILED restoring from %s, whose %s cannot be read (%s): a retry would fail the same way; not kept for it", by, r.Snapshot, k, m.Error))
					unreadable = true
				}
			}
			if unreadable {
				continue
			}
			maps.Copy(live.Metadata, read)
			live.Records = append(live.Records, cleanup.LiveRecord{Path: r.Snapshot, FailedJob: r.JobID, Tenant: root.Tenant,
				By: fmt.Sprintf("%s, last seen FAILED restoring from it at %s (held until %s)", by, r.LastSeen.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))})
		}
		activity.RecordHeartbeat(ctx, "failed-restore records of "+root.Tenant)
	}
	return notes, nil
}

// rootHolding is the innermost tenant root that holds path.
func (s restoreSources) rootHolding(ctx context.Context, roots []core.TenantRoot, path string) (core.TenantRoot, bool) {
	for _, r := range roots {
		if s.underRoot(ctx, r, path) {
			return r, true
		}
	}
	return core.TenantRoot{}, false
}

// underRoot says whether path lies under the tenant root r, on its file
// system.
func (s restoreSources) underRoot(ctx context.Context, r core.TenantRoot, path string) bool {
	fs, p, err := s.Storage.Resolve(ctx, strings.TrimRight(path, "/"))
	return err == nil && fs.URI().String() == r.Fs && strings.HasPrefix(p, r.Root+"/")
}
