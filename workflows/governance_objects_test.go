package workflows

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/activities/windows"
)

// TestGovernanceKubernetesObjects: a plan of Kubernetes leftovers alone is
// not an empty plan; it is executed and the report shows every object
// with its decision and outcome. The orphan TTL reaches the planner.
func TestGovernanceKubernetesObjects(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	openGates(env)
	var a *windows.Activities
	var gov *governance.Activities
	var capa *capacity.Activities
	var planned []governance.PlanCleanupInput
	executed := 0
	docs := map[string]string{}
	pod := governance.ObjectBrief{Path: "kubernetes://team-a/pod/gone-taskmanager-1-1", Kind: "taskmanager-pod", Namespace: "team-a",
		Name: "gone-taskmanager-1-1", Tenant: "team-a", ClusterID: "gone", Rule: "orphan-taskmanager", Age: "50h0m0s",
		Owner: "Deployment gone (uid u1, gone)", Detail: "its owner Deployment gone (uid u1) no longer exists"}
	cm := governance.ObjectBrief{Path: "kubernetes://team-a/configmap/gone-cluster-config-map", Kind: "ha-configmap", Namespace: "team-a",
		Name: "gone-cluster-config-map", Tenant: "team-a", ClusterID: "gone", Rule: "orphan-ha-configmap", Age: "50h0m0s", Owner: "Deployment gone (gone)"}
	young := governance.ObjectBrief{Path: "kubernetes://team-a/pod/new-taskmanager-1-1", Kind: "taskmanager-pod", Namespace: "team-a",
		Name: "new-taskmanager-1-1", ClusterID: "new", Kept: "within-ttl", Age: "1h0m0s", Detail: "a leftover for 1h0m0s, within orphanTTL 48h0m0s"}
	env.OnActivity(capa.SampleQuota, mockAny, mockAny).Return(capacity.SampleQuotaResult{}, nil)
	gatherInParts(env)
	env.OnActivity(gov.PlanCleanup, mockAny, mockAny).Return(func(_ context.Context, in governance.PlanCleanupInput) (governance.PlanCleanupResult, error) {
		planned = append(planned, in)
		return governance.PlanCleanupResult{Summary: governance.PlanSummary{RunID: in.RunID, PlanPath: "hdfs://nn/plans/" + in.RunID + "/plan.json",
			PlanSHA256: "abc", Action: "trash", Items: 2, Objects: 2, KeptObjects: 1,
			Tenants:      []governance.TenantPlan{{Tenant: "team-a", Items: 2, Objects: 2, KeptObjects: 1}},
			ObjectSample: []governance.ObjectBrief{cm, pod, young}}}, nil
	})
	env.OnActivity(gov.ExecuteCleanup, mockAny, mockAny).Return(func(_ context.Context, in governance.ExecuteCleanupInput) (governance.ExecuteCleanupResult, error) {
		executed++
		p, c := pod, cm
		p.Outcome, p.Detail = "trashed", "JSON in hdfs://nn/trash/g9/kubernetes/team-a/pod/gone-taskmanager-1-1.json"
		c.Outcome, c.Detail = "refused", "resourceVersion is 9, planned 7: the object changed since planning"
		return governance.ExecuteCleanupResult{RunID: in.RunID, Total: 2, Items: 1, Objects: 1,
			Tenants:        []governance.TenantReclaim{{Tenant: "team-a", Items: 1, Objects: 1}},
			Refused:        []governance.RecordBrief{{Path: c.Path, Outcome: "refused", Detail: c.Detail}},
			ObjectOutcomes: []governance.ObjectBrief{c, p}}, nil
	})
	env.OnActivity(a.WriteDocument, mockAny, mockAny).Return(func(_ context.Context, in core.WriteDocumentInput) (core.WriteDocumentResult, error) {
		docs[in.Path] = string(in.Content)
		return core.WriteDocumentResult{Path: in.Path}, nil
	})
	env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{RunID: "g9", Mode: ModeAuto, Policy: GovernancePolicy{OrphanTTL: Duration(48 * time.Hour)}})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var rep GovernanceReport
	if err := env.GetWorkflowResult(&rep); err != nil {
		t.Fatal(err)
	}
	if len(planned) != 1 || planned[0].Policy.OrphanTTL != 48*time.Hour {
		t.Fatalf("plan input %+v; want orphanTTL 48h", planned)
	}
	if executed != 1 || rep.Outcome != GovernancePhaseCompleted {
		t.Fatalf("outcome %s, %d executions; a plan of objects alone must be executed", rep.Outcome, executed)
	}
	if len(rep.Tenants) != 1 || rep.Tenants[0].PlannedObjects != 2 || rep.Tenants[0].RemovedObjects != 1 {
		t.Fatalf("tenants %+v", rep.Tenants)
	}
	outcomes := map[string]string{}
	for _, o := range rep.Objects {
		outcomes[o.Name] = o.Outcome
	}
	if len(rep.Objects) != 3 || outcomes[pod.Name] != "trashed" || outcomes[cm.Name] != "refused" || outcomes[young.Name] != "" {
		t.Fatalf("report objects %+v", rep.Objects)
	}
	md := docs["hdfs://nn/plans/g9/report.md"]
	for _, want := range []string{
		"## Kubernetes objects",
		"| `team-a/gone-taskmanager-1-1` | taskmanager-pod | gone | delete: orphan-taskmanager | 50h0m0s | Deployment gone (uid u1, gone) | trashed (JSON in hdfs://nn/trash/g9/kubernetes/team-a/pod/gone-taskmanager-1-1.json) |",
		"| `team-a/gone-cluster-config-map` | ha-configmap | gone | delete: orphan-ha-configmap | 50h0m0s | Deployment gone (gone) | refused (resourceVersion is 9",
		"| `team-a/new-taskmanager-1-1` | taskmanager-pod | new | keep: within-ttl | 1h0m0s |  | (a leftover for 1h0m0s, within orphanTTL 48h0m0s) |",
		"| 2 / 1 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}

func TestGovernanceOrphanTTLValidation(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{Policy: GovernancePolicy{OrphanTTL: Duration(-time.Hour)}})
	err := env.GetWorkflowError()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != ErrTypeInvalidInput || !strings.Contains(err.Error(), "policy.orphanTTL=-1h0m0s") {
		t.Fatalf("error %v; want InvalidInput naming policy.orphanTTL", err)
	}
}
