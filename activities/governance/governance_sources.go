package governance

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// Flink configuration keys of file-system HA.
var (
	keysHAType       = []string{"high-availability.type", "high-availability"}
	keysHAStorageDir = []string{"high-availability.storageDir", "high-availability.storage-path"}
	keysHAClusterID  = []string{"high-availability.cluster-id", "kubernetes.cluster-id"}
)

// latestReadWait bounds how long a live job's state is asked for again:
// its latest checkpoint missing (Flink subsumed it since the statistics,
// served from a cache refreshed every few seconds, or the job is ending),
// or Flink not ready to answer (a job initializing or restarting).
const latestReadWait = 15 * time.Second

func (s restoreSources) liveReadWait() time.Duration {
	if s.LiveReadWait > 0 {
		return s.LiveReadWait
	}
	return latestReadWait
}

// liveInventory asks every cluster of the inventory (not only those in
// scope: a job restored in CLAIM or LEGACY mode references another
// tenant's files) for its live jobs, and reads, wherever it lies, the
// _metadata of each job's restore point and latest completed checkpoint,
// its checkpoints in progress and timeout, and the cluster's configured HA
// dir. An unreachable cluster fails the step; a live job whose state
// cannot be read is recorded as such, and the planner refuses the plan.
func (s restoreSources) liveInventory(ctx context.Context, inv inventory.Inventory) (cleanup.Live, []string, error) {
	live := cleanup.Live{Metadata: map[string]cleanup.MetadataResult{}}
	var notes []string
	// failed are the snapshots jobs were seen FAILED restoring from.
	var failed []catalog.FailedRestoreRecord
	for _, c := range inv.Clusters {
		client, err := core.FlinkFor(ctx, s.Flink, c.RESTURL)
		if err != nil {
			return live, nil, err
		}
		jobs, err := client.ListJobs(ctx)
		if err != nil {
			// An operator resource that is suspended or not running yet has
			// no JobManager to ask; the operator's status tells its state.
			lc, ok, oerr := s.operatorClusterAtRest(ctx, c, live.Metadata, &notes)
			if oerr != nil {
				return live, nil, oerr
			}
			if !ok {
				return live, nil, core.Classify("list jobs of cluster "+c.ClusterID, err)
			}
			live.Clusters = append(live.Clusters, lc)
			continue
		}
		lc := cleanup.LiveCluster{ClusterID: c.ClusterID, Ended: s.endedJobs(ctx, client, jobs)}
		conf, confErr := client.JobManagerConfig(ctx)
		lc.HADir, lc.HAUnknown = s.haDir(ctx, conf, confErr, c)
		lc.CheckpointDirs = checkpointDirs(conf, confErr, c)
		seen := func(j flink.JobOverview, snapshot, message string) {
			r := catalog.FailedRestoreRecord{Snapshot: snapshot, JobID: j.ID, Cluster: c.ClusterID, Message: message}
			if c.Tenant != "" && j.Name != "" {
				r.Job = catalog.LogicalJob{Tenant: c.Tenant, Cluster: c.ClusterID, Job: j.Name}
			}
			failed = append(failed, r)
		}
		if lc.Jobs, err = s.liveJobs(ctx, client, c.ClusterID, jobs, live.Metadata, &notes, seen); err != nil {
			return live, nil, err
		}
		live.Clusters = append(live.Clusters, lc)
		activity.RecordHeartbeat(ctx, "live jobs of "+c.ClusterID)
	}
	// flinkmaint's own drills restore snapshots of the fleet on a cluster
	// of their own: a drill in flight needs its snapshot as a live job does.
	if u := s.Drill.ClusterRESTURL; u != "" && !inventoryCluster(inv, u) {
		client, err := core.FlinkFor(ctx, s.Flink, u)
		if err != nil {
			return live, nil, err
		}
		jobs, err := client.ListJobs(ctx)
		if err != nil {
			return live, nil, core.Classify("list jobs of the drill cluster "+u+" (a drill in flight restores from snapshots in scope)", err)
		}
		lc := cleanup.LiveCluster{ClusterID: DrillClusterID, Ended: s.endedJobs(ctx, client, jobs)}
		if lc.Jobs, err = s.liveJobs(ctx, client, DrillClusterID, jobs, live.Metadata, &notes, nil); err != nil {
			return live, nil, err
		}
		live.Clusters = append(live.Clusters, lc)
	}
	recNotes, err := s.operatorRecords(ctx, inv, &live)
	if err != nil {
		return live, nil, err
	}
	runNotes, err := s.runRecords(ctx, &live)
	if err != nil {
		return live, nil, err
	}
	failedNotes, err := s.failedRestores(ctx, inv, failed, &live)
	if err != nil {
		return live, nil, err
	}
	return live, append(append(append(notes, recNotes...), runNotes...), failedNotes...), nil
}

