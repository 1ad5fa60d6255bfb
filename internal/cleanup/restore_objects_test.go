package cleanup

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// fakeRecreator stands in for the apiserver's create: it keeps what was
// created by object path and refuses a name taken.
type fakeRecreator struct {
	mu      sync.Mutex
	created map[string][]byte
	taken   map[string]bool
}

func (f *fakeRecreator) Recreate(_ context.Context, ref inventory.ObjectRef, data []byte, runID string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := ObjectPath(ref)
	switch {
	case ref.Kind == "Pod" || ref.Kind == "Deployment":
		return nil, fmt.Errorf("%w: a %s runs a Flink process", ErrObjectNotRecreatable, ref.Kind)
	case f.taken[p] || f.created[p] != nil:
		return nil, fmt.Errorf("%w: %s", ErrObjectExists, ref.Name)
	}
	if f.created == nil {
		f.created = map[string][]byte{}
	}
	f.created[p] = data
	return []string{"annotated with run " + runID}, nil
}

// TestRestoreRecreatesTheRunsKubernetesObjects: an HA ConfigMap a run
// trashed is re-created from its JSON, once; a TaskManager pod is refused
// by kind; a name taken again is refused; without Kubernetes access each
// is refused, saying where its JSON is; a dry run creates nothing.
func TestRestoreRecreatesTheRunsKubernetesObjects(t *testing.T) {
	e := newLocalEnv(t)
	pod, cm := dayOld(KindTaskManagerPod, "gone-taskmanager-1-1"), dayOld(KindHAConfigMap, "gone-cluster-config-map")
	taken := dayOld(KindHAConfigMap, "gone-job-config-map")
	store := newFakeObjects(pod, cm, taken)
	if _, err := e.executor("r1", func(c *ExecutorConfig) { c.Objects = store }).Run(context.Background(), objectPlan(t, ActionTrash, pod, cm, taken)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	none, err := Restore(ctx, e.restoreConfig(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []Object{pod, cm, taken} {
		if r := outcomes(none)[ObjectPath(o.Ref)]; r.Outcome != OutcomeRefused || !strings.Contains(r.Detail, "no Kubernetes access") || !strings.Contains(r.Detail, r.TrashPath) {
			t.Errorf("without Kubernetes access, %s: %+v; want refused naming its JSON", o.Ref.Name, r)
		}
	}

	api := &fakeRecreator{taken: map[string]bool{ObjectPath(taken.Ref): true}}
	dry, err := Restore(ctx, e.restoreConfig(func(c *RestoreConfig) { c.Objects, c.DryRun = api, true }))
	if err != nil || len(api.created) != 0 || outcomes(dry)[ObjectPath(cm.Ref)].Outcome != OutcomeStarted {
		t.Fatalf("dry run: %+v %v, created %v", dry.Items, err, api.created)
	}

	res, err := Restore(ctx, e.restoreConfig(func(c *RestoreConfig) { c.Objects = api }))
	if err != nil {
		t.Fatal(err)
	}
	got := outcomes(res)
	if r := got[ObjectPath(cm.Ref)]; r.Outcome != OutcomeRestored || !strings.Contains(r.Detail, "annotated with run r1") || api.created[ObjectPath(cm.Ref)] == nil {
		t.Errorf("ConfigMap: %+v; want re-created from its JSON", r)
	}
	if !strings.Contains(string(api.created[ObjectPath(cm.Ref)]), `"name":"gone-cluster-config-map"`) {
		t.Errorf("re-created from %s; want the trashed JSON", api.created[ObjectPath(cm.Ref)])
	}
	if r := got[ObjectPath(pod.Ref)]; r.Outcome != OutcomeRefused || !strings.Contains(r.Detail, "runs a Flink process") {
		t.Errorf("pod: %+v; want refused by kind", r)
	}
	if r := got[ObjectPath(taken.Ref)]; r.Outcome != OutcomeRefused || !strings.Contains(r.Detail, "exists again") {
		t.Errorf("taken name: %+v; want refused, nothing overwritten", r)
	}

	again, err := Restore(ctx, e.restoreConfig(func(c *RestoreConfig) { c.Objects = api }))
	if err != nil {
		t.Fatal(err)
	}
	if r := outcomes(again)[ObjectPath(cm.Ref)]; r.Outcome != OutcomeRestored || r.Detail != AlreadyBack {
		t.Errorf("second restore, ConfigMap: %+v; want already back", r)
	}
}

// TestRestoreRefusesAnObjectTheManifestMisplaces: a manifest naming a
// trash path the run would not have written is not followed.
func TestRestoreRefusesAnObjectTheManifestMisplaces(t *testing.T) {
	ref, ok := objectRefOf("kube-a/team-t/configmap/gone-cluster-config-map.json")
	if !ok || ref.KubeCluster != "kube-a" || ref.Namespace != "team-t" || ref.Kind != "ConfigMap" || ref.Name != "gone-cluster-config-map" {
		t.Fatalf("objectRefOf: %+v %v", ref, ok)
	}
	for _, bad := range []string{"team-t/secret/x.json", "team-t/configmap/../x.json", "a/b/c/d/e.json", "team-t/configmap"} {
		if _, ok := objectRefOf(bad); ok {
			t.Errorf("objectRefOf(%q) parsed", bad)
		}
	}
	out, err := restoreObjects(context.Background(), RestoreConfig{Objects: &fakeRecreator{}, RunID: "r1"},
		[]Record{{Path: ObjectPath(ref), Outcome: OutcomeTrashed, TrashPath: "/trash/r1/elsewhere.json"}}, nil, "/trash/r1", nil, time.Now)
	if err != nil || len(out) != 1 || out[0].Outcome != OutcomeRefused || !strings.Contains(out[0].Detail, "does not match the run") {
		t.Fatalf("%+v %v; want refused", out, err)
	}
}
