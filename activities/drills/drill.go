package drills

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/checkpoint"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// SelectDrillTargets picks the snapshots a drill run proves: the latest
// retained checkpoint of every live job in scope, the savepoints one run
// took, or one named snapshot; optionally a random sample per tenant. With
// Restore it also refuses a drill cluster or root that could touch
// production: a cluster of the inventory, a root inside or around any
// tenant's tree or any cluster's state dirs.
func (a *Activities) SelectDrillTargets(ctx context.Context, in SelectDrillTargetsInput) (SelectDrillTargetsResult, error) {
	if a.Inventory == nil || a.Flink == nil || a.Storage == nil {
		return SelectDrillTargetsResult{}, core.NonRetryable(core.ErrTypeInventory, "worker has no inventory source, Flink client or storage configured")
	}
	if problems := in.Scope.GlobProblems(); len(problems) > 0 {
		return SelectDrillTargetsResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "%s", strings.Join(problems, "; "))
	}
	inv, err := core.Discover(ctx, a.Inventory)
	if err != nil {
		return SelectDrillTargetsResult{}, err
	}
	if in.Restore {
		if err := a.checkDrillIsolation(ctx, inv); err != nil {
			return SelectDrillTargetsResult{}, err
		}
	}
	var res SelectDrillTargetsResult
	inScope := func(c inventory.Cluster) bool {
		return core.InScope(in.Scope.Tenants, c.Tenant) && core.InScope(in.Scope.Clusters, c.ClusterID)
	}
	jobInScope := func(name string) bool {
		return (len(in.Scope.IncludeJobs) == 0 || core.MatchesAny(in.Scope.IncludeJobs, name)) && !core.MatchesAny(in.Scope.ExcludeJobs, name)
	}
	tenants := map[string]bool{}
	for _, c := range inv.Clusters {
		if inScope(c) {
			tenants[c.Tenant] = true
		}
	}
	for t := range tenants {
		res.Tenants = append(res.Tenants, t)
	}
	sort.Strings(res.Tenants)

	switch in.Selection.Mode {
	case "", DrillLatestCheckpoint:
		for _, c := range inv.Clusters {
			if !inScope(c) {
				continue
			}
			t, s, err := a.latestCheckpoints(ctx, c, jobInScope)
			if err != nil {
				return SelectDrillTargetsResult{}, err
			}
			res.Targets, res.Skipped = append(res.Targets, t...), append(res.Skipped, s...)
		}
	case DrillRunSavepoints:
		if in.Selection.RunID == "" {
			return SelectDrillTargetsResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "selection run: name the window or savepoint schedule run (runId)")
		}
		t, err := a.runSavepoints(ctx, inv, in.Selection.RunID, inScope, jobInScope)
		if err != nil {
			return SelectDrillTargetsResult{}, err
		}
		res.Targets = t
	case DrillSnapshot:
		t, err := namedSnapshot(inv, in.Selection)
		if err != nil {
			return SelectDrillTargetsResult{}, err
		}
		res.Targets = []core.DrillTarget{t}
	default:
		return SelectDrillTargetsResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "selection mode %q: use %s, %s or %s", in.Selection.Mode, DrillLatestCheckpoint, DrillRunSavepoints, DrillSnapshot)
	}
	if n := in.Selection.SamplePerTenant; n > 0 {
		res.Targets = samplePerTenant(res.Targets, n)
	}
	sort.Slice(res.Targets, func(i, j int) bool {
		if res.Targets[i].Key != res.Targets[j].Key {
			return res.Targets[i].Key < res.Targets[j].Key
		}
		return res.Targets[i].Snapshot < res.Targets[j].Snapshot
	})
	sort.Slice(res.Skipped, func(i, j int) bool { return res.Skipped[i].Key < res.Skipped[j].Key })
	if in.Restore {
		root := strings.TrimRight(a.Drill.Root, "/")
		for i := range res.Targets {
			t := &res.Targets[i]
			t.DrillCluster = a.Drill.ClusterRESTURL
			t.DrillDir = root + "/" + core.PathSegment(in.RunID) + "/" + core.PathSegment(t.ClusterID) + "/" + core.PathSegment(t.JobName) + "-" + fmt.Sprint(i)
		}
	}
	return res, nil
}

