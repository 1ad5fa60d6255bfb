package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// AnnotationRestoredFrom is set on an object a restore re-created: the
// governance run whose trash it came from.
const AnnotationRestoredFrom = "flinkmaint.io/restored-from-run"

// Recreated is what RecreateObject made.
type Recreated struct {
	UID string
	// Changed says what differs from the object that was deleted, for
	// the audit: dropped owner references, a snapshot made a record of
	// its existing savepoint.
	Changed []string
}

// RecreateObject creates again an object governance deleted, from the JSON
// it wrote to the trash (ReadOrphan's, or a FlinkStateSnapshot's), under
// the same namespace and name. Only objects that record state come back:
// an HA ConfigMap, and a FlinkStateSnapshot, which is re-created as a
// record of the savepoint it names (spec.savepoint.alreadyExists, so the
// operator does not trigger a new one; its status is the operator's to
// write again). What the apiserver sets (uid, resourceVersion, times,
// managed fields, status) is dropped, and so are owner references: their
// owners were the objects' own, deleted or gone. Errors: ErrExists when
// an object of that name is there again, ErrNotRecreatable for a Pod or
// Deployment, ErrInvalidInput when the JSON is not an object of ref,
// ErrNotFound when its namespace is gone.
func (c *Client) RecreateObject(ctx context.Context, ref inventory.ObjectRef, data []byte, runID string) (Recreated, error) {
	obj := ref.Kind + " " + ref.Namespace + "/" + ref.Name
	var gvr schema.GroupVersionResource
	switch ref.Kind {
	case "ConfigMap":
		gvr = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	case KindFlinkStateSnapshot:
		gvr = FlinkStateSnapshotGVR
	case "Pod", "Deployment":
		return Recreated{}, kindError("re-create", obj, ErrNotRecreatable,
			"a %s runs a Flink process: re-created, it would start a JobManager or TaskManager of a cluster judged gone", ref.Kind)
	default:
		return Recreated{}, kindError("re-create", obj, ErrInvalidInput, "kind %s: a restore re-creates ConfigMap and %s", ref.Kind, KindFlinkStateSnapshot)
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(data, &u.Object); err != nil {
		return Recreated{}, kindError("re-create", obj, ErrInvalidInput, "its JSON does not parse: %v", err)
	}
	if u.GetKind() != ref.Kind || u.GetNamespace() != ref.Namespace || u.GetName() != ref.Name {
		return Recreated{}, kindError("re-create", obj, ErrInvalidInput, "its JSON is of %s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
	}
	var out Recreated
	if owners := u.GetOwnerReferences(); len(owners) > 0 {
		var names []string
		for _, o := range owners {
			names = append(names, o.Kind+"/"+o.Name)
		}
		sort.Strings(names)
		out.Changed = append(out.Changed, "owner references dropped ("+strings.Join(names, ", ")+"): the owner would delete it again, or is gone")
	}
	if ref.Kind == KindFlinkStateSnapshot {
		changed, err := asRecordOfItsSavepoint(u)
		if err != nil {
			return Recreated{}, kindError("re-create", obj, ErrInvalidInput, "%v", err)
		}
		out.Changed = append(out.Changed, changed...)
	}
	clean := &unstructured.Unstructured{Object: map[string]any{}}
	for k, v := range u.Object {
		switch k {
		case "status", "metadata":
		default:
			clean.Object[k] = v
		}
	}
	clean.SetNamespace(ref.Namespace)
	clean.SetName(ref.Name)
	clean.SetLabels(u.GetLabels())
	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AnnotationRestoredFrom] = runID
	clean.SetAnnotations(annotations)
	made, err := c.dyn.Resource(gvr).Namespace(ref.Namespace).Create(ctx, clean, metav1.CreateOptions{FieldManager: "flinkmaint"})
	switch {
	case err == nil:
		out.UID = string(made.GetUID())
		return out, nil
	case apierrors.IsAlreadyExists(err):
		return Recreated{}, &Error{Op: "re-create", Object: obj, Err: fmt.Errorf("%w: %w", ErrExists, err), kind: ErrExists}
	}
	return Recreated{}, newError("re-create", obj, err)
}

// asRecordOfItsSavepoint makes a FlinkStateSnapshot's spec a record of the
// savepoint it names, so that re-created it does not trigger a savepoint.
func asRecordOfItsSavepoint(u *unstructured.Unstructured) ([]string, error) {
	if _, isSavepoint, _ := unstructured.NestedMap(u.Object, "spec", "savepoint"); !isSavepoint {
		return nil, errors.New("it is not a savepoint snapshot (no spec.savepoint): a checkpoint snapshot is not re-created")
	}
	path, _, _ := unstructured.NestedString(u.Object, "spec", "savepoint", "path")
	status, _, _ := unstructured.NestedString(u.Object, "status", "path")
	if path == "" {
		path = status
	}
	if path == "" {
		return nil, errors.New("it names no savepoint (spec.savepoint.path and status.path are empty)")
	}
	var changed []string
	if exists, _, _ := unstructured.NestedBool(u.Object, "spec", "savepoint", "alreadyExists"); !exists {
		changed = append(changed, "spec.savepoint.alreadyExists set: it records "+path+" and triggers no savepoint")
	}
	if err := unstructured.SetNestedField(u.Object, true, "spec", "savepoint", "alreadyExists"); err != nil {
		return nil, err
	}
	if err := unstructured.SetNestedField(u.Object, path, "spec", "savepoint", "path"); err != nil {
		return nil, err
	}
	return changed, nil
}
