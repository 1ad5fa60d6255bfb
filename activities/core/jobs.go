package core

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

	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// Jobs acts on the Flink jobs of the inventory: finds them, stops them
// with a savepoint, cancels them and uploads their jars.
type Jobs struct {
	Inventory InventorySource
	Flink     FlinkClients
	Storage   Storage
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// PollInterval between looks at Flink; zero is 1s.
	PollInterval time.Duration
	// OperationPollMin is the shortest wait between looks at one savepoint
	// operation; zero is a fifth of PollInterval.
	OperationPollMin time.Duration
	// FailoverWait is how long a stop waits for a Flink cluster that does
	// not answer (a JobManager failover); zero is 3 minutes.
	FailoverWait time.Duration
}

func (j Jobs) catalog() Catalog {
	return Catalog{Inventory: j.Inventory, Storage: j.Storage, Now: j.Now}
}

// UploadedJar checks a jar id names a jar uploaded to the job's cluster.
func (j Jobs) UploadedJar(ctx context.Context, client FlinkAPI, job JobTarget, jarID string) error {
	jars, err := client.ListJars(ctx)
	if err != nil {
		return Classify("list the jars of "+job.RESTURL, err)
	}
	var ids []string
	for _, f := range jars.Files {
		if f.ID == jarID {
			return nil
		}
		ids = append(ids, f.ID)
	}
	if len(ids) > 10 {
		ids = append(ids[:10], "...")
	}
	return NonRetryable(ErrTypeInvalidInput, "jar id %s of %s is not uploaded to %s (it has: %s); upload it again (uploaded jars are lost when a JobManager restarts without a persistent web.upload.dir), or give the jar's path",
		jarID, job.Key, job.RESTURL, strings.Join(ids, ", "))
}

// OperationPollDelay is how long to wait before asking again about an
// operation asked for elapsed ago: a fifth of elapsed, within
// OperationPollMin (a fifth of a poll interval unless set) and one
// interval. A savepoint is then seen done at most about a fifth of its
// time late (a 2 s savepoint after 2.1 s, not 3 s), a JobManager is asked
// about a job at most five times a second, and a savepoint that takes
// minutes once per interval.
func (j Jobs) OperationPollDelay(elapsed time.Duration) time.Duration {
	p := PollInterval(j.PollInterval)
	floor := p / 5
	if j.OperationPollMin > 0 {
		floor = min(j.OperationPollMin, p)
	}
	return min(max(elapsed/5, floor), p)
}

