//go:build realpeers

package kube

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var fastWait = WaitOptions{Timeout: 30 * time.Second, PollInterval: 100 * time.Millisecond}

// TestSuspendResumeWithOperator: suspend with savepoint, observe the
// savepoint the operator records, resume from exactly it; a concurrent
// writer bumps resourceVersion between our read and write, and the update
// is retried.
func TestSuspendResumeWithOperator(t *testing.T) {
	e := newEnv(t)
	ns := e.ns("ctl", nil)
	e.flinkDeployment(ns, "orders", map[string]any{"state.savepoints.dir": "hdfs://nn:8020/sp"}, appJob())
	e.setStatus(ns, "orders", map[string]any{"lifecycleState": "STABLE", "jobStatus": map[string]any{"state": "RUNNING", "jobId": strings.Repeat("cd", 16)}})
	op := &fakeOperator{dyn: e.dyn, ns: ns, name: "orders", mode: recordUpgradePath, delay: 300 * time.Millisecond,
		savepoint: "hdfs://nn:8020/sp/savepoint-cdcdcd-0123456789ab"}
	op.run(e.ctx, t)

	c := e.client(Config{Namespaces: []string{ns}, TenantRootTemplate: "/t/{namespace}"}, nil)
	var bumps int
	c.beforeUpdate = func(ctx context.Context, attempt int) {
		if attempt > 1 {
			return
		}
		// Another writer (a person, the operator) changes the object after
		// we read it: our update must conflict and be retried.
		u, err := e.dyn.Resource(FlinkDeploymentGVR).Namespace(ns).Get(ctx, "orders", metav1.GetOptions{})
		if err != nil {
			t.Errorf("concurrent writer get: %v", err)
			return
		}
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels["touched-by"] = "concurrent-writer"
		u.SetLabels(labels)
		if _, err := e.dyn.Resource(FlinkDeploymentGVR).Namespace(ns).Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Errorf("concurrent writer update: %v", err)
		}
		bumps++
	}
	r := ref(KindFlinkDeployment, ns, "orders")
	start := time.Now()
	sus, err := c.Suspend(e.ctx, r, fastWait)
	if err != nil {
		t.Fatalf("Suspend: %v", err)
	}
	t.Logf("suspend observed savepoint in %s: %+v", time.Since(start).Round(time.Millisecond), sus)
	if bumps != 1 || sus.ConflictRetries != 1 {
		t.Fatalf("want 1 concurrent bump and 1 conflict retry, got %d bumps, %d retries", bumps, sus.ConflictRetries)
	}
	if sus.SavepointPath != op.savepoint || sus.SavepointSource != SourceUpgradeSavepointPath || sus.JobState != JobStateSuspended || sus.AlreadySuspended {
		t.Fatalf("suspend result %+v", sus)
	}
	st, err := c.OperatorStatus(e.ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if st.SpecState != SpecStateSuspended || st.UpgradeMode != UpgradeModeSavepoint {
		t.Fatalf("spec after suspend: %+v", st)
	}
	u, _ := e.dyn.Resource(FlinkDeploymentGVR).Namespace(ns).Get(e.ctx, "orders", metav1.GetOptions{})
	if u.GetLabels()["touched-by"] != "concurrent-writer" {
		t.Fatal("the concurrent writer's change was lost: the retried update must re-read, not overwrite")
	}

	// Suspend again is idempotent: no update, same savepoint.
	again, err := c.Suspend(e.ctx, r, fastWait)
	if err != nil || !again.AlreadySuspended || again.SavepointPath != op.savepoint {
		t.Fatalf("second Suspend: %+v, %v", again, err)
	}

	c.beforeUpdate = nil
	res, err := c.Resume(e.ctx, r, sus.SavepointPath, fastWait)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if res.JobState != JobStateRunning || res.SetInitialSavepointPath {
		t.Fatalf("resume result %+v", res)
	}
	suspends, resumes, restored := op.counts()
	if suspends != 1 || resumes != 1 || restored != op.savepoint {
		t.Fatalf("operator saw %d suspends, %d resumes, restored from %q; want 1, 1, %q", suspends, resumes, restored, op.savepoint)
	}
	if again, err := c.Resume(e.ctx, r, sus.SavepointPath, fastWait); err != nil || !again.AlreadyRunning {
		t.Fatalf("second Resume: %+v, %v", again, err)
	}
}

