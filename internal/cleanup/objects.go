package cleanup

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// Kinds of the Kubernetes objects a plan holds (Plan.Objects and
// Plan.KeepObjects): leftovers of Flink's native Kubernetes integration.
const (
	KindTaskManagerPod        ItemKind = "taskmanager-pod"
	KindTaskManagerDeployment ItemKind = "taskmanager-deployment"
	KindIdleJobManager        ItemKind = "idle-jobmanager"
	KindHAConfigMap           ItemKind = "ha-configmap"
)

// Rules that select Kubernetes objects.
const (
	// RuleOrphanTaskManager: a TaskManager pod or deployment whose
	// JobManager no longer exists.
	RuleOrphanTaskManager Rule = "orphan-taskmanager"
	// RuleIdleJobManager: a JobManager deployment whose jobs are all
	// globally terminal.
	RuleIdleJobManager Rule = "idle-jobmanager"
	// RuleOrphanHAConfigMap: an HA ConfigMap of a cluster that no longer
	// exists.
	RuleOrphanHAConfigMap Rule = "orphan-ha-configmap"
)

// Reasons that keep Kubernetes objects (KeepWithinTTL applies as well).
const (
	// KeepStatusUnknown: whether the object is a leftover cannot be told
	// (its JobManager's jobs could not be read, it has no cluster label).
	KeepStatusUnknown Reason = "status-unknown"
	// KeepOwnerExists: the object's controlling owner still exists and
	// manages it (a JobManager deployment of a FlinkDeployment).
	KeepOwnerExists Reason = "owner-exists"
)

// kubernetesReadOnlyBy says why KeepKubernetesReadOnly keeps something.
const kubernetesReadOnlyBy = "the worker's inventory.kubernetes.rbacProfile is windows: it may not delete Kubernetes objects"

// objectKinds maps each object kind to its rule and the Kubernetes kinds it
// can be.
var objectKinds = map[ItemKind]struct {
	rule  Rule
	kinds []string
}{
	KindTaskManagerPod:        {RuleOrphanTaskManager, []string{"Pod"}},
	KindTaskManagerDeployment: {RuleOrphanTaskManager, []string{"Deployment"}},
	KindIdleJobManager:        {RuleIdleJobManager, []string{"Deployment"}},
	KindHAConfigMap:           {RuleOrphanHAConfigMap, []string{"ConfigMap"}},
}

// ObjectOwner is the object a leftover belonged to.
type ObjectOwner struct {
	Kind   string `json:"kind,omitempty"`
	Name   string `json:"name,omitempty"`
	UID    string `json:"uid,omitempty"`
	Exists bool   `json:"exists"`
}

func (o ObjectOwner) String() string {
	if o.Kind == "" {
		return ""
	}
	state := "gone"
	if o.Exists {
		state = "exists"
	}
	if o.UID != "" {
		return fmt.Sprintf("%s %s (uid %s, %s)", o.Kind, o.Name, o.UID, state)
	}
	return fmt.Sprintf("%s %s (%s)", o.Kind, o.Name, state)
}

// Object is a Kubernetes object that leftover detection reported, as the
// planner and the executor judge it.
type Object struct {
	Kind            ItemKind            `json:"kind"`
	Ref             inventory.ObjectRef `json:"ref"`
	UID             string              `json:"uid,omitempty"`
	ResourceVersion string              `json:"resourceVersion,omitempty"`
	Tenant          string              `json:"tenant,omitempty"`
	ClusterID       string              `json:"clusterId,omitempty"`
	Created         time.Time           `json:"created"`
	// Since is about when the object became a leftover, when known: its
	// last write (a running cluster keeps writing its HA ConfigMaps), or
	// the end of the last job of an idle JobManager. The TTL counts from
	// the later of Created and Since.
	Since time.Time   `json:"since,omitempty"`
	Owner ObjectOwner `json:"owner"`
	// Reason is why detection reported it.
	Reason string `json:"reason,omitempty"`
	// Unknown, when set, says why the object cannot be judged; it is kept.
	Unknown string `json:"unknown,omitempty"`
}

