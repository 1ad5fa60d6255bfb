package governance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// maxShardBytes bounds one plan shard read back from storage.
const maxShardBytes = 256 << 20

// ExecuteCleanup carries out a plan written by PlanCleanup, after checking
// it is byte for byte the plan that was approved. Every item is
// re-verified right before it is moved to the trash (or deleted); progress
// goes into heartbeats and the audit manifest, and a retried attempt
// resumes from the manifest without redoing or skipping items. A sharded
// plan is carried out part by part, as ExecuteCleanupPart would on
// several workers.
func (a *Activities) ExecuteCleanup(ctx context.Context, in ExecuteCleanupInput) (ExecuteCleanupResult, error) {
	plan, err := a.readApprovedPlan(ctx, in)
	if err != nil {
		return ExecuteCleanupResult{}, err
	}
	resumed := activity.HasHeartbeatDetails(ctx)
	if plan.Version == cleanup.ShardedPlanVersion {
		for i := range plan.Shards {
			if _, err := a.executePart(ctx, in, plan, i, false); err != nil {
				return ExecuteCleanupResult{RunID: in.RunID}, err
			}
		}
		if len(plan.Objects) > 0 {
			if _, err := a.executePart(ctx, in, plan, 0, true); err != nil {
				return ExecuteCleanupResult{RunID: in.RunID}, err
			}
		}
		res, err := a.tallySharded(ctx, in, plan)
		res.Resumed = resumed
		return res, err
	}
	res := ExecuteCleanupResult{RunID: in.RunID, Total: len(plan.Delete) + len(plan.Objects), Resumed: resumed}
	if res.Total == 0 {
		return res, nil
	}
	ex, dest, err := a.newExecutor(ctx, in.RunID, "", plan)
	if err != nil {
		return res, err
	}
	out, runErr := ex.Run(ctx, plan)
	res.ManifestDir, res.TrashRoot = out.ManifestDir, dest.Trash
	if runErr != nil {
		return res, core.Classify("execute plan "+in.PlanPath, runErr)
	}
	recs, err := cleanup.ReadManifest(ctx, dest.FS, dest.ManifestRoot(), in.RunID)
	if err != nil {
		return res, core.Classify("read audit manifest", err)
	}
	var t runTally
	t.add(plan, recs)
	t.fill(&res)
	a.executed(ctx, res)
	return res, nil
}

// ExecuteCleanupPart carries out one part of an approved sharded plan:
// one shard of its items, or its Kubernetes objects. It checks the header
// against the approved hash and the shard against the header, and keeps
// its own manifest segments, so parts run at once on several workers and
// a retried part resumes from its own records.
func (a *Activities) ExecuteCleanupPart(ctx context.Context, in ExecuteCleanupPartInput) (ExecuteCleanupPartResult, error) {
	ein := ExecuteCleanupInput{RunID: in.RunID, PlanPath: in.PlanPath, PlanSHA256: in.PlanSHA256}
	plan, err := a.readApprovedPlan(ctx, ein)
	if err != nil {
		return ExecuteCleanupPartResult{}, err
	}
	if plan.Version != cleanup.ShardedPlanVersion {
		return ExecuteCleanupPartResult{}, core.NonRetryable(core.ErrTypeCleanupPlanInvalid, "plan %s is version %d, not sharded: run it with ExecuteCleanup", in.PlanPath, plan.Version)
	}
	if !in.Objects && (in.Shard < 0 || in.Shard >= len(plan.Shards)) {
		return ExecuteCleanupPartResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "shard %d: plan %s has shards 0 to %d", in.Shard, in.PlanPath, len(plan.Shards)-1)
	}
	res, err := a.executePart(ctx, ein, plan, in.Shard, in.Objects)
	res.Resumed = activity.HasHeartbeatDetails(ctx)
	return res, err
}

// VerifyCleanupPlan checks, before any part of a sharded plan runs, that
// the header and every shard are the approved ones: a shard changed after
// approval stops the execution before anything is touched, not after the
// shards before it ran. A plan of one file is checked by ExecuteCleanup.
func (a *Activities) VerifyCleanupPlan(ctx context.Context, in ExecuteCleanupInput) error {
	plan, err := a.readApprovedPlan(ctx, in)
	if err != nil {
		return err
	}
	if plan.Version != cleanup.ShardedPlanVersion {
		return nil
	}
	for i := range plan.Shards {
		if _, err := a.readShard(ctx, in.PlanPath, plan, i); err != nil {
			return err
		}
		activity.RecordHeartbeat(ctx, i)
	}
	return nil
}