// runRecords adds the snapshots flinkmaint's own runs in flight hold (a
// window between its savepoints and its restarts, an upgrade with its
// pre-upgrade savepoint) as records: a run that cannot be asked fails the
// step, so no snapshot it may restore from is deleted on a guess.
func (s restoreSources) runRecords(ctx context.Context, live *cleanup.Live) ([]string, error) {
	if s.Runs == nil {
		return nil, nil
	}
	held, err := s.Runs.SnapshotsInUse(ctx)
	if err != nil {
		return nil, core.Classify("snapshots held by flinkmaint's runs in flight", err)
	}
	var notes []string
	for _, h := range held {
		by := "run " + h.Run + " (" + h.What + ")"
		if !core.OnStorage(h.Path) {
			notes = append(notes, fmt.Sprintf("%s names %q, not a path on storage", by, h.Path))
			continue
		}
		found, err := s.readLiveMetadata(ctx, h.Path, live.Metadata)
		if err != nil {
			return nil, err
		}
		if !found {
			notes = append(notes, fmt.Sprintf("%s names %s, which does not exist", by, h.Path))
			continue
		}
		live.Records = append(live.Records, cleanup.LiveRecord{Path: strings.TrimRight(h.Path, "/"), By: by, Run: h.Run})
	}
	activity.RecordHeartbeat(ctx, "runs in flight")
	return notes, nil
}

// endedJobs are the jobs a cluster lists as globally terminal, with their
// end times and the job dirs their checkpoint history names: none of them
// writes a checkpoint after it. History that cannot be read leaves the
// end evidence for the cluster's configured checkpoint dir only.
func (s restoreSources) endedJobs(ctx context.Context, client core.FlinkAPI, jobs []flink.JobOverview) []cleanup.EndedJob {
	var out []cleanup.EndedJob
	for _, j := range jobs {
		if !j.State.IsGloballyTerminal() {
			continue
		}
		e := cleanup.EndedJob{ID: j.ID, At: j.Ended()}
		if st, err := client.Checkpoints(ctx, j.ID); err == nil {
			e.Dirs = checkpointJobDirs(st)
		}
		out = append(out, e)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out
}

// DrillClusterID names the drill cluster among the live clusters.
const DrillClusterID = "flinkmaint-drill-cluster"

// liveJobs reads what each job of jobs that has not ended needs, in job
// id order. seen, when set, is told each snapshot a FAILED job restored
// from, or failed to, with the line of Flink's that names it.
func (s restoreSources) liveJobs(ctx context.Context, client core.FlinkAPI, cluster string, jobs []flink.JobOverview, meta map[string]cleanup.MetadataResult, notes *[]string,
	seen func(j flink.JobOverview, snapshot, message string)) ([]cleanup.LiveJob, error) {
	var out []cleanup.LiveJob
	for _, j := range jobs {
		if j.State == flink.JobFailed {
			// A restore that failed is retried from the same snapshot.
			lj, message, err := s.failedJob(ctx, client, cluster, j.ID, meta, notes)
			if err != nil {
				return nil, err
			}
			if lj.RestorePath != "" || lj.LatestCheckpoint != "" || lj.RestoreUnknown != "" {
				out = append(out, lj)
			}
			if lj.RestorePath != "" && seen != nil {
				seen(j, lj.RestorePath, message)
			}
			continue
		}
		if j.State.IsGloballyTerminal() {
			continue
		}
		lj, jobNotes, err := s.liveJob(ctx, client, cluster, j.ID, meta)
		if errors.Is(err, errJobEnded) {
			continue // ended since the listing: not live
		}
		if err != nil {
			return nil, err
		}
		*notes = append(*notes, jobNotes...)
		out = append(out, lj)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].JobID < out[j].JobID })
	return out, nil
}

