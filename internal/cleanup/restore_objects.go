package cleanup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// ObjectRecreator re-creates a Kubernetes object a run deleted, from the
// JSON the run wrote to its trash. Errors match ErrObjectExists (an object
// is there again under that name), ErrObjectNotRecreatable (the kind is
// not put back by a restore; the error says why), ErrObjectsUnavailable
// (worth a retry); anything else refuses the object with the error.
type ObjectRecreator interface {
	Recreate(ctx context.Context, ref inventory.ObjectRef, json []byte, runID string) (changed []string, err error)
}

// Errors of an ObjectRecreator.
var (
	ErrObjectExists         = errors.New("cleanup: Kubernetes object exists again")
	ErrObjectNotRecreatable = errors.New("cleanup: Kubernetes object not re-created by a restore")
)

// KindSnapshotResource is the manifest kind of a FlinkStateSnapshot
// resource a restore re-created with its savepoint.
const KindSnapshotResource ItemKind = "flinkstatesnapshot"

// objectKindNames maps the lower-case kind of an object path or trash
// path to the Kubernetes kind.
var objectKindNames = map[string]string{"configmap": "ConfigMap", "pod": "Pod", "deployment": "Deployment",
	"flinkstatesnapshot": inventory.KindFlinkStateSnapshot}

// trashedObject is the JSON of an object in a run's trash.
type trashedObject struct {
	ref       inventory.ObjectRef
	trashPath string
}

// objectRefOf reads the object a path under <runTrash>/kubernetes/ (or an
// object's manifest path) names: [<kube-cluster>/]<namespace>/<kind>/<name>[.json].
func objectRefOf(rel string) (inventory.ObjectRef, bool) {
	rel = strings.TrimSuffix(rel, ".json")
	parts := strings.Split(rel, "/")
	if len(parts) < 3 || len(parts) > 4 {
		return inventory.ObjectRef{}, false
	}
	kind, ok := objectKindNames[parts[len(parts)-2]]
	if !ok {
		return inventory.ObjectRef{}, false
	}
	ref := inventory.ObjectRef{Kind: kind, Namespace: parts[len(parts)-3], Name: parts[len(parts)-1]}
	if len(parts) == 4 {
		ref.KubeCluster = parts[0]
	}
	if !namespacePattern.MatchString(ref.Namespace) || !objectNamePattern.MatchString(ref.Name) {
		return inventory.ObjectRef{}, false
	}
	return ref, true
}

