package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/kube"
)

// KubeOrphans adapts the fleet's clients to activities.OrphanControl:
// leftover detection and guarded deletion, each in the Kubernetes cluster
// concerned, with errors mapped to cleanup's kinds.
type KubeOrphans struct {
	Fleet *KubeFleet
}

var _ core.OrphanControl = KubeOrphans{}

// orphanKinds maps kube's orphan kinds to the planner's object kinds.
var orphanKinds = map[kube.OrphanKind]cleanup.ItemKind{
	kube.OrphanTaskManagerPod:        cleanup.KindTaskManagerPod,
	kube.OrphanTaskManagerDeployment: cleanup.KindTaskManagerDeployment,
	kube.OrphanIdleJobManager:        cleanup.KindIdleJobManager,
	kube.OrphanHAConfigMap:           cleanup.KindHAConfigMap,
}

// FindOrphans runs kube.Client.FindOrphans in those of namespaces (keys,
// inventory.NamespaceKey) that the Kubernetes inventory covers, each in
// its cluster; a namespace only a static inventory file names is not this
// worker's to search. jobStates are keyed "<namespace key>/<cluster-id>".
func (k KubeOrphans) FindOrphans(ctx context.Context, namespaces []string, jobStates map[string][]string) ([]cleanup.Object, error) {
	byCluster, err := k.Fleet.byCluster(ctx, namespaces)
	if err != nil {
		return nil, cleanupObjectError(err)
	}
	var found []kube.Orphan
	for _, c := range k.Fleet.clients {
		if len(byCluster[c]) == 0 {
			continue
		}
		// kube keys job states by "<namespace>/<cluster-id>" of its own.
		states := map[string][]string{}
		for key, st := range jobStates {
			if c.Name() == "" {
				states[key] = st
			} else if rest, ok := strings.CutPrefix(key, c.Name()+"/"); ok {
				states[rest] = st
			}
		}
		part, err := c.FindOrphans(ctx, kube.OrphanInput{Namespaces: byCluster[c], JobStates: states})
		if err != nil {
			return nil, cleanupObjectError(err)
		}
		found = append(found, part...)
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
	c, err := k.Fleet.client(ref.KubeCluster)
	if err != nil {
		return cleanup.ObjectSnapshot{}, err
	}
	s, err := c.ReadOrphan(ctx, ref)
	if err != nil {
		return cleanup.ObjectSnapshot{}, cleanupObjectError(err)
	}
	return cleanup.ObjectSnapshot{UID: s.UID, ResourceVersion: s.ResourceVersion, JSON: s.JSON}, nil
}

// DeleteOrphan deletes ref with UID and resourceVersion preconditions;
// see kube.Client.DeleteOrphan.
func (k KubeOrphans) DeleteOrphan(ctx context.Context, ref inventory.ObjectRef, uid, resourceVersion string) error {
	c, err := k.Fleet.client(ref.KubeCluster)
	if err != nil {
		return err
	}
	return cleanupObjectError(c.DeleteOrphan(ctx, ref, uid, resourceVersion))
}

// RecreateObject re-creates a trashed object in its Kubernetes cluster;
// see kube.Client.RecreateObject.
func (k KubeOrphans) RecreateObject(ctx context.Context, ref inventory.ObjectRef, json []byte, runID string) ([]string, error) {
	c, err := k.Fleet.client(ref.KubeCluster)
	if err != nil {
		return nil, err
	}
	made, err := c.RecreateObject(ctx, ref, json, runID)
	switch {
	case errors.Is(err, kube.ErrExists):
		return nil, fmt.Errorf("%w: %w", cleanup.ErrObjectExists, err)
	case errors.Is(err, kube.ErrNotRecreatable):
		return nil, fmt.Errorf("%w: %w", cleanup.ErrObjectNotRecreatable, err)
	case err != nil:
		return nil, cleanupObjectError(err)
	}
	return made.Changed, nil
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