// failedJob is a job the cluster still lists as FAILED, read as a live
// job: the restore someone will retry needs its restore point and its
// latest checkpoint as a running job's do. Either one gone, or one whose
// _metadata does not parse (a retry would fail the same way), is noted,
// not an error: a failed job must not stop every plan while its cluster
// lists it, and other rules still judge that snapshot. message is the
// line of Flink's that names the restore point.
func (s restoreSources) failedJob(ctx context.Context, client core.FlinkAPI, cluster, jobID string, meta map[string]cleanup.MetadataResult, notes *[]string) (cleanup.LiveJob, string, error) {
	lj := cleanup.LiveJob{JobID: jobID}
	where := "failed job " + jobID + " on " + cluster
	var st flink.CheckpointingStatistics
	err := s.untilDeadline(ctx, time.Now().Add(s.liveReadWait()), where, func() (err error) {
		st, err = client.Checkpoints(ctx, jobID)
		return err
	})
	if core.FlinkUnanswered(err) || ctx.Err() != nil {
		// Flink did not answer: nothing is known of what the job restores
		// from, so the read fails rather than go on without it.
		return lj, "", core.Classify("checkpoints of "+where, err)
	}
	var restore, latest, message string
	if err == nil {
		if r := st.Latest.Restored; r != nil && core.OnStorage(r.ExternalPath) {
			restore = strings.TrimRight(r.ExternalPath, "/")
			message = fmt.Sprintf("checkpoint statistics: latest restored %s %d from %s", restoredKind(r.IsSavepoint), r.ID, r.ExternalPath)
		}
		if l := st.Latest.Completed; l != nil && core.OnStorage(l.ExternalPath) {
			latest = strings.TrimRight(l.ExternalPath, "/")
		}
	}
	if restore == "" {
		// A job that failed while restoring has no restore point in its
		// statistics: Flink names the snapshot in its exception history.
		from, line, why := failedRestoreSource(ctx, client, jobID)
		switch {
		case from != "":
			restore, message = from, line
			*notes = append(*notes, fmt.Sprintf("%s failed while restoring from %s (its exception history says so): a retry restores from it", where, from))
		case why != "":
			lj.RestoreUnknown = why
			*notes = append(*notes, fmt.Sprintf("%s: %s; no snapshot is planned while its cluster lists it", where, why))
			return lj, "", nil
		}
	}
	if err != nil && restore == "" {
		// Checkpointing off, or the statistics gone with the job (a
		// JobManager that recovered only its result fails internally on
		// them, for as long as it lists the job): its snapshots are judged
		// by the other rules.
		*notes = append(*notes, fmt.Sprintf("%s: checkpoint statistics not readable (%v): nothing of it kept as live", where, err))
		return lj, "", nil
	}
	for _, p := range []*string{&restore, &latest} {
		if *p == "" {
			continue
		}
		read := map[string]cleanup.MetadataResult{}
		found, err := s.readLiveMetadata(ctx, *p, read)
		if err != nil {
			return lj, "", err
		}
		if !found {
			*notes = append(*notes, fmt.Sprintf("%s: %s no longer exists; nothing of it to keep", where, *p))
			*p = ""
			continue
		}
		for k, m := range read {
			if m.Error != "" {
				*notes = append(*notes, fmt.Sprintf("%s: %s cannot be read (%s): a retry would fail the same way; not kept for this job", where, k, m.Error))
				*p = ""
				continue
			}
			meta[k] = m
		}
	}
	lj.RestorePath, lj.LatestCheckpoint = restore, latest
	if restore != "" || latest != "" {
		*notes = append(*notes, fmt.Sprintf("%s is kept as live while its cluster lists it: a restore that failed is retried from the same snapshot", where))
	}
	return lj, message, nil
}

// reRollback finds the snapshot a restore failed on in Flink's exception
// text ("Failed to rollback to checkpoint/savepoint <pointer>. <why>"), as
// Flink reports state it cannot map to the program or a changed max
// parallelism.
var reRollback = regexp.MustCompile(`Failed to rollback to checkpoint/savepoint (\S+?)\.?(?:\s|$)`)

