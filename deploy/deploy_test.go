package deploy

import (
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/api/resource"

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
