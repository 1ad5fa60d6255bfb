//go:build realpeers

package app_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/kube"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// snapshotFinalizer is JOSDK's default finalizer (<plural>.<group>/finalizer),
// which the operator puts on every FlinkStateSnapshot it reconciles.
const snapshotFinalizer = "flinkstatesnapshots.flink.apache.org/finalizer"

// completedSnapshot creates a FlinkStateSnapshot of a savepoint of
// FlinkDeployment job as the operator leaves it once taken: finalizer set,
// status written by FlinkStateSnapshotUtils.snapshotSuccessful (state
// COMPLETED, path, resultTimestamp). dispose nil leaves
// spec.savepoint.disposeOnDelete out (SavepointSpec's default, true).
func completedSnapshot(ctx context.Context, t *testing.T, dyn dynamic.Interface, ns, name, job, path string, dispose *bool) {
	t.Helper()
	sp := map[string]any{"formatType": "CANONICAL"}
	if dispose != nil {
		sp["disposeOnDelete"] = *dispose
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "flink.apache.org/v1beta1", "kind": kube.KindFlinkStateSnapshot,
		"metadata": map[string]any{"name": name, "namespace": ns, "finalizers": []any{snapshotFinalizer}},
		"spec":     map[string]any{"savepoint": sp, "backoffLimit": int64(1), "jobReference": map[string]any{"kind": kube.KindFlinkDeployment, "name": job}},
	}}
	if _, err := dyn.Resource(kube.FlinkStateSnapshotGVR).Namespace(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	putStatus(ctx, t, dyn, kube.FlinkStateSnapshotGVR, ns, name, map[string]any{
		"state": "COMPLETED", "path": path, "resultTimestamp": now, "triggerTimestamp": now, "failures": int64(0)})
}

