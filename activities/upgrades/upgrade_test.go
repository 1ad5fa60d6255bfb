package upgrades

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/internal/acttest"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// TestDiscoverJobsRestartsWithTheRecipeOfRecord: a job a committed upgrade
// recorded restarts with the new recipe while the inventory still holds
// the replaced one; once the inventory caught up the record goes; an
// inventory changed to a third recipe leaves the job alone, saying why.
func TestDiscoverJobsRestartsWithTheRecipeOfRecord(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	recipe := func(jar string) inventory.RestartRecipe {
		return inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun, Jar: jar, EntryClass: "C"}
	}
	inv := inventory.Inventory{
		Tenants: []inventory.Tenant{{Name: "a", Root: root}},
		Clusters: []inventory.Cluster{{Tenant: "a", ClusterID: "c1", RESTURL: "http://c1", Jobs: []inventory.JobSpec{
			{Name: "plain", Restart: recipe("/plain.jar")},
			{Name: "upgraded", Restart: recipe("/v1.jar")},
			{Name: "caught-up", Restart: recipe("/v2.jar")},
			{Name: "changed", Restart: recipe("/v3.jar")},
		}}},
	}
	guard, err := storage.NewGuard(root)
	if err != nil {
		t.Fatal(err)
	}
	store := catalog.RecipeStore{FS: storage.NewLocal(guard), Root: root}
	for _, name := range []string{"upgraded", "caught-up", "changed"} {
		if err := store.Put(ctx, catalog.RecipeRecord{Job: catalog.LogicalJob{Tenant: "a", Cluster: "c1", Job: name},
			Base: recipe("/v1.jar"), Recipe: recipe("/v2.jar"), UpgradeID: "up-" + name, At: time.Unix(1, 0)}); err != nil {
			t.Fatal(err)
		}
	}
	var jobs []flink.JobOverview
	for i, name := range []string{"plain", "upgraded", "caught-up", "changed"} {
		jobs = append(jobs, flink.JobOverview{ID: string(rune('a'+i)) + "0000000000000000000000000000000", Name: name, State: flink.JobRunning})
	}
	a := &Activities{Inventory: acttest.Inventory(inv), Flink: acttest.OneClient{C: &acttest.Flink{Jobs: jobs}}, Storage: &storage.Resolver{Guard: guard}}
	var res core.DiscoverJobsResult
	if err := acttest.Run(t, a.jobs().DiscoverJobs, a.jobs().DiscoverJobs, core.DiscoverJobsInput{}, &res); err != nil {
		t.Fatal(err)
	}
	jars := map[string]string{}
	for _, j := range res.Jobs {
		jars[j.JobName] = j.Restart.Jar
	}
	if jars["plain"] != "/plain.jar" || jars["upgraded"] != "/v2.jar" || jars["caught-up"] != "/v2.jar" || jars["changed"] != "" {
		t.Errorf("restart jars %v; want plain as is, upgraded with the recorded v2, caught-up as is, changed left out", jars)
	}
	skipped := false
	for _, s := range res.Skipped {
		skipped = skipped || s.Key == "c1/changed" && strings.Contains(s.Reason, "up-changed")
	}
	if !skipped {
		t.Errorf("skipped %+v; want c1/changed left alone naming its upgrade", res.Skipped)
	}
	list, err := store.List(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("records %+v %v; want the caught-up record removed, the other two kept", list, err)
	}
	for _, r := range list {
		if r.Job.Job == "caught-up" {
			t.Errorf("record of caught-up kept: %+v", r)
		}
	}
}