// TestSuspendSnapshotOnly: an operator that records the savepoint only as
// a FlinkStateSnapshot; Resume then sets spec.job.initialSavepointPath.
func TestSuspendSnapshotOnly(t *testing.T) {
	e := newEnv(t)
	ns := e.ns("ctl-snap", nil)
	e.flinkDeployment(ns, "clicks", nil, appJob())
	e.setStatus(ns, "clicks", map[string]any{"lifecycleState": "STABLE", "jobStatus": map[string]any{"state": "RUNNING"}})
	op := &fakeOperator{dyn: e.dyn, ns: ns, name: "clicks", mode: recordSnapshotOnly, delay: 200 * time.Millisecond,
		savepoint: "hdfs://nn:8020/sp/savepoint-abcdef-ba9876543210"}
	op.run(e.ctx, t)
	c := e.client(Config{Namespaces: []string{ns}, TenantRootTemplate: "/t/{namespace}"}, nil)
	r := ref(KindFlinkDeployment, ns, "clicks")
	sus, err := c.Suspend(e.ctx, r, fastWait)
	if err != nil {
		t.Fatalf("Suspend: %v", err)
	}
	if sus.SavepointPath != op.savepoint || !strings.HasPrefix(sus.SavepointSource, SourceStateSnapshot) {
		t.Fatalf("suspend result %+v", sus)
	}
	res, err := c.Resume(e.ctx, r, sus.SavepointPath, fastWait)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	st, _ := c.OperatorStatus(e.ctx, r)
	_, _, restored := op.counts()
	if !res.SetInitialSavepointPath || st.InitialSavepointPath != op.savepoint || restored != op.savepoint {
		t.Fatalf("resume %+v, spec initialSavepointPath %q, operator restored from %q", res, st.InitialSavepointPath, restored)
	}
}

// TestSuspendOperatorNeverReacts: with no operator the call times out with
// an error naming the object and what it waited for.
func TestSuspendOperatorNeverReacts(t *testing.T) {
	e := newEnv(t)
	ns := e.ns("ctl-dead", nil)
	e.flinkDeployment(ns, "stuck", nil, appJob())
	e.setStatus(ns, "stuck", map[string]any{"lifecycleState": "STABLE", "jobStatus": map[string]any{"state": "RUNNING"}})
	c := e.client(Config{Namespaces: []string{ns}, TenantRootTemplate: "/t/{namespace}"}, nil)
	start := time.Now()
	_, err := c.Suspend(e.ctx, ref(KindFlinkDeployment, ns, "stuck"), WaitOptions{Timeout: 1500 * time.Millisecond, PollInterval: 100 * time.Millisecond})
	took := time.Since(start)
	if !errors.Is(err, ErrOperatorTimeout) || !IsRetryable(err) {
		t.Fatalf("want retryable ErrOperatorTimeout, got %v", err)
	}
	for _, want := range []string{"FlinkDeployment " + ns + "/stuck", "SUSPENDED", `jobStatus.state="RUNNING"`} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("timeout error %q lacks %q", err, want)
		}
	}
	if took < 1500*time.Millisecond || took > 10*time.Second {
		t.Fatalf("timeout after %s, want about 1.5s", took)
	}
}

