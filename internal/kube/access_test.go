package kube

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	sigsyaml "sigs.k8s.io/yaml"
)

// TestTenantPermissionsAreWhatDeployGrants: the access review checks
// exactly what deploy/kustomize/rbac grants in a tenant namespace, the
// restore role's as optional; a rule added to either side alone fails.
func TestTenantPermissionsAreWhatDeployGrants(t *testing.T) {
	granted := func(file string, optional bool) []string {
		data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "kustomize", "rbac", file))
		if err != nil {
			t.Fatal(err)
		}
		var cr rbacv1.ClusterRole
		if err := sigsyaml.Unmarshal(data, &cr); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var out []string
		for _, r := range cr.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						out = append(out, Permission{Group: g, Resource: res, Verb: v, Optional: optional}.String()+optionalMark(optional))
					}
				}
			}
		}
		return out
	}
	want := append(granted("clusterrole-tenant.yaml", false), granted("clusterrole-restore.yaml", true)...)
	var got []string
	for _, p := range TenantPermissions {
		got = append(got, p.String()+optionalMark(p.Optional))
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("kube.TenantPermissions:\n  %s\ndeploy/kustomize/rbac grants:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	cluster := granted("clusterrole-namespaces.yaml", false)
	if len(cluster) != 1 || cluster[0] != ListNamespaces.String() {
		t.Fatalf("clusterrole-namespaces grants %v; the review checks %s", cluster, ListNamespaces)
	}
}

func optionalMark(optional bool) string {
	if optional {
		return " (optional)"
	}
	return ""
}

// TestCheckAccessReadsRules: a rule limited to resourceNames grants
// nothing; wildcards grant; disableOperator leaves the operator's
// resources out; an incomplete rules list falls back to one access
// review per permission.
func TestCheckAccessReadsRules(t *testing.T) {
	cs := fake.NewSimpleClientset()
	var reviews []string
	cs.PrependReactor("create", "selfsubjectrulesreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ns := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectRulesReview).Spec.Namespace
		st := authorizationv1.SubjectRulesReviewStatus{}
		switch ns {
		case "full":
			st.ResourceRules = []authorizationv1.ResourceRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}
		case "named":
			st.ResourceRules = []authorizationv1.ResourceRule{
				{APIGroups: []string{"", "apps"}, Resources: []string{"deployments", "configmaps", "pods"}, Verbs: []string{"get", "list"}},
				{APIGroups: []string{"", "apps"}, Resources: []string{"deployments", "configmaps"}, Verbs: []string{"delete", "create"}},
				{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"delete"}, ResourceNames: []string{"one"}},
			}
		case "webhook":
			st.Incomplete = true
		}
		return true, &authorizationv1.SelfSubjectRulesReview{Status: st}, nil
	})
	cs.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		attr := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).Spec.ResourceAttributes
		reviews = append(reviews, attr.Namespace+"/"+attr.Verb+"/"+attr.Resource)
		return true, &authorizationv1.SelfSubjectAccessReview{Status: authorizationv1.SubjectAccessReviewStatus{Allowed: attr.Resource != "pods"}}, nil
	})
	c, err := New(cs, nil, Config{Namespaces: []string{"full", "named", "webhook"}, TenantRootTemplate: "/t/{namespace}", DisableOperator: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.CheckAccess(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range res {
		var m []string
		for _, p := range r.Missing {
			m = append(m, p.String())
		}
		got[r.Namespace] = strings.Join(m, ", ")
		if (r.Unknown != "") != (r.Namespace == "webhook") {
			t.Errorf("%s: unknown %q", r.Namespace, r.Unknown)
		}
	}
	// "named" grants deleting one pod by name only: missing.
	want := map[string]string{"full": "", "named": "delete pods", "webhook": "get pods, list pods, delete pods"}
	for ns, w := range want {
		if got[ns] != w {
			t.Errorf("%s: missing %q; want %q", ns, got[ns], w)
		}
	}
	if len(reviews) != 10 { // the ten non-operator permissions, for "webhook" only
		t.Errorf("access reviews %v; want one per permission in the namespace with incomplete rules", reviews)
	}
}
