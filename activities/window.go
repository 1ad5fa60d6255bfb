package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/checkpoint"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/quota"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// operationPollDelay is how long to wait before asking again about an
// operation asked for elapsed ago: a fifth of elapsed, within
// OperationPollMin (a fifth of a poll interval unless set) and one
// interval. A savepoint is then seen done at most about a fifth of its
// time late (a 2 s savepoint after 2.1 s, not 3 s), a JobManager is asked
// about a job at most five times a second, and a savepoint that takes
// minutes once per interval.
func (a *Activities) operationPollDelay(elapsed time.Duration) time.Duration {
	p := core.PollInterval(a.PollInterval)
	floor := p / 5
	if a.OperationPollMin > 0 {
		floor = min(a.OperationPollMin, p)
	}
	return min(max(elapsed/5, floor), p)
}

// DiscoverJobs lists the running jobs in scope with the recipe that brings
// each back. Jobs without a recipe, or whose name is not unique on their
// cluster, are reported as skipped and never stopped.
func (a *Activities) DiscoverJobs(ctx context.Context, in DiscoverJobsInput) (DiscoverJobsResult, error) {
	if a.Inventory == nil || a.Flink == nil {
		return DiscoverJobsResult{}, core.NonRetryable(core.ErrTypeInventory, "worker has no inventory source or Flink client configured")
	}
	if problems := in.Scope.GlobProblems(); len(problems) > 0 {
		return DiscoverJobsResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "%s", strings.Join(problems, "; "))
	}
	inv, err := core.Discover(ctx, a.Inventory)
	if err != nil {
		return DiscoverJobsResult{}, err
	}
	var res DiscoverJobsResult
	tenantsInScope := map[string]bool{}
	var running []string // names of the jobs on the clusters in scope
	for _, c := range inv.Clusters {
		if !core.InScope(in.Scope.Tenants, c.Tenant) || !core.InScope(in.Scope.Clusters, c.ClusterID) {
			continue
		}
		tenantsInScope[c.Tenant] = true
		res.Clusters = append(res.Clusters, c)
		client, err := a.Flink.For(ctx, c.RESTURL)
		if err != nil {
			return DiscoverJobsResult{}, core.NonRetryable(core.ErrTypeInventory, "cluster %s: REST endpoint %q: %v", c.ClusterID, c.RESTURL, err)
		}
		jobs, err := client.ListJobs(ctx)
		if err != nil {
			return DiscoverJobsResult{}, core.Classify("list jobs of cluster "+c.ClusterID, err)
		}
		targets, skipped := core.MatchJobs(c, jobs, in.Scope, !in.SavepointOnly)
		res.Jobs = append(res.Jobs, targets...)
		res.Skipped = append(res.Skipped, skipped...)
		running = append(running, core.LiveJobNames(jobs)...)
	}
	res.Unresolved = core.UnresolvedScope(inv, in.Scope, running)
	// The records are read once for all clusters.
	jobs, conflicts, err := a.applyRecordedRecipes(ctx, inv, res.Jobs)
	if err != nil {
		return DiscoverJobsResult{}, err
	}
	res.Jobs, res.Skipped = jobs, append(res.Skipped, conflicts...)
	for _, t := range inv.Tenants {
		if tenantsInScope[t.Name] {
			res.Tenants = append(res.Tenants, t)
		}
	}
	sort.Slice(res.Tenants, func(i, j int) bool { return res.Tenants[i].Name < res.Tenants[j].Name })
	sort.Slice(res.Clusters, func(i, j int) bool { return res.Clusters[i].ClusterID < res.Clusters[j].ClusterID })
	sort.Slice(res.Jobs, func(i, j int) bool { return res.Jobs[i].Key < res.Jobs[j].Key })
	sort.Slice(res.Skipped, func(i, j int) bool {
		if res.Skipped[i].Key != res.Skipped[j].Key {
			return res.Skipped[i].Key < res.Skipped[j].Key
		}
		return res.Skipped[i].JobID < res.Skipped[j].JobID
	})
	return res, nil
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

// StopWithSavepoint stops a job with a savepoint and waits for it,
// heartbeating, then records the savepoint in its tenant's catalog under
// the job's logical name. The workflow-chosen trigger ID makes a retry
// re-attach to the operation already running instead of stopping the job
// twice.
func (a *Activities) StopWithSavepoint(ctx context.Context, in StopWithSavepointInput) (StopWithSavepointResult, error) {
	client, err := core.FlinkFor(ctx, a.Flink, in.Job.RESTURL)
	if err != nil {
		return StopWithSavepointResult{}, err
	}
	target := in.TargetDir
	if target == "" {
		target = in.Job.SavepointDir
	}
	if target == "" {
		return StopWithSavepointResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "job %s: no savepoint directory configured for cluster %s", in.Job.Key, in.Job.ClusterID)
	}
	format, note, err := a.savepointFormatFor(ctx, client, in.Job, in.Format)
	if err != nil {
		return StopWithSavepointResult{}, core.Classify("state backend of "+in.Job.Key+" ("+in.Job.JobID+")", err)
	}
	in.Format = format
	res, err := a.stopWithSavepoint(ctx, client, in, target)
	if err == nil {
		res.Format, res.FormatNote = format, note
		a.catalogSavepoint(ctx, in.Job, catalog.Entry{Path: res.SavepointPath, Trigger: catalog.TriggerWindow, RunID: in.RunID, Format: res.Format})
	}
	return res, err
}

