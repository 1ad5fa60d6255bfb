//go:build realpeers

package app_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/kube"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// TestWorkerDiscoversKubernetesInventory wires the worker's activities from
// a config with inventory.kubernetes against the real kube-apiserver and
// finds a native Flink cluster, its dirs and its restart recipe.
func TestWorkerDiscoversKubernetesInventory(t *testing.T) {
	t.Parallel()
	k := sandbox.RequireKube(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := "wiring-" + peertest.RandomHex(4)
	if err := k.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	if err := k.CreateNativeFlinkCluster(ctx, sandbox.NativeFlinkCluster{Namespace: ns, ClusterID: "orders", TaskManagers: 1,
		FlinkConfig: map[string]string{
			"execution.checkpointing.dir":           "hdfs://nn:8020/user/app/team-x/checkpoints",
			"execution.checkpointing.savepoint-dir": "hdfs://nn:8020/user/app/team-x/savepoints",
		}}); err != nil {
		t.Fatal(err)
	}
	cs, err := k.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	patch := `{"metadata":{"annotations":{"` + kube.JobsAnnotation + `":"[{\"name\":\"orders\",\"restart\":{\"kind\":\"rest-jar-run\",\"jar\":\"hdfs://nn:8020/jars/orders.jar\",\"entryClass\":\"com.example.Orders\"}}]"}}}`
	if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, "orders", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	cfg := config.Default()
	cfg.Inventory.Kubeconfig = k.Kubeconfig
	cfg.Inventory.Kubernetes = &kube.Config{Namespaces: []string{ns},
		Tenants: []kube.TenantMapping{{Namespace: ns, Name: "team-x", Root: "hdfs://nn:8020/user/app/team-x"}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	acts := peertest.NewPorts(t, cfg, "wiring-test")
	if err := acts.Kubernetes.Ready(ctx); err != nil {
		t.Fatalf("kubernetes health probe: %v", err)
	}
	if acts.Orphans == nil {
		t.Fatal("no leftover-object port wired with inventory.kubernetes: governance would not clean Kubernetes leftovers")
	}
	inv, err := acts.Inventory.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Clusters) != 1 {
		t.Fatalf("clusters %+v, want exactly orders", inv.Clusters)
	}
	c := inv.Clusters[0]
	if c.ClusterID != "orders" || c.Tenant != "team-x" || c.Source != inventory.SourceNativeKubernetes ||
		c.SavepointDir != "hdfs://nn:8020/user/app/team-x/savepoints" || len(c.Jobs) != 1 || c.Jobs[0].Restart.EntryClass != "com.example.Orders" {
		t.Fatalf("cluster %+v", c)
	}
}
