package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// OrphanKind says what kind of leftover an Orphan is.
type OrphanKind string

const (
	// OrphanTaskManagerPod: a TaskManager pod whose JobManager is gone.
	OrphanTaskManagerPod OrphanKind = "taskmanager-pod"
	// OrphanTaskManagerDeployment: a TaskManager Deployment (standalone
	// mode) whose JobManager is gone.
	OrphanTaskManagerDeployment OrphanKind = "taskmanager-deployment"
	// OrphanIdleJobManager: a JobManager Deployment whose jobs are all
	// globally terminal.
	OrphanIdleJobManager OrphanKind = "idle-jobmanager"
	// OrphanHAConfigMap: an HA ConfigMap of a cluster that no longer exists.
	OrphanHAConfigMap OrphanKind = "ha-configmap"
)

// Owner is the object an orphan belonged to.
type Owner struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	UID    string `json:"uid,omitempty"`
	Exists bool   `json:"exists"`
}

// Orphan is a leftover object with what DeleteOrphan needs to delete
// exactly this object and nothing newer.
type Orphan struct {
	Kind            OrphanKind          `json:"kind"`
	Ref             inventory.ObjectRef `json:"ref"`
	UID             string              `json:"uid"`
	ResourceVersion string              `json:"resourceVersion"`
	ClusterID       string              `json:"clusterId"`
	Created         time.Time           `json:"created"`
	Age             time.Duration       `json:"age"`
	// LastWritten is the newest write to the object itself (managedFields,
	// status writes left out), at least Created. A running cluster keeps
	// writing its HA ConfigMaps (leader renewals, checkpoint pointers), so
	// for a leftover this is about when its cluster went away.
	LastWritten time.Time `json:"lastWritten"`
	// Owner is the controlling owner reference, or the cluster's
	// JobManager Deployment when the object carries none (HA ConfigMaps).
	Owner  Owner  `json:"owner"`
	Reason string `json:"reason"`
}

// Globally terminal Flink job states: the job will not run again.
var terminalJobStates = map[string]bool{"FINISHED": true, "CANCELED": true, "FAILED": true}

// IsGloballyTerminal reports whether a Flink job state is FINISHED,
// CANCELED or FAILED.
func IsGloballyTerminal(state string) bool { return terminalJobStates[strings.ToUpper(state)] }

// OrphanInput carries what this package cannot know itself.
type OrphanInput struct {
	// JobStates holds, per "<namespace>/<cluster-id>", the states of every
	// job the cluster's REST API lists. A JobManager is reported idle only
	// when it has an entry here with at least one job and all of them are
	// globally terminal; a cluster without an entry is never reported.
	JobStates map[string][]string
	// Namespaces, when set, limits the search to these namespaces; each
	// must be one of the client's namespaces. Empty means all of them.
	Namespaces []string
}

// FindOrphans reports leftovers in the namespaces in scope: TaskManager
// pods and deployments whose JobManager is gone, idle JobManager
// deployments, and HA ConfigMaps of clusters that no longer exist. Nothing
// is deleted. Sorted by namespace, kind and name.
func (c *Client) FindOrphans(ctx context.Context, in OrphanInput) ([]Orphan, error) {
	for key, states := range in.JobStates {
		if ns, id, ok := strings.Cut(key, "/"); !ok || ns == "" || id == "" {
			return nil, &ConfigError{Field: "JobStates", Value: key, Valid: "keys of the form <namespace>/<cluster-id>"}
		}
		for _, s := range states {
			if strings.TrimSpace(s) == "" {
				return nil, &ConfigError{Field: "JobStates[" + key + "]", Value: s, Valid: "Flink job states such as RUNNING or FINISHED"}
			}
		}
	}
	namespaces, err := c.Namespaces(ctx)
	if err != nil {
		return nil, err
	}
	if len(in.Namespaces) > 0 {
		namespaces, err = narrowNamespaces(namespaces, in.Namespaces)
		if err != nil {
			return nil, err
		}
	}
	var out []Orphan
	for _, ns := range namespaces {
		found, err := c.orphansIn(ctx, ns, in)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Ref.Namespace != b.Ref.Namespace {
			return a.Ref.Namespace < b.Ref.Namespace
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Ref.Name < b.Ref.Name
	})
	return out, nil
}

