package governance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"sort"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// Operations reported to GovernanceMetrics.Succeeded.
const (
	OpPlanCleanup    = "plan"
	OpExecuteCleanup = "execute"
	OpPurgeTrash     = "purge"
	OpRestoreTrash   = "restore"
)

// maxPlanBytes bounds a plan read back from storage.
const maxPlanBytes = 1 << 30

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// CheckRunID reports whether id can name a cleanup run (plan directory,
// trash directory and audit manifest).
func CheckRunID(id string) error {
	if !runIDPattern.MatchString(id) {
		return fmt.Errorf("run id %q: want 1-128 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit", id)
	}
	return nil
}

// PlanCleanup plans a reference-safe cleanup of the scope: it reads the
// inventory and every live job's restore point and in-flight checkpoint
// from Flink, lists the checkpoint, savepoint and HA roots of the clusters
// in scope and, when Kubernetes is configured, the leftover Flink objects
// in the namespaces of the tenants in scope, and builds the plan. The
// whole plan goes to storage as JSON; only a summary and the plan's path
// and hash go through history.
func (a *Activities) PlanCleanup(ctx context.Context, in PlanCleanupInput) (PlanCleanupResult, error) {
	if a.Inventory == nil || a.Flink == nil || a.Storage == nil {
		return PlanCleanupResult{}, core.NonRetryable(core.ErrTypeInventory, "worker has no inventory source, Flink client or storage configured")
	}
	if a.Cleanup.PlanDir == "" {
		return PlanCleanupResult{}, core.NonRetryable(core.ErrTypeCleanupNotConfigured, "worker config cleanup.planDir is empty: set a directory under storage.writableRoots for plans and reports")
	}
	if err := CheckRunID(in.RunID); err != nil {
		return PlanCleanupResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "%v", err)
	}
	pol := in.Policy.ApplyDefaults()
	if err := pol.Validate(); err != nil {
		return PlanCleanupResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "%v", err)
	}
	inv, err := core.Discover(ctx, a.Inventory)
	if err != nil {
		return PlanCleanupResult{}, err
	}
	var notes []string
	fs, roots, tenants, err := a.scopeRoots(ctx, inv, in.Scope, &notes)
	if err != nil {
		return PlanCleanupResult{}, err
	}
	namespaces := orphanNamespaces(a.Orphans, inv, in.Scope)
	if len(roots) == 0 && len(namespaces) == 0 {
		msg := fmt.Sprintf("scope (tenants %v, clusters %v) selects no existing checkpoint, savepoint or HA directory in the inventory", in.Scope.Tenants, in.Scope.Clusters)
		if a.Orphans != nil {
			msg += ", and no Kubernetes namespace"
		}
		return PlanCleanupResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "%s", msg)
	}
	activity.RecordHeartbeat(ctx, "inventory")

	var listing cleanup.Listing
	switch {
	case len(in.Listings) > 0:
		// Gathered in parts by GatherCleanup, maybe on other workers.
		if listing, err = a.loadListing(ctx, in.RunID, in.Listings, roots); err != nil {
			return PlanCleanupResult{}, err
		}
		activity.RecordHeartbeat(ctx, "listing read")
	case len(roots) > 0:
		started := core.Now(a.Now)
		listing, err = cleanup.Gather(ctx, fs, roots, cleanup.GatherOptions{})
		if err != nil {
			return PlanCleanupResult{}, core.Classify("list the roots in scope", err)
		}
		listing.StartedAt = started
		activity.RecordHeartbeat(ctx, "listed")
	}
	refs, err := a.sources().referenceMetadata(ctx)
	if err != nil {
		return PlanCleanupResult{}, err
	}
	refRoots, err := a.sources().referenceRootsOn(ctx, fs, &notes)
	if err != nil {
		return PlanCleanupResult{}, err
	}
	// Live jobs are read after the listing, so a checkpoint that started
	// before it is known to the planner as in progress or completed.
	live, liveNotes, err := a.sources().liveInventory(ctx, inv)
	if err != nil {
		return PlanCleanupResult{}, err
	}
	notes = append(notes, liveNotes...)
	var spellings cleanup.Spellings
	if fs != nil {
		var tenantRoots []string
		for _, t := range tenants {
			tenantRoots = append(tenantRoots, t.Root)
		}
		base := fs.URI().String()
		prefixes := cleanup.ForeignPrefixes(base, listing, live, tenantRoots)
		prefixes = append(prefixes, cleanup.ForeignPrefixes(base, cleanup.Listing{Metadata: refs}, cleanup.Live{}, nil)...)
		if spellings, err = a.sources().spellings(ctx, base, prefixes); err != nil {
			return PlanCleanupResult{}, err
		}
	}
	objects, err := a.findObjects(ctx, inv, in.Scope, namespaces)
	if err != nil {
		return PlanCleanupResult{}, err
	}
	history := a.lineage().JobHistory(ctx, inv)
	owners, err := a.lineage().Owners(ctx, inv, tenants, listing, live.Records, history, &notes)
	if err != nil {
		return PlanCleanupResult{}, err
	}
	a.recordJobs(ctx, tenants, history, listing, &notes)
	a.compactCatalogs(ctx, tenants, listing, &notes)
	drilled, err := a.drilledSavepoints(ctx, tenants, &notes)
	if err != nil {
		return PlanCleanupResult{}, err
	}
	plan, err := cleanup.BuildPlan(cleanup.Input{Now: core.Now(a.Now), Listing: listing, Live: live, Tenants: tenants, Policy: pol, Objects: objects,
		Spellings: spellings, References: refs, ReferenceRoots: refRoots, RetiredClusters: inv.RetiredClusters, Lineage: owners.Lineage,
		SavepointJobIDs: owners.JobIDs, JobLineage: owners.Jobs, Drilled: drilled, ReadOnlyKubeClusters: a.ReadOnlyKubeClusters})
	if err != nil {
		return PlanCleanupResult{}, core.Classify("plan", err)
	}
	s := summarizePlan(plan)
	planPath, sum, shards, err := a.writePlan(ctx, in, plan)
	if err != nil {
		return PlanCleanupResult{}, err
	}
	s.RunID, s.PlanPath, s.PlanSHA256, s.Notes, s.ScopeTenants, s.Shards = in.RunID, planPath, sum, notes, tenants, shards
	if a.Metrics != nil {
		for _, t := range s.Tenants {
			a.Metrics.CleanupPlanned(t.Tenant, t.Files, t.Bytes, t.Unparseable)
			a.Metrics.CleanupObjectsPlanned(t.Tenant, t.Objects)
		}
		a.Metrics.Succeeded(OpPlanCleanup, core.Now(a.Now))
		a.Metrics.SucceededFor(OpPlanCleanup, core.TenantNames(tenants), core.Now(a.Now))
	}
	activity.GetLogger(ctx).Info("cleanup planned", "run", in.RunID, "plan", planPath, "items", s.Items, "files", s.Files, "bytes", s.Bytes, "objects", s.Objects)
	return PlanCleanupResult{Summary: s}, nil
}