// TestResumeRefusesOtherSavepoint: the operator recorded one savepoint;
// resuming "from" another is refused and the spec stays suspended.
func TestResumeRefusesOtherSavepoint(t *testing.T) {
	e := newEnv(t)
	ns := e.ns("ctl-mismatch", nil)
	job := appJob()
	job["state"] = "suspended"
	e.flinkDeployment(ns, "pay", nil, job)
	e.setStatus(ns, "pay", map[string]any{"lifecycleState": "SUSPENDED", "jobStatus": map[string]any{
		"state": "SUSPENDED", "upgradeSavepointPath": "hdfs://nn:8020/sp/savepoint-111111-aaaaaaaaaaaa"}})
	c := e.client(Config{Namespaces: []string{ns}, TenantRootTemplate: "/t/{namespace}"}, nil)
	r := ref(KindFlinkDeployment, ns, "pay")
	_, err := c.Resume(e.ctx, r, "hdfs://nn:8020/sp/savepoint-222222-bbbbbbbbbbbb", fastWait)
	if !errors.Is(err, ErrSavepointMismatch) || IsRetryable(err) || !strings.Contains(err.Error(), "savepoint-111111") {
		t.Fatalf("want non-retryable ErrSavepointMismatch naming the recorded savepoint, got %v", err)
	}
	st, _ := c.OperatorStatus(e.ctx, r)
	if st.SpecState != SpecStateSuspended {
		t.Fatalf("spec changed despite refusal: %+v", st)
	}
}

func TestControlRejectsBadInput(t *testing.T) {
	e := newEnv(t)
	ns := e.ns("ctl-input", nil)
	e.flinkDeployment(ns, "session", nil, nil)
	c := e.client(Config{Namespaces: []string{ns}, TenantRootTemplate: "/t/{namespace}"}, nil)
	cases := map[string]func() error{
		"wrong kind": func() error {
			_, err := c.Suspend(e.ctx, ref("Deployment", ns, "x"), fastWait)
			return err
		},
		"bad name": func() error {
			_, err := c.Suspend(e.ctx, ref(KindFlinkDeployment, ns, "Bad_Name"), fastWait)
			return err
		},
		"session cluster has no job": func() error {
			_, err := c.Suspend(e.ctx, ref(KindFlinkDeployment, ns, "session"), fastWait)
			return err
		},
		"relative savepoint": func() error {
			_, err := c.Resume(e.ctx, ref(KindFlinkDeployment, ns, "session"), "savepoint-1", fastWait)
			return err
		},
		"negative timeout": func() error {
			_, err := c.Suspend(e.ctx, ref(KindFlinkDeployment, ns, "session"), WaitOptions{Timeout: -1})
			return err
		},
	}
	for name, call := range cases {
		t.Run(name, func(t *testing.T) {
			err := call()
			if !errors.Is(err, ErrInvalidInput) || IsRetryable(err) {
				t.Fatalf("want non-retryable ErrInvalidInput, got %v", err)
			}
		})
	}
	_, err := c.Suspend(e.ctx, ref(KindFlinkDeployment, ns, "absent"), fastWait)
	if !errors.Is(err, ErrNotFound) || IsRetryable(err) || !strings.Contains(err.Error(), "FlinkDeployment "+ns+"/absent") {
		t.Fatalf("want ErrNotFound naming the object, got %v", err)
	}
}