func (c *Client) orphansIn(ctx context.Context, ns string, in OrphanInput) ([]Orphan, error) {
	now := c.now()
	nativeSel := labels.SelectorFromSet(labels.Set{LabelType: LabelTypeNative}).String()
	deps, err := c.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: nativeSel})
	if err != nil {
		return nil, newError("list", "Flink deployments in "+ns, err)
	}
	// Live JobManagers by cluster id, and every deployment by UID so owner
	// references resolve without extra reads.
	jms := map[string]*appsv1.Deployment{}
	depByUID := map[string]*appsv1.Deployment{}
	for i := range deps.Items {
		d := &deps.Items[i]
		depByUID[string(d.UID)] = d
		if d.Labels[LabelComponent] == ComponentJobManager && d.DeletionTimestamp == nil {
			jms[d.Labels[LabelApp]] = d
		}
	}
	operatorClusters := map[string]string{} // FlinkDeployment name -> UID
	if !c.cfg.DisableOperator {
		fds, err := c.dyn.Resource(FlinkDeploymentGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, newError("list", "FlinkDeployments in "+ns, err)
		}
		for _, fd := range fds.Items {
			operatorClusters[fd.GetName()] = string(fd.GetUID())
		}
	}
	clusterExists := func(id string) bool {
		_, jm := jms[id]
		_, op := operatorClusters[id]
		return jm || op
	}
	// ownerState resolves the controlling owner: exists only when an object
	// of that kind, name and UID is still there.
	ownerState := func(refs []metav1.OwnerReference) (Owner, bool) {
		for _, r := range refs {
			if r.Controller == nil || !*r.Controller {
				continue
			}
			o := Owner{Kind: r.Kind, Name: r.Name, UID: string(r.UID)}
			switch r.Kind {
			case "Deployment":
				d, ok := depByUID[string(r.UID)]
				o.Exists = ok && d.Name == r.Name && d.DeletionTimestamp == nil
			case KindFlinkDeployment:
				o.Exists = operatorClusters[r.Name] == string(r.UID)
			default:
				return o, false // an owner we cannot judge: leave the object alone
			}
			return o, true
		}
		return Owner{}, true
	}
	mk := func(kind OrphanKind, apiVersion, k string, m metav1.ObjectMeta, owner Owner, reason string) Orphan {
		return Orphan{
			Kind: kind, Ref: inventory.ObjectRef{APIVersion: apiVersion, Kind: k, Namespace: ns, Name: m.Name, KubeCluster: c.cfg.Name},
			UID: string(m.UID), ResourceVersion: m.ResourceVersion, ClusterID: m.Labels[LabelApp],
			Created: m.CreationTimestamp.UTC(), Age: now.Sub(m.CreationTimestamp.Time).Round(time.Second),
			LastWritten: lastWritten(m), Owner: owner, Reason: reason,
		}
	}
	jmOwner := func(id string) Owner {
		if d, ok := jms[id]; ok {
			return Owner{Kind: "Deployment", Name: d.Name, UID: string(d.UID), Exists: true}
		}
		return Owner{Kind: "Deployment", Name: id}
	}
	// taskManagerOrphan judges an object of a TaskManager by its owner
	// reference when it has one (a JobManager recreated under the same
	// name does not adopt old pods), else by its cluster's JobManager.
	taskManagerOrphan := func(m metav1.ObjectMeta) (Owner, string, bool) {
		id := m.Labels[LabelApp]
		owner, judged := ownerState(m.OwnerReferences)
		if !judged {
			return owner, "", false
		}
		if owner.Kind != "" {
			if owner.Exists {
				return owner, "", false
			}
			return owner, fmt.Sprintf("its owner %s %s (uid %s) no longer exists", owner.Kind, owner.Name, owner.UID), true
		}
		if clusterExists(id) {
			return jmOwner(id), "", false
		}
		return jmOwner(id), fmt.Sprintf("no JobManager of cluster %s exists in %s", id, ns), true
	}

	var out []Orphan
	tmSel := labels.SelectorFromSet(labels.Set{LabelType: LabelTypeNative, LabelComponent: ComponentTaskManager}).String()
	pods, err := c.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: tmSel})
	if err != nil {
		return nil, newError("list", "TaskManager pods in "+ns, err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		if owner, reason, orphan := taskManagerOrphan(p.ObjectMeta); orphan {
			out = append(out, mk(OrphanTaskManagerPod, "v1", "Pod", p.ObjectMeta, owner, reason))
		}
	}
	for i := range deps.Items {
		d := &deps.Items[i]
		if d.DeletionTimestamp != nil {
			continue
		}
		switch d.Labels[LabelComponent] {
		case ComponentTaskManager:
			if owner, reason, orphan := taskManagerOrphan(d.ObjectMeta); orphan {
				out = append(out, mk(OrphanTaskManagerDeployment, "apps/v1", "Deployment", d.ObjectMeta, owner, reason))
			}
		case ComponentJobManager:
			id := d.Labels[LabelApp]
			states, ok := in.JobStates[ns+"/"+id]
			if !ok || len(states) == 0 || !allTerminal(states) {
				continue
			}
			owner, _ := ownerState(d.OwnerReferences)
			out = append(out, mk(OrphanIdleJobManager, "apps/v1", "Deployment", d.ObjectMeta, owner,
				fmt.Sprintf("all %d jobs of cluster %s are globally terminal (%s)", len(states), id, strings.Join(states, ", "))))
		}
	}
	haSel := labels.SelectorFromSet(labels.Set{LabelType: LabelTypeNative, LabelConfigMapType: ConfigMapTypeHA}).String()
	cms, err := c.kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: haSel})
	if err != nil {
		return nil, newError("list", "HA config maps in "+ns, err)
	}
	for i := range cms.Items {
		cm := &cms.Items[i]
		id := cm.Labels[LabelApp]
		if cm.DeletionTimestamp != nil || id == "" || clusterExists(id) {
			continue
		}
		owner, judged := ownerState(cm.OwnerReferences)
		if !judged || owner.Exists {
			continue
		}
		if owner.Kind == "" {
			owner = jmOwner(id)
		}
		out = append(out, mk(OrphanHAConfigMap, "v1", "ConfigMap", cm.ObjectMeta, owner,
			fmt.Sprintf("cluster %s has no JobManager Deployment or FlinkDeployment in %s", id, ns)))
	}
	return out, nil
}