// failedRestoreSource reads a failed job's exception history for the
// snapshot it failed to restore from. It returns that snapshot's dir and
// the line that names it, or why the history cannot tell ("" for all when
// it names none: the job failed after it started).
func failedRestoreSource(ctx context.Context, client core.FlinkAPI, jobID string) (from, line, why string) {
	ex, err := client.JobExceptions(ctx, jobID, 20)
	switch {
	case flink.Reason(err) == flink.ErrorReasonJobNotFound:
		return "", "", ""
	case err != nil:
		return "", "", "its exception history, which names a snapshot a restore failed on, cannot be read: " + err.Error()
	}
	var texts []string
	for _, e := range ex.History.Entries {
		texts = append(texts, e.Stacktrace)
		for _, c := range e.ConcurrentExceptions {
			texts = append(texts, c.Stacktrace)
		}
	}
	for _, t := range texts {
		if m := reRollback.FindStringSubmatchIndex(t); m != nil && core.OnStorage(t[m[2]:m[3]]) {
			start := strings.LastIndexByte(t[:m[0]], '\n') + 1
			end := len(t)
			if i := strings.IndexByte(t[m[0]:], '\n'); i >= 0 {
				end = m[0] + i
			}
			return strings.TrimSuffix(strings.TrimRight(t[m[2]:m[3]], "/"), "/_metadata"), strings.TrimSpace(t[start:end]), ""
		}
	}
	// A truncated history keeps the newest entries: the failure that ended
	// the job is among them.
	return "", "", ""
}

func restoredKind(savepoint bool) string {
	if savepoint {
		return "savepoint"
	}
	return "checkpoint"
}

// inventoryCluster says whether restURL is an inventory cluster's.
func inventoryCluster(inv inventory.Inventory, restURL string) bool {
	for _, c := range inv.Clusters {
		if strings.TrimRight(c.RESTURL, "/") == strings.TrimRight(restURL, "/") {
			return true
		}
	}
	return false
}

// operatorClusterAtRest models an operator-run cluster whose JobManager
// does not answer because the operator has none running (a suspended
// FlinkDeployment, a job not deployed yet): each of its jobs is live, with
// the savepoint the operator will resume from as its restore point, so its
// state is kept while the resource exists. ok is false when the cluster is
// not operator-run or the operator reports a JobManager that should have
// answered.
func (s restoreSources) operatorClusterAtRest(ctx context.Context, c inventory.Cluster, meta map[string]cleanup.MetadataResult, notes *[]string) (cleanup.LiveCluster, bool, error) {
	if c.Source != inventory.SourceOperator || c.Resource == nil || s.Operator == nil {
		return cleanup.LiveCluster{}, false, nil
	}
	st, err := s.Operator.OperatorStatus(ctx, *c.Resource)
	if err != nil {
		return cleanup.LiveCluster{}, false, core.Classify("operator status of cluster "+c.ClusterID, err)
	}
	if st.JobManagerDeploymentStatus == "READY" {
		return cleanup.LiveCluster{}, false, nil
	}
	lc := cleanup.LiveCluster{ClusterID: c.ClusterID}
	if c.HAStorageDir != "" {
		// The operator sets kubernetes.cluster-id to the resource name.
		lc.HADir = strings.TrimRight(c.HAStorageDir, "/") + "/" + c.ClusterID
	}
	refs := []inventory.ObjectRef{*c.Resource}
	if c.Resource.Kind != inventory.KindFlinkSessionJob {
		refs = refs[:0]
		if c.Mode == inventory.ModeApplication {
			refs = append(refs, *c.Resource)
		}
		for _, j := range c.Jobs {
			if r := j.Restart.Resource; r != nil && r.Kind == inventory.KindFlinkSessionJob {
				refs = append(refs, *r)
			}
		}
	}
	for _, ref := range refs {
		js := st
		if ref != *c.Resource {
			if js, err = s.Operator.OperatorStatus(ctx, ref); err != nil {
				return lc, false, core.Classify("operator status of "+ref.Kind+" "+ref.Namespace+"/"+ref.Name, err)
			}
		}
		what := ref.Kind + " " + ref.Namespace + "/" + ref.Name
		if js.JobID == "" {
			*notes = append(*notes, fmt.Sprintf("%s has no JobManager (%s) and no job id yet: nothing of it to keep", what, js.JobManagerDeploymentStatus))
			continue
		}
		lj := cleanup.LiveJob{JobID: js.JobID}
		restore := js.UpgradeSavepointPath
		if restore == "" {
			restore = js.LastSavepoint
		}
		if restore != "" && core.OnStorage(restore) {
			found, err := s.readLiveMetadata(ctx, restore, meta)
			if err != nil {
				return lc, false, err
			}
			if found {
				lj.RestorePath = strings.TrimRight(restore, "/")
			} else {
				*notes = append(*notes, fmt.Sprintf("%s: the savepoint %s the operator would resume from does not exist; resuming it will fail", what, restore))
			}
		}
		*notes = append(*notes, fmt.Sprintf("%s has no JobManager (spec.job.state %s, %s): job %s is kept as live", what, js.SpecState, js.JobManagerDeploymentStatus, js.JobID))
		lc.Jobs = append(lc.Jobs, lj)
	}
	sort.Slice(lc.Jobs, func(i, j int) bool { return lc.Jobs[i].JobID < lc.Jobs[j].JobID })
	return lc, true, nil
}