// writePlan writes plan under the plan dir: as one plan.json, or, with
// in.ShardItems set, as a header plan.json that names and hashes the
// shards written beside it first. It returns the path and hash of
// plan.json, which cover the whole plan, and the number of shards.
func (a *Activities) writePlan(ctx context.Context, in PlanCleanupInput, plan cleanup.Plan) (string, string, int, error) {
	if in.ShardItems < 0 {
		return "", "", 0, core.NonRetryable(core.ErrTypeInvalidInput, "shard size %d: want 0 (one plan document) or more", in.ShardItems)
	}
	dir := strings.TrimRight(a.Cleanup.PlanDir, "/") + "/" + in.RunID
	header := plan
	if in.ShardItems > 0 {
		var err error
		header, err = cleanup.Shard(plan, in.ShardItems, func(f cleanup.ShardFile) error {
			if _, err := (core.Documents{Storage: a.Storage}).WriteDocument(ctx, core.WriteDocumentInput{Path: dir + "/" + f.Name, Content: f.Content}); err != nil {
				return err
			}
			activity.RecordHeartbeat(ctx, "plan "+f.Name)
			return nil
		})
		if err != nil {
			// A failed write comes back as WriteDocument classified it.
			return "", "", 0, core.Classify("shard plan", err)
		}
	}
	data, err := json.Marshal(header)
	if err != nil {
		return "", "", 0, core.NonRetryable(core.ErrTypeInvalidInput, "encode plan: %v", err)
	}
	sum := sha256.Sum256(data)
	planPath := dir + "/plan.json"
	if _, err := (core.Documents{Storage: a.Storage}).WriteDocument(ctx, core.WriteDocumentInput{Path: planPath, Content: data}); err != nil {
		return "", "", 0, err
	}
	return planPath, hex.EncodeToString(sum[:]), len(header.Shards), nil
}