// DiscoverJobs lists the running jobs in scope with the recipe that brings
// each back. Jobs without a recipe, or whose name is not unique on their
// cluster, are reported as skipped and never stopped.
func (j Jobs) DiscoverJobs(ctx context.Context, in DiscoverJobsInput) (DiscoverJobsResult, error) {
	if j.Inventory == nil || j.Flink == nil {
		return DiscoverJobsResult{}, NonRetryable(ErrTypeInventory, "worker has no inventory source or Flink client configured")
	}
	if problems := in.Scope.GlobProblems(); len(problems) > 0 {
		return DiscoverJobsResult{}, NonRetryable(ErrTypeInvalidInput, "%s", strings.Join(problems, "; "))
	}
	inv, err := Discover(ctx, j.Inventory)
	if err != nil {
		return DiscoverJobsResult{}, err
	}
	var res DiscoverJobsResult
	tenantsInScope := map[string]bool{}
	var running []string // names of the jobs on the clusters in scope
	for _, c := range inv.Clusters {
		if !InScope(in.Scope.Tenants, c.Tenant) || !InScope(in.Scope.Clusters, c.ClusterID) {
			continue
		}
		tenantsInScope[c.Tenant] = true
		res.Clusters = append(res.Clusters, c)
		client, err := j.Flink.For(ctx, c.RESTURL)
		if err != nil {
			return DiscoverJobsResult{}, NonRetryable(ErrTypeInventory, "cluster %s: REST endpoint %q: %v", c.ClusterID, c.RESTURL, err)
		}
		jobs, err := client.ListJobs(ctx)
		if err != nil {
			return DiscoverJobsResult{}, Classify("list jobs of cluster "+c.ClusterID, err)
		}
		targets, skipped := MatchJobs(c, jobs, in.Scope, !in.SavepointOnly)
		res.Jobs = append(res.Jobs, targets...)
		res.Skipped = append(res.Skipped, skipped...)
		running = append(running, LiveJobNames(jobs)...)
	}
	res.Unresolved = UnresolvedScope(inv, in.Scope, running)
	// The records are read once for all clusters.
	jobs, conflicts, err := j.catalog().ApplyRecipes(ctx, inv, res.Jobs)
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

// StopWithSavepoint stops a job with a savepoint and waits for it,
// heartbeating, then records the savepoint in its tenant's catalog under
// the job's logical name. The workflow-chosen trigger ID makes a retry
// re-attach to the operation already running instead of stopping the job
// twice.
func (j Jobs) StopWithSavepoint(ctx context.Context, in StopWithSavepointInput) (StopWithSavepointResult, error) {
	client, err := FlinkFor(ctx, j.Flink, in.Job.RESTURL)
	if err != nil {
		return StopWithSavepointResult{}, err
	}
	target := in.TargetDir
	if target == "" {
		target = in.Job.SavepointDir
	}
	if target == "" {
		return StopWithSavepointResult{}, NonRetryable(ErrTypeInvalidInput, "job %s: no savepoint directory configured for cluster %s", in.Job.Key, in.Job.ClusterID)
	}
	format, note, err := j.SavepointFormatFor(ctx, client, in.Job, in.Format)
	if err != nil {
		return StopWithSavepointResult{}, Classify("state backend of "+in.Job.Key+" ("+in.Job.JobID+")", err)
	}
	in.Format = format
	res, err := j.stopWithSavepoint(ctx, client, in, target)
	if err == nil {
		res.Format, res.FormatNote = format, note
		j.catalog().Record(ctx, in.Job, catalog.Entry{Path: res.SavepointPath, Trigger: catalog.TriggerWindow, RunID: in.RunID, Format: res.Format})
	}
	return res, err
}

// stopWithSavepoint stops the job with a savepoint of in.Format into
// target. It rides out a JobManager failover (see jobManagerFailoverWait):
// while Flink does not answer it keeps looking; a new JobManager that
// recovered the job running knows no operation of the old one, so the
// stop is asked again under the same trigger ID.
func (j Jobs) stopWithSavepoint(ctx context.Context, client FlinkAPI, in StopWithSavepointInput, target string) (StopWithSavepointResult, error) {
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
		if !FlinkUnanswered(err) {
			return false, nil
		}
		if unanswered.IsZero() {
			unanswered = time.Now()
			logger.Warn("Flink does not answer during a stop; waiting for its JobManager", "job", in.Job.Key, "job_id", in.Job.JobID, "error", err)
		}
		if time.Since(unanswered) >= j.failoverWait() {
			return false, nil
		}
		activity.RecordHeartbeat(ctx, "Flink unanswered since "+unanswered.UTC().Format(time.RFC3339))
		if err := Sleep(ctx, PollInterval(j.PollInterval)); err != nil {
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
				if res, ok, ferr := j.stoppedWithSavepoint(ctx, client, in, target); ferr != nil || ok {
					return res, ferr
				}
			}
			return StopWithSavepointResult{}, Classify("stop job "+in.Job.Key+" ("+in.Job.JobID+") with savepoint", err)
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
				res, ok, ferr := j.stoppedWithSavepoint(ctx, client, in, target)
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
				return StopWithSavepointResult{}, Classify("savepoint status of "+in.Job.Key, err)
			}
			unanswered = time.Time{}
			if st.Done() {
				if st.Failure != nil {
					// Flink accepts a stop of a job that already finished and
					// fails the operation ("Could not find Flink job"): a retry
					// after it forgot the first trigger.
					if res, ok, ferr := j.stoppedWithSavepoint(ctx, client, in, target); ferr != nil || ok {
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
						if time.Since(notReady) < j.failoverWait() {
							asked++
							triggerID = NextTriggerID(in.TriggerID, asked)
							logger.Warn("the job's tasks are not all running yet; asking for the stop again",
								"job", in.Job.Key, "job_id", in.Job.JobID, "trigger", triggerID)
							activity.RecordHeartbeat(ctx, "tasks not all running since "+notReady.UTC().Format(time.RFC3339))
							if err := Sleep(ctx, PollInterval(j.PollInterval)); err != nil {
								return StopWithSavepointResult{}, err
							}
							continue trigger
						}
					}
					state, seen := j.jobStateNow(ctx, client, in.Job.JobID)
					return StopWithSavepointResult{}, temporal.NewNonRetryableApplicationError(
						fmt.Sprintf("stop-with-savepoint of %s failed; %s: %s", in.Job.Key, state, FailureText(st.Failure)),
						flink.ErrorReasonOperationFailed, nil, seen)
				}
				if st.Location == "" {
					return StopWithSavepointResult{}, NonRetryable(ErrTypeSavepointInvalid, "stop-with-savepoint of %s completed without a location", in.Job.Key)
				}
				if asked > 0 {
					recovered = append(recovered, fmt.Sprintf("asked %d more time(s) while the job's tasks were not all running", asked))
				}
				return StopWithSavepointResult{SavepointPath: st.Location, Reattached: trig.Reattached, Recovered: strings.Join(recovered, "; ")}, nil
			}
			activity.RecordHeartbeat(ctx, "savepoint in progress")
			if err := Sleep(ctx, j.OperationPollDelay(time.Since(triggered))); err != nil {
				return StopWithSavepointResult{}, err
			}
		}
	}
}

