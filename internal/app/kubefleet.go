package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/kube"
)

// KubeFleet is the Kubernetes side of the inventory over one or more
// Kubernetes clusters. Each client discovers its own namespaces and labels
// what it finds with its name; a call about an object goes to the client
// of the object's kubeCluster, a call about namespaces to the clients
// that own them (inventory.NamespaceKey).
type KubeFleet struct {
	clients []*kube.Client
	health  []kubernetes.Interface
	// static is the static inventory file merged into the result once.
	static string
}

// NewKubeFleet groups clients with distinct names; staticFile, if set, is
// merged into what they discover.
func NewKubeFleet(staticFile string, clients ...*kube.Client) (*KubeFleet, error) {
	seen := map[string]bool{}
	for _, c := range clients {
		if seen[c.Name()] {
			return nil, &kube.ConfigError{Field: "kubernetes cluster name", Value: c.Name(), Valid: "a name used by one Kubernetes cluster only"}
		}
		seen[c.Name()] = true
	}
	if len(clients) > 1 && seen[""] {
		return nil, &kube.ConfigError{Field: "kubernetes cluster name", Value: "", Valid: "a name for every cluster when there are several"}
	}
	return &KubeFleet{clients: clients, static: staticFile}, nil
}

// newKubeFleet connects to every configured Kubernetes cluster.
func newKubeFleet(cfg config.Config) (*KubeFleet, error) {
	type target struct {
		name, kubeconfig, context, field string
		kcfg                             kube.Config
	}
	var targets []target
	if cfg.Inventory.Kubernetes != nil {
		targets = append(targets, target{kubeconfig: cfg.Inventory.Kubeconfig, field: "inventory.kubernetes", kcfg: *cfg.Inventory.Kubernetes})
	}
	for i, kc := range cfg.Inventory.KubernetesClusters {
		targets = append(targets, target{name: kc.Name, kubeconfig: kc.Kubeconfig, context: kc.Context,
			field: fmt.Sprintf("inventory.kubernetesClusters[%d] (%s)", i, kc.Name), kcfg: kc.Kubernetes})
	}
	f := &KubeFleet{static: cfg.Inventory.StaticFile}
	for _, t := range targets {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = t.kubeconfig
		rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: t.context}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("%s: kubeconfig %q context %q: %w", t.field, t.kubeconfig, t.context, err)
		}
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return nil, fmt.Errorf("%s: kubernetes client: %w", t.field, err)
		}
		dyn, err := dynamic.NewForConfig(rc)
		if err != nil {
			return nil, fmt.Errorf("%s: kubernetes dynamic client: %w", t.field, err)
		}
		kcfg := t.kcfg
		kcfg.Name = t.name
		if t.name == "" {
			// The single unnamed cluster merges the static file itself.
			kcfg.StaticFile, f.static = cfg.Inventory.StaticFile, ""
		}
		kc, err := kube.New(cs, dyn, kcfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.field, err)
		}
		f.clients = append(f.clients, kc)
		f.health = append(f.health, cs)
	}
	return f, nil
}

// client is the client of Kubernetes cluster name.
func (f *KubeFleet) client(name string) (*kube.Client, error) {
	var names []string
	for _, c := range f.clients {
		if c.Name() == name {
			return c, nil
		}
		names = append(names, fmt.Sprintf("%q", c.Name()))
	}
	return nil, &kube.ConfigError{Field: "kubeCluster", Value: name, Valid: "a configured Kubernetes cluster: " + strings.Join(names, ", ")}
}