// trashedSnapshots lists the FlinkStateSnapshot JSON files of a run's
// trash: the resources deleted with its savepoints.
func trashedSnapshots(ctx context.Context, fsys storage.FileSystem, runTrash string) ([]trashedObject, error) {
	dir := runTrash + "/" + objectTrashDir
	var out []trashedObject
	var walk func(d string, depth int) error
	walk = func(d string, depth int) error {
		var subs []string
		err := fsys.List(ctx, d, 0, func(b []storage.FileInfo) error {
			for _, fi := range b {
				switch {
				case fi.IsDir && depth < 3:
					subs = append(subs, fi.Path)
				case !fi.IsDir && strings.HasSuffix(fi.Name, ".json"):
					rel := strings.TrimPrefix(pathPart(fi.Path), pathPart(dir)+"/")
					if ref, ok := objectRefOf(rel); ok && ref.Kind == inventory.KindFlinkStateSnapshot {
						out = append(out, trashedObject{ref: ref, trashPath: fi.Path})
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, s := range subs {
			if err := walk(s, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(dir, 0); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, classify("list the trashed Kubernetes objects", dir, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].trashPath < out[j].trashPath })
	return out, nil
}

// snapshotSavepoint is the savepoint dir a FlinkStateSnapshot's JSON names.
func snapshotSavepoint(data []byte) string {
	var fss struct {
		Spec struct {
			Savepoint *struct {
				Path string `json:"path"`
			} `json:"savepoint"`
		} `json:"spec"`
		Status struct {
			Path string `json:"path"`
		} `json:"status"`
	}
	if json.Unmarshal(data, &fss) != nil || fss.Spec.Savepoint == nil {
		return ""
	}
	p := fss.Status.Path
	if p == "" {
		p = fss.Spec.Savepoint.Path
	}
	return strings.TrimSuffix(strings.TrimSuffix(p, "/"), "/"+layout.MetadataFileName)
}

// restoreObjects re-creates the Kubernetes objects of the run: the trashed
// objects selected (records), and the FlinkStateSnapshot resources of the
// savepoints now back (back: their normalized original paths). prev is
// what earlier restores recorded, by object path.
func restoreObjects(ctx context.Context, cfg RestoreConfig, records []Record, back map[string]bool, runTrash string, prev map[string]Record, now func() time.Time) ([]Record, error) {
	type todo struct {
		rec  Record
		ref  inventory.ObjectRef
		data []byte // read lazily for records
	}
	var list []todo
	for _, r := range records {
		ref, ok := objectRefOf(strings.TrimPrefix(r.Path, ObjectScheme))
		if !ok {
			list = append(list, todo{rec: restoreRecord(r, OutcomeRefused, now(), fmt.Sprintf("the manifest's object path %q does not parse", r.Path))})
			continue
		}
		list = append(list, todo{rec: r, ref: ref})
	}
	if len(back) > 0 {
		snaps, err := trashedSnapshots(ctx, cfg.FS, runTrash)
		if err != nil {
			return nil, err
		}
		base := cfg.FS.URI().String()
		for _, s := range snaps {
			data, err := cfg.FS.ReadFile(ctx, s.trashPath, maxObjectJSON)
			if err != nil {
				return nil, classify("read a trashed FlinkStateSnapshot", s.trashPath, err)
			}
			sp, err := normPath(snapshotSavepoint(data), base)
			if err != nil || !back[sp] {
				continue
			}
			list = append(list, todo{rec: Record{Path: ObjectPath(s.ref), Kind: KindSnapshotResource, Outcome: OutcomeTrashed, TrashPath: s.trashPath,
				Detail: "deleted with savepoint " + sp}, ref: s.ref, data: data})
		}
	}
	var out []Record
	for _, t := range list {
		if t.rec.Outcome == OutcomeRefused {
			out = append(out, t.rec)
			continue
		}
		refuse := func(why string) { out = append(out, restoreRecord(t.rec, OutcomeRefused, now(), why)) }
		if p := prev[t.rec.Path]; p.Outcome == OutcomeRestored {
			out = append(out, restoreRecord(t.rec, OutcomeRestored, now(), AlreadyBack))
			continue
		}
		if cfg.Objects == nil {
			refuse("this worker has no Kubernetes access: re-create it from " + t.rec.TrashPath + " with kubectl create -f after removing metadata.uid, metadata.resourceVersion and status")
			continue
		}
		if want := runTrash + "/" + objectTrashDir + "/" + t.ref.NamespaceKey() + "/" + strings.ToLower(t.ref.Kind) + "/" + t.ref.Name + ".json"; t.rec.TrashPath != want {
			refuse(fmt.Sprintf("the manifest names trash path %q, not %q where run %s puts this object: the manifest does not match the run", t.rec.TrashPath, want, cfg.RunID))
			continue
		}
		if cfg.DryRun {
			out = append(out, restoreRecord(t.rec, OutcomeStarted, now(), "would be re-created from "+t.rec.TrashPath))
			continue
		}
		data := t.data
		if data == nil {
			var err error
			data, err = cfg.FS.ReadFile(ctx, t.rec.TrashPath, maxObjectJSON)
			if errors.Is(err, storage.ErrNotFound) {
				refuse("its JSON is not in the trash any more (" + t.rec.TrashPath + "): purged or removed")
				continue
			}
			if err != nil {
				return out, classify("read a trashed object", t.rec.TrashPath, err)
			}
		}
		changed, err := cfg.Objects.Recreate(ctx, t.ref, data, cfg.RunID)
		switch {
		case err == nil:
			detail := "re-created from " + t.rec.TrashPath
			if len(changed) > 0 {
				detail += "; " + strings.Join(changed, "; ")
			}
			out = append(out, restoreRecord(t.rec, OutcomeRestored, now(), detail))
		case errors.Is(err, ErrObjectExists):
			refuse("an object of that name exists again: nothing is overwritten; its JSON stays at " + t.rec.TrashPath)
		case errors.Is(err, ErrObjectsUnavailable), ctx.Err() != nil:
			return out, &Error{Op: "re-create", Path: t.rec.Path, Retryable: true, Err: err}
		default:
			refuse(err.Error() + "; its JSON stays at " + t.rec.TrashPath)
		}
	}
	return out, nil
}
