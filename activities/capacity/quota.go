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
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/quota"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// OpSampleQuota is the operation SampleQuota reports to
// GovernanceMetrics.Succeeded.
const OpSampleQuota = "sample"

// SampleQuota takes one usage sample of every tenant in scope (content
// summary of its root, watermark level) and, when asked, projects the
// restart of its running jobs against the headroom.
func (a *Activities) SampleQuota(ctx context.Context, in SampleQuotaInput) (SampleQuotaResult, error) {
	tenants := in.Tenants
	var restart []RestartFootprintInput
	if len(tenants) == 0 || in.ProjectRestart {
		if a.Inventory == nil {
			return SampleQuotaResult{}, core.NonRetryable(core.ErrTypeInventory, "worker has no inventory source configured")
		}
		if in.ProjectRestart {
			found, err := a.jobs().DiscoverJobs(ctx, core.DiscoverJobsInput{Scope: in.Scope})
			if err != nil {
				return SampleQuotaResult{}, err
			}
			if len(tenants) == 0 {
				tenants = found.Tenants
			}
			for _, j := range found.Jobs {
				dir := ""
				if j.CheckpointDir != "" {
					dir = strings.TrimRight(j.CheckpointDir, "/") + "/" + j.JobID
				}
				restart = append(restart, RestartFootprintInput{Key: j.Key, Tenant: j.Tenant, CheckpointDir: dir})
			}
		} else {
			inv, err := a.Inventory.Discover(ctx)
			if errors.Is(err, inventory.ErrInvalid) {
				return SampleQuotaResult{}, core.NonRetryable(core.ErrTypeInventory, "inventory is invalid: %v", err)
			}
			if err != nil {
				return SampleQuotaResult{}, core.Classify("discover inventory", err)
			}
			for _, t := range inv.Tenants {
				if core.InScope(in.Scope.Tenants, t.Name) {
					tenants = append(tenants, t)
				}
			}
		}
	}
	if len(tenants) == 0 {
		return SampleQuotaResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "scope tenants %v match no tenant of the inventory", in.Scope.Tenants)
	}
	sort.Slice(tenants, func(i, j int) bool { return tenants[i].Name < tenants[j].Name })
	q, err := a.CheckQuota(ctx, CheckQuotaInput{Tenants: tenants, WarningPercent: in.WarningPercent, CriticalPercent: in.CriticalPercent,
		Restart: restart, SafetyMargin: in.SafetyMargin})
	if err != nil {
		return SampleQuotaResult{}, err
	}
	res := SampleQuotaResult{At: core.Now(a.Now).UTC(), Tenants: q.Tenants}
	if a.Metrics != nil {
		for _, t := range q.Tenants {
			if t.NamespaceQuota > 0 {
				a.Metrics.QuotaSampled(t.Tenant, "namespace", 100*float64(t.NamespaceUsed)/float64(t.NamespaceQuota))
			}
			if t.SpaceQuota > 0 {
				a.Metrics.QuotaSampled(t.Tenant, "space", 100*float64(t.SpaceUsed)/float64(t.SpaceQuota))
			}
		}
		a.Metrics.Succeeded(OpSampleQuota, core.Now(a.Now))
		a.Metrics.SucceededFor(OpSampleQuota, core.TenantNames(tenants), core.Now(a.Now))
	}
	return res, nil
}

