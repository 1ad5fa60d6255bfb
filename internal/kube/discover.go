package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// Namespaces returns the tenant namespaces in scope: the configured list,
// or the namespaces matching the selector, sorted.
func (c *Client) Namespaces(ctx context.Context) ([]string, error) {
	if len(c.cfg.Namespaces) > 0 {
		out := append([]string(nil), c.cfg.Namespaces...)
		sort.Strings(out)
		return out, nil
	}
	if c.cfg.NamespaceSelector == "" {
		return nil, nil
	}
	list, err := c.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: c.cfg.NamespaceSelector})
	if err != nil {
		return nil, newError("list", "namespaces matching "+c.cfg.NamespaceSelector, err)
	}
	out := make([]string, 0, len(list.Items))
	for _, ns := range list.Items {
		if ns.DeletionTimestamp == nil {
			out = append(out, ns.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Discover builds the inventory: one tenant per namespace in scope, native
// Flink clusters found by Flink's labels, Operator FlinkDeployments (with
// their FlinkSessionJobs as jobs) and the static file's clusters. It
// implements the activities' InventorySource port.
func (c *Client) Discover(ctx context.Context) (inventory.Inventory, error) {
	var inv inventory.Inventory
	namespaces, err := c.Namespaces(ctx)
	if err != nil {
		return inv, err
	}
	for _, ns := range namespaces {
		tenant, err := c.cfg.tenantFor(ns)
		if err != nil {
			return inv, err
		}
		inv.Tenants = append(inv.Tenants, tenant)
		native, err := c.discoverNative(ctx, tenant)
		if err != nil {
			return inv, err
		}
		inv.Clusters = append(inv.Clusters, native...)
		if !c.cfg.DisableOperator {
			op, err := c.discoverOperator(ctx, tenant)
			if err != nil {
				return inv, err
			}
			inv.Clusters = append(inv.Clusters, op...)
		}
	}
	if c.cfg.StaticFile != "" {
		st, err := inventory.LoadStatic(c.cfg.StaticFile)
		if err != nil {
			return inv, err
		}
		if err := MergeStatic(&inv, st); err != nil {
			return inv, err
		}
	}
	SortInventory(&inv)
	return inv, nil
}

// SortInventory orders tenants by name and clusters by tenant, Kubernetes
// cluster, namespace and cluster id, so every discovery reads the same.
func SortInventory(inv *inventory.Inventory) {
	sort.Slice(inv.Clusters, func(i, j int) bool {
		a, b := inv.Clusters[i], inv.Clusters[j]
		if a.Tenant != b.Tenant {
			return a.Tenant < b.Tenant
		}
		if a.KubeCluster != b.KubeCluster {
			return a.KubeCluster < b.KubeCluster
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.ClusterID < b.ClusterID
	})
	sort.Slice(inv.Tenants, func(i, j int) bool { return inv.Tenants[i].Name < inv.Tenants[j].Name })
}

// MergeStatic adds a static inventory file's tenants, clusters and retired
// cluster ids to a discovered inventory; a name both define differently,
// or a retired id that is discovered, is a ConfigError.
func MergeStatic(inv *inventory.Inventory, st inventory.Static) error {
	tenants := map[string]inventory.Tenant{}
	for _, t := range inv.Tenants {
		tenants[t.Name] = t
	}
	for _, t := range st.Tenants {
		if prev, ok := tenants[t.Name]; ok {
			if prev.Root != t.Root {
				return &ConfigError{Field: "staticFile tenants." + t.Name + ".root", Value: t.Root,
					Valid: fmt.Sprintf("the same root as Kubernetes tenant %s (%s), or another tenant name", t.Name, prev.Root)}
			}
			continue
		}
		tenants[t.Name] = t
		inv.Tenants = append(inv.Tenants, t)
	}
	seen := map[string]bool{}
	for _, cl := range inv.Clusters {
		seen[cl.Tenant+"/"+cl.ClusterID] = true
	}
	for _, cl := range st.Clusters {
		if seen[cl.Tenant+"/"+cl.ClusterID] {
			return &ConfigError{Field: "staticFile clusters.clusterId", Value: cl.ClusterID,
				Valid: "a cluster id not also discovered in Kubernetes for tenant " + cl.Tenant}
		}
		inv.Clusters = append(inv.Clusters, cl)
	}
	for _, id := range st.RetiredClusters {
		for _, cl := range inv.Clusters {
			if cl.ClusterID == id {
				return &ConfigError{Field: "staticFile retiredClusters", Value: id, Valid: "the id of a cluster that is gone, not one discovered in Kubernetes"}
			}
		}
	}
	inv.RetiredClusters = append(inv.RetiredClusters, st.RetiredClusters...)
	return nil
}

// discoverNative finds JobManager Deployments by Flink's labels and reads
// each cluster's flink-config-<id> ConfigMap.
func (c *Client) discoverNative(ctx context.Context, tenant inventory.Tenant) ([]inventory.Cluster, error) {
	ns := tenant.Namespace
	jmSel := labels.SelectorFromSet(labels.Set{LabelType: LabelTypeNative, LabelComponent: ComponentJobManager}).String()
	deps, err := c.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: jmSel})
	if err != nil {
		return nil, newError("list", "JobManager deployments in "+ns, err)
	}
	if len(deps.Items) == 0 {
		return nil, nil
	}
	// One list for all config maps of native clusters in the namespace.
	cmSel := labels.SelectorFromSet(labels.Set{LabelType: LabelTypeNative}).String()
	cms, err := c.kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: cmSel})
	if err != nil {
		return nil, newError("list", "Flink config maps in "+ns, err)
	}
	byName := make(map[string]*corev1.ConfigMap, len(cms.Items))
	for i := range cms.Items {
		byName[cms.Items[i].Name] = &cms.Items[i]
	}
	var out []inventory.Cluster
	for i := range deps.Items {
		d := &deps.Items[i]
		if d.DeletionTimestamp != nil {
			continue
		}
		// The operator runs its clusters through Flink's native integration;
		// operator discovery lists them, with the recipe that goes through
		// the operator. Without operator discovery they stay here, so
		// governance still sees their jobs.
		if !c.cfg.DisableOperator && ownedByFlinkDeployment(d.OwnerReferences) {
			continue
		}
		cl, err := c.nativeCluster(tenant, d, byName)
		if err != nil {
			return nil, err
		}
		out = append(out, cl)
	}
	return out, nil
}