// latestCheckpoints is the newest completed retained checkpoint of every
// running job of c in scope.
func (a *Activities) latestCheckpoints(ctx context.Context, c inventory.Cluster, jobInScope func(string) bool) ([]core.DrillTarget, []core.SkippedJob, error) {
	client, err := core.FlinkFor(ctx, a.Flink, c.RESTURL)
	if err != nil {
		return nil, nil, err
	}
	jobs, err := client.ListJobs(ctx)
	if err != nil {
		return nil, nil, core.Classify("list jobs of cluster "+c.ClusterID, err)
	}
	var targets []core.DrillTarget
	var skipped []core.SkippedJob
	for _, j := range jobs {
		if j.State != flink.JobRunning || !jobInScope(j.Name) {
			continue
		}
		key := core.JobKey(c.ClusterID, j.Name)
		stats, err := client.Checkpoints(ctx, j.ID)
		if err != nil {
			return nil, nil, core.Classify("checkpoints of "+key, err)
		}
		cp := latestRetained(stats)
		if cp == "" {
			skipped = append(skipped, core.SkippedJob{Key: key, JobID: j.ID, Reason: "no completed checkpoint with an external path yet"})
			continue
		}
		t := core.TargetOf(c, j.Name, cp, core.SnapshotCheckpoint)
		t.JobID = j.ID
		targets = append(targets, t)
	}
	return targets, skipped, nil
}

// latestRetained is the external path of the newest completed checkpoint
// that is not a savepoint.
func latestRetained(s flink.CheckpointingStatistics) string {
	if c := s.Latest.Completed; c != nil && !c.IsSavepoint && c.ExternalPath != "" {
		return c.ExternalPath
	}
	var best *flink.CheckpointStatistics
	for i := range s.History {
		h := &s.History[i]
		if h.Status == "COMPLETED" && !h.IsSavepoint && !h.Discarded && h.ExternalPath != "" && (best == nil || h.ID > best.ID) {
			best = h
		}
	}
	if best == nil {
		return ""
	}
	return best.ExternalPath
}

// runSavepoints are the catalogued savepoints a window or schedule run
// took, of jobs in scope.
func (a *Activities) runSavepoints(ctx context.Context, inv inventory.Inventory, runID string, inScope func(inventory.Cluster) bool, jobInScope func(string) bool) ([]core.DrillTarget, error) {
	clusters := map[string]inventory.Cluster{}
	tenants := map[string]bool{}
	for _, c := range inv.Clusters {
		if inScope(c) {
			clusters[c.ClusterID] = c
			tenants[c.Tenant] = true
		}
	}
	var out []core.DrillTarget
	for _, t := range inv.Tenants {
		if !tenants[t.Name] {
			continue
		}
		entries, err := a.catalog().Entries(ctx, t)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			c, ok := clusters[e.Job.Cluster]
			if e.RunID != runID || !ok || c.Tenant != t.Name || !jobInScope(e.Job.Job) {
				continue
			}
			d := core.TargetOf(c, e.Job.Job, e.Path, core.SnapshotSavepoint)
			d.JobID = e.JobID
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		return nil, core.NonRetryable(core.ErrTypeInvalidInput, "the savepoint catalog has no savepoint of run %q in scope; is the run id right, and did it take savepoints?", runID)
	}
	return out, nil
}

// namedSnapshot is one snapshot of one inventory job.
func namedSnapshot(inv inventory.Inventory, sel DrillSelection) (core.DrillTarget, error) {
	cluster, name, ok := core.SplitJob(sel.Job)
	if !ok {
		return core.DrillTarget{}, core.NonRetryable(core.ErrTypeInvalidInput, "selection job %q: use cluster/name", sel.Job)
	}
	if sel.Snapshot == "" || (!strings.Contains(sel.Snapshot, "://") && !strings.HasPrefix(sel.Snapshot, "/")) {
		return core.DrillTarget{}, core.NonRetryable(core.ErrTypeInvalidInput, "selection snapshot %q: use the checkpoint or savepoint directory as a URI or absolute path", sel.Snapshot)
	}
	for _, c := range inv.Clusters {
		if c.ClusterID == cluster {
			kind := core.SnapshotCheckpoint
			if strings.HasPrefix(core.BaseName(sel.Snapshot), "savepoint-") {
				kind = core.SnapshotSavepoint
			}
			return core.TargetOf(c, name, strings.TrimRight(sel.Snapshot, "/"), kind), nil
		}
	}
	return core.DrillTarget{}, core.NonRetryable(core.ErrTypeInvalidInput, "selection job %q: no cluster %q in the inventory", sel.Job, cluster)
}