// stopWithSavepoint stops the job with a savepoint of in.Format into
// target. It rides out a JobManager failover (see jobManagerFailoverWait):
// while Flink does not answer it keeps looking; a new JobManager that
// recovered the job running knows no operation of the old one, so the
// stop is asked again under the same trigger ID.
func (a *Activities) stopWithSavepoint(ctx context.Context, client core.FlinkAPI, in StopWithSavepointInput, target string) (StopWithSavepointResult, error) {
	logger := activity.GetLogger(ctx)
	var unanswered time.Time // since when Flink has not answered
	// A declined stop is asked again under the next trigger ID derived
	// from in.TriggerID (see nextTriggerID); notReady is since when.
	triggerID, asked := in.TriggerID, 0
	var notReady time.Time
	// recovered says, for the result, how the stop got past a failover.
	var recovered []string
	// waitOut reports whether err is Flink not answering for less than
	// jobManagerFailoverWait, after one poll interval.
	waitOut := func(err error) (bool, error) {
		if !core.FlinkUnanswered(err) {
			return false, nil
		}
		if unanswered.IsZero() {
			unanswered = time.Now()
			logger.Warn("Flink does not answer during a stop; waiting for its JobManager", "job", in.Job.Key, "job_id", in.Job.JobID, "error", err)
		}
		if time.Since(unanswered) >= a.failoverWait() {
			return false, nil
		}
		activity.RecordHeartbeat(ctx, "Flink unanswered since "+unanswered.UTC().Format(time.RFC3339))
		if err := core.Sleep(ctx, core.PollInterval(a.PollInterval)); err != nil {
			return false, err
		}
		return true, nil
	}
trigger:
	for {
		trig, err := client.StopWithSavepoint(ctx, in.Job.JobID, flink.StopRequest{
			TargetDirectory: target, FormatType: flink.SavepointFormat(in.Format), TriggerID: triggerID, Drain: in.Drain,
		})
		if again, werr := waitOut(err); werr != nil || again {
			if werr != nil {
				return StopWithSavepointResult{}, werr
			}
			continue
		}
		if err != nil {
			if !flink.IsRetryable(err) {
				// A retry after Flink forgot our trigger finds the job already
				// stopped: find the savepoint it stopped with.
				if res, ok, ferr := a.stoppedWithSavepoint(ctx, client, in, target); ferr != nil || ok {
					return res, ferr
				}
			}
			return StopWithSavepointResult{}, core.Classify("stop job "+in.Job.Key+" ("+in.Job.JobID+") with savepoint", err)
		}
		unanswered = time.Time{}
		logger.Info("stop-with-savepoint triggered", "job", in.Job.Key, "job_id", in.Job.JobID, "trigger", trig.TriggerID, "reattached", trig.Reattached)
		triggered := time.Now()
		for {
			st, err := client.SavepointStatus(ctx, in.Job.JobID, trig.TriggerID)
			if again, werr := waitOut(err); werr != nil || again {
				if werr != nil {
					return StopWithSavepointResult{}, werr
				}
				continue
			}
			if errors.Is(err, flink.ErrOperationNotFound) {
				// Forgotten while we waited (cache expiry, JobManager failover).
				res, ok, ferr := a.stoppedWithSavepoint(ctx, client, in, target)
				if again, werr := waitOut(ferr); werr != nil || again {
					if werr != nil {
						return StopWithSavepointResult{}, werr
					}
					continue
				}
				if ferr != nil || ok {
					return res, ferr
				}
				// The job runs: a JobManager that took over recovered it
				// and never saw our stop. Ask again; the savepoint, if the
				// old one took it, was not the job's last.
				logger.Warn("Flink lost the stop operation of a running job (JobManager failover); stopping it again",
					"job", in.Job.Key, "job_id", in.Job.JobID, "trigger", trig.TriggerID)
				recovered = append(recovered, "a JobManager that took over recovered the job RUNNING and knew no stop; stopped it again")
				continue trigger
			}
			if err != nil {
				return StopWithSavepointResult{}, core.Classify("savepoint status of "+in.Job.Key, err)
			}
			unanswered = time.Time{}
			if st.Done() {
				if st.Failure != nil {
					// Flink accepts a stop of a job that already finished and
					// fails the operation ("Could not find Flink job"): a retry
					// after it forgot the first trigger.
					if res, ok, ferr := a.stoppedWithSavepoint(ctx, client, in, target); ferr != nil || ok {
						return res, ferr
					}
					// The job runs but not all of its tasks do yet: a job a
					// JobManager has just recovered deploys them first.
					// Flink keeps the failed operation under its trigger
					// ID, so ask again under the next one.
					if st.Failure.Reason() == flink.ErrorReasonTasksNotReady {
						if notReady.IsZero() {
							notReady = time.Now()
						}
						if time.Since(notReady) < a.failoverWait() {
							asked++
							triggerID = nextTriggerID(in.TriggerID, asked)
							logger.Warn("the job's tasks are not all running yet; asking for the stop again",
								"job", in.Job.Key, "job_id", in.Job.JobID, "trigger", triggerID)
							activity.RecordHeartbeat(ctx, "tasks not all running since "+notReady.UTC().Format(time.RFC3339))
							if err := core.Sleep(ctx, core.PollInterval(a.PollInterval)); err != nil {
								return StopWithSavepointResult{}, err
							}
							continue trigger
						}
					}
					state, seen := a.jobStateNow(ctx, client, in.Job.JobID)
					return StopWithSavepointResult{}, temporal.NewNonRetryableApplicationError(
						fmt.Sprintf("stop-with-savepoint of %s failed; %s: %s", in.Job.Key, state, core.FailureText(st.Failure)),
						flink.ErrorReasonOperationFailed, nil, seen)
				}
				if st.Location == "" {
					return StopWithSavepointResult{}, core.NonRetryable(core.ErrTypeSavepointInvalid, "stop-with-savepoint of %s completed without a location", in.Job.Key)
				}
				if asked > 0 {
					recovered = append(recovered, fmt.Sprintf("asked %d more time(s) while the job's tasks were not all running", asked))
				}
				return StopWithSavepointResult{SavepointPath: st.Location, Reattached: trig.Reattached, Recovered: strings.Join(recovered, "; ")}, nil
			}
			activity.RecordHeartbeat(ctx, "savepoint in progress")
			if err := core.Sleep(ctx, a.operationPollDelay(time.Since(triggered))); err != nil {
				return StopWithSavepointResult{}, err
			}
		}
	}
}

