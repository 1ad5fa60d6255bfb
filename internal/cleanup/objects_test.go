package cleanup

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// orphan builds a reported leftover in namespace team-t.
func orphan(kind ItemKind, name string, created time.Time) Object {
	ref := inventory.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "team-t", Name: name}
	switch kind {
	case KindTaskManagerDeployment, KindIdleJobManager:
		ref.APIVersion, ref.Kind = "apps/v1", "Deployment"
	case KindHAConfigMap:
		ref.Kind = "ConfigMap"
	}
	return Object{Kind: kind, Ref: ref, UID: "uid-" + name, ResourceVersion: "7", Tenant: "team-t", ClusterID: "gone",
		Created: created, Owner: ObjectOwner{Kind: "Deployment", Name: "gone", UID: "jm-uid"}, Reason: "its owner is gone"}
}

func TestPlanObjects(t *testing.T) {
	type want struct {
		rule   Rule
		reason Reason
		by     string // in the keep's By
	}
	hourAgo := now.Add(-time.Hour)
	cases := map[string]struct {
		ttl  time.Duration
		obj  func() Object
		want want
	}{
		"orphan TaskManager pod past the TTL": {time.Hour, func() Object { return orphan(KindTaskManagerPod, "gone-taskmanager-1-1", now.Add(-2*time.Hour)) },
			want{rule: RuleOrphanTaskManager}},
		"orphan TaskManager pod exactly at the TTL": {time.Hour, func() Object { return orphan(KindTaskManagerPod, "gone-taskmanager-1-1", hourAgo) },
			want{rule: RuleOrphanTaskManager}},
		"orphan TaskManager pod within the TTL": {3 * time.Hour, func() Object { return orphan(KindTaskManagerPod, "gone-taskmanager-1-1", hourAgo) },
			want{reason: KeepWithinTTL, by: "within orphanTTL 3h0m0s"}},
		"default TTL 24h keeps a day-old leftover": {0, func() Object { return orphan(KindTaskManagerPod, "p", now.Add(-23*time.Hour)) },
			want{reason: KeepWithinTTL, by: "orphanTTL 24h0m0s"}},
		"default TTL 24h deletes an older one": {0, func() Object { return orphan(KindTaskManagerPod, "p", now.Add(-25*time.Hour)) },
			want{rule: RuleOrphanTaskManager}},
		"orphan TaskManager deployment": {time.Hour, func() Object { return orphan(KindTaskManagerDeployment, "gone-taskmanager", old) },
			want{rule: RuleOrphanTaskManager}},
		"HA ConfigMap of a gone cluster": {time.Hour, func() Object { return orphan(KindHAConfigMap, "gone-cluster-config-map", old) },
			want{rule: RuleOrphanHAConfigMap}},
		"HA ConfigMap its cluster wrote a minute ago": {time.Hour, func() Object {
			o := orphan(KindHAConfigMap, "gone-cluster-config-map", old)
			o.Since = recent
			return o
		}, want{reason: KeepWithinTTL, by: "a leftover for 1m0s"}},
		"idle JobManager whose last job ended long ago": {time.Hour, func() Object {
			o := orphan(KindIdleJobManager, "idle", old)
			o.Since = now.Add(-2 * time.Hour)
			return o
		}, want{rule: RuleIdleJobManager}},
		"idle JobManager created long ago but idle only since a minute": {time.Hour, func() Object {
			o := orphan(KindIdleJobManager, "idle", old)
			o.Since = recent
			return o
		}, want{reason: KeepWithinTTL, by: "a leftover for 1m0s"}},
		"state unknown (JobManager unreachable)": {time.Hour, func() Object {
			o := orphan(KindIdleJobManager, "idle", old)
			o.UID, o.ResourceVersion, o.Unknown = "", "", "the jobs of cluster idle could not be read"
			return o
		}, want{reason: KeepStatusUnknown, by: "could not be read"}},
		"no cluster label": {time.Hour, func() Object {
			o := orphan(KindTaskManagerPod, "stray", old)
			o.ClusterID = ""
			return o
		}, want{reason: KeepStatusUnknown, by: "label app is empty"}},
		"creation time unknown": {time.Hour, func() Object { return orphan(KindHAConfigMap, "cm", time.Time{}) },
			want{reason: KeepStatusUnknown, by: "creation time"}},
		"owner still manages it": {time.Hour, func() Object {
			o := orphan(KindIdleJobManager, "op", old)
			o.Owner = ObjectOwner{Kind: "FlinkDeployment", Name: "op", UID: "fd", Exists: true}
			return o
		}, want{reason: KeepOwnerExists, by: "FlinkDeployment op"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := tc.obj()
			plan, err := BuildPlan(Input{Now: now, Policy: Policy{OrphanTTL: tc.ttl}, Objects: []Object{o}})
			if err != nil {
				t.Fatal(err)
			}
			path := ObjectPath(o.Ref)
			if tc.want.rule != "" {
				if len(plan.Objects) != 1 || len(plan.KeepObjects) != 0 {
					t.Fatalf("objects %+v kept %+v; want exactly one planned", plan.Objects, plan.KeepObjects)
				}
				it := plan.Objects[0]
				if it.Path != path || it.Rule != tc.want.rule || it.UID != o.UID || it.ResourceVersion != o.ResourceVersion ||
					it.Ref != o.Ref || it.Tenant != "team-t" || it.Owner != o.Owner || it.Age <= 0 || it.Detail != o.Reason {
					t.Fatalf("planned %+v; want rule %s for %s with the object's identity", it, tc.want.rule, path)
				}
				return
			}
			if len(plan.Objects) != 0 || len(plan.KeepObjects) != 1 {
				t.Fatalf("objects %+v kept %+v; want exactly one kept", plan.Objects, plan.KeepObjects)
			}
			k := plan.KeepObjects[0]
			if k.Path != path || k.Reason != tc.want.reason || !strings.Contains(k.By, tc.want.by) {
				t.Fatalf("kept %+v; want reason %s by %q", k, tc.want.reason, tc.want.by)
			}
		})
	}
}

