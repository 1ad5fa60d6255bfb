package kube

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// Config selects what the Kubernetes inventory covers. One tenant per
// namespace; each tenant's HDFS root comes from Tenants or, failing that,
// from TenantRootTemplate.
//
//	namespaces: [team-a, team-b]          # or
//	namespaceSelector: flinkmaint.io/managed=true
//	tenants:
//	  - namespace: team-a
//	    name: a-team                      # defaults to the namespace
//	    root: hdfs://nn:8020/user/app/team-a
//	tenantRootTemplate: hdfs://nn:8020/user/app/{namespace}
//	restOverrides:
//	  team-a/orders: http://orders-rest.example:8081
//	restSecurity:                         # overrides the worker's flink.rest
//	  team-a/payments:
//	    tls: {caFile: /etc/flinkmaint/payments/ca.crt}
//	staticFile: /etc/flinkmaint/static-inventory.yaml
type Config struct {
	// Name labels everything this client discovers (tenants, clusters,
	// object references) with its Kubernetes cluster when the inventory
	// spans several; set from inventory.kubernetesClusters[].name.
	Name string `yaml:"-"`
	// Namespaces lists the tenant namespaces. Exclusive with NamespaceSelector.
	Namespaces []string `yaml:"namespaces,omitempty"`
	// NamespaceSelector is a label selector over namespaces; it needs the
	// cluster-scope namespaces list permission (deploy/kustomize/rbac).
	NamespaceSelector string `yaml:"namespaceSelector,omitempty"`
	// Tenants maps namespaces to tenant names and HDFS roots.
	Tenants []TenantMapping `yaml:"tenants,omitempty"`
	// TenantRootTemplate is the root of namespaces without a mapping;
	// "{namespace}" is replaced by the namespace name.
	TenantRootTemplate string `yaml:"tenantRootTemplate,omitempty"`
	// RESTOverrides replaces the in-cluster REST URL of a cluster, keyed
	// "<namespace>/<cluster-id>".
	RESTOverrides map[string]string `yaml:"restOverrides,omitempty"`
	// RESTSecurity is how the worker reaches a cluster's REST endpoint,
	// keyed "<namespace>/<cluster-id>": each entry takes the keys of
	// flink.rest (tls, basicAuth, tokenFile, headers) and overrides it key
	// by key. The scheme, http or https, comes from the cluster's
	// security.ssl.rest.enabled.
	RESTSecurity map[string]inventory.RESTSecurity `yaml:"restSecurity,omitempty"`
	// StaticFile is a static inventory file (inventory.LoadStatic) merged
	// into the result; optional.
	StaticFile string `yaml:"staticFile,omitempty"`
	// DisableOperator skips FlinkDeployment/FlinkSessionJob discovery, for
	// clusters without the Flink Kubernetes Operator CRDs.
	DisableOperator bool `yaml:"disableOperator,omitempty"`
	// RBACProfile is what the worker is granted in the tenant namespaces,
	// as the chart's rbac.profile: full (default) or windows, which grants
	// no delete verb. With windows, doctor checks only what windows and
	// upgrades use, and governance plans keep what it would have to
	// delete in Kubernetes (reason kubernetes-read-only).
	RBACProfile string `yaml:"rbacProfile,omitempty"`
}

// RBAC profiles (Config.RBACProfile).
const (
	RBACProfileFull    = "full"
	RBACProfileWindows = "windows"
)

// ReadOnly tells whether the profile grants no delete verb.
func (c Config) ReadOnly() bool { return c.RBACProfile == RBACProfileWindows }

// TenantMapping is one tenant namespace.
type TenantMapping struct {
	// Namespace is the Kubernetes namespace of the tenant's Flink clusters.
	Namespace string `yaml:"namespace"`
	// Name is the tenant's name; empty: the namespace's.
	Name string `yaml:"name,omitempty"`
	// Root is the tenant's HDFS root (its checkpoints, savepoints and HA
	// data lie under it).
	Root string `yaml:"root"`
}

// ConfigError names the config field, its value and what is valid.
type ConfigError struct {
	Field string
	Value string
	Valid string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("kube: invalid config %s %q: %s", e.Field, e.Value, e.Valid)
}

// Is makes errors.Is(err, ErrInvalidInput) hold.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidInput }

const namespacePlaceholder = "{namespace}"

