//go:build realpeers

package sandbox

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var kubeFlinkDeploymentGVR = schema.GroupVersionResource{Group: "flink.apache.org", Version: "v1beta1", Resource: "flinkdeployments"}

var kubeFlinkOperatorCRDs = []string{
	"flinkdeployments.flink.apache.org",
	"flinksessionjobs.flink.apache.org",
	"flinkstatesnapshots.flink.apache.org",
}

func kubeTestContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// kubeRequireFlinkCRDs skips only when ../shared is absent: the CRDs are read from there.
func kubeRequireFlinkCRDs(t *testing.T, k *Kube) {
	t.Helper()
	RequireShared(t)
	if err := k.InstallFlinkCRDs(kubeTestContext(t)); err != nil {
		t.Fatalf("InstallFlinkCRDs: %v", err)
	}
}

// kubeTestNamespace creates a namespace unique to this test run.
func kubeTestNamespace(t *testing.T, k *Kube) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	var sb strings.Builder
	for _, c := range b {
		sb.WriteByte("abcdefghijklmnopqrstuvwxyz0123456789"[int(c)%36])
	}
	prefix := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(prefix) > 40 {
		prefix = prefix[:40]
	}
	name := strings.Trim(prefix, "-") + "-" + sb.String()
	if err := k.CreateNamespace(kubeTestContext(t), name, map[string]string{"flinkmaint.test": "kube"}); err != nil {
		t.Fatalf("CreateNamespace(%s): %v", name, err)
	}
	return name
}

func TestKubeRequireReusesRunningControlPlane(t *testing.T) {
	first := RequireKube(t)
	state, err := StateDir()
	if err != nil {
		t.Fatal(err)
	}
	before, err := ReadKubeEndpoint(filepath.Join(state, KubeEndpointFile))
	if err != nil {
		t.Fatal(err)
	}

	// Concurrent callers, as parallel tests do, must all land on the same one.
	var wg sync.WaitGroup
	hosts := make([]string, 4)
	errs := make([]error, 4)
	for i := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := LoadKube()
			errs[i] = err
			if err == nil {
				hosts[i] = k.Config.Host
			}
		}()
	}
	wg.Wait()
	for i := range hosts {
		if errs[i] != nil {
			t.Fatalf("LoadKube #%d: %v", i, errs[i])
		}
		if hosts[i] != first.Config.Host {
			t.Errorf("LoadKube #%d host %s, want the running %s", i, hosts[i], first.Config.Host)
		}
	}
	after, err := ReadKubeEndpoint(filepath.Join(state, KubeEndpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("kube.json changed, a second control plane was started:\nbefore %+v\nafter  %+v", before, after)
	}
	if !kubeProcessAlive(after.APIServerPID) || !kubeProcessAlive(after.EtcdPID) {
		t.Errorf("kube-apiserver pid %d / etcd pid %d from kube.json not running", after.APIServerPID, after.EtcdPID)
	}
	if !strings.HasPrefix(first.Config.Host, "https://127.0.0.1:") {
		t.Errorf("apiserver host %s, want https://127.0.0.1:<port>", first.Config.Host)
	}
	if fi, err := os.Stat(first.Kubeconfig); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig %s: %v, mode %v; want a 0600 file", first.Kubeconfig, err, fi)
	}
	cs, err := first.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("server version: %v", err)
	}
	if v.GitVersion != "v1.34.2" {
		t.Errorf("kube-apiserver reports %s, want v1.34.2 (bin/kube built by sandbox/kube/build.sh)", v.GitVersion)
	}
}

func TestKubeInstallFlinkCRDsIsIdempotentAndEstablished(t *testing.T) {
	k := RequireKube(t)
	kubeRequireFlinkCRDs(t, k)
	// Twice: the second run updates in place.
	if err := k.InstallFlinkCRDs(kubeTestContext(t)); err != nil {
		t.Fatalf("second InstallFlinkCRDs: %v", err)
	}
	client, err := apiextensionsclient.NewForConfig(k.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range kubeFlinkOperatorCRDs {
		crd, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(kubeTestContext(t), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("CRD %s: %v", name, err)
		}
		if !kubeCRDCondition(crd, apiextensionsv1.Established) {
			t.Errorf("CRD %s not Established: %+v", name, crd.Status.Conditions)
		}
	}
	cs, err := k.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.Discovery().ServerResourcesForGroupVersion("flink.apache.org/v1beta1")
	if err != nil {
		t.Fatalf("discovery of flink.apache.org/v1beta1: %v", err)
	}
	var kinds []string
	for _, r := range res.APIResources {
		kinds = append(kinds, r.Kind)
	}
	for _, want := range []string{"FlinkDeployment", "FlinkSessionJob", "FlinkStateSnapshot"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("discovery lists %v, missing %s", kinds, want)
		}
	}
}

