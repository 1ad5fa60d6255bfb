//go:build realpeers

package activities_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/upgrades"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/kube"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// operatorEnv is a namespace on the real sandbox kube-apiserver with the
// Flink operator CRDs, and activities whose Operator port is the real
// kube.Client behind app.KubeOperator.
type operatorEnv struct {
	t    *testing.T
	ctx  context.Context
	dyn  dynamic.Interface
	ns   string
	acts *app.Ports
}

func newOperatorEnv(t *testing.T, prefix string) *operatorEnv {
	t.Helper()
	k, cs, dyn := sandbox.RequireFlinkKube(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	ns := prefix + "-" + hex.EncodeToString(b)
	if err := k.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	kc, err := kube.New(cs, dyn, kube.Config{Namespaces: []string{ns}, TenantRootTemplate: "/t/{namespace}"})
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := app.NewKubeFleet("", kc)
	if err != nil {
		t.Fatal(err)
	}
	return &operatorEnv{t: t, ctx: ctx, dyn: dyn, ns: ns,
		acts: &app.Ports{Operator: app.KubeOperator{Fleet: fleet}, PollInterval: 100 * time.Millisecond}}
}

// run executes one activity in the Temporal test activity environment
// (which serialises input, output and errors like a worker) and decodes
// its result.
func (e *operatorEnv) run(fn, in, out interface{}) error {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	app.RegisterActivities(env, e.acts)
	v, err := env.ExecuteActivity(fn, in)
	if err != nil || out == nil { // nil: an activity that returns only an error
		return err
	}
	return v.Get(out)
}

// flinkDeployment creates an application FlinkDeployment whose job the
// operator reports RUNNING, and returns the job target a window holds.
func (e *operatorEnv) flinkDeployment(name string, status map[string]any, state string) core.JobTarget {
	e.t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "flink.apache.org/v1beta1", "kind": kube.KindFlinkDeployment,
		"metadata": map[string]any{"name": name, "namespace": e.ns},
		"spec": map[string]any{
			"image": "flink:1.20", "flinkVersion": "v1_20", "serviceAccount": "flink",
			"flinkConfiguration": map[string]any{"state.savepoints.dir": "hdfs://nn:8020/sp"},
			"jobManager":         map[string]any{"resource": map[string]any{"memory": "2048m", "cpu": int64(1)}},
			"taskManager":        map[string]any{"resource": map[string]any{"memory": "2048m", "cpu": int64(1)}},
			"job": map[string]any{"jarURI": "local:///opt/flink/examples/streaming/StateMachineExample.jar",
				"parallelism": int64(2), "upgradeMode": "savepoint", "state": state},
		},
	}}
	if _, err := e.dyn.Resource(kube.FlinkDeploymentGVR).Namespace(e.ns).Create(e.ctx, u, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("create FlinkDeployment %s/%s: %v", e.ns, name, err)
	}
	if err := writeOperatorStatus(e.ctx, e.dyn, e.ns, name, status); err != nil {
		e.t.Fatal(err)
	}
	return operatorTarget(e.ns, name)
}

func operatorTarget(ns, name string) core.JobTarget {
	return core.JobTarget{Key: "cluster-" + name + "/" + name, Tenant: ns, ClusterID: "cluster-" + name, JobName: name,
		JobID: strings.Repeat("cd", 16),
		Restart: inventory.RestartRecipe{Kind: inventory.RestartOperatorResume,
			Resource: &inventory.ObjectRef{APIVersion: "flink.apache.org/v1beta1", Kind: kube.KindFlinkDeployment, Namespace: ns, Name: name}}}
}

