package config

import (
	"os"
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestDeployConfigMapParses keeps the shipped worker.yaml in step with the
// config schema: an unknown or mistyped key there would stop every pod.
func TestDeployConfigMapParses(t *testing.T) {
	data, err := os.ReadFile("../../deploy/kustomize/base/configmap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `yaml:"data"`
	}
	if err := yaml.Unmarshal(data, &cm); err != nil {
		t.Fatal(err)
	}
	body, ok := cm.Data["worker.yaml"]
	if !ok {
		t.Fatal("configmap has no worker.yaml")
	}
	path := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Default()
	if err := cfg.LoadFile(path); err != nil {
		t.Fatalf("shipped worker.yaml does not load: %v", err)
	}
	if cfg.Temporal.Namespace != "flinkmaint" || !cfg.Temporal.TLS.Enabled {
		t.Fatalf("unexpected shipped config: %+v", cfg.Temporal)
	}
	if cfg.Inventory.Kubernetes == nil {
		t.Fatal("shipped config has no Kubernetes inventory")
	}
	if err := cfg.Inventory.Kubernetes.Validate(); err != nil {
		t.Fatalf("shipped inventory.kubernetes: %v", err)
	}
}
