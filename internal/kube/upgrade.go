package kube

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// JobSpecChange is the shared model of an upgrade's spec change.
type JobSpecChange = inventory.JobSpecChange

// ChangeJobSpec applies change to a suspended job's resource and returns
// its inverse: applied the same way, it puts back exactly what was there
// (keys that did not exist are unset). It refuses a job that is not
// suspended: the operator would upgrade it on its own terms, and the
// savepoint it restores from would not be the one the caller holds.
// Applying a change that is already in place changes nothing, so a retry
// is safe, but its inverse is then empty: callers take the inverse from
// SpecChangeInverse before the job is stopped.
func (c *Client) ChangeJobSpec(ctx context.Context, ref inventory.ObjectRef, change JobSpecChange) (JobSpecChange, error) {
	var inverse JobSpecChange
	gvr, err := c.operatorClient(ref)
	if err != nil {
		return inverse, err
	}
	if err := validateChange(ref, change); err != nil {
		return inverse, err
	}
	_, err = c.updateJob(ctx, gvr, ref, func(u *unstructured.Unstructured, job map[string]any) (bool, error) {
		if st := statusOf(u); st.SpecState != SpecStateSuspended {
			return false, kindError("change spec", describe(ref), ErrPrecondition, "spec.job.state is %q: suspend the job with a savepoint first", st.SpecState)
		}
		inv, changed, cerr := applySpecChange(ref, u, job, change)
		inverse = inv
		return changed, cerr
	})
	return inverse, err
}

func validateChange(ref inventory.ObjectRef, change JobSpecChange) error {
	if change.Image != "" && ref.Kind != KindFlinkDeployment {
		return &ConfigError{Field: "image", Value: change.Image, Valid: "empty for a " + ref.Kind + ": only a FlinkDeployment has spec.image"}
	}
	if change.Parallelism < 0 {
		return &ConfigError{Field: "parallelism", Value: strconv.Itoa(change.Parallelism), Valid: "a positive number, or 0 to keep it"}
	}
	return nil
}

// SpecChangeInverse is what ChangeJobSpec would return for change, read
// without writing anything, whatever state the job is in: an upgrade
// records it before it stops the job, so a rollback can undo the change
// even when the worker that applied it died before it could say.
func (c *Client) SpecChangeInverse(ctx context.Context, ref inventory.ObjectRef, change JobSpecChange) (JobSpecChange, error) {
	gvr, err := c.operatorClient(ref)
	if err != nil {
		return JobSpecChange{}, err
	}
	if err := validateChange(ref, change); err != nil {
		return JobSpecChange{}, err
	}
	u, err := c.dyn.Resource(gvr).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return JobSpecChange{}, newError("get", describe(ref), err)
	}
	job, ok, err := unstructured.NestedMap(u.Object, "spec", "job")
	if err != nil || !ok {
		return JobSpecChange{}, kindError("read spec", describe(ref), ErrInvalidInput, "it has no spec.job")
	}
	inverse, _, err := applySpecChange(ref, u, job, change)
	return inverse, err
}

// applySpecChange changes u (and its spec.job, job) as change says and
// returns the inverse and whether anything changed.
func applySpecChange(ref inventory.ObjectRef, u *unstructured.Unstructured, job map[string]any, change JobSpecChange) (JobSpecChange, bool, error) {
	var inverse JobSpecChange
	changed := false
	if change.Image != "" {
		old, _, _ := unstructured.NestedString(u.Object, "spec", "image")
		if old == "" {
			return inverse, false, kindError("change spec", describe(ref), ErrInvalidInput, "spec.image is not set, so setting it could not be undone: set it in the resource first")
		}
		if old != change.Image {
			inverse.Image, changed = old, true
			if err := unstructured.SetNestedField(u.Object, change.Image, "spec", "image"); err != nil {
				return inverse, false, kindError("change spec", describe(ref), ErrInvalidInput, "set spec.image: %v", err)
			}
		}
	}
	if change.JarURI != "" {
		old, _ := job["jarURI"].(string)
		if old == "" {
			return inverse, false, kindError("change spec", describe(ref), ErrInvalidInput, "spec.job.jarURI is not set, so setting it could not be undone: set it in the resource first")
		}
		if old != change.JarURI {
			inverse.JarURI, changed = old, true
			job["jarURI"] = change.JarURI
		}
	}
	if change.Args != nil {
		old, _, _ := unstructured.NestedStringSlice(job, "args")
		if fmt.Sprint(old) != fmt.Sprint(change.Args) {
			inverse.Args, changed = append([]string{}, old...), true
			args := make([]any, len(change.Args))
			for i, a := range change.Args {
				args[i] = a
			}
			job["args"] = args
		}
	}
	if change.Parallelism != 0 {
		old, _, _ := unstructured.NestedInt64(job, "parallelism")
		if old == 0 {
			return inverse, false, kindError("change spec", describe(ref), ErrInvalidInput, "spec.job.parallelism is not set, so setting it could not be undone: set it in the resource first")
		}
		if old != int64(change.Parallelism) {
			inverse.Parallelism, changed = int(old), true
			job["parallelism"] = int64(change.Parallelism)
		}
	}
	if len(change.FlinkConfiguration) > 0 || len(change.Unset) > 0 {
		conf, _, _ := unstructured.NestedStringMap(u.Object, "spec", "flinkConfiguration")
		if conf == nil {
			conf = map[string]string{}
		}
		keys := make([]string, 0, len(change.FlinkConfiguration))
		for k := range change.FlinkConfiguration {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			old, had := conf[k]
			if had && old == change.FlinkConfiguration[k] {
				continue
			}
			if had {
				if inverse.FlinkConfiguration == nil {
					inverse.FlinkConfiguration = map[string]string{}
				}
				inverse.FlinkConfiguration[k] = old
			} else {
				inverse.Unset = append(inverse.Unset, k)
			}
			conf[k], changed = change.FlinkConfiguration[k], true
		}
		for _, k := range change.Unset {
			if old, had := conf[k]; had {
				if inverse.FlinkConfiguration == nil {
					inverse.FlinkConfiguration = map[string]string{}
				}
				inverse.FlinkConfiguration[k] = old
				delete(conf, k)
				changed = true
			}
		}
		if err := unstructured.SetNestedStringMap(u.Object, conf, "spec", "flinkConfiguration"); err != nil {
			return inverse, false, kindError("change spec", describe(ref), ErrInvalidInput, "set spec.flinkConfiguration: %v", err)
		}
	}
	return inverse, changed, nil
}

