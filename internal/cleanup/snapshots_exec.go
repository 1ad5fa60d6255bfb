package cleanup

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// SnapshotStore is the executor's access to FlinkStateSnapshot resources.
// Errors match ErrObjectNotFound, ErrObjectChanged or
// ErrObjectsUnavailable (retryable) with errors.Is; anything else is final.
type SnapshotStore interface {
	// ReadSnapshot reads the resource as it is now, with its JSON.
	ReadSnapshot(ctx context.Context, ref inventory.ObjectRef) (inventory.SnapshotResource, []byte, error)
	// DeleteSnapshot deletes the resource only if its UID and
	// resourceVersion still match (ErrObjectChanged otherwise), first
	// setting disposeOnDelete to false so that the operator does not
	// dispose of the savepoint a second time. A resource already gone is
	// not an error.
	DeleteSnapshot(ctx context.Context, ref inventory.ObjectRef, uid, resourceVersion string) error
}

// snapshotTrashPath is where a deleted FlinkStateSnapshot's JSON goes, next
// to the objects': <TrashRoot>/<RunID>/kubernetes/[<kube-cluster>/]<ns>/flinkstatesnapshot/<name>.json.
func (e *Executor) snapshotTrashPath(s SnapshotRef) string {
	return e.cfg.TrashRoot + "/" + e.cfg.RunID + "/" + objectTrashDir + "/" + s.Ref.NamespaceKey() + "/" + strings.ToLower(s.Ref.Kind) + "/" + s.Ref.Name + ".json"
}

// validateSnapshots checks the resources the plan deletes with savepoints.
func (e *Executor) validateSnapshots(plan Plan, check func(string) error) error {
	seen := map[string]string{}
	for _, it := range plan.Delete {
		if len(it.Snapshots) == 0 {
			continue
		}
		if plan.Version < 3 {
			return invalidPlan("version %d cannot hold FlinkStateSnapshot resources, yet item %s lists %d", plan.Version, it.Path, len(it.Snapshots))
		}
		if it.Kind != KindSavepointDir || it.Rule != RuleSavepointRetention {
			return invalidPlan("item %s (%s by %s) lists FlinkStateSnapshot resources; only a %s by %s may", it.Path, it.Kind, it.Rule, KindSavepointDir, RuleSavepointRetention)
		}
		if e.cfg.Snapshots == nil {
			return &Error{Op: "validate plan", Kind: ErrInvalidConfig,
				Err: fmt.Errorf("item %s deletes %s but the executor has no Kubernetes access", it.Path, it.Snapshots[0])}
		}
		for _, s := range it.Snapshots {
			if s.Ref.Kind != inventory.KindFlinkStateSnapshot || !namespacePattern.MatchString(s.Ref.Namespace) || !objectNamePattern.MatchString(s.Ref.Name) ||
				(s.Ref.KubeCluster != "" && !namespacePattern.MatchString(s.Ref.KubeCluster)) {
				return invalidPlan("item %s: resource %+v is not a named FlinkStateSnapshot", it.Path, s.Ref)
			}
			if !s.releasable() {
				return invalidPlan("item %s: %s is not a completed savepoint resource with uid and resourceVersion", it.Path, s)
			}
			if prev, ok := seen[s.UID]; ok {
				return invalidPlan("%s (uid %s) listed with items %s and %s", s, s.UID, prev, it.Path)
			}
			seen[s.UID] = it.Path
			if plan.Policy.Action == ActionTrash {
				if err := check(e.snapshotTrashPath(s)); err != nil {
					return err
				}
			}
		}
	}
	if len(seen) == 0 {
		return nil
	}
	return e.checkObjectTrashApart(plan)
}

// releasedIn says which resources the plan deletes with which savepoint
// dir: the records the executor does not count as keeping it.
func releasedIn(plan Plan) func(dir string, r LiveRecord) bool {
	byUID := map[string]string{}
	for _, it := range plan.Delete {
		for _, s := range it.Snapshots {
			byUID[s.UID] = it.Path
		}
	}
	return func(dir string, r LiveRecord) bool { return byUID[r.Snapshot.UID] == dir }
}

// releaseSnapshots deletes the item's FlinkStateSnapshot resources right
// before the savepoint goes, each re-read and judged again: the same
// resource (UID), a completed savepoint, naming this item. It returns
// what was done for the manifest, and why the item must not be touched
// ("" if it may) or the error that stopped it.
func (r *run) releaseSnapshots(ctx context.Context, it Item) (done []string, refused string, err error) {
	store := r.e.cfg.Snapshots
	for _, s := range it.Snapshots {
		now, data, err := store.ReadSnapshot(ctx, s.Ref)
		if errors.Is(err, ErrObjectNotFound) {
			done = append(done, s.String()+" already gone")
			continue
		}
		if err != nil {
			return done, "", fmt.Errorf("read %s: %w", s, err)
		}
		dir := ""
		if n, err := r.canon.path(now.Path); err == nil {
			dir = strings.TrimSuffix(n, "/"+layout.MetadataFileName)
		}
		switch {
		case now.UID != s.UID:
			return done, fmt.Sprintf("%s was recreated since planning (uid %s, planned %s)", s, now.UID, s.UID), nil
		case now.Deleting && now.DisposeOnDelete:
			return done, s.String() + " is being deleted with disposeOnDelete: the operator disposes of the savepoint itself", nil
		case now.Deleting:
			done = append(done, s.String()+" already being deleted without disposal")
			continue
		case !now.Savepoint || now.State != inventory.SnapshotCompleted:
			return done, fmt.Sprintf("%s is now %s (savepoint %v), planned as a completed savepoint", s, now.State, now.Savepoint), nil
		case dir != it.Path:
			return done, fmt.Sprintf("%s now names %q, not this savepoint", s, now.Path), nil
		}
		what := s.String() + " (uid " + s.UID + ") deleted"
		if r.plan.Policy.Action == ActionTrash {
			trash := r.e.snapshotTrashPath(s)
			if err := r.writeObjectTrash(ctx, trash, ObjectSnapshot{UID: now.UID, ResourceVersion: now.ResourceVersion, JSON: data}); err != nil {
				return done, "", err
			}
			what += ", its JSON in " + trash
		}
		if now.DisposeOnDelete {
			what += ", disposeOnDelete set to false first so the operator does not dispose of the savepoint again"
		}
		if err := store.DeleteSnapshot(ctx, s.Ref, now.UID, now.ResourceVersion); err != nil {
			if errors.Is(err, ErrObjectChanged) {
				return done, fmt.Sprintf("the apiserver refused to delete %s: %v", s, err), r.dropObjectTrash(ctx, s)
			}
			return done, "", fmt.Errorf("delete %s: %w", s, err)
		}
		done = append(done, what)
	}
	return done, "", nil
}

// dropObjectTrash removes the JSON of a resource that was not deleted: the
// trash holds only what is gone.
func (r *run) dropObjectTrash(ctx context.Context, s SnapshotRef) error {
	if r.plan.Policy.Action != ActionTrash {
		return nil
	}
	if err := r.e.cfg.FS.Remove(ctx, r.e.snapshotTrashPath(s)); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return classify("remove JSON of a resource not deleted", r.e.snapshotTrashPath(s), err)
	}
	return nil
}
