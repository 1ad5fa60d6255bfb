package cleanup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/storage"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/mdwrite"
)

// fakeSnapshots is an in-memory SnapshotStore that applies the
// preconditions the apiserver applies; the real apiserver is exercised by
// kube's and the activities' tests.
type fakeSnapshots struct {
	mu  sync.Mutex
	res map[string]*inventory.SnapshotResource // by name
	ops []string
}

func (f *fakeSnapshots) ReadSnapshot(_ context.Context, ref inventory.ObjectRef) (inventory.SnapshotResource, []byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.res[ref.Name]
	if !ok {
		return inventory.SnapshotResource{}, nil, fmt.Errorf("%w: %s", ErrObjectNotFound, ref.Name)
	}
	data, _ := json.Marshal(map[string]any{"metadata": map[string]any{"name": ref.Name, "uid": s.UID},
		"spec": map[string]any{"savepoint": map[string]any{}}, "status": map[string]any{"path": s.Path}})
	return *s, data, nil
}

func (f *fakeSnapshots) DeleteSnapshot(_ context.Context, ref inventory.ObjectRef, uid, rv string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.res[ref.Name]
	if !ok {
		return nil
	}
	if s.UID != uid || s.ResourceVersion != rv {
		return fmt.Errorf("%w: %s", ErrObjectChanged, ref.Name)
	}
	if s.DisposeOnDelete {
		f.ops = append(f.ops, "disposeOnDelete=false "+ref.Name)
	}
	f.ops = append(f.ops, "delete "+ref.Name)
	delete(f.res, ref.Name)
	return nil
}