// nextTriggerID is the n-th trigger ID after first: the same on every
// activity attempt, so a retry re-attaches to the stop asked last (a
// retry begins at first, whose failure Flink keeps, and steps on).
func nextTriggerID(first string, n int) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", first, n)))
	return hex.EncodeToString(sum[:16])
}

// jobManagerFailoverWait is how long a stop waits for a Flink cluster that
// does not answer before the attempt fails: a JobManager failover lasts
// until ZooKeeper expires the dead leader's session (60 s by default) and
// the new leader serves REST.
const jobManagerFailoverWait = 3 * time.Minute

func (a *Activities) failoverWait() time.Duration {
	if a.FailoverWait > 0 {
		return a.FailoverWait
	}
	return jobManagerFailoverWait
}

// statsCacheWait covers Flink's cache of checkpoint statistics.
const statsCacheWait = 15 * time.Second

// stoppedWithSavepoint handles a stop whose operation Flink no longer
// knows. A job that FINISHED stopped with a savepoint: its checkpoint
// statistics name it, and it must lie in the target directory; ok reports
// it was found. A job Flink no longer knows at all finished before its
// JobManager failed over (a new JobManager recovers only the jobs still
// running from HA): its savepoint is looked for in the target directory
// (see savepointOnStorage). A job still running is left to the caller (ok
// false, no error); one that ended otherwise, or whose savepoint cannot be
// found, is an error that says the truth: it is not running.
func (a *Activities) stoppedWithSavepoint(ctx context.Context, client core.FlinkAPI, in StopWithSavepointInput, target string) (StopWithSavepointResult, bool, error) {
	d, err := client.JobDetails(ctx, in.Job.JobID)
	if errors.Is(err, flink.ErrServerError) {
		// A JobManager that took over while the job's end was being
		// recorded cleans the job up, and meanwhile fails its details with
		// an internal error (Flink 1.20: a NullPointerException); the jobs
		// overview still names its state.
		if o, ok := jobInOverview(ctx, client, in.Job.JobID); ok {
			d, err = flink.JobDetails{ID: o.ID, Name: o.Name, State: o.State}, nil
		}
	}
	if errors.Is(err, flink.ErrJobNotFound) {
		return a.stoppedBeforeFailover(ctx, in, target, "Flink no longer knows the job (its JobManager restarted after the job had finished)")
	}
	if err != nil {
		return StopWithSavepointResult{}, false, core.Classify("state of "+in.Job.Key+" ("+in.Job.JobID+")", err)
	}
	switch {
	case !d.State.IsGloballyTerminal():
		return StopWithSavepointResult{}, false, nil
	case d.State != flink.JobFinished:
		return StopWithSavepointResult{}, false, core.NonRetryable(core.ErrTypeJobStoppedWithoutSavepoint,
			"job %s (%s) is %s, not running; it did not stop with a savepoint and has none from this window to restart from", in.Job.Key, in.Job.JobID, d.State)
	}
	// Flink serves checkpoint statistics from a cache (web.refresh-interval,
	// 3s by default): right after the stop they may lack its savepoint.
	var found *flink.CheckpointStatistics
	for deadline := time.Now().Add(statsCacheWait); ; {
		st, err := client.Checkpoints(ctx, in.Job.JobID)
		if errors.Is(err, flink.ErrJobNotFound) || errors.Is(err, flink.ErrCheckpointingDisabled) || errors.Is(err, flink.ErrServerError) {
			// A JobManager that recovered the job's result after a failover
			// knows its end state but none of its checkpoints (Flink then
			// says checkpointing is not enabled, or fails internally).
			return a.stoppedBeforeFailover(ctx, in, target, "Flink knows the job FINISHED but none of its checkpoints (its JobManager restarted after the job had finished)")
		}
		if err != nil {
			return StopWithSavepointResult{}, false, core.Classify("checkpoints of "+in.Job.Key+" ("+in.Job.JobID+")", err)
		}
		for _, c := range append([]flink.CheckpointStatistics{core.DerefStats(st.Latest.Savepoint)}, st.History...) {
			if c.IsSavepoint && c.Status == "COMPLETED" && c.ExternalPath != "" && (found == nil || c.ID > found.ID) {
				c := c
				found = &c
			}
		}
		if found != nil || time.Now().After(deadline) {
			break
		}
		activity.RecordHeartbeat(ctx, "looking for the savepoint of a finished job")
		select {
		case <-ctx.Done():
			return StopWithSavepointResult{}, false, ctx.Err()
		case <-time.After(core.PollInterval(a.PollInterval)):
		}
	}
	if found == nil {
		return a.stoppedBeforeFailover(ctx, in, target, "Flink knows the job FINISHED but names no savepoint of it (its JobManager restarted after the job had finished)")
	}
	if !core.UnderDir(found.ExternalPath, target) {
		return StopWithSavepointResult{}, false, core.NonRetryable(core.ErrTypeJobStoppedWithoutSavepoint,
			"job %s (%s) is FINISHED, so it stopped, but Flink no longer knows the stop operation and its latest savepoint (%s) is not in %s; "+
				"it does not run: find its savepoint there, then retry the job or restart it by hand", in.Job.Key, in.Job.JobID, found.ExternalPath, target)
	}
	activity.GetLogger(ctx).Warn("stop operation unknown to Flink; the finished job's savepoint taken from its checkpoint history",
		"job", in.Job.Key, "job_id", in.Job.JobID, "savepoint", found.ExternalPath, "checkpoint", found.ID)
	return StopWithSavepointResult{SavepointPath: strings.TrimRight(found.ExternalPath, "/"), Reattached: true,
		Recovered: fmt.Sprintf("Flink no longer knew the stop operation; savepoint %d from the finished job's checkpoint history", found.ID)}, true, nil
}

