package cleanup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// fakeObjects is an in-memory ObjectStore for the executor's decisions;
// the real apiserver is exercised by the activities' governance test.
type fakeObjects struct {
	mu      sync.Mutex
	objs    map[string]*Object // by ObjectPath
	deletes []string
	// unreported objects exist but detection no longer reports them.
	unreported map[string]bool
	// getErr fails the next Get; afterDelete runs after a successful delete.
	getErr      error
	afterDelete func()
}

func newFakeObjects(objs ...Object) *fakeObjects {
	f := &fakeObjects{objs: map[string]*Object{}, unreported: map[string]bool{}}
	for i := range objs {
		o := objs[i]
		f.objs[ObjectPath(o.Ref)] = &o
	}
	return f
}

func (f *fakeObjects) Find(_ context.Context, ns, _ string) ([]Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Object
	for p, o := range f.objs {
		if o.Ref.Namespace == ns && !f.unreported[p] {
			out = append(out, *o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ref.Name < out[j].Ref.Name })
	return out, nil
}

func (f *fakeObjects) Get(_ context.Context, ref inventory.ObjectRef) (ObjectSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.getErr; err != nil {
		f.getErr = nil
		return ObjectSnapshot{}, err
	}
	o, ok := f.objs[ObjectPath(ref)]
	if !ok {
		return ObjectSnapshot{}, fmt.Errorf("%w: %s", ErrObjectNotFound, ref.Name)
	}
	js, _ := json.Marshal(map[string]any{"apiVersion": ref.APIVersion, "kind": ref.Kind,
		"metadata": map[string]any{"name": ref.Name, "namespace": ref.Namespace, "uid": o.UID, "resourceVersion": o.ResourceVersion}})
	return ObjectSnapshot{UID: o.UID, ResourceVersion: o.ResourceVersion, JSON: js}, nil
}

func (f *fakeObjects) Delete(_ context.Context, ref inventory.ObjectRef, uid, rv string) error {
	f.mu.Lock()
	p := ObjectPath(ref)
	o, ok := f.objs[p]
	switch {
	case !ok:
		f.mu.Unlock()
		return nil
	case o.UID != uid || o.ResourceVersion != rv:
		f.mu.Unlock()
		return fmt.Errorf("%w: precondition failed for %s", ErrObjectChanged, ref.Name)
	}
	delete(f.objs, p)
	f.deletes = append(f.deletes, p)
	after := f.afterDelete
	f.mu.Unlock()
	if after != nil {
		after()
	}
	return nil
}

func (f *fakeObjects) update(name string, fn func(o *Object)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range f.objs {
		if o.Ref.Name == name {
			fn(o)
			return
		}
	}
	panic("no object " + name)
}

func (f *fakeObjects) remove(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for p, o := range f.objs {
		if o.Ref.Name == name {
			delete(f.objs, p)
		}
	}
}

func (f *fakeObjects) deleted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.deletes...)
}

// objectPlan plans leftovers created a day ago with a 1h TTL.
func objectPlan(t *testing.T, action Action, objs ...Object) Plan {
	t.Helper()
	p, err := BuildPlan(Input{Now: time.Now(), Policy: Policy{OrphanTTL: time.Hour, Action: action}, Objects: objs})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Objects) != len(objs) {
		t.Fatalf("planned %+v kept %+v; want all %d objects planned", p.Objects, p.KeepObjects, len(objs))
	}
	return p
}

func dayOld(kind ItemKind, name string) Object {
	return orphan(kind, name, time.Now().Add(-24*time.Hour))
}

