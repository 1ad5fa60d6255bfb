package deploy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/kube"
	"github.com/flinkmaint/flinkmaint/internal/temporalconn"
)

// One release, one tag: the chart deploys its appVersion by default, the
// kustomize base deploys the same, and `make image` (scripts/image.sh)
// tags the image it builds with it, so an install of a release pulls the
// image that release built.
func TestImageTagIsTheChartsAppVersion(t *testing.T) {
	var chart struct {
		AppVersion string `yaml:"appVersion"`
	}
	readYAML(t, "helm/flinkmaint/Chart.yaml", &chart)
	if chart.AppVersion == "" {
		t.Fatal("Chart.yaml has no appVersion")
	}
	var kust struct {
		Images []struct {
			Name   string `yaml:"name"`
			NewTag string `yaml:"newTag"`
		} `yaml:"images"`
	}
	readYAML(t, "kustomize/base/kustomization.yaml", &kust)
	if len(kust.Images) != 1 || kust.Images[0].Name != "flinkmaint-worker" || kust.Images[0].NewTag != chart.AppVersion {
		t.Errorf("kustomize base images %+v, chart appVersion %q: want flinkmaint-worker at the chart's appVersion", kust.Images, chart.AppVersion)
	}
	if img := deploymentOf(t, helmTemplate(t, "flinkmaint")).Spec.Template.Spec.Containers[0].Image; img != "flinkmaint-worker:"+chart.AppVersion {
		t.Errorf("the chart's default image %q: want flinkmaint-worker:%s", img, chart.AppVersion)
	}
	root := repoRoot(t)
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "VERSION=") {
			env = append(env, e)
		}
	}
	for _, cmd := range []*exec.Cmd{
		exec.Command("make", "-s", "--no-print-directory", "image-version"),
		exec.Command(filepath.Join(root, "scripts", "image.sh"), "--print-version"),
	} {
		cmd.Dir, cmd.Env = root, env
		out, err := cmd.CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != chart.AppVersion {
			t.Errorf("%s: %q (%v); want the chart's appVersion %q", strings.Join(cmd.Args, " "), got, err, chart.AppVersion)
		}
	}
}

