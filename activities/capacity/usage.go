package capacity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
	"github.com/flinkmaint/flinkmaint/internal/usage"
)

// OpTenantUsage is reported to GovernanceMetrics.Succeeded.
const OpTenantUsage = "usage"

// TenantUsageInput selects tenants (all when empty) and how many top
// offenders to name per tenant.
type TenantUsageInput struct {
	Tenants []string `json:"tenants,omitempty"`
	// Top is how many logical jobs to name as top offenders; 0 means
	// usage.DefaultTop.
	Top int `json:"top,omitempty"`
	// OmitJobs leaves the per-job rows out of the result (the governance
	// report shows kinds and top offenders only); the sample keeps them.
	OmitJobs bool `json:"omitJobs,omitempty"`
}

// Validate returns every problem, each naming the field and what is valid.
func (in TenantUsageInput) Validate() error {
	var errs []error
	if in.Top < 0 || in.Top > usage.MaxTop {
		errs = append(errs, fmt.Errorf("top=%d: use 1 to %d (0 takes the default %d)", in.Top, usage.MaxTop, usage.DefaultTop))
	}
	for i, t := range in.Tenants {
		if strings.TrimSpace(t) == "" {
			errs = append(errs, fmt.Errorf("tenants[%d] is empty: name a tenant of the inventory", i))
		}
	}
	return errors.Join(errs...)
}

// TenantUsageResult is one report per tenant, by tenant name.
type TenantUsageResult struct {
	Tenants []usage.Report `json:"tenants"`
	Notes   []string       `json:"notes,omitempty"`
}

// TenantUsage walks each tenant root once and tells, per kind (checkpoints,
// shared, taskowned, savepoints, HA, trash, flinkmaint, structure,
// unknown) and per logical job, the files, directories and bytes stored
// and their growth since the previous sample, which it then replaces
// (<tenant root>/.flinkmaint/usage/latest.json). Job ids are told from
// every cluster's job history and the savepoint catalog, savepoints by
// their lineage.
func (a *Activities) TenantUsage(ctx context.Context, in TenantUsageInput) (TenantUsageResult, error) {
	if a.Inventory == nil || a.Storage == nil {
		return TenantUsageResult{}, core.NonRetryable(core.ErrTypeInventory, "worker has no inventory source or storage configured")
	}
	if err := in.Validate(); err != nil {
		return TenantUsageResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "%v", err)
	}
	inv, err := core.Discover(ctx, a.Inventory)
	if err != nil {
		return TenantUsageResult{}, err
	}
	tenants, err := selectTenants(inv, in.Tenants)
	if err != nil {
		return TenantUsageResult{}, err
	}
	var res TenantUsageResult
	type walked struct {
		tenant inventory.Tenant
		fs     storage.FileSystem
		root   string
		tree   usage.Tree
	}
	var trees []walked
	var listing cleanup.Listing
	for _, t := range tenants {
		if t.Root == "" {
			res.Notes = append(res.Notes, fmt.Sprintf("tenant %s has no root in the inventory: nothing to walk", t.Name))
			continue
		}
		fs, root, err := a.Storage.Resolve(ctx, t.Root)
		if err != nil {
			return res, core.Classify("resolve the root of tenant "+t.Name+" "+t.Root, err)
		}
		lay, err := a.usageLayout(ctx, inv, fs, root)
		if err != nil {
			return res, err
		}
		tree, err := usage.Walk(ctx, fs, lay, func(n int64) {
			activity.RecordHeartbeat(ctx, fmt.Sprintf("tenant %s: %d entries walked", t.Name, n))
		})
		if errors.Is(err, storage.ErrNotFound) {
			res.Notes = append(res.Notes, fmt.Sprintf("root %s of tenant %s does not exist: nothing stored", t.Root, t.Name))
			continue
		}
		if err != nil {
			return res, core.Classify("walk the root of tenant "+t.Name, err)
		}
		trees = append(trees, walked{tenant: t, fs: fs, root: root, tree: tree})
		listing.Report.Savepoints = append(listing.Report.Savepoints, tree.Savepoints...)
	}
	history := a.lineage().JobHistory(ctx, inv)
	jobIDs := jobsByID(history, &res.Notes)
	var walkedTenants []inventory.Tenant
	for _, w := range trees {
		walkedTenants = append(walkedTenants, w.tenant)
		entries, err := catalog.Store{FS: w.fs, Root: w.root}.List(ctx)
		if err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("savepoint catalog of tenant %s not readable (%v): its job ids are told from job history alone", w.tenant.Name, err))
		}
		for _, e := range entries {
			if e.JobID != "" && jobIDs[e.JobID] == "" {
				jobIDs[e.JobID] = e.Job.String()
			}
		}
	}
	owners, err := a.lineage().Owners(ctx, inv, walkedTenants, listing, nil, history, &res.Notes)
	if err != nil {
		return res, err
	}
	lineage := owners.Lineage
	for _, w := range trees {
		rep := usage.Summarize(w.tree, usage.Attribution{JobIDs: jobIDs, Savepoints: lineage},
			usage.Options{Tenant: w.tenant.Name, Root: w.tenant.Root, At: core.Now(a.Now).UTC(), Top: in.Top, Previous: a.previousSample(ctx, w.fs, w.root, w.tenant.Name, &res.Notes)})
		// The figures are the point, above all when the quota is full: a
		// sample that cannot be written only costs the next growth.
		if data, err := json.Marshal(rep.Sample()); err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("usage sample of tenant %s not encoded: %v", w.tenant.Name, err))
		} else if _, err := a.documents().WriteDocument(ctx, core.WriteDocumentInput{Path: usage.SamplePath(w.root), Content: data}); err != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("usage sample of tenant %s not saved (%v): the next run compares with an older sample, if any", w.tenant.Name, err))
		}
		if a.Metrics != nil {
			for _, k := range rep.Kinds {
				a.Metrics.UsageSampled(w.tenant.Name, string(k.Kind), k.Files, k.Bytes)
				a.Metrics.UsageNamespaceSampled(w.tenant.Name, string(k.Kind), k.Namespace())
			}
		}
		if in.OmitJobs {
			rep.Jobs = nil
		}
		res.Tenants = append(res.Tenants, rep)
	}
	if a.Metrics != nil {
		a.Metrics.Succeeded(OpTenantUsage, core.Now(a.Now))
		names := make([]string, 0, len(trees))
		for _, w := range trees {
			names = append(names, w.tenant.Name)
		}
		a.Metrics.SucceededFor(OpTenantUsage, names, core.Now(a.Now))
	}
	return res, nil
}

