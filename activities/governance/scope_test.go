package governance

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
			window := core.Jobs{Inventory: a.Inventory, Flink: a.Flink, Storage: a.Storage}.DiscoverJobs
			if err := acttest.Run(t, window, window, core.DiscoverJobsInput{Scope: tc.scope}, &res); err != nil {
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