func TestExecutorObjects(t *testing.T) {
	e := newLocalEnv(t)
	pod, cm, gone, readopted := dayOld(KindTaskManagerPod, "gone-taskmanager-1-1"), dayOld(KindHAConfigMap, "gone-cluster-config-map"),
		dayOld(KindTaskManagerPod, "gone-taskmanager-1-2"), dayOld(KindTaskManagerDeployment, "gone-taskmanager")
	touched, idle := dayOld(KindHAConfigMap, "gone-job-config-map"), dayOld(KindIdleJobManager, "idle")
	idle.Since = time.Now().Add(-2 * time.Hour)
	store := newFakeObjects(pod, cm, gone, readopted, touched, idle)
	plan := objectPlan(t, ActionTrash, pod, cm, gone, readopted, touched, idle)

	// Between planning and execution: one pod goes away, a ConfigMap is
	// relabelled (new resourceVersion), a deployment is no longer reported
	// (its JobManager came back), and the idle JobManager runs a job that
	// just ended.
	store.remove(gone.Ref.Name)
	store.update(touched.Ref.Name, func(o *Object) { o.ResourceVersion = "8" })
	store.unreported[ObjectPath(readopted.Ref)] = true
	store.update(idle.Ref.Name, func(o *Object) { o.Since = time.Now().Add(-time.Minute) })

	var progress []Progress
	ex := e.executor("objs", func(c *ExecutorConfig) {
		c.Objects = store
		c.Progress = func(p Progress) { progress = append(progress, p) }
	})
	res, err := ex.Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		outcome Outcome
		detail  string
	}{
		ObjectPath(pod.Ref):       {OutcomeTrashed, ""},
		ObjectPath(cm.Ref):        {OutcomeTrashed, ""},
		ObjectPath(gone.Ref):      {OutcomeGone, "no longer exists"},
		ObjectPath(readopted.Ref): {OutcomeRefused, "no longer a leftover"},
		ObjectPath(touched.Ref):   {OutcomeRefused, "resourceVersion is 8, planned 7"},
		ObjectPath(idle.Ref):      {OutcomeRefused, "now kept (within-ttl)"},
	}
	recs, err := ReadManifest(context.Background(), e.fs, "file://"+e.trash+"/_audit", "objs")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(want) {
		t.Fatalf("manifest %+v; want one record per object", recs)
	}
	for _, r := range recs {
		w, ok := want[r.Path]
		if !ok || r.Outcome != w.outcome || !strings.Contains(r.Detail, w.detail) || r.UID == "" || r.Rule == "" || r.Kind == "" {
			t.Errorf("record %+v; want %+v", r, w)
		}
		if r.Outcome == OutcomeTrashed {
			wantTrash := "file://" + e.trash + "/objs/kubernetes/team-t/" + strings.TrimPrefix(r.Path, ObjectScheme+"team-t/") + ".json"
			if r.TrashPath != wantTrash {
				t.Errorf("%s trash path %s; want %s", r.Path, r.TrashPath, wantTrash)
			}
			data, err := os.ReadFile(strings.TrimPrefix(r.TrashPath, "file://"))
			var obj struct {
				Kind     string `json:"kind"`
				Metadata struct {
					UID string `json:"uid"`
				} `json:"metadata"`
			}
			if err != nil || json.Unmarshal(data, &obj) != nil || obj.Metadata.UID != r.UID || obj.Kind == "" {
				t.Errorf("trash copy of %s: %v %s", r.Path, err, data)
			}
		} else if _, err := os.Stat(filepath.Join(e.trash, "objs", "kubernetes", "team-t", "configmap", touched.Ref.Name+".json")); err == nil {
			t.Errorf("refused %s has a trash copy", r.Path)
		}
	}
	if got := store.deleted(); len(got) != 2 {
		t.Fatalf("deleted %v; want the pod and the ConfigMap only", got)
	}
	if res.Total != 6 || res.ObjectsRemoved != 2 || res.Counts[OutcomeRefused] != 3 || len(res.Refused) != 3 {
		t.Fatalf("result %+v", res)
	}
	if len(progress) != 6 || progress[5].Done != 6 || progress[5].Total != 6 {
		t.Fatalf("progress %+v", progress)
	}

	// Again: every object has a final record, nothing is redone (not
	// even re-checked: no new manifest segment).
	segs, _ := filepath.Glob(filepath.Join(e.trash, "_audit", "objs", "manifest-*.jsonl"))
	res2, err := e.executor("objs", func(c *ExecutorConfig) { c.Objects = store }).Run(context.Background(), plan)
	if err != nil || res2.ObjectsRemoved != 2 || len(store.deleted()) != 2 {
		t.Fatalf("rerun: %+v %v, deletes %v", res2, err, store.deleted())
	}
	if again, _ := filepath.Glob(filepath.Join(e.trash, "_audit", "objs", "manifest-*.jsonl")); len(again) != len(segs) {
		t.Fatalf("rerun wrote manifest segments %v (before %v)", again, segs)
	}
}