// scopeRoots returns the storage roots of the clusters in scope, the file
// system they are on (nil without roots; see cleanup.ScanRoots), and the
// tenants in scope.
func (a *Activities) scopeRoots(ctx context.Context, inv inventory.Inventory, scope core.Scope, notes *[]string) (storage.FileSystem, []layout.Root, []inventory.Tenant, error) {
	var clusters []inventory.Cluster
	tenantsInScope := map[string]bool{}
	for _, c := range inv.Clusters {
		if core.InScope(scope.Tenants, c.Tenant) && core.InScope(scope.Clusters, c.ClusterID) {
			clusters = append(clusters, c)
			tenantsInScope[c.Tenant] = true
		}
	}
	fs, roots, rootNotes, err := cleanup.ScanRoots(ctx, a.Storage.Resolve, clusters)
	if err != nil {
		return nil, nil, nil, core.Classify("roots in scope", err)
	}
	*notes = append(*notes, rootNotes...)
	var tenants []inventory.Tenant
	for _, t := range inv.Tenants {
		if tenantsInScope[t.Name] {
			tenants = append(tenants, t)
		}
	}
	sort.Slice(tenants, func(i, j int) bool { return tenants[i].Name < tenants[j].Name })
	return fs, roots, tenants, nil
}

// summarizePlan turns the planner's summary into the small, ordered form
// that travels through history.
func summarizePlan(plan cleanup.Plan) PlanSummary {
	s := PlanSummary{CreatedAt: plan.CreatedAt, Action: string(plan.Policy.Action), LiveJobs: len(plan.LiveJobs), KeptItems: len(plan.Keep)}
	for _, r := range plan.Roots {
		s.Roots = append(s.Roots, r.Path)
	}
	for _, ts := range plan.Summary {
		tp := TenantPlan{Tenant: ts.Tenant, Items: ts.Reclaim.Items, Files: ts.Reclaim.Files, Dirs: ts.Reclaim.Dirs, Bytes: ts.Reclaim.Bytes}
		for rule, t := range ts.ByRule {
			tp.ByRule = append(tp.ByRule, RuleTotals{Rule: string(rule), Items: t.Items, Files: t.Files, Dirs: t.Dirs, Bytes: t.Bytes})
		}
		for reason, t := range ts.KeptItems {
			tp.Kept = append(tp.Kept, RuleTotals{Rule: string(reason), Items: t.Items, Files: t.Files, Dirs: t.Dirs, Bytes: t.Bytes})
			if reason == cleanup.KeepUnparseable || reason == cleanup.KeepUnparseableInScope {
				tp.Unparseable += t.Items
			}
		}
		if o := ts.Objects; o != nil {
			tp.Items += o.Planned
			tp.Objects = o.Planned
			for rule, n := range o.ByRule {
				tp.ByRule = append(tp.ByRule, RuleTotals{Rule: string(rule), Items: n})
			}
			for _, n := range o.Kept {
				tp.KeptObjects += n
			}
		}
		sort.Slice(tp.ByRule, func(i, j int) bool { return tp.ByRule[i].Rule < tp.ByRule[j].Rule })
		sort.Slice(tp.Kept, func(i, j int) bool { return tp.Kept[i].Rule < tp.Kept[j].Rule })
		s.Items += tp.Items
		s.Objects += tp.Objects
		s.Files += tp.Files
		s.Dirs += tp.Dirs
		s.Bytes += tp.Bytes
		s.Tenants = append(s.Tenants, tp)
	}
	sort.Slice(s.Tenants, func(i, j int) bool { return s.Tenants[i].Tenant < s.Tenants[j].Tenant })
	for i, it := range plan.Delete {
		if i == MaxPlanSample {
			s.Truncated = true
			break
		}
		s.Sample = append(s.Sample, PlanItemBrief{Path: it.Path, Kind: string(it.Kind), Rule: string(it.Rule), Tenant: it.Tenant, Files: it.Files, Bytes: it.Bytes})
	}
	s.KeptObjects = len(plan.KeepObjects)
	s.ObjectSample, s.ObjectSampleTruncated = objectSample(plan)
	return s
}

