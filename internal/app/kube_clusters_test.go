//go:build realpeers

package app_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/kube"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// TestInventoryOverTwoKubernetesClustersOnRealPeers runs the inventory and
// a governance run over two real kube-apiservers, east and west, each with
// namespace N and a native Flink cluster of the same id: east's runs,
// west's lost its JobManager, leaving an orphan TaskManager pod of the
// same name as east's live one. Every tenant, cluster and object carries
// its Kubernetes cluster; the orphan is deleted from west only.
func TestInventoryOverTwoKubernetesClustersOnRealPeers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	east, eastCS, _ := sandbox.RequireFlinkKube(t)
	west := sandbox.RequireSecondKube(t)
	westCS, err := west.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	sfx := peertest.RandomHex(4)
	ns, id := "mk-"+sfx, "mk-flink-"+sfx
	for _, k := range []*sandbox.Kube{east, west} {
		if err := k.CreateNamespace(ctx, ns, nil); err != nil {
			t.Fatal(err)
		}
		if err := k.CreateNativeFlinkCluster(ctx, sandbox.NativeFlinkCluster{Namespace: ns, ClusterID: id, TaskManagers: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := westCS.AppsV1().Deployments(ns).Delete(ctx, id, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	tmPod := sandbox.NativeFlinkTaskManagerPodName(id, 1, 1)
	eastPod, err := eastCS.CoreV1().Pods(ns).Get(ctx, tmPod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	var tenantEast, tenantWest string
	e := newFailClosedEnvWith(t, ctx, func(e *failClosedEnv, s *inventory.Static, cfg *config.Config) {
		tenantEast, tenantWest = "mk-east-"+sfx, "mk-west-"+sfx
		cfg.Inventory.KubernetesClusters = []config.KubernetesCluster{
			{Name: "east", Kubeconfig: east.Kubeconfig, Kubernetes: kube.Config{Namespaces: []string{ns},
				Tenants:       []kube.TenantMapping{{Namespace: ns, Name: tenantEast, Root: e.root + "/east"}},
				RESTOverrides: map[string]string{ns + "/" + id: e.peers.Clusters[0].RESTURL}}},
			{Name: "west", Kubeconfig: west.Kubeconfig, Kubernetes: kube.Config{Namespaces: []string{ns},
				Tenants: []kube.TenantMapping{{Namespace: ns, Name: tenantWest, Root: e.root + "/west"}}}},
		}
	})

	inv, err := e.acts.Inventory.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, tn := range inv.Tenants {
		rows["tenant "+tn.Name] = tn.KubeCluster + "/" + tn.Namespace
	}
	for _, c := range inv.Clusters {
		if c.Source != inventory.SourceStatic {
			rows["cluster "+c.ClusterID] = c.KubeCluster + "/" + c.Namespace + " " + c.Resource.KubeCluster
		}
	}
	want := map[string]string{"tenant " + tenantEast: "east/" + ns, "tenant " + tenantWest: "west/" + ns, "cluster " + id: "east/" + ns + " east"}
	for k, v := range want {
		if rows[k] != v {
			t.Errorf("inventory row %s = %q; want %q (all rows %v)", k, rows[k], v, rows)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// Only west's namespace is in scope; east's same-named pod is a live
	// cluster's all the same.
	sum, plan := e.plan(ctx, "mk-1", core.Scope{Tenants: []string{tenantWest}}, cleanup.Policy{OrphanTTL: time.Nanosecond})
	var orphan *cleanup.ObjectItem
	for i := range plan.Objects {
		if plan.Objects[i].Ref.Name == tmPod {
			orphan = &plan.Objects[i]
		}
	}
	if orphan == nil || orphan.Ref.KubeCluster != "west" || orphan.Tenant != tenantWest || !strings.HasPrefix(orphan.Path, "kubernetes://west/"+ns+"/") {
		t.Fatalf("plan objects %+v; want west's TaskManager pod %s labelled west", plan.Objects, tmPod)
	}
	var ex governance.ExecuteCleanupResult
	if err := e.activity(app.NewFamilies(e.acts).Governance.ExecuteCleanup, governance.ExecuteCleanupInput{RunID: "mk-1", PlanPath: sum.PlanPath, PlanSHA256: sum.PlanSHA256}, &ex); err != nil {
		t.Fatalf("execute: %v", err)
	}
	if len(ex.ObjectOutcomes) != len(plan.Objects) || ex.Objects != int64(len(plan.Objects)) {
		t.Fatalf("outcomes %+v; want every planned object removed", ex.ObjectOutcomes)
	}
	for _, o := range ex.ObjectOutcomes {
		if o.Name == tmPod && o.KubeCluster != "west" {
			t.Errorf("outcome row %+v; want it labelled west", o)
		}
	}
	if _, err := westCS.CoreV1().Pods(ns).Get(ctx, tmPod, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("west's orphan pod: %v; want it deleted", err)
	}
	if p, err := eastCS.CoreV1().Pods(ns).Get(ctx, tmPod, metav1.GetOptions{}); err != nil || p.UID != eastPod.UID {
		t.Errorf("east's pod of the same name: %v; want it untouched", err)
	}
	if !e.exists(e.root + "/trash/mk-1/kubernetes/west/" + ns + "/pod/" + tmPod + ".json") {
		t.Errorf("west's pod JSON not in the trash under kubernetes/west/")
	}
}

// TestKubeFleetRefusesATenantInTwoClusters: a namespace template gives
// namespace N of both clusters tenant name N; the inventory refuses rather
// than merge two teams' state under one name.
func TestKubeFleetRefusesATenantInTwoClusters(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	east, eastCS, eastDyn := sandbox.RequireFlinkKube(t)
	west := sandbox.RequireSecondKube(t)
	westCS, err := west.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	westDyn, err := west.Dynamic()
	if err != nil {
		t.Fatal(err)
	}
	ns := "mk-dup-" + peertest.RandomHex(4)
	for _, k := range []*sandbox.Kube{east, west} {
		if err := k.CreateNamespace(ctx, ns, nil); err != nil {
			t.Fatal(err)
		}
	}
	var clients []*kube.Client
	for _, c := range []struct {
		name string
		cs   kubernetes.Interface
		dyn  dynamic.Interface
	}{{"east", eastCS, eastDyn}, {"west", westCS, westDyn}} {
		kc, err := kube.New(c.cs, c.dyn, kube.Config{Name: c.name, Namespaces: []string{ns}, TenantRootTemplate: "/t/{namespace}"})
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, kc)
	}
	fleet, err := app.NewKubeFleet("", clients...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fleet.Discover(ctx)
	if !errors.Is(err, kube.ErrInvalidInput) || !strings.Contains(err.Error(), ns) || !strings.Contains(err.Error(), "east") || !strings.Contains(err.Error(), "west") {
		t.Fatalf("discover: %v; want invalid input naming tenant %s in east and west", err, ns)
	}
}
