package upgrades

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// CheckUpgradeInput is an upgrade's new recipe for a job.
type CheckUpgradeInput struct {
	Job    core.JobTarget
	Recipe inventory.RestartRecipe
}

// CheckUpgrade is an upgrade's preflight on the new version: a recipe the
// REST restart can run, and its jar present where the worker reads it.
func (a *Activities) CheckUpgrade(ctx context.Context, in CheckUpgradeInput) error {
	r := in.Recipe
	if r.Kind != inventory.RestartRESTJarRun {
		return core.NonRetryable(core.ErrTypeInvalidInput, "job %s restarts with kind %q; an upgrade runs the new version through Flink's REST API (%s)", in.Job.Key, r.Kind, inventory.RestartRESTJarRun)
	}
	if err := inventory.ValidateRecipe("recipe", r); err != nil {
		return core.NonRetryable(core.ErrTypeInvalidInput, "job %s: the new version: %v", in.Job.Key, err)
	}
	if r.EntryClass == "" {
		return core.NonRetryable(core.ErrTypeInvalidInput, "job %s: the new recipe needs an entry class (neither the upgrade nor the running recipe names one)", in.Job.Key)
	}
	if r.JarID != "" {
		client, err := core.FlinkFor(ctx, a.Flink, in.Job.RESTURL)
		if err != nil {
			return err
		}
		return a.jobs().UploadedJar(ctx, client, in.Job, r.JarID)
	}
	if !strings.Contains(r.Jar, "://") || strings.HasPrefix(r.Jar, "file://") {
		fi, err := os.Stat(strings.TrimPrefix(r.Jar, "file://"))
		if err != nil || fi.IsDir() {
			return core.NonRetryable(core.ErrTypeInvalidInput, "new jar %s of %s is not a file the worker can read: %v", r.Jar, in.Job.Key, err)
		}
		return nil
	}
	if a.Storage == nil {
		return core.NonRetryable(core.ErrTypeStorage, "new jar %s is on storage but the worker has no storage configured", r.Jar)
	}
	fs, p, err := a.Storage.Resolve(ctx, r.Jar)
	if err != nil {
		return core.Classify("resolve new jar "+r.Jar, err)
	}
	fi, err := fs.Stat(ctx, p)
	if errors.Is(err, storage.ErrNotFound) || err == nil && fi.IsDir {
		return core.NonRetryable(core.ErrTypeInvalidInput, "new jar %s of %s does not exist", r.Jar, in.Job.Key)
	}
	if err != nil {
		return core.Classify("stat new jar "+r.Jar, err)
	}
	return nil
}

// EndJobInput names a job version to end: Job.JobID is the instance.
type EndJobInput struct {
	Job       core.JobTarget
	TriggerID string
	Format    string
	RunID     string
}

// EndJobResult is the savepoint the job stopped with, if it was running.
type EndJobResult struct {
	Savepoint string `json:"savepoint,omitempty"`
	// Cancelled says the job was cancelled: it was not running, or its
	// savepoint failed.
	Cancelled bool `json:"cancelled,omitempty"`
}

// EndJob ends one version of a job before another starts: a running job
// is stopped with a savepoint (kept, catalogued), anything else not yet
// terminal is cancelled, and the activity returns only once Flink reports
// the job globally terminal, so two versions never run at once. Safe to
// retry: the trigger ID re-attaches, a terminal job is left as it is.
func (a *Activities) EndJob(ctx context.Context, in EndJobInput) (EndJobResult, error) {
	client, err := core.FlinkFor(ctx, a.Flink, in.Job.RESTURL)
	if err != nil {
		return EndJobResult{}, err
	}
	d, err := client.JobDetails(ctx, in.Job.JobID)
	if flink.Reason(err) == flink.ErrorReasonJobNotFound {
		return EndJobResult{}, nil
	}
	if err != nil {
		return EndJobResult{}, core.Classify("state of job "+in.Job.JobID, err)
	}
	state := d.State
	if state.IsGloballyTerminal() {
		return EndJobResult{}, nil
	}
	if state == flink.JobRunning {
		res, err := a.jobs().StopWithSavepoint(ctx, core.StopWithSavepointInput{Job: in.Job, TriggerID: in.TriggerID, Format: in.Format, RunID: in.RunID})
		if err == nil {
			return EndJobResult{Savepoint: res.SavepointPath}, a.awaitTerminal(ctx, client, in.Job.JobID)
		}
		activity.GetLogger(ctx).Warn("stop with savepoint failed; cancelling", "job", in.Job.Key, "jobId", in.Job.JobID, "error", err)
	}
	if err := client.CancelJob(ctx, in.Job.JobID); err != nil {
		if r := flink.Reason(err); r != flink.ErrorReasonJobNotFound && r != flink.ErrorReasonJobNotRunning {
			return EndJobResult{}, core.Classify("cancel job "+in.Job.JobID, err)
		}
	}
	return EndJobResult{Cancelled: true}, a.awaitTerminal(ctx, client, in.Job.JobID)
}

