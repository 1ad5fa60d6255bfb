package windows

import (
	"strings"
	"testing"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/internal/acttest"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
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
