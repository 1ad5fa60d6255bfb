package deploy

import (
	"os"
	"testing"

	"gopkg.in/yaml.v3"
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
