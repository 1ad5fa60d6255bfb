package kube

import (
	"context"
	"fmt"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Permission is one verb on one resource the worker uses.
type Permission struct {
	Group, Resource, Verb string
	// Operator marks the Flink Kubernetes Operator's resources, not used
	// with disableOperator.
	Operator bool
	// Optional marks what only `governance restore` needs (re-creating
	// the objects a run trashed); without it the rest still works.
	Optional bool
	// Deletes marks what only governance's deletions need: the windows
	// RBAC profile does not grant it.
	Deletes bool
}

func (p Permission) String() string {
	if p.Group == "" {
		return p.Verb + " " + p.Resource
	}
	return p.Verb + " " + p.Resource + "." + p.Group
}

// TenantPermissions are what the worker does in each tenant namespace;
// deploy/kustomize/rbac grants exactly these (a test compares them).
var TenantPermissions = []Permission{
	{Group: "apps", Resource: "deployments", Verb: "get"},
	{Group: "apps", Resource: "deployments", Verb: "list"},
	{Group: "apps", Resource: "deployments", Verb: "delete", Deletes: true},
	{Resource: "pods", Verb: "get"},
	{Resource: "pods", Verb: "list"},
	{Resource: "pods", Verb: "delete", Deletes: true},
	{Resource: "configmaps", Verb: "get"},
	{Resource: "configmaps", Verb: "list"},
	{Resource: "configmaps", Verb: "delete", Deletes: true},
	{Resource: "configmaps", Verb: "create", Optional: true, Deletes: true},
	{Group: "flink.apache.org", Resource: "flinkdeployments", Verb: "get", Operator: true},
	{Group: "flink.apache.org", Resource: "flinkdeployments", Verb: "list", Operator: true},
	{Group: "flink.apache.org", Resource: "flinkdeployments", Verb: "update", Operator: true},
	{Group: "flink.apache.org", Resource: "flinksessionjobs", Verb: "get", Operator: true},
	{Group: "flink.apache.org", Resource: "flinksessionjobs", Verb: "list", Operator: true},
	{Group: "flink.apache.org", Resource: "flinksessionjobs", Verb: "update", Operator: true},
	{Group: "flink.apache.org", Resource: "flinkstatesnapshots", Verb: "get", Operator: true},
	{Group: "flink.apache.org", Resource: "flinkstatesnapshots", Verb: "list", Operator: true},
	{Group: "flink.apache.org", Resource: "flinkstatesnapshots", Verb: "patch", Operator: true, Deletes: true},
	{Group: "flink.apache.org", Resource: "flinkstatesnapshots", Verb: "delete", Operator: true, Deletes: true},
	{Group: "flink.apache.org", Resource: "flinkstatesnapshots", Verb: "create", Operator: true, Optional: true, Deletes: true},
}

// ListNamespaces is the one cluster-wide permission, needed only with a
// namespace selector.
var ListNamespaces = Permission{Resource: "namespaces", Verb: "list"}

// AccessResult is the answer for one namespace: the permissions the
// worker lacks there ("" namespace: cluster-wide).
type AccessResult struct {
	Namespace string
	Missing   []Permission
	// Unknown is set when the API server could not list the rules (an
	// authorizer that does not enumerate them); the namespace is then
	// checked permission by permission.
	Unknown string
}

// CheckAccess asks the API server, as the worker's own identity, which
// of the permissions it needs it lacks in every namespace in scope: one
// SelfSubjectRulesReview per namespace, or one SelfSubjectAccessReview
// per permission where the rules cannot be listed completely. A namespace
// that is added to the selector later is checked the next time.
func (c *Client) CheckAccess(ctx context.Context) ([]AccessResult, error) {
	var out []AccessResult
	if c.cfg.NamespaceSelector != "" {
		r, err := c.accessIn(ctx, "", []Permission{ListNamespaces})
		if err != nil {
			return nil, err
		}
		out = append(out, r)
		if len(r.Missing) > 0 {
			return out, nil
		}
	}
	namespaces, err := c.Namespaces(ctx)
	if err != nil {
		return out, err
	}
	var need []Permission
	for _, p := range TenantPermissions {
		if (!p.Operator || !c.cfg.DisableOperator) && (!p.Deletes || !c.cfg.ReadOnly()) {
			need = append(need, p)
		}
	}
	for _, ns := range namespaces {
		r, err := c.accessIn(ctx, ns, need)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (c *Client) accessIn(ctx context.Context, ns string, need []Permission) (AccessResult, error) {
	res := AccessResult{Namespace: ns}
	if ns != "" {
		rr, err := c.kube.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
			Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
		if err != nil {
			return res, newError("review", "access rules in namespace "+ns, err)
		}
		if !rr.Status.Incomplete && rr.Status.EvaluationError == "" {
			for _, p := range need {
				if !rulesAllow(rr.Status.ResourceRules, p) {
					res.Missing = append(res.Missing, p)
				}
			}
			return res, nil
		}
		res.Unknown = fmt.Sprintf("the rules list is incomplete (%s)", rr.Status.EvaluationError)
	}
	for _, p := range need {
		ar, err := c.kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: p.Verb, Group: p.Group, Resource: p.Resource}}}, metav1.CreateOptions{})
		if err != nil {
			return res, newError("review", p.String()+" in namespace "+ns, err)
		}
		if !ar.Status.Allowed {
			res.Missing = append(res.Missing, p)
		}
	}
	return res, nil
}

// rulesAllow matches p against resource rules the way RBAC does: a rule
// naming specific resourceNames does not grant the verb on every object.
func rulesAllow(rules []authorizationv1.ResourceRule, p Permission) bool {
	for _, r := range rules {
		if len(r.ResourceNames) > 0 {
			continue
		}
		if matches(r.APIGroups, p.Group) && matches(r.Resources, p.Resource) && matches(r.Verbs, p.Verb) {
			return true
		}
	}
	return false
}

func matches(list []string, v string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, v)
}
