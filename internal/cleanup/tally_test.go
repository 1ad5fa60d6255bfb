package cleanup

import (
	"reflect"
	"testing"
)

// TestTallyManifest counts what the manifest says of the plan's own items:
// each trashed or deleted item once per tenant and in the total, objects
// apart from files, refusals listed, other plans' records ignored.
func TestTallyManifest(t *testing.T) {
	obj := ObjectScheme + "team-b/pod/tm-1"
	plan := Plan{
		Delete:  []Item{{Path: "/a/chk-1", Tenant: "team-a"}, {Path: "/a/chk-2", Tenant: "team-a"}, {Path: "/b/sp-1", Tenant: "team-b"}},
		Objects: []ObjectItem{{Path: obj, Tenant: "team-b"}},
	}
	recs := []Record{
		{Path: "/a/chk-1", Outcome: OutcomeTrashed, Files: 3, Dirs: 1, Bytes: 30},
		{Path: "/a/chk-2", Outcome: OutcomeRefused, Detail: "referenced since planning"},
		{Path: "/b/sp-1", Outcome: OutcomeFailed, Detail: "rename refused"},
		{Path: "/b/sp-1", Outcome: OutcomeDeleted, Files: 2, Dirs: 1, Bytes: 20}, // the retry
		{Path: obj, Outcome: OutcomeTrashed},
		{Path: "/c/other-plan", Outcome: OutcomeTrashed, Files: 99, Bytes: 999},
	}
	got := TallyManifest(plan, recs)
	if want := (TenantReclaim{Items: 3, Files: 5, Dirs: 2, Bytes: 50, Objects: 1}); got.Reclaimed != want {
		t.Errorf("reclaimed %+v, want %+v", got.Reclaimed, want)
	}
	wantTenants := []TenantReclaim{{Tenant: "team-a", Items: 1, Files: 3, Dirs: 1, Bytes: 30}, {Tenant: "team-b", Items: 2, Files: 2, Dirs: 1, Bytes: 20, Objects: 1}}
	if !reflect.DeepEqual(got.Tenants, wantTenants) {
		t.Errorf("tenants %+v, want %+v", got.Tenants, wantTenants)
	}
	wantOutcomes := []OutcomeCount{{"deleted", 1}, {"failed", 1}, {"refused", 1}, {"trashed", 2}}
	if !reflect.DeepEqual(got.Outcomes, wantOutcomes) {
		t.Errorf("outcomes %+v, want %+v", got.Outcomes, wantOutcomes)
	}
	if len(got.Unfinished) != 2 || got.Unfinished[0].Path != "/a/chk-2" || got.Unfinished[1].Path != "/b/sp-1" {
		t.Errorf("unfinished %+v", got.Unfinished)
	}
	if got.Last["/b/sp-1"].Outcome != OutcomeDeleted || len(got.Last) != 4 {
		t.Errorf("last records %+v; want the retry's outcome for /b/sp-1 and only the plan's 4 items", got.Last)
	}
}