func writeOperatorStatus(ctx context.Context, dyn dynamic.Interface, ns, name string, status map[string]any) error {
	for {
		u, err := dyn.Resource(kube.FlinkDeploymentGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		u.Object["status"] = status
		_, err = dyn.Resource(kube.FlinkDeploymentGVR).Namespace(ns).UpdateStatus(ctx, u, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		return err
	}
}

// testOperator plays the Flink Kubernetes Operator for one FlinkDeployment
// on the real apiserver, writing status as FKO 1.15 does: on suspend the
// upgrade savepoint and SUSPENDED, on resume RUNNING with a new job ID,
// restored from the upgrade savepoint it recorded.
type testOperator struct {
	dyn       dynamic.Interface
	ns, name  string
	savepoint string
	jobID     string

	mu       sync.Mutex
	suspends int
	resumes  int
	restored string
	nonce    int64 // the savepointRedeployNonce it last acted on
}

func (o *testOperator) run(ctx context.Context, t *testing.T) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := o.reconcile(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("test operator: %v", err)
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
}

func (o *testOperator) reconcile(ctx context.Context) error {
	u, err := o.dyn.Resource(kube.FlinkDeploymentGVR).Namespace(o.ns).Get(ctx, o.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	specState, _, _ := unstructured.NestedString(u.Object, "spec", "job", "state")
	status, _, _ := unstructured.NestedMap(u.Object, "status")
	if status == nil {
		status = map[string]any{}
	}
	jobStatus, _, _ := unstructured.NestedMap(status, "jobStatus")
	if jobStatus == nil {
		jobStatus = map[string]any{}
	}
	jobState, _ := jobStatus["state"].(string)
	switch {
	case specState == kube.SpecStateSuspended && jobState != kube.JobStateSuspended:
		time.Sleep(200 * time.Millisecond) // stop-with-savepoint takes a while
		jobStatus["state"] = kube.JobStateSuspended
		jobStatus["upgradeSavepointPath"] = o.savepoint
		jobStatus["savepointInfo"] = map[string]any{"lastSavepoint": map[string]any{
			"location": o.savepoint, "timeStamp": time.Now().UnixMilli(), "triggerType": "UPGRADE", "formatType": "CANONICAL"}}
		status["lifecycleState"] = "SUSPENDED"
		status["jobStatus"] = jobStatus
		o.mu.Lock()
		o.suspends++
		o.mu.Unlock()
		return writeOperatorStatus(ctx, o.dyn, o.ns, o.name, status)
	case specState == kube.SpecStateRunning && jobState != kube.JobStateRunning:
		time.Sleep(200 * time.Millisecond)
		restored, _ := jobStatus["upgradeSavepointPath"].(string)
		nonce, _, _ := unstructured.NestedInt64(u.Object, "spec", "job", "savepointRedeployNonce")
		o.mu.Lock()
		redeploy := nonce != o.nonce
		o.nonce = nonce
		o.mu.Unlock()
		if restored == "" || redeploy { // a new nonce redeploys from initialSavepointPath
			restored, _, _ = unstructured.NestedString(u.Object, "spec", "job", "initialSavepointPath")
		}
		jobStatus["state"] = kube.JobStateRunning
		jobStatus["jobId"] = o.jobID
		status["lifecycleState"] = "STABLE"
		status["jobStatus"] = jobStatus
		o.mu.Lock()
		o.resumes++
		o.restored = restored
		o.mu.Unlock()
		return writeOperatorStatus(ctx, o.dyn, o.ns, o.name, status)
	}
	return nil
}

func (o *testOperator) counts() (suspends, resumes int, restored string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.suspends, o.resumes, o.restored
}

func runningStatus() map[string]any {
	return map[string]any{"lifecycleState": "STABLE", "jobStatus": map[string]any{"state": "RUNNING", "jobId": strings.Repeat("cd", 16)}}
}

// appErr asserts err is an application error of the given type and
// retryability, whose message names every want.
func appErr(t *testing.T, err error, errType string, retryable bool, want ...string) {
	t.Helper()
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) {
		t.Fatalf("want application error %s, got %T %v", errType, err, err)
	}
	if ae.Type() != errType || ae.NonRetryable() == retryable {
		t.Fatalf("got type %s non-retryable %v, want %s non-retryable %v: %v", ae.Type(), ae.NonRetryable(), errType, !retryable, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q does not name %q", err, w)
		}
	}
}

func TestSuspendAndResumeJobThroughOperator(t *testing.T) {
	e := newOperatorEnv(t, "act-op")
	job := e.flinkDeployment("orders", runningStatus(), kube.SpecStateRunning)
	op := &testOperator{dyn: e.dyn, ns: e.ns, name: "orders", savepoint: "hdfs://nn:8020/sp/savepoint-cdcdcd-0123456789ab",
		jobID: strings.Repeat("ab", 16)}
	op.run(e.ctx, t)

	var a *windows.Activities
	start := time.Now()
	var sus core.StopWithSavepointResult
	if err := e.run(a.SuspendJob, windows.SuspendJobInput{Job: job, Timeout: 30 * time.Second}, &sus); err != nil {
		t.Fatalf("SuspendJob: %v", err)
	}
	t.Logf("SuspendJob returned the recorded savepoint in %s", time.Since(start).Round(time.Millisecond))
	if sus.SavepointPath != op.savepoint || sus.Reattached {
		t.Fatalf("SuspendJob = %+v, want the operator's savepoint %s", sus, op.savepoint)
	}
	u, err := e.dyn.Resource(kube.FlinkDeploymentGVR).Namespace(e.ns).Get(e.ctx, "orders", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	state, _, _ := unstructured.NestedString(u.Object, "spec", "job", "state")
	mode, _, _ := unstructured.NestedString(u.Object, "spec", "job", "upgradeMode")
	if state != "suspended" || mode != "savepoint" {
		t.Fatalf("spec.job state %q upgradeMode %q after SuspendJob", state, mode)
	}
	// A retried suspend changes nothing and returns the same savepoint.
	var again core.StopWithSavepointResult
	if err := e.run(a.SuspendJob, windows.SuspendJobInput{Job: job, Timeout: 30 * time.Second}, &again); err != nil || again.SavepointPath != op.savepoint || !again.Reattached {
		t.Fatalf("retried SuspendJob = %+v, %v; want the same savepoint, reattached", again, err)
	}

	// Resuming from another savepoint is refused: the operator would
	// restore from the one it recorded.
	var res core.RestartJobResult
	err = e.run(a.ResumeJob, core.ResumeJobInput{Job: job, SavepointPath: "hdfs://nn:8020/sp/savepoint-000000-ffffffffffff", Timeout: 30 * time.Second}, &res)
	appErr(t, err, core.ErrTypeOperatorSavepointMismatch, false, "savepoint-cdcdcd-0123456789ab", "FlinkDeployment "+e.ns+"/orders")

	start = time.Now()
	if err := e.run(a.ResumeJob, core.ResumeJobInput{Job: job, SavepointPath: sus.SavepointPath, Timeout: 30 * time.Second}, &res); err != nil {
		t.Fatalf("ResumeJob: %v", err)
	}
	t.Logf("ResumeJob returned the new job ID in %s", time.Since(start).Round(time.Millisecond))
	if res.JobID != op.jobID || res.Reattached {
		t.Fatalf("ResumeJob = %+v, want the operator's job ID %s", res, op.jobID)
	}
	var res2 core.RestartJobResult
	if err := e.run(a.ResumeJob, core.ResumeJobInput{Job: job, SavepointPath: sus.SavepointPath, Timeout: 30 * time.Second}, &res2); err != nil || res2.JobID != op.jobID || !res2.Reattached {
		t.Fatalf("retried ResumeJob = %+v, %v; want the same job, reattached", res2, err)
	}
	suspends, resumes, restored := op.counts()
	if suspends != 1 || resumes != 1 || restored != op.savepoint {
		t.Fatalf("operator saw %d suspends, %d resumes, restored from %q; want 1, 1, %s", suspends, resumes, restored, op.savepoint)
	}
}

// TestUpgradeActivitiesThroughOperator: the inverse of a spec change is
// read before the stop; the change goes in while suspended; a rollback
// undoes it and redeploys the previous version from the pre-upgrade
// savepoint although the operator recorded another.
func TestUpgradeActivitiesThroughOperator(t *testing.T) {
	e := newOperatorEnv(t, "act-up")
	job := e.flinkDeployment("orders", runningStatus(), kube.SpecStateRunning)
	op := &testOperator{dyn: e.dyn, ns: e.ns, name: "orders", savepoint: "hdfs://nn:8020/sp/savepoint-cdcdcd-000000000001", jobID: strings.Repeat("ab", 16)}
	op.run(e.ctx, t)
	var a *windows.Activities
	var upg *upgrades.Activities
	change := inventory.JobSpecChange{FlinkConfiguration: map[string]string{"pipeline.max-parallelism": "256"}}
	var inverse inventory.JobSpecChange
	if err := e.run(upg.ReadSpecInverse, upgrades.OperatorSpecChangeInput{Job: job, Change: change}, &inverse); err != nil {
		t.Fatal(err)
	}
	if len(inverse.Unset) != 1 || inverse.Unset[0] != "pipeline.max-parallelism" {
		t.Fatalf("inverse %+v; want the new key unset", inverse)
	}
	err := e.run(upg.ChangeOperatorSpec, upgrades.OperatorSpecChangeInput{Job: job, Change: change}, nil)
	appErr(t, err, core.ErrTypeOperatorPrecondition, false, "suspend the job")
	var sus core.StopWithSavepointResult
	if err := e.run(a.SuspendJob, windows.SuspendJobInput{Job: job, Timeout: 30 * time.Second}, &sus); err != nil {
		t.Fatal(err)
	}
	for _, c := range []inventory.JobSpecChange{change, change, inverse} { // a retry changes nothing
		if err := e.run(upg.ChangeOperatorSpec, upgrades.OperatorSpecChangeInput{Job: job, Change: c}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.run(upg.DiscardJob, upgrades.DiscardJobInput{Job: job, Timeout: 30 * time.Second}, nil); err != nil {
		t.Fatalf("discard of a suspended job: %v", err)
	}
	previous := "hdfs://nn:8020/sp/savepoint-cdcdcd-000000000000"
	var res core.RestartJobResult
	if err := e.run(upg.RedeployJob, core.ResumeJobInput{Job: job, SavepointPath: previous, Timeout: 30 * time.Second}, &res); err != nil {
		t.Fatal(err)
	}
	if _, _, restored := op.counts(); restored != previous || res.JobID != op.jobID {
		t.Fatalf("redeploy %+v restored from %s; want job %s from %s", res, restored, op.jobID, previous)
	}
	u, err := e.dyn.Resource(kube.FlinkDeploymentGVR).Namespace(e.ns).Get(e.ctx, "orders", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if conf, _, _ := unstructured.NestedStringMap(u.Object, "spec", "flinkConfiguration"); conf["pipeline.max-parallelism"] != "" {
		t.Fatalf("flinkConfiguration %v after the inverse; want the key gone", conf)
	}
}

// suspendInWorkflow runs SuspendJob as a workflow would, with a heartbeat
// timeout far shorter than the wait and no retries: the activity must
// heartbeat while it blocks on the operator, or the test environment fails
// it with a heartbeat timeout.
func suspendInWorkflow(ctx workflow.Context, in windows.SuspendJobInput) (core.StopWithSavepointResult, error) {
	var a *windows.Activities
	var out core.StopWithSavepointResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: in.Timeout + time.Minute,
		HeartbeatTimeout:    4 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	}), a.SuspendJob, in).Get(ctx, &out)
	return out, err
}

func TestSuspendJobOperatorNeverReacts(t *testing.T) {
	e := newOperatorEnv(t, "act-op-dead")
	job := e.flinkDeployment("stuck", runningStatus(), kube.SpecStateRunning)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	app.RegisterActivities(env, e.acts)
	env.RegisterWorkflow(suspendInWorkflow)
	env.SetTestTimeout(time.Minute) // the activity waits in real time
	const wait = 9 * time.Second
	start := time.Now()
	env.ExecuteWorkflow(suspendInWorkflow, windows.SuspendJobInput{Job: job, Timeout: wait})
	took := time.Since(start)
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	err := env.GetWorkflowError()
	appErr(t, err, core.ErrTypeOperatorTimeout, false, "FlinkDeployment "+e.ns+"/stuck", "SUSPENDED", job.Key)
	if took < wait || took > wait+15*time.Second {
		t.Fatalf("timed out after %s, want about %s", took, wait)
	}
	t.Logf("operator timeout after %s, heartbeating under a 4s heartbeat timeout: %v", took.Round(time.Millisecond), err)

	// A job parked suspended on its savepoint, with no operator to resume it.
	parked := e.flinkDeployment("parked", map[string]any{"lifecycleState": "SUSPENDED", "jobStatus": map[string]any{
		"state": "SUSPENDED", "upgradeSavepointPath": "hdfs://nn:8020/sp/savepoint-cdcdcd-0123456789ab"}}, kube.SpecStateSuspended)
	var a *windows.Activities
	var res core.RestartJobResult
	err = e.run(a.ResumeJob, core.ResumeJobInput{Job: parked, SavepointPath: "hdfs://nn:8020/sp/savepoint-cdcdcd-0123456789ab", Timeout: 1500 * time.Millisecond}, &res)
	appErr(t, err, core.ErrTypeOperatorTimeout, false, "FlinkDeployment "+e.ns+"/parked", "RUNNING")
}

func TestOperatorJobsRejectBadInputAndMissingResources(t *testing.T) {
	e := newOperatorEnv(t, "act-op-input")
	var a *windows.Activities
	var sus core.StopWithSavepointResult
	var res core.RestartJobResult

	err := e.run(a.SuspendJob, windows.SuspendJobInput{Job: operatorTarget(e.ns, "absent"), Timeout: 5 * time.Second}, &sus)
	appErr(t, err, core.ErrTypeOperatorNotFound, false, "FlinkDeployment "+e.ns+"/absent")

	rest := operatorTarget(e.ns, "orders")
	rest.Restart = inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun, Jar: "/job.jar"}
	err = e.run(a.SuspendJob, windows.SuspendJobInput{Job: rest}, &sus)
	appErr(t, err, core.ErrTypeInvalidInput, false, `"rest-jar-run"`, rest.Key)

	noResource := operatorTarget(e.ns, "orders")
	noResource.Restart.Resource = nil
	err = e.run(a.ResumeJob, core.ResumeJobInput{Job: noResource, SavepointPath: "hdfs://nn/sp/savepoint-1"}, &res)
	appErr(t, err, core.ErrTypeInvalidInput, false, "restart.resource")

	wrongKind := operatorTarget(e.ns, "orders")
	wrongKind.Restart.Resource.Kind = "Deployment"
	err = e.run(a.SuspendJob, windows.SuspendJobInput{Job: wrongKind}, &sus)
	appErr(t, err, core.ErrTypeInvalidInput, false, "Deployment", "FlinkDeployment or FlinkSessionJob")

	err = e.run(a.ResumeJob, core.ResumeJobInput{Job: operatorTarget(e.ns, "orders"), SavepointPath: "savepoint-1"}, &res)
	appErr(t, err, core.ErrTypeInvalidInput, false, "savepointPath")

	err = e.run(a.SuspendJob, windows.SuspendJobInput{Job: operatorTarget(e.ns, "orders"), Timeout: -time.Second}, &sus)
	appErr(t, err, core.ErrTypeInvalidInput, false, "negative")

	// A worker without Kubernetes inventory cannot control operator jobs.
	e.acts = &app.Ports{}
	err = e.run(a.SuspendJob, windows.SuspendJobInput{Job: operatorTarget(e.ns, "orders")}, &sus)
	appErr(t, err, core.ErrTypeInventory, false, "inventory.kubernetes")
}

// TestSuspendJobRetryIgnoresAnOlderSavepoint covers a worker that died
// after its suspend update: the retry finds the resource already suspended
// while the operator's status still names an older upgrade savepoint. With
// the savepoint records read before the first attempt (ReadSavepointMarks),
// the retry waits for the new savepoint instead of taking the old one, which
// would restore the job to stale state.
func TestSuspendJobRetryIgnoresAnOlderSavepoint(t *testing.T) {
	e := newOperatorEnv(t, "stale")
	old := "hdfs://nn:8020/sp/savepoint-0ld000-000000000000"
	status := runningStatus()
	status["jobStatus"].(map[string]any)["upgradeSavepointPath"] = old
	target := e.flinkDeployment("stale", status, "running")

	var known core.OperatorSavepointMarks
	if err := e.run(app.NewFamilies(e.acts).Windows.ReadSavepointMarks, windows.ReadSavepointMarksInput{Job: target}, &known); err != nil {
		t.Fatal(err)
	}
	if known.UpgradeSavepointPath != old {
		t.Fatalf("marks %+v, want the old upgrade savepoint", known)
	}

	// The first attempt's update went through, then its worker died; the
	// operator reports SUSPENDED before it records the new savepoint.
	u, err := e.dyn.Resource(kube.FlinkDeploymentGVR).Namespace(e.ns).Get(e.ctx, "stale", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(u.Object, "suspended", "spec", "job", "state"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.dyn.Resource(kube.FlinkDeploymentGVR).Namespace(e.ns).Update(e.ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	suspended := runningStatus()
	suspended["jobStatus"].(map[string]any)["state"] = "SUSPENDED"
	suspended["jobStatus"].(map[string]any)["upgradeSavepointPath"] = old
	if err := writeOperatorStatus(e.ctx, e.dyn, e.ns, "stale", suspended); err != nil {
		t.Fatal(err)
	}

	// Without the marks the retry would take the old savepoint.
	var blind core.StopWithSavepointResult
	if err := e.run(app.NewFamilies(e.acts).Windows.SuspendJob, windows.SuspendJobInput{Job: target, Timeout: 3 * time.Second}, &blind); err != nil || blind.SavepointPath != old {
		t.Fatalf("without marks: %+v, %v; expected the old savepoint (the hazard the marks prevent)", blind, err)
	}
	// With them it waits, and times out while only the old one is there.
	var out core.StopWithSavepointResult
	err = e.run(app.NewFamilies(e.acts).Windows.SuspendJob, windows.SuspendJobInput{Job: target, Timeout: 3 * time.Second, Known: &known}, &out)
	appErr(t, err, core.ErrTypeOperatorTimeout, false, "stale")

	// Once the operator records the new savepoint, the retry returns it.
	fresh := "hdfs://nn:8020/sp/savepoint-f4e5a1-111111111111"
	suspended["jobStatus"].(map[string]any)["upgradeSavepointPath"] = fresh
	if err := writeOperatorStatus(e.ctx, e.dyn, e.ns, "stale", suspended); err != nil {
		t.Fatal(err)
	}
	if err := e.run(app.NewFamilies(e.acts).Windows.SuspendJob, windows.SuspendJobInput{Job: target, Timeout: 10 * time.Second, Known: &known}, &out); err != nil || out.SavepointPath != fresh {
		t.Fatalf("with marks after the operator recorded the new savepoint: %+v, %v; want %s", out, err, fresh)
	}
}
