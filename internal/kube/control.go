package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/retry"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// Values of spec.job and status.jobStatus of FlinkDeployment /
// FlinkSessionJob (FKO 1.15 CRDs).
const (
	SpecStateRunning     = "running"
	SpecStateSuspended   = "suspended"
	UpgradeModeSavepoint = "savepoint"
	UpgradeModeLastState = "last-state"

	JobStateRunning   = "RUNNING"
	JobStateSuspended = "SUSPENDED"
	JobStateFinished  = "FINISHED"
	JobStateFailed    = "FAILED"
)

// Where the savepoint taken at suspend was found, in order of preference.
//
// FKO >= 1.10 writes the savepoint of a suspend/upgrade to
// status.jobStatus.upgradeSavepointPath and restores from exactly that path
// when spec.job.state goes back to running, so it is authoritative.
// status.jobStatus.savepointInfo.lastSavepoint.location is the older,
// deprecated record (still written when FlinkStateSnapshot resources are
// disabled); with snapshot resources enabled (the 1.15 default) the operator
// also records the savepoint as a COMPLETED FlinkStateSnapshot whose
// spec.jobReference names the resource. The latter two are fallbacks for
// operators that do not fill upgradeSavepointPath; if they disagree with it,
// upgradeSavepointPath wins because that is what the operator will use.
const (
	SourceUpgradeSavepointPath = "status.jobStatus.upgradeSavepointPath"
	SourceLastSavepoint        = "status.jobStatus.savepointInfo.lastSavepoint.location"
	SourceStateSnapshot        = "FlinkStateSnapshot"
)

// The operator's model is shared with the activities through inventory,
// so no layer copies it field by field.
type (
	WaitOptions    = inventory.OperatorWait
	SavepointMarks = inventory.SavepointMarks
	OperatorStatus = inventory.OperatorStatus
	SuspendResult  = inventory.SuspendResult
	ResumeResult   = inventory.ResumeResult
)

// SavepointMarks reads the savepoint records of ref, to pass to Suspend as
// WaitOptions.Known.
func (c *Client) SavepointMarks(ctx context.Context, ref inventory.ObjectRef) (SavepointMarks, error) {
	st, err := c.OperatorStatus(ctx, ref)
	if err != nil {
		return SavepointMarks{}, err
	}
	snaps, err := c.completedSnapshots(ctx, ref)
	if err != nil {
		return SavepointMarks{}, err
	}
	m := SavepointMarks{UpgradeSavepointPath: st.UpgradeSavepointPath, LastSavepoint: st.LastSavepoint, LastSavepointMillis: st.LastSavepointMillis}
	for _, s := range snaps {
		m.Snapshots = append(m.Snapshots, s.name)
	}
	return m, nil
}

// markSet indexes m for the suspend's comparisons.
func markSet(m SavepointMarks) savepointMarks {
	sm := savepointMarks{upgrade: m.UpgradeSavepointPath, last: m.LastSavepoint, lastMillis: m.LastSavepointMillis, snapshotNames: map[string]bool{}}
	for _, n := range m.Snapshots {
		sm.snapshotNames[n] = true
	}
	return sm
}