// TallyCleanup sums what the parts of an executed sharded plan did, from
// their audit manifests, one shard at a time.
func (a *Activities) TallyCleanup(ctx context.Context, in ExecuteCleanupInput) (ExecuteCleanupResult, error) {
	plan, err := a.readApprovedPlan(ctx, in)
	if err != nil {
		return ExecuteCleanupResult{}, err
	}
	if plan.Version != cleanup.ShardedPlanVersion {
		return ExecuteCleanupResult{}, core.NonRetryable(core.ErrTypeCleanupPlanInvalid, "plan %s is version %d, not sharded: ExecuteCleanup tallies it", in.PlanPath, plan.Version)
	}
	res, err := a.tallySharded(ctx, in, plan)
	if err != nil {
		return res, err
	}
	a.executed(ctx, res)
	return res, nil
}

// readApprovedPlan reads the plan (a sharded plan's header) and checks it
// is the approved one.
func (a *Activities) readApprovedPlan(ctx context.Context, in ExecuteCleanupInput) (cleanup.Plan, error) {
	if a.Inventory == nil || a.Flink == nil || a.Storage == nil {
		return cleanup.Plan{}, core.NonRetryable(core.ErrTypeInventory, "worker has no inventory source, Flink client or storage configured")
	}
	if err := CheckRunID(in.RunID); err != nil {
		return cleanup.Plan{}, core.NonRetryable(core.ErrTypeInvalidInput, "%v", err)
	}
	pfs, pp, err := a.Storage.Resolve(ctx, in.PlanPath)
	if err != nil {
		return cleanup.Plan{}, core.Classify("resolve plan "+in.PlanPath, err)
	}
	data, err := pfs.ReadFile(ctx, pp, maxPlanBytes)
	if err != nil {
		return cleanup.Plan{}, core.Classify("read plan "+in.PlanPath, err)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != in.PlanSHA256 {
		return cleanup.Plan{}, core.NonRetryable(core.ErrTypeCleanupPlanChanged, "plan %s has sha256 %s, the approved plan had %s; plan again", in.PlanPath, got, in.PlanSHA256)
	}
	var plan cleanup.Plan
	if err := json.Unmarshal(data, &plan); err != nil {
		return cleanup.Plan{}, core.NonRetryable(core.ErrTypeCleanupPlanInvalid, "plan %s does not decode: %v", in.PlanPath, err)
	}
	if plan.Version == cleanup.ShardedPlanVersion {
		if err := cleanup.CheckShardedHeader(plan); err != nil {
			return cleanup.Plan{}, core.Classify("plan "+in.PlanPath, err)
		}
	}
	return plan, nil
}

// readShard reads shard i of the sharded plan whose header is at planPath
// and checks it against the header.
func (a *Activities) readShard(ctx context.Context, planPath string, h cleanup.Plan, i int) ([]cleanup.Item, error) {
	p := cleanup.ShardPath(planPath, h.Shards[i])
	fs, fp, err := a.Storage.Resolve(ctx, p)
	if err != nil {
		return nil, core.Classify("resolve plan shard "+p, err)
	}
	data, err := fs.ReadFile(ctx, fp, maxShardBytes)
	if err != nil {
		return nil, core.Classify("read plan shard "+p, err)
	}
	items, err := cleanup.ReadShard(h, i, data)
	if err != nil {
		return nil, core.Classify("plan shard "+p, err)
	}
	return items, nil
}

// executePart runs shard i of h, or its objects.
func (a *Activities) executePart(ctx context.Context, in ExecuteCleanupInput, h cleanup.Plan, i int, objects bool) (ExecuteCleanupPartResult, error) {
	var items []cleanup.Item
	part := cleanup.ObjectsPart
	if !objects {
		var err error
		if items, err = a.readShard(ctx, in.PlanPath, h, i); err != nil {
			return ExecuteCleanupPartResult{}, err
		}
		part = cleanup.ShardPart(i)
	}
	plan := cleanup.PartPlan(h, items, objects)
	res := ExecuteCleanupPartResult{Part: part, Total: len(plan.Delete) + len(plan.Objects)}
	if res.Total == 0 {
		return res, nil
	}
	ex, _, err := a.newExecutor(ctx, in.RunID, part, plan)
	if err != nil {
		return res, err
	}
	var calls atomic.Uint64
	out, runErr := ex.Run(storage.CountNamenodeCalls(ctx, &calls), plan)
	res.NamenodeCalls = calls.Load()
	res.Removed = out.Counts[cleanup.OutcomeTrashed] + out.Counts[cleanup.OutcomeDeleted]
	res.Refused, res.Gone = out.Counts[cleanup.OutcomeRefused], out.Counts[cleanup.OutcomeGone]
	if runErr != nil {
		return res, core.Classify(fmt.Sprintf("execute part %s of plan %s", part, in.PlanPath), runErr)
	}
	activity.GetLogger(ctx).Info("cleanup part executed", "run", in.RunID, "part", part, "items", res.Total, "removed", res.Removed, "refused", res.Refused)
	return res, nil
}

// newExecutor configures the executor of plan (or of one part of a
// sharded plan) on this worker's trash and audit roots.
func (a *Activities) newExecutor(ctx context.Context, runID, part string, plan cleanup.Plan) (*cleanup.Executor, cleanup.Destinations, error) {
	if len(plan.Objects) > 0 && a.Orphans == nil {
		return nil, cleanup.Destinations{}, core.NonRetryable(core.ErrTypeCleanupNotConfigured, "the plan deletes %d Kubernetes objects but this worker has no Kubernetes access (inventory.kubernetes is not configured)", len(plan.Objects))
	}
	if err := a.refuseReadOnlyDeletes(plan); err != nil {
		return nil, cleanup.Destinations{}, err
	}
	dest, err := cleanup.ResolveDestinations(ctx, a.Storage.Resolve, plan, a.Cleanup.TrashRoot, a.Cleanup.AuditRoot)
	if err != nil {
		return nil, dest, core.Classify("prepare execution of run "+runID, err)
	}
	var objects cleanup.ObjectStore
	if len(plan.Objects) > 0 {
		objects = &objectStore{a: a}
	}
	var snapshots cleanup.SnapshotStore
	if a.Operator != nil {
		snapshots = a.Operator
	}
	ex, err := cleanup.NewExecutor(cleanup.ExecutorConfig{
		FS: dest.FS, Guard: dest.Guard, TrashRoot: dest.Trash, AuditRoot: dest.Audit, RunID: runID, Part: part, Objects: objects, Snapshots: snapshots,
		Live: func(ctx context.Context) (cleanup.Live, error) {
			inv, err := a.Inventory.Discover(ctx)
			if err != nil {
				return cleanup.Live{}, err
			}
			live, _, err := a.sources().liveInventory(ctx, inv)
			return live, err
		},
		Progress: func(p cleanup.Progress) {
			activity.RecordHeartbeat(ctx, ExecuteProgress{RunID: p.RunID, Part: part, Done: p.Done, Total: p.Total, Last: p.Last.Path})
		},
		Now: func() time.Time { return core.Now(a.Now) },
	})
	if err != nil {
		return nil, dest, core.Classify("configure executor", err)
	}
	return ex, dest, nil
}

// refuseReadOnlyDeletes refuses a plan that deletes Kubernetes objects or
// FlinkStateSnapshot resources in a cluster whose rbacProfile is windows:
// one made before the profile changed, or by a worker configured
// otherwise. The API server would refuse each delete; this says why, once.
func (a *Activities) refuseReadOnlyDeletes(plan cleanup.Plan) error {
	if len(a.ReadOnlyKubeClusters) == 0 {
		return nil
	}
	var objects, snapshots int
	for _, o := range plan.Objects {
		if a.ReadOnlyKubeClusters[o.Ref.KubeCluster] {
			objects++
		}
	}
	for _, it := range plan.Delete {
		for _, s := range it.Snapshots {
			if a.ReadOnlyKubeClusters[s.Ref.KubeCluster] {
				snapshots++
			}
		}
	}
	if objects+snapshots == 0 {
		return nil
	}
	return core.NonRetryable(core.ErrTypeCleanupNotConfigured, "the plan deletes %d Kubernetes objects and %d FlinkStateSnapshot resources where this worker's inventory.kubernetes.rbacProfile is windows (no delete verb): plan again, which keeps them (reason kubernetes-read-only), or grant rbacProfile full", objects, snapshots)
}

// tallySharded sums the manifests of every part of the sharded plan h,
// holding one shard's items at a time.
func (a *Activities) tallySharded(ctx context.Context, in ExecuteCleanupInput, h cleanup.Plan) (ExecuteCleanupResult, error) {
	res := ExecuteCleanupResult{RunID: in.RunID, Total: len(h.Objects)}
	for _, s := range h.Shards {
		res.Total += s.Items
	}
	if res.Total == 0 {
		return res, nil
	}
	dest, err := cleanup.ResolveDestinations(ctx, a.Storage.Resolve, cleanup.PartPlan(h, nil, true), a.Cleanup.TrashRoot, a.Cleanup.AuditRoot)
	if err != nil {
		return res, core.Classify("prepare tally of run "+in.RunID, err)
	}
	res.ManifestDir, res.TrashRoot = dest.ManifestRoot()+"/"+in.RunID, dest.Trash
	var t runTally
	for i := range h.Shards {
		items, err := a.readShard(ctx, in.PlanPath, h, i)
		if err != nil {
			return res, err
		}
		recs, err := cleanup.ReadManifestPart(ctx, dest.FS, dest.ManifestRoot(), in.RunID, cleanup.ShardPart(i))
		if err != nil {
			return res, core.Classify("read audit manifest", err)
		}
		t.add(cleanup.PartPlan(h, items, false), recs)
		activity.RecordHeartbeat(ctx, "tally "+cleanup.ShardPart(i))
	}
	if len(h.Objects) > 0 {
		recs, err := cleanup.ReadManifestPart(ctx, dest.FS, dest.ManifestRoot(), in.RunID, cleanup.ObjectsPart)
		if err != nil {
			return res, core.Classify("read audit manifest", err)
		}
		t.add(cleanup.PartPlan(h, nil, true), recs)
	}
	t.fill(&res)
	return res, nil
}

// executed logs and counts a finished execution.
func (a *Activities) executed(ctx context.Context, res ExecuteCleanupResult) {
	if a.Metrics != nil {
		for _, t := range res.Tenants {
			a.Metrics.CleanupReclaimed(t.Tenant, t.Files, t.Bytes)
			a.Metrics.CleanupObjectsRemoved(t.Tenant, t.Objects)
		}
		a.Metrics.Succeeded(OpExecuteCleanup, core.Now(a.Now))
	}
	activity.GetLogger(ctx).Info("cleanup executed", "run", res.RunID, "items", res.Items, "files", res.Files, "bytes", res.Bytes, "objects", res.Objects, "manifest", res.ManifestDir)
}

// runTally sums the manifest of a plan, or of its parts one by one,
// keeping only the bounded samples the result lists.
type runTally struct {
	sum cleanup.Tally
	// refused, objects and snapshots are the result's samples.
	refused   []RecordBrief
	objects   []ObjectBrief
	snapshots []string
}

func (t *runTally) add(plan cleanup.Plan, recs []cleanup.Record) {
	part := cleanup.TallyManifest(plan, recs)
	for _, r := range part.Unfinished {
		if len(t.refused) == MaxPlanSample {
			break
		}
		t.refused = append(t.refused, RecordBrief{Path: r.Path, Outcome: string(r.Outcome), Detail: r.Detail})
	}
	if len(plan.Objects) > 0 {
		t.objects = append(t.objects, objectOutcomes(plan, part.Last)...)
	}
	for _, it := range plan.Delete {
		for _, r := range part.Last[it.Path].Resources {
			if len(t.snapshots) < MaxPlanSample {
				t.snapshots = append(t.snapshots, it.Path+": "+r)
			}
		}
	}
	t.sum.Merge(part)
}

func (t *runTally) fill(res *ExecuteCleanupResult) {
	r := t.sum.Reclaimed
	res.Items, res.Files, res.Dirs, res.Bytes, res.Objects = r.Items, r.Files, r.Dirs, r.Bytes, r.Objects
	res.Tenants, res.Outcomes = t.sum.Tenants, t.sum.Outcomes
	res.Refused, res.ObjectOutcomes, res.SnapshotResources = t.refused, t.objects, t.snapshots
}