// narrowNamespaces returns want, sorted, if every entry is one of have;
// the search never leaves the namespaces the client is configured for.
func narrowNamespaces(have, want []string) ([]string, error) {
	ok := make(map[string]bool, len(have))
	for _, ns := range have {
		ok[ns] = true
	}
	seen := map[string]bool{}
	var out []string
	for _, ns := range want {
		if !ok[ns] {
			return nil, &ConfigError{Field: "Namespaces", Value: ns, Valid: "one of the namespaces in scope: " + strings.Join(have, ", ")}
		}
		if !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	sort.Strings(out)
	return out, nil
}

// lastWritten is the newest managedFields time of writes to the object
// itself; status writes (kubelet, controllers) say nothing about whether
// its cluster still uses it.
func lastWritten(m metav1.ObjectMeta) time.Time {
	t := m.CreationTimestamp.UTC()
	for _, f := range m.ManagedFields {
		if f.Subresource == "" && f.Time != nil && f.Time.After(t) {
			t = f.Time.UTC()
		}
	}
	return t
}

func allTerminal(states []string) bool {
	for _, s := range states {
		if !IsGloballyTerminal(s) {
			return false
		}
	}
	return true
}

// DeleteOrphan deletes one object FindOrphans reported, and only that
// object: it must still carry Flink's native labels, and the apiserver
// deletes it only if its UID (and resourceVersion, when given) still match,
// so an object recreated under the same name, or changed since it was
// judged, is refused with ErrPrecondition. Kinds: Pod, ConfigMap (v1),
// Deployment (apps/v1). An object already gone is not an error.
func (c *Client) DeleteOrphan(ctx context.Context, ref inventory.ObjectRef, expectedUID, expectedResourceVersion string) error {
	obj := ref.Kind + " " + ref.Namespace + "/" + ref.Name
	if expectedUID == "" {
		return &ConfigError{Field: "expectedUID", Value: "", Valid: "the UID FindOrphans reported for " + obj}
	}
	meta, _, err := c.getOrphanKind(ctx, ref)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if string(meta.GetUID()) != expectedUID {
		return kindError("delete", obj, ErrPrecondition, "uid is %s, expected %s: the object was recreated since it was judged an orphan", meta.GetUID(), expectedUID)
	}
	if expectedResourceVersion != "" && meta.GetResourceVersion() != expectedResourceVersion {
		return kindError("delete", obj, ErrPrecondition, "resourceVersion is %s, expected %s: the object changed since it was judged an orphan", meta.GetResourceVersion(), expectedResourceVersion)
	}
	if meta.GetLabels()[LabelType] != LabelTypeNative {
		return kindError("delete", obj, ErrPrecondition, "it lacks label %s=%s, so it is not a Flink object this package may delete", LabelType, LabelTypeNative)
	}
	uid := meta.GetUID()
	pre := &metav1.Preconditions{UID: &uid}
	if expectedResourceVersion != "" {
		pre.ResourceVersion = &expectedResourceVersion
	}
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{Preconditions: pre, PropagationPolicy: &background}
	switch ref.Kind {
	case "Pod":
		err = c.kube.CoreV1().Pods(ref.Namespace).Delete(ctx, ref.Name, opts)
	case "ConfigMap":
		err = c.kube.CoreV1().ConfigMaps(ref.Namespace).Delete(ctx, ref.Name, opts)
	case "Deployment":
		err = c.kube.AppsV1().Deployments(ref.Namespace).Delete(ctx, ref.Name, opts)
	}
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		// The apiserver checked the preconditions: the object changed
		// between our read and the delete.
		return &Error{Op: "delete", Object: obj, Err: fmt.Errorf("%w: %w", ErrPrecondition, err), kind: ErrPrecondition}
	}
	return newError("delete", obj, err)
}