// Validate reports every problem at once; each error names the field, the
// value and what would be valid.
func (c Config) Validate() error {
	var errs []error
	add := func(field, value, valid string) {
		errs = append(errs, &ConfigError{Field: field, Value: value, Valid: valid})
	}
	if c.Name != "" && len(validation.IsDNS1123Label(c.Name)) > 0 {
		add("name", c.Name, "a Kubernetes cluster name of lower-case letters, digits and '-' (DNS-1123 label)")
	}
	if c.RBACProfile != "" && c.RBACProfile != RBACProfileFull && c.RBACProfile != RBACProfileWindows {
		add("rbacProfile", c.RBACProfile, "full (the default: every permission the worker uses) or windows (no delete verb)")
	}
	if len(c.Namespaces) > 0 && c.NamespaceSelector != "" {
		add("namespaceSelector", c.NamespaceSelector, "empty when namespaces is set: use either a namespace list or a selector")
	}
	if len(c.Namespaces) == 0 && c.NamespaceSelector == "" && c.StaticFile == "" {
		add("namespaces", "", "at least one namespace, a namespaceSelector or a staticFile")
	}
	seen := map[string]bool{}
	for i, ns := range c.Namespaces {
		if errs2 := validation.IsDNS1123Label(ns); len(errs2) > 0 {
			add(fmt.Sprintf("namespaces[%d]", i), ns, "a namespace name (DNS-1123 label): "+strings.Join(errs2, "; "))
		} else if seen[ns] {
			add(fmt.Sprintf("namespaces[%d]", i), ns, "a namespace not listed before")
		}
		seen[ns] = true
	}
	if c.NamespaceSelector != "" {
		sel, err := labels.Parse(c.NamespaceSelector)
		if err != nil {
			add("namespaceSelector", c.NamespaceSelector, "a label selector such as flinkmaint.io/managed=true: "+err.Error())
		} else if sel.Empty() {
			add("namespaceSelector", c.NamespaceSelector, "a non-empty label selector (an empty one selects every namespace)")
		}
	}
	mapped := map[string]bool{}
	names := map[string]string{}
	for i, t := range c.Tenants {
		field := fmt.Sprintf("tenants[%d]", i)
		if errs2 := validation.IsDNS1123Label(t.Namespace); len(errs2) > 0 {
			add(field+".namespace", t.Namespace, "a namespace name (DNS-1123 label)")
		} else if mapped[t.Namespace] {
			add(field+".namespace", t.Namespace, "a namespace not mapped before")
		}
		mapped[t.Namespace] = true
		name := t.TenantName()
		if err := inventory.ValidateName(field+".name", name); err != nil {
			add(field+".name", name, "1-253 letters, digits, '.', '_' or '-'")
		} else if prev, ok := names[name]; ok {
			add(field+".name", name, "a tenant name not used by namespace "+prev+": one tenant per namespace")
		}
		names[name] = t.Namespace
		if err := inventory.ValidateStorageURI(field+".root", t.Root, true); err != nil {
			add(field+".root", t.Root, "an HDFS root such as hdfs://nn:8020/user/app/team-a or an absolute path")
		}
	}
	if c.TenantRootTemplate != "" {
		probe := strings.ReplaceAll(c.TenantRootTemplate, namespacePlaceholder, "ns")
		if !strings.Contains(c.TenantRootTemplate, namespacePlaceholder) {
			add("tenantRootTemplate", c.TenantRootTemplate, "a root containing {namespace}, such as hdfs://nn:8020/user/app/{namespace}")
		} else if err := inventory.ValidateStorageURI("tenantRootTemplate", probe, true); err != nil {
			add("tenantRootTemplate", c.TenantRootTemplate, "a URI or absolute path with {namespace}, such as hdfs://nn:8020/user/app/{namespace}")
		}
	}
	if len(c.Namespaces) > 0 && c.TenantRootTemplate == "" {
		for i, ns := range c.Namespaces {
			if !mapped[ns] {
				add(fmt.Sprintf("namespaces[%d]", i), ns, "a namespace with a tenants entry giving its root, or set tenantRootTemplate")
			}
		}
	}
	if c.NamespaceSelector != "" && c.TenantRootTemplate == "" && len(c.Tenants) == 0 {
		add("tenantRootTemplate", "", "a root template with {namespace} (or tenants entries) so selected namespaces get an HDFS root")
	}
	overrideKeys := make([]string, 0, len(c.RESTOverrides))
	for k := range c.RESTOverrides {
		overrideKeys = append(overrideKeys, k)
	}
	sort.Strings(overrideKeys)
	for _, k := range overrideKeys {
		if !isClusterKey(k) {
			add("restOverrides", k, "a key <namespace>/<cluster-id>, such as team-a/orders")
			continue
		}
		if err := inventory.ValidateRESTURL("restOverrides["+k+"]", c.RESTOverrides[k]); err != nil {
			add("restOverrides["+k+"]", c.RESTOverrides[k], "an http:// or https:// URL with a host")
		}
	}
	for _, k := range sortedKeys(c.RESTSecurity) {
		if !isClusterKey(k) {
			add("restSecurity", k, "a key <namespace>/<cluster-id>, such as team-a/orders")
			continue
		}
		for _, err := range c.RESTSecurity[k].Validate("restSecurity[" + k + "]") {
			var fe *inventory.FieldError
			if errors.As(err, &fe) {
				add(fe.Field, fe.Value, fe.Valid)
			}
		}
	}
	return errors.Join(errs...)
}

// TenantName is Name, or the namespace when Name is empty.
func (t TenantMapping) TenantName() string {
	if t.Name != "" {
		return t.Name
	}
	return t.Namespace
}

// tenantFor maps a namespace to its tenant.
func (c Config) tenantFor(ns string) (inventory.Tenant, error) {
	for _, t := range c.Tenants {
		if t.Namespace == ns {
			return inventory.Tenant{Name: t.TenantName(), Namespace: ns, Root: t.Root, KubeCluster: c.Name}, nil
		}
	}
	if c.TenantRootTemplate != "" {
		return inventory.Tenant{Name: ns, Namespace: ns, Root: strings.ReplaceAll(c.TenantRootTemplate, namespacePlaceholder, ns), KubeCluster: c.Name}, nil
	}
	return inventory.Tenant{}, &ConfigError{Field: "tenants", Value: ns, Valid: "a tenants entry for every selected namespace, or tenantRootTemplate"}
}

// isClusterKey reports whether k is "<namespace>/<cluster-id>".
func isClusterKey(k string) bool {
	ns, id, ok := strings.Cut(k, "/")
	return ok && len(validation.IsDNS1123Label(ns)) == 0 && inventory.ValidateName("", id) == nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