// TestExecutorObjectsResume: a worker that died after deleting but before
// writing the outcome leaves only the intent record; the next attempt
// finds the object gone and records what happened, without failing.
func TestExecutorObjectsResume(t *testing.T) {
	for name, action := range map[string]Action{"trash": ActionTrash, "delete": ActionDelete} {
		t.Run(name, func(t *testing.T) {
			e := newLocalEnv(t)
			pod := dayOld(KindTaskManagerPod, "gone-taskmanager-1-1")
			store := newFakeObjects(pod)
			plan := objectPlan(t, action, pod)
			if _, err := e.executor("r", func(c *ExecutorConfig) { c.Objects = store }).Run(context.Background(), plan); err != nil {
				t.Fatal(err)
			}
			// Drop the outcome segment, as a crash before writing it would.
			segs, _ := filepath.Glob(filepath.Join(e.trash, "_audit", "r", "manifest-*.jsonl"))
			sort.Strings(segs)
			if len(segs) != 2 {
				t.Fatalf("segments %v; want intent and outcome", segs)
			}
			if err := os.Remove(segs[1]); err != nil {
				t.Fatal(err)
			}
			res, err := e.executor("r", func(c *ExecutorConfig) { c.Objects = store }).Run(context.Background(), plan)
			if err != nil {
				t.Fatal(err)
			}
			want, detail := OutcomeTrashed, "found in trash on resume"
			if action == ActionDelete {
				want, detail = OutcomeDeleted, "found deleted on resume"
			}
			recs, err := ReadManifest(context.Background(), e.fs, "file://"+e.trash+"/_audit", "r")
			if err != nil || len(recs) != 1 || recs[0].Outcome != want || recs[0].Detail != detail || res.ObjectsRemoved != 1 {
				t.Fatalf("after resume: %+v %v, result %+v; want %s (%s)", recs, err, res, want, detail)
			}
			if len(store.deleted()) != 1 {
				t.Fatalf("deleted %v", store.deleted())
			}
		})
	}
}

func TestExecutorObjectsFailures(t *testing.T) {
	t.Run("apiserver unavailable is retried, then done", func(t *testing.T) {
		e := newLocalEnv(t)
		pod := dayOld(KindTaskManagerPod, "p")
		store := newFakeObjects(pod)
		store.getErr = fmt.Errorf("%w: 503", ErrObjectsUnavailable)
		plan := objectPlan(t, ActionTrash, pod)
		_, err := e.executor("f", func(c *ExecutorConfig) { c.Objects = store }).Run(context.Background(), plan)
		if err == nil || !IsRetryable(err) {
			t.Fatalf("want a retryable error, got %v", err)
		}
		res, err := e.executor("f", func(c *ExecutorConfig) { c.Objects = store }).Run(context.Background(), plan)
		if err != nil || res.ObjectsRemoved != 1 {
			t.Fatalf("retry: %+v %v", res, err)
		}
	})
	t.Run("recreated under the same name", func(t *testing.T) {
		e := newLocalEnv(t)
		pod := dayOld(KindTaskManagerPod, "p")
		store := newFakeObjects(pod)
		plan := objectPlan(t, ActionDelete, pod)
		store.update("p", func(o *Object) { o.UID = "new-uid" })
		res, err := e.executor("u", func(c *ExecutorConfig) { c.Objects = store }).Run(context.Background(), plan)
		if err != nil || len(res.Refused) != 1 || !strings.Contains(res.Refused[0].Detail, "recreated") || len(store.deleted()) != 0 {
			t.Fatalf("%+v %v", res, err)
		}
	})
	t.Run("changed between the check and the delete", func(t *testing.T) {
		e := newLocalEnv(t)
		pod := dayOld(KindTaskManagerPod, "p")
		store := &racingObjects{fakeObjects: newFakeObjects(pod)}
		plan := objectPlan(t, ActionTrash, pod)
		res, err := e.executor("c", func(c *ExecutorConfig) { c.Objects = store }).Run(context.Background(), plan)
		if err != nil || len(res.Refused) != 1 || !strings.Contains(res.Refused[0].Detail, "refused the delete") {
			t.Fatalf("%+v %v", res, err)
		}
		if _, err := os.Stat(filepath.Join(e.trash, "c", "kubernetes", "team-t", "pod", "p.json")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the trash keeps a copy of an object that was not deleted: %v", err)
		}
	})
	t.Run("plan with objects needs Kubernetes access", func(t *testing.T) {
		e := newLocalEnv(t)
		plan := objectPlan(t, ActionTrash, dayOld(KindTaskManagerPod, "p"))
		if _, err := e.executor("n", nil).Run(context.Background(), plan); !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("want ErrInvalidConfig, got %v", err)
		}
	})
	t.Run("tampered plan", func(t *testing.T) {
		e := newLocalEnv(t)
		for what, mod := range map[string]func(it *ObjectItem){
			"path":      func(it *ObjectItem) { it.Path = "kubernetes://other/pod/p" },
			"rule":      func(it *ObjectItem) { it.Rule = RuleOrphanHAConfigMap },
			"name":      func(it *ObjectItem) { it.Ref.Name = "../../etc"; it.Path = ObjectPath(it.Ref) },
			"no uid":    func(it *ObjectItem) { it.UID = "" },
			"bad kind":  func(it *ObjectItem) { it.Kind = "secret" },
			"no rv":     func(it *ObjectItem) { it.ResourceVersion = "" },
			"api group": func(it *ObjectItem) { it.Ref.APIVersion = "apps/v1" },
		} {
			plan := objectPlan(t, ActionTrash, dayOld(KindTaskManagerPod, "p"))
			mod(&plan.Objects[0])
			if _, err := e.executor("t", func(c *ExecutorConfig) { c.Objects = newFakeObjects() }).Run(context.Background(), plan); !errors.Is(err, ErrInvalidPlan) {
				t.Errorf("%s: want ErrInvalidPlan, got %v", what, err)
			}
		}
	})
}