// standInSnapshotCleanup does what the operator's
// StateSnapshotReconciler.cleanup does with a FlinkStateSnapshot being
// deleted, until ctx ends: without disposeOnDelete it releases the
// finalizer; with it, it disposes of the savepoint through Flink's REST
// API (flinkService.disposeSavepoint) and releases the finalizer only if
// that succeeds, otherwise keeps it and tries again later (as the
// operator reschedules). It returns the savepoints it disposed of.
func standInSnapshotCleanup(ctx context.Context, t *testing.T, dyn dynamic.Interface, ns string, fc *flink.Client) func() []string {
	var mu sync.Mutex
	var disposed []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			list, err := dyn.Resource(kube.FlinkStateSnapshotGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			for _, u := range list.Items {
				if u.GetDeletionTimestamp() == nil {
					continue
				}
				dispose, found, _ := unstructured.NestedBool(u.Object, "spec", "savepoint", "disposeOnDelete")
				if !found || dispose {
					path, _, _ := unstructured.NestedString(u.Object, "status", "path")
					tr, err := fc.DisposeSavepoint(ctx, path)
					if err == nil {
						err = fc.AwaitDisposal(ctx, tr)
					}
					if err != nil {
						continue // CleanupFailed: the finalizer stays
					}
					mu.Lock()
					disposed = append(disposed, path)
					mu.Unlock()
				}
				_, _ = dyn.Resource(kube.FlinkStateSnapshotGVR).Namespace(ns).Patch(ctx, u.GetName(), types.MergePatchType,
					[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			}
		}
	}()
	return func() []string {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return disposed
	}
}

// TestGovernanceDeletesSnapshotResourcesWithSavepointsOnRealPeers: two old
// savepoints of a suspended FlinkDeployment are named only by completed
// FlinkStateSnapshots, one with disposeOnDelete (the default), one
// without. With operatorSnapshots: keep both stay; by default both go to
// the trash and their resources are deleted first, disposal turned off, so
// the operator's cleanup neither disposes of anything nor sticks on a
// finalizer. Afterwards no FlinkStateSnapshot names a missing path, and
// the savepoint the operator resumes from is untouched.
func TestGovernanceDeletesSnapshotResourcesWithSavepointsOnRealPeers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	k, _, dyn := sandbox.RequireFlinkKube(t)
	ns := "fko-snap-" + peertest.RandomHex(4)
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
	fj, jobJ := e.start(ctx, ca, "fko-snap", ckpts, "", "", nil)
	e.checkpointed(ctx, fj, jobJ, 1)
	var saved []string
	for range 3 {
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
	// Aged, the savepoints predate every run in the job history: only the
	// FlinkStateSnapshots' jobReference tells their logical job.
	longAgo := time.Now().Add(-30 * 24 * time.Hour)
	for i, d := range saved[:2] {
		e.age(strings.TrimPrefix(d, e.peers.HDFS.URI), longAgo.Add(time.Duration(i)*time.Minute), false)
	}
	suspendedDeployment(ctx, t, dyn, ns, "orders", ckpts, sps, jobJ, saved[2])
	no := false
	completedSnapshot(ctx, t, dyn, ns, "orders-sp-dispose", "orders", saved[0], nil)
	completedSnapshot(ctx, t, dyn, ns, "orders-sp-keep-data", "orders", saved[1], &no)
	// The operator's own record of its resume point, as a resource too.
	completedSnapshot(ctx, t, dyn, ns, "orders-sp-upgrade", "orders", saved[2], nil)

	pol := cleanup.Policy{KeepSavepoints: 1, OperatorSnapshots: cleanup.OperatorSnapshotsKeep}
	_, plan := e.plan(ctx, "fko-snap-keep", core.Scope{Tenants: []string{e.tenant[0]}}, pol)
	kept := map[string]cleanup.Kept{}
	for _, k := range plan.Keep {
		kept[k.Path] = k
	}
	for _, p := range saved {
		if k := kept[p]; k.Reason != cleanup.KeepOperatorRecord {
			t.Errorf("operatorSnapshots keep: %s kept as %+v; want %s", p, k, cleanup.KeepOperatorRecord)
		}
	}
	// The plan catalogued them under the FlinkDeployment's logical job.
	fs, root, err := e.acts.Storage.Resolve(ctx, e.root+"/a")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := catalog.Store{FS: fs, Root: root}.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byOperator := map[string]catalog.LogicalJob{}
	for _, en := range entries {
		if en.Trigger == catalog.TriggerOperator {
			byOperator[en.Path] = en.Job
		}
	}
	for _, p := range saved {
		if j := byOperator[p]; j != (catalog.LogicalJob{Tenant: e.tenant[0], Cluster: "orders", Job: "orders"}) {
			t.Errorf("savepoint %s catalogued by the operator's records as %+v; want %s/orders/orders", p, j, e.tenant[0])
		}
	}

	pol.OperatorSnapshots = ""
	sum, plan := e.plan(ctx, "fko-snap", core.Scope{Tenants: []string{e.tenant[0]}}, pol)
	for _, k := range plan.Keep {
		t.Logf("kept %s %s by %s", k.Path, k.Reason, k.By)
	}
	items := map[string]cleanup.Item{}
	for _, it := range plan.Delete {
		items[it.Path] = it
	}
	for i, name := range []string{"orders-sp-dispose", "orders-sp-keep-data"} {
		it, ok := items[saved[i]]
		if !ok || len(it.Snapshots) != 1 || it.Snapshots[0].Ref.Name != name {
			t.Fatalf("savepoint %s planned %v as %+v; want it with resource %s", saved[i], ok, it, name)
		}
	}
	if k := kept[saved[2]]; k.Reason == "" {
		t.Fatalf("the resume savepoint is not kept")
	}
	if _, ok := items[saved[2]]; ok {
		t.Fatalf("the savepoint the operator resumes from is planned")
	}

	opCtx, stopOperator := context.WithCancel(ctx)
	disposedBy := standInSnapshotCleanup(opCtx, t, dyn, ns, peertest.FlinkClient(t, ca.RESTURL))
	var ex governance.ExecuteCleanupResult
	err = e.activity(app.NewFamilies(e.acts).Governance.ExecuteCleanup, governance.ExecuteCleanupInput{RunID: "fko-snap", PlanPath: sum.PlanPath, PlanSHA256: sum.PlanSHA256}, &ex)
	if err != nil {
		stopOperator()
		t.Fatalf("execute: %v", err)
	}
	t.Logf("executed: outcomes %+v, resources %v", ex.Outcomes, ex.SnapshotResources)
	// Wait for the operator's cleanup to release the deleted resources.
	e.waitFor(ctx, time.Minute, "deleted FlinkStateSnapshots released", func() (bool, string) {
		list, err := dyn.Resource(kube.FlinkStateSnapshotGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, u := range list.Items {
			names = append(names, u.GetName())
		}
		return len(list.Items) == 1, strings.Join(names, ",")
	})
	stopOperator()
	if d := disposedBy(); len(d) > 0 {
		t.Errorf("the operator disposed of %v: it was left to dispose of what governance removed", d)
	}
	for i, name := range []string{"orders-sp-dispose", "orders-sp-keep-data"} {
		trashed := e.root + "/trash/fko-snap" + strings.TrimPrefix(saved[i], e.peers.HDFS.URI)
		if !e.exists(trashed) || e.exists(saved[i]) {
			t.Errorf("savepoint %s: in trash %v, in place %v; want it in the trash", saved[i], e.exists(trashed), e.exists(saved[i]))
		}
		if j := e.root + "/trash/fko-snap/kubernetes/" + ns + "/flinkstatesnapshot/" + name + ".json"; !e.exists(j) {
			t.Errorf("JSON of %s not in the trash at %s", name, j)
		}
	}
	if len(ex.SnapshotResources) != 2 {
		t.Errorf("result lists resources %v; want the two deleted", ex.SnapshotResources)
	}
	// No resource names a path that is gone.
	list, err := dyn.Resource(kube.FlinkStateSnapshotGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range list.Items {
		p, _, _ := unstructured.NestedString(u.Object, "status", "path")
		if !e.exists(p) {
			t.Errorf("FlinkStateSnapshot %s names %s, which is gone", u.GetName(), p)
		}
	}
	e.restores(ctx, ca, saved[2])

	// A restore of one savepoint brings its resource back with it, as a
	// record of that savepoint; the other savepoint and its resource stay
	// in the trash.
	var back governance.RestoreTrashResult
	if err := e.activity(app.NewFamilies(e.acts).Governance.RestoreTrash, governance.RestoreTrashInput{RunID: "fko-snap", Paths: []string{storagePath(saved[0])}}, &back); err != nil {
		t.Fatalf("restore: %v", err)
	}
	t.Logf("restored: %+v", back.Items)
	if !e.exists(saved[0]) || e.exists(saved[1]) {
		t.Errorf("after the restore of %s: it is back %v, %s back %v", saved[0], e.exists(saved[0]), saved[1], e.exists(saved[1]))
	}
	fss, err := dyn.Resource(kube.FlinkStateSnapshotGVR).Namespace(ns).Get(ctx, "orders-sp-dispose", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("orders-sp-dispose not re-created: %v", err)
	}
	exists, _, _ := unstructured.NestedBool(fss.Object, "spec", "savepoint", "alreadyExists")
	path, _, _ := unstructured.NestedString(fss.Object, "spec", "savepoint", "path")
	if !exists || strings.TrimRight(path, "/") != saved[0] || fss.GetAnnotations()[kube.AnnotationRestoredFrom] != "fko-snap" {
		t.Errorf("re-created resource: spec %v, annotations %v; want a record of %s from run fko-snap", fss.Object["spec"], fss.GetAnnotations(), saved[0])
	}
	if _, err := dyn.Resource(kube.FlinkStateSnapshotGVR).Namespace(ns).Get(ctx, "orders-sp-keep-data", metav1.GetOptions{}); err == nil {
		t.Error("orders-sp-keep-data re-created though its savepoint stays in the trash")
	}
}

// storagePath is a URI's path.
func storagePath(uri string) string {
	if i := strings.Index(uri, "://"); i >= 0 {
		if j := strings.Index(uri[i+3:], "/"); j >= 0 {
			return uri[i+3+j:]
		}
	}
	return uri
}