// jobInOverview is the job's line in Flink's jobs overview; ok false when
// the overview cannot be read or lacks the job.
func jobInOverview(ctx context.Context, client core.FlinkAPI, jobID string) (flink.JobOverview, bool) {
	jobs, err := client.ListJobs(ctx)
	if err != nil {
		return flink.JobOverview{}, false
	}
	for _, o := range jobs {
		if o.ID == jobID {
			return o, true
		}
	}
	return flink.JobOverview{}, false
}

// stoppedBeforeFailover is stoppedWithSavepoint for a job whose end Flink
// cannot tell in full (why says what it showed): the savepoint this stop
// left in target, or an error that the job is not running and has none.
func (a *Activities) stoppedBeforeFailover(ctx context.Context, in StopWithSavepointInput, target, why string) (StopWithSavepointResult, bool, error) {
	since := activity.GetInfo(ctx).ScheduledTime.Add(-storageClockSkew)
	path, err := a.savepointOnStorage(ctx, in.Job.JobID, target, since)
	if err != nil {
		return StopWithSavepointResult{}, false, err
	}
	if path == "" {
		return StopWithSavepointResult{}, false, core.NonRetryable(core.ErrTypeJobStoppedWithoutSavepoint,
			"job %s (%s) does not run: %s, and %s holds no savepoint-%s-* with a _metadata written since this stop began (%s); "+
				"find its savepoint, then retry the job or restart it by hand", in.Job.Key, in.Job.JobID, why, target,
			savepointDirPrefix(in.Job.JobID), since.UTC().Format(time.RFC3339))
	}
	activity.GetLogger(ctx).Warn("stop operation unknown to Flink; the finished job's savepoint found in its target directory",
		"job", in.Job.Key, "job_id", in.Job.JobID, "savepoint", path, "why", why)
	return StopWithSavepointResult{SavepointPath: path, Reattached: true,
		Recovered: why + "; savepoint found in " + target}, true, nil
}