// TestDeployConfigMapParses keeps the kustomize base's worker.yaml in step
// with the config schema: an unknown or mistyped key there would stop
// every pod, and so would a file it names that the base does not mount.
func TestDeployConfigMapParses(t *testing.T) {
	path := "kustomize/base/worker.yaml"
	cfg := config.Default()
	if err := cfg.LoadFile(path); err != nil {
		t.Fatalf("shipped worker.yaml does not load: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("shipped worker.yaml does not start a worker: %v", err)
	}
	if cfg.Temporal.Namespace != "flinkmaint" {
		t.Fatalf("unexpected shipped config: %+v", cfg.Temporal)
	}
	if cfg.Inventory.Kubernetes == nil {
		t.Fatal("shipped config has no Kubernetes inventory")
	}
	if err := cfg.Inventory.Kubernetes.Validate(); err != nil {
		t.Fatalf("shipped inventory.kubernetes: %v", err)
	}
}

// TestDeployWorkerReplicasSurviveADrain keeps the base's disruption budget
// in step with its Deployment: the budget must select the worker pods
// (the kustomization's labels, which it also puts on the pods) and leave
// fewer pods required than run, or a drain could never evict one.
func TestDeployWorkerReplicasSurviveADrain(t *testing.T) {
	base := "kustomize/base/"
	var kust struct {
		Resources []string `yaml:"resources"`
		Labels    []struct {
			Pairs            map[string]string `yaml:"pairs"`
			IncludeSelectors bool              `yaml:"includeSelectors"`
		} `yaml:"labels"`
	}
	readYAML(t, base+"kustomization.yaml", &kust)
	podLabels := map[string]string{}
	for _, l := range kust.Labels {
		if !l.IncludeSelectors {
			t.Fatalf("kustomization labels %v do not reach the selectors: the pods would not carry them", l.Pairs)
		}
		for k, v := range l.Pairs {
			podLabels[k] = v
		}
	}
	listed := map[string]bool{}
	for _, r := range kust.Resources {
		listed[r] = true
	}
	if !listed["pdb.yaml"] || !listed["deployment.yaml"] {
		t.Fatalf("kustomization resources %v: want deployment.yaml and pdb.yaml", kust.Resources)
	}
	var dep struct {
		Spec struct {
			Replicas int `yaml:"replicas"`
		} `yaml:"spec"`
	}
	readYAML(t, base+"deployment.yaml", &dep)
	var pdb struct {
		Kind string `yaml:"kind"`
		Spec struct {
			MinAvailable               int    `yaml:"minAvailable"`
			UnhealthyPodEvictionPolicy string `yaml:"unhealthyPodEvictionPolicy"`
			Selector                   struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
		} `yaml:"spec"`
	}
	readYAML(t, base+"pdb.yaml", &pdb)
	if pdb.Kind != "PodDisruptionBudget" || len(pdb.Spec.Selector.MatchLabels) == 0 {
		t.Fatalf("pdb.yaml: kind %q selector %v: want a PodDisruptionBudget with matchLabels", pdb.Kind, pdb.Spec.Selector.MatchLabels)
	}
	for k, v := range pdb.Spec.Selector.MatchLabels {
		if podLabels[k] != v {
			t.Errorf("the budget selects %s=%s, which the worker pods do not carry (%v)", k, v, podLabels)
		}
	}
	// Readiness follows Temporal: in an outage no pod is ready, and only
	// AlwaysAllow lets a drain evict them.
	if pdb.Spec.UnhealthyPodEvictionPolicy != "AlwaysAllow" {
		t.Errorf("unhealthyPodEvictionPolicy %q: want AlwaysAllow, or a Temporal outage blocks every node drain", pdb.Spec.UnhealthyPodEvictionPolicy)
	}
	if pdb.Spec.MinAvailable < 1 || pdb.Spec.MinAvailable >= dep.Spec.Replicas {
		t.Errorf("minAvailable %d with %d replicas: want at least 1 and fewer than the replicas", pdb.Spec.MinAvailable, dep.Spec.Replicas)
	}
}

// TestDeployHeapLimitBelowMemoryLimit keeps the worker's Go heap soft
// limit under its container's memory limit, with room for what is not
// heap: at or above it the collector would let the process be OOM killed.
func TestDeployHeapLimitBelowMemoryLimit(t *testing.T) {
	var dep struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Name string `yaml:"name"`
						Env  []struct {
							Name  string `yaml:"name"`
							Value string `yaml:"value"`
						} `yaml:"env"`
						Resources struct {
							Limits map[string]string `yaml:"limits"`
						} `yaml:"resources"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	readYAML(t, "kustomize/base/deployment.yaml", &dep)
	for _, c := range dep.Spec.Template.Spec.Containers {
		if c.Name != "worker" {
			continue
		}
		limit, err := resource.ParseQuantity(c.Resources.Limits["memory"])
		if err != nil {
			t.Fatalf("worker limits.memory %q: %v", c.Resources.Limits["memory"], err)
		}
		for _, e := range c.Env {
			if e.Name != "GOMEMLIMIT" {
				continue
			}
			// GOMEMLIMIT's suffixes are MiB, GiB..., the quantity's Mi, Gi...
			heap, err := resource.ParseQuantity(strings.Replace(e.Value, "iB", "i", 1))
			if err != nil {
				t.Fatalf("GOMEMLIMIT %q: %v", e.Value, err)
			}
			if heap.Value() > limit.Value()*85/100 {
				t.Fatalf("GOMEMLIMIT %s is above 85%% of the memory limit %s", e.Value, limit.String())
			}
			return
		}
		t.Fatal("the worker container sets no GOMEMLIMIT: its heap would grow to the memory limit and be OOM killed")
	}
	t.Fatal("no worker container in deployment.yaml")
}

// Two releases of the chart in one cluster (flinkmaint and
// flinkmaint-staging) share no object, cluster-scoped roles and bindings
// included, and each binds only its own roles to its own ServiceAccount:
// installing the second must neither fail on the first's objects nor take
// them over.
func TestChartReleasesShareNoObject(t *testing.T) {
	for name, args := range chartValueSets(t) {
		t.Run(name, func(t *testing.T) {
			a := helmTemplate(t, "flinkmaint", args...)
			b := helmTemplate(t, "flinkmaint-staging", args...)
			inA := map[string]bool{}
			for _, o := range a {
				inA[objectKey(o)] = true
			}
			for _, o := range b {
				if inA[objectKey(o)] {
					t.Errorf("%s is rendered by both releases flinkmaint and flinkmaint-staging", objectKey(o))
				}
			}
			for release, objs := range map[string][]*unstructured.Unstructured{"flinkmaint": a, "flinkmaint-staging": b} {
				checkBindingsStayInRelease(t, release, objs)
			}
		})
	}
}

// The kustomize base and its staging overlay, a second install in the
// same cluster, share no object either, and each binds its own roles to
// its own ServiceAccount.
func TestKustomizeStagingSharesNoObjectWithTheBase(t *testing.T) {
	root := repoRoot(t)
	base := render(t, root, "kustomize", "build", filepath.Join(root, "deploy", "kustomize", "base"))
	staging := render(t, root, "kustomize", "build", filepath.Join(root, "deploy", "kustomize", "staging"))
	inBase := map[string]bool{}
	for _, o := range base {
		inBase[objectKey(o)] = true
	}
	for _, o := range staging {
		if inBase[objectKey(o)] {
			t.Errorf("%s is made by both the kustomize base and its staging overlay", objectKey(o))
		}
	}
	checkBindingsStayInRelease(t, "kustomize base", base)
	checkBindingsStayInRelease(t, "kustomize staging", staging)
}

// checkBindingsStayInRelease checks that every binding a release renders
// names a role and ServiceAccounts of that same release.
func checkBindingsStayInRelease(t *testing.T, release string, objs []*unstructured.Unstructured) {
	t.Helper()
	rendered := map[string]bool{}
	for _, o := range objs {
		rendered[objectKey(o)] = true
	}
	for _, o := range objs {
		if o.GetKind() != "RoleBinding" && o.GetKind() != "ClusterRoleBinding" {
			continue
		}
		ref, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
		if kind, _, _ := unstructured.NestedString(o.Object, "roleRef", "kind"); !rendered[kind+" /"+ref] {
			t.Errorf("release %s: %s binds %s %s, which the release does not render", release, objectKey(o), kind, ref)
		}
		subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		for _, s := range subjects {
			s, _ := s.(map[string]any)
			key := fmt.Sprintf("%v %v/%v", s["kind"], s["namespace"], s["name"])
			if !rendered[key] {
				t.Errorf("release %s: %s binds %s, which the release does not render", release, objectKey(o), key)
			}
		}
	}
}

// objectKey names an object as the apiserver keys it: kind, namespace
// (empty when cluster-scoped) and name.
func objectKey(o *unstructured.Unstructured) string {
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

// chartNamespace is where the tests install the chart.
const chartNamespace = "flinkmaint-chart"

// repoRoot is the repository: this package's parent directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func chartPath(t *testing.T) string {
	return filepath.Join(repoRoot(t), "deploy", "helm", "flinkmaint")
}

// chartValueSets are the values the tests render the chart with, as helm
// arguments: its defaults and each documented file of ci/.
func chartValueSets(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartPath(t), "ci", "*-values.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no values files in %s/ci (%v)", chartPath(t), err)
	}
	sets := map[string][]string{"default values": nil}
	for _, f := range files {
		sets["ci/"+filepath.Base(f)] = []string{"-f", f}
	}
	return sets
}

// helmTemplate renders the chart as the release with bin/helm.
func helmTemplate(t *testing.T, release string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	return render(t, repoRoot(t), "helm", append([]string{"template", release, chartPath(t), "--namespace", chartNamespace}, args...)...)
}

// helmTemplateFails renders the chart as the release, wanting helm to
// refuse the values; it returns helm's message.
func helmTemplateFails(t *testing.T, release string, args ...string) string {
	t.Helper()
	args = append([]string{"template", release, chartPath(t), "--namespace", chartNamespace}, args...)
	stdout, stderr, err := runTool(t, repoRoot(t), "helm", args...)
	if err == nil {
		t.Fatalf("helm %s rendered, want it to fail:\n%s", strings.Join(args, " "), stdout)
	}
	return stderr
}

// runTool runs bin/<tool>, built by `make bin/<tool>`.
func runTool(t *testing.T, root, tool string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin := filepath.Join(root, "bin", tool)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v (make bin/%s builds it; make test and make test-unit do)", bin, err, tool)
	}
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// render runs bin/<tool> and splits its output into objects.
func render(t *testing.T, root, tool string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	stdout, stderr, err := runTool(t, root, tool, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, stderr)
	}
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split("\n"+stdout, "\n---") {
		var m map[string]any
		if err := sigsyaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("%s %s: a document does not parse: %v\n%s", tool, strings.Join(args, " "), err, doc)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	if len(objs) == 0 {
		t.Fatalf("%s %s rendered nothing", tool, strings.Join(args, " "))
	}
	return objs
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// A name prefix too long for every object's name is refused by name, not
// cut short into names two releases could share.
func TestChartRefusesANamePrefixTooLong(t *testing.T) {
	long := "flinkmaint-" + strings.Repeat("f", 30)
	msg := helmTemplateFails(t, long)
	if !strings.Contains(msg, long) || !strings.Contains(msg, "fullnameOverride") || !strings.Contains(msg, "at most 40") {
		t.Fatalf("helm's message does not name the prefix, fullnameOverride and the limit:\n%s", msg)
	}
	if objs := helmTemplate(t, long, "--set", "fullnameOverride="+long[:40]); findObject(objs, "Deployment", long[:40]+"-worker") == nil {
		t.Fatalf("fullnameOverride of 40 characters: no Deployment %s-worker", long[:40])
	}
}

func findObject(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// The pod values users know from other charts reach the worker's pod:
// extra env, envFrom, volumes and mounts, labels (never the selector's),
// a priority class, an image by digest, and a ServiceAccount made
// elsewhere or annotated for a cloud identity.
func TestChartPodValues(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	values := writeValues(t, `
image: {repository: registry.example.com/flinkmaint-worker, tag: "9.9.9", digest: `+digest+`}
extraEnv:
  - {name: HTTPS_PROXY, value: "http://proxy.example.com:3128"}
envFrom:
  - secretRef: {name: flinkmaint-env}
extraVolumes:
  - {name: corp-ca, configMap: {name: corp-ca}}
extraVolumeMounts:
  - {name: corp-ca, mountPath: /etc/corp-ca, readOnly: true}
podLabels: {team: platform, app.kubernetes.io/name: something-else}
priorityClassName: maintenance-critical
serviceAccount:
  annotations: {iam.gke.io/gcp-service-account: flinkmaint@example.iam.gserviceaccount.com}
`)
	objs := helmTemplate(t, "flinkmaint", "-f", values)
	dep := deploymentOf(t, objs)
	pod := dep.Spec.Template
	c := pod.Spec.Containers[0]
	if c.Image != "registry.example.com/flinkmaint-worker@"+digest {
		t.Errorf("image %q: want the digest, which wins over the tag", c.Image)
	}
	if v := envValue(c.Env, "HTTPS_PROXY"); v != "http://proxy.example.com:3128" {
		t.Errorf("extraEnv HTTPS_PROXY = %q", v)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "flinkmaint-env" {
		t.Errorf("envFrom %+v: want the Secret flinkmaint-env", c.EnvFrom)
	}
	if !hasVolume(pod.Spec.Volumes, "corp-ca") || !hasMount(c.VolumeMounts, "corp-ca", "/etc/corp-ca") {
		t.Errorf("extraVolumes/extraVolumeMounts: volumes %v, mounts %v", pod.Spec.Volumes, c.VolumeMounts)
	}
	if pod.Labels["team"] != "platform" || pod.Labels["app.kubernetes.io/name"] != dep.Spec.Selector.MatchLabels["app.kubernetes.io/name"] {
		t.Errorf("pod labels %v, selector %v: want podLabels beside, never over, the selector's", pod.Labels, dep.Spec.Selector.MatchLabels)
	}
	if pod.Spec.PriorityClassName != "maintenance-critical" {
		t.Errorf("priorityClassName %q", pod.Spec.PriorityClassName)
	}
	sa := findObject(objs, "ServiceAccount", pod.Spec.ServiceAccountName)
	if sa == nil || sa.GetAnnotations()["iam.gke.io/gcp-service-account"] == "" {
		t.Errorf("ServiceAccount %s: want it rendered with serviceAccount.annotations", pod.Spec.ServiceAccountName)
	}

	// Without a digest the tag is the image's.
	if c := deploymentOf(t, helmTemplate(t, "flinkmaint", "--set", "image.tag=9.9.9")).Spec.Template.Spec.Containers[0]; !strings.HasSuffix(c.Image, ":9.9.9") {
		t.Errorf("image %q: want tag 9.9.9", c.Image)
	}

	// A ServiceAccount made elsewhere: not rendered, run as and bound.
	objs = helmTemplate(t, "flinkmaint", "--set", "serviceAccount.create=false", "--set", "serviceAccount.name=platform-flinkmaint",
		"--set", "rbac.tenantNamespaces[0]=team-a")
	if n := deploymentOf(t, objs).Spec.Template.Spec.ServiceAccountName; n != "platform-flinkmaint" {
		t.Errorf("serviceAccountName %q: want platform-flinkmaint", n)
	}
	for _, o := range objs {
		if o.GetKind() == "ServiceAccount" {
			t.Errorf("serviceAccount.create=false rendered %s", objectKey(o))
		}
		subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		for _, s := range subjects {
			if s, _ := s.(map[string]any); s["name"] != "platform-flinkmaint" {
				t.Errorf("%s binds %v: want platform-flinkmaint", objectKey(o), s)
			}
		}
	}
	if msg := helmTemplateFails(t, "flinkmaint", "--set", "serviceAccount.create=false"); !strings.Contains(msg, "serviceAccount.name") {
		t.Errorf("serviceAccount.create=false without a name: helm's message does not name serviceAccount.name:\n%s", msg)
	}
}

func writeValues(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// deploymentOf is the one Deployment rendered, typed.
func deploymentOf(t *testing.T, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d Deployments rendered, want one", len(found))
	}
	var dep appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(found[0].Object, &dep); err != nil {
		t.Fatal(err)
	}
	if len(dep.Spec.Template.Spec.Containers) == 0 {
		t.Fatal("the Deployment has no container")
	}
	return &dep
}

func envValue(env []corev1.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func hasVolume(vols []corev1.Volume, name string) bool {
	for _, v := range vols {
		if v.Name == name {
			return true
		}
	}
	return false
}

func hasMount(mounts []corev1.VolumeMount, name, path string) bool {
	for _, m := range mounts {
		if m.Name == name && m.MountPath == path {
			return true
		}
	}
	return false
}

// The worker's pod carries worker.yaml's Temporal connection and task
// queue in the environment the flinkmaint CLI reads, so `kubectl exec ...
// flinkmaint status` and the helm test's doctor need no flags: read back
// through temporalconn, the CLI's own reader, the env gives what
// worker.yaml says, TLS files included, and nothing when TLS is off.
func TestChartPodEnvGivesTheCLIWorkerYAMLsConnection(t *testing.T) {
	sets := chartValueSets(t)
	sets["TLS from config alone"] = []string{"-f", writeValues(t, `
config:
  temporal:
    address: temporal.example.com:7233
    namespace: staging
    uiURL: https://temporal-ui.example.com
    tls: {enabled: true, serverName: frontend.temporal.example.com}
  worker: {taskQueue: flinkmaint-staging}
`)}
	for name, args := range sets {
		t.Run(name, func(t *testing.T) {
			objs := helmTemplate(t, "flinkmaint", args...)
			if findObject(objs, "Deployment", "flinkmaint-worker") == nil {
				return // rbac.only: no worker here
			}
			dep := deploymentOf(t, objs)
			var file struct {
				Temporal temporalconn.Options `yaml:"temporal"`
				Worker   struct {
					TaskQueue string `yaml:"taskQueue"`
				} `yaml:"worker"`
			}
			cm := findObject(objs, "ConfigMap", "flinkmaint-worker")
			if cm == nil {
				t.Fatal("no ConfigMap flinkmaint-worker")
			}
			body, _, _ := unstructured.NestedString(cm.Object, "data", "worker.yaml")
			if err := yaml.Unmarshal([]byte(body), &file); err != nil {
				t.Fatalf("worker.yaml: %v", err)
			}
			env := map[string]string{}
			for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
				if e.ValueFrom == nil {
					env[e.Name] = e.Value
				}
			}
			var got temporalconn.Options
			if err := got.ApplyEnv(func(k string) string { return env[k] }); err != nil {
				t.Fatal(err)
			}
			want := file.Temporal
			want.APIKey = "" // from a Secret, never in worker.yaml
			if got != want {
				t.Errorf("the CLI reads from the pod's env %+v; worker.yaml says %+v", got, want)
			}
			if env[config.EnvTaskQueue] != file.Worker.TaskQueue {
				t.Errorf("%s=%q, worker.yaml's worker.taskQueue %q", config.EnvTaskQueue, env[config.EnvTaskQueue], file.Worker.TaskQueue)
			}
			for short, path := range map[string]string{"TEMPORAL_TLS_CERT": want.TLS.CertFile, "TEMPORAL_TLS_KEY": want.TLS.KeyFile, "TEMPORAL_TLS_CA": want.TLS.CAFile} {
				if env[short] != path {
					t.Errorf("%s=%q, want %q", short, env[short], path)
				}
			}
		})
	}
}

// The chart's roles per rbac.profile, against what the worker calls
// (kube.TenantPermissions, kube.ListNamespaces): profile full grants
// exactly those, the restore role the optional ones, as deploy/kustomize/rbac
// does; profile windows grants no delete verb at all, nor the patch that
// only precedes a snapshot's deletion, and no restore role.
func TestChartRBACProfiles(t *testing.T) {
	const restoreSelector = "config.inventory.kubernetes.namespaceSelector=flinkmaint.io/tenant=true"
	var tenant, restore []string
	for _, p := range kube.TenantPermissions {
		if p.Optional {
			restore = append(restore, p.String())
		} else {
			tenant = append(tenant, p.String())
		}
	}
	full := helmTemplate(t, "flinkmaint", "--set", restoreSelector)
	kustomized := render(t, repoRoot(t), "kustomize", "build", filepath.Join(repoRoot(t), "deploy", "kustomize", "rbac"))
	for role, want := range map[string][]string{
		"flinkmaint-worker-tenant":     tenant,
		"flinkmaint-worker-restore":    restore,
		"flinkmaint-worker-namespaces": {kube.ListNamespaces.String()},
	} {
		if got := grants(t, full, "ClusterRole", role); !equalSets(got, want) {
			t.Errorf("profile full: ClusterRole %s grants %v; the worker calls %v", role, got, want)
		}
		if got := grants(t, kustomized, "ClusterRole", role); !equalSets(got, want) {
			t.Errorf("deploy/kustomize/rbac: ClusterRole %s grants %v; the chart and the worker %v", role, got, want)
		}
	}

	windows := helmTemplate(t, "flinkmaint", "--set", "rbac.profile=windows", "--set", restoreSelector,
		"--set", "rbac.tenantNamespaces={team-a}")
	var wantWindows []string
	for _, p := range kube.TenantPermissions {
		if !p.Deletes {
			wantWindows = append(wantWindows, p.String())
		} else if p.Verb != "delete" && p.Verb != "create" && p.Verb != "patch" {
			t.Errorf("kube.TenantPermissions marks %s as governance's deletes", p)
		}
	}
	// The worker knows its profile: doctor then asks for no delete verb,
	// and governance keeps what it may not delete.
	windowsConfig := renderedWorkerConfig(t, windows)
	if windowsConfig.Inventory.Kubernetes == nil || !windowsConfig.Inventory.Kubernetes.ReadOnly() {
		t.Errorf("profile windows: the worker config does not say rbacProfile windows: %+v", windowsConfig.Inventory.Kubernetes)
	}
	if fullConfig := renderedWorkerConfig(t, full); fullConfig.Inventory.Kubernetes == nil || fullConfig.Inventory.Kubernetes.ReadOnly() {
		t.Errorf("profile full: the worker config says %+v", fullConfig.Inventory.Kubernetes)
	}
	if got := grants(t, windows, "ClusterRole", "flinkmaint-worker-tenant"); !equalSets(got, wantWindows) {
		t.Errorf("profile windows: ClusterRole flinkmaint-worker-tenant grants %v; want %v", got, wantWindows)
	}
	for _, o := range windows {
		if o.GetKind() == "ClusterRole" || o.GetKind() == "Role" {
			for _, g := range grants(t, windows, o.GetKind(), o.GetName()) {
				if v, _, _ := strings.Cut(g, " "); v == "delete" || v == "deletecollection" || v == "*" || v == "create" {
					t.Errorf("profile windows: %s grants %s", objectKey(o), g)
				}
			}
		}
	}
	if findObject(windows, "ClusterRole", "flinkmaint-worker-restore") != nil {
		t.Error("profile windows renders the restore role")
	}
	// Without Helm, the component deploy/kustomize/rbac/windows grants the same.
	kustomizedWindows := render(t, repoRoot(t), "kustomize", "build", overlay(t, "resources: [%s/rbac]\ncomponents: [%s/rbac/windows]\n"))
	if got := grants(t, kustomizedWindows, "ClusterRole", "flinkmaint-worker-tenant"); !equalSets(got, wantWindows) {
		t.Errorf("deploy/kustomize/rbac/windows: ClusterRole flinkmaint-worker-tenant grants %v; want %v", got, wantWindows)
	}
	if findObject(kustomizedWindows, "ClusterRole", "flinkmaint-worker-restore") != nil {
		t.Error("deploy/kustomize/rbac/windows keeps the restore role")
	}
	if msg := helmTemplateFails(t, "flinkmaint", "--set", "rbac.profile=windows", "--set", "rbac.restoreNamespaces={team-a}"); !strings.Contains(msg, "rbac.restoreNamespaces") || !strings.Contains(msg, "windows") {
		t.Errorf("profile windows with rbac.restoreNamespaces: helm's message does not name them:\n%s", msg)
	}
	if msg := helmTemplateFails(t, "flinkmaint", "--set", "rbac.profile=readonly"); !strings.Contains(msg, "profile") || !strings.Contains(msg, "windows") {
		t.Errorf("rbac.profile=readonly: helm's message does not name the value and the profiles:\n%s", msg)
	}
}

// The tenant RoleBindings come from the list the worker's inventory reads
// (config.inventory.kubernetes.namespaces and tenants[].namespace), plus
// rbac.tenantNamespaces, each namespace once; listing namespaces
// cluster-wide is granted only when the inventory selects them by label
// (or rbac.namespaceSelector says another cluster's does).
func TestChartBindsTheInventorysNamespaces(t *testing.T) {
	for name, tc := range map[string]struct {
		args       []string
		namespaces []string
		lists      bool
	}{
		"default values": {},
		"the inventory's namespaces and tenants, and rbac.tenantNamespaces": {
			args: []string{"--set", "config.inventory.kubernetes.namespaces={team-a,team-b}",
				"--set", "config.inventory.kubernetes.tenants[0].namespace=team-b", "--set", "config.inventory.kubernetes.tenants[0].root=hdfs://nn/user/app/team-b",
				"--set", "config.inventory.kubernetes.tenants[1].namespace=team-c", "--set", "config.inventory.kubernetes.tenants[1].root=hdfs://nn/user/app/team-c",
				"--set", "rbac.tenantNamespaces={team-d,team-a}"},
			namespaces: []string{"team-a", "team-b", "team-c", "team-d"},
		},
		"a namespace selector": {
			args:       []string{"--set", "config.inventory.kubernetes.namespaceSelector=flinkmaint.io/tenant=true", "--set", "rbac.tenantNamespaces={team-a}"},
			namespaces: []string{"team-a"}, lists: true,
		},
		"rbac.only for a cluster selected by label": {
			args:       []string{"--set", "rbac.only=true", "--set", "rbac.namespaceSelector=true", "--set", "rbac.tenantNamespaces={team-c}"},
			namespaces: []string{"team-c"}, lists: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			objs := helmTemplate(t, "flinkmaint", tc.args...)
			var bound []string
			for _, o := range objs {
				if ref, _, _ := unstructured.NestedString(o.Object, "roleRef", "name"); o.GetKind() == "RoleBinding" && ref == "flinkmaint-worker-tenant" {
					bound = append(bound, o.GetNamespace())
				}
			}
			sort.Strings(bound)
			if strings.Join(bound, ",") != strings.Join(tc.namespaces, ",") {
				t.Errorf("the tenant role is bound in %v; want %v", bound, tc.namespaces)
			}
			lists := findObject(objs, "ClusterRole", "flinkmaint-worker-namespaces") != nil && findObject(objs, "ClusterRoleBinding", "flinkmaint-worker-namespaces") != nil
			if lists != tc.lists {
				t.Errorf("listing namespaces cluster-wide granted: %t; want %t", lists, tc.lists)
			}
		})
	}
}