// TestSuspendDetectsLastStateFallback: asked to suspend a job that is not
// running with a savepoint, FKO falls back to last-state
// (AbstractJobReconciler.getJobUpgrade, job.upgrade.last-state-fallback)
// and takes no savepoint. As FKO 1.15 does, the stand-in records the
// suspend in lastReconciledSpec (SpecUtils.writeSpecWithMeta) with
// upgradeMode last-state, sets jobStatus.state FINISHED
// (AbstractFlinkService.cancelJob) and deletes the JobManager. Suspend says
// so at once instead of waiting for a savepoint that never comes.
func TestSuspendDetectsLastStateFallback(t *testing.T) {
	e := newEnv(t)
	ns := e.ns("ctl-fallback", nil)
	e.flinkDeployment(ns, "failing", nil, appJob())
	e.setStatus(ns, "failing", map[string]any{"lifecycleState": "DEPLOYED", "jobManagerDeploymentStatus": "READY",
		"jobStatus": map[string]any{"state": "RESTARTING", "jobId": strings.Repeat("ef", 16)}})
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			u, err := e.dyn.Resource(FlinkDeploymentGVR).Namespace(ns).Get(ctx, "failing", metav1.GetOptions{})
			if err == nil && statusOf(u).SpecState == SpecStateSuspended {
				spec, _, _ := unstructured.NestedMap(u.Object, "spec")
				job, _ := spec["job"].(map[string]any)
				job["upgradeMode"] = UpgradeModeLastState
				raw, _ := json.Marshal(map[string]any{"spec": spec, "resource_metadata": map[string]any{"apiVersion": operatorAPIVersion, "firstDeployment": false}})
				_ = writeStatus(ctx, e.dyn, ns, "failing", map[string]any{"lifecycleState": "SUSPENDED", "jobManagerDeploymentStatus": "MISSING",
					"jobStatus":            map[string]any{"state": JobStateFinished, "jobId": strings.Repeat("ef", 16)},
					"reconciliationStatus": map[string]any{"state": "DEPLOYED", "lastReconciledSpec": string(raw)}})
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	c := e.client(Config{Namespaces: []string{ns}, TenantRootTemplate: "/t/{namespace}"}, nil)
	start := time.Now()
	_, err := c.Suspend(e.ctx, ref(KindFlinkDeployment, ns, "failing"), WaitOptions{Timeout: time.Minute, PollInterval: 100 * time.Millisecond})
	if !errors.Is(err, ErrLastStateFallback) || IsRetryable(err) {
		t.Fatalf("want non-retryable ErrLastStateFallback, got %v", err)
	}
	if !strings.Contains(err.Error(), "no savepoint was taken") || time.Since(start) > 30*time.Second {
		t.Fatalf("error %q after %s; want it at once, saying no savepoint was taken", err, time.Since(start))
	}
	if m, s := reconciledJob(`{"job":{"upgradeMode":"savepoint","state":"running"}}`); m != "savepoint" || s != "running" {
		t.Fatalf("the spec format before resource_metadata: %q %q", m, s)
	}
}

// TestSuspendRefusesForStWithCanonicalSavepoints: a FlinkDeployment whose
// spec.flinkConfiguration runs ForSt while the operator would take its
// default CANONICAL savepoint is not suspended (ForSt fails the job over
// on a canonical savepoint, so none would come); the spec stays running
// and the error says what to set.
func TestSuspendRefusesForStWithCanonicalSavepoints(t *testing.T) {
	e := newEnv(t)
	ns := e.ns("ctl-forst", nil)
	e.flinkDeployment(ns, "forst", map[string]any{"state.backend.type": "forst"}, appJob())
	e.setStatus(ns, "forst", map[string]any{"lifecycleState": "STABLE", "jobStatus": map[string]any{"state": "RUNNING"}})
	c := e.client(Config{Namespaces: []string{ns}, TenantRootTemplate: "/t/{namespace}"}, nil)
	r := ref(KindFlinkDeployment, ns, "forst")
	_, err := c.Suspend(e.ctx, r, fastWait)
	if !errors.Is(err, ErrPrecondition) || IsRetryable(err) || !strings.Contains(err.Error(), operatorSavepointFormatKey+": NATIVE") {
		t.Fatalf("want non-retryable ErrPrecondition saying to set %s: NATIVE, got %v", operatorSavepointFormatKey, err)
	}
	st, err := c.OperatorStatus(e.ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if st.SpecState == SpecStateSuspended {
		t.Fatalf("spec suspended despite the refusal: %+v", st)
	}
}
