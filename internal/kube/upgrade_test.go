//go:build realpeers

package kube

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestUpgradeSpecAndRedeployWithOperator walks an operator-run job through
// an upgrade and its rollback on the real apiserver: the spec cannot change
// while the job runs; once suspended, the new image, jar, arguments,
// parallelism and configuration go in, and the inverse puts back exactly
// what was there (a new key removed); the new version resumes from the
// suspend savepoint, and a redeploy restores the previous version from the
// pre-upgrade savepoint although the operator recorded a newer one.
func TestUpgradeSpecAndRedeployWithOperator(t *testing.T) {
	e := newEnv(t)
	ns := e.ns("upgrade", nil)
	e.flinkDeployment(ns, "orders", map[string]any{"state.savepoints.dir": "hdfs://nn:8020/sp", "taskmanager.numberOfTaskSlots": "2"}, appJob())
	e.setStatus(ns, "orders", map[string]any{"lifecycleState": "STABLE", "jobStatus": map[string]any{"state": "RUNNING", "jobId": strings.Repeat("cd", 16)}})
	preUpgrade := "hdfs://nn:8020/sp/savepoint-cdcdcd-000000000001"
	op := &fakeOperator{dyn: e.dyn, ns: ns, name: "orders", mode: recordUpgradePath, delay: 100 * time.Millisecond, savepoint: preUpgrade}
	op.run(e.ctx, t)
	c := e.client(Config{Namespaces: []string{ns}, TenantRootTemplate: "/t/{namespace}"}, nil)
	r := ref(KindFlinkDeployment, ns, "orders")
	spec := func() map[string]any {
		t.Helper()
		u, err := e.dyn.Resource(FlinkDeploymentGVR).Namespace(ns).Get(e.ctx, "orders", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s, _, _ := unstructured.NestedMap(u.Object, "spec")
		delete(s["job"].(map[string]any), "state") // suspend and resume change it
		return s
	}
	change := JobSpecChange{Image: "orders:2.0", JarURI: "local:///opt/flink/usrlib/orders-2.0.jar", Args: []string{"--dedup", "10m"}, Parallelism: 4,
		FlinkConfiguration: map[string]string{"taskmanager.numberOfTaskSlots": "4", "execution.checkpointing.interval": "30s"}}
	if _, err := c.ChangeJobSpec(e.ctx, r, change); !errors.Is(err, ErrPrecondition) {
		t.Fatalf("change of a running job: %v; want ErrPrecondition", err)
	}
	before := spec()
	dry, err := c.SpecChangeInverse(e.ctx, r, change)
	if err != nil || !reflect.DeepEqual(spec(), before) {
		t.Fatalf("the inverse read ahead: %v, or it changed the spec", err)
	}

	if _, err := c.Suspend(e.ctx, r, fastWait); err != nil {
		t.Fatal(err)
	}
	inverse, err := c.ChangeJobSpec(e.ctx, r, change)
	if err != nil {
		t.Fatal(err)
	}
	want := JobSpecChange{Image: "flink:1.20", JarURI: "local:///opt/flink/examples/streaming/StateMachineExample.jar", Args: []string{}, Parallelism: 2,
		FlinkConfiguration: map[string]string{"taskmanager.numberOfTaskSlots": "2"}, Unset: []string{"execution.checkpointing.interval"}}
	if !reflect.DeepEqual(inverse, want) || !reflect.DeepEqual(dry, want) {
		t.Fatalf("inverse %+v, read ahead %+v; want %+v", inverse, dry, want)
	}
	again, err := c.ChangeJobSpec(e.ctx, r, change)
	if err != nil || !again.Empty() {
		t.Fatalf("the same change again: %+v, %v; want nothing to change", again, err)
	}
	upgraded := spec()
	if upgraded["image"] != "orders:2.0" || upgraded["job"].(map[string]any)["parallelism"] != int64(4) ||
		upgraded["flinkConfiguration"].(map[string]any)["execution.checkpointing.interval"] != "30s" {
		t.Fatalf("spec after the change %+v", upgraded)
	}
	if _, err := c.Resume(e.ctx, r, preUpgrade, fastWait); err != nil {
		t.Fatalf("resume of the new version: %v", err)
	}
	if _, _, restored := op.counts(); restored != preUpgrade {
		t.Fatalf("new version restored from %s; want %s", restored, preUpgrade)
	}

	// Rollback: suspend the new version (the operator records a newer
	// savepoint), put the previous spec back, redeploy from the old one.
	op.mu.Lock()
	op.savepoint = "hdfs://nn:8020/sp/savepoint-ababab-000000000002"
	op.mu.Unlock()
	if _, err := c.Suspend(e.ctx, r, fastWait); err != nil {
		t.Fatal(err)
	}
	if state, err := c.Discard(e.ctx, r, fastWait); err != nil || state != JobStateSuspended {
		t.Fatalf("discard of a suspended job: %q, %v; want it left suspended", state, err)
	}
	if _, err := c.Resume(e.ctx, r, preUpgrade, fastWait); !errors.Is(err, ErrSavepointMismatch) {
		t.Fatalf("resume from the older savepoint: %v; want ErrSavepointMismatch (the operator would restore from its own)", err)
	}
	if _, err := c.ChangeJobSpec(e.ctx, r, inverse); err != nil {
		t.Fatal(err)
	}
	res, err := c.Redeploy(e.ctx, r, preUpgrade, fastWait)
	if err != nil || res.JobState != JobStateRunning {
		t.Fatalf("redeploy: %+v, %v", res, err)
	}
	if _, _, restored := op.counts(); restored != preUpgrade {
		t.Fatalf("previous version restored from %s; want the pre-upgrade savepoint %s", restored, preUpgrade)
	}
	after := spec()
	job := after["job"].(map[string]any)
	if job["initialSavepointPath"] != preUpgrade || job["savepointRedeployNonce"] != int64(1) {
		t.Fatalf("job spec after redeploy %+v; want initialSavepointPath and a new nonce", job)
	}
	delete(job, "initialSavepointPath")
	delete(job, "savepointRedeployNonce")
	delete(job, "args") // an empty list where there was none
	delete(before["job"].(map[string]any), "args")
	if !reflect.DeepEqual(after, before) {
		t.Fatalf("spec after rollback\n%+v\nwant as before the upgrade\n%+v", after, before)
	}
	if again, err := c.Redeploy(e.ctx, r, preUpgrade, fastWait); err != nil || !again.AlreadyRunning {
		t.Fatalf("second redeploy: %+v, %v; want already running", again, err)
	}
	if _, err := c.Redeploy(e.ctx, r, "hdfs://nn:8020/sp/savepoint-other", fastWait); !errors.Is(err, ErrPrecondition) {
		t.Fatalf("redeploy of a running job from another savepoint: %v; want ErrPrecondition", err)
	}
}

// TestDiscardStopsWithoutSavepoint: a new version that a rollback ends is
// suspended stateless; the operator takes no savepoint, and a redeploy
// brings the previous version back from the one the caller names.
func TestDiscardStopsWithoutSavepoint(t *testing.T) {
	e := newEnv(t)
	ns := e.ns("discard", nil)
	e.flinkDeployment(ns, "orders", map[string]any{"state.savepoints.dir": "hdfs://nn:8020/sp"}, appJob())
	e.setStatus(ns, "orders", map[string]any{"lifecycleState": "STABLE", "jobStatus": map[string]any{"state": "RUNNING", "jobId": strings.Repeat("cd", 16)}})
	op := &fakeOperator{dyn: e.dyn, ns: ns, name: "orders", mode: recordUpgradePath, delay: 50 * time.Millisecond, savepoint: "hdfs://nn:8020/sp/savepoint-new"}
	op.run(e.ctx, t)
	c := e.client(Config{Namespaces: []string{ns}, TenantRootTemplate: "/t/{namespace}"}, nil)
	r := ref(KindFlinkDeployment, ns, "orders")
	state, err := c.Discard(e.ctx, r, fastWait)
	if err != nil || state != JobStateSuspended {
		t.Fatalf("discard: %q, %v", state, err)
	}
	st, err := c.OperatorStatus(e.ctx, r)
	if err != nil || st.UpgradeMode != UpgradeModeStateless || st.UpgradeSavepointPath != "" {
		t.Fatalf("status after discard %+v, %v; want suspended stateless, no savepoint recorded", st, err)
	}
	previous := "hdfs://nn:8020/sp/savepoint-old"
	if _, err := c.Redeploy(e.ctx, r, previous, fastWait); err != nil {
		t.Fatal(err)
	}
	if _, _, restored := op.counts(); restored != previous {
		t.Fatalf("restored from %s; want %s", restored, previous)
	}
}
