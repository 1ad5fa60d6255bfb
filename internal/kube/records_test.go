//go:build realpeers

package kube

import (
	"errors"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// TestOperatorRecordsListsEverySnapshotPath reads the records of a
// FlinkDeployment (initial, upgrade, last and legacy history savepoints),
// a FlinkSessionJob and FlinkStateSnapshots (a completed checkpoint and a
// registered existing savepoint) from the real apiserver.
func TestOperatorRecordsListsEverySnapshotPath(t *testing.T) {
	e := newEnv(t)
	ns := e.ns("records", nil)
	job := appJob()
	job["initialSavepointPath"] = "hdfs://nn/sp/savepoint-000000-initial"
	e.flinkDeployment(ns, "orders", map[string]any{}, job)
	e.setStatus(ns, "orders", map[string]any{"jobStatus": map[string]any{
		"upgradeSavepointPath": "hdfs://nn/sp/savepoint-111111-upgrade",
		"savepointInfo": map[string]any{
			"lastSavepoint":    map[string]any{"location": "hdfs://nn/sp/savepoint-111111-last", "timeStamp": int64(1)},
			"savepointHistory": []any{map[string]any{"location": "hdfs://nn/sp/savepoint-111111-old", "timeStamp": int64(0)}},
		}}})
	sj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": operatorAPIVersion, "kind": KindFlinkSessionJob,
		"metadata": map[string]any{"name": "clicks", "namespace": ns},
		"spec": map[string]any{"deploymentName": "session", "job": map[string]any{"jarURI": "https://x/clicks.jar", "parallelism": int64(1),
			"upgradeMode": "savepoint", "state": "running", "initialSavepointPath": "hdfs://nn/sp/savepoint-222222-initial"}},
	}}
	if _, err := e.dyn.Resource(FlinkSessionJobGVR).Namespace(ns).Create(e.ctx, sj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, spec := range map[string]map[string]any{
		"checkpoint": {"checkpoint": map[string]any{}, "jobReference": map[string]any{"kind": KindFlinkDeployment, "name": "orders"}},
		"registered": {"savepoint": map[string]any{"path": "hdfs://nn/sp/savepoint-333333-registered", "alreadyExists": true}},
	} {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": operatorAPIVersion, "kind": KindFlinkStateSnapshot,
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}}
		created, err := e.dyn.Resource(FlinkStateSnapshotGVR).Namespace(ns).Create(e.ctx, u, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if name == "checkpoint" {
			created.Object["status"] = map[string]any{"state": "COMPLETED", "path": "hdfs://nn/ck/0123/chk-7"}
			if _, err := e.dyn.Resource(FlinkStateSnapshotGVR).Namespace(ns).UpdateStatus(e.ctx, created, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	recs, err := e.client(Config{Namespaces: []string{ns}, TenantRootTemplate: "hdfs://nn/user/app/{namespace}"}, nil).OperatorRecords(e.ctx, []string{ns})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range recs {
		got[r.Resource.Kind+"/"+r.Resource.Name+" "+r.Field] = r.Path
	}
	want := map[string]string{
		"FlinkDeployment/orders spec.job.initialSavepointPath":                               "hdfs://nn/sp/savepoint-000000-initial",
		"FlinkDeployment/orders status.jobStatus.upgradeSavepointPath":                       "hdfs://nn/sp/savepoint-111111-upgrade",
		"FlinkDeployment/orders status.jobStatus.savepointInfo.lastSavepoint.location":       "hdfs://nn/sp/savepoint-111111-last",
		"FlinkDeployment/orders status.jobStatus.savepointInfo.savepointHistory[0].location": "hdfs://nn/sp/savepoint-111111-old",
		"FlinkSessionJob/clicks spec.job.initialSavepointPath":                               "hdfs://nn/sp/savepoint-222222-initial",
		"FlinkStateSnapshot/checkpoint status.path":                                          "hdfs://nn/ck/0123/chk-7",
		"FlinkStateSnapshot/registered spec.savepoint.path":                                  "hdfs://nn/sp/savepoint-333333-registered",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("records\n got %v\nwant %v", got, want)
	}
	for _, r := range recs {
		if r.Resource.Namespace != ns || r.Resource.APIVersion != operatorAPIVersion {
			t.Fatalf("record %+v: want namespace %s", r, ns)
		}
		// A snapshot names the job it was taken of, which tells the
		// savepoint's logical job.
		if r.Resource.Name == "checkpoint" && (r.Snapshot == nil || r.Snapshot.JobKind != KindFlinkDeployment || r.Snapshot.JobName != "orders") {
			t.Errorf("record %+v: want its jobReference FlinkDeployment orders", r)
		}
	}
}

// snapshotFinalizer is the finalizer the operator (JOSDK's default,
// <plural>.<group>/finalizer) puts on a FlinkStateSnapshot.
const snapshotFinalizer = "flinkstatesnapshots.flink.apache.org/finalizer"

// TestDeleteSnapshotTurnsOffDisposalFirst deletes a completed savepoint
// resource on the real apiserver: disposeOnDelete (absent: true) is set to
// false before the delete, so the operator's cleanup releases the
// finalizer without disposing; a stale resourceVersion or UID refuses.
func TestDeleteSnapshotTurnsOffDisposalFirst(t *testing.T) {
	e := newEnv(t)
	ns := e.ns("snapdel", nil)
	res := e.dyn.Resource(FlinkStateSnapshotGVR).Namespace(ns)
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": operatorAPIVersion, "kind": KindFlinkStateSnapshot,
		"metadata": map[string]any{"name": "sp", "namespace": ns, "finalizers": []any{snapshotFinalizer}},
		"spec":     map[string]any{"savepoint": map[string]any{}, "jobReference": map[string]any{"kind": KindFlinkDeployment, "name": "orders"}}}}
	created, err := res.Create(e.ctx, u, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Object["status"] = map[string]any{"state": "COMPLETED", "path": "hdfs://nn/sp/savepoint-aaaaaa-000000000001"}
	if _, err := res.UpdateStatus(e.ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := e.client(Config{Namespaces: []string{ns}, TenantRootTemplate: "hdfs://nn/user/app/{namespace}"}, nil)
	ref := inventory.ObjectRef{APIVersion: operatorAPIVersion, Kind: KindFlinkStateSnapshot, Namespace: ns, Name: "sp"}
	s, data, err := c.ReadSnapshot(e.ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Savepoint || !s.DisposeOnDelete || s.State != inventory.SnapshotCompleted || s.Path == "" || s.Deleting || len(data) == 0 {
		t.Fatalf("read %+v; want a completed savepoint with disposeOnDelete (the default)", s)
	}
	if err := c.DeleteSnapshot(e.ctx, ref, s.UID, created.GetResourceVersion()); !errors.Is(err, ErrPrecondition) {
		t.Fatalf("delete with a stale resourceVersion: %v; want ErrPrecondition", err)
	}
	if err := c.DeleteSnapshot(e.ctx, ref, "not-its-uid", s.ResourceVersion); !errors.Is(err, ErrPrecondition) {
		t.Fatalf("delete with another uid: %v; want ErrPrecondition", err)
	}
	if err := c.DeleteSnapshot(e.ctx, ref, s.UID, s.ResourceVersion); err != nil {
		t.Fatal(err)
	}
	after, _, err := c.ReadSnapshot(e.ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !after.Deleting || after.DisposeOnDelete {
		t.Fatalf("after delete %+v; want deleting with disposeOnDelete false, so the operator's cleanup does not dispose", after)
	}
	// The operator's cleanup with disposeOnDelete false removes the
	// finalizer (StateSnapshotReconciler.cleanup: DeleteControl.defaultDelete).
	if _, err := res.Patch(e.ctx, "sp", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.ReadSnapshot(e.ctx, ref); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after the finalizer: %v; want ErrNotFound", err)
	}
	if err := c.DeleteSnapshot(e.ctx, ref, s.UID, s.ResourceVersion); err != nil {
		t.Fatalf("delete of a gone resource: %v; want nil", err)
	}
}

// TestOperatorRecordsFollowSnapshotReferences reads the records an
// operator release newer than the fixtures writes (CRDs the project
// writes for it, on the second control plane): a FlinkStateSnapshotReference
// by path is the record; one by name is the named FlinkStateSnapshot's
// status.path; one naming a resource that does not exist or has no path
// yet is a record of an unknown snapshot, never none.
func TestOperatorRecordsFollowSnapshotReferences(t *testing.T) {
	k, cs, dyn := sandbox.RequireNewerOperatorKube(t)
	e := newEnvOn(t, k, cs, dyn)
	ns := e.ns("references", nil)
	snaps := dyn.Resource(FlinkStateSnapshotGVR).Namespace(ns)
	for name, path := range map[string]string{"upgrade": "hdfs://nn/sp/savepoint-444444-upgrade", "pending": ""} {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": operatorAPIVersion, "kind": KindFlinkStateSnapshot,
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     map[string]any{"savepoint": map[string]any{}, "jobReference": map[string]any{"kind": KindFlinkDeployment, "name": "orders"}}}}
		created, err := snaps.Create(e.ctx, u, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if path != "" {
			created.Object["status"] = map[string]any{"state": "COMPLETED", "path": path}
			if _, err := snaps.UpdateStatus(e.ctx, created, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	deploy := func(name string, job map[string]any, jobStatus map[string]any) {
		t.Helper()
		spec := appJob()
		for k, v := range job {
			spec[k] = v
		}
		e.flinkDeployment(ns, name, map[string]any{}, spec)
		if jobStatus != nil {
			e.setStatus(ns, name, map[string]any{"jobStatus": jobStatus})
		}
	}
	deploy("orders", map[string]any{"flinkStateSnapshotReference": map[string]any{"path": "hdfs://nn/sp/savepoint-444444-initial"}},
		map[string]any{"upgradeSnapshotReference": map[string]any{"namespace": ns, "name": "upgrade"}})
	deploy("gone", nil, map[string]any{"upgradeSnapshotReference": map[string]any{"name": "no-such-snapshot"}})
	deploy("pending", map[string]any{"flinkStateSnapshotReference": map[string]any{"name": "pending"}}, nil)
	recs, err := e.client(Config{Namespaces: []string{ns}, TenantRootTemplate: "hdfs://nn/user/app/{namespace}"}, nil).OperatorRecords(e.ctx, []string{ns})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range recs {
		if r.Resource.Kind != KindFlinkDeployment {
			continue
		}
		v := r.Path
		if r.Unknown != "" {
			v = "unknown: " + r.Unknown
		}
		got[r.Resource.Name+" "+r.Field] = v
	}
	want := map[string]string{
		"orders spec.job.flinkStateSnapshotReference":                                                           "hdfs://nn/sp/savepoint-444444-initial",
		"orders status.jobStatus.upgradeSnapshotReference -> FlinkStateSnapshot " + ns + "/upgrade status.path": "hdfs://nn/sp/savepoint-444444-upgrade",
		"gone status.jobStatus.upgradeSnapshotReference -> FlinkStateSnapshot " + ns + "/no-such-snapshot status.path": "unknown: status.jobStatus.upgradeSnapshotReference names FlinkStateSnapshot " +
			ns + "/no-such-snapshot, which does not exist",
		"pending spec.job.flinkStateSnapshotReference -> FlinkStateSnapshot " + ns + "/pending status.path": "unknown: spec.job.flinkStateSnapshotReference names FlinkStateSnapshot " +
			ns + "/pending, which has no status.path yet",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("records\n got %v\nwant %v", got, want)
	}
}
