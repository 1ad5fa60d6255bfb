package activities

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/internal/acttest"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// TestDiscoverJobsNamesWhatTheScopeDoesNotResolve: every scope entry that
// selects nothing is named with what exists instead; a scope that
// resolves has no problem, and a pattern that excludes nothing is none.
func TestDiscoverJobsNamesWhatTheScopeDoesNotResolve(t *testing.T) {
	recipe := inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun, Jar: "/j.jar"}
	inv := inventory.Inventory{
		Tenants: []inventory.Tenant{{Name: "team-a"}, {Name: "team-b"}, {Name: "team-idle"}},
		Clusters: []inventory.Cluster{
			{Tenant: "team-a", ClusterID: "cluster-a", RESTURL: "http://a", Jobs: []inventory.JobSpec{{Name: "orders", Restart: recipe}}},
			{Tenant: "team-b", ClusterID: "cluster-b", RESTURL: "http://b", Jobs: []inventory.JobSpec{{Name: "orders", Restart: recipe}}},
		},
	}
	jobs := []flink.JobOverview{
		{ID: "a0000000000000000000000000000000", Name: "orders", State: flink.JobRunning},
		{ID: "b0000000000000000000000000000000", Name: "payments", State: flink.JobRunning},
		{ID: "c0000000000000000000000000000000", Name: "finished-once", State: flink.JobFinished},
	}
	a := &Activities{Inventory: acttest.Inventory(inv), Flink: acttest.OneClient{C: &acttest.Flink{Jobs: jobs}}}
	for name, tc := range map[string]struct {
		scope core.Scope
		want  []string // one entry per expected problem, each a substring
	}{
		"everything":           {core.Scope{}, nil},
		"resolves":             {core.Scope{Tenants: []string{"team-a"}, Clusters: []string{"cluster-a"}, IncludeJobs: []string{"ord*", "pay*"}}, nil},
		"exclude matches none": {core.Scope{ExcludeJobs: []string{"*-backfill"}}, nil},
		"unknown tenant": {core.Scope{Tenants: []string{"team-a", "team-x"}},
			[]string{`tenant "team-x" is not in the inventory; its tenants are team-a, team-b, team-idle`}},
		"tenant without clusters": {core.Scope{Tenants: []string{"team-idle"}}, []string{`tenant "team-idle" has no Flink cluster in the inventory`}},
		"unknown cluster": {core.Scope{Clusters: []string{"cluster-z"}},
			[]string{`cluster "cluster-z" is not in the inventory; its clusters are cluster-a, cluster-b`}},
		"cluster of another tenant": {core.Scope{Tenants: []string{"team-a"}, Clusters: []string{"cluster-b"}}, []string{
			`tenant "team-a" has none of its clusters (cluster-a) among scope.clusters`,
			`cluster "cluster-b" belongs to tenant "team-b", which scope.tenants leaves out`}},
		"pattern matches nothing": {core.Scope{IncludeJobs: []string{"orders", "finished-*", "nope-*"}}, []string{
			`scope.includeJobs pattern "finished-*" matches no job running on the clusters in scope; they run orders, payments`,
			`scope.includeJobs pattern "nope-*" matches no job`}},
	} {
		t.Run(name, func(t *testing.T) {
			var res core.DiscoverJobsResult
			if err := acttest.Run(t, a, a.DiscoverJobs, core.DiscoverJobsInput{Scope: tc.scope}, &res); err != nil {
				t.Fatal(err)
			}
			if len(res.Unresolved) != len(tc.want) {
				t.Fatalf("unresolved %q; want %d problem(s) %q", res.Unresolved, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(res.Unresolved[i], w) {
					t.Errorf("problem %d is %q; want it to say %q", i, res.Unresolved[i], w)
				}
			}
		})
	}
}

func TestNameListIsBounded(t *testing.T) {
	var names []string
	for i := 0; i < core.MaxNamesListed+5; i++ {
		names = append(names, string(rune('a'+i)))
	}
	names = append(names, "a")
	got := core.NameList(names)
	if !strings.HasPrefix(got, "a, b, c") || !strings.HasSuffix(got, " and 5 more") {
		t.Fatalf("nameList = %q", got)
	}
	if core.NameList(nil) != "none" {
		t.Fatalf("empty list reads %q", core.NameList(nil))
	}
}

// TestScopeSelectsATenantsClusterOnly: scope.tenants and scope.clusters
// both hold: a window stops, and a governance run scans, only the clusters
// named, not every cluster of a tenant named, nor a named cluster's other
// tenants' clusters.
func TestScopeSelectsATenantsClusterOnly(t *testing.T) {
	recipe := inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun, Jar: "/j.jar"}
	base := t.TempDir()
	cluster := func(tenant, id string) inventory.Cluster {
		dir := filepath.Join(base, id)
		for _, d := range []string{"checkpoints", "savepoints"} {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return inventory.Cluster{Tenant: tenant, ClusterID: id, RESTURL: "http://" + id, CheckpointDir: dir + "/checkpoints", SavepointDir: dir + "/savepoints",
			Jobs: []inventory.JobSpec{{Name: "orders", Restart: recipe}}}
	}
	inv := inventory.Inventory{
		Tenants:  []inventory.Tenant{{Name: "team-a"}, {Name: "team-b"}},
		Clusters: []inventory.Cluster{cluster("team-a", "a1"), cluster("team-a", "a2"), cluster("team-b", "b1")},
	}
	jobs := []flink.JobOverview{{ID: "a0000000000000000000000000000000", Name: "orders", State: flink.JobRunning}}
	a := &Activities{Inventory: acttest.Inventory(inv), Flink: acttest.OneClient{C: &acttest.Flink{Jobs: jobs}}, Storage: &storage.Resolver{}}
	for name, tc := range map[string]struct {
		scope core.Scope
		want  string // clusters in scope
	}{
		"tenant and cluster": {core.Scope{Tenants: []string{"team-a"}, Clusters: []string{"a1"}}, "a1"},
		"tenant":             {core.Scope{Tenants: []string{"team-a"}}, "a1 a2"},
		"cluster":            {core.Scope{Clusters: []string{"b1"}}, "b1"},
	} {
		t.Run(name, func(t *testing.T) {
			var res core.DiscoverJobsResult
			if err := acttest.Run(t, a, a.DiscoverJobs, core.DiscoverJobsInput{Scope: tc.scope}, &res); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range res.Clusters {
				got = append(got, c.ClusterID)
			}
			var stops []string
			for _, j := range res.Jobs {
				stops = append(stops, j.ClusterID)
			}
			if strings.Join(got, " ") != tc.want || strings.Join(stops, " ") != tc.want {
				t.Errorf("window: clusters %v, jobs on %v; want %s", got, stops, tc.want)
			}
			var notes []string
			_, roots, _, err := a.scopeRoots(context.Background(), inv, tc.scope, &notes)
			if err != nil {
				t.Fatal(err)
			}
			scanned := map[string]bool{}
			for _, r := range roots {
				scanned[filepath.Base(filepath.Dir(strings.TrimPrefix(r.Path, "file://")))] = true
			}
			var ids []string
			for _, c := range inv.Clusters {
				if scanned[c.ClusterID] {
					ids = append(ids, c.ClusterID)
				}
			}
			if strings.Join(ids, " ") != tc.want {
				t.Errorf("governance: roots %+v of clusters %v; want %s", roots, ids, tc.want)
			}
		})
	}
}