// Redeploy starts a suspended job from savepointPath, which need not be the
// savepoint the operator recorded at suspend (a rollback restores the
// previous version from the savepoint taken before the upgrade): it sets
// spec.job.initialSavepointPath and a new spec.job.savepointRedeployNonce,
// which makes the operator redeploy from that path rather than from its own
// record, and waits until the job runs.
func (c *Client) Redeploy(ctx context.Context, ref inventory.ObjectRef, savepointPath string, opts WaitOptions) (ResumeResult, error) {
	res := ResumeResult{Resource: ref, SavepointPath: savepointPath, SetInitialSavepointPath: true}
	gvr, err := c.operatorClient(ref)
	if err != nil {
		return res, err
	}
	if err := inventory.ValidateStorageURI("savepointPath", savepointPath, true); err != nil {
		return res, &ConfigError{Field: "savepointPath", Value: savepointPath, Valid: "a savepoint directory URI, such as hdfs://nn:8020/savepoints/savepoint-abc123-0123456789ab"}
	}
	if opts, err = waitDefaults(opts); err != nil {
		return res, err
	}
	res.ConflictRetries, err = c.updateJob(ctx, gvr, ref, func(u *unstructured.Unstructured, job map[string]any) (bool, error) {
		st := statusOf(u)
		if st.SpecState == SpecStateRunning {
			if st.InitialSavepointPath == savepointPath {
				res.AlreadyRunning = true // a retry after our own update
				return false, nil
			}
			return false, kindError("redeploy", describe(ref), ErrPrecondition, "spec.job.state is running from %q: suspend the job with a savepoint first", st.InitialSavepointPath)
		}
		nonce, _, _ := unstructured.NestedInt64(job, "savepointRedeployNonce")
		job["state"] = SpecStateRunning
		job["upgradeMode"] = UpgradeModeSavepoint
		job["initialSavepointPath"] = savepointPath
		job["savepointRedeployNonce"] = nonce + 1
		return true, nil
	})
	if err != nil {
		return res, err
	}
	err = c.waitFor(ctx, gvr, ref, opts, "job RUNNING redeployed from "+savepointPath, func(st OperatorStatus) (bool, error) {
		if st.SpecState != SpecStateRunning || st.InitialSavepointPath != savepointPath {
			return false, kindError("redeploy", describe(ref), ErrPrecondition, "spec.job was changed by someone else while waiting (state %q, initialSavepointPath %q)", st.SpecState, st.InitialSavepointPath)
		}
		if st.JobState != JobStateRunning || st.LifecycleState == "SUSPENDED" {
			return false, nil
		}
		res.JobState = st.JobState
		return true, nil
	})
	return res, err
}

// UpgradeModeStateless suspends without a savepoint.
const UpgradeModeStateless = "stateless"

// Discard suspends a job without a savepoint (upgradeMode stateless) and
// waits until the operator reports it stopped: a rollback ends a new
// version that may be failing, whose state nobody will restore. A job
// already suspended, in any mode, is left as it is.
func (c *Client) Discard(ctx context.Context, ref inventory.ObjectRef, opts WaitOptions) (string, error) {
	gvr, err := c.operatorClient(ref)
	if err != nil {
		return "", err
	}
	if opts, err = waitDefaults(opts); err != nil {
		return "", err
	}
	if _, err := c.updateJob(ctx, gvr, ref, func(u *unstructured.Unstructured, job map[string]any) (bool, error) {
		if statusOf(u).SpecState == SpecStateSuspended {
			return false, nil
		}
		job["state"] = SpecStateSuspended
		job["upgradeMode"] = UpgradeModeStateless
		return true, nil
	}); err != nil {
		return "", err
	}
	var state string
	err = c.waitFor(ctx, gvr, ref, opts, "job stopped", func(st OperatorStatus) (bool, error) {
		if st.SpecState != SpecStateSuspended {
			return false, kindError("discard", describe(ref), ErrPrecondition, "spec.job.state was changed to %q by someone else while waiting", st.SpecState)
		}
		switch st.JobState {
		case JobStateSuspended, JobStateFinished, JobStateFailed, "CANCELED":
			state = st.JobState
			return true, nil
		}
		return st.LifecycleState == "SUSPENDED", nil
	})
	return state, err
}