// NextTriggerID is the n-th trigger ID after first: the same on every
// activity attempt, so a retry re-attaches to the stop asked last (a
// retry begins at first, whose failure Flink keeps, and steps on).
func NextTriggerID(first string, n int) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", first, n)))
	return hex.EncodeToString(sum[:16])
}

// jobManagerFailoverWait is how long a stop waits for a Flink cluster that
// does not answer before the attempt fails: a JobManager failover lasts
// until ZooKeeper expires the dead leader's session (60 s by default) and
// the new leader serves REST.
const jobManagerFailoverWait = 3 * time.Minute

func (j Jobs) failoverWait() time.Duration {
	if j.FailoverWait > 0 {
		return j.FailoverWait
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
func (j Jobs) stoppedWithSavepoint(ctx context.Context, client FlinkAPI, in StopWithSavepointInput, target string) (StopWithSavepointResult, bool, error) {
	d, err := freshJobState(ctx, client, in.Job.JobID)
	if errors.Is(err, flink.ErrJobNotFound) {
		return j.stoppedBeforeFailover(ctx, in, target, "Flink no longer knows the job (its JobManager restarted after the job had finished)")
	}
	if err != nil {
		return StopWithSavepointResult{}, false, Classify("state of "+in.Job.Key+" ("+in.Job.JobID+")", err)
	}
	switch {
	case !d.State.IsGloballyTerminal():
		return StopWithSavepointResult{}, false, nil
	case d.State != flink.JobFinished:
		return StopWithSavepointResult{}, false, NonRetryable(ErrTypeJobStoppedWithoutSavepoint,
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
			return j.stoppedBeforeFailover(ctx, in, target, "Flink knows the job FINISHED but none of its checkpoints (its JobManager restarted after the job had finished)")
		}
		if err != nil {
			return StopWithSavepointResult{}, false, Classify("checkpoints of "+in.Job.Key+" ("+in.Job.JobID+")", err)
		}
		for _, c := range append([]flink.CheckpointStatistics{DerefStats(st.Latest.Savepoint)}, st.History...) {
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
		case <-time.After(PollInterval(j.PollInterval)):
		}
	}
	if found == nil {
		return j.stoppedBeforeFailover(ctx, in, target, "Flink knows the job FINISHED but names no savepoint of it (its JobManager restarted after the job had finished)")
	}
	if !UnderDir(found.ExternalPath, target) {
		return StopWithSavepointResult{}, false, NonRetryable(ErrTypeJobStoppedWithoutSavepoint,
			"job %s (%s) is FINISHED, so it stopped, but Flink no longer knows the stop operation and its latest savepoint (%s) is not in %s; "+
				"it does not run: find its savepoint there, then retry the job or restart it by hand", in.Job.Key, in.Job.JobID, found.ExternalPath, target)
	}
	activity.GetLogger(ctx).Warn("stop operation unknown to Flink; the finished job's savepoint taken from its checkpoint history",
		"job", in.Job.Key, "job_id", in.Job.JobID, "savepoint", found.ExternalPath, "checkpoint", found.ID)
	return StopWithSavepointResult{SavepointPath: strings.TrimRight(found.ExternalPath, "/"), Reattached: true,
		Recovered: fmt.Sprintf("Flink no longer knew the stop operation; savepoint %d from the finished job's checkpoint history", found.ID)}, true, nil
}

// freshJobState is the job's state as Flink knows it now: its line in the
// jobs overview, else its details. The details (GET /jobs/:id) come from a
// cache refreshed every web.refresh-interval (3 s by default): right after
// a cancel they can still say RUNNING, and a stop that failed on a
// cancelled job would be reported as leaving it running. The overview also
// names the state of a job whose details fail with an internal error while
// a JobManager that took over cleans it up (Flink 1.20: a
// NullPointerException).
func freshJobState(ctx context.Context, client FlinkAPI, jobID string) (flink.JobDetails, error) {
	if o, ok := jobInOverview(ctx, client, jobID); ok {
		return flink.JobDetails{ID: o.ID, Name: o.Name, State: o.State}, nil
	}
	return client.JobDetails(ctx, jobID)
}

// jobInOverview is the job's line in Flink's jobs overview; ok false when
// the overview cannot be read or lacks the job.
func jobInOverview(ctx context.Context, client FlinkAPI, jobID string) (flink.JobOverview, bool) {
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
func (j Jobs) stoppedBeforeFailover(ctx context.Context, in StopWithSavepointInput, target, why string) (StopWithSavepointResult, bool, error) {
	since := activity.GetInfo(ctx).ScheduledTime.Add(-storageClockSkew)
	path, err := j.savepointOnStorage(ctx, in.Job.JobID, target, since)
	if err != nil {
		return StopWithSavepointResult{}, false, err
	}
	if path == "" {
		return StopWithSavepointResult{}, false, NonRetryable(ErrTypeJobStoppedWithoutSavepoint,
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
func (j Jobs) savepointOnStorage(ctx context.Context, jobID, target string, since time.Time) (string, error) {
	if j.Storage == nil {
		return "", NonRetryable(ErrTypeStorage, "worker has no storage configured to look for the savepoint of job %s in %s", jobID, target)
	}
	fs, dir, err := j.Storage.Resolve(ctx, target)
	if err != nil {
		return "", Classify("resolve savepoint directory "+target, err)
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
		return "", Classify("list savepoint directory "+target, err)
	}
	var best string
	var bestTime time.Time
	for _, c := range candidates {
		fi, err := fs.Stat(ctx, c+"/"+layout.MetadataFileName)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return "", Classify("stat "+c+"/"+layout.MetadataFileName, err)
		}
		if fi.ModTime.Before(since) {
			continue
		}
		if best != "" && fi.ModTime.Equal(bestTime) {
			return "", NonRetryable(ErrTypeJobStoppedWithoutSavepoint,
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
func (j Jobs) jobStateNow(ctx context.Context, client FlinkAPI, jobID string) (string, JobSeen) {
	d, err := freshJobState(ctx, client, jobID)
	switch {
	case err != nil:
		seen := JobSeenUnknown
		if JobAfterFailedStop(flink.Reason(err)) == JobSeenUnanswered {
			seen = JobSeenUnanswered
		}
		return "its state cannot be read (" + err.Error() + ")", JobSeen{Seen: seen}
	case d.State == flink.JobRunning:
		return "the job keeps running", JobSeen{Seen: JobSeenRunning, State: string(d.State)}
	case d.State.IsGloballyTerminal():
		return "the job is " + string(d.State) + ", not running", JobSeen{Seen: JobSeenStopped, State: string(d.State)}
	default:
		return "the job is " + string(d.State) + ", not running", JobSeen{Seen: JobSeenUnknown, State: string(d.State)}
	}
}

// CancelJob cancels a job; a job already terminal or unknown is fine. It is
// used before a restart is retried, so two instances of a job never run.
func (j Jobs) CancelJob(ctx context.Context, in CancelJobInput) error {
	client, err := FlinkFor(ctx, j.Flink, in.RESTURL)
	if err != nil {
		return err
	}
	if err := client.CancelJob(ctx, in.JobID); err != nil {
		if r := flink.Reason(err); r == flink.ErrorReasonJobNotFound || r == flink.ErrorReasonJobNotRunning {
			return nil
		}
		return Classify("cancel job "+in.JobID, err)
	}
	for {
		d, err := client.JobDetails(ctx, in.JobID)
		if err != nil {
			if flink.Reason(err) == flink.ErrorReasonJobNotFound {
				return nil
			}
			return Classify("job "+in.JobID, err)
		}
		if d.State.IsGloballyTerminal() {
			return nil
		}
		activity.RecordHeartbeat(ctx, string(d.State))
		if err := Sleep(ctx, PollInterval(j.PollInterval)); err != nil {
			return err
		}
	}
}

// maxJarBytes bounds a job jar read from storage into memory.
const maxJarBytes = 1 << 30

// UploadJar uploads a local jar, or one read from storage (hdfs://).
func (j Jobs) UploadJar(ctx context.Context, client FlinkAPI, jar string) (string, error) {
	if !strings.Contains(jar, "://") || strings.HasPrefix(jar, "file://") {
		return client.UploadJar(ctx, strings.TrimPrefix(jar, "file://"))
	}
	if j.Storage == nil {
		return "", NonRetryable(ErrTypeStorage, "jar %s is on storage but the worker has no storage configured", jar)
	}
	fs, p, err := j.Storage.Resolve(ctx, jar)
	if err != nil {
		return "", err
	}
	data, err := fs.ReadFile(ctx, p, maxJarBytes)
	if err != nil {
		return "", err
	}
	return client.UploadJarBytes(ctx, BaseName(p), data)
}

func (j Jobs) RootCause(ctx context.Context, client FlinkAPI, jobID string) string {
	ex, err := client.JobExceptions(ctx, jobID, 1)
	if err != nil {
		return "(exceptions unavailable: " + err.Error() + ")"
	}
	if len(ex.History.Entries) == 0 {
		return "(no exception recorded)"
	}
	return FirstLines(ex.History.Entries[0].Stacktrace, ex.History.Entries[0].ExceptionName)
}