// storageClockSkew allows for the storage's clock (HDFS modification
// times) running behind the worker's.
const storageClockSkew = 30 * time.Second

// savepointDirPrefix is how Flink begins the name of a job's savepoint
// directory: savepoint-<first 6 characters of the job ID>-<random>.
func savepointDirPrefix(jobID string) string {
	return jobID[:min(6, len(jobID))]
}

// savepointOnStorage returns the savepoint of job jobID in target whose
// _metadata was written last, at or after since; "" when none was. The
// newest is the one the job finished with: a stop-with-savepoint is a
// job's last snapshot. Directories without _metadata are savepoints a
// crash cut short.
func (a *Activities) savepointOnStorage(ctx context.Context, jobID, target string, since time.Time) (string, error) {
	if a.Storage == nil {
		return "", core.NonRetryable(core.ErrTypeStorage, "worker has no storage configured to look for the savepoint of job %s in %s", jobID, target)
	}
	fs, dir, err := a.Storage.Resolve(ctx, target)
	if err != nil {
		return "", core.Classify("resolve savepoint directory "+target, err)
	}
	prefix := "savepoint-" + savepointDirPrefix(jobID) + "-"
	var candidates []string
	err = fs.List(ctx, dir, 0, func(batch []storage.FileInfo) error {
		for _, fi := range batch {
			if fi.IsDir && strings.HasPrefix(fi.Name, prefix) {
				candidates = append(candidates, strings.TrimRight(fi.Path, "/"))
			}
		}
		return nil
	})
	if errors.Is(err, storage.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", core.Classify("list savepoint directory "+target, err)
	}
	var best string
	var bestTime time.Time
	for _, c := range candidates {
		fi, err := fs.Stat(ctx, c+"/"+layout.MetadataFileName)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return "", core.Classify("stat "+c+"/"+layout.MetadataFileName, err)
		}
		if fi.ModTime.Before(since) {
			continue
		}
		if best != "" && fi.ModTime.Equal(bestTime) {
			return "", core.NonRetryable(core.ErrTypeJobStoppedWithoutSavepoint,
				"job %s: savepoints %s and %s in %s were written at the same time; which one the job stopped with is not clear", jobID, best, c, target)
		}
		if best == "" || fi.ModTime.After(bestTime) {
			best, bestTime = c, fi.ModTime
		}
	}
	return best, nil
}

// jobStateNow says, for an error message and as the error's details,
// whether the job still runs.
func (a *Activities) jobStateNow(ctx context.Context, client core.FlinkAPI, jobID string) (string, core.JobSeen) {
	d, err := client.JobDetails(ctx, jobID)
	switch {
	case err != nil:
		seen := core.JobSeenUnknown
		if core.JobAfterFailedStop(flink.Reason(err)) == core.JobSeenUnanswered {
			seen = core.JobSeenUnanswered
		}
		return "its state cannot be read (" + err.Error() + ")", core.JobSeen{Seen: seen}
	case d.State == flink.JobRunning:
		return "the job keeps running", core.JobSeen{Seen: core.JobSeenRunning, State: string(d.State)}
	case d.State.IsGloballyTerminal():
		return "the job is " + string(d.State) + ", not running", core.JobSeen{Seen: core.JobSeenStopped, State: string(d.State)}
	default:
		return "the job is " + string(d.State) + ", not running", core.JobSeen{Seen: core.JobSeenUnknown, State: string(d.State)}
	}
}