// waitDefaults fills in the defaults of o and checks it.
func waitDefaults(o WaitOptions) (WaitOptions, error) {
	if o.Timeout < 0 || o.PollInterval < 0 {
		return o, &ConfigError{Field: "WaitOptions", Value: fmt.Sprintf("timeout=%s poll=%s", o.Timeout, o.PollInterval), Valid: "non-negative durations (0 means the default)"}
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.PollInterval == 0 {
		o.PollInterval = 2 * time.Second
	}
	if o.PollInterval > o.Timeout {
		o.PollInterval = o.Timeout
	}
	return o, nil
}

func describe(ref inventory.ObjectRef) string { return ref.Kind + " " + ref.Namespace + "/" + ref.Name }

func validateOperatorRef(ref inventory.ObjectRef) (schema.GroupVersionResource, error) {
	var gvr schema.GroupVersionResource
	switch ref.Kind {
	case KindFlinkDeployment:
		gvr = FlinkDeploymentGVR
	case KindFlinkSessionJob:
		gvr = FlinkSessionJobGVR
	default:
		return gvr, &ConfigError{Field: "resource.kind", Value: ref.Kind, Valid: "FlinkDeployment or FlinkSessionJob"}
	}
	if ref.APIVersion != "" && ref.APIVersion != operatorAPIVersion {
		return gvr, &ConfigError{Field: "resource.apiVersion", Value: ref.APIVersion, Valid: operatorAPIVersion + " (or empty)"}
	}
	if errs := validation.IsDNS1123Label(ref.Namespace); len(errs) > 0 {
		return gvr, &ConfigError{Field: "resource.namespace", Value: ref.Namespace, Valid: "a namespace name (DNS-1123 label)"}
	}
	if errs := validation.IsDNS1123Subdomain(ref.Name); len(errs) > 0 {
		return gvr, &ConfigError{Field: "resource.name", Value: ref.Name, Valid: "an object name (DNS-1123 subdomain)"}
	}
	return gvr, nil
}

func (c *Client) operatorClient(ref inventory.ObjectRef) (schema.GroupVersionResource, error) {
	gvr, err := validateOperatorRef(ref)
	if err != nil {
		return gvr, err
	}
	if c.dyn == nil {
		return gvr, &ConfigError{Field: "disableOperator", Value: "true", Valid: "false (with a dynamic client) to control " + describe(ref)}
	}
	return gvr, nil
}

// OperatorStatus reads spec.job and status of a FlinkDeployment or
// FlinkSessionJob.
func (c *Client) OperatorStatus(ctx context.Context, ref inventory.ObjectRef) (OperatorStatus, error) {
	gvr, err := c.operatorClient(ref)
	if err != nil {
		return OperatorStatus{}, err
	}
	u, err := c.dyn.Resource(gvr).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return OperatorStatus{}, newError("get", describe(ref), err)
	}
	return statusOf(u), nil
}

func statusOf(u *unstructured.Unstructured) OperatorStatus {
	str := func(path ...string) string {
		v, _, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
		if v == nil {
			return ""
		}
		return fmt.Sprint(v)
	}
	s := OperatorStatus{
		SpecState:                  str("spec", "job", "state"),
		UpgradeMode:                str("spec", "job", "upgradeMode"),
		InitialSavepointPath:       str("spec", "job", "initialSavepointPath"),
		LifecycleState:             str("status", "lifecycleState"),
		JobState:                   str("status", "jobStatus", "state"),
		JobID:                      str("status", "jobStatus", "jobId"),
		UpgradeSavepointPath:       str("status", "jobStatus", "upgradeSavepointPath"),
		LastSavepoint:              str("status", "jobStatus", "savepointInfo", "lastSavepoint", "location"),
		JobManagerDeploymentStatus: str("status", "jobManagerDeploymentStatus"),
		Error:                      str("status", "error"),
		ResourceVersion:            u.GetResourceVersion(),
	}
	s.ReconciledUpgradeMode, s.ReconciledState = reconciledJob(str("status", "reconciliationStatus", "lastReconciledSpec"))
	if v, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "jobStatus", "savepointInfo", "lastSavepoint", "timeStamp"); ok {
		switch n := v.(type) {
		case int64:
			s.LastSavepointMillis = n
		case float64:
			s.LastSavepointMillis = int64(n)
		}
	}
	return s
}

// reconciledJob reads job.upgradeMode and job.state of the spec the
// operator last acted on. FKO keeps it as a JSON string
// (ReconciliationStatus.lastReconciledSpec) written by
// SpecUtils.writeSpecWithMeta: {"spec": {...}, "resource_metadata": {...}},
// or the bare spec in the format before resource_metadata. An unreadable
// one gives empty strings.
func reconciledJob(raw string) (upgradeMode, state string) {
	if raw == "" {
		return "", ""
	}
	type job struct {
		UpgradeMode string `json:"upgradeMode"`
		State       string `json:"state"`
	}
	var doc struct {
		Spec *struct {
			Job job `json:"job"`
		} `json:"spec"`
		Meta json.RawMessage `json:"resource_metadata"`
		Job  job             `json:"job"`
	}
	if json.Unmarshal([]byte(raw), &doc) != nil {
		return "", ""
	}
	if doc.Meta != nil && doc.Spec != nil {
		return doc.Spec.Job.UpgradeMode, doc.Spec.Job.State
	}
	return doc.Job.UpgradeMode, doc.Job.State
}