// TestExecutorDeletesSnapshotResourcesWithTheirSavepoint: the resource is
// deleted (without disposal) right before its savepoint goes to the
// trash, its JSON kept there; a resource created or recreated since
// planning keeps the savepoint.
func TestExecutorDeletesSnapshotResourcesWithTheirSavepoint(t *testing.T) {
	setup := func(t *testing.T) (*localEnv, Plan, LiveRecord, *fakeSnapshots) {
		e := newLocalEnv(t)
		var sps []string
		for i, name := range []string{"savepoint-aaaaaa-000000000001", "savepoint-aaaaaa-000000000002"} {
			e.file("savepoints/"+name+"/state", 10, e.past)
			sps = append(sps, e.metadata("savepoints/"+name, mdwrite.Savepoint("state"), e.past.Add(time.Duration(i)*time.Minute)))
		}
		rec := snapshotRecord("done", sps[0], inventory.SnapshotCompleted, true)
		plan := e.plan(Live{Records: []LiveRecord{rec}}, Policy{KeepSavepoints: 1})
		if len(plan.Delete) != 1 || plan.Delete[0].Path != sps[0] || len(plan.Delete[0].Snapshots) != 1 {
			t.Fatalf("plan %+v; want %s with resource done", plan.Delete, sps[0])
		}
		r := *rec.Snapshot
		store := &fakeSnapshots{res: map[string]*inventory.SnapshotResource{"done": &r.SnapshotResource}}
		return e, plan, rec, store
	}
	liveOf := func(recs ...LiveRecord) func(context.Context) (Live, error) {
		return func(context.Context) (Live, error) {
			return Live{Clusters: []LiveCluster{{ClusterID: "c1"}}, Records: recs}, nil
		}
	}

	t.Run("deleted with it", func(t *testing.T) {
		e, plan, rec, store := setup(t)
		res, err := e.executor("r1", func(c *ExecutorConfig) { c.Snapshots, c.Live = store, liveOf(rec) }).Run(context.Background(), plan)
		if err != nil || res.Counts[OutcomeTrashed] != 1 {
			t.Fatalf("result %+v err %v", res, err)
		}
		if want := []string{"disposeOnDelete=false done", "delete done"}; strings.Join(store.ops, ",") != strings.Join(want, ",") {
			t.Errorf("operations %v; want %v", store.ops, want)
		}
		if e.exists(plan.Delete[0].Path) {
			t.Error("savepoint still in place")
		}
		if _, err := os.Stat(filepath.Join(e.trash, "r1", "kubernetes", "ns", "flinkstatesnapshot", "done.json")); err != nil {
			t.Errorf("resource JSON not in the trash: %v", err)
		}
		recs, err := ReadManifest(context.Background(), e.fs, "file://"+e.trash+"/_audit", "r1")
		if err != nil {
			t.Fatal(err)
		}
		last := recs[len(recs)-1]
		if len(last.Resources) != 1 || !strings.Contains(last.Resources[0], "FlinkStateSnapshot ns/done (uid uid-done) deleted") {
			t.Errorf("manifest record %+v; want the resource's deletion", last)
		}
	})
	t.Run("restored with it", func(t *testing.T) {
		e, plan, rec, store := setup(t)
		if _, err := e.executor("r1", func(c *ExecutorConfig) { c.Snapshots, c.Live = store, liveOf(rec) }).Run(context.Background(), plan); err != nil {
			t.Fatal(err)
		}
		fss := ObjectPath(rec.Snapshot.Ref)
		api := &fakeRecreator{}
		// Another savepoint selected: the resource stays in the trash.
		other, err := Restore(context.Background(), e.restoreConfig(func(c *RestoreConfig) { c.Objects, c.Paths = api, []string{"/nowhere/*"} }))
		if err != nil || len(other.Items) != 0 || len(api.created) != 0 {
			t.Fatalf("restore of nothing: %+v %v, created %v", other.Items, err, api.created)
		}
		res, err := Restore(context.Background(), e.restoreConfig(func(c *RestoreConfig) { c.Objects = api }))
		if err != nil {
			t.Fatal(err)
		}
		got := outcomes(res)
		if r := got[plan.Delete[0].Path]; r.Outcome != OutcomeRestored || !e.exists(plan.Delete[0].Path) {
			t.Fatalf("savepoint: %+v", r)
		}
		if r := got[fss]; r.Outcome != OutcomeRestored || r.Kind != KindSnapshotResource || !strings.Contains(string(api.created[fss]), plan.Delete[0].Path) {
			t.Fatalf("resource %s: %+v, created %s; want re-created with its savepoint", fss, r, api.created[fss])
		}
	})
	t.Run("a resource created since planning keeps it", func(t *testing.T) {
		e, plan, rec, store := setup(t)
		later := snapshotRecord("later", plan.Delete[0].Path, inventory.SnapshotCompleted, true)
		res, err := e.executor("r1", func(c *ExecutorConfig) { c.Snapshots, c.Live = store, liveOf(rec, later) }).Run(context.Background(), plan)
		if err != nil || res.Counts[OutcomeRefused] != 1 || !strings.Contains(res.Refused[0].Detail, "ns/later") {
			t.Fatalf("result %+v err %v; want refused, naming the new resource", res, err)
		}
		if len(store.ops) != 0 || !e.exists(plan.Delete[0].Path) {
			t.Errorf("operations %v, savepoint exists %v; want nothing touched", store.ops, e.exists(plan.Delete[0].Path))
		}
	})
	t.Run("recreated since planning", func(t *testing.T) {
		e, plan, _, store := setup(t)
		store.res["done"].UID = "uid-other"
		res, err := e.executor("r1", func(c *ExecutorConfig) { c.Snapshots, c.Live = store, liveOf() }).Run(context.Background(), plan)
		if err != nil || res.Counts[OutcomeRefused] != 1 || !strings.Contains(res.Refused[0].Detail, "recreated") {
			t.Fatalf("result %+v err %v; want refused as recreated", res, err)
		}
		if len(store.ops) != 0 || !e.exists(plan.Delete[0].Path) {
			t.Errorf("operations %v, savepoint exists %v; want nothing touched", store.ops, e.exists(plan.Delete[0].Path))
		}
	})
	t.Run("no Kubernetes access", func(t *testing.T) {
		e, plan, _, _ := setup(t)
		if _, err := e.executor("r1", nil).Run(context.Background(), plan); err == nil || !strings.Contains(err.Error(), "no Kubernetes access") {
			t.Fatalf("err %v; want the plan refused for want of Kubernetes access", err)
		}
	})
}

