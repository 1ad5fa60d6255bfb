//go:build realpeers

package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// TestFlinkOperatorCRDsFromMaven: a clone without ../shared takes the
// operator's CRDs from its API jar on Maven Central. Each is a single
// CustomResourceDefinition of the flink.apache.org group serving v1beta1,
// the version inventory and governance read.
func TestFlinkOperatorCRDsFromMaven(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir, err := MavenFlinkOperatorCRDDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range fkoCRDNames {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := sigsyaml.UnmarshalStrict(data, &crd); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		served := false
		for _, v := range crd.Spec.Versions {
			served = served || v.Name == "v1beta1" && v.Served && v.Schema != nil
		}
		if crd.Kind != "CustomResourceDefinition" || crd.Spec.Group != "flink.apache.org" || crd.Name+"-v1.yml" != n || !served {
			t.Fatalf("%s: kind %q group %q name %q, v1beta1 served with a schema %v", n, crd.Kind, crd.Spec.Group, crd.Name, served)
		}
	}
	again, err := MavenFlinkOperatorCRDDir(ctx)
	if err != nil || again != dir {
		t.Fatalf("second call: %s, %v; want %s from the first", again, err, dir)
	}
}