// VerifySavepoint checks a savepoint can be restored: its _metadata parses
// and every file it references exists.
func (a *Activities) VerifySavepoint(ctx context.Context, in VerifySavepointInput) (VerifySavepointResult, error) {
	if a.Storage == nil {
		return VerifySavepointResult{}, core.NonRetryable(core.ErrTypeStorage, "worker has no storage configured")
	}
	metaURI := strings.TrimRight(in.Path, "/") + "/_metadata"
	fs, p, err := a.Storage.Resolve(ctx, metaURI)
	if err != nil {
		return VerifySavepointResult{}, core.Classify("resolve "+metaURI, err)
	}
	data, err := fs.ReadFile(ctx, p, 1<<30)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return VerifySavepointResult{}, core.NonRetryable(core.ErrTypeSavepointInvalid, "savepoint %s has no _metadata", in.Path)
		}
		return VerifySavepointResult{}, core.Classify("read "+metaURI, err)
	}
	md, err := checkpoint.ParseBytes(data, metaURI)
	if err != nil {
		return VerifySavepointResult{}, core.NonRetryable(core.ErrTypeSavepointInvalid, "savepoint %s: _metadata does not parse: %v", in.Path, err)
	}
	res := VerifySavepointResult{CheckpointID: md.CheckpointID, Version: md.Version, Files: 1, Bytes: int64(len(data)), Operators: len(md.Operators)}
	for i, f := range md.Files {
		rfs, rp, err := a.Storage.Resolve(ctx, f.Path)
		if err != nil {
			return VerifySavepointResult{}, core.Classify("resolve "+f.Path, err)
		}
		fi, err := rfs.Stat(ctx, rp)
		if err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				return VerifySavepointResult{}, core.NonRetryable(core.ErrTypeSavepointInvalid, "savepoint %s references %s, which does not exist", in.Path, f.Path)
			}
			return VerifySavepointResult{}, core.Classify("stat "+f.Path, err)
		}
		res.Files++
		res.Bytes += fi.Size
		if i%100 == 0 {
			activity.RecordHeartbeat(ctx, i)
		}
	}
	return res, nil
}

// WriteDocument writes a small document atomically: to a temporary name,
// then renamed over the old version, so a reader never sees half of it.
func (a *Activities) WriteDocument(ctx context.Context, in WriteDocumentInput) (WriteDocumentResult, error) {
	if a.Storage == nil {
		return WriteDocumentResult{}, core.NonRetryable(core.ErrTypeStorage, "worker has no storage configured")
	}
	fs, p, err := a.Storage.Resolve(ctx, in.Path)
	if err != nil {
		return WriteDocumentResult{}, core.Classify("resolve "+in.Path, err)
	}
	if err := fs.MkdirAll(ctx, storage.ParentOf(p)); err != nil {
		return WriteDocumentResult{}, core.Classify("create "+storage.ParentOf(p), err)
	}
	tmp := p + ".tmp"
	_ = fs.Remove(ctx, tmp) // a leftover from a crashed attempt
	if err := fs.WriteFile(ctx, tmp, in.Content); err != nil {
		return WriteDocumentResult{}, core.Classify("write "+tmp, err)
	}
	if err := fs.Remove(ctx, p); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return WriteDocumentResult{}, core.Classify("replace "+p, err)
	}
	if err := fs.Rename(ctx, tmp, p); err != nil {
		return WriteDocumentResult{}, core.Classify("rename "+tmp, err)
	}
	return WriteDocumentResult{Path: in.Path, Bytes: len(in.Content)}, nil
}

// ProbeEndpoints checks storage roots, Flink endpoints and the Kubernetes
// API answer. Failures are retryable: the retry policy is the backoff.
func (a *Activities) ProbeEndpoints(ctx context.Context, in ProbeEndpointsInput) (ProbeEndpointsResult, error) {
	var res ProbeEndpointsResult
	for _, root := range in.StorageRoots {
		fs, p, err := a.Storage.Resolve(ctx, root)
		if err != nil {
			return res, fmt.Errorf("storage %s unreachable: %w", root, err)
		}
		if _, err := fs.Stat(ctx, p); err != nil {
			return res, fmt.Errorf("storage %s unreachable: %w", root, err)
		}
		res.Checked = append(res.Checked, root)
	}
	for _, u := range in.FlinkURLs {
		client, err := core.FlinkFor(ctx, a.Flink, u)
		if err != nil {
			return res, err
		}
		if _, err := client.ClusterOverview(ctx); err != nil {
			return res, fmt.Errorf("flink %s unreachable: %w", u, err)
		}
		res.Checked = append(res.Checked, u)
	}
	if in.Kubernetes {
		if a.Kubernetes == nil {
			return res, core.NonRetryable(core.ErrTypeUnreachable, "Kubernetes probe requested but the worker has no Kubernetes client configured")
		}
		if err := a.Kubernetes.Ready(ctx); err != nil {
			return res, fmt.Errorf("kubernetes API unreachable: %w", err)
		}
		res.Checked = append(res.Checked, "kubernetes")
	}
	activity.RecordHeartbeat(ctx, res.Checked)
	return res, nil
}