// PurgeTrash removes trash runs older than the TTL from the worker's trash
// root and records them in a purge manifest.
func (a *Activities) PurgeTrash(ctx context.Context, in PurgeTrashInput) (PurgeTrashResult, error) {
	if a.Storage == nil {
		return PurgeTrashResult{}, core.NonRetryable(core.ErrTypeStorage, "worker has no storage configured")
	}
	if a.Cleanup.TrashRoot == "" {
		return PurgeTrashResult{}, core.NonRetryable(core.ErrTypeCleanupNotConfigured, "worker config cleanup.trashRoot is empty: nothing to purge")
	}
	if in.TTL <= 0 {
		return PurgeTrashResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "purge ttl %v: want a positive duration such as 168h", in.TTL)
	}
	fs, p, err := a.Storage.Resolve(ctx, a.Cleanup.TrashRoot)
	if err != nil {
		return PurgeTrashResult{}, core.Classify("resolve cleanup.trashRoot "+a.Cleanup.TrashRoot, err)
	}
	audit := ""
	if a.Cleanup.AuditRoot != "" {
		_, ap, err := a.Storage.Resolve(ctx, a.Cleanup.AuditRoot)
		if err != nil {
			return PurgeTrashResult{}, core.Classify("resolve cleanup.auditRoot "+a.Cleanup.AuditRoot, err)
		}
		audit = ap
	}
	if a.Inventory == nil || a.Flink == nil {
		return PurgeTrashResult{}, core.NonRetryable(core.ErrTypeInventory,
			"worker has no inventory source or Flink client configured: which jobs restore from the trash cannot be told, so nothing is purged")
	}
	inv, err := core.Discover(ctx, a.Inventory)
	if err != nil {
		return PurgeTrashResult{}, err
	}
	// A trash inside a tenant's tree, or holding one, would purge state.
	trash := strings.TrimRight(p, "/")
	for _, t := range inv.Tenants {
		if t.Root == "" {
			continue
		}
		tfs, tp, err := a.Storage.Resolve(ctx, t.Root)
		if err != nil {
			return PurgeTrashResult{}, core.Classify("resolve tenant root "+t.Root, err)
		}
		if !core.Nested(trash, tp) {
			continue
		}
		// A spelling that cannot be told apart from the trash's counts as
		// the same file system, as for the drill root.
		if same, err := a.Storage.CompareFileSystems(ctx, fs.URI().String(), tfs.URI().String()); err != nil || same != storage.DifferentFileSystem {
			return PurgeTrashResult{}, core.NonRetryable(core.ErrTypeCleanupNotConfigured, "cleanup.trashRoot=%q overlaps the root %s of tenant %s: a purge would remove its state; move the trash outside every tenant's tree",
				a.Cleanup.TrashRoot, t.Root, t.Name)
		}
	}
	needed := func(ctx context.Context) (map[string]string, error) {
		n, err := a.restoreNeeds(ctx, inv)
		if err != nil {
			return nil, err
		}
		// A job restored from a trash path that stopped since is in no
		// cluster's list, but its retained checkpoints name the trash.
		retained, err := a.retainedMetadata(ctx, inv)
		if err != nil {
			return nil, err
		}
		maps.Copy(n, cleanup.TrashReferences(retained, trash))
		return n, nil
	}
	out, err := cleanup.PurgeTrash(ctx, cleanup.PurgeConfig{FS: fs, TrashRoot: p, AuditRoot: audit, TTL: in.TTL, Now: core.Now(a.Now), Needed: needed})
	if err != nil {
		return PurgeTrashResult{}, core.Classify("purge trash", err)
	}
	res := PurgeTrashResult{Manifest: out.Manifest, Kept: len(out.Kept)}
	for _, r := range out.Refused {
		res.Refused = append(res.Refused, r.Path+": "+r.Detail)
		activity.GetLogger(ctx).Warn("trash run not purged: a restore source needs it", "run", r.Path, "by", r.Detail)
	}
	for _, r := range out.Purged {
		res.Purged = append(res.Purged, r.Path)
		res.Files += r.Files
		res.Bytes += r.Bytes
	}
	if a.Metrics != nil {
		a.Metrics.Succeeded(OpPurgeTrash, core.Now(a.Now))
	}
	return res, nil
}