// TestPlanObjectsAlongsidePaths: objects are planned next to the storage
// rules without changing them, and the summary counts them apart.
func TestPlanObjectsAlongsidePaths(t *testing.T) {
	f := newFixture()
	f.ha("gone", old)
	f.pol.OrphanTTL = time.Hour
	pod := orphan(KindTaskManagerPod, "gone-taskmanager-1-1", old)
	young := orphan(KindHAConfigMap, "gone-cluster-config-map", recent)
	jm := orphan(KindIdleJobManager, "idle", old)
	jm.Since = old
	other := orphan(KindTaskManagerPod, "b-taskmanager-1-1", old)
	other.Tenant, other.Ref.Namespace = "team-u", "team-u"
	withObjects := func(objs ...Object) Plan {
		t.Helper()
		p, err := BuildPlan(Input{Now: now, Listing: f.l, Live: Live{Clusters: []LiveCluster{{ClusterID: "c1"}}}, Policy: f.pol,
			Tenants: []inventory.Tenant{{Name: "team-t", Root: "/t"}}, Objects: objs, Lineage: byPrefix(f.l)})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	without := withObjects()
	// Input order does not matter: the plan is sorted by path.
	plan := withObjects(other, young, jm, pod)
	if again := withObjects(pod, jm, young, other); !reflect.DeepEqual(plan, again) {
		t.Fatal("plan depends on the order objects were reported in")
	}
	if !reflect.DeepEqual(plan.Delete, without.Delete) || !reflect.DeepEqual(plan.Keep, without.Keep) {
		t.Fatalf("objects changed the storage plan:\n%+v\n%+v", plan.Delete, without.Delete)
	}
	var paths []string
	for _, o := range plan.Objects {
		paths = append(paths, o.Path)
	}
	wantPaths := []string{"kubernetes://team-t/deployment/idle", "kubernetes://team-t/pod/gone-taskmanager-1-1", "kubernetes://team-u/pod/b-taskmanager-1-1"}
	if !reflect.DeepEqual(paths, wantPaths) {
		t.Fatalf("planned objects %v; want %v", paths, wantPaths)
	}
	if len(plan.KeepObjects) != 1 || plan.KeepObjects[0].Path != "kubernetes://team-t/configmap/gone-cluster-config-map" {
		t.Fatalf("kept objects %+v", plan.KeepObjects)
	}
	sums := map[string]TenantSummary{}
	for _, s := range plan.Summary {
		sums[s.Tenant] = s
	}
	tt, tu := sums["team-t"], sums["team-u"]
	if tt.Reclaim.Items != 1 || tt.ByRule[RuleRetiredHACluster].Items != 1 {
		t.Fatalf("team-t files %+v; the HA dir alone", tt)
	}
	if tt.Objects == nil || tt.Objects.Planned != 2 || tt.Objects.ByRule[RuleIdleJobManager] != 1 || tt.Objects.ByRule[RuleOrphanTaskManager] != 1 ||
		tt.Objects.Kept[KeepWithinTTL] != 1 {
		t.Fatalf("team-t objects %+v", tt.Objects)
	}
	if tu.Objects == nil || tu.Objects.Planned != 1 || tu.Reclaim.Items != 0 {
		t.Fatalf("team-u %+v objects %+v", tu, tu.Objects)
	}
}

func TestPlanObjectsRejectsBadInput(t *testing.T) {
	cases := map[string]struct {
		mod  func(o *Object)
		want string
	}{
		"unknown kind":         {func(o *Object) { o.Kind = "secret" }, `kind "secret"`},
		"kind and ref differ":  {func(o *Object) { o.Ref.Kind = "ConfigMap" }, `ref.kind "ConfigMap" does not fit kind taskmanager-pod`},
		"wrong api version":    {func(o *Object) { o.Ref.APIVersion = "apps/v1" }, `ref.apiVersion "apps/v1"`},
		"no uid":               {func(o *Object) { o.UID = "" }, "uid"},
		"no resource version":  {func(o *Object) { o.ResourceVersion = "" }, "resourceVersion"},
		"name unsafe in paths": {func(o *Object) { o.Ref.Name = "../x" }, `ref.name "../x"`},
		"bad namespace":        {func(o *Object) { o.Ref.Namespace = "Team_T" }, `ref.namespace "Team_T"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := orphan(KindTaskManagerPod, "p", old)
			tc.mod(&o)
			_, err := BuildPlan(Input{Now: now, Objects: []Object{o}})
			if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v; want ErrInvalidInput mentioning %q", err, tc.want)
			}
		})
	}
	o := orphan(KindTaskManagerPod, "p", old)
	if _, err := BuildPlan(Input{Now: now, Objects: []Object{o, o}}); !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "reported twice") {
		t.Fatalf("duplicate: %v", err)
	}
	_, err := BuildPlan(Input{Now: now, Policy: Policy{OrphanTTL: -time.Hour}})
	if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "orphanTTL -1h0m0s") || !strings.Contains(err.Error(), "positive duration") {
		t.Fatalf("negative orphanTTL: %v", err)
	}
}

// Where the worker may not delete Kubernetes objects (rbacProfile
// windows), a plan keeps the leftovers and the savepoints whose
// FlinkStateSnapshot would go with them, each saying why; another
// Kubernetes cluster's are planned as usual, and files go as before.
func TestPlanKeepsWhatAReadOnlyClusterCannotDelete(t *testing.T) {
	f := newFixture()
	f.ha("gone", old)
	f.pol.KeepSavepoints = 1
	sp1 := f.savepoint("aaaaaa", "000000000001", true, old)
	f.savepoint("aaaaaa", "000000000002", true, old.Add(time.Hour))
	f.live.Records = []LiveRecord{snapshotRecord("done", sp1, inventory.SnapshotCompleted, true)}
	here := orphan(KindTaskManagerPod, "gone-taskmanager-1-1", old)
	there := orphan(KindTaskManagerPod, "gone-taskmanager-1-2", old)
	there.Ref.KubeCluster = "east"
	build := func(readOnly map[string]bool) Plan {
		t.Helper()
		p, err := BuildPlan(Input{Now: now, Listing: f.l, Live: Live{Clusters: []LiveCluster{{ClusterID: "c1"}}, Records: f.live.Records},
			Policy: f.pol, Tenants: []inventory.Tenant{{Name: "team-t", Root: "/t"}}, Objects: []Object{here, there},
			Lineage: byPrefix(f.l), ReadOnlyKubeClusters: readOnly})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	full := build(nil)
	if len(full.Objects) != 2 || planned(full)[sp1] != RuleSavepointRetention {
		t.Fatalf("rbacProfile full: objects %+v, %s planned %q; want both objects and the savepoint", full.Objects, sp1, planned(full)[sp1])
	}

	p := build(map[string]bool{"": true})
	if len(p.Objects) != 1 || p.Objects[0].Ref.KubeCluster != "east" {
		t.Fatalf("read-only default cluster: planned objects %+v; want only east's", p.Objects)
	}
	if len(p.KeepObjects) != 1 || p.KeepObjects[0].Reason != KeepKubernetesReadOnly || !strings.Contains(p.KeepObjects[0].By, "rbacProfile is windows") {
		t.Fatalf("kept objects %+v; want the default cluster's pod, kept %s", p.KeepObjects, KeepKubernetesReadOnly)
	}
	if k, ok := keptFor(p, sp1); !ok || k.Reason != KeepKubernetesReadOnly || !strings.Contains(k.By, "ns/done") {
		t.Fatalf("%s kept %+v; want %s naming the resource", sp1, k, KeepKubernetesReadOnly)
	}
	for _, it := range p.Delete {
		if len(it.Snapshots) > 0 {
			t.Errorf("item %s deletes resources %v in a read-only cluster", it.Path, it.Snapshots)
		}
	}
	if !reflect.DeepEqual(planned(p), func() map[string]Rule { m := planned(full); delete(m, sp1); return m }()) {
		t.Errorf("read-only changed the file items beyond the savepoint: %v; full %v", planned(p), planned(full))
	}
}