// ObjectItem is one Kubernetes object to delete.
type ObjectItem struct {
	// Path names the object in the audit manifest:
	// kubernetes://<namespace>/<kind>/<name> (ObjectPath).
	Path      string              `json:"path"`
	Kind      ItemKind            `json:"kind"`
	Rule      Rule                `json:"rule"`
	Tenant    string              `json:"tenant,omitempty"`
	ClusterID string              `json:"clusterId"`
	Ref       inventory.ObjectRef `json:"ref"`
	// UID and ResourceVersion are the delete preconditions: the object is
	// deleted only if it is still exactly the one judged.
	UID             string    `json:"uid"`
	ResourceVersion string    `json:"resourceVersion"`
	Created         time.Time `json:"created"`
	// Age is the age at planning that the TTL was held against.
	Age    time.Duration `json:"age"`
	Owner  ObjectOwner   `json:"owner"`
	Detail string        `json:"detail,omitempty"`
}

// KeptObject is a reported leftover that is kept, with the reason.
type KeptObject struct {
	Path      string              `json:"path"`
	Kind      ItemKind            `json:"kind"`
	Reason    Reason              `json:"reason"`
	Tenant    string              `json:"tenant,omitempty"`
	ClusterID string              `json:"clusterId,omitempty"`
	Ref       inventory.ObjectRef `json:"ref"`
	UID       string              `json:"uid,omitempty"`
	Created   time.Time           `json:"created,omitempty"`
	Age       time.Duration       `json:"age,omitempty"`
	Owner     ObjectOwner         `json:"owner"`
	// By says what keeps it: the TTL left, why its state is unknown, the
	// owner. Detail is why detection reported it.
	By     string `json:"by,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// ObjectTotals counts a tenant's Kubernetes objects in a plan.
type ObjectTotals struct {
	Planned int64            `json:"planned"`
	ByRule  map[Rule]int64   `json:"byRule,omitempty"`
	Kept    map[Reason]int64 `json:"kept,omitempty"`
}

// ObjectScheme prefixes the audit-manifest path of a Kubernetes object.
const ObjectScheme = "kubernetes://"

// ObjectPath is the audit-manifest path of ref:
// kubernetes://[<kube-cluster>/]<namespace>/<kind in lower case>/<name>.
func ObjectPath(ref inventory.ObjectRef) string {
	return ObjectScheme + ref.NamespaceKey() + "/" + strings.ToLower(ref.Kind) + "/" + ref.Name
}

// IsObjectPath reports whether a manifest path names a Kubernetes object.
func IsObjectPath(p string) bool { return strings.HasPrefix(p, ObjectScheme) }

var (
	namespacePattern  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	objectNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
)

// checkObject validates what the executor relies on: a known kind that
// matches the reference, and names that are safe in a trash path.
func checkObject(kind ItemKind, ref inventory.ObjectRef) error {
	k, ok := objectKinds[kind]
	if !ok {
		return fmt.Errorf("kind %q: want %s, %s, %s or %s", kind, KindTaskManagerPod, KindTaskManagerDeployment, KindIdleJobManager, KindHAConfigMap)
	}
	match := false
	for _, want := range k.kinds {
		match = match || ref.Kind == want
	}
	if !match {
		return fmt.Errorf("ref.kind %q does not fit kind %s; want %s", ref.Kind, kind, strings.Join(k.kinds, " or "))
	}
	wantAPI := "v1"
	if ref.Kind == "Deployment" {
		wantAPI = "apps/v1"
	}
	if ref.APIVersion != wantAPI {
		return fmt.Errorf("ref.apiVersion %q of a %s: want %s", ref.APIVersion, ref.Kind, wantAPI)
	}
	if ref.KubeCluster != "" && (len(ref.KubeCluster) > 63 || !namespacePattern.MatchString(ref.KubeCluster)) {
		return fmt.Errorf("ref.kubeCluster %q: want a DNS-1123 label", ref.KubeCluster)
	}
	if len(ref.Namespace) > 63 || !namespacePattern.MatchString(ref.Namespace) {
		return fmt.Errorf("ref.namespace %q: want a DNS-1123 label", ref.Namespace)
	}
	if len(ref.Name) > 253 || !objectNamePattern.MatchString(ref.Name) {
		return fmt.Errorf("ref.name %q: want a DNS-1123 subdomain", ref.Name)
	}
	return nil
}

// ObjectAge is how long o has been a leftover at now: since it was
// created, or since Since when that is later. Kubernetes records no time
// an object was orphaned, so this errs towards younger.
func ObjectAge(now time.Time, o Object) time.Duration {
	since := o.Created
	if o.Since.After(since) {
		since = o.Since
	}
	return now.Sub(since).Round(time.Second)
}

// JudgeObject decides one reported leftover: the rule that deletes it, or
// the reason it is kept with what keeps it. The executor calls it again
// right before deleting, so an object is deleted only if it would still be
// planned. pol must have its defaults applied.
func JudgeObject(now time.Time, pol Policy, o Object) (Rule, Reason, string) {
	k, known := objectKinds[o.Kind]
	switch {
	case o.Unknown != "":
		return "", KeepStatusUnknown, o.Unknown
	case !known:
		return "", KeepStatusUnknown, fmt.Sprintf("kind %q is not one the planner judges", o.Kind)
	case o.ClusterID == "":
		return "", KeepStatusUnknown, "it names no cluster (label app is empty), so its cluster's state cannot be told"
	case o.Owner.Exists:
		return "", KeepOwnerExists, "its owner " + o.Owner.String() + " manages it"
	case o.Created.IsZero():
		return "", KeepStatusUnknown, "its creation time is unknown"
	}
	if age := ObjectAge(now, o); age < pol.OrphanTTL {
		return "", KeepWithinTTL, fmt.Sprintf("a leftover for %s, within orphanTTL %s", age, pol.OrphanTTL)
	}
	return k.rule, "", ""
}

// planObjects judges every reported leftover; objects are independent of
// the storage rules (a pod references no checkpoint).
func (p *planner) planObjects() ([]ObjectItem, []KeptObject, error) {
	var del []ObjectItem
	var keep []KeptObject
	seen := map[string]bool{}
	for i, o := range p.in.Objects {
		if err := checkObject(o.Kind, o.Ref); err != nil {
			return nil, nil, invalidInput("objects[%d] (%s %s/%s): %v", i, o.Ref.Kind, o.Ref.Namespace, o.Ref.Name, err)
		}
		path := ObjectPath(o.Ref)
		if seen[path] {
			return nil, nil, invalidInput("objects[%d]: %s is reported twice", i, path)
		}
		seen[path] = true
		if o.Unknown == "" && (o.UID == "" || o.ResourceVersion == "") {
			return nil, nil, invalidInput("objects[%d] (%s): uid %q and resourceVersion %q are required to delete it safely; set Unknown when they cannot be read",
				i, path, o.UID, o.ResourceVersion)
		}
		var age time.Duration
		if !o.Created.IsZero() {
			age = ObjectAge(p.now, o)
		}
		rule, reason, by := JudgeObject(p.now, p.pol, o)
		if reason == "" && p.in.ReadOnlyKubeClusters[o.Ref.KubeCluster] {
			reason, by = KeepKubernetesReadOnly, kubernetesReadOnlyBy
		}
		if reason != "" {
			keep = append(keep, KeptObject{Path: path, Kind: o.Kind, Reason: reason, Tenant: o.Tenant, ClusterID: o.ClusterID, Ref: o.Ref,
				UID: o.UID, Created: o.Created, Age: age, Owner: o.Owner, By: by, Detail: o.Reason})
			continue
		}
		del = append(del, ObjectItem{Path: path, Kind: o.Kind, Rule: rule, Tenant: o.Tenant, ClusterID: o.ClusterID, Ref: o.Ref,
			UID: o.UID, ResourceVersion: o.ResourceVersion, Created: o.Created, Age: age, Owner: o.Owner, Detail: o.Reason})
	}
	sort.Slice(del, func(i, j int) bool { return del[i].Path < del[j].Path })
	sort.Slice(keep, func(i, j int) bool { return keep[i].Path < keep[j].Path })
	return del, keep, nil
}