// TestOnlyASavepointByRetentionTakesItsResourcesWithIt: the executor
// refuses a plan whose FlinkStateSnapshot resources ride on anything but
// a savepoint dir planned by retention, or name anything but a completed
// FlinkStateSnapshot by a valid namespace and name.
func TestOnlyASavepointByRetentionTakesItsResourcesWithIt(t *testing.T) {
	e := newLocalEnv(t)
	sp := e.uri("savepoints/savepoint-aaaaaa-000000000001")
	valid := func() SnapshotRef { return *snapshotRecord("done", sp, inventory.SnapshotCompleted, true).Snapshot }
	item := func(kind ItemKind, rule Rule, s SnapshotRef) Plan {
		return Plan{Version: PlanVersion, Policy: Policy{Action: ActionTrash}, Roots: e.roots(),
			Delete: []Item{{Path: sp, Kind: kind, Rule: rule, Files: 1, Snapshots: []SnapshotRef{s}}}}
	}
	ex := e.executor("v", func(c *ExecutorConfig) { c.Snapshots = &fakeSnapshots{} })
	if err := ex.validate(item(KindSavepointDir, RuleSavepointRetention, valid())); err != nil {
		t.Fatalf("a savepoint by retention with a valid resource: %v; want it valid", err)
	}
	bad := map[string]Plan{
		"an incomplete savepoint": item(KindSavepointDir, RuleIncompleteSavepoint, valid()),
		"a checkpoint dir":        item(KindCheckpointDir, RuleSavepointRetention, valid()),
	}
	for name, mod := range map[string]func(*SnapshotRef){
		"another kind":         func(s *SnapshotRef) { s.Ref.Kind = "ConfigMap" },
		"a bad namespace":      func(s *SnapshotRef) { s.Ref.Namespace = "Bad_NS" },
		"a bad name":           func(s *SnapshotRef) { s.Ref.Name = "../x" },
		"a bad cluster":        func(s *SnapshotRef) { s.Ref.KubeCluster = "Bad/Cluster" },
		"an unfinished record": func(s *SnapshotRef) { s.State = "IN_PROGRESS" },
	} {
		s := valid()
		mod(&s)
		bad[name] = item(KindSavepointDir, RuleSavepointRetention, s)
	}
	for name, plan := range bad {
		if err := ex.validate(plan); !errors.Is(err, ErrInvalidPlan) {
			t.Errorf("%s: validate %v; want an invalid plan", name, err)
		}
	}
}

// TestSnapshotTrashIsApartFromPathItems: the JSON of the
// FlinkStateSnapshot resources goes under <trash>/<run>/kubernetes too; a
// path item whose trash copy would land there is refused, with no
// Kubernetes object in the plan.
func TestSnapshotTrashIsApartFromPathItems(t *testing.T) {
	e := newLocalEnv(t)
	guard, err := storage.NewGuard("/kubernetes", e.trash)
	if err != nil {
		t.Fatal(err)
	}
	sp := "file:///kubernetes/savepoints/savepoint-aaaaaa-000000000001"
	s := *snapshotRecord("done", sp, inventory.SnapshotCompleted, true).Snapshot
	plan := Plan{Version: PlanVersion, Policy: Policy{Action: ActionTrash},
		Delete: []Item{{Path: sp, Kind: KindSavepointDir, Rule: RuleSavepointRetention, Files: 1, Snapshots: []SnapshotRef{s}}}}
	ex := e.executor("apart", func(c *ExecutorConfig) { c.FS, c.Guard, c.Snapshots = storage.NewLocal(guard), guard, &fakeSnapshots{} })
	if err := ex.validate(plan); err == nil || !strings.Contains(err.Error(), "where the plan's Kubernetes objects go") {
		t.Fatalf("validate %v; want the savepoint refused for landing among the resources' JSON", err)
	}
}