// RestartJob restores a job from its savepoint. The workflow-chosen job ID
// makes it idempotent: a retry finds the job already submitted.
func (a *Activities) RestartJob(ctx context.Context, in RestartJobInput) (RestartJobResult, error) {
	r := in.Job.Restart
	if r.Kind != inventory.RestartRESTJarRun {
		return RestartJobResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "job %s: restart kind %q is not supported by the REST restart (want %q)", in.Job.Key, r.Kind, inventory.RestartRESTJarRun)
	}
	client, err := core.FlinkFor(ctx, a.Flink, in.Job.RESTURL)
	if err != nil {
		return RestartJobResult{}, err
	}
	// A job with our ID already exists: an earlier attempt submitted it.
	if d, err := client.JobDetails(ctx, in.NewJobID); err == nil {
		return RestartJobResult{JobID: d.ID, Reattached: true}, nil
	} else if flink.Reason(err) != flink.ErrorReasonJobNotFound {
		return RestartJobResult{}, core.Classify("look up job "+in.NewJobID, err)
	}
	jarID := r.JarID
	if jarID != "" {
		// A jar uploaded by its owners is theirs: run it, never delete it.
		if err := a.uploadedJar(ctx, client, in.Job, jarID); err != nil {
			return RestartJobResult{}, err
		}
	} else {
		if jarID, err = a.uploadJar(ctx, client, r.Jar); err != nil {
			return RestartJobResult{}, core.Classify("upload jar "+r.Jar+" for "+in.Job.Key, err)
		}
		defer func() {
			// The jar is only needed for the submission; leaving it would fill
			// the JobManager's upload dir over many windows.
			_ = client.DeleteJar(context.WithoutCancel(ctx), jarID)
		}()
	}
	for k := range r.FlinkConfiguration {
		if why := inventory.ReservedConfigKey(k); why != "" {
			return RestartJobResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "job %s: its recipe sets flinkConfiguration %s, which a recipe may not set: %s", in.Job.Key, k, why)
		}
	}
	run, err := client.RunJar(ctx, jarID, flink.RunJarRequest{
		EntryClass: r.EntryClass, ProgramArgs: r.ProgramArgs, Parallelism: r.Parallelism,
		JobID: in.NewJobID, SavepointPath: in.SavepointPath, AllowNonRestoredState: r.AllowNonRestoredState,
		RestoreMode: flink.RestoreMode(r.RestoreMode), FlinkConfiguration: r.FlinkConfiguration,
	})
	if err != nil {
		return RestartJobResult{}, core.Classify("run "+in.Job.Key+" from "+in.SavepointPath, err)
	}
	return RestartJobResult{JobID: run.JobID, Reattached: run.Reattached}, nil
}

// CancelJobInput names a job to cancel.
type CancelJobInput struct {
	RESTURL string
	JobID   string
}

// CancelJob cancels a job; a job already terminal or unknown is fine. It is
// used before a restart is retried, so two instances of a job never run.
func (a *Activities) CancelJob(ctx context.Context, in CancelJobInput) error {
	client, err := core.FlinkFor(ctx, a.Flink, in.RESTURL)
	if err != nil {
		return err
	}
	if err := client.CancelJob(ctx, in.JobID); err != nil {
		if r := flink.Reason(err); r == flink.ErrorReasonJobNotFound || r == flink.ErrorReasonJobNotRunning {
			return nil
		}
		return core.Classify("cancel job "+in.JobID, err)
	}
	for {
		d, err := client.JobDetails(ctx, in.JobID)
		if err != nil {
			if flink.Reason(err) == flink.ErrorReasonJobNotFound {
				return nil
			}
			return core.Classify("job "+in.JobID, err)
		}
		if d.State.IsGloballyTerminal() {
			return nil
		}
		activity.RecordHeartbeat(ctx, string(d.State))
		if err := core.Sleep(ctx, core.PollInterval(a.PollInterval)); err != nil {
			return err
		}
	}
}

// maxJarBytes bounds a job jar read from storage into memory.
const maxJarBytes = 1 << 30

// uploadJar uploads a local jar, or one read from storage (hdfs://).
func (a *Activities) uploadJar(ctx context.Context, client core.FlinkAPI, jar string) (string, error) {
	if !strings.Contains(jar, "://") || strings.HasPrefix(jar, "file://") {
		return client.UploadJar(ctx, strings.TrimPrefix(jar, "file://"))
	}
	if a.Storage == nil {
		return "", core.NonRetryable(core.ErrTypeStorage, "jar %s is on storage but the worker has no storage configured", jar)
	}
	fs, p, err := a.Storage.Resolve(ctx, jar)
	if err != nil {
		return "", err
	}
	data, err := fs.ReadFile(ctx, p, maxJarBytes)
	if err != nil {
		return "", err
	}
	return client.UploadJarBytes(ctx, core.BaseName(p), data)
}