// operatorRecords adds every snapshot the operator's resources record, in
// every namespace of the inventory (a FlinkStateSnapshot outlives the
// FlinkDeployment it was taken of), to the live set with its _metadata; a
// record that names nothing is reported.
func (s restoreSources) operatorRecords(ctx context.Context, inv inventory.Inventory, live *cleanup.Live) ([]string, error) {
	if s.Operator == nil {
		return nil, nil
	}
	// tenantOf is the tenant of each namespace; "" when two claim it.
	tenantOf := map[string]string{}
	var namespaces []string
	add := func(ns, tenant string) {
		if ns == "" {
			return
		}
		if t, ok := tenantOf[ns]; ok {
			if t != tenant {
				tenantOf[ns] = ""
			}
			return
		}
		tenantOf[ns] = tenant
		namespaces = append(namespaces, ns)
	}
	for _, t := range inv.Tenants {
		if t.Namespace != "" {
			add(inventory.NamespaceKey(t.KubeCluster, t.Namespace), t.Name)
		}
	}
	for _, c := range inv.Clusters {
		if c.Namespace != "" {
			add(inventory.NamespaceKey(c.KubeCluster, c.Namespace), c.Tenant)
		}
	}
	if len(namespaces) == 0 {
		return nil, nil
	}
	sort.Strings(namespaces)
	recs, err := s.Operator.OperatorRecords(ctx, namespaces)
	if err != nil {
		return nil, core.Classify("operator records in "+strings.Join(namespaces, ", "), err)
	}
	var notes []string
	for _, r := range recs {
		by := r.Resource.Kind + " " + r.Resource.Namespace + "/" + r.Resource.Name + " " + r.Field
		if r.Unknown != "" {
			live.UnknownSources = append(live.UnknownSources, r.Resource.Kind+" "+r.Resource.Namespace+"/"+r.Resource.Name+": "+r.Unknown)
			notes = append(notes, fmt.Sprintf("%s: %s; no snapshot is planned until it can be read", by, r.Unknown))
			continue
		}
		if !core.OnStorage(r.Path) {
			notes = append(notes, fmt.Sprintf("%s is %q, not a path on storage", by, r.Path))
			continue
		}
		found, err := s.readLiveMetadata(ctx, r.Path, live.Metadata)
		if err != nil {
			return nil, err
		}
		if !found {
			notes = append(notes, fmt.Sprintf("%s names %s, which does not exist", by, r.Path))
			continue
		}
		rec := cleanup.LiveRecord{Path: strings.TrimRight(r.Path, "/"), By: by,
			Tenant: tenantOf[inventory.NamespaceKey(r.Resource.KubeCluster, r.Resource.Namespace)]}
		owner := r.Resource
		if r.Snapshot != nil {
			rec.Snapshot = &cleanup.SnapshotRef{Ref: r.Resource, SnapshotResource: *r.Snapshot}
			owner.Kind, owner.Name = r.Snapshot.JobKind, r.Snapshot.JobName
		}
		if owner.Kind != "" && owner.Name != "" {
			rec.Owner = &owner
		}
		live.Records = append(live.Records, rec)
	}
	activity.RecordHeartbeat(ctx, "operator records")
	return notes, nil
}