// samplePerTenant keeps a random n targets of each tenant. The choice is
// made here, in an activity, so the workflow replays the recorded result.
func samplePerTenant(targets []core.DrillTarget, n int) []core.DrillTarget {
	by := map[string][]core.DrillTarget{}
	for _, t := range targets {
		by[t.Tenant] = append(by[t.Tenant], t)
	}
	var out []core.DrillTarget
	for _, list := range by {
		rand.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
		if len(list) > n {
			list = list[:n]
		}
		out = append(out, list...)
	}
	return out
}

// checkDrillIsolation refuses a drill set-up that could touch production:
// no drill cluster or root, a drill cluster that is an inventory cluster,
// or a drill root that lies inside or around a tenant root or a cluster's
// checkpoint, savepoint or HA dir. A spelling whose file system cannot be
// told apart from the drill root's counts as the same.
func (a *Activities) checkDrillIsolation(ctx context.Context, inv inventory.Inventory) error {
	d := a.Drill
	if d.ClusterRESTURL == "" || d.Root == "" {
		return core.NonRetryable(core.ErrTypeInvalidInput, "a real restore (tier 2) needs drill.clusterRestUrl and drill.root in the worker configuration; run tier 1 alone, or configure them")
	}
	return a.drillSite().CheckRootIsolation(ctx, inv)
}

// ProveSnapshotStorage is tier 1: it parses the snapshot's _metadata and
// checks that every file it references exists and holds the bytes its
// handles read (a segment's offset+length, a file's state size). What
// fails is reported, not raised: a broken snapshot is the drill's finding.
// Only storage that cannot be reached fails the activity (retryable).
func (a *Activities) ProveSnapshotStorage(ctx context.Context, in ProveSnapshotInput) (StorageProof, error) {
	if a.Storage == nil {
		return StorageProof{}, core.NonRetryable(core.ErrTypeStorage, "worker has no storage configured")
	}
	metaURI := strings.TrimRight(in.Snapshot, "/") + "/_metadata"
	fs, p, err := a.Storage.Resolve(ctx, metaURI)
	if err != nil {
		return StorageProof{}, core.Classify("resolve "+metaURI, err)
	}
	data, err := fs.ReadFile(ctx, p, 1<<30)
	if errors.Is(err, storage.ErrNotFound) {
		return StorageProof{Unreadable: in.Snapshot + " has no _metadata"}, nil
	}
	if err != nil {
		return StorageProof{}, core.Classify("read "+metaURI, err)
	}
	md, err := checkpoint.ParseBytes(data, metaURI)
	if err != nil {
		return StorageProof{Unreadable: fmt.Sprintf("_metadata of %s does not parse: %v", in.Snapshot, err)}, nil
	}
	proof := StorageProof{CheckpointID: md.CheckpointID, Version: md.Version, Files: 1, Bytes: int64(len(data))}
	operators := map[string]string{}
	for _, op := range md.Operators {
		label := op.ID
		switch {
		case op.UID != "":
			label += " (uid " + op.UID + ")"
		case op.Name != "":
			label += " (" + op.Name + ")"
		}
		operators[op.ID] = label
	}
	// What each file must hold, and the first handle that needs it.
	type need struct {
		bytes int64
		ref   checkpoint.Reference
	}
	needs := map[string]*need{}
	var order []string
	for r := range md.References() {
		if r.Path == "" {
			continue
		}
		n := r.Size
		if r.Range != nil {
			n = r.Range.Offset + r.Range.Length
		}
		cur, ok := needs[r.Path]
		if !ok {
			needs[r.Path] = &need{bytes: n, ref: r}
			order = append(order, r.Path)
			continue
		}
		if n > cur.bytes {
			cur.bytes, cur.ref = n, r
		}
	}
	for i, file := range order {
		n := needs[file]
		rfs, rp, err := a.Storage.Resolve(ctx, file)
		if err != nil {
			return StorageProof{}, core.Classify("resolve "+file, err)
		}
		problem := StorageProblem{Path: file, Need: n.bytes, Operator: operators[n.ref.OperatorID], Subtask: n.ref.Subtask}
		if problem.Operator == "" {
			problem.Operator = n.ref.OperatorID
		}
		fi, err := rfs.Stat(ctx, rp)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			problem.Problem = "missing"
			proof.Problems = append(proof.Problems, problem)
		case err != nil:
			return StorageProof{}, core.Classify("stat "+file, err)
		case n.bytes > 0 && fi.Size < n.bytes:
			problem.Problem, problem.Have = "short", fi.Size
			proof.Problems = append(proof.Problems, problem)
		default:
			proof.Files++
			proof.Bytes += fi.Size
		}
		if i%100 == 0 {
			activity.RecordHeartbeat(ctx, i)
		}
	}
	return proof, nil
}

