package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/flinkmaint/flinkmaint/activities"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/kube"
)

// KubeOrphans adapts *kube.Client to activities.OrphanControl: leftover
// detection and guarded deletion, with errors mapped to cleanup's kinds.
type KubeOrphans struct {
	Client *kube.Client
}

var _ activities.OrphanControl = KubeOrphans{}

// orphanKinds maps kube's orphan kinds to the planner's object kinds.
var orphanKinds = map[kube.OrphanKind]cleanup.ItemKind{
	kube.OrphanTaskManagerPod:        cleanup.KindTaskManagerPod,
	kube.OrphanTaskManagerDeployment: cleanup.KindTaskManagerDeployment,
	kube.OrphanIdleJobManager:        cleanup.KindIdleJobManager,
	kube.OrphanHAConfigMap:           cleanup.KindHAConfigMap,
}

// FindOrphans runs kube.Client.FindOrphans in those of namespaces the
// Kubernetes inventory covers; a namespace only a static inventory file
// names is not this worker's to search.
func (k KubeOrphans) FindOrphans(ctx context.Context, namespaces []string, jobStates map[string][]string) ([]cleanup.Object, error) {
	covered, err := k.Client.Namespaces(ctx)
	if err != nil {
		return nil, cleanupObjectError(err)
	}
	ours := map[string]bool{}
	for _, ns := range covered {
		ours[ns] = true
	}
	var search []string
	for _, ns := range namespaces {
		if ours[ns] {
			search = append(search, ns)
		}
	}
	if len(search) == 0 {
		return nil, nil
	}
	found, err := k.Client.FindOrphans(ctx, kube.OrphanInput{Namespaces: search, JobStates: jobStates})
	if err != nil {
		return nil, cleanupObjectError(err)
	}
	out := make([]cleanup.Object, 0, len(found))
	for _, o := range found {
		kind, ok := orphanKinds[o.Kind]
		if !ok {
			return nil, fmt.Errorf("kube reported %s %s/%s as a leftover of kind %q, which the planner does not know", o.Ref.Kind, o.Ref.Namespace, o.Ref.Name, o.Kind)
		}
		out = append(out, cleanup.Object{Kind: kind, Ref: o.Ref, UID: o.UID, ResourceVersion: o.ResourceVersion, ClusterID: o.ClusterID,
			Created: o.Created, Since: o.LastWritten, Reason: o.Reason,
			Owner: cleanup.ObjectOwner{Kind: o.Owner.Kind, Name: o.Owner.Name, UID: o.Owner.UID, Exists: o.Owner.Exists}})
	}
	return out, nil
}

// ReadOrphan reads ref as JSON; see kube.Client.ReadOrphan.
func (k KubeOrphans) ReadOrphan(ctx context.Context, ref inventory.ObjectRef) (cleanup.ObjectSnapshot, error) {
	s, err := k.Client.ReadOrphan(ctx, ref)
	if err != nil {
		return cleanup.ObjectSnapshot{}, cleanupObjectError(err)
	}
	return cleanup.ObjectSnapshot{UID: s.UID, ResourceVersion: s.ResourceVersion, JSON: s.JSON}, nil
}

// DeleteOrphan deletes ref with UID and resourceVersion preconditions;
// see kube.Client.DeleteOrphan.
func (k KubeOrphans) DeleteOrphan(ctx context.Context, ref inventory.ObjectRef, uid, resourceVersion string) error {
	return cleanupObjectError(k.Client.DeleteOrphan(ctx, ref, uid, resourceVersion))
}

// cleanupObjectError maps kube errors to the kinds the cleanup executor acts on.
func cleanupObjectError(err error) error {
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, kube.ErrNotFound):
		return fmt.Errorf("%w: %w", cleanup.ErrObjectNotFound, err)
	case errors.Is(err, kube.ErrPrecondition):
		return fmt.Errorf("%w: %w", cleanup.ErrObjectChanged, err)
	case kube.IsRetryable(err):
		return fmt.Errorf("%w: %w", cleanup.ErrObjectsUnavailable, err)
	}
	return err
}