// liveJob reads what one live job needs into meta and returns the job.
func (s restoreSources) liveJob(ctx context.Context, client core.FlinkAPI, cluster, jobID string, meta map[string]cleanup.MetadataResult) (cleanup.LiveJob, []string, error) {
	lj := cleanup.LiveJob{JobID: jobID}
	var notes []string
	where := "job " + jobID + " on " + cluster
	deadline := time.Now().Add(s.liveReadWait())
	var cfg flink.CheckpointConfig
	err := s.untilDeadline(ctx, deadline, where, func() (err error) {
		cfg, err = client.CheckpointConfig(ctx, jobID)
		return checkpointingShown(ctx, client, jobID, err)
	})
	if err != nil {
		return lj, nil, core.Classify("checkpoint configuration of "+where, err)
	}
	lj.CheckpointTimeout = time.Duration(cfg.Timeout) * time.Millisecond
	for {
		var st flink.CheckpointingStatistics
		err := s.untilDeadline(ctx, deadline, where, func() (err error) {
			st, err = client.Checkpoints(ctx, jobID)
			return checkpointingShown(ctx, client, jobID, err)
		})
		if err != nil {
			return lj, nil, core.Classify("checkpoints of "+where, err)
		}
		lj.RestorePath, lj.LatestCheckpoint, lj.InFlightCheckpoint, lj.OldestPending = "", "", 0, time.Time{}
		for _, h := range st.History {
			if h.Status != "IN_PROGRESS" {
				continue
			}
			lj.InFlightCheckpoint = max(lj.InFlightCheckpoint, h.ID)
			if t := h.Triggered(); !t.IsZero() && (lj.OldestPending.IsZero() || t.Before(lj.OldestPending)) {
				lj.OldestPending = t
			}
		}
		var restoreID int64 = -1
		if r := st.Latest.Restored; r != nil && core.OnStorage(r.ExternalPath) {
			lj.RestorePath, restoreID = strings.TrimRight(r.ExternalPath, "/"), r.ID
		}
		if l := st.Latest.Completed; l != nil && core.OnStorage(l.ExternalPath) {
			lj.LatestCheckpoint = strings.TrimRight(l.ExternalPath, "/")
		}
		latestFound := true
		if lj.LatestCheckpoint != "" {
			if latestFound, err = s.readLiveMetadata(ctx, lj.LatestCheckpoint, meta); err != nil {
				return lj, nil, err
			}
			if !latestFound {
				d, err := client.JobDetails(ctx, jobID)
				if err != nil {
					return lj, nil, core.Classify("state of "+where, err)
				}
				if d.State.IsGloballyTerminal() {
					return lj, nil, errJobEnded
				}
				if time.Now().Before(deadline) {
					activity.RecordHeartbeat(ctx, "latest checkpoint of "+where+" missing; asking again")
					select {
					case <-ctx.Done():
						return lj, nil, ctx.Err()
					case <-time.After(core.PollInterval(s.PollInterval)):
					}
					continue
				}
			}
			if !latestFound {
				meta[metadataOf(lj.LatestCheckpoint)] = cleanup.MetadataResult{Error: "the latest completed checkpoint Flink reports does not exist"}
			}
		}
		if lj.RestorePath != "" {
			found, err := s.readLiveMetadata(ctx, lj.RestorePath, meta)
			if err != nil {
				return lj, nil, err
			}
			if !found {
				// Gone. Harmless only when a newer checkpoint, read above,
				// is what a failover restores from now.
				if lj.LatestCheckpoint != "" && latestFound && st.Latest.Completed.ID > restoreID {
					notes = append(notes, fmt.Sprintf("restore point %s of live %s no longer exists; its latest checkpoint %s is read instead", lj.RestorePath, where, lj.LatestCheckpoint))
					lj.RestorePath = ""
				} else {
					meta[metadataOf(lj.RestorePath)] = cleanup.MetadataResult{Error: "the restore point does not exist and no checkpoint has completed since the restore"}
				}
			}
		}
		return lj, notes, nil
	}
}