// ownedByFlinkDeployment reports whether a FlinkDeployment controls the
// object.
func ownedByFlinkDeployment(refs []metav1.OwnerReference) bool {
	for _, r := range refs {
		if r.Kind == KindFlinkDeployment && strings.HasPrefix(r.APIVersion, FlinkDeploymentGVR.Group+"/") {
			return true
		}
	}
	return false
}

func (c *Client) nativeCluster(tenant inventory.Tenant, d *appsv1.Deployment, cms map[string]*corev1.ConfigMap) (inventory.Cluster, error) {
	ns := d.Namespace
	obj := "Deployment " + ns + "/" + d.Name
	id := d.Labels[LabelApp]
	if id == "" {
		return inventory.Cluster{}, kindError("inventory", obj, ErrInvalid, "label %s is missing; Flink sets it to the cluster id", LabelApp)
	}
	cl := inventory.Cluster{
		Tenant: tenant.Name, Namespace: ns, ClusterID: id, KubeCluster: c.cfg.Name,
		Source:   inventory.SourceNativeKubernetes,
		Mode:     inventory.ModeSession,
		Resource: &inventory.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: d.Name, KubeCluster: c.cfg.Name},
	}
	cmName := flinkConfigMapPrefix + id
	cm, ok := cms[cmName]
	if !ok {
		return inventory.Cluster{}, kindError("inventory", obj, ErrNotFound, "its Flink configuration ConfigMap %s/%s (labelled %s=%s) does not exist", ns, cmName, LabelType, LabelTypeNative)
	}
	conf, err := parseFlinkConfigMap(cm.Data)
	if err != nil {
		return inventory.Cluster{}, kindError("inventory", "ConfigMap "+ns+"/"+cmName, ErrInvalid, "%v", err)
	}
	cl.CheckpointDir = conf.first(checkpointDirKeys)
	cl.SavepointDir = conf.first(savepointDirKeys)
	cl.HAStorageDir = conf.first(haStorageDirKeys)
	if target := conf["execution.target"]; target == applicationEntrypoint {
		cl.Mode = inventory.ModeApplication
	} else if target == "" && containerArgsContain(d, applicationEntrypoint) {
		cl.Mode = inventory.ModeApplication
	}
	cl.FlinkVersion = imageVersion(d)
	port, err := conf.restPort()
	if err != nil {
		return inventory.Cluster{}, kindError("inventory", "ConfigMap "+ns+"/"+cmName, ErrInvalid, "%v", err)
	}
	scheme, err := conf.restScheme()
	if err != nil {
		return inventory.Cluster{}, kindError("inventory", "ConfigMap "+ns+"/"+cmName, ErrInvalid, "%v", err)
	}
	cl.RESTURL, cl.REST = c.restURL(ns, id, scheme, port), c.restSecurity(ns, id)
	if raw, ok := d.Annotations[JobsAnnotation]; ok {
		var jobs []inventory.JobSpec
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&jobs); err != nil {
			return inventory.Cluster{}, kindError("inventory", obj, ErrInvalid, "annotation %s: want a JSON list of jobs ({\"name\":...,\"restart\":{...}}): %v", JobsAnnotation, err)
		}
		if err := inventory.ValidateJobs(JobsAnnotation, jobs); err != nil {
			return inventory.Cluster{}, &Error{Op: "inventory", Object: obj, Err: err, kind: ErrInvalid}
		}
		cl.Jobs = jobs
	}
	return cl, nil
}

