package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// The fields that hold snapshot paths, as FKO 1.10-1.15 writes them
// (org.apache.flink.kubernetes.operator.api.spec.JobSpec,
// api.status.JobStatus, api.status.SavepointInfo, and for
// FlinkStateSnapshot api.spec.FlinkStateSnapshotSpec / SavepointSpec and
// api.status.FlinkStateSnapshotStatus).
var recordFields = []struct {
	field string
	path  []string
}{
	{"spec.job.initialSavepointPath", []string{"spec", "job", "initialSavepointPath"}},
	{"status.jobStatus.upgradeSavepointPath", []string{"status", "jobStatus", "upgradeSavepointPath"}},
	{"status.jobStatus.savepointInfo.lastSavepoint.location", []string{"status", "jobStatus", "savepointInfo", "lastSavepoint", "location"}},
}

// referenceFields hold a FlinkStateSnapshotReference (newer operator
// releases name the snapshot to start or upgrade from there instead of
// initialSavepointPath or upgradeSavepointPath): a path, or the namespace
// and name of a FlinkStateSnapshot whose status.path is the snapshot.
var referenceFields = []struct {
	field string
	path  []string
}{
	{"spec.job.flinkStateSnapshotReference", []string{"spec", "job", "flinkStateSnapshotReference"}},
	{"status.jobStatus.upgradeSnapshotReference", []string{"status", "jobStatus", "upgradeSnapshotReference"}},
}