// Flink configuration keys a drill sets on its job: where checkpoints go
// (the 1.20+ key and the older one; each version ignores the other).
const (
	confCheckpointDir       = "execution.checkpointing.dir"
	confCheckpointDirLegacy = "state.checkpoints.dir"
)

// ProveSnapshots runs tier 1 over several snapshots, heartbeating after
// each, and says of each whether it passed. A broken snapshot is a
// verdict; storage that cannot be reached fails the activity (retryable),
// and a retry proves the batch again, which only reads.
func (a *Activities) ProveSnapshots(ctx context.Context, in ProveSnapshotsInput) ([]SnapshotVerdict, error) {
	out := make([]SnapshotVerdict, 0, len(in.Snapshots))
	for i, s := range in.Snapshots {
		p, err := a.ProveSnapshotStorage(ctx, ProveSnapshotInput{Snapshot: s})
		if err != nil {
			return nil, err
		}
		v := SnapshotVerdict{Snapshot: s, Files: p.Files, Bytes: p.Bytes}
		if !p.Passed() {
			v.Failure = p.Describe()
		}
		out = append(out, v)
		activity.RecordHeartbeat(ctx, i+1)
	}
	return out, nil
}

// CheckDrillCluster tells, before a window stops any job, whether its
// canary drill could run: the drill cluster and root are configured and
// isolated from every inventory cluster and tenant tree, and the drill
// cluster answers.
func (a *Activities) CheckDrillCluster(ctx context.Context) error {
	if a.Inventory == nil || a.Flink == nil || a.Storage == nil {
		return core.NonRetryable(core.ErrTypeInventory, "worker has no inventory source, Flink client or storage configured")
	}
	inv, err := core.Discover(ctx, a.Inventory)
	if err != nil {
		return err
	}
	if err := a.checkDrillIsolation(ctx, inv); err != nil {
		return err
	}
	client, err := core.FlinkFor(ctx, a.Flink, a.Drill.ClusterRESTURL)
	if err != nil {
		return err
	}
	if _, err := client.ClusterOverview(ctx); err != nil {
		return core.Classify("reach drill cluster "+a.Drill.ClusterRESTURL, err)
	}
	return nil
}

// StartDrillJob starts the drill recipe on the drill cluster from the
// snapshot, restore mode NO_CLAIM (the drill never owns production files),
// its checkpoints going to the target's drill dir. A job already submitted
// under JobID is reattached.
func (a *Activities) StartDrillJob(ctx context.Context, in StartDrillJobInput) (StartDrillJobResult, error) {
	t := in.Target
	if t.Recipe == nil {
		return StartDrillJobResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "job %s has no drill recipe", t.Key)
	}
	if err := a.checkDrillDir(t.DrillDir); err != nil {
		return StartDrillJobResult{}, err
	}
	client, err := core.FlinkFor(ctx, a.Flink, t.DrillCluster)
	if err != nil {
		return StartDrillJobResult{}, err
	}
	if d, err := client.JobDetails(ctx, in.JobID); err == nil {
		return StartDrillJobResult{JobID: d.ID, Reattached: true}, nil
	} else if flink.Reason(err) != flink.ErrorReasonJobNotFound {
		return StartDrillJobResult{}, core.Classify("look up drill job "+in.JobID, err)
	}
	jarID, err := a.jobs().UploadJar(ctx, client, t.Recipe.Jar)
	if err != nil {
		return StartDrillJobResult{}, core.Classify("upload drill jar "+t.Recipe.Jar+" for "+t.Key, err)
	}
	defer func() { _ = client.DeleteJar(context.WithoutCancel(ctx), jarID) }()
	run, err := client.RunJar(ctx, jarID, flink.RunJarRequest{
		EntryClass: t.Recipe.EntryClass, ProgramArgs: t.Recipe.ProgramArgs, Parallelism: t.Recipe.Parallelism,
		JobID: in.JobID, SavepointPath: t.Snapshot, RestoreMode: flink.RestoreNoClaim,
		FlinkConfiguration: drillConfiguration(t.Recipe.FlinkConfiguration, t.DrillDir),
	})
	if err != nil {
		return StartDrillJobResult{}, core.Classify("start drill of "+t.Key+" from "+t.Snapshot, err)
	}
	return StartDrillJobResult{JobID: run.JobID, Reattached: run.Reattached}, nil
}