// selectTenants returns the named tenants (every tenant when none is
// named) by name; a name the inventory lacks is an error listing those it
// has.
func selectTenants(inv inventory.Inventory, names []string) ([]inventory.Tenant, error) {
	known := map[string]bool{}
	var all []string
	for _, t := range inv.Tenants {
		known[t.Name] = true
		all = append(all, t.Name)
	}
	sort.Strings(all)
	for _, n := range names {
		if !known[n] {
			return nil, core.NonRetryable(core.ErrTypeInvalidInput, "tenant %q is not in the inventory; its tenants are %s", n, strings.Join(all, ", "))
		}
	}
	var out []inventory.Tenant
	for _, t := range inv.Tenants {
		if core.InScope(names, t.Name) {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// usageLayout names the roots every inventory cluster configures (any
// tenant's: a root under this tenant's counts against its quota), the
// reference roots, and the cleanup trash, audit and plan directories, as
// paths of fs; those on other file systems are left out (the walk would
// not meet them).
func (a *Activities) usageLayout(ctx context.Context, inv inventory.Inventory, fs storage.FileSystem, root string) (usage.Layout, error) {
	lay := usage.Layout{Root: root}
	on := func(uri string) (string, bool, error) {
		rfs, p, err := a.Storage.Resolve(ctx, uri)
		if err != nil {
			return "", false, core.Classify("resolve "+uri, err)
		}
		return p, rfs.URI().String() == fs.URI().String(), nil
	}
	for _, c := range inv.Clusters {
		for _, r := range []layout.Root{{Path: c.CheckpointDir, Kind: layout.CheckpointRoot}, {Path: c.SavepointDir, Kind: layout.SavepointRoot}, {Path: c.HAStorageDir, Kind: layout.HARoot}} {
			if r.Path == "" {
				continue
			}
			p, same, err := on(r.Path)
			if err != nil {
				return lay, err
			}
			if same {
				lay.Roots = append(lay.Roots, layout.Root{Path: p, Kind: r.Kind})
			}
		}
	}
	for _, r := range a.Cleanup.ReferenceRoots {
		if p, same, err := on(r); err != nil {
			return lay, err
		} else if same {
			lay.Roots = append(lay.Roots, layout.Root{Path: p, Kind: layout.CheckpointRoot})
		}
	}
	for _, d := range []struct {
		uri string
		own bool
	}{{a.Cleanup.TrashRoot, false}, {a.Cleanup.AuditRoot, false}, {a.Cleanup.PlanDir, true}} {
		if d.uri == "" {
			continue
		}
		p, same, err := on(d.uri)
		switch {
		case err != nil:
			return lay, err
		case same && d.own:
			lay.Own = append(lay.Own, p)
		case same:
			lay.Trash = append(lay.Trash, p)
		}
	}
	return lay, nil
}

// jobsByID maps the job ids every inventory cluster lists (running jobs
// and its job history) to their logical job. A cluster that does not
// answer is noted: its jobs' checkpoints stay unattributed.
func jobsByID(history core.JobHistoryRead, notes *[]string) map[string]string {
	for _, u := range history.Unread {
		*notes = append(*notes, fmt.Sprintf("jobs of cluster %s not readable (%v): their checkpoints count as unattributed", u.Cluster, u.Err))
	}
	out := map[string]string{}
	for _, r := range history.Runs {
		out[r.Id] = r.Job.String()
	}
	return out
}

// previousSample reads the tenant's last sample; none, or one that cannot
// be read (noted), means no growth this time.
func (a *Activities) previousSample(ctx context.Context, fs storage.FileSystem, root, tenant string, notes *[]string) *usage.Sample {
	data, err := fs.ReadFile(ctx, usage.SamplePath(root), usage.MaxSampleBytes)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err == nil {
		var s usage.Sample
		if s, err = usage.DecodeSample(data); err == nil {
			return &s
		}
	}
	*notes = append(*notes, fmt.Sprintf("previous usage sample of tenant %s not readable (%v): no growth this time", tenant, err))
	return nil
}