// OperatorRecords lists every snapshot path the operator's resources in
// the namespaces name: FlinkDeployments and FlinkSessionJobs (initial,
// upgrade and last savepoint, the legacy savepoint history) and every
// FlinkStateSnapshot (status.path, and spec.savepoint.path of a savepoint
// registered with alreadyExists). A cluster without the operator's CRDs
// (or, before 1.10, without FlinkStateSnapshot) has none of those; any
// other error is returned, because a record not read could be a restore
// point.
func (c *Client) OperatorRecords(ctx context.Context, namespaces []string) ([]inventory.OperatorRecord, error) {
	if c.cfg.DisableOperator {
		return nil, nil // configured as a fleet without the operator
	}
	var out []inventory.OperatorRecord
	for _, ns := range namespaces {
		for _, r := range []struct {
			gvr  schema.GroupVersionResource
			kind string
		}{{FlinkDeploymentGVR, KindFlinkDeployment}, {FlinkSessionJobGVR, KindFlinkSessionJob}} {
			list, err := c.dyn.Resource(r.gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
			if apierrors.IsNotFound(err) {
				continue // the operator's CRDs are not installed
			}
			if err != nil {
				return nil, newError("list", r.kind+"s in "+ns, err)
			}
			for i := range list.Items {
				u := &list.Items[i]
				ref := inventory.ObjectRef{APIVersion: operatorAPIVersion, Kind: r.kind, Namespace: ns, Name: u.GetName(), KubeCluster: c.cfg.Name}
				for _, f := range recordFields {
					if p, _, _ := unstructured.NestedString(u.Object, f.path...); p != "" {
						out = append(out, inventory.OperatorRecord{Resource: ref, Field: f.field, Path: p})
					}
				}
				for _, f := range referenceFields {
					rec, ok, err := c.referenceRecord(ctx, ref, u, f.field, f.path)
					if err != nil {
						return nil, err
					}
					if ok {
						out = append(out, rec)
					}
				}
				history, _, _ := unstructured.NestedSlice(u.Object, "status", "jobStatus", "savepointInfo", "savepointHistory")
				for j, h := range history {
					if m, ok := h.(map[string]any); ok {
						if p, _ := m["location"].(string); p != "" {
							out = append(out, inventory.OperatorRecord{Resource: ref, Field: fmt.Sprintf("status.jobStatus.savepointInfo.savepointHistory[%d].location", j), Path: p})
						}
					}
				}
			}
		}
		snaps, err := c.dyn.Resource(FlinkStateSnapshotGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			continue // no FlinkStateSnapshot CRD
		}
		if err != nil {
			return nil, newError("list", "FlinkStateSnapshots in "+ns, err)
		}
		for i := range snaps.Items {
			u := &snaps.Items[i]
			ref := inventory.ObjectRef{APIVersion: operatorAPIVersion, Kind: KindFlinkStateSnapshot, Namespace: ns, Name: u.GetName(), KubeCluster: c.cfg.Name}
			sr := snapshotResource(u)
			if sr.Path != "" {
				out = append(out, inventory.OperatorRecord{Resource: ref, Field: "status.path", Path: sr.Path, Snapshot: &sr})
			}
			if p, _, _ := unstructured.NestedString(u.Object, "spec", "savepoint", "path"); p != "" {
				out = append(out, inventory.OperatorRecord{Resource: ref, Field: "spec.savepoint.path", Path: p, Snapshot: &sr})
			}
		}
	}
	// By resource; within one, the fields in the order above.
	key := func(r inventory.OperatorRecord) string {
		return r.Resource.Namespace + "/" + r.Resource.Kind + "/" + r.Resource.Name
	}
	sort.SliceStable(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
	return out, nil
}

// referenceRecord reads the FlinkStateSnapshotReference at fields of u: a
// path is the record; a reference to a FlinkStateSnapshot (in u's
// namespace unless it names one) is resolved to that resource's
// status.path. One that cannot be resolved (gone, no path yet, not a
// reference) is a record of an unknown snapshot, never none: the operator
// may restore from it.
func (c *Client) referenceRecord(ctx context.Context, ref inventory.ObjectRef, u *unstructured.Unstructured, field string, fields []string) (inventory.OperatorRecord, bool, error) {
	raw, found, _ := unstructured.NestedFieldNoCopy(u.Object, fields...)
	if !found || raw == nil {
		return inventory.OperatorRecord{}, false, nil
	}
	rec := inventory.OperatorRecord{Resource: ref, Field: field}
	m, ok := raw.(map[string]any)
	if !ok {
		rec.Unknown = fmt.Sprintf("%s is %T, not a FlinkStateSnapshotReference (path, or namespace and name)", field, raw)
		return rec, true, nil
	}
	path, _ := m["path"].(string)
	name, _ := m["name"].(string)
	ns, _ := m["namespace"].(string)
	switch {
	case path != "":
		rec.Path = path
		return rec, true, nil
	case name == "":
		rec.Unknown = field + " names neither a path nor a FlinkStateSnapshot"
		return rec, true, nil
	}
	if ns == "" {
		ns = ref.Namespace
	}
	snap := KindFlinkStateSnapshot + " " + ns + "/" + name
	rec.Field = field + " -> " + snap + " status.path"
	s, err := c.dyn.Resource(FlinkStateSnapshotGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		rec.Unknown = field + " names " + snap + ", which does not exist"
	case err != nil:
		return rec, false, newError("get", snap+" ("+field+" of "+describe(ref)+")", err)
	default:
		if p, _, _ := unstructured.NestedString(s.Object, "status", "path"); p != "" {
			rec.Path = p
		} else {
			rec.Unknown = field + " names " + snap + ", which has no status.path yet"
		}
	}
	return rec, true, nil
}

// snapshotResource reads what a FlinkStateSnapshot says of itself
// (api.spec.FlinkStateSnapshotSpec, SavepointSpec, and
// api.status.FlinkStateSnapshotStatus).
func snapshotResource(u *unstructured.Unstructured) inventory.SnapshotResource {
	sr := inventory.SnapshotResource{UID: string(u.GetUID()), ResourceVersion: u.GetResourceVersion(), Deleting: u.GetDeletionTimestamp() != nil}
	sr.State, _, _ = unstructured.NestedString(u.Object, "status", "state")
	sr.Path, _, _ = unstructured.NestedString(u.Object, "status", "path")
	sr.JobKind, _, _ = unstructured.NestedString(u.Object, "spec", "jobReference", "kind")
	sr.JobName, _, _ = unstructured.NestedString(u.Object, "spec", "jobReference", "name")
	if sp, ok, _ := unstructured.NestedMap(u.Object, "spec", "savepoint"); ok && sp != nil {
		sr.Savepoint = true
		// SavepointSpec.disposeOnDelete defaults to true.
		sr.DisposeOnDelete = true
		if d, ok := sp["disposeOnDelete"].(bool); ok {
			sr.DisposeOnDelete = d
		}
	}
	return sr
}

// ReadSnapshot reads a FlinkStateSnapshot as it is now, with its JSON.
func (c *Client) ReadSnapshot(ctx context.Context, ref inventory.ObjectRef) (inventory.SnapshotResource, []byte, error) {
	obj := KindFlinkStateSnapshot + " " + ref.Namespace + "/" + ref.Name
	if ref.Kind != KindFlinkStateSnapshot {
		return inventory.SnapshotResource{}, nil, &ConfigError{Field: "ref.kind", Value: ref.Kind, Valid: KindFlinkStateSnapshot}
	}
	u, err := c.dyn.Resource(FlinkStateSnapshotGVR).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return inventory.SnapshotResource{}, nil, newError("get", obj, err)
	}
	data, err := json.Marshal(u.Object)
	if err != nil {
		return inventory.SnapshotResource{}, nil, fmt.Errorf("kube: encode %s: %w", obj, err)
	}
	return snapshotResource(u), data, nil
}

// DeleteSnapshot deletes a FlinkStateSnapshot whose savepoint governance
// removes itself. A resource with disposeOnDelete first gets it set to
// false: otherwise the operator's cleanup (StateSnapshotReconciler.cleanup)
// would try to dispose of the savepoint a second time, fail because the
// data is gone, and keep its finalizer forever. Both writes hold only
// while the resource's UID and resourceVersion are the expected ones
// (ErrPrecondition otherwise); a resource already gone is not an error.
func (c *Client) DeleteSnapshot(ctx context.Context, ref inventory.ObjectRef, expectedUID, expectedResourceVersion string) error {
	obj := KindFlinkStateSnapshot + " " + ref.Namespace + "/" + ref.Name
	if ref.Kind != KindFlinkStateSnapshot {
		return &ConfigError{Field: "ref.kind", Value: ref.Kind, Valid: KindFlinkStateSnapshot}
	}
	if expectedUID == "" || expectedResourceVersion == "" {
		return &ConfigError{Field: "expected uid and resourceVersion", Value: expectedUID + "/" + expectedResourceVersion, Valid: "the uid and resourceVersion of " + obj + " as judged"}
	}
	res := c.dyn.Resource(FlinkStateSnapshotGVR).Namespace(ref.Namespace)
	u, err := res.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return newError("get", obj, err)
	}
	if string(u.GetUID()) != expectedUID {
		return kindError("delete", obj, ErrPrecondition, "uid is %s, expected %s: the resource was recreated since it was judged", u.GetUID(), expectedUID)
	}
	if u.GetResourceVersion() != expectedResourceVersion {
		return kindError("delete", obj, ErrPrecondition, "resourceVersion is %s, expected %s: the resource changed since it was judged", u.GetResourceVersion(), expectedResourceVersion)
	}
	rv := expectedResourceVersion
	if snapshotResource(u).DisposeOnDelete {
		// A merge patch carrying the resourceVersion is applied only if it
		// still matches.
		patch, _ := json.Marshal(map[string]any{
			"metadata": map[string]any{"uid": expectedUID, "resourceVersion": expectedResourceVersion},
			"spec":     map[string]any{"savepoint": map[string]any{"disposeOnDelete": false}},
		})
		p, err := res.Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case apierrors.IsConflict(err):
			return kindError("set disposeOnDelete false on", obj, ErrPrecondition, "the resource changed since it was judged: %v", err)
		case err != nil:
			return newError("set disposeOnDelete false on", obj, err)
		}
		rv = p.GetResourceVersion()
	}
	uid := types.UID(expectedUID)
	err = res.Delete(ctx, ref.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return kindError("delete", obj, ErrPrecondition, "the resource changed since it was judged: %v", err)
	}
	return newError("delete", obj, err)
}