// AwaitHealthy waits until a restarted job is RUNNING, restored from the
// expected savepoint, has completed a checkpoint after the restore, and has
// not restarted during the soak period. It heartbeats while it waits.
func (a *Activities) AwaitHealthy(ctx context.Context, in AwaitHealthyInput) (AwaitHealthyResult, error) {
	client, err := core.FlinkFor(ctx, a.Flink, in.RESTURL)
	if err != nil {
		return AwaitHealthyResult{}, err
	}
	var res AwaitHealthyResult
	start := core.Now(a.Now)
	// Phase 1: RUNNING, restored from the savepoint, a checkpoint after it.
	for {
		d, err := client.JobDetails(ctx, in.JobID)
		if err != nil {
			return res, core.Classify("job "+in.JobID, err)
		}
		if d.State.IsGloballyTerminal() || d.State == flink.JobFailing {
			return res, core.NonRetryable(core.ErrTypeJobUnhealthy, "job %s is %s after restart: %s", in.JobID, d.State, a.rootCause(ctx, client, in.JobID))
		}
		if d.State == flink.JobRunning && res.RunningAt.IsZero() {
			res.RunningAt = core.Now(a.Now)
		}
		if res.RunningAt.IsZero() && core.Now(a.Now).Sub(start) > in.RunningTimeout {
			return res, core.NonRetryable(core.ErrTypeJobUnhealthy, "job %s not RUNNING within %s (state %s): %s", in.JobID, in.RunningTimeout, d.State, a.rootCause(ctx, client, in.JobID))
		}
		if !res.RunningAt.IsZero() {
			stats, err := client.Checkpoints(ctx, in.JobID)
			if err != nil {
				return res, core.Classify("checkpoints of "+in.JobID, err)
			}
			if r := stats.Latest.Restored; r != nil {
				if in.SavepointPath != "" && !core.SamePath(r.ExternalPath, in.SavepointPath) {
					return res, core.NonRetryable(core.ErrTypeRestoreMismatch, "job %s restored from %s, want %s", in.JobID, r.ExternalPath, in.SavepointPath)
				}
				res.RestoredFrom = r.ExternalPath
			}
			if c := stats.Latest.Completed; c != nil && res.RestoredFrom != "" && !c.IsSavepoint && c.ID > stats.Latest.Restored.ID {
				if in.CheckpointDir != "" && !core.UnderDir(c.ExternalPath, in.CheckpointDir) {
					return res, core.NonRetryable(core.ErrTypeJobUnhealthy, "job %s checkpointed to %s, outside %s where it was told to", in.JobID, c.ExternalPath, in.CheckpointDir)
				}
				res.CheckpointID, res.CheckpointPath, res.CheckpointAt = c.ID, c.ExternalPath, core.Now(a.Now)
				break
			}
			if core.Now(a.Now).Sub(res.RunningAt) > in.CheckpointTimeout {
				return res, core.NonRetryable(core.ErrTypeJobUnhealthy, "job %s completed no checkpoint within %s of running (restored: %q)", in.JobID, in.CheckpointTimeout, res.RestoredFrom)
			}
		}
		activity.RecordHeartbeat(ctx, string(d.State))
		if err := core.Sleep(ctx, core.PollInterval(a.PollInterval)); err != nil {
			return res, err
		}
	}
	// Phase 2: soak — still RUNNING, no restart, for the soak period.
	soakEnd := core.Now(a.Now).Add(in.Soak)
	for core.Now(a.Now).Before(soakEnd) {
		d, err := client.JobDetails(ctx, in.JobID)
		if err != nil {
			return res, core.Classify("job "+in.JobID, err)
		}
		if d.State != flink.JobRunning {
			return res, core.NonRetryable(core.ErrTypeJobUnhealthy, "job %s left RUNNING during the soak period (now %s): %s", in.JobID, d.State, a.rootCause(ctx, client, in.JobID))
		}
		if ts := d.Timestamps[flink.JobRunning]; ts > 0 && time.UnixMilli(ts).After(res.RunningAt.Add(time.Second)) {
			return res, core.NonRetryable(core.ErrTypeJobUnhealthy, "job %s restarted during the soak period: %s", in.JobID, a.rootCause(ctx, client, in.JobID))
		}
		activity.RecordHeartbeat(ctx, "soak")
		if err := core.Sleep(ctx, core.PollInterval(a.PollInterval)); err != nil {
			return res, err
		}
	}
	// Phase 3: the custom checks, on the job as it runs after the soak.
	res.Readings, err = a.checkMetrics(ctx, client, in.JobID, in.Checks)
	return res, err
}

func (a *Activities) rootCause(ctx context.Context, client core.FlinkAPI, jobID string) string {
	ex, err := client.JobExceptions(ctx, jobID, 1)
	if err != nil {
		return "(exceptions unavailable: " + err.Error() + ")"
	}
	if len(ex.History.Entries) == 0 {
		return "(no exception recorded)"
	}
	return core.FirstLines(ex.History.Entries[0].Stacktrace, ex.History.Entries[0].ExceptionName)
}
