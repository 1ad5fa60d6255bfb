package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKubeReadEndpointRejectsBadFiles(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"missing":   "",
		"not json":  "{",
		"no pid":    `{"kubeconfig":"/k","host":"https://127.0.0.1:1"}`,
		"no config": `{"host":"https://127.0.0.1:1","pid":1}`,
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
			if content != "" {
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := ReadKubeEndpoint(path)
			if !errors.Is(err, ErrKubeUnavailable) {
				t.Fatalf("ReadKubeEndpoint(%s) = %v, want ErrKubeUnavailable", name, err)
			}
		})
	}
}

func TestKubeNativeFlinkClusterValidate(t *testing.T) {
	ok := NativeFlinkCluster{Namespace: "team-a", ClusterID: "orders", TaskManagers: 1}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid cluster rejected: %v", err)
	}
	cases := map[string]struct {
		mutate    func(*NativeFlinkCluster)
		wantField string
	}{
		"namespace upper case":     {func(c *NativeFlinkCluster) { c.Namespace = "Team" }, "Namespace"},
		"cluster id starts digit":  {func(c *NativeFlinkCluster) { c.ClusterID = "1orders" }, "ClusterID"},
		"cluster id over 45 chars": {func(c *NativeFlinkCluster) { c.ClusterID = "a" + strings.Repeat("b", 45) }, "ClusterID"},
		"negative task managers":   {func(c *NativeFlinkCluster) { c.TaskManagers = -1 }, "TaskManagers"},
		"job id not hex":           {func(c *NativeFlinkCluster) { c.HA = true; c.JobIDs = []string{"not-a-job-id"} }, "JobIDs"},
		"job ids without HA":       {func(c *NativeFlinkCluster) { c.JobIDs = []string{strings.Repeat("a", 32)} }, "JobIDs"},
		"config key with colon":    {func(c *NativeFlinkCluster) { c.FlinkConfig = map[string]string{"a:b": "c"} }, "FlinkConfig"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := ok
			tc.mutate(&c)
			err := c.Validate()
			var inErr *KubeInputError
			if !errors.As(err, &inErr) || !errors.Is(err, ErrInvalidKubeInput) {
				t.Fatalf("Validate() = %v, want a KubeInputError", err)
			}
			if inErr.Field != tc.wantField {
				t.Errorf("field %q, want %q (error: %v)", inErr.Field, tc.wantField, err)
			}
		})
	}
}