// untilDeadline retries fn while Flink answers with a transient error (a
// job still initializing answers 500 "not available while the JobManager
// is initializing") and the deadline has not passed; the last error is
// returned.
func (s restoreSources) untilDeadline(ctx context.Context, deadline time.Time, where string, fn func() error) error {
	for {
		err := fn()
		if err == nil || errors.Is(err, errJobEnded) || !flink.IsRetryable(err) || !time.Now().Before(deadline) {
			return err
		}
		activity.RecordHeartbeat(ctx, where+": "+err.Error())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(core.PollInterval(s.PollInterval)):
		}
	}
}

// checkpointingShown passes err on unless Flink said checkpointing is not
// enabled for a job that is not running: while a job initializes or
// restarts, its JobManager serves a sparse view of it without any
// checkpointing, which says nothing about the job's own settings. Such an
// answer becomes a transient error, asked again; a job that ended since
// is errJobEnded. A running job without checkpointing keeps Flink's answer.
func checkpointingShown(ctx context.Context, client core.FlinkAPI, jobID string, err error) error {
	if !errors.Is(err, flink.ErrCheckpointingDisabled) {
		return err
	}
	d, derr := client.JobDetails(ctx, jobID)
	switch {
	case derr != nil && flink.IsRetryable(derr):
		return fmt.Errorf("checkpointing not shown for job %s, and its state not read: %w", jobID, derr)
	case derr != nil:
		return err
	case d.State.IsGloballyTerminal():
		return errJobEnded
	case d.State != flink.JobRunning:
		// Not wrapped: Flink's answer is final, this one is not.
		return fmt.Errorf("job %s is %s: Flink shows no checkpointing for it until it runs (%s)", jobID, d.State, err.Error())
	}
	return err
}

// readLiveMetadata reads the _metadata of a restore point or checkpoint
// dir into meta, keyed as the file system spells it.
func (s restoreSources) readLiveMetadata(ctx context.Context, dir string, meta map[string]cleanup.MetadataResult) (bool, error) {
	fs, p, err := s.Storage.Resolve(ctx, metadataOf(dir))
	if err != nil {
		if errors.Is(err, storage.ErrInvalidPath) || errors.Is(err, storage.ErrWrongFileSystem) {
			meta[metadataOf(dir)] = cleanup.MetadataResult{Error: err.Error()}
			return true, nil
		}
		return false, core.Classify("resolve "+dir, err)
	}
	res, found, err := cleanup.ReadMetadata(ctx, fs, p)
	if err != nil {
		return false, core.Classify("read "+p, err)
	}
	if found {
		meta[p] = res
	}
	return found, nil
}

// errJobEnded: the job ended while its state was being read.
var errJobEnded = errors.New("job ended")

func metadataOf(dir string) string {
	dir = strings.TrimRight(dir, "/")
	if strings.HasSuffix(dir, "/"+layout.MetadataFileName) {
		return dir
	}
	return dir + "/" + layout.MetadataFileName
}

// haDir is <high-availability.storageDir>/<cluster-id> as the cluster's
// JobManager is configured; unknown when the configuration cannot be
// read. A cluster without file-system HA has none.
func (s restoreSources) haDir(ctx context.Context, conf flink.Config, err error, c inventory.Cluster) (string, bool) {
	if err != nil {
		activity.GetLogger(ctx).Warn("JobManager configuration unreadable; its HA dirs are kept as owner-unknown", "cluster", c.ClusterID, "error", err)
		return "", true
	}
	typ, _ := conf.Get(keysHAType...)
	switch strings.ToLower(strings.TrimSpace(typ)) {
	case "", "none":
		return "", false
	}
	dir, ok := conf.Get(keysHAStorageDir...)
	if !ok || strings.TrimSpace(dir) == "" {
		return "", true
	}
	id, ok := conf.Get(keysHAClusterID...)
	if !ok || strings.Trim(id, "/ ") == "" {
		id = "default" // Flink's default cluster-id, "/default"
	}
	return strings.TrimRight(strings.TrimSpace(dir), "/") + "/" + strings.Trim(strings.TrimSpace(id), "/"), false
}