// Discover merges what every cluster discovers, then the static file. A
// tenant name or cluster id found in two Kubernetes clusters is an error:
// scopes, HA dirs and reports are keyed by them.
func (f *KubeFleet) Discover(ctx context.Context) (inventory.Inventory, error) {
	if len(f.clients) == 1 && f.clients[0].Name() == "" {
		return f.clients[0].Discover(ctx)
	}
	var inv inventory.Inventory
	tenantIn := map[string]string{}
	clusterIn := map[string]string{}
	for _, c := range f.clients {
		part, err := c.Discover(ctx)
		if err != nil {
			return inv, fmt.Errorf("kubernetes cluster %s: %w", c.Name(), err)
		}
		for _, t := range part.Tenants {
			if prev, ok := tenantIn[t.Name]; ok {
				return inv, &kube.ConfigError{Field: "tenant", Value: t.Name,
					Valid: fmt.Sprintf("a tenant name found in one Kubernetes cluster only (it is in %s and %s): name them apart with tenants[].name", prev, c.Name())}
			}
			tenantIn[t.Name] = c.Name()
			inv.Tenants = append(inv.Tenants, t)
		}
		for _, cl := range part.Clusters {
			if prev, ok := clusterIn[cl.ClusterID]; ok && prev != c.Name() {
				return inv, &kube.ConfigError{Field: "cluster id", Value: cl.ClusterID,
					Valid: fmt.Sprintf("a Flink cluster id used in one Kubernetes cluster only (it is in %s and %s): HA dirs and scopes are keyed by it", prev, c.Name())}
			}
			clusterIn[cl.ClusterID] = c.Name()
			inv.Clusters = append(inv.Clusters, cl)
		}
	}
	if f.static != "" {
		st, err := inventory.LoadStatic(f.static)
		if err != nil {
			return inv, err
		}
		if err := kube.MergeStatic(&inv, st); err != nil {
			return inv, err
		}
	}
	kube.SortInventory(&inv)
	return inv, nil
}

// byCluster splits namespace keys by Kubernetes cluster, keeping only the
// namespaces each cluster's inventory covers (a namespace only the static
// file names is not a Kubernetes one to search).
func (f *KubeFleet) byCluster(ctx context.Context, keys []string) (map[*kube.Client][]string, error) {
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	out := map[*kube.Client][]string{}
	for _, c := range f.clients {
		covered, err := c.NamespaceKeys(ctx)
		if err != nil {
			return nil, err
		}
		for _, k := range covered {
			if want[k] {
				_, ns := inventory.SplitNamespaceKey(k)
				out[c] = append(out[c], ns)
			}
		}
	}
	return out, nil
}

// KubeHealth asks every Kubernetes API server of the fleet for /readyz.
type KubeHealth struct {
	Fleet *KubeFleet
}

var _ core.KubernetesHealth = KubeHealth{}

// Ready returns nil when every API server reports ready.
func (k KubeHealth) Ready(ctx context.Context) error {
	var errs []error
	for i, cs := range k.Fleet.health {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			where := "kubernetes"
			if n := k.Fleet.clients[i].Name(); n != "" {
				where += " cluster " + n
			}
			errs = append(errs, fmt.Errorf("%s /readyz: %w (%s)", where, err, strings.TrimSpace(string(body))))
		}
	}
	return errors.Join(errs...)
}

// KubeAccess adapts the fleet's clients to activities.KubernetesAccess.
type KubeAccess struct {
	Fleet *KubeFleet
}

var _ core.KubernetesAccess = KubeAccess{}

// CheckAccess reviews the worker's permissions in every Kubernetes
// cluster of the fleet; see kube.Client.CheckAccess.
func (k KubeAccess) CheckAccess(ctx context.Context) ([]core.AccessGap, error) {
	var out []core.AccessGap
	for _, c := range k.Fleet.clients {
		res, err := c.CheckAccess(ctx)
		for _, r := range res {
			g := core.AccessGap{KubeCluster: c.Name(), Namespace: r.Namespace, Unknown: r.Unknown, ReadOnly: c.ReadOnly()}
			for _, p := range r.Missing {
				if p.Optional {
					g.MissingOptional = append(g.MissingOptional, p.String())
				} else {
					g.Missing = append(g.Missing, p.String())
				}
			}
			out = append(out, g)
		}
		if err != nil {
			where := "kubernetes"
			if c.Name() != "" {
				where += " cluster " + c.Name()
			}
			return out, fmt.Errorf("%s: %w", where, err)
		}
	}
	return out, nil
}
