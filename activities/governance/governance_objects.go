package governance

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// orphanNamespaces are the Kubernetes namespaces of the tenants in scope,
// as keys qualified by their Kubernetes cluster (inventory.NamespaceKey);
// none when the worker has no Kubernetes access. A namespace whose every
// cluster is gone is still searched: that is where leftovers pile up.
func orphanNamespaces(orphans core.OrphanControl, inv inventory.Inventory, scope core.Scope) []string {
	if orphans == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, t := range inv.Tenants {
		key := inventory.NamespaceKey(t.KubeCluster, t.Namespace)
		if t.Namespace == "" || seen[key] || !core.InScope(scope.Tenants, t.Name) {
			continue
		}
		seen[key] = true
		out = append(out, key)
	}
	sort.Strings(out)
	return out
}

// clusterJobs reads the states of every job of a native cluster, and when
// the last of them ended (zero while one has not).
func clusterJobs(ctx context.Context, clients core.FlinkClients, c inventory.Cluster) ([]string, time.Time, error) {
	client, err := core.FlinkFor(ctx, clients, c.RESTURL)
	if err != nil {
		return nil, time.Time{}, err
	}
	jobs, err := client.ListJobs(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	var states []string
	var ended time.Time
	for _, j := range jobs {
		states = append(states, string(j.State))
		if j.State.IsGloballyTerminal() && j.Ended().After(ended) {
			ended = j.Ended()
		}
	}
	return states, ended, nil
}

// jobManagerKey names a cluster as leftover detection does, by its
// namespace key.
func jobManagerKey(namespaceKey, clusterID string) string { return namespaceKey + "/" + clusterID }

// findObjects runs leftover detection in namespaces for the planner. Idle
// JobManagers are judged from the job states of every native cluster in
// scope; a cluster whose jobs cannot be read is reported with its state
// unknown, so the plan keeps it and says why.
func (a *Activities) findObjects(ctx context.Context, inv inventory.Inventory, scope core.Scope, namespaces []string) ([]cleanup.Object, error) {
	if len(namespaces) == 0 {
		return nil, nil
	}
	inNS := map[string]bool{}
	for _, ns := range namespaces {
		inNS[ns] = true
	}
	tenantOf := map[string]string{}
	for _, t := range inv.Tenants {
		if t.Namespace != "" {
			tenantOf[inventory.NamespaceKey(t.KubeCluster, t.Namespace)] = t.Name
		}
	}
	states := map[string][]string{}
	ended := map[string]time.Time{}
	var out []cleanup.Object
	for _, c := range inv.Clusters {
		if c.Source != inventory.SourceNativeKubernetes || c.Resource == nil {
			continue
		}
		nsKey := c.Resource.NamespaceKey()
		if !inNS[nsKey] || !core.InScope(scope.Clusters, c.ClusterID) {
			continue
		}
		key := jobManagerKey(nsKey, c.ClusterID)
		st, end, err := clusterJobs(ctx, a.Flink, c)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			out = append(out, cleanup.Object{Kind: cleanup.KindIdleJobManager, Ref: *c.Resource, Tenant: tenantOf[nsKey], ClusterID: c.ClusterID,
				Unknown: fmt.Sprintf("the jobs of cluster %s could not be read from %s (%v), so whether its JobManager is idle is unknown", c.ClusterID, c.RESTURL, err)})
			continue
		}
		states[key], ended[key] = st, end
	}
	found, err := a.Orphans.FindOrphans(ctx, namespaces, states)
	if err != nil {
		return nil, core.ClassifyKubernetes("find leftover Kubernetes objects in "+strings.Join(namespaces, ", "), err)
	}
	for _, o := range found {
		if !inNS[o.Ref.NamespaceKey()] || !core.InScope(scope.Clusters, o.ClusterID) {
			continue
		}
		o.Tenant = tenantOf[o.Ref.NamespaceKey()]
		if end := ended[jobManagerKey(o.Ref.NamespaceKey(), o.ClusterID)]; o.Kind == cleanup.KindIdleJobManager && end.After(o.Since) {
			o.Since = end
		}
		out = append(out, o)
	}
	return out, nil
}

// objectStore gives the executor fresh detection: the same judgement as at
// planning, with an idle JobManager's jobs read again right before it is
// deleted.
type objectStore struct {
	a *Activities

	mu  sync.Mutex
	inv *inventory.Inventory // read once per execution, for REST URLs
}

var _ cleanup.ObjectStore = (*objectStore)(nil)

