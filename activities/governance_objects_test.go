//go:build realpeers

package activities_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.temporal.io/sdk/testsuite"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/kube"
	"github.com/flinkmaint/flinkmaint/internal/metrics"
	"github.com/flinkmaint/flinkmaint/internal/storage"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// restFleet is the Flink REST port of the test's clusters: the jobs each
// REST endpoint lists, or that it is down. Kubernetes is the real
// apiserver; Flink is not what this test is about.
type restFleet struct {
	jobs map[string][]flink.JobOverview
	down map[string]bool
}

func (r *restFleet) For(_ context.Context, url string) (core.FlinkAPI, error) {
	return restClient{jobs: r.jobs[url], down: r.down[url]}, nil
}

type restClient struct {
	core.FlinkAPI // other calls panic: the test notices them
	jobs          []flink.JobOverview
	down          bool
}

func (c restClient) ListJobs(context.Context) ([]flink.JobOverview, error) {
	if c.down {
		return nil, errors.New("dial tcp: connection refused")
	}
	return c.jobs, nil
}

func (c restClient) Checkpoints(context.Context, string) (flink.CheckpointingStatistics, error) {
	return flink.CheckpointingStatistics{}, nil
}

// JobExceptions: a job listed as failed failed after it started; it names
// no snapshot it failed to restore from.
func (c restClient) JobExceptions(context.Context, string, int) (flink.JobExceptions, error) {
	return flink.JobExceptions{}, nil
}

func (c restClient) CheckpointConfig(context.Context, string) (flink.CheckpointConfig, error) {
	return flink.CheckpointConfig{Timeout: 600_000}, nil
}

// JobManagerConfig: no file-system HA, as on these clusters.
func (c restClient) JobManagerConfig(context.Context) (flink.Config, error) {
	return flink.Config{}, nil
}