// overlay writes a kustomization in a temporary directory, its body's %s
// each the path of deploy/kustomize relative to it (kustomize takes no
// absolute paths), and returns the directory.
func overlay(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, filepath.Join(repoRoot(t), "deploy", "kustomize"))
	if err != nil {
		t.Fatal(err)
	}
	body = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" + strings.ReplaceAll(body, "%s", rel)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// grants lists what a role of the rendering grants, one "verb
// resource[.group]" per verb and resource, as kube.Permission prints it.
func grants(t *testing.T, objs []*unstructured.Unstructured, kind, name string) []string {
	t.Helper()
	o := findObject(objs, kind, name)
	if o == nil {
		t.Fatalf("no %s %s rendered", kind, name)
	}
	var role rbacv1.ClusterRole
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, kube.Permission{Group: g, Resource: res, Verb: v}.String())
				}
			}
		}
	}
	return out
}

func equalSets(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b)) && len(a) == len(b)
}

// helm install prints the next commands for this release: the doctor
// (helm test and in a worker pod), the inventory a window would act on,
// a governance plan, and where the docs are; and says what is still
// missing for the values given.
func TestChartNotesSayWhatToRunNext(t *testing.T) {
	notes := helmNotes(t, "flinkmaint-staging", "--set", "monitoring.runbookBaseURL=https://docs.example.com/flinkmaint/")
	for _, want := range []string{
		"helm test flinkmaint-staging -n " + chartNamespace,
		"kubectl -n " + chartNamespace + " exec deploy/flinkmaint-staging-worker -- flinkmaint doctor",
		"exec deploy/flinkmaint-staging-worker -- flinkmaint inventory\n",
		"exec -i deploy/flinkmaint-staging-worker -- flinkmaint window plan -f /dev/stdin < window.yaml",
		"exec deploy/flinkmaint-staging-worker -- flinkmaint governance plan --tenant",
		"https://docs.example.com/flinkmaint/docs/install.md",
		"temporal-frontend.temporal.svc:7233",
		"no storage.writableRoots or no inventory",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES lack %q:\n%s", want, notes)
		}
	}
	// Every docs page the notes name exists.
	for _, page := range []string{"install.md", "first-window.md", "governance.md", "on-call.md"} {
		if !strings.Contains(notes, "/docs/"+page) {
			t.Errorf("NOTES do not name docs/%s", page)
		}
		if _, err := os.Stat(filepath.Join(repoRoot(t), "docs", page)); err != nil {
			t.Errorf("NOTES name docs/%s: %v", page, err)
		}
	}

	configured := helmNotes(t, "flinkmaint", "-f", filepath.Join(chartPath(t), "ci", "secure-values.yaml"))
	if strings.Contains(configured, "NOTE:") {
		t.Errorf("NOTES for a complete configuration warn:\n%s", configured)
	}
	selector := helmNotes(t, "flinkmaint", "-f", filepath.Join(chartPath(t), "ci", "secure-values.yaml"),
		"--set", "config.inventory.kubernetes.namespaces=null", "--set", "config.inventory.kubernetes.namespaceSelector=flinkmaint.io/tenant=true")
	if !strings.Contains(selector, "rbac.tenantNamespaces") {
		t.Errorf("NOTES for a namespace selector without rbac.tenantNamespaces do not say to list them:\n%s", selector)
	}
	windows := helmNotes(t, "flinkmaint", "--set", "rbac.profile=windows")
	if !strings.Contains(windows, "rbac.profile windows grants no delete verb") {
		t.Errorf("NOTES for rbac.profile windows do not say what it cannot do:\n%s", windows)
	}
	rbacOnly := helmNotes(t, "flinkmaint", "-f", filepath.Join(chartPath(t), "ci", "rbac-only-values.yaml"))
	if !strings.Contains(rbacOnly, "bound in: team-c") || strings.Contains(rbacOnly, "helm test") {
		t.Errorf("NOTES of an rbac.only install: want the namespaces bound and no worker commands:\n%s", rbacOnly)
	}
}