// getOrphanKind reads an object of a kind DeleteOrphan handles. The typed
// clients leave apiVersion and kind empty; they are set here so the object
// can be written out and applied again.
func (c *Client) getOrphanKind(ctx context.Context, ref inventory.ObjectRef) (metav1.Object, any, error) {
	obj := ref.Kind + " " + ref.Namespace + "/" + ref.Name
	if ref.Namespace == "" || ref.Name == "" {
		return nil, nil, &ConfigError{Field: "ref", Value: obj, Valid: "a namespace and a name"}
	}
	var meta metav1.Object
	var full any
	var err error
	switch {
	case ref.Kind == "Pod" && (ref.APIVersion == "v1" || ref.APIVersion == ""):
		var p *corev1.Pod
		if p, err = c.kube.CoreV1().Pods(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{}); err == nil {
			p.APIVersion, p.Kind = "v1", "Pod"
		}
		meta, full = p, p
	case ref.Kind == "ConfigMap" && (ref.APIVersion == "v1" || ref.APIVersion == ""):
		var cm *corev1.ConfigMap
		if cm, err = c.kube.CoreV1().ConfigMaps(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{}); err == nil {
			cm.APIVersion, cm.Kind = "v1", "ConfigMap"
		}
		meta, full = cm, cm
	case ref.Kind == "Deployment" && (ref.APIVersion == "apps/v1" || ref.APIVersion == ""):
		var d *appsv1.Deployment
		if d, err = c.kube.AppsV1().Deployments(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{}); err == nil {
			d.APIVersion, d.Kind = "apps/v1", "Deployment"
		}
		meta, full = d, d
	default:
		return nil, nil, &ConfigError{Field: "ref.kind", Value: ref.APIVersion + " " + ref.Kind, Valid: "v1 Pod, v1 ConfigMap or apps/v1 Deployment"}
	}
	if err != nil {
		return nil, nil, newError("get", obj, err)
	}
	return meta, full, nil
}

// ObjectSnapshot is an object as ReadOrphan found it.
type ObjectSnapshot struct {
	UID             string
	ResourceVersion string
	// JSON is the whole object as the apiserver returned it, with
	// apiVersion and kind, so a person can inspect or re-create it.
	JSON []byte
}

// ReadOrphan reads one object of a kind DeleteOrphan handles (v1 Pod, v1
// ConfigMap, apps/v1 Deployment) as JSON, with the UID and resourceVersion
// a later DeleteOrphan must be given. An object that does not exist is an
// error matching ErrNotFound.
func (c *Client) ReadOrphan(ctx context.Context, ref inventory.ObjectRef) (ObjectSnapshot, error) {
	meta, full, err := c.getOrphanKind(ctx, ref)
	if err != nil {
		return ObjectSnapshot{}, err
	}
	data, err := json.Marshal(full)
	if err != nil {
		return ObjectSnapshot{}, fmt.Errorf("kube: encode %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
	}
	return ObjectSnapshot{UID: string(meta.GetUID()), ResourceVersion: meta.GetResourceVersion(), JSON: data}, nil
}