// drillConfiguration is the copy's job configuration: the recipe's keys,
// with its checkpoints always going to its drill dir.
func drillConfiguration(recipe map[string]string, drillDir string) map[string]string {
	conf := map[string]string{}
	for k, v := range recipe {
		if inventory.ReservedConfigKey(k) == "" {
			conf[k] = v
		}
	}
	conf[confCheckpointDir], conf[confCheckpointDirLegacy] = drillDir, drillDir
	return conf
}

// VerifyDrillState runs the recipe's verification program (a batch job,
// e.g. a State Processor API program) on the drill cluster and waits for
// its end: FINISHED passes, anything else fails with Flink's reason.
func (a *Activities) VerifyDrillState(ctx context.Context, in VerifyDrillStateInput) (VerifyDrillStateResult, error) {
	t := in.Target
	if t.Recipe == nil || t.Recipe.Verify == nil {
		return VerifyDrillStateResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "job %s has no verification program", t.Key)
	}
	v := t.Recipe.Verify
	client, err := core.FlinkFor(ctx, a.Flink, t.DrillCluster)
	if err != nil {
		return VerifyDrillStateResult{}, err
	}
	if _, err := client.JobDetails(ctx, in.JobID); err != nil {
		if flink.Reason(err) != flink.ErrorReasonJobNotFound {
			return VerifyDrillStateResult{}, core.Classify("look up verification job "+in.JobID, err)
		}
		jarID, err := a.jobs().UploadJar(ctx, client, v.Jar)
		if err != nil {
			return VerifyDrillStateResult{}, core.Classify("upload verification jar "+v.Jar, err)
		}
		args := make([]string, len(v.ProgramArgs))
		for i, s := range v.ProgramArgs {
			args[i] = strings.ReplaceAll(s, inventory.SnapshotPlaceholder, t.Snapshot)
		}
		_, err = client.RunJar(ctx, jarID, flink.RunJarRequest{EntryClass: v.EntryClass, ProgramArgs: args, JobID: in.JobID})
		_ = client.DeleteJar(context.WithoutCancel(ctx), jarID)
		if err != nil {
			if flink.IsRetryable(err) {
				return VerifyDrillStateResult{}, core.Classify("run verification of "+t.Key, err)
			}
			return VerifyDrillStateResult{}, core.NonRetryable(core.ErrTypeDrillFailed, "verification program %s of %s failed to run: %v", v.EntryClass, t.Snapshot, err)
		}
	}
	for {
		d, err := client.JobDetails(ctx, in.JobID)
		if err != nil {
			return VerifyDrillStateResult{}, core.Classify("verification job "+in.JobID, err)
		}
		if d.State.IsGloballyTerminal() {
			if d.State != flink.JobFinished {
				return VerifyDrillStateResult{}, core.NonRetryable(core.ErrTypeDrillFailed, "verification program %s of %s ended %s: %s", v.EntryClass, t.Snapshot, d.State, a.jobs().RootCause(ctx, client, in.JobID))
			}
			return VerifyDrillStateResult{JobID: in.JobID, State: string(d.State)}, nil
		}
		activity.RecordHeartbeat(ctx, string(d.State))
		if err := core.Sleep(ctx, core.PollInterval(a.PollInterval)); err != nil {
			return VerifyDrillStateResult{}, err
		}
	}
}

// checkDrillDir refuses a drill dir that is not strictly below drill.root.
func (a *Activities) checkDrillDir(dir string) error {
	if a.Drill.Root == "" || !core.StrictlyBelow(dir, a.Drill.Root) || strings.Contains(dir+"/", "/../") {
		return core.NonRetryable(core.ErrTypeOutsideRoots, "drill dir %q is not below drill.root %q", dir, a.Drill.Root)
	}
	return nil
}