func TestKubeInstallCRDsFromRejectsEmptyDir(t *testing.T) {
	k := RequireKube(t)
	err := k.InstallCRDsFrom(kubeTestContext(t), t.TempDir())
	var inErr *KubeInputError
	if !errors.As(err, &inErr) || inErr.Field != "CRD directory" {
		t.Fatalf("InstallCRDsFrom(empty dir) = %v, want a KubeInputError for the CRD directory", err)
	}
}

func kubeFlinkDeployment(ns, name, upgradeMode, flinkVersion string, parallelism any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "flink.apache.org/v1beta1",
		"kind":       "FlinkDeployment",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"image":          "flink:1.20",
			"flinkVersion":   flinkVersion,
			"serviceAccount": "flink",
			"flinkConfiguration": map[string]any{
				"execution.checkpointing.dir":           "hdfs://nn:8020/flink/team-a/checkpoints",
				"execution.checkpointing.savepoint-dir": "hdfs://nn:8020/flink/team-a/savepoints",
				"high-availability.type":                "kubernetes",
				"high-availability.storageDir":          "hdfs://nn:8020/flink/team-a/ha",
			},
			"jobManager":  map[string]any{"resource": map[string]any{"memory": "1024m", "cpu": int64(1)}},
			"taskManager": map[string]any{"resource": map[string]any{"memory": "2048m", "cpu": int64(1)}},
			"job": map[string]any{
				"jarURI":      "local:///opt/flink/examples/streaming/StateMachineExample.jar",
				"parallelism": parallelism,
				"upgradeMode": upgradeMode,
				"state":       "running",
			},
		},
	}}
}

