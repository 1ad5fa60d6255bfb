package cleanup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// ObjectStore is the executor's access to Kubernetes. Errors match
// ErrObjectNotFound, ErrObjectChanged or ErrObjectsUnavailable (retryable)
// with errors.Is; anything else is final.
type ObjectStore interface {
	// Find runs leftover detection again in namespace (a key naming its
	// Kubernetes cluster too, inventory.NamespaceKey). idleCluster, when
	// not empty, names the cluster whose JobManager is judged for
	// idleness: its jobs are read afresh.
	Find(ctx context.Context, namespace, idleCluster string) ([]Object, error)
	// Get reads the object as it is now.
	Get(ctx context.Context, ref inventory.ObjectRef) (ObjectSnapshot, error)
	// Delete deletes the object only if its UID and resourceVersion still
	// match (ErrObjectChanged otherwise). An object already gone is not an
	// error.
	Delete(ctx context.Context, ref inventory.ObjectRef, uid, resourceVersion string) error
}

// ObjectSnapshot is an object as ObjectStore.Get read it.
type ObjectSnapshot struct {
	UID             string
	ResourceVersion string
	// JSON is the whole object, written to the trash before it is deleted.
	JSON []byte
}

// objectTrashDir is the directory under <TrashRoot>/<RunID> that holds
// trashed objects, <namespace>/<kind>/<name>.json below it.
const objectTrashDir = "kubernetes"

// maxObjectJSON bounds a trashed object read back on resume (a ConfigMap
// holds at most 1 MiB of data).
const maxObjectJSON = 8 << 20

func (e *Executor) objectTrashPath(it ObjectItem) string {
	return e.cfg.TrashRoot + "/" + e.cfg.RunID + "/" + objectTrashDir + "/" + it.Ref.NamespaceKey() + "/" + strings.ToLower(it.Ref.Kind) + "/" + it.Ref.Name + ".json"
}

// validateObjects checks the plan's Kubernetes objects as validate checks
// its paths: one bad object makes the whole plan invalid.
func (e *Executor) validateObjects(plan Plan, check func(string) error) error {
	if len(plan.Objects) == 0 {
		return nil
	}
	if e.cfg.Objects == nil {
		return &Error{Op: "validate plan", Kind: ErrInvalidConfig,
			Err: fmt.Errorf("the plan deletes %d Kubernetes objects but the executor has no Kubernetes access", len(plan.Objects))}
	}
	seen := map[string]bool{}
	for i, it := range plan.Objects {
		if err := checkObject(it.Kind, it.Ref); err != nil {
			return invalidPlan("object %d (%s): %v", i, it.Path, err)
		}
		if it.Path != ObjectPath(it.Ref) {
			return invalidPlan("object %d path %q; want %q for its ref", i, it.Path, ObjectPath(it.Ref))
		}
		if it.Rule != objectKinds[it.Kind].rule {
			return invalidPlan("object %s: rule %q does not select kind %s", it.Path, it.Rule, it.Kind)
		}
		if it.UID == "" || it.ResourceVersion == "" {
			return invalidPlan("object %s has no uid or resourceVersion; it cannot be deleted safely", it.Path)
		}
		if seen[it.Path] {
			return invalidPlan("object %s listed twice", it.Path)
		}
		seen[it.Path] = true
		if plan.Policy.Action == ActionTrash {
			if err := check(e.objectTrashPath(it)); err != nil {
				return err
			}
		}
	}
	return e.checkObjectTrashApart(plan)
}

// checkObjectTrashApart makes sure no path item's trash copy lands among
// the JSON of the Kubernetes objects and resources the plan deletes.
func (e *Executor) checkObjectTrashApart(plan Plan) error {
	if plan.Policy.Action != ActionTrash {
		return nil
	}
	for _, it := range plan.Delete {
		if under(stripScheme(it.Path), "/"+objectTrashDir) {
			return invalidPlan("item %s would be trashed under %s/%s/%s, where the plan's Kubernetes objects go", it.Path, e.cfg.TrashRoot, e.cfg.RunID, objectTrashDir)
		}
	}
	return nil
}

