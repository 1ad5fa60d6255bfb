//go:build realpeers

package kube

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// TestFindAndDeleteOrphans builds the leftovers of real incidents: a
// cluster whose JobManager Deployment was deleted (no garbage collector
// runs in the sandbox, as when GC is blocked, so its TaskManager pods and
// HA ConfigMaps stay), a JobManager recreated under the same name (the old
// pods are not its own), an idle cluster whose jobs all finished, and a
// live one.
func TestFindAndDeleteOrphans(t *testing.T) {
	e := newEnv(t)
	ns := e.ns("orphans", nil)
	job := strings.Repeat("1f", 16)
	e.nativeCluster(sandbox.NativeFlinkCluster{Namespace: ns, ClusterID: "gone", TaskManagers: 2, HA: true, JobIDs: []string{job}})
	e.nativeCluster(sandbox.NativeFlinkCluster{Namespace: ns, ClusterID: "reborn", TaskManagers: 1})
	e.nativeCluster(sandbox.NativeFlinkCluster{Namespace: ns, ClusterID: "idle", TaskManagers: 1, HA: true})
	e.nativeCluster(sandbox.NativeFlinkCluster{Namespace: ns, ClusterID: "live", TaskManagers: 1, HA: true})
	// HA ConfigMaps of an Operator cluster belong to its FlinkDeployment.
	e.flinkDeployment(ns, "op-cluster", nil, nil)
	if _, err := e.cs.CoreV1().ConfigMaps(ns).Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "op-cluster-cluster-config-map", Labels: sandbox.NativeFlinkHAConfigMapLabels("op-cluster")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	goneUID := e.deployment(ns, "gone").UID
	if err := e.cs.AppsV1().Deployments(ns).Delete(e.ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	old := e.deployment(ns, "reborn")
	oldUID := old.UID
	if err := e.cs.AppsV1().Deployments(ns).Delete(e.ctx, "reborn", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	reborn := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "reborn", Labels: old.Labels},
		Spec:       *old.Spec.DeepCopy(),
	}
	if _, err := e.cs.AppsV1().Deployments(ns).Create(e.ctx, reborn, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	c := e.client(Config{Namespaces: []string{ns}, TenantRootTemplate: "/t/{namespace}"}, nil)
	later := time.Now().Add(2 * time.Hour)
	c.now = func() time.Time { return later }
	orphans, err := c.FindOrphans(e.ctx, OrphanInput{JobStates: map[string][]string{
		ns + "/idle": {"FINISHED", "CANCELED"},
		ns + "/live": {"FINISHED", "RUNNING"},
	}})
	if err != nil {
		t.Fatalf("FindOrphans: %v", err)
	}
	got := map[string]Orphan{}
	for _, o := range orphans {
		got[string(o.Kind)+" "+o.Ref.Name] = o
		t.Logf("orphan %s %s/%s age %s owner %+v: %s", o.Kind, o.Ref.Namespace, o.Ref.Name, o.Age, o.Owner, o.Reason)
	}
	want := []string{
		"taskmanager-pod gone-taskmanager-1-1",
		"taskmanager-pod gone-taskmanager-1-2",
		"taskmanager-pod reborn-taskmanager-1-1",
		"ha-configmap gone-cluster-config-map",
		"ha-configmap gone-" + job + "-config-map",
		"idle-jobmanager idle",
	}
	if len(got) != len(want) {
		t.Fatalf("orphans %v, want exactly %v", orphanKeys(got), want)
	}
	for _, k := range want {
		o, ok := got[k]
		if !ok {
			t.Fatalf("missing %s; have %v", k, orphanKeys(got))
		}
		if o.UID == "" || o.ResourceVersion == "" || o.Created.IsZero() || o.Age < 119*time.Minute || o.Age > 3*time.Hour || o.Ref.Namespace != ns {
			t.Fatalf("%s: incomplete report %+v", k, o)
		}
	}
	if o := got["taskmanager-pod gone-taskmanager-1-1"]; o.Owner.Kind != "Deployment" || o.Owner.Name != "gone" || o.Owner.UID != string(goneUID) || o.Owner.Exists {
		t.Fatalf("gone TM owner %+v", o.Owner)
	}
	if o := got["taskmanager-pod reborn-taskmanager-1-1"]; o.Owner.UID != string(oldUID) || o.Owner.Exists || !strings.Contains(o.Reason, string(oldUID)) {
		t.Fatalf("reborn TM must be judged by its owner's UID: %+v", o)
	}
	if o := got["idle-jobmanager idle"]; o.Ref.Kind != "Deployment" || !strings.Contains(o.Reason, "globally terminal") {
		t.Fatalf("idle JM %+v", o)
	}

	// Deletion refuses anything but exactly the judged object.
	tm := got["taskmanager-pod gone-taskmanager-1-1"]
	err = c.DeleteOrphan(e.ctx, tm.Ref, "00000000-0000-0000-0000-000000000000", "")
	if !errors.Is(err, ErrPrecondition) || IsRetryable(err) || !strings.Contains(err.Error(), "Pod "+ns+"/gone-taskmanager-1-1") {
		t.Fatalf("wrong UID: want non-retryable ErrPrecondition naming the pod, got %v", err)
	}
	pod, err := e.cs.CoreV1().Pods(ns).Get(e.ctx, tm.Ref.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Annotations = map[string]string{"touched": "yes"}
	if _, err := e.cs.CoreV1().Pods(ns).Update(e.ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteOrphan(e.ctx, tm.Ref, tm.UID, tm.ResourceVersion); !errors.Is(err, ErrPrecondition) || !strings.Contains(err.Error(), "resourceVersion") {
		t.Fatalf("stale resourceVersion: want ErrPrecondition, got %v", err)
	}
	if err := c.DeleteOrphan(e.ctx, tm.Ref, tm.UID, ""); err != nil {
		t.Fatalf("delete with matching UID: %v", err)
	}
	if _, err := e.cs.CoreV1().Pods(ns).Get(e.ctx, tm.Ref.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("pod still there after DeleteOrphan: %v", err)
	}
	if err := c.DeleteOrphan(e.ctx, tm.Ref, tm.UID, ""); err != nil {
		t.Fatalf("deleting an already deleted orphan must succeed: %v", err)
	}
	ha := got["ha-configmap gone-cluster-config-map"]
	if err := c.DeleteOrphan(e.ctx, ha.Ref, ha.UID, ha.ResourceVersion); err != nil {
		t.Fatalf("delete HA ConfigMap: %v", err)
	}

	// Objects without Flink's labels are never deleted, whatever the UID.
	plain, err := e.cs.CoreV1().ConfigMaps(ns).Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-settings"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plainRef := ha.Ref
	plainRef.Name = plain.Name
	if err := c.DeleteOrphan(e.ctx, plainRef, string(plain.UID), ""); !errors.Is(err, ErrPrecondition) {
		t.Fatalf("unlabelled ConfigMap: want ErrPrecondition, got %v", err)
	}
	badKind := ha.Ref
	badKind.Kind = "Secret"
	if err := c.DeleteOrphan(e.ctx, badKind, "x", ""); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("Secret: want ErrInvalidInput, got %v", err)
	}

	after, err := c.FindOrphans(e.ctx, OrphanInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 3 { // gone-TM-2, reborn-TM, gone job HA CM; idle needs job states
		t.Fatalf("after deletes: %+v", after)
	}
}

func TestFindOrphansRejectsBadJobStatesKey(t *testing.T) {
	e := newEnv(t)
	ns := e.ns("orphans-in", nil)
	c := e.client(Config{Namespaces: []string{ns}, TenantRootTemplate: "/t/{namespace}"}, nil)
	_, err := c.FindOrphans(e.ctx, OrphanInput{JobStates: map[string][]string{"idle": {"FINISHED"}}})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Value != "idle" || !strings.Contains(ce.Valid, "<namespace>/<cluster-id>") {
		t.Fatalf("want ConfigError naming the key, got %v", err)
	}
}

func orphanKeys(m map[string]Orphan) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestFindOrphansInNamespacesAndRead: detection can be narrowed to some of
// the configured namespaces (never widened), and ReadOrphan returns the
// whole object as JSON with what DeleteOrphan's preconditions need.
func TestFindOrphansInNamespacesAndRead(t *testing.T) {
	e := newEnv(t)
	nsA, nsB := e.ns("orphans-a", nil), e.ns("orphans-b", nil)
	for _, ns := range []string{nsA, nsB} {
		e.nativeCluster(sandbox.NativeFlinkCluster{Namespace: ns, ClusterID: "gone", TaskManagers: 1, HA: true})
		if err := e.cs.AppsV1().Deployments(ns).Delete(e.ctx, "gone", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c := e.client(Config{Namespaces: []string{nsA, nsB}, TenantRootTemplate: "/t/{namespace}"}, nil)
	all, err := c.FindOrphans(e.ctx, OrphanInput{})
	if err != nil {
		t.Fatal(err)
	}
	onlyB, err := c.FindOrphans(e.ctx, OrphanInput{Namespaces: []string{nsB}})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 || len(onlyB) != 2 {
		t.Fatalf("all %d orphans, in %s %d; want 4 and 2: %+v", len(all), nsB, len(onlyB), onlyB)
	}
	for _, o := range onlyB {
		if o.Ref.Namespace != nsB {
			t.Fatalf("%s/%s reported outside %s", o.Ref.Namespace, o.Ref.Name, nsB)
		}
		if o.LastWritten.Before(o.Created) || o.LastWritten.IsZero() {
			t.Fatalf("%s: last written %s, created %s", o.Ref.Name, o.LastWritten, o.Created)
		}
	}
	// A write to the object moves LastWritten (as leader renewals do while
	// a cluster runs); a status write does not.
	time.Sleep(1100 * time.Millisecond)
	if _, err := e.cs.CoreV1().ConfigMaps(nsA).Patch(e.ctx, "gone-cluster-config-map", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"renewed":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := e.cs.CoreV1().Pods(nsA).Get(e.ctx, "gone-taskmanager-1-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Message = "still here"
	if _, err := e.cs.CoreV1().Pods(nsA).UpdateStatus(e.ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	onlyA, err := c.FindOrphans(e.ctx, OrphanInput{Namespaces: []string{nsA}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range onlyA {
		moved := o.LastWritten.After(o.Created)
		if want := o.Ref.Name == "gone-cluster-config-map"; moved != want {
			t.Fatalf("%s: last written %s, created %s; want it moved only by the annotation write", o.Ref.Name, o.LastWritten, o.Created)
		}
	}
	_, err = c.FindOrphans(e.ctx, OrphanInput{Namespaces: []string{"kube-system"}})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "Namespaces" || ce.Value != "kube-system" || !strings.Contains(ce.Valid, nsA) {
		t.Fatalf("namespace outside the configured ones: want ConfigError naming it, got %v", err)
	}

	for _, o := range onlyB {
		snap, err := c.ReadOrphan(e.ctx, o.Ref)
		if err != nil {
			t.Fatal(err)
		}
		var obj struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Metadata   metav1.ObjectMeta `json:"metadata"`
		}
		if err := json.Unmarshal(snap.JSON, &obj); err != nil {
			t.Fatal(err)
		}
		if snap.UID != o.UID || snap.ResourceVersion != o.ResourceVersion || obj.APIVersion != o.Ref.APIVersion || obj.Kind != o.Ref.Kind ||
			obj.Metadata.Name != o.Ref.Name || string(obj.Metadata.UID) != o.UID || obj.Metadata.Labels[LabelApp] != "gone" {
			t.Fatalf("ReadOrphan(%+v) = uid %s rv %s %s", o.Ref, snap.UID, snap.ResourceVersion, snap.JSON)
		}
		if err := c.DeleteOrphan(e.ctx, o.Ref, snap.UID, snap.ResourceVersion); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ReadOrphan(e.ctx, o.Ref); !errors.Is(err, ErrNotFound) || IsRetryable(err) {
			t.Fatalf("read after delete: want ErrNotFound, got %v", err)
		}
	}
	bad := onlyB[0].Ref
	bad.Kind = "Secret"
	if _, err := c.ReadOrphan(e.ctx, bad); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("Secret: want ErrInvalidInput, got %v", err)
	}
}
