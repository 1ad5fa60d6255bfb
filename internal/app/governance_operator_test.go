//go:build realpeers

package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/kube"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// putStatus writes status on an operator resource as the operator does,
// through the status subresource.
func putStatus(ctx context.Context, t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, name string, status map[string]any) {
	t.Helper()
	for {
		u, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		u.Object["status"] = status
		_, err = dyn.Resource(gvr).Namespace(ns).UpdateStatus(ctx, u, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			t.Fatalf("status of %s %s/%s: %v", gvr.Resource, ns, name, err)
		}
		return
	}
}

// suspendedDeployment creates FlinkDeployment name, suspended by the
// operator with savepoint recorded: AbstractJobReconciler.cancelJob and
// AbstractFlinkService.cancelJob record it in JobStatus.upgradeSavepointPath
// and SavepointInfo.lastSavepoint, ApplicationReconciler deletes the
// JobManager (JobManagerDeploymentStatus MISSING), the lifecycle is
// SUSPENDED.
func suspendedDeployment(ctx context.Context, t *testing.T, dyn dynamic.Interface, ns, name, ckpts, sps, jobID, savepoint string) {
	t.Helper()
	fd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "flink.apache.org/v1beta1", "kind": kube.KindFlinkDeployment,
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"image": "flink:1.20", "flinkVersion": "v1_20", "serviceAccount": "flink",
			"flinkConfiguration": map[string]any{"execution.checkpointing.dir": ckpts, "execution.checkpointing.savepoint-dir": sps},
			"jobManager":         map[string]any{"resource": map[string]any{"memory": "2048m", "cpu": int64(1)}},
			"taskManager":        map[string]any{"resource": map[string]any{"memory": "2048m", "cpu": int64(1)}},
			"job": map[string]any{"jarURI": "local:///opt/flink/usrlib/sample-job.jar", "parallelism": int64(1),
				"upgradeMode": "savepoint", "state": kube.SpecStateSuspended},
		},
	}}
	if _, err := dyn.Resource(kube.FlinkDeploymentGVR).Namespace(ns).Create(ctx, fd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	putStatus(ctx, t, dyn, kube.FlinkDeploymentGVR, ns, name, map[string]any{
		"lifecycleState": "SUSPENDED", "jobManagerDeploymentStatus": "MISSING",
		"jobStatus": map[string]any{"jobName": name, "jobId": jobID, "state": kube.JobStateSuspended,
			"upgradeSavepointPath": savepoint,
			"savepointInfo": map[string]any{"lastSavepoint": map[string]any{"location": savepoint, "timeStamp": time.Now().UnixMilli(),
				"triggerType": "UPGRADE", "formatType": "CANONICAL"}}},
	})
}