// racingObjects changes the object after the executor's checks and before
// its delete, as a concurrent writer would.
type racingObjects struct {
	*fakeObjects
}

func (r *racingObjects) Delete(ctx context.Context, ref inventory.ObjectRef, uid, rv string) error {
	r.update(ref.Name, func(o *Object) { o.ResourceVersion = "99" })
	return r.fakeObjects.Delete(ctx, ref, uid, rv)
}

// TestObjectTrashIsApartFromPathItems: in trash mode the JSON of the
// plan's Kubernetes objects goes under <trash>/<run>/kubernetes; a path
// item whose own trash copy would land there (a root called /kubernetes)
// is refused before anything moves. In delete mode nothing is copied, so
// nothing can collide.
func TestObjectTrashIsApartFromPathItems(t *testing.T) {
	e := newLocalEnv(t)
	guard, err := storage.NewGuard("/kubernetes", e.trash)
	if err != nil {
		t.Fatal(err)
	}
	pod := dayOld(KindTaskManagerPod, "gone-taskmanager-1-1")
	for _, action := range []Action{ActionTrash, ActionDelete} {
		plan := objectPlan(t, action, pod)
		plan.Delete = []Item{{Path: "file:///kubernetes/team-t/pod/x", Kind: KindSharedFile, Rule: RuleUnreferencedState, Files: 1}}
		ex := e.executor("apart-"+string(action), func(c *ExecutorConfig) {
			c.FS, c.Guard, c.Objects = storage.NewLocal(guard), guard, newFakeObjects(pod)
		})
		err := ex.validate(plan)
		if refused := err != nil && strings.Contains(err.Error(), "where the plan's Kubernetes objects go"); refused != (action == ActionTrash) {
			t.Errorf("%s: validate %v; want refused only in trash mode", action, err)
		}
	}
}

// TestAnObjectWhoseTrashCopyFailsIsNotDeleted: in trash mode an object is
// deleted only after its JSON is in the trash; a copy that cannot be
// written (here a directory squats on its path) leaves the object alone.
func TestAnObjectWhoseTrashCopyFailsIsNotDeleted(t *testing.T) {
	e := newLocalEnv(t)
	pod := dayOld(KindTaskManagerPod, "gone-taskmanager-1-1")
	store := newFakeObjects(pod)
	plan := objectPlan(t, ActionTrash, pod)
	ex := e.executor("squat", func(c *ExecutorConfig) { c.Objects = store })
	squat := strings.TrimPrefix(ex.objectTrashPath(plan.Objects[0]), "file://")
	if err := os.MkdirAll(filepath.Join(squat, "in-the-way"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := ex.Run(context.Background(), plan)
	if got := store.deleted(); len(got) != 0 {
		t.Fatalf("deleted %v although its trash copy %s could not be written (result %+v, %v)", got, squat, res, err)
	}
	if err == nil && res.ObjectsRemoved != 0 {
		t.Fatalf("result %+v; want nothing removed", res)
	}
}
