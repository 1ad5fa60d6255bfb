package sandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestPeersArgumentErrors(t *testing.T) {
	t.Parallel()
	p := &Peers{HDFS: HDFSEndpoint{URI: "hdfs://127.0.0.1:1", NameNode: "127.0.0.1:1", User: "flink"}, JavaClasspathFile: "/nonexistent"}
	ctx := context.Background()
	cases := map[string]struct {
		call func() error
		want string
	}{
		"relative quota path": {func() error { return p.SetNamespaceQuota(ctx, "user/app", 10) }, `"user/app" must be absolute`},
		"zero quota":          {func() error { return p.SetNamespaceQuota(ctx, "/user/app", 0) }, "namespace quota 0"},
		"uri instead of path": {func() error { return p.ClearNamespaceQuota(ctx, "hdfs://x/user") }, "must be absolute"},
		"bad main class": {func() error {
			_, err := p.JavaMain(ctx, "not a class;rm", "x")
			return err
		}, "not a fully qualified Java class name"},
		"empty shell command": {func() error {
			_, err := p.HadoopShell(ctx)
			return err
		}, "needs a command"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("got %v, want ErrInvalidArgument", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}