// savepointMarks are the savepoint records seen before a suspend, so a
// savepoint the operator takes for this suspend can be told from old ones.
type savepointMarks struct {
	upgrade       string
	last          string
	lastMillis    int64
	snapshotNames map[string]bool
}

// Suspend sets spec.job.state=suspended and spec.job.upgradeMode=savepoint,
// then waits until the operator reports the job SUSPENDED or FINISHED and
// a savepoint taken for this suspend. The update carries the
// resourceVersion read just before and is retried on conflict. If the
// resource is already suspended it only waits for and returns the recorded
// savepoint, so Suspend is idempotent.
func (c *Client) Suspend(ctx context.Context, ref inventory.ObjectRef, opts WaitOptions) (SuspendResult, error) {
	res := SuspendResult{Resource: ref}
	gvr, err := c.operatorClient(ref)
	if err != nil {
		return res, err
	}
	if opts, err = waitDefaults(opts); err != nil {
		return res, err
	}
	// Snapshots are listed before the update: one the operator completes
	// right after it must count as new.
	before, err := c.completedSnapshots(ctx, ref)
	if err != nil {
		return res, err
	}
	var marks savepointMarks
	if opts.Known != nil {
		marks = markSet(*opts.Known)
	}
	retries, err := c.updateJob(ctx, gvr, ref, func(u *unstructured.Unstructured, job map[string]any) (bool, error) {
		st := statusOf(u)
		res.AlreadySuspended = false
		if st.SpecState == SpecStateSuspended {
			if st.UpgradeMode != UpgradeModeSavepoint {
				return false, kindError("suspend", describe(ref), ErrPrecondition,
					"already suspended with upgradeMode %q, so the operator took no savepoint; resume it or suspend it with upgradeMode savepoint by hand", st.UpgradeMode)
			}
			// Suspended with a savepoint already (an earlier attempt or a
			// person). Without Known, any savepoint recorded is the one to
			// restore; with it, only one newer than Known.
			res.AlreadySuspended = true
			return false, nil
		}
		if err := forStSavepointFormat(u); err != nil {
			return false, kindError("suspend", describe(ref), ErrPrecondition, "%v", err)
		}
		if opts.Known == nil {
			marks = savepointMarks{upgrade: st.UpgradeSavepointPath, last: st.LastSavepoint, lastMillis: st.LastSavepointMillis,
				snapshotNames: map[string]bool{}}
			for _, s := range before {
				marks.snapshotNames[s.name] = true
			}
		}
		job["state"] = SpecStateSuspended
		job["upgradeMode"] = UpgradeModeSavepoint
		return true, nil
	})
	res.ConflictRetries = retries
	if err != nil {
		return res, err
	}
	err = c.waitFor(ctx, gvr, ref, opts, "job SUSPENDED or FINISHED with a savepoint taken for the suspend", func(st OperatorStatus) (bool, error) {
		if st.SpecState != SpecStateSuspended {
			return false, kindError("suspend", describe(ref), ErrPrecondition, "spec.job.state was changed to %q by someone else while waiting", st.SpecState)
		}
		// AbstractJobReconciler.getJobUpgrade falls back to last-state for
		// a job that is not running and records the mode it suspended
		// with in lastReconciledSpec: no savepoint will come.
		if st.ReconciledState == SpecStateSuspended && st.ReconciledUpgradeMode == UpgradeModeLastState {
			return false, kindError("suspend", describe(ref), ErrLastStateFallback,
				"the operator suspended the job with upgradeMode last-state instead of a savepoint (kubernetes.operator.job.upgrade.last-state-fallback.enabled; the job was not running: jobStatus.state %q), so no savepoint was taken and resuming it restores from its last checkpoint", st.JobState)
		}
		if st.JobState != JobStateSuspended && st.JobState != JobStateFinished {
			return false, nil
		}
		path, source, err := c.newSavepoint(ctx, ref, st, marks)
		if err != nil || path == "" {
			return false, err
		}
		res.SavepointPath, res.SavepointSource, res.JobState = path, source, st.JobState
		return true, nil
	})
	return res, err
}