func TestKubeFlinkDeploymentAcceptedAndReadBack(t *testing.T) {
	k := RequireKube(t)
	kubeRequireFlinkCRDs(t, k)
	ns := kubeTestNamespace(t, k)
	ctx := kubeTestContext(t)
	dc, err := k.Dynamic()
	if err != nil {
		t.Fatal(err)
	}
	client := dc.Resource(kubeFlinkDeploymentGVR).Namespace(ns)
	if _, err := client.Create(ctx, kubeFlinkDeployment(ns, "orders", "savepoint", "v1_20", int64(2)), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create FlinkDeployment: %v", err)
	}
	got, err := client.Get(ctx, "orders", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get FlinkDeployment: %v", err)
	}
	checks := map[string]struct {
		path []string
		want any
	}{
		"upgradeMode": {[]string{"spec", "job", "upgradeMode"}, "savepoint"},
		"state":       {[]string{"spec", "job", "state"}, "running"},
		"parallelism": {[]string{"spec", "job", "parallelism"}, int64(2)},
		"ha dir":      {[]string{"spec", "flinkConfiguration", "high-availability.storageDir"}, "hdfs://nn:8020/flink/team-a/ha"},
	}
	for name, c := range checks {
		v, found, err := unstructured.NestedFieldNoCopy(got.Object, c.path...)
		if err != nil || !found || v != c.want {
			t.Errorf("%s: %s = %v (found %v, err %v), want %v", name, strings.Join(c.path, "."), v, found, err, c.want)
		}
	}

	// The operator writes status through the status subresource; so can tests.
	if err := unstructured.SetNestedField(got.Object, "STABLE", "status", "lifecycleState"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(got.Object, "RUNNING", "status", "jobStatus", "state"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update FlinkDeployment status: %v", err)
	}
	got, err = client.Get(ctx, "orders", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s, _, _ := unstructured.NestedString(got.Object, "status", "jobStatus", "state"); s != "RUNNING" {
		t.Errorf("status.jobStatus.state = %q after UpdateStatus, want RUNNING", s)
	}
}

func TestKubeFlinkDeploymentInvalidRejectedBySchema(t *testing.T) {
	k := RequireKube(t)
	kubeRequireFlinkCRDs(t, k)
	ns := kubeTestNamespace(t, k)
	dc, err := k.Dynamic()
	if err != nil {
		t.Fatal(err)
	}
	client := dc.Resource(kubeFlinkDeploymentGVR).Namespace(ns)
	cases := map[string]struct {
		obj       *unstructured.Unstructured
		wantField string
	}{
		"unknown upgrade mode":     {kubeFlinkDeployment(ns, "bad-mode", "delete-everything", "v1_20", int64(1)), "spec.job.upgradeMode"},
		"unknown flink version":    {kubeFlinkDeployment(ns, "bad-version", "savepoint", "v0_9", int64(1)), "spec.flinkVersion"},
		"parallelism not a number": {kubeFlinkDeployment(ns, "bad-parallelism", "savepoint", "v1_20", "two"), "spec.job.parallelism"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := kubeTestContext(t)
			_, err := client.Create(ctx, c.obj, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create = %v, want 422 Invalid", err)
			}
			if !strings.Contains(err.Error(), c.wantField) {
				t.Errorf("error %q does not name %s", err, c.wantField)
			}
			if _, err := client.Get(ctx, c.obj.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("rejected object readable afterwards: %v", err)
			}
		})
	}
}

func TestKubeCreateNamespaceMergesLabels(t *testing.T) {
	k := RequireKube(t)
	ns := kubeTestNamespace(t, k)
	ctx := kubeTestContext(t)
	if err := k.CreateNamespace(ctx, ns, map[string]string{"team": "payments"}); err != nil {
		t.Fatalf("second CreateNamespace: %v", err)
	}
	cs, err := k.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["team"] != "payments" || got.Labels["flinkmaint.test"] != "kube" {
		t.Errorf("labels %v, want both team=payments and flinkmaint.test=kube", got.Labels)
	}
	for _, bad := range []string{"Upper", "", "a_b", strings.Repeat("x", 64)} {
		if err := k.CreateNamespace(ctx, bad, nil); !errors.Is(err, ErrInvalidKubeInput) {
			t.Errorf("CreateNamespace(%q) = %v, want ErrInvalidKubeInput", bad, err)
		}
	}
}

func TestKubeCreateNativeFlinkClusterLabelsAndSelectors(t *testing.T) {
	k := RequireKube(t)
	ns := kubeTestNamespace(t, k)
	ctx := kubeTestContext(t)
	jobA, jobB := "a1b2c3d4e5f60718293a4b5c6d7e8f90", "00000000000000000000000000000001"
	ha := NativeFlinkCluster{
		Namespace: ns, ClusterID: "orders", TaskManagers: 3, HA: true, JobIDs: []string{jobA, jobB},
		FlinkConfig: map[string]string{
			"high-availability.storageDir":          "hdfs://nn:8020/flink/team-a/ha",
			"execution.checkpointing.dir":           "hdfs://nn:8020/flink/team-a/checkpoints",
			"execution.checkpointing.savepoint-dir": "hdfs://nn:8020/flink/team-a/savepoints",
			"state.backend.type":                    "rocksdb",
		},
	}
	plain := NativeFlinkCluster{
		Namespace: ns, ClusterID: "clicks", TaskManagers: 1, LegacyConfig: true,
		FlinkConfig: map[string]string{"state.checkpoints.dir": "hdfs://nn:8020/flink/team-a/checkpoints"},
	}
	for _, c := range []NativeFlinkCluster{ha, plain} {
		if err := k.CreateNativeFlinkCluster(ctx, c); err != nil {
			t.Fatalf("CreateNativeFlinkCluster(%s): %v", c.ClusterID, err)
		}
	}
	cs, err := k.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	sel := func(l map[string]string) metav1.ListOptions {
		return metav1.ListOptions{LabelSelector: labels.SelectorFromSet(l).String()}
	}

	deploys, err := cs.AppsV1().Deployments(ns).List(ctx, sel(map[string]string{"type": "flink-native-kubernetes", "component": "jobmanager"}))
	if err != nil {
		t.Fatal(err)
	}
	var deployNames []string
	for _, d := range deploys.Items {
		deployNames = append(deployNames, d.Name)
	}
	slices.Sort(deployNames)
	if !slices.Equal(deployNames, []string{"clicks", "orders"}) {
		t.Fatalf("JobManager deployments by label = %v, want [clicks orders]", deployNames)
	}
	orders, err := cs.AppsV1().Deployments(ns).Get(ctx, "orders", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if orders.Status.ReadyReplicas != 1 {
		t.Errorf("orders deployment readyReplicas = %d, want 1", orders.Status.ReadyReplicas)
	}

	tms, err := cs.CoreV1().Pods(ns).List(ctx, sel(map[string]string{"type": "flink-native-kubernetes", "app": "orders", "component": "taskmanager"}))
	if err != nil {
		t.Fatal(err)
	}
	var tmNames []string
	for _, p := range tms.Items {
		tmNames = append(tmNames, p.Name)
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "Deployment" || p.OwnerReferences[0].UID != orders.UID {
			t.Errorf("TaskManager %s owners %+v, want the orders Deployment (uid %s)", p.Name, p.OwnerReferences, orders.UID)
		}
		if p.Status.Phase != "Running" {
			t.Errorf("TaskManager %s phase %s, want Running", p.Name, p.Status.Phase)
		}
	}
	slices.Sort(tmNames)
	if want := []string{"orders-taskmanager-1-1", "orders-taskmanager-1-2", "orders-taskmanager-1-3"}; !slices.Equal(tmNames, want) {
		t.Errorf("TaskManager pods = %v, want %v", tmNames, want)
	}

	jms, err := cs.CoreV1().Pods(ns).List(ctx, sel(map[string]string{"app": "orders", "component": "jobmanager"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(jms.Items) != 1 || !strings.HasPrefix(jms.Items[0].Name, "orders-") || jms.Items[0].OwnerReferences[0].Kind != "ReplicaSet" {
		t.Errorf("JobManager pods of orders = %d, want one orders-<hash>-<suffix> owned by a ReplicaSet", len(jms.Items))
	}

	haCMs, err := cs.CoreV1().ConfigMaps(ns).List(ctx, sel(map[string]string{"app": "orders", "configmap-type": "high-availability"}))
	if err != nil {
		t.Fatal(err)
	}
	var haNames []string
	for _, cm := range haCMs.Items {
		haNames = append(haNames, cm.Name)
		if len(cm.OwnerReferences) != 0 {
			t.Errorf("HA config map %s has owners %v; Flink leaves them unowned", cm.Name, cm.OwnerReferences)
		}
	}
	slices.Sort(haNames)
	wantHA := []string{"orders-" + jobB + "-config-map", "orders-" + jobA + "-config-map", "orders-cluster-config-map"}
	slices.Sort(wantHA)
	if !slices.Equal(haNames, wantHA) {
		t.Errorf("HA config maps = %v, want %v", haNames, wantHA)
	}
	clusterCM, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "orders-cluster-config-map", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, comp := range []string{"dispatcher", "resourcemanager", "restserver", "job-" + jobA} {
		v := clusterCM.Data["org.apache.flink.k8s.leader."+comp]
		if sessionID, addr, ok := strings.Cut(v, ","); !ok || len(sessionID) != 36 || addr == "" {
			t.Errorf("leader entry for %s = %q, want <uuid>,<address>", comp, v)
		}
	}
	if none, err := cs.CoreV1().ConfigMaps(ns).List(ctx, sel(map[string]string{"app": "clicks", "configmap-type": "high-availability"})); err != nil || len(none.Items) != 0 {
		t.Errorf("non-HA cluster clicks has HA config maps: %v %v", none, err)
	}

	conf, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "flink-config-orders", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if conf.Labels["type"] != "flink-native-kubernetes" || conf.Labels["app"] != "orders" || len(conf.Labels) != 2 {
		t.Errorf("flink-config-orders labels %v, want exactly type and app", conf.Labels)
	}
	var parsed map[string]string
	if err := yaml.Unmarshal([]byte(conf.Data["config.yaml"]), &parsed); err != nil {
		t.Fatalf("config.yaml does not parse: %v\n%s", err, conf.Data["config.yaml"])
	}
	for key, want := range map[string]string{
		"high-availability.storageDir": "hdfs://nn:8020/flink/team-a/ha",
		"high-availability.type":       "kubernetes",
		"kubernetes.cluster-id":        "orders",
		"kubernetes.namespace":         ns,
	} {
		if parsed[key] != want {
			t.Errorf("config.yaml %s = %q, want %q", key, parsed[key], want)
		}
	}
	legacy, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "flink-config-clicks", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(legacy.Data["flink-conf.yaml"], "state.checkpoints.dir: hdfs://nn:8020/flink/team-a/checkpoints\n") {
		t.Errorf("flink-conf.yaml of clicks = %q", legacy.Data["flink-conf.yaml"])
	}

	if _, err := cs.CoreV1().Services(ns).Get(ctx, "orders-rest", metav1.GetOptions{}); err != nil {
		t.Errorf("rest service orders-rest: %v", err)
	}
	if _, err := cs.CoreV1().Services(ns).Get(ctx, "orders", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("HA cluster orders has an internal service (err %v); Flink creates none with HA", err)
	}
	internal, err := cs.CoreV1().Services(ns).Get(ctx, "clicks", metav1.GetOptions{})
	if err != nil || internal.Spec.ClusterIP != "None" {
		t.Errorf("internal headless service clicks: %v %+v", err, internal)
	}

	// Creating the same cluster again is an error, not a silent merge.
	if err := k.CreateNativeFlinkCluster(ctx, plain); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second CreateNativeFlinkCluster(clicks) = %v, want AlreadyExists", err)
	}
}