func (s *objectStore) cluster(ctx context.Context, namespace, clusterID string) (*inventory.Cluster, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inv == nil {
		inv, err := s.a.Inventory.Discover(ctx)
		if err != nil {
			if errors.Is(err, inventory.ErrInvalid) {
				return nil, fmt.Errorf("discover inventory: %w", err)
			}
			return nil, fmt.Errorf("%w: discover inventory: %w", cleanup.ErrObjectsUnavailable, err)
		}
		s.inv = &inv
	}
	for i := range s.inv.Clusters {
		c := &s.inv.Clusters[i]
		if c.Resource != nil && c.Resource.NamespaceKey() == namespace && c.ClusterID == clusterID && c.Source == inventory.SourceNativeKubernetes {
			return c, nil
		}
	}
	return nil, nil
}

// Find re-runs detection in namespace; see cleanup.ObjectStore.
func (s *objectStore) Find(ctx context.Context, namespace, idleCluster string) ([]cleanup.Object, error) {
	states := map[string][]string{}
	var ended time.Time
	var unknown *cleanup.Object
	if idleCluster != "" {
		c, err := s.cluster(ctx, namespace, idleCluster)
		if err != nil {
			return nil, err
		}
		if c != nil && c.Resource != nil {
			st, end, err := clusterJobs(ctx, s.a.Flink, *c)
			switch {
			case ctx.Err() != nil:
				return nil, ctx.Err()
			case err != nil:
				unknown = &cleanup.Object{Kind: cleanup.KindIdleJobManager, Ref: *c.Resource, ClusterID: c.ClusterID,
					Unknown: fmt.Sprintf("the jobs of cluster %s could not be read from %s (%v), so whether its JobManager is idle is unknown", c.ClusterID, c.RESTURL, err)}
			default:
				states[jobManagerKey(namespace, idleCluster)], ended = st, end
			}
		}
	}
	found, err := s.a.Orphans.FindOrphans(ctx, []string{namespace}, states)
	if err != nil {
		return nil, err
	}
	for i := range found {
		if found[i].Kind == cleanup.KindIdleJobManager && found[i].ClusterID == idleCluster && ended.After(found[i].Since) {
			found[i].Since = ended
		}
	}
	if unknown != nil {
		found = append(found, *unknown)
	}
	return found, nil
}

// Get reads the object; see cleanup.ObjectStore.
func (s *objectStore) Get(ctx context.Context, ref inventory.ObjectRef) (cleanup.ObjectSnapshot, error) {
	return s.a.Orphans.ReadOrphan(ctx, ref)
}

// Delete deletes the object with preconditions; see cleanup.ObjectStore.
func (s *objectStore) Delete(ctx context.Context, ref inventory.ObjectRef, uid, resourceVersion string) error {
	return s.a.Orphans.DeleteOrphan(ctx, ref, uid, resourceVersion)
}

func objectBrief(path string, kind cleanup.ItemKind, ref inventory.ObjectRef, tenant, cluster string, age time.Duration, owner cleanup.ObjectOwner, detail string) ObjectBrief {
	b := ObjectBrief{Path: path, Kind: string(kind), KubeCluster: ref.KubeCluster, Namespace: ref.Namespace, Name: ref.Name, Tenant: tenant, ClusterID: cluster,
		Owner: owner.String(), Detail: detail}
	if age > 0 {
		b.Age = age.String()
	}
	return b
}

// objectSample lists a plan's objects for people: planned ones first,
// then kept ones, at most MaxPlanSample.
func objectSample(plan cleanup.Plan) ([]ObjectBrief, bool) {
	var out []ObjectBrief
	for _, o := range plan.Objects {
		if len(out) == MaxPlanSample {
			return out, true
		}
		b := objectBrief(o.Path, o.Kind, o.Ref, o.Tenant, o.ClusterID, o.Age, o.Owner, o.Detail)
		b.Rule = string(o.Rule)
		out = append(out, b)
	}
	for _, o := range plan.KeepObjects {
		if len(out) == MaxPlanSample {
			return out, true
		}
		b := objectBrief(o.Path, o.Kind, o.Ref, o.Tenant, o.ClusterID, o.Age, o.Owner, o.By)
		b.Kept = string(o.Reason)
		out = append(out, b)
	}
	return out, false
}

// objectOutcomes lists the plan's objects with what happened to each.
func objectOutcomes(plan cleanup.Plan, last map[string]cleanup.Record) []ObjectBrief {
	var out []ObjectBrief
	for _, o := range plan.Objects {
		if len(out) == MaxPlanSample {
			break
		}
		b := objectBrief(o.Path, o.Kind, o.Ref, o.Tenant, o.ClusterID, o.Age, o.Owner, "")
		b.Rule = string(o.Rule)
		if r, ok := last[o.Path]; ok {
			b.Outcome, b.Detail = string(r.Outcome), r.Detail
			if r.TrashPath != "" && r.Detail == "" {
				b.Detail = "JSON in " + r.TrashPath
			}
		} else {
			b.Outcome = "not done"
		}
		out = append(out, b)
	}
	return out
}