// awaitTerminal polls until the job is globally terminal or gone.
func (a *Activities) awaitTerminal(ctx context.Context, client core.FlinkAPI, jobID string) error {
	for {
		d, err := client.JobDetails(ctx, jobID)
		if flink.Reason(err) == flink.ErrorReasonJobNotFound || err == nil && d.State.IsGloballyTerminal() {
			return nil
		}
		activity.RecordHeartbeat(ctx, fmt.Sprintf("job %s is %s", jobID, d.State))
		select {
		case <-ctx.Done():
			return core.Classify("wait for job "+jobID+" to end", ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// RecordRecipeInput makes an upgrade's recipe the job's recipe of record.
type RecordRecipeInput struct {
	Job       core.JobTarget
	Base      inventory.RestartRecipe
	Recipe    inventory.RestartRecipe
	UpgradeID string
}

// RecordRecipe writes the recipe of record beside the tenant's savepoint
// catalog, so the next window restarts the upgraded version.
func (a *Activities) RecordRecipe(ctx context.Context, in RecordRecipeInput) error {
	store, err := a.recipeStore(ctx, in.Job.Tenant)
	if err != nil {
		return err
	}
	rec := catalog.RecipeRecord{Job: catalog.LogicalJob{Tenant: in.Job.Tenant, Cluster: in.Job.ClusterID, Job: in.Job.JobName},
		Base: in.Base, Recipe: in.Recipe, UpgradeID: in.UpgradeID, At: core.Now(a.Now).UTC()}
	old, err := recipeRecordOf(ctx, store, in.Job)
	if err != nil {
		return err
	}
	switch {
	case old == nil:
	case old.UpgradeID == in.UpgradeID:
		return nil // a retry: written already
	default:
		// The running recipe came from an earlier upgrade's record: the
		// inventory still holds that record's base, which this record must
		// name to keep resolving; a rollback restores the earlier record.
		if catalog.SameRecipe(old.Recipe, in.Base) {
			rec.Base = old.Base
		}
		prev := *old
		prev.Previous = nil
		rec.Previous = &prev
	}
	return core.Classify("record the recipe of "+in.Job.Key, store.Put(ctx, rec))
}

// recipeRecordOf is the job's recipe record, nil when it has none.
func recipeRecordOf(ctx context.Context, store catalog.RecipeStore, job core.JobTarget) (*catalog.RecipeRecord, error) {
	list, err := store.List(ctx)
	if err != nil {
		return nil, core.Classify("read the recipe records of tenant "+job.Tenant, err)
	}
	for _, r := range list {
		if r.Job.Cluster == job.ClusterID && r.Job.Job == job.JobName {
			return &r, nil
		}
	}
	return nil, nil
}

// ForgetRecipeInput names the upgrade whose recipe of record a rollback
// removes.
type ForgetRecipeInput struct {
	Job       core.JobTarget
	UpgradeID string
}

// ForgetRecipe undoes this upgrade's recipe of record: the record it
// replaced comes back, or, when there was none, the job restarts with the
// inventory's recipe again. A record of another upgrade is left alone.
func (a *Activities) ForgetRecipe(ctx context.Context, in ForgetRecipeInput) error {
	store, err := a.recipeStore(ctx, in.Job.Tenant)
	if err != nil {
		return err
	}
	r, err := recipeRecordOf(ctx, store, in.Job)
	if err != nil || r == nil || r.UpgradeID != in.UpgradeID {
		return err
	}
	if r.Previous != nil {
		return core.Classify("restore the recipe record of "+in.Job.Key, store.Put(ctx, *r.Previous))
	}
	return core.Classify("remove the recipe record of "+in.Job.Key, store.Remove(ctx, r.Job))
}

// recipeStore is the recipe records of a tenant.
func (a *Activities) recipeStore(ctx context.Context, tenant string) (catalog.RecipeStore, error) {
	if a.Storage == nil {
		return catalog.RecipeStore{}, core.NonRetryable(core.ErrTypeStorage, "worker has no storage configured")
	}
	inv, err := core.Discover(ctx, a.Inventory)
	if err != nil {
		return catalog.RecipeStore{}, err
	}
	for _, t := range inv.Tenants {
		if t.Name == tenant && t.Root != "" {
			return a.catalog().Recipes(ctx, t)
		}
	}
	return catalog.RecipeStore{}, core.NonRetryable(core.ErrTypeInvalidInput, "tenant %q has no root in the inventory: nowhere to record the recipe", tenant)
}