// EndDrill cancels the drill's jobs, waits for them to end, then removes
// the drill dir, so a drill leaves nothing behind whatever its outcome.
// It is safe to repeat: a job already gone or a dir already removed is
// fine.
func (a *Activities) EndDrill(ctx context.Context, in EndDrillInput) (EndDrillResult, error) {
	var res EndDrillResult
	if in.DrillCluster != "" && len(in.JobIDs) > 0 {
		client, err := core.FlinkFor(ctx, a.Flink, in.DrillCluster)
		if err != nil {
			return res, err
		}
		for _, id := range in.JobIDs {
			d, err := client.JobDetails(ctx, id)
			if flink.Reason(err) == flink.ErrorReasonJobNotFound {
				continue
			}
			if err != nil {
				return res, core.Classify("drill job "+id, err)
			}
			if !d.State.IsGloballyTerminal() {
				res.Cancelled = append(res.Cancelled, id)
			}
			if err := a.jobs().CancelJob(ctx, core.CancelJobInput{RESTURL: in.DrillCluster, JobID: id}); err != nil {
				return res, err
			}
		}
	}
	if in.DrillDir != "" {
		if err := a.checkDrillDir(in.DrillDir); err != nil {
			return res, err
		}
		fs, p, err := a.Storage.Resolve(ctx, in.DrillDir)
		if err != nil {
			return res, core.Classify("resolve "+in.DrillDir, err)
		}
		if _, err := fs.Stat(ctx, p); err == nil {
			if err := fs.RemoveAll(ctx, p); err != nil {
				return res, core.Classify("remove drill dir "+in.DrillDir, err)
			}
			res.Removed = in.DrillDir
		} else if !errors.Is(err, storage.ErrNotFound) {
			return res, core.Classify("stat "+in.DrillDir, err)
		}
		// The run's and cluster's dirs above it go once empty: a namespace
		// quota counts directories too. One still in use is not empty.
		_, rootPath, err := a.Storage.Resolve(ctx, a.Drill.Root)
		if err != nil {
			return res, core.Classify("resolve "+a.Drill.Root, err)
		}
		for dir := storage.ParentOf(p); core.StrictlyBelow(dir, rootPath); dir = storage.ParentOf(dir) {
			if err := fs.Remove(ctx, dir); err != nil {
				break
			}
		}
	}
	if in.Snapshot != "" {
		fs, p, err := a.Storage.Resolve(ctx, strings.TrimRight(in.Snapshot, "/")+"/_metadata")
		if err == nil {
			_, err = fs.Stat(ctx, p)
		}
		res.SnapshotGone = errors.Is(err, storage.ErrNotFound)
	}
	return res, nil
}

// RecordDrillRun writes each snapshot's outcome to its tenant's drill
// records, beside the savepoint catalog, and sets the drill metrics.
func (a *Activities) RecordDrillRun(ctx context.Context, in RecordDrillRunInput) error {
	if a.Storage == nil || a.Inventory == nil {
		return core.NonRetryable(core.ErrTypeStorage, "worker has no storage or inventory configured")
	}
	inv, err := core.Discover(ctx, a.Inventory)
	if err != nil {
		return err
	}
	roots := map[string]inventory.Tenant{}
	for _, t := range inv.Tenants {
		roots[t.Name] = t
	}
	now := core.Now(a.Now).UTC()
	stores := map[string]catalog.DrillStore{}
	for i, r := range in.Results {
		t, ok := roots[r.Target.Tenant]
		if !ok {
			continue // the tenant left the inventory during the run
		}
		st, ok := stores[t.Name]
		if !ok {
			fs, root, err := a.Storage.Resolve(ctx, t.Root)
			if err != nil {
				return core.Classify("resolve "+t.Root, err)
			}
			st = catalog.DrillStore{FS: fs, Root: root}
			stores[t.Name] = st
		}
		rec := catalog.DrillRecord{Snapshot: core.FullPath(st.FS, r.Target.Snapshot), Kind: r.Target.Kind,
			Job:   catalog.LogicalJob{Tenant: t.Name, Cluster: r.Target.ClusterID, Job: r.Target.JobName},
			RunID: in.RunID, Tier: r.Tier, Outcome: r.Outcome, Error: r.Error, At: now}
		if err := st.Put(ctx, rec); err != nil {
			return core.Classify("record drill of "+r.Target.Snapshot, err)
		}
		if i%50 == 0 {
			activity.RecordHeartbeat(ctx, i)
		}
	}
	if a.Metrics != nil {
		for _, tenant := range in.Tenants {
			var passed, failed int64
			for _, r := range in.Results {
				if r.Target.Tenant != tenant {
					continue
				}
				switch r.Outcome {
				case catalog.DrillPassed:
					passed++
				case catalog.DrillFailed:
					failed++
				}
			}
			a.Metrics.RestoreDrills(tenant, passed, failed, now)
		}
	}
	return nil
}