// LoadQuotaSamples reads the samples document a quota watch keeps on
// storage, so scheduled runs continue one series.
func (a *Activities) LoadQuotaSamples(ctx context.Context, in LoadQuotaSamplesInput) (LoadQuotaSamplesResult, error) {
	if a.Storage == nil {
		return LoadQuotaSamplesResult{}, core.NonRetryable(core.ErrTypeStorage, "worker has no storage configured")
	}
	fs, p, err := a.Storage.Resolve(ctx, in.Path)
	if err != nil {
		return LoadQuotaSamplesResult{}, core.Classify("resolve "+in.Path, err)
	}
	data, err := fs.ReadFile(ctx, p, 16<<20)
	if errors.Is(err, storage.ErrNotFound) {
		return LoadQuotaSamplesResult{}, nil
	}
	if err != nil {
		return LoadQuotaSamplesResult{}, core.Classify("read "+in.Path, err)
	}
	var doc QuotaSamplesDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		// A damaged series is replaced, not fatal: the next sample starts anew.
		activity.GetLogger(ctx).Warn("quota samples document unreadable; starting a new series", "path", in.Path, "error", err)
		return LoadQuotaSamplesResult{}, nil
	}
	return LoadQuotaSamplesResult{Doc: doc, Found: true}, nil
}

// CheckQuota reports each tenant root's quota use and watermark level, and
// when jobs are listed, projects their restart against the headroom.
func (a *Activities) CheckQuota(ctx context.Context, in CheckQuotaInput) (CheckQuotaResult, error) {
	if a.Storage == nil {
		return CheckQuotaResult{}, core.NonRetryable(core.ErrTypeStorage, "worker has no storage configured")
	}
	w := quota.Watermarks{Warning: in.WarningPercent, Critical: in.CriticalPercent}
	if err := w.Validate(); err != nil {
		return CheckQuotaResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "%v", err)
	}
	byTenant := map[string][]quota.JobFootprint{}
	var footprints []Footprint
	scans := map[string]*layout.Report{} // one scan per checkpoint root
	for _, r := range in.Restart {
		fp, err := a.footprint(ctx, r, in.DefaultRetention, scans)
		if err != nil {
			return CheckQuotaResult{}, err
		}
		byTenant[r.Tenant] = append(byTenant[r.Tenant], fp)
		footprints = append(footprints, Footprint{Key: r.Key, FilesPerCheckpoint: fp.FilesPerCheckpoint, FullCheckpointFiles: fp.FullCheckpointFiles})
		activity.RecordHeartbeat(ctx, r.Key) // one _metadata read per job
	}
	res := CheckQuotaResult{Footprints: footprints}
	for _, t := range in.Tenants {
		fs, p, err := a.Storage.Resolve(ctx, t.Root)
		if err != nil {
			return CheckQuotaResult{}, core.Classify("tenant "+t.Name+" root", err)
		}
		cs, err := fs.ContentSummary(ctx, p)
		if err != nil {
			return CheckQuotaResult{}, core.Classify("content summary of "+t.Root, err)
		}
		st, err := quota.Evaluate(t.Root, quota.Summary{Files: cs.Files, Dirs: cs.Dirs, SpaceConsumed: cs.SpaceConsumed,
			NamespaceQuota: cs.NamespaceQuota, SpaceQuota: cs.SpaceQuota})
		if err != nil {
			return CheckQuotaResult{}, core.NonRetryable(core.ErrTypeStorage, "%v", err)
		}
		wm, err := quota.CheckWatermark(st, w)
		if err != nil {
			return CheckQuotaResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "%v", err)
		}
		tq := TenantQuota{
			Tenant: t.Name, Root: t.Root,
			NamespaceUsed: st.Namespace.Used, NamespaceQuota: st.Namespace.Quota,
			SpaceUsed: st.Space.Used, SpaceQuota: st.Space.Quota,
			Percent: max(st.Namespace.Percent, st.Space.Percent), Level: wm.Level.String(), Reason: wm.Reason,
			Headroom: st.Namespace.Headroom, RestartAllowed: true,
		}
		if jobs := byTenant[t.Name]; len(jobs) > 0 {
			proj, err := quota.ProjectRestart(jobs, in.SafetyMargin)
			if err != nil {
				return CheckQuotaResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "%v", err)
			}
			gate, err := quota.Gate(st, proj, w)
			if err != nil {
				return CheckQuotaResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "%v", err)
			}
			tq.ProjectedFiles, tq.RestartAllowed, tq.GateReason = proj.Total, gate.Allowed, gate.Reason
		}
		res.Tenants = append(res.Tenants, tq)
		activity.RecordHeartbeat(ctx, t.Name)
	}
	return res, nil
}