// restURL is the cluster's REST endpoint: its restOverrides entry, or the
// REST Service Flink creates, <cluster-id>-rest.<namespace>, with the
// scheme its security.ssl.rest.enabled implies.
func (c *Client) restURL(ns, clusterID, scheme string, port int) string {
	if u, ok := c.cfg.RESTOverrides[ns+"/"+clusterID]; ok {
		return u
	}
	return scheme + "://" + net.JoinHostPort(clusterID+"-rest."+ns, strconv.Itoa(port))
}

// restSecurity is the cluster's restSecurity entry, nil without one.
func (c *Client) restSecurity(ns, clusterID string) *inventory.RESTSecurity {
	s, ok := c.cfg.RESTSecurity[ns+"/"+clusterID]
	if !ok {
		return nil
	}
	return &s
}

func containerArgsContain(d *appsv1.Deployment, word string) bool {
	for _, ctr := range d.Spec.Template.Spec.Containers {
		for _, a := range append(append([]string(nil), ctr.Command...), ctr.Args...) {
			if strings.Contains(a, word) {
				return true
			}
		}
	}
	return false
}

// imageVersion reads "1.20" from an image such as flink:1.20 or
// registry/flink:1.20.3-scala_2.12-java17; empty when the tag is not a version.
func imageVersion(d *appsv1.Deployment) string {
	for _, ctr := range d.Spec.Template.Spec.Containers {
		if ctr.Name != flinkMainContainer {
			continue
		}
		img := ctr.Image
		if i := strings.LastIndex(img, "@"); i >= 0 {
			img = img[:i]
		}
		i := strings.LastIndex(img, ":")
		if i < 0 || strings.Contains(img[i:], "/") {
			return ""
		}
		tag := img[i+1:]
		if j := strings.IndexByte(tag, '-'); j >= 0 {
			tag = tag[:j]
		}
		if tag == "" || tag[0] < '0' || tag[0] > '9' {
			return ""
		}
		return tag
	}
	return ""
}

