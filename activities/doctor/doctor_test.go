package doctor

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/flinkmaint/flinkmaint/activities/core"
)

type fakeAccess struct {
	gaps []core.AccessGap
	err  error
}

func (f fakeAccess) CheckAccess(context.Context) ([]core.AccessGap, error) { return f.gaps, f.err }

type fakeHealth struct{ err error }

func (f fakeHealth) Ready(context.Context) error { return f.err }

// TestDoctorKubernetesSaysWhatIsMissingWhere: a permission runs need is
// a failure naming cluster, namespace and verb; one only governance
// restore needs is a note on an ok check; an API server that is not
// ready stops the review.
func TestDoctorKubernetesSaysWhatIsMissingWhere(t *testing.T) {
	ctx := context.Background()
	only := func(checks []DoctorCheck, name string) DoctorCheck {
		t.Helper()
		for _, c := range checks {
			if c.Check == name {
				return c
			}
		}
		t.Fatalf("no %q check in %+v", name, checks)
		return DoctorCheck{}
	}
	a := &Activities{Kubernetes: fakeHealth{}, KubeAccess: fakeAccess{gaps: []core.AccessGap{
		{KubeCluster: "east", Namespace: ""},
		{KubeCluster: "east", Namespace: "team-a", MissingOptional: []string{"create configmaps"}},
		{KubeCluster: "east", Namespace: "team-b", Missing: []string{"list pods", "update flinkdeployments.flink.apache.org"}},
	}}}
	c := only(a.doctorKubernetes(ctx), "kubernetes access")
	if c.Result != CheckFail || c.Detail != "missing: east/team-b: list pods, update flinkdeployments.flink.apache.org" || !strings.Contains(c.Fix, "deploy/kustomize/rbac/tenant") {
		t.Errorf("a missing permission: %+v", c)
	}

	a.KubeAccess = fakeAccess{gaps: []core.AccessGap{{Namespace: "team-a", MissingOptional: []string{"create configmaps"}}, {Namespace: "team-b", Unknown: "webhook"}}}
	c = only(a.doctorKubernetes(ctx), "kubernetes access")
	if c.Result != CheckOK || !strings.Contains(c.Detail, "in 2 namespaces") || !strings.Contains(c.Detail, "governance restore cannot re-create trashed objects in team-a") ||
		!strings.Contains(c.Detail, "asked one by one where the rules cannot be listed: team-b") {
		t.Errorf("only restore's permission missing: %+v", c)
	}

	a.KubeAccess = fakeAccess{gaps: []core.AccessGap{{Namespace: "team-a", ReadOnly: true}}}
	c = only(a.doctorKubernetes(ctx), "kubernetes access")
	if c.Result != CheckOK || !strings.Contains(c.Detail, "rbacProfile windows (no delete verb) in team-a") || !strings.Contains(c.Detail, "kubernetes-read-only") {
		t.Errorf("profile windows: %+v", c)
	}

	a.KubeAccess = fakeAccess{err: errors.New("the server is on fire")}
	if c := only(a.doctorKubernetes(ctx), "kubernetes access"); c.Result != CheckFail || c.Detail != "the server is on fire" {
		t.Errorf("a failed review: %+v", c)
	}

	a.Kubernetes = fakeHealth{err: errors.New("readyz: 503")}
	checks := a.doctorKubernetes(ctx)
	if len(checks) != 1 || checks[0].Check != "kubernetes" || checks[0].Result != CheckFail {
		t.Errorf("an API server not ready: %+v; want only that failure", checks)
	}
}