// footprint measures an old job's checkpoint dir: files per checkpoint
// (its chk-N dir plus the shared files one checkpoint adds on average) and
// the files of a full checkpoint (the shared files its newest checkpoint
// references plus one chk-N). Shared files no checkpoint references
// (uploads of checkpoints that never completed) are not state a restart
// uploads again; they count only when the newest _metadata cannot be
// read, which overestimates, as a gate should.
func (a *Activities) footprint(ctx context.Context, r RestartFootprintInput, defaultRetention int, scans map[string]*layout.Report) (quota.JobFootprint, error) {
	retained := r.NumRetained
	if retained < 1 {
		retained = max(defaultRetention, 1)
	}
	fp := quota.JobFootprint{JobID: r.Key, NumRetained: int64(retained), SavepointFiles: r.SavepointFiles, FilesPerCheckpoint: 1}
	if m := r.Measured; m != nil && m.FilesPerCheckpoint >= 1 {
		fp.FilesPerCheckpoint, fp.FullCheckpointFiles = m.FilesPerCheckpoint, m.FullCheckpointFiles
		return fp, nil
	}
	if r.CheckpointDir == "" {
		return fp, nil
	}
	fs, p, err := a.Storage.Resolve(ctx, r.CheckpointDir)
	if err != nil {
		return fp, core.Classify("resolve "+r.CheckpointDir, err)
	}
	parent := storage.ParentOf(p)
	rep, ok := scans[parent]
	if !ok {
		scanned, err := (&layout.Scanner{FS: fs}).Scan(ctx, []layout.Root{{Path: parent, Kind: layout.CheckpointRoot}})
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return fp, core.Classify("scan "+parent, err)
		}
		rep = &scanned
		scans[parent] = rep
		activity.RecordHeartbeat(ctx, parent)
	}
	for _, j := range rep.Jobs {
		if core.BaseName(j.Path) != core.BaseName(p) {
			continue
		}
		var chkNS, completed, latestID int64
		latest := ""
		for _, c := range j.Checkpoints {
			if c.Completed {
				chkNS += c.Usage.Namespace()
				completed++
				if latest == "" || c.ID > latestID {
					latest, latestID = c.Path, c.ID
				}
			}
		}
		if completed == 0 {
			return fp, nil
		}
		shared := j.Shared.Files
		if n, err := referencedShared(ctx, fs, latest, core.BaseName(j.Path)); err == nil {
			shared = min(shared, n)
		} else {
			activity.GetLogger(ctx).Warn("newest checkpoint unreadable: its job's shared files count whole", "checkpoint", latest, "error", err)
		}
		perChk := (chkNS + completed - 1) / completed
		newShared := (shared + completed - 1) / completed
		fp.FilesPerCheckpoint = max(perChk+newShared, 1)
		fp.FullCheckpointFiles = perChk + shared
	}
	return fp, nil
}

// referencedShared counts the files under <jobID>/shared/ that the
// _metadata of the checkpoint dir chk references.
func referencedShared(ctx context.Context, fs storage.FileSystem, chk, jobID string) (int64, error) {
	md, found, err := cleanup.ReadMetadata(ctx, fs, strings.TrimRight(chk, "/")+"/"+layout.MetadataFileName)
	switch {
	case err != nil:
		return 0, err
	case !found:
		return 0, fmt.Errorf("%s: no %s", chk, layout.MetadataFileName)
	case md.Refs == nil:
		return 0, fmt.Errorf("%s: %s", chk, md.Error)
	}
	var n int64
	for _, f := range md.Refs.Files {
		if strings.Contains(f, "/"+jobID+"/shared/") {
			n++
		}
	}
	return n, nil
}