// newSavepoint picks the savepoint recorded after marks, preferring the
// path the operator restores from.
func (c *Client) newSavepoint(ctx context.Context, ref inventory.ObjectRef, st OperatorStatus, marks savepointMarks) (string, string, error) {
	if st.UpgradeSavepointPath != "" && st.UpgradeSavepointPath != marks.upgrade {
		return st.UpgradeSavepointPath, SourceUpgradeSavepointPath, nil
	}
	if st.LastSavepoint != "" && (st.LastSavepoint != marks.last || st.LastSavepointMillis > marks.lastMillis) {
		return st.LastSavepoint, SourceLastSavepoint, nil
	}
	snaps, err := c.completedSnapshots(ctx, ref)
	if err != nil {
		return "", "", err
	}
	for _, s := range snaps { // newest first
		if !marks.snapshotNames[s.name] {
			return s.path, SourceStateSnapshot + " " + ref.Namespace + "/" + s.name, nil
		}
	}
	return "", "", nil
}

type snapshot struct {
	name    string
	path    string
	created time.Time
}

// completedSnapshots lists COMPLETED savepoint FlinkStateSnapshots of ref,
// newest first. Without the FlinkStateSnapshot CRD there are none.
func (c *Client) completedSnapshots(ctx context.Context, ref inventory.ObjectRef) ([]snapshot, error) {
	list, err := c.dyn.Resource(FlinkStateSnapshotGVR).Namespace(ref.Namespace).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, newError("list", "FlinkStateSnapshots in "+ref.Namespace, err)
	}
	var out []snapshot
	for i := range list.Items {
		u := &list.Items[i]
		kind, _, _ := unstructured.NestedString(u.Object, "spec", "jobReference", "kind")
		name, _, _ := unstructured.NestedString(u.Object, "spec", "jobReference", "name")
		state, _, _ := unstructured.NestedString(u.Object, "status", "state")
		path, _, _ := unstructured.NestedString(u.Object, "status", "path")
		_, isSavepoint, _ := unstructured.NestedMap(u.Object, "spec", "savepoint")
		if kind == ref.Kind && name == ref.Name && state == "COMPLETED" && isSavepoint && path != "" {
			out = append(out, snapshot{name: u.GetName(), path: path, created: u.GetCreationTimestamp().Time})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].created.Equal(out[j].created) {
			return out[i].created.After(out[j].created)
		}
		return out[i].name > out[j].name
	})
	return out, nil
}

// Resume sets spec.job.state=running so the operator restores the job from
// savepointPath, and waits until it reports RUNNING. It refuses when the
// operator recorded a different upgrade savepoint (it would restore from
// that one); when it recorded none, spec.job.initialSavepointPath is set
// to savepointPath. After RUNNING it checks the operator's record still
// names savepointPath.
func (c *Client) Resume(ctx context.Context, ref inventory.ObjectRef, savepointPath string, opts WaitOptions) (ResumeResult, error) {
	res := ResumeResult{Resource: ref, SavepointPath: savepointPath}
	gvr, err := c.operatorClient(ref)
	if err != nil {
		return res, err
	}
	if err := inventory.ValidateStorageURI("savepointPath", savepointPath, true); err != nil {
		return res, &ConfigError{Field: "savepointPath", Value: savepointPath, Valid: "the savepoint directory URI recorded at suspend, such as hdfs://nn:8020/savepoints/savepoint-abc123-0123456789ab"}
	}
	if opts, err = waitDefaults(opts); err != nil {
		return res, err
	}
	retries, err := c.updateJob(ctx, gvr, ref, func(u *unstructured.Unstructured, job map[string]any) (bool, error) {
		st := statusOf(u)
		res.SetInitialSavepointPath = false
		if st.SpecState == SpecStateRunning {
			if st.JobState == JobStateRunning && st.UpgradeSavepointPath != "" && st.UpgradeSavepointPath != savepointPath {
				return false, kindError("resume", describe(ref), ErrSavepointMismatch, "already running, restored from %s, not %s", st.UpgradeSavepointPath, savepointPath)
			}
			res.AlreadyRunning = true
			return false, nil
		}
		if st.UpgradeSavepointPath != "" && st.UpgradeSavepointPath != savepointPath {
			return false, kindError("resume", describe(ref), ErrSavepointMismatch,
				"the operator recorded upgrade savepoint %s and would restore from it, not from %s", st.UpgradeSavepointPath, savepointPath)
		}
		job["state"] = SpecStateRunning
		job["upgradeMode"] = UpgradeModeSavepoint
		if st.UpgradeSavepointPath == "" {
			job["initialSavepointPath"] = savepointPath
			res.SetInitialSavepointPath = true
		}
		return true, nil
	})
	res.ConflictRetries = retries
	if err != nil {
		return res, err
	}
	err = c.waitFor(ctx, gvr, ref, opts, "job RUNNING restored from "+savepointPath, func(st OperatorStatus) (bool, error) {
		if st.SpecState != SpecStateRunning {
			return false, kindError("resume", describe(ref), ErrPrecondition, "spec.job.state was changed to %q by someone else while waiting", st.SpecState)
		}
		if st.JobState != JobStateRunning || st.LifecycleState == "SUSPENDED" {
			return false, nil
		}
		if st.UpgradeSavepointPath != "" && st.UpgradeSavepointPath != savepointPath {
			return false, kindError("resume", describe(ref), ErrSavepointMismatch, "the operator restored from %s, not %s", st.UpgradeSavepointPath, savepointPath)
		}
		if res.SetInitialSavepointPath && st.InitialSavepointPath != savepointPath {
			return false, kindError("resume", describe(ref), ErrSavepointMismatch, "spec.job.initialSavepointPath is %q, not %s", st.InitialSavepointPath, savepointPath)
		}
		res.JobState = st.JobState
		return true, nil
	})
	return res, err
}