// discoverOperator lists FlinkDeployments and FlinkSessionJobs. Session
// jobs become jobs of their session cluster; a session job whose
// FlinkDeployment is missing is reported as a cluster of mode session-job
// so it is not silently dropped.
func (c *Client) discoverOperator(ctx context.Context, tenant inventory.Tenant) ([]inventory.Cluster, error) {
	ns := tenant.Namespace
	deps, err := c.dyn.Resource(FlinkDeploymentGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, newError("list", "FlinkDeployments in "+ns, err)
	}
	jobs, err := c.dyn.Resource(FlinkSessionJobGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, newError("list", "FlinkSessionJobs in "+ns, err)
	}
	var out []inventory.Cluster
	index := map[string]int{}
	for i := range deps.Items {
		u := &deps.Items[i]
		if u.GetDeletionTimestamp() != nil {
			continue
		}
		cl, err := c.operatorCluster(tenant, u)
		if err != nil {
			return nil, err
		}
		index[cl.ClusterID] = len(out)
		out = append(out, cl)
	}
	sort.Slice(jobs.Items, func(i, j int) bool { return jobs.Items[i].GetName() < jobs.Items[j].GetName() })
	for i := range jobs.Items {
		u := &jobs.Items[i]
		if u.GetDeletionTimestamp() != nil {
			continue
		}
		ref := &inventory.ObjectRef{APIVersion: operatorAPIVersion, Kind: KindFlinkSessionJob, Namespace: ns, Name: u.GetName(), KubeCluster: c.cfg.Name}
		job := inventory.JobSpec{Name: u.GetName(), Restart: inventory.RestartRecipe{Kind: inventory.RestartOperatorResume, Resource: ref}}
		parent, _, _ := unstructured.NestedString(u.Object, "spec", "deploymentName")
		if parent == "" {
			return nil, kindError("inventory", "FlinkSessionJob "+ns+"/"+u.GetName(), ErrInvalid, "spec.deploymentName is empty; it names the session FlinkDeployment")
		}
		if idx, ok := index[parent]; ok {
			out[idx].Jobs = append(out[idx].Jobs, job)
			continue
		}
		out = append(out, inventory.Cluster{
			Tenant: tenant.Name, Namespace: ns, ClusterID: parent, KubeCluster: c.cfg.Name,
			Source: inventory.SourceOperator, Mode: inventory.ModeSessionJob,
			RESTURL: c.restURL(ns, parent, "http", defaultRESTPort), REST: c.restSecurity(ns, parent), Resource: ref, Jobs: []inventory.JobSpec{job},
		})
		index[parent] = len(out) - 1
	}
	return out, nil
}

func (c *Client) operatorCluster(tenant inventory.Tenant, u *unstructured.Unstructured) (inventory.Cluster, error) {
	ns, name := u.GetNamespace(), u.GetName()
	obj := "FlinkDeployment " + ns + "/" + name
	ref := &inventory.ObjectRef{APIVersion: operatorAPIVersion, Kind: KindFlinkDeployment, Namespace: ns, Name: name, KubeCluster: c.cfg.Name}
	cl := inventory.Cluster{
		Tenant: tenant.Name, Namespace: ns, ClusterID: name, KubeCluster: c.cfg.Name,
		Source: inventory.SourceOperator, Mode: inventory.ModeSession, Resource: ref,
	}
	conf := flinkConf{}
	if raw, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "flinkConfiguration"); ok && raw != nil {
		if err := flatten("", raw, conf); err != nil {
			return cl, kindError("inventory", obj, ErrInvalid, "spec.flinkConfiguration: %v", err)
		}
	}
	cl.CheckpointDir = conf.first(checkpointDirKeys)
	cl.SavepointDir = conf.first(savepointDirKeys)
	cl.HAStorageDir = conf.first(haStorageDirKeys)
	port, err := conf.restPort()
	if err != nil {
		return cl, kindError("inventory", obj, ErrInvalid, "spec.flinkConfiguration: %v", err)
	}
	scheme, err := conf.restScheme()
	if err != nil {
		return cl, kindError("inventory", obj, ErrInvalid, "spec.flinkConfiguration: %v", err)
	}
	cl.RESTURL, cl.REST = c.restURL(ns, name, scheme, port), c.restSecurity(ns, name)
	if v, _, _ := unstructured.NestedString(u.Object, "spec", "flinkVersion"); v != "" {
		// v1_20 -> 1.20
		cl.FlinkVersion = strings.ReplaceAll(strings.TrimPrefix(v, "v"), "_", ".")
	}
	if job, ok, _ := unstructured.NestedMap(u.Object, "spec", "job"); ok && job != nil {
		cl.Mode = inventory.ModeApplication
		cl.Jobs = []inventory.JobSpec{{
			Name:    name,
			Restart: inventory.RestartRecipe{Kind: inventory.RestartOperatorResume, Resource: ref},
		}}
	}
	return cl, nil
}