// retainedMetadata reads the _metadata of every retained checkpoint and
// savepoint under the checkpoint and savepoint roots of every inventory
// cluster and under the reference roots, each parsed or with why not. A
// root that does not exist holds none; one that cannot be read is an
// error.
func (a *Activities) retainedMetadata(ctx context.Context, inv inventory.Inventory) (map[string]cleanup.MetadataResult, error) {
	out, err := a.sources().referenceMetadata(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, c := range inv.Clusters {
		for _, r := range []struct {
			dir  string
			kind layout.RootKind
		}{{c.CheckpointDir, layout.CheckpointRoot}, {c.SavepointDir, layout.SavepointRoot}} {
			if r.dir == "" {
				continue
			}
			fs, p, err := a.Storage.Resolve(ctx, r.dir)
			if err != nil {
				return nil, core.Classify("resolve "+r.kind.String()+" "+r.dir+" of cluster "+c.ClusterID, err)
			}
			p = strings.TrimRight(p, "/")
			key := fs.URI().String() + " " + r.kind.String() + " " + p
			if seen[key] {
				continue
			}
			seen[key] = true
			_, err = fs.Stat(ctx, p)
			if errors.Is(err, storage.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, core.Classify("stat "+p, err)
			}
			l, err := cleanup.Gather(ctx, fs, []layout.Root{{Path: p, Kind: r.kind}}, cleanup.GatherOptions{ReferencesOnly: true})
			if err != nil {
				return nil, core.Classify("read the retained _metadata under "+r.dir, err)
			}
			maps.Copy(out, l.Metadata)
			activity.RecordHeartbeat(ctx, "retained snapshots under "+r.dir)
		}
	}
	return out, nil
}

// restoreNeeds reads, from every inventory cluster, what could restore
// now: each live job's restore point and latest checkpoint and every file
// their _metadata name, and the snapshots the operator's records name,
// each with who needs it. A live job whose snapshot's _metadata cannot be
// read is an error: what it names cannot be told.
func (a *Activities) restoreNeeds(ctx context.Context, inv inventory.Inventory) (map[string]string, error) {
	live, _, err := a.sources().liveInventory(ctx, inv)
	if err != nil {
		return nil, err
	}
	if why := live.UnknownRestore(); why != "" {
		// A source that cannot be read may name anything in the trash.
		return nil, fmt.Errorf("%s", why)
	}
	needed := map[string]string{}
	for _, c := range live.Clusters {
		for _, j := range c.Jobs {
			for what, p := range map[string]string{"restore point": j.RestorePath, "latest checkpoint": j.LatestCheckpoint} {
				if p != "" {
					needed[p] = fmt.Sprintf("%s of live job %s on cluster %s", what, j.JobID, c.ClusterID)
				}
			}
		}
	}
	for path, m := range live.Metadata {
		if m.Error != "" {
			return nil, fmt.Errorf("%s of a live job cannot be read (%s): what it names cannot be told", path, m.Error)
		}
		if m.Refs == nil {
			continue
		}
		for _, f := range append(append([]string(nil), m.Refs.Files...), m.Refs.ManagedDirs...) {
			needed[f] = "named by " + path
		}
	}
	for _, r := range live.Records {
		needed[r.Path] = r.By
	}
	return needed, nil
}
