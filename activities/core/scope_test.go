package core

import (
	"sort"
	"strings"
	"testing"

	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

func TestMatchJobs(t *testing.T) {
	cluster := inventory.Cluster{ClusterID: "c1", Tenant: "t1", Jobs: []inventory.JobSpec{
		{Name: "orders", Restart: inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun}},
		{Name: "dup", Restart: inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun}},
		{Name: "restarting", Restart: inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun}},
		{Name: "backfill", Restart: inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun}},
	}}
	jobs := []flink.JobOverview{
		{ID: "1", Name: "orders", State: flink.JobRunning},
		{ID: "2", Name: "dup", State: flink.JobRunning},
		{ID: "3", Name: "dup", State: flink.JobRunning},
		{ID: "4", Name: "no-recipe", State: flink.JobRunning},
		{ID: "5", Name: "restarting", State: flink.JobRestarting},
		{ID: "6", Name: "orders", State: flink.JobFinished},
		{ID: "7", Name: "backfill", State: flink.JobRunning},
	}
	targets, skipped := MatchJobs(cluster, jobs, Scope{ExcludeJobs: []string{"back*"}}, true)
	if len(targets) != 1 || targets[0].JobID != "1" || targets[0].Key != "c1/orders" || targets[0].Tenant != "t1" {
		t.Fatalf("targets %+v, want only c1/orders (job 1)", targets)
	}
	reasons := map[string]string{}
	for _, s := range skipped {
		reasons[s.JobID] = s.Reason
	}
	for id, want := range map[string]string{"2": "2 jobs named", "3": "2 jobs named", "4": "no restart recipe", "5": "not RUNNING"} {
		if !strings.Contains(reasons[id], want) {
			t.Errorf("job %s skipped with %q, want it to mention %q", id, reasons[id], want)
		}
	}
	if _, ok := reasons["6"]; ok {
		t.Error("a finished job was reported; it is not part of the fleet")
	}
	if _, ok := reasons["7"]; ok {
		t.Error("an excluded job was reported as skipped")
	}
	targets, _ = MatchJobs(cluster, jobs, Scope{IncludeJobs: []string{"ord*"}}, true)
	if len(targets) != 1 || targets[0].JobName != "orders" {
		t.Fatalf("include filter: %+v", targets)
	}
	// A savepoint that leaves the job running needs no recipe; duplicate
	// names and unclear states are still left alone.
	targets, skipped = MatchJobs(cluster, jobs, Scope{ExcludeJobs: []string{"back*"}}, false)
	var keys []string
	for _, tg := range targets {
		keys = append(keys, tg.Key)
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != "c1/no-recipe,c1/orders" || len(skipped) != 3 {
		t.Fatalf("without recipes: targets %v, skipped %+v; want c1/no-recipe and c1/orders, 3 skipped", keys, skipped)
	}
}