// TestRecipeRecordsOfSuccessiveUpgrades: a second upgrade of a job keeps
// resolving against the inventory's recipe, and its rollback brings back
// the first upgrade's recipe, not the inventory's.
func TestRecipeRecordsOfSuccessiveUpgrades(t *testing.T) {
	root := t.TempDir()
	guard, err := storage.NewGuard(root)
	if err != nil {
		t.Fatal(err)
	}
	recipe := func(jar string) inventory.RestartRecipe {
		return inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun, Jar: jar, EntryClass: "C"}
	}
	inv := inventory.Inventory{Tenants: []inventory.Tenant{{Name: "a", Root: root}},
		Clusters: []inventory.Cluster{{Tenant: "a", ClusterID: "c1", RESTURL: "http://c1", Jobs: []inventory.JobSpec{{Name: "orders", Restart: recipe("/v1.jar")}}}}}
	jobs := []flink.JobOverview{{ID: "a0000000000000000000000000000000", Name: "orders", State: flink.JobRunning}}
	a := &Activities{Inventory: acttest.Inventory(inv), Flink: acttest.OneClient{C: &acttest.Flink{Jobs: jobs}}, Storage: &storage.Resolver{Guard: guard}}
	running := func() string {
		t.Helper()
		var res core.DiscoverJobsResult
		if err := acttest.Run(t, a.jobs().DiscoverJobs, a.jobs().DiscoverJobs, core.DiscoverJobsInput{}, &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Jobs) != 1 {
			t.Fatalf("discovered %+v, skipped %+v; want orders", res.Jobs, res.Skipped)
		}
		return res.Jobs[0].Restart.Jar
	}
	upgrade := func(id, jar string) core.JobTarget {
		t.Helper()
		job := core.JobTarget{Key: "c1/orders", Tenant: "a", ClusterID: "c1", JobName: "orders", Restart: recipe(running())}
		for range 2 { // a retried activity writes once
			if err := acttest.Run(t, a, a.RecordRecipe, RecordRecipeInput{Job: job, Base: job.Restart, Recipe: recipe(jar), UpgradeID: id}, nil); err != nil {
				t.Fatal(err)
			}
		}
		return job
	}
	upgrade("u2", "/v2.jar")
	job := upgrade("u3", "/v3.jar")
	if got := running(); got != "/v3.jar" {
		t.Fatalf("after two upgrades the job restarts with %s; want /v3.jar", got)
	}
	if err := acttest.Run(t, a, a.ForgetRecipe, ForgetRecipeInput{Job: job, UpgradeID: "u2"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := running(); got != "/v3.jar" {
		t.Fatalf("forgetting an older upgrade changed the recipe to %s; want /v3.jar kept", got)
	}
	if err := acttest.Run(t, a, a.ForgetRecipe, ForgetRecipeInput{Job: job, UpgradeID: "u3"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := running(); got != "/v2.jar" {
		t.Fatalf("after rolling back the second upgrade the job restarts with %s; want the first upgrade's /v2.jar", got)
	}
}

// TestRecipeRecordsAreEachJobsAndTenantsOwn: a recipe of record is the
// one of its own job, kept under its own tenant's root; forgetting an
// upgrade of one job leaves another job's record alone, and forgetting a
// job without a record is nothing to do.
func TestRecipeRecordsAreEachJobsAndTenantsOwn(t *testing.T) {
	base := t.TempDir()
	rootA, rootB := filepath.Join(base, "a"), filepath.Join(base, "b")
	for _, r := range []string{rootA, rootB} {
		if err := os.MkdirAll(r, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	guard, err := storage.NewGuard(base)
	if err != nil {
		t.Fatal(err)
	}
	recipe := func(jar string) inventory.RestartRecipe {
		return inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun, Jar: jar, EntryClass: "C"}
	}
	inv := inventory.Inventory{Tenants: []inventory.Tenant{{Name: "a", Root: rootA}, {Name: "b", Root: rootB}},
		Clusters: []inventory.Cluster{{Tenant: "b", ClusterID: "c1", RESTURL: "http://c1", Jobs: []inventory.JobSpec{
			{Name: "alerts", Restart: recipe("/alerts-v1.jar")}, {Name: "orders", Restart: recipe("/v1.jar")}, {Name: "quiet", Restart: recipe("/q1.jar")}}}}}
	a := &Activities{Inventory: acttest.Inventory(inv), Storage: &storage.Resolver{Guard: guard}}
	job := func(name, jar string) core.JobTarget {
		return core.JobTarget{Key: "c1/" + name, Tenant: "b", ClusterID: "c1", JobName: name, Restart: recipe(jar)}
	}
	record := func(j core.JobTarget, jar, id string) {
		t.Helper()
		if err := acttest.Run(t, a, a.RecordRecipe, RecordRecipeInput{Job: j, Base: j.Restart, Recipe: recipe(jar), UpgradeID: id}, nil); err != nil {
			t.Fatal(err)
		}
	}
	record(job("alerts", "/alerts-v1.jar"), "/alerts-v2.jar", "up-alerts")
	record(job("orders", "/v1.jar"), "/v2.jar", "up-orders")
	recorded := func(root string) map[string]string {
		t.Helper()
		list, err := catalog.RecipeStore{FS: storage.NewLocal(guard), Root: root}.List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, r := range list {
			out[r.Job.Job] = r.UpgradeID
		}
		return out
	}
	if got := recorded(rootB); got["alerts"] != "up-alerts" || got["orders"] != "up-orders" {
		t.Fatalf("tenant b's records %v; want both of its jobs' own", got)
	}
	if got := recorded(rootA); len(got) != 0 {
		t.Fatalf("tenant a's root holds records %v of tenant b's jobs", got)
	}
	for _, f := range []ForgetRecipeInput{{Job: job("orders", "/v1.jar"), UpgradeID: "up-orders"}, {Job: job("quiet", "/q1.jar"), UpgradeID: "up-quiet"}} {
		if err := acttest.Run(t, a, a.ForgetRecipe, f, nil); err != nil {
			t.Fatalf("forget %s: %v", f.Job.Key, err)
		}
	}
	if got := recorded(rootB); got["alerts"] != "up-alerts" || got["orders"] != "" {
		t.Fatalf("after forgetting orders' upgrade: records %v; want only alerts' left", got)
	}
}