// TestGovernanceKubernetesLeftovers plans and executes the cleanup of
// leftover Flink objects on the real kube-apiserver: TaskManager pods and
// HA ConfigMaps of a deleted cluster, a standalone TaskManager deployment
// and an HA ConfigMap of clusters that never had a JobManager here, two
// idle JobManagers, next to a live cluster whose objects must stay. Some
// leftovers change between plan and execution and must be refused.
func TestGovernanceKubernetesLeftovers(t *testing.T) {
	k := sandbox.RequireKube(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs, err := k.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	ns := "gov-orphans-" + hex.EncodeToString(b)
	if err := k.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	tenantRoot, trashRoot, planDir := filepath.Join(dir, "tenant"), filepath.Join(dir, "trash"), filepath.Join(dir, "plans")
	for _, d := range []string{tenantRoot + "/checkpoints", tenantRoot + "/savepoints", tenantRoot + "/ha", trashRoot, planDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	liveJob, goneJob := strings.Repeat("a1", 16), strings.Repeat("b2", 16)
	for _, c := range []sandbox.NativeFlinkCluster{
		{Namespace: ns, ClusterID: "live", TaskManagers: 2, HA: true, JobIDs: []string{liveJob}, FlinkConfig: map[string]string{
			"execution.checkpointing.dir":           "file://" + tenantRoot + "/checkpoints",
			"execution.checkpointing.savepoint-dir": "file://" + tenantRoot + "/savepoints",
			"high-availability.storageDir":          "file://" + tenantRoot + "/ha",
		}},
		{Namespace: ns, ClusterID: "gone", TaskManagers: 3, HA: true, JobIDs: []string{goneJob}},
		{Namespace: ns, ClusterID: "idle", TaskManagers: 1},
		{Namespace: ns, ClusterID: "quiet"},
	} {
		if err := k.CreateNativeFlinkCluster(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	// The JobManager of "gone" is deleted; no garbage collector runs in the
	// sandbox (as when GC is blocked), so its pods and ConfigMaps stay.
	if err := cs.AppsV1().Deployments(ns).Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	standaloneTaskManagers(t, ctx, cs, ns, "standalone")
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "retired-cluster-config-map", Labels: sandbox.NativeFlinkHAConfigMapLabels("retired")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	rest := func(id string) string { return "http://" + id + ".flink.test:8081" }
	ended := time.Now().Add(-3 * time.Hour).UnixMilli()
	flinkJobs := &restFleet{jobs: map[string][]flink.JobOverview{
		rest("live"): {{ID: liveJob, Name: "orders", State: flink.JobRunning}},
		rest("idle"): {{ID: strings.Repeat("c3", 16), State: flink.JobState("FINISHED"), EndTime: ended},
			{ID: strings.Repeat("d4", 16), State: flink.JobState("CANCELED"), EndTime: ended - 1000}},
		rest("quiet"): {{ID: strings.Repeat("e5", 16), State: flink.JobState("FAILED"), EndTime: ended}},
	}, down: map[string]bool{}}
	kc, err := kube.New(cs, nil, kube.Config{Namespaces: []string{ns}, DisableOperator: true,
		Tenants: []kube.TenantMapping{{Namespace: ns, Name: "team-o", Root: "file://" + tenantRoot}},
		RESTOverrides: map[string]string{ns + "/live": rest("live"), ns + "/idle": rest("idle"), ns + "/quiet": rest("quiet"),
			ns + "/retired": rest("retired")}})
	if err != nil {
		t.Fatal(err)
	}
	guard, err := storage.NewGuard(tenantRoot, trashRoot, planDir)
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := app.NewKubeFleet("", kc)
	if err != nil {
		t.Fatal(err)
	}
	acts := &app.Ports{Inventory: kc, Flink: flinkJobs, Storage: &storage.Resolver{Guard: guard},
		Orphans: app.KubeOrphans{Fleet: fleet},
		Cleanup: core.CleanupSettings{TrashRoot: "file://" + trashRoot, PlanDir: "file://" + planDir}}
	gov, err := metrics.NewGovernance(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	acts.Metrics = gov
	run := func(fn, in, out any) error {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestActivityEnvironment()
		app.RegisterActivities(env, acts)
		v, err := env.ExecuteActivity(fn, in)
		if err != nil {
			return err
		}
		return v.Get(out)
	}
	path := func(kind, name string) string { return cleanup.ObjectScheme + ns + "/" + kind + "/" + name }
	leftovers := map[string]string{ // path -> rule
		path("pod", "gone-taskmanager-1-1"):              string(cleanup.RuleOrphanTaskManager),
		path("pod", "gone-taskmanager-1-2"):              string(cleanup.RuleOrphanTaskManager),
		path("pod", "gone-taskmanager-1-3"):              string(cleanup.RuleOrphanTaskManager),
		path("configmap", "gone-cluster-config-map"):     string(cleanup.RuleOrphanHAConfigMap),
		path("configmap", "gone-"+goneJob+"-config-map"): string(cleanup.RuleOrphanHAConfigMap),
		path("configmap", "retired-cluster-config-map"):  string(cleanup.RuleOrphanHAConfigMap),
		path("deployment", "standalone-taskmanager"):     string(cleanup.RuleOrphanTaskManager),
		path("deployment", "idle"):                       string(cleanup.RuleIdleJobManager),
		path("deployment", "quiet"):                      string(cleanup.RuleIdleJobManager),
	}

	// The default TTL (24h) keeps every leftover: they were created just now.
	var young governance.PlanCleanupResult
	if err := run(app.NewFamilies(acts).Governance.PlanCleanup, governance.PlanCleanupInput{RunID: "young", Scope: core.Scope{Tenants: []string{"team-o"}}}, &young); err != nil {
		t.Fatal(err)
	}
	if young.Summary.Objects != 0 || young.Summary.KeptObjects != len(leftovers) || young.Summary.Items != 0 {
		t.Fatalf("young leftovers: %d planned, %d kept; want 0 and %d: %+v", young.Summary.Objects, young.Summary.KeptObjects, len(leftovers), young.Summary.ObjectSample)
	}
	for _, o := range young.Summary.ObjectSample {
		if o.Kept != string(cleanup.KeepWithinTTL) || o.Rule != "" {
			t.Fatalf("young leftover %+v; want kept within-ttl", o)
		}
	}

	// Two hours later, with a 1h TTL, exactly the leftovers are planned.
	acts.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	in := governance.PlanCleanupInput{RunID: "old", Scope: core.Scope{Tenants: []string{"team-o"}}, Policy: governance.CleanupPolicy{OrphanTTL: time.Hour}}
	var planned governance.PlanCleanupResult
	if err := run(app.NewFamilies(acts).Governance.PlanCleanup, in, &planned); err != nil {
		t.Fatal(err)
	}
	s := planned.Summary
	got := map[string]string{}
	for _, o := range s.ObjectSample {
		got[o.Path] = o.Rule
		// A native JobManager deployment has no owner; every other leftover
		// names the JobManager it belonged to.
		if o.Kept != "" || o.Namespace != ns || o.Tenant != "team-o" || !strings.HasPrefix(o.Age, "2h") || (o.Owner == "") != (o.Kind == string(cleanup.KindIdleJobManager)) {
			t.Errorf("planned object %+v", o)
		}
	}
	if len(got) != len(leftovers) || s.Objects != int64(len(leftovers)) || s.KeptObjects != 0 {
		t.Fatalf("planned %v (%d objects, %d kept); want exactly %v", got, s.Objects, s.KeptObjects, leftovers)
	}
	for p, rule := range leftovers {
		if got[p] != rule {
			t.Errorf("%s planned by %q; want %q", p, got[p], rule)
		}
	}
	if v := testutil.ToFloat64(gov.PlannedObjects.WithLabelValues("team-o")); v != float64(len(leftovers)) {
		t.Errorf("planned-objects metric %v; want %d", v, len(leftovers))
	}
	if len(s.Tenants) != 1 || s.Tenants[0].Tenant != "team-o" || s.Tenants[0].Objects != int64(len(leftovers)) || s.Items != int64(len(leftovers)) {
		t.Fatalf("tenant summary %+v, items %d", s.Tenants, s.Items)
	}

	// Between plan and execution: someone else deletes a pod, another is
	// relabelled (its resourceVersion moves), the retired cluster comes back, so its HA ConfigMap is no
	// longer a leftover, and the quiet cluster's REST API stops answering,
	// so whether its JobManager is idle can no longer be told.
	patch := []byte(`{"metadata":{"labels":{"touched":"yes"}}}`)
	if _, err := cs.CoreV1().Pods(ns).Patch(ctx, "gone-taskmanager-1-2", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := k.CreateNativeFlinkCluster(ctx, sandbox.NativeFlinkCluster{Namespace: ns, ClusterID: "retired"}); err != nil {
		t.Fatal(err)
	}
	flinkJobs.down[rest("quiet")] = true
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "gone-taskmanager-1-3", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	exIn := governance.ExecuteCleanupInput{RunID: "old", PlanPath: s.PlanPath, PlanSHA256: s.PlanSHA256}
	var res governance.ExecuteCleanupResult
	if err := run(app.NewFamilies(acts).Governance.ExecuteCleanup, exIn, &res); err != nil {
		t.Fatal(err)
	}
	refused := map[string]string{
		path("pod", "gone-taskmanager-1-2"):             "resourceVersion",
		path("configmap", "retired-cluster-config-map"): "no longer a leftover",
		path("deployment", "quiet"):                     "now kept (status-unknown): the jobs of cluster quiet could not be read",
	}
	recs, err := cleanup.ReadManifest(ctx, storage.NewLocal(guard), "file://"+trashRoot+"/_audit", "old")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(leftovers) {
		t.Fatalf("manifest has %d records; want one per leftover: %+v", len(recs), recs)
	}
	for _, r := range recs {
		if r.Path == path("pod", "gone-taskmanager-1-3") {
			if r.Outcome != cleanup.OutcomeGone || r.TrashPath != "" {
				t.Errorf("%s deleted by someone else: %+v; want gone", r.Path, r)
			}
			continue
		}
		if why, ok := refused[r.Path]; ok {
			if r.Outcome != cleanup.OutcomeRefused || !strings.Contains(r.Detail, why) {
				t.Errorf("%s: %s %q; want refused mentioning %q", r.Path, r.Outcome, r.Detail, why)
			}
			continue
		}
		if r.Outcome != cleanup.OutcomeTrashed || r.UID == "" || string(r.Rule) != leftovers[r.Path] {
			t.Errorf("%s: %+v; want trashed by %s", r.Path, r, leftovers[r.Path])
			continue
		}
		kindName := strings.TrimPrefix(r.Path, cleanup.ObjectScheme+ns+"/")
		want := "file://" + filepath.Join(trashRoot, "old", "kubernetes", ns, kindName) + ".json"
		if r.TrashPath != want {
			t.Errorf("%s trashed to %s; want %s", r.Path, r.TrashPath, want)
		}
		data, err := os.ReadFile(strings.TrimPrefix(r.TrashPath, "file://"))
		var obj struct {
			Kind     string            `json:"kind"`
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err != nil || json.Unmarshal(data, &obj) != nil || string(obj.Metadata.UID) != r.UID || obj.Metadata.Namespace != ns || obj.Kind == "" {
			t.Errorf("trash copy of %s: %v\n%s", r.Path, err, data)
		}
	}
	if res.Objects != 5 || res.Items != 5 || len(res.Refused) != 3 || len(res.ObjectOutcomes) != len(leftovers) ||
		len(res.Tenants) != 1 || res.Tenants[0].Objects != 5 {
		t.Fatalf("result %+v", res)
	}
	if v := testutil.ToFloat64(gov.RemovedObjects.WithLabelValues("team-o")); v != 5 {
		t.Errorf("removed-objects metric %v; want 5", v)
	}

	// What the apiserver holds now: the live cluster whole, the refused
	// objects untouched, every deleted leftover gone.
	exists := func(kind, name string) bool {
		var err error
		switch kind {
		case "pod":
			_, err = cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		case "configmap":
			_, err = cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		case "deployment":
			_, err = cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	for _, o := range []struct{ kind, name string }{
		{"deployment", "live"}, {"pod", "live-taskmanager-1-1"}, {"pod", "live-taskmanager-1-2"}, {"configmap", "live-cluster-config-map"},
		{"configmap", "live-" + liveJob + "-config-map"}, {"pod", "idle-taskmanager-1-1"},
		{"pod", "gone-taskmanager-1-2"}, {"configmap", "retired-cluster-config-map"}, {"deployment", "quiet"},
	} {
		if !exists(o.kind, o.name) {
			t.Errorf("%s %s was deleted; it must stay", o.kind, o.name)
		}
	}
	for p := range leftovers {
		if _, ok := refused[p]; ok || p == path("pod", "gone-taskmanager-1-3") {
			continue
		}
		parts := strings.Split(strings.TrimPrefix(p, cleanup.ObjectScheme), "/")
		if exists(parts[1], parts[2]) {
			t.Errorf("%s still exists", p)
		}
	}

	// Executing again fails nothing and redoes nothing.
	segments := func() []string {
		m, _ := filepath.Glob(filepath.Join(trashRoot, "_audit", "old", "manifest-*.jsonl"))
		sort.Strings(m)
		return m
	}
	before := segments()
	var again governance.ExecuteCleanupResult
	if err := run(app.NewFamilies(acts).Governance.ExecuteCleanup, exIn, &again); err != nil {
		t.Fatalf("second execution: %v", err)
	}
	if after := segments(); len(after) != len(before) || again.Objects != 5 || len(again.Refused) != 3 {
		t.Fatalf("second execution: segments %v (before %v), result %+v", after, before, again)
	}
}

// standaloneTaskManagers creates a TaskManager Deployment of a standalone
// cluster whose JobManager never ran in this namespace.
func standaloneTaskManagers(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, cluster string) {
	t.Helper()
	labels := sandbox.NativeFlinkComponentLabels(cluster, sandbox.NativeFlinkComponentTaskManager)
	one := int32(1)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: cluster + "-taskmanager", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: sandbox.NativeFlinkMainContainer, Image: "flink:1.20",
					Args: []string{"taskmanager"}}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
