package kube

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

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

// OperatorRecords lists every snapshot path the operator's resources in
// the namespaces name: FlinkDeployments and FlinkSessionJobs (initial,
// upgrade and last savepoint, the legacy savepoint history) and every
// FlinkStateSnapshot (status.path, and spec.savepoint.path of a savepoint
// registered with alreadyExists). A cluster without the FlinkStateSnapshot
// CRD (operators before 1.10) has none of those; any other error is
// returned, because a record not read could be a restore point.
func (c *Client) OperatorRecords(ctx context.Context, namespaces []string) ([]inventory.OperatorRecord, error) {
	var out []inventory.OperatorRecord
	for _, ns := range namespaces {
		for _, r := range []struct {
			gvr  schema.GroupVersionResource
			kind string
		}{{FlinkDeploymentGVR, KindFlinkDeployment}, {FlinkSessionJobGVR, KindFlinkSessionJob}} {
			list, err := c.dyn.Resource(r.gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, newError("list", r.kind+"s in "+ns, err)
			}
			for i := range list.Items {
				u := &list.Items[i]
				ref := inventory.ObjectRef{APIVersion: operatorAPIVersion, Kind: r.kind, Namespace: ns, Name: u.GetName()}
				for _, f := range recordFields {
					if p, _, _ := unstructured.NestedString(u.Object, f.path...); p != "" {
						out = append(out, inventory.OperatorRecord{Resource: ref, Field: f.field, Path: p})
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
			ref := inventory.ObjectRef{APIVersion: operatorAPIVersion, Kind: KindFlinkStateSnapshot, Namespace: ns, Name: u.GetName()}
			if p, _, _ := unstructured.NestedString(u.Object, "status", "path"); p != "" {
				out = append(out, inventory.OperatorRecord{Resource: ref, Field: "status.path", Path: p})
			}
			if p, _, _ := unstructured.NestedString(u.Object, "spec", "savepoint", "path"); p != "" {
				out = append(out, inventory.OperatorRecord{Resource: ref, Field: "spec.savepoint.path", Path: p})
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
