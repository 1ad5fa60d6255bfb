//go:build realpeers

package kube

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// TestRecreateObjectPutsStateRecordsBack deletes, on a real apiserver, an
// HA ConfigMap and a FlinkStateSnapshot the operator triggered, from the
// JSON governance writes to the trash, and re-creates them: the ConfigMap
// with its data and labels but without its owner, the snapshot as a record
// of its savepoint (alreadyExists) so that no savepoint is triggered.
// Re-created again, each is refused as existing; a Deployment and a Pod are
// never re-created; JSON of another object is refused.
func TestRecreateObjectPutsStateRecordsBack(t *testing.T) {
	e := newEnv(t)
	ns := e.ns("recreate", nil)
	e.nativeCluster(sandbox.NativeFlinkCluster{Namespace: ns, ClusterID: "gone", TaskManagers: 1, HA: true})
	c := e.client(Config{Namespaces: []string{ns}, TenantRootTemplate: "/t/{namespace}"}, nil)

	cmRef := inventory.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "gone-cluster-config-map"}
	owner := e.deployment(ns, "gone")
	cm, err := e.cs.CoreV1().ConfigMaps(ns).Get(e.ctx, cmRef.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"checkpointID-0000000000000000007": "pointer-to-chk-7"}
	cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: owner.Name, UID: owner.UID}}
	if _, err := e.cs.CoreV1().ConfigMaps(ns).Update(e.ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cmSnap, err := c.ReadOrphan(e.ctx, cmRef)
	if err != nil {
		t.Fatal(err)
	}

	const savepoint = "hdfs://nn/t/savepoints/savepoint-0a0a0a-000000000001"
	fss := &unstructured.Unstructured{Object: map[string]any{"apiVersion": operatorAPIVersion, "kind": KindFlinkStateSnapshot,
		"metadata": map[string]any{"name": "periodic-1", "namespace": ns},
		"spec":     map[string]any{"savepoint": map[string]any{}, "jobReference": map[string]any{"kind": KindFlinkDeployment, "name": "orders"}}}}
	made, err := e.dyn.Resource(FlinkStateSnapshotGVR).Namespace(ns).Create(e.ctx, fss, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	made.Object["status"] = map[string]any{"state": "COMPLETED", "path": savepoint}
	made, err = e.dyn.Resource(FlinkStateSnapshotGVR).Namespace(ns).UpdateStatus(e.ctx, made, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fssJSON, err := json.Marshal(made.Object)
	if err != nil {
		t.Fatal(err)
	}
	fssRef := inventory.ObjectRef{APIVersion: operatorAPIVersion, Kind: KindFlinkStateSnapshot, Namespace: ns, Name: "periodic-1"}

	if err := c.DeleteOrphan(e.ctx, cmRef, cmSnap.UID, cmSnap.ResourceVersion); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteSnapshot(e.ctx, fssRef, string(made.GetUID()), made.GetResourceVersion()); err != nil {
		t.Fatal(err)
	}

	back, err := c.RecreateObject(e.ctx, cmRef, cmSnap.JSON, "gov-run-1")
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.cs.CoreV1().ConfigMaps(ns).Get(e.ctx, cmRef.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(got.UID) != back.UID || string(got.UID) == cmSnap.UID || got.Data["checkpointID-0000000000000000007"] != "pointer-to-chk-7" ||
		got.Labels[LabelApp] != "gone" || len(got.OwnerReferences) != 0 || got.Annotations[AnnotationRestoredFrom] != "gov-run-1" {
		t.Fatalf("re-created ConfigMap %+v (uid %s, was %s)", got, back.UID, cmSnap.UID)
	}
	if len(back.Changed) != 1 || !strings.Contains(back.Changed[0], "Deployment/gone") {
		t.Fatalf("changes reported %q; want the dropped owner named", back.Changed)
	}

	if _, err := c.RecreateObject(e.ctx, fssRef, fssJSON, "gov-run-1"); err != nil {
		t.Fatal(err)
	}
	rec, err := e.dyn.Resource(FlinkStateSnapshotGVR).Namespace(ns).Get(e.ctx, fssRef.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	exists, _, _ := unstructured.NestedBool(rec.Object, "spec", "savepoint", "alreadyExists")
	path, _, _ := unstructured.NestedString(rec.Object, "spec", "savepoint", "path")
	job, _, _ := unstructured.NestedString(rec.Object, "spec", "jobReference", "name")
	if !exists || path != savepoint || job != "orders" {
		t.Fatalf("re-created snapshot spec %v; want a record of %s for job orders", rec.Object["spec"], savepoint)
	}

	for ref, data := range map[inventory.ObjectRef][]byte{cmRef: cmSnap.JSON, fssRef: fssJSON} {
		if _, err := c.RecreateObject(e.ctx, ref, data, "gov-run-1"); !errors.Is(err, ErrExists) {
			t.Errorf("%s re-created over an existing one: %v; want ErrExists", ref.Name, err)
		}
	}
	for _, kind := range []string{"Deployment", "Pod"} {
		ref := inventory.ObjectRef{Kind: kind, Namespace: ns, Name: "gone"}
		if _, err := c.RecreateObject(e.ctx, ref, []byte(`{}`), "gov-run-1"); !errors.Is(err, ErrNotRecreatable) {
			t.Errorf("%s: %v; want ErrNotRecreatable", kind, err)
		}
	}
	other := cmRef
	other.Name = "another"
	if _, err := c.RecreateObject(e.ctx, other, cmSnap.JSON, "gov-run-1"); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("JSON of another object: %v; want ErrInvalidInput", err)
	}
	if _, err := e.cs.CoreV1().ConfigMaps(ns).Get(e.ctx, "another", metav1.GetOptions{}); err == nil {
		t.Error("a ConfigMap was made from another object's JSON")
	}
}