// TestGovernanceKeepsOperatorRecordsOnRealPeers runs a plan over a tenant
// whose jobs the Flink Kubernetes Operator runs, on the real apiserver
// with the operator's CRDs and real Flink state on HDFS:
//   - FlinkDeployment orders is suspended: no JobManager answers (the
//     operator deleted it), so the plan used to fail on its REST endpoint;
//     now its job is live and its checkpoint dir is kept;
//   - the savepoint orders would resume from (upgradeSavepointPath) is
//     older than the retention would keep, and survives as operator-record;
//   - a FlinkStateSnapshot names a retained checkpoint of a retired job:
//     the checkpoint and the shared/ files its _metadata names survive.
//
// The status written stands in for the operator and is what FKO 1.15
// writes (suspendedDeployment); FlinkStateSnapshotStatus holds state
// COMPLETED and the path.
func TestGovernanceKeepsOperatorRecordsOnRealPeers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	k, _, dyn := sandbox.RequireFlinkKube(t)
	ns := "fko-gov-" + peertest.RandomHex(4)
	if err := k.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	e := newFailClosedEnvWith(t, ctx, func(e *failClosedEnv, s *inventory.Static, cfg *config.Config) {
		cfg.Inventory.Kubeconfig = k.Kubeconfig
		cfg.Inventory.Kubernetes = &kube.Config{Namespaces: []string{ns},
			Tenants: []kube.TenantMapping{{Namespace: ns, Name: e.tenant[0], Root: e.root + "/a"}}}
	})
	ca := e.peers.Clusters[0]
	ckpts, sps := e.root+"/a/checkpoints", e.root+"/a/savepoints"
	longAgo := time.Now().Add(-30 * 24 * time.Hour)

	// Job J ran as FlinkDeployment orders: two savepoints, then the
	// operator suspended it with the older one recorded.
	fj, jobJ := e.start(ctx, ca, "fko-orders", ckpts, "", "", nil)
	e.checkpointed(ctx, fj, jobJ, 2)
	var saved []string
	for range 2 {
		tr, err := fj.TriggerSavepoint(ctx, jobJ, flink.SavepointRequest{TargetDirectory: sps})
		if err != nil {
			t.Fatal(err)
		}
		loc, err := fj.AwaitSavepoint(ctx, jobJ, tr.TriggerID)
		if err != nil {
			t.Fatal(err)
		}
		saved = append(saved, strings.TrimRight(loc, "/"))
	}
	e.cancel(ctx, fj, jobJ)
	// Job K, retired; a FlinkStateSnapshot records its latest checkpoint.
	fk, jobK := e.start(ctx, ca, "fko-retired", ckpts, "", "", nil)
	e.checkpointed(ctx, fk, jobK, 2)
	e.cancel(ctx, fk, jobK)
	stK, err := fk.Checkpoints(ctx, jobK)
	if err != nil || stK.Latest.Completed == nil {
		t.Fatalf("job K: %+v %v", stK.Latest, err)
	}
	chkK := strings.TrimRight(stK.Latest.Completed.ExternalPath, "/")
	_, refsK := e.metadataRefs(ctx, chkK)
	garbageK := ckpts + "/" + jobK + "/shared/unreferenced-" + peertest.RandomHex(4)
	fs, p, err := e.acts.Storage.Resolve(ctx, garbageK)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.WriteFile(ctx, p, []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{ckpts + "/" + jobJ, ckpts + "/" + jobK, saved[0]} {
		e.age(strings.TrimPrefix(d, e.peers.HDFS.URI), longAgo, false)
	}

	suspendedDeployment(ctx, t, dyn, ns, "orders", ckpts, sps, jobJ, saved[0])
	snap := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "flink.apache.org/v1beta1", "kind": kube.KindFlinkStateSnapshot,
		"metadata": map[string]any{"name": "orders-checkpoint-1", "namespace": ns},
		"spec":     map[string]any{"checkpoint": map[string]any{}, "jobReference": map[string]any{"kind": kube.KindFlinkDeployment, "name": "orders"}},
	}}
	if _, err := dyn.Resource(kube.FlinkStateSnapshotGVR).Namespace(ns).Create(ctx, snap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	putStatus(ctx, t, dyn, kube.FlinkStateSnapshotGVR, ns, "orders-checkpoint-1", map[string]any{
		"state": "COMPLETED", "path": chkK, "resultTimestamp": time.Now().UTC().Format(time.RFC3339)})

	sum, plan := e.plan(ctx, "fko-1", core.Scope{Tenants: []string{e.tenant[0]}}, cleanup.Policy{KeepSavepoints: 1})
	t.Logf("plan: %d items, notes %v", len(plan.Delete), sum.Notes)
	kept := map[string]cleanup.Kept{}
	for _, k := range plan.Keep {
		kept[k.Path] = k
	}
	planned := func(p string) (cleanup.Item, bool) {
		for _, it := range plan.Delete {
			if it.Path == p || strings.HasPrefix(p, it.Path+"/") || strings.HasPrefix(it.Path, p+"/") {
				return it, true
			}
		}
		return cleanup.Item{}, false
	}
	for _, p := range append([]string{saved[0], chkK}, refsK...) {
		if it, ok := planned(p); ok {
			t.Errorf("%s planned (%s %s) though the operator records it", p, it.Rule, it.Path)
		}
	}
	if k := kept[saved[0]]; k.Reason != cleanup.KeepOperatorRecord || !strings.Contains(k.By, "upgradeSavepointPath") {
		t.Errorf("upgrade savepoint kept as %+v; want %s by upgradeSavepointPath", k, cleanup.KeepOperatorRecord)
	}
	if k := kept[chkK]; k.Reason != cleanup.KeepOperatorRecord || !strings.Contains(k.By, "FlinkStateSnapshot") {
		t.Errorf("snapshot's checkpoint kept as %+v; want %s by the FlinkStateSnapshot", k, cleanup.KeepOperatorRecord)
	}
	var jobJKept bool
	for _, k := range plan.Keep {
		if strings.HasPrefix(k.Path, ckpts+"/"+jobJ+"/chk-") && k.Reason == cleanup.KeepLiveJob {
			jobJKept = true
		}
	}
	if it, ok := planned(ckpts + "/" + jobJ); ok || !jobJKept {
		t.Errorf("the suspended job's checkpoints: planned %v (%+v), kept as live %v", ok, it, jobJKept)
	}
	if _, ok := planned(garbageK); !ok {
		t.Errorf("the retired job's unreferenced %s not planned", garbageK)
	}
	if t.Failed() {
		t.FailNow()
	}

	var ex governance.ExecuteCleanupResult
	if err := e.activity(app.NewFamilies(e.acts).Governance.ExecuteCleanup, governance.ExecuteCleanupInput{RunID: "fko-1", PlanPath: sum.PlanPath, PlanSHA256: sum.PlanSHA256}, &ex); err != nil {
		t.Fatalf("execute: %v", err)
	}
	t.Logf("executed: %d items, outcomes %+v", ex.Items, ex.Outcomes)
	if e.exists(garbageK) {
		t.Errorf("garbage %s still there", garbageK)
	}
	// What the operator would restore from still restores.
	e.restores(ctx, ca, saved[0])
	e.restores(ctx, ca, chkK)
}
