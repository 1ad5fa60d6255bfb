package windows

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/checkpoint"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

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
func (a *Activities) RestartJob(ctx context.Context, in RestartJobInput) (core.RestartJobResult, error) {
	r := in.Job.Restart
	if r.Kind != inventory.RestartRESTJarRun {
		return core.RestartJobResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "job %s: restart kind %q is not supported by the REST restart (want %q)", in.Job.Key, r.Kind, inventory.RestartRESTJarRun)
	}
	client, err := core.FlinkFor(ctx, a.Flink, in.Job.RESTURL)
	if err != nil {
		return core.RestartJobResult{}, err
	}
	// A job with our ID already exists: an earlier attempt submitted it.
	if d, err := client.JobDetails(ctx, in.NewJobID); err == nil {
		return core.RestartJobResult{JobID: d.ID, Reattached: true}, nil
	} else if flink.Reason(err) != flink.ErrorReasonJobNotFound {
		return core.RestartJobResult{}, core.Classify("look up job "+in.NewJobID, err)
	}
	jarID := r.JarID
	if jarID != "" {
		// A jar uploaded by its owners is theirs: run it, never delete it.
		if err := a.jobs().UploadedJar(ctx, client, in.Job, jarID); err != nil {
			return core.RestartJobResult{}, err
		}
	} else {
		if jarID, err = a.jobs().UploadJar(ctx, client, r.Jar); err != nil {
			return core.RestartJobResult{}, core.Classify("upload jar "+r.Jar+" for "+in.Job.Key, err)
		}
		defer func() {
			// The jar is only needed for the submission; leaving it would fill
			// the JobManager's upload dir over many windows.
			_ = client.DeleteJar(context.WithoutCancel(ctx), jarID)
		}()
	}
	for k := range r.FlinkConfiguration {
		if why := inventory.ReservedConfigKey(k); why != "" {
			return core.RestartJobResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "job %s: its recipe sets flinkConfiguration %s, which a recipe may not set: %s", in.Job.Key, k, why)
		}
	}
	run, err := client.RunJar(ctx, jarID, flink.RunJarRequest{
		EntryClass: r.EntryClass, ProgramArgs: r.ProgramArgs, Parallelism: r.Parallelism,
		JobID: in.NewJobID, SavepointPath: in.SavepointPath, AllowNonRestoredState: r.AllowNonRestoredState,
		RestoreMode: flink.RestoreMode(r.RestoreMode), FlinkConfiguration: r.FlinkConfiguration,
	})
	if err != nil {
		return core.RestartJobResult{}, core.Classify("run "+in.Job.Key+" from "+in.SavepointPath, err)
	}
	return core.RestartJobResult{JobID: run.JobID, Reattached: run.Reattached}, nil
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
			return res, core.NonRetryable(core.ErrTypeJobUnhealthy, "job %s is %s after restart: %s", in.JobID, d.State, a.jobs().RootCause(ctx, client, in.JobID))
		}
		if d.State == flink.JobRunning && res.RunningAt.IsZero() {
			res.RunningAt = core.Now(a.Now)
		}
		if res.RunningAt.IsZero() && core.Now(a.Now).Sub(start) > in.RunningTimeout {
			return res, core.NonRetryable(core.ErrTypeJobUnhealthy, "job %s not RUNNING within %s (state %s): %s", in.JobID, in.RunningTimeout, d.State, a.jobs().RootCause(ctx, client, in.JobID))
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
			return res, core.NonRetryable(core.ErrTypeJobUnhealthy, "job %s left RUNNING during the soak period (now %s): %s", in.JobID, d.State, a.jobs().RootCause(ctx, client, in.JobID))
		}
		if ts := d.Timestamps[flink.JobRunning]; ts > 0 && time.UnixMilli(ts).After(res.RunningAt.Add(time.Second)) {
			return res, core.NonRetryable(core.ErrTypeJobUnhealthy, "job %s restarted during the soak period: %s", in.JobID, a.jobs().RootCause(ctx, client, in.JobID))
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

// DiscoverJobs lists the running jobs in scope with the recipe that brings
// each back (core.Jobs.DiscoverJobs).
func (a *Activities) DiscoverJobs(ctx context.Context, in core.DiscoverJobsInput) (core.DiscoverJobsResult, error) {
	return a.jobs().DiscoverJobs(ctx, in)
}

// StopWithSavepoint stops a job with a savepoint, waits for it and
// catalogues it (core.Jobs.StopWithSavepoint).
func (a *Activities) StopWithSavepoint(ctx context.Context, in core.StopWithSavepointInput) (core.StopWithSavepointResult, error) {
	return a.jobs().StopWithSavepoint(ctx, in)
}

// CancelJob cancels a job before a restart is retried, so two instances of
// a job never run (core.Jobs.CancelJob).
func (a *Activities) CancelJob(ctx context.Context, in core.CancelJobInput) error {
	return a.jobs().CancelJob(ctx, in)
}

// WriteDocument writes a report, plan or sample atomically
// (core.Documents.WriteDocument).
func (a *Activities) WriteDocument(ctx context.Context, in core.WriteDocumentInput) (core.WriteDocumentResult, error) {
	return a.documents().WriteDocument(ctx, in)
}