// checkpointJobDirs are the job dirs the completed checkpoints (not
// savepoints) of a job's statistics lie in, sorted.
func checkpointJobDirs(st flink.CheckpointingStatistics) []string {
	var dirs []string
	add := func(c *flink.CheckpointStatistics) {
		if c == nil || c.IsSavepoint || c.ExternalPath == "" || !core.OnStorage(c.ExternalPath) {
			return
		}
		chk := strings.TrimRight(c.ExternalPath, "/")
		if d := chk[:strings.LastIndexByte(chk, '/')]; !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	add(st.Latest.Completed)
	for i := range st.History {
		if st.History[i].Status == "COMPLETED" {
			add(&st.History[i])
		}
	}
	sort.Strings(dirs)
	return dirs
}

// checkpointDirs are the checkpoint roots a cluster writes its jobs' dirs
// under: the inventory's and the JobManager's configured one. A cluster's
// list of ended jobs is evidence only for the dirs under these (see
// cleanup.LiveCluster.Ended); with none known, it proves nothing.
func checkpointDirs(conf flink.Config, confErr error, c inventory.Cluster) []string {
	var dirs []string
	if d := strings.TrimSpace(c.CheckpointDir); d != "" {
		dirs = append(dirs, d)
	}
	if confErr == nil {
		if d, ok := conf.Get(flink.KeysCheckpointDir...); ok && strings.TrimSpace(d) != "" && !slices.Contains(dirs, strings.TrimSpace(d)) {
			dirs = append(dirs, strings.TrimSpace(d))
		}
	}
	return dirs
}

// spellings finds out which of the other scheme://authority prefixes the
// plan's inputs name are the scanned file system, and which are proven
// others; the rest stay unknown and the planner refuses what they could
// cover.
func (s restoreSources) spellings(ctx context.Context, base string, prefixes []string) (cleanup.Spellings, error) {
	sp := cleanup.Spellings{Base: base}
	for _, p := range prefixes {
		same, err := s.Storage.CompareFileSystems(ctx, base, p)
		if err != nil {
			return sp, core.Classify("compare "+p+" with "+base, err)
		}
		switch same {
		case storage.SameFileSystem:
			sp.Aliases = append(sp.Aliases, p)
		case storage.DifferentFileSystem:
			sp.Distinct = append(sp.Distinct, p)
		}
	}
	return sp, nil
}

// referenceRootsOn are the configured reference roots on fs, as the
// executor rescans them; one on another file system is read at planning
// only, and said in notes.
func (s restoreSources) referenceRootsOn(ctx context.Context, fs storage.FileSystem, notes *[]string) ([]layout.Root, error) {
	var out []layout.Root
	for _, r := range s.Cleanup.ReferenceRoots {
		rfs, p, err := s.Storage.Resolve(ctx, r)
		if err != nil {
			return nil, core.Classify("resolve cleanup.referenceRoots entry "+r, err)
		}
		if fs == nil || rfs.URI().String() != fs.URI().String() {
			*notes = append(*notes, fmt.Sprintf("reference root %s is on another file system than the plan: read at planning, not again before each batch", r))
			continue
		}
		out = append(out, layout.Root{Path: strings.TrimRight(p, "/"), Kind: layout.CheckpointRoot})
	}
	return out, nil
}

// referenceMetadata parses the retained _metadata under the configured
// reference roots (checkpoint roots of jobs outside any scope), read-only.
func (s restoreSources) referenceMetadata(ctx context.Context) (map[string]cleanup.MetadataResult, error) {
	out := map[string]cleanup.MetadataResult{}
	for _, r := range s.Cleanup.ReferenceRoots {
		fs, p, err := s.Storage.Resolve(ctx, r)
		if err != nil {
			return nil, core.Classify("resolve cleanup.referenceRoots entry "+r, err)
		}
		root := layout.Root{Path: strings.TrimRight(p, "/"), Kind: layout.CheckpointRoot}
		l, err := cleanup.Gather(ctx, fs, []layout.Root{root}, cleanup.GatherOptions{ReferencesOnly: true})
		if err != nil {
			return nil, core.Classify("read reference root "+r, err)
		}
		for k, v := range l.Metadata {
			out[k] = v
		}
		activity.RecordHeartbeat(ctx, "reference root "+r)
	}
	return out, nil
}