// objectLoop acts on the Kubernetes objects after the paths, in batches
// with the same manifest discipline: intent first, outcomes after. It
// returns the items that failed; err is a manifest or cancellation error.
func (r *run) objectLoop(ctx context.Context) ([]error, error) {
	var failures []error
	for start := 0; start < len(r.objTodo); start += r.e.cfg.BatchSize {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		batch := r.objTodo[start:min(start+r.e.cfg.BatchSize, len(r.objTodo))]
		intent := make([]Record, 0, len(batch))
		for _, it := range batch {
			intent = append(intent, r.objectRecord(it, OutcomeStarted, "", ""))
		}
		if err := r.man.append(ctx, intent); err != nil {
			return nil, err
		}
		// One object at a time: each is re-detected right before it is
		// deleted, and there are few of them.
		var recs []Record
		for _, it := range batch {
			if ctx.Err() != nil {
				break
			}
			rec := r.processObject(ctx, it)
			recs = append(recs, rec)
			r.mu.Lock()
			if rec.Outcome.final() {
				r.done++
			}
			p := Progress{RunID: r.e.cfg.RunID, Done: r.done, Total: r.total(), Last: rec}
			r.mu.Unlock()
			if r.e.cfg.Progress != nil {
				r.e.cfg.Progress(p)
			}
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), manifestWriteLimit)
		err := r.man.append(wctx, recs)
		cancel()
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			r.last[rec.Path] = rec
			if rec.Outcome == OutcomeFailed {
				failures = append(failures, &Error{Op: "act", Path: rec.Path, Retryable: rec.Retryable, Kind: kindFor(rec), Err: errors.New(rec.Detail)})
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return failures, nil
}

func (r *run) objectRecord(it ObjectItem, o Outcome, trash, detail string) Record {
	return Record{Path: it.Path, Kind: it.Kind, Rule: it.Rule, Outcome: o, Time: r.e.cfg.Now().UTC(), TrashPath: trash, Detail: detail,
		UID: it.UID, ResourceVersion: it.ResourceVersion}
}

// processObject re-verifies one object right before acting on it: it must
// still exist with the planned UID and resourceVersion, detection must
// still report it, and the planner's judgement must still delete it by
// the same rule. Then its JSON goes to the trash (trash mode) and it is
// deleted with UID and resourceVersion preconditions.
func (r *run) processObject(ctx context.Context, it ObjectItem) Record {
	store, fsys := r.e.cfg.Objects, r.e.cfg.FS
	trash := ""
	if r.plan.Policy.Action == ActionTrash {
		trash = r.e.objectTrashPath(it)
	}
	failed := func(op string, err error) Record {
		rec := r.objectRecord(it, OutcomeFailed, "", op+": "+err.Error())
		rec.Retryable = IsRetryable(err)
		return rec
	}
	refused := func(format string, args ...any) Record {
		why := fmt.Sprintf(format, args...)
		// The trash holds only objects that were deleted: drop a copy an
		// earlier attempt wrote before it could delete.
		if trash != "" {
			if err := fsys.Remove(ctx, trash); err != nil && !errors.Is(err, storage.ErrNotFound) {
				why += "; its JSON written by an earlier attempt could not be removed from " + trash + ": " + err.Error()
			}
		}
		return r.objectRecord(it, OutcomeRefused, "", why)
	}

	snap, err := store.Get(ctx, it.Ref)
	if errors.Is(err, ErrObjectNotFound) {
		o, tp, detail := r.vanished(ctx, it.Path, trash)
		return r.objectRecord(it, o, tp, detail)
	}
	if err != nil {
		return failed("read object", err)
	}
	if snap.UID != it.UID {
		return refused("uid is %s, planned %s: the object was recreated since planning", snap.UID, it.UID)
	}
	if snap.ResourceVersion != it.ResourceVersion {
		return refused("resourceVersion is %s, planned %s: the object changed since planning", snap.ResourceVersion, it.ResourceVersion)
	}
	idle := ""
	if it.Rule == RuleIdleJobManager {
		idle = it.ClusterID
	}
	found, err := store.Find(ctx, it.Ref.NamespaceKey(), idle)
	if err != nil {
		return failed("detect leftovers in "+it.Ref.NamespaceKey(), err)
	}
	var cur *Object
	for i := range found {
		if found[i].Ref.Kind == it.Ref.Kind && found[i].Ref.Name == it.Ref.Name {
			cur = &found[i]
			break
		}
	}
	switch {
	case cur == nil:
		return refused("no longer a leftover: detection in namespace %s does not report it any more", it.Ref.NamespaceKey())
	case cur.Unknown != "":
		return refused("now kept (%s): %s", KeepStatusUnknown, cur.Unknown)
	case cur.UID != it.UID:
		return refused("uid is %s, planned %s: the object was recreated since planning", cur.UID, it.UID)
	case cur.ResourceVersion != it.ResourceVersion:
		return refused("resourceVersion is %s, planned %s: the object changed since planning", cur.ResourceVersion, it.ResourceVersion)
	}
	rule, keep, why := JudgeObject(r.e.cfg.Now(), r.plan.Policy.ApplyDefaults(), *cur)
	if keep != "" {
		return refused("now kept (%s): %s", keep, why)
	}
	if rule != it.Rule {
		return refused("now selected by rule %s, planned by %s", rule, it.Rule)
	}
	if trash != "" {
		if err := r.writeObjectTrash(ctx, trash, snap); err != nil {
			return failed("write object to trash", err)
		}
	}
	if err := store.Delete(ctx, it.Ref, it.UID, it.ResourceVersion); err != nil {
		if errors.Is(err, ErrObjectChanged) {
			return refused("the apiserver refused the delete: %v", err)
		}
		return failed("delete", err)
	}
	if trash != "" {
		return r.objectRecord(it, OutcomeTrashed, trash, "")
	}
	return r.objectRecord(it, OutcomeDeleted, "", "")
}

// writeObjectTrash writes the object's JSON to trash. A copy an earlier
// attempt wrote of the same object is kept as it is.
func (r *run) writeObjectTrash(ctx context.Context, trash string, snap ObjectSnapshot) error {
	fsys := r.e.cfg.FS
	if err := fsys.MkdirAll(ctx, storage.ParentOf(trash)); err != nil {
		return classify("create trash dir", trash, err)
	}
	err := fsys.WriteFile(ctx, trash, snap.JSON)
	if err == nil {
		return nil
	}
	if !errors.Is(err, storage.ErrExist) {
		// HDFS can report a failed close after every byte was stored.
		if fi, serr := fsys.Stat(ctx, trash); serr == nil && fi.Size == int64(len(snap.JSON)) {
			return nil
		}
		return classify("write object to trash", trash, err)
	}
	data, rerr := fsys.ReadFile(ctx, trash, maxObjectJSON)
	if rerr != nil {
		return classify("read object in trash", trash, rerr)
	}
	var prev struct {
		Metadata struct {
			UID string `json:"uid"`
		} `json:"metadata"`
	}
	if json.Unmarshal(data, &prev) != nil || prev.Metadata.UID != snap.UID {
		return &Error{Op: "write object to trash", Path: trash, Err: fmt.Errorf("%s already holds another object (uid %q, want %s)", trash, prev.Metadata.UID, snap.UID)}
	}
	return nil
}