// updateJob reads the resource, lets mutate change spec.job and writes it
// back with the resourceVersion it read; a conflict re-reads and retries.
// It returns how many conflicts it retried.
func (c *Client) updateJob(ctx context.Context, gvr schema.GroupVersionResource, ref inventory.ObjectRef,
	mutate func(u *unstructured.Unstructured, job map[string]any) (bool, error)) (int, error) {
	res := c.dyn.Resource(gvr).Namespace(ref.Namespace)
	conflicts, attempt := 0, 0
	var final error
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		attempt++
		u, err := res.Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			final = newError("get", describe(ref), err)
			return nil // not a conflict: stop retrying, report below
		}
		job, ok, err := unstructured.NestedMap(u.Object, "spec", "job")
		if err != nil || !ok {
			final = kindError("update", describe(ref), ErrInvalidInput, "it has no spec.job (a session cluster has no job of its own; suspend its FlinkSessionJobs)")
			return nil
		}
		changed, err := mutate(u, job)
		if err != nil || !changed {
			final = err
			return nil
		}
		if err := unstructured.SetNestedMap(u.Object, job, "spec", "job"); err != nil {
			final = kindError("update", describe(ref), ErrInvalidInput, "set spec.job: %v", err)
			return nil
		}
		if c.beforeUpdate != nil {
			c.beforeUpdate(ctx, attempt)
		}
		_, err = res.Update(ctx, u, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			conflicts++
			return err
		}
		final = newError("update", describe(ref), err)
		return nil
	})
	if err != nil {
		return conflicts, newError("update", describe(ref)+fmt.Sprintf(" (gave up after %d conflicts)", conflicts), err)
	}
	return conflicts, final
}

// waitFor polls the resource until done says so, done fails, ctx ends or
// opts.Timeout passes; the timeout error names the object, what was
// awaited and the last status seen.
func (c *Client) waitFor(ctx context.Context, gvr schema.GroupVersionResource, ref inventory.ObjectRef, opts WaitOptions,
	want string, done func(OperatorStatus) (bool, error)) error {
	deadline := time.NewTimer(opts.Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(opts.PollInterval)
	defer tick.Stop()
	var last OperatorStatus
	var lastErr error
	for {
		u, err := c.dyn.Resource(gvr).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			last, lastErr = statusOf(u), nil
			ok, err := done(last)
			if err != nil {
				return err
			}
			if ok {
				return nil
			}
		case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
			return newError("get", describe(ref), err)
		case ctx.Err() == nil:
			lastErr = err // transient: keep polling until the deadline
		}
		select {
		case <-ctx.Done():
			return newError("wait for", describe(ref), fmt.Errorf("%s: %w", want, ctx.Err()))
		case <-deadline.C:
			detail := "last seen: " + last.String()
			if lastErr != nil {
				detail += "; last read error: " + lastErr.Error()
			}
			return kindError("wait for", describe(ref), ErrOperatorTimeout, "no %s after %s; %s", want, opts.Timeout, detail)
		case <-tick.C:
		}
	}
}
