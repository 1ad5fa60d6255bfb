//go:build realpeers

package kube

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

const jobsJSON = `[{"name":"orders","restart":{"kind":"rest-jar-run","jar":"hdfs:///jars/orders.jar","entryClass":"com.example.Orders","programArgs":["--topic","orders"],"parallelism":4}}]`

// TestDiscover creates native clusters, Operator resources and look-alikes
// in labelled and unlabelled namespaces and checks the inventory holds
// exactly the Flink clusters of the selected namespaces.
func TestDiscover(t *testing.T) {
	e := newEnv(t)
	sel := map[string]string{"flinkmaint.io/tenant-" + e.runs: "yes"}
	nsA := e.ns("inv-a", sel)
	nsB := e.ns("inv-b", sel)
	nsOut := e.ns("inv-out", nil) // not selected

	e.nativeCluster(sandbox.NativeFlinkCluster{
		Namespace: nsA, ClusterID: "native-session", TaskManagers: 2, HA: true,
		JobIDs: []string{strings.Repeat("0a", 16)},
		FlinkConfig: map[string]string{
			"execution.checkpointing.dir":           "hdfs://nn:8020/user/app/a/checkpoints",
			"execution.checkpointing.savepoint-dir": "hdfs://nn:8020/user/app/a/savepoints",
			"high-availability.storageDir":          "hdfs://nn:8020/user/app/a/ha",
		},
	})
	e.annotateJobs(nsA, "native-session", jobsJSON)
	e.nativeCluster(sandbox.NativeFlinkCluster{
		Namespace: nsB, ClusterID: "native-legacy", LegacyConfig: true, Image: "flink:1.17.2-scala_2.12",
		FlinkConfig: map[string]string{
			"state.checkpoints.dir": "hdfs://nn:8020/user/app/b/chk",
			"state.savepoints.dir":  "hdfs://nn:8020/user/app/b/sp",
			"rest.port":             "9081",
			"execution.target":      "kubernetes-application",
		},
	})
	e.nativeCluster(sandbox.NativeFlinkCluster{Namespace: nsOut, ClusterID: "not-selected"})

	// Look-alikes: Flink-ish names and some labels, but not Flink's.
	lookalike := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "lookalike", Labels: map[string]string{"app": "lookalike", "component": "jobmanager"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "lookalike"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "lookalike"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "flink-main-container", Image: "flink:1.20"}}},
			},
		},
	}
	if _, err := e.cs.AppsV1().Deployments(nsA).Create(e.ctx, lookalike, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.CoreV1().ConfigMaps(nsA).Create(e.ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "flink-config-lookalike"},
		Data:       map[string]string{"config.yaml": "execution.checkpointing.dir: hdfs://x/y\n"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Operator: an application with nested flinkConfiguration, a session
	// cluster with two session jobs, and a session job whose cluster is gone.
	opApp := e.flinkDeployment(nsA, "op-app", map[string]any{
		"execution": map[string]any{"checkpointing": map[string]any{
			"dir": "hdfs://nn:8020/user/app/a/op-chk", "savepoint-dir": "hdfs://nn:8020/user/app/a/op-sp",
		}},
		"high-availability.type":       "kubernetes",
		"high-availability.storageDir": "hdfs://nn:8020/user/app/a/op-ha",
	}, appJob())
	// The operator runs op-app through Flink's native integration: its
	// JobManager Deployment carries Flink's labels and is owned by the
	// FlinkDeployment. It is one cluster, listed once, as the operator's.
	e.nativeCluster(sandbox.NativeFlinkCluster{Namespace: nsA, ClusterID: "op-app"})
	jm := e.deployment(nsA, "op-app")
	jm.OwnerReferences = []metav1.OwnerReference{{APIVersion: operatorAPIVersion, Kind: KindFlinkDeployment, Name: "op-app", UID: opApp.GetUID(), Controller: ptrTrue()}}
	if _, err := e.cs.AppsV1().Deployments(nsA).Update(e.ctx, jm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.flinkDeployment(nsB, "op-session", map[string]any{"state.savepoints.dir": "hdfs://nn:8020/user/app/b/op-sp"}, nil)
	for _, sj := range []struct{ name, parent string }{{"sj-1", "op-session"}, {"sj-2", "op-session"}, {"sj-lost", "gone-session"}} {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": operatorAPIVersion, "kind": KindFlinkSessionJob,
			"metadata": map[string]any{"name": sj.name, "namespace": nsB},
			"spec": map[string]any{"deploymentName": sj.parent, "job": map[string]any{
				"jarURI": "https://repo.example/job.jar", "parallelism": int64(1), "upgradeMode": "savepoint", "state": "running",
			}},
		}}
		if _, err := e.dyn.Resource(FlinkSessionJobGVR).Namespace(nsB).Create(e.ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// A static file adds a standalone cluster.
	static := filepath.Join(t.TempDir(), "static.yaml")
	if err := os.WriteFile(static, []byte(`
tenants: [{name: standalone, root: /user/app/standalone}]
clusters:
  - {clusterId: sa-1, tenant: standalone, mode: session, restUrl: "http://127.0.0.1:8081"}
`), 0o600); err != nil {
		t.Fatal(err)
	}

	c := e.client(Config{
		NamespaceSelector:  "flinkmaint.io/tenant-" + e.runs + "=yes",
		Tenants:            []TenantMapping{{Namespace: nsA, Name: "team-a", Root: "hdfs://nn:8020/user/app/a"}},
		TenantRootTemplate: "hdfs://nn:8020/user/app/{namespace}",
		RESTOverrides:      map[string]string{nsB + "/native-legacy": "http://127.0.0.1:18081"},
		StaticFile:         static,
	}, nil)
	inv, err := c.Discover(e.ctx)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}

	wantTenants := map[string]string{
		"team-a": "hdfs://nn:8020/user/app/a", nsB: "hdfs://nn:8020/user/app/" + nsB, "standalone": "/user/app/standalone",
	}
	if len(inv.Tenants) != len(wantTenants) {
		t.Fatalf("tenants %+v, want %v", inv.Tenants, wantTenants)
	}
	for _, tn := range inv.Tenants {
		if wantTenants[tn.Name] != tn.Root {
			t.Fatalf("tenant %+v: want root %q", tn, wantTenants[tn.Name])
		}
	}

	got := map[string]inventory.Cluster{}
	for _, cl := range inv.Clusters {
		got[cl.Namespace+"/"+cl.ClusterID] = cl
	}
	wantKeys := []string{nsA + "/native-session", nsA + "/op-app", nsB + "/native-legacy", nsB + "/op-session", nsB + "/gone-session", "/sa-1"}
	if len(got) != len(wantKeys) || len(inv.Clusters) != len(wantKeys) {
		t.Fatalf("clusters %v, want exactly %v", keysOf(got), wantKeys)
	}
	for _, k := range wantKeys {
		if _, ok := got[k]; !ok {
			t.Fatalf("missing %s; have %v", k, keysOf(got))
		}
	}

	ns := got[nsA+"/native-session"]
	if ns.Tenant != "team-a" || ns.Source != inventory.SourceNativeKubernetes || ns.Mode != inventory.ModeSession ||
		ns.RESTURL != "http://native-session-rest."+nsA+":8081" ||
		ns.CheckpointDir != "hdfs://nn:8020/user/app/a/checkpoints" || ns.SavepointDir != "hdfs://nn:8020/user/app/a/savepoints" ||
		ns.HAStorageDir != "hdfs://nn:8020/user/app/a/ha" || ns.FlinkVersion != "1.20" ||
		ns.Resource == nil || ns.Resource.Kind != "Deployment" || ns.Resource.Name != "native-session" {
		t.Fatalf("native-session: %+v", ns)
	}
	if len(ns.Jobs) != 1 || ns.Jobs[0].Name != "orders" || ns.Jobs[0].Restart.Kind != inventory.RestartRESTJarRun ||
		ns.Jobs[0].Restart.EntryClass != "com.example.Orders" || ns.Jobs[0].Restart.Parallelism != 4 {
		t.Fatalf("native-session jobs from annotation: %+v", ns.Jobs)
	}
	nl := got[nsB+"/native-legacy"]
	if nl.Tenant != nsB || nl.Mode != inventory.ModeApplication || nl.RESTURL != "http://127.0.0.1:18081" ||
		nl.CheckpointDir != "hdfs://nn:8020/user/app/b/chk" || nl.SavepointDir != "hdfs://nn:8020/user/app/b/sp" ||
		nl.HAStorageDir != "" || nl.FlinkVersion != "1.17.2" || len(nl.Jobs) != 0 {
		t.Fatalf("native-legacy: %+v", nl)
	}
	oa := got[nsA+"/op-app"]
	if oa.Source != inventory.SourceOperator || oa.Mode != inventory.ModeApplication || oa.FlinkVersion != "1.20" ||
		oa.CheckpointDir != "hdfs://nn:8020/user/app/a/op-chk" || oa.SavepointDir != "hdfs://nn:8020/user/app/a/op-sp" ||
		oa.HAStorageDir != "hdfs://nn:8020/user/app/a/op-ha" || oa.RESTURL != "http://op-app-rest."+nsA+":8081" {
		t.Fatalf("op-app: %+v", oa)
	}
	if len(oa.Jobs) != 1 || oa.Jobs[0].Restart.Kind != inventory.RestartOperatorResume || oa.Jobs[0].Restart.Resource.Name != "op-app" {
		t.Fatalf("op-app jobs: %+v", oa.Jobs)
	}
	osn := got[nsB+"/op-session"]
	if osn.Mode != inventory.ModeSession || osn.SavepointDir != "hdfs://nn:8020/user/app/b/op-sp" || len(osn.Jobs) != 2 ||
		osn.Jobs[0].Name != "sj-1" || osn.Jobs[1].Restart.Resource.Kind != KindFlinkSessionJob {
		t.Fatalf("op-session: %+v", osn)
	}
	if gs := got[nsB+"/gone-session"]; gs.Mode != inventory.ModeSessionJob || len(gs.Jobs) != 1 || gs.Jobs[0].Name != "sj-lost" {
		t.Fatalf("gone-session: %+v", gs)
	}
	if sa := got["/sa-1"]; sa.Source != inventory.SourceStatic || sa.Tenant != "standalone" {
		t.Fatalf("static cluster: %+v", sa)
	}

	// Without operator discovery the operator's JobManager stays in the
	// inventory as a native cluster: governance must still see its jobs.
	c3 := e.client(Config{Namespaces: []string{nsA}, TenantRootTemplate: "/user/app/{namespace}", DisableOperator: true}, nil)
	inv3, err := c3.Discover(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, cl := range inv3.Clusters {
		found = found || cl.ClusterID == "op-app" && cl.Source == inventory.SourceNativeKubernetes
	}
	if !found {
		t.Fatalf("operator discovery off: op-app's JobManager not listed as a native cluster: %+v", inv3.Clusters)
	}

	// A namespace list instead of the selector covers exactly that namespace.
	c2 := e.client(Config{Namespaces: []string{nsOut}, TenantRootTemplate: "/user/app/{namespace}"}, nil)
	inv2, err := c2.Discover(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(inv2.Clusters) != 1 || inv2.Clusters[0].ClusterID != "not-selected" || len(inv2.Tenants) != 1 || inv2.Tenants[0].Root != "/user/app/"+nsOut {
		t.Fatalf("namespace list inventory: %+v", inv2)
	}
}

func TestDiscoverBadAnnotationNamesObject(t *testing.T) {
	e := newEnv(t)
	ns := e.ns("inv-bad", nil)
	e.nativeCluster(sandbox.NativeFlinkCluster{Namespace: ns, ClusterID: "bad-jobs"})
	e.annotateJobs(ns, "bad-jobs", `[{"name":"x","restart":{"kind":"rest-jar-run"}}]`)
	c := e.client(Config{Namespaces: []string{ns}, TenantRootTemplate: "/t/{namespace}"}, nil)
	_, err := c.Discover(e.ctx)
	if !errors.Is(err, ErrInvalid) || IsRetryable(err) {
		t.Fatalf("want non-retryable ErrInvalid, got %v", err)
	}
	for _, want := range []string{"Deployment " + ns + "/bad-jobs", JobsAnnotation, "restart.jar"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not name %q", err, want)
		}
	}

	e.annotateJobs(ns, "bad-jobs", `{"name":"not-a-list"}`)
	if _, err := c.Discover(e.ctx); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "JSON list") {
		t.Fatalf("want ErrInvalid about a JSON list, got %v", err)
	}
}

func TestDiscoverMissingConfigMap(t *testing.T) {
	e := newEnv(t)
	ns := e.ns("inv-nocm", nil)
	e.nativeCluster(sandbox.NativeFlinkCluster{Namespace: ns, ClusterID: "no-conf"})
	if err := e.cs.CoreV1().ConfigMaps(ns).Delete(e.ctx, "flink-config-no-conf", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c := e.client(Config{Namespaces: []string{ns}, TenantRootTemplate: "/t/{namespace}"}, nil)
	_, err := c.Discover(e.ctx)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "flink-config-no-conf") {
		t.Fatalf("want ErrNotFound naming flink-config-no-conf, got %v", err)
	}
}

func keysOf(m map[string]inventory.Cluster) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func ptrTrue() *bool { t := true; return &t }
