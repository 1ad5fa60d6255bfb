package deploy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/flinkmaint/flinkmaint/internal/config"
)

// The kustomize base deploys the image tag the chart does by default, its
// appVersion: the release `make image` builds.
func TestKustomizeBaseDeploysTheChartsImageTag(t *testing.T) {
	var chart struct {
		AppVersion string `yaml:"appVersion"`
	}
	readYAML(t, "helm/flinkmaint/Chart.yaml", &chart)
	var kust struct {
		Images []struct {
			Name   string `yaml:"name"`
			NewTag string `yaml:"newTag"`
		} `yaml:"images"`
	}
	readYAML(t, "kustomize/base/kustomization.yaml", &kust)
	if chart.AppVersion == "" || len(kust.Images) != 1 || kust.Images[0].Name != "flinkmaint-worker" || kust.Images[0].NewTag != chart.AppVersion {
		t.Fatalf("kustomize base images %+v, chart appVersion %q: want flinkmaint-worker at the chart's appVersion", kust.Images, chart.AppVersion)
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