// helmNotes is what `helm install` prints after NOTES: for the release,
// rendered without a cluster (--dry-run=client).
func helmNotes(t *testing.T, release string, args ...string) string {
	t.Helper()
	args = append([]string{"install", release, chartPath(t), "--namespace", chartNamespace, "--dry-run=client"}, args...)
	stdout, stderr, err := runTool(t, repoRoot(t), "helm", args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	_, notes, ok := strings.Cut(stdout, "\nNOTES:\n")
	if !ok {
		t.Fatalf("helm %s printed no NOTES:\n%s", strings.Join(args, " "), stdout)
	}
	return notes
}

// `helm test` runs `flinkmaint doctor` in the worker's image with the
// worker container's environment (the Temporal connection, the API key
// Secret, extraEnv, envFrom) and its mounts, as a test hook pod that no
// selector of the release picks up and that has no API token.
func TestChartTestHookRunsTheDoctorAsTheWorkerWould(t *testing.T) {
	values := writeValues(t, `
extraEnv: [{name: HTTPS_PROXY, value: "http://proxy.example.com:3128"}]
envFrom: [{secretRef: {name: flinkmaint-env}}]
`)
	for name, args := range map[string][]string{
		"ci/secure-values.yaml": {"-f", filepath.Join(chartPath(t), "ci", "secure-values.yaml"), "-f", values},
		"default values":        nil,
	} {
		t.Run(name, func(t *testing.T) {
			objs := helmTemplate(t, "flinkmaint", args...)
			dep := deploymentOf(t, objs)
			o := findObject(objs, "Pod", "flinkmaint-worker-doctor")
			if o == nil {
				t.Fatal("no test pod flinkmaint-worker-doctor rendered")
			}
			if hook := o.GetAnnotations()["helm.sh/hook"]; hook != "test" {
				t.Errorf("helm.sh/hook %q: want test", hook)
			}
			var pod corev1.Pod
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &pod); err != nil {
				t.Fatal(err)
			}
			worker, doctor := dep.Spec.Template.Spec.Containers[0], pod.Spec.Containers[0]
			if doctor.Image != worker.Image || strings.Join(doctor.Command, " ") != "/usr/local/bin/flinkmaint doctor" {
				t.Errorf("test pod runs %v in %s; want /usr/local/bin/flinkmaint doctor in the worker's image %s", doctor.Command, doctor.Image, worker.Image)
			}
			var workerEnv []corev1.EnvVar
			for _, e := range worker.Env {
				if e.Name != "GOMEMLIMIT" { // the worker's heap, not the CLI's
					workerEnv = append(workerEnv, e)
				}
			}
			if !reflect.DeepEqual(doctor.Env, workerEnv) || !reflect.DeepEqual(doctor.EnvFrom, worker.EnvFrom) {
				t.Errorf("test pod env %+v envFrom %+v; want the worker's %+v %+v", doctor.Env, doctor.EnvFrom, workerEnv, worker.EnvFrom)
			}
			if !reflect.DeepEqual(doctor.VolumeMounts, worker.VolumeMounts) || !reflect.DeepEqual(pod.Spec.Volumes, dep.Spec.Template.Spec.Volumes) {
				t.Errorf("test pod mounts %v volumes %v; want the worker's %v %v", doctor.VolumeMounts, pod.Spec.Volumes, worker.VolumeMounts, dep.Spec.Template.Spec.Volumes)
			}
			if pod.Spec.RestartPolicy != corev1.RestartPolicyNever || pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
				t.Errorf("test pod restartPolicy %q automountServiceAccountToken %v: want Never and false", pod.Spec.RestartPolicy, pod.Spec.AutomountServiceAccountToken)
			}
			sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
			if err != nil || sel.Matches(labels.Set(pod.Labels)) {
				t.Errorf("the Deployment's selector %v picks the test pod %v (%v): the budget and the Service would too", dep.Spec.Selector, pod.Labels, err)
			}
		})
	}
	for _, o := range helmTemplate(t, "flinkmaint", "-f", filepath.Join(chartPath(t), "ci", "rbac-only-values.yaml")) {
		if o.GetKind() == "Pod" {
			t.Errorf("rbac.only renders %s: there is no worker to test", objectKey(o))
		}
	}
}

// Whatever a release calls its metrics Service, Prometheus gives its
// scrape the job the worker alerts and the dashboard select: the chart's
// ServiceMonitor takes the job from a label of the Service it selects.
func TestChartMetricsJobIsTheAlertsForEveryRelease(t *testing.T) {
	rules, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "monitoring", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(rules), `up{job="`)
	job, _, _ := strings.Cut(rest, `"`)
	if !ok || job == "" {
		t.Fatal(`prometheusrule.yaml selects no up{job="..."}`)
	}
	for _, release := range []string{"flinkmaint", "flinkmaint-staging"} {
		objs := helmTemplate(t, release, "--set", "monitoring.serviceMonitor=true")
		var sm *unstructured.Unstructured
		for _, o := range objs {
			if o.GetKind() == "ServiceMonitor" {
				sm = o
			}
		}
		if sm == nil {
			t.Fatalf("release %s: no ServiceMonitor rendered", release)
		}
		jobLabel, _, _ := unstructured.NestedString(sm.Object, "spec", "jobLabel")
		selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
		var got []string
		for _, o := range objs {
			if o.GetKind() == "Service" && labels.SelectorFromSet(selector).Matches(labels.Set(o.GetLabels())) {
				name := o.GetName() // Prometheus' job without a jobLabel
				if v, ok := o.GetLabels()[jobLabel]; jobLabel != "" && ok {
					name = v
				}
				got = append(got, name)
			}
		}
		if len(got) != 1 || got[0] != job {
			t.Errorf("release %s: the ServiceMonitor scrapes jobs %v; the alerts select job %q", release, got, job)
		}
	}
}

// renderedWorkerConfig loads the worker.yaml of a rendered release, as
// the worker does.
func renderedWorkerConfig(t *testing.T, objs []*unstructured.Unstructured) config.Config {
	t.Helper()
	cm := findObject(objs, "ConfigMap", "flinkmaint-worker")
	if cm == nil {
		t.Fatal("no ConfigMap flinkmaint-worker")
	}
	body, _, _ := unstructured.NestedString(cm.Object, "data", "worker.yaml")
	path := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	if err := cfg.LoadFile(path); err != nil {
		t.Fatalf("rendered worker.yaml does not load: %v", err)
	}
	return cfg
}
