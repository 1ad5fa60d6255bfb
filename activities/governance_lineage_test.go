package activities

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// TestSavepointLineageAttributesOnlyWhatItCanTell covers each source of
// savepoint lineage and each way it must refuse: a job id prefix is only
// evidence when the savepoint was written while that job ran and no other
// logical job shares the prefix at that time; an operator record only when
// its resource is an inventory job. Whatever is told is catalogued with
// its source.
func TestSavepointLineageAttributesOnlyWhatItCanTell(t *testing.T) {
	// The tenant root as a URI and as a plain path; listings spell
	// savepoints as URIs either way.
	for name, plain := range map[string]bool{"uri root": false, "plain root": true} {
		t.Run(name, func(t *testing.T) { testSavepointLineage(t, plain) })
	}
}

func testSavepointLineage(t *testing.T, plainRoot bool) {
	ctx := context.Background()
	tmp := t.TempDir()
	guard, err := storage.NewGuard("file://" + tmp)
	if err != nil {
		t.Fatal(err)
	}
	root := "file://" + tmp + "/tenant"
	invRoot := root
	if plainRoot {
		invRoot = tmp + "/tenant"
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ms := func(d time.Duration) int64 { return now.Add(-d).UnixMilli() }
	jobs := []flink.JobOverview{
		// orders ran 10h..8h ago.
		{ID: "aaaaaa" + strings.Repeat("1", 26), Name: "orders", State: flink.JobFinished, StartTime: ms(10 * time.Hour), EndTime: ms(8 * time.Hour)},
		// two logical jobs with one prefix, both running now.
		{ID: "bbbbbb" + strings.Repeat("1", 26), Name: "left", State: flink.JobRunning, StartTime: ms(5 * time.Hour), EndTime: -1},
		{ID: "bbbbbb" + strings.Repeat("2", 26), Name: "right", State: flink.JobRunning, StartTime: ms(4 * time.Hour), EndTime: -1},
	}
	deployment := inventory.ObjectRef{APIVersion: "flink.apache.org/v1beta1", Kind: inventory.KindFlinkDeployment, Namespace: "ns", Name: "payments"}
	inv := inventory.Inventory{
		Tenants: []inventory.Tenant{{Name: "t", Root: invRoot}},
		Clusters: []inventory.Cluster{{Tenant: "t", ClusterID: "c1", RESTURL: "http://c1", Jobs: []inventory.JobSpec{
			{Name: "payments", Restart: inventory.RestartRecipe{Kind: inventory.RestartOperatorResume, Resource: &deployment}}}}},
	}
	sp := func(name, prefix string, written time.Duration) layout.Savepoint {
		return layout.Savepoint{Path: root + "/savepoints/" + name, JobIDPrefix: prefix, Completed: true,
			Usage: layout.Usage{Files: 2, Dirs: 1, Bytes: 10, Newest: now.Add(-written)}}
	}
	listing := cleanup.Listing{Report: layout.Report{Savepoints: []layout.Savepoint{
		sp("savepoint-aaaaaa-000000000001", "aaaaaa", 9*time.Hour), // while orders ran
		sp("savepoint-aaaaaa-000000000002", "aaaaaa", 2*time.Hour), // long after orders ended
		sp("savepoint-bbbbbb-000000000003", "bbbbbb", time.Hour),   // left or right?
		sp("savepoint-cccccc-000000000004", "cccccc", time.Hour),   // a FlinkStateSnapshot of payments
		sp("savepoint-dddddd-000000000005", "dddddd", time.Hour),   // a snapshot of a resource gone
	}}}
	snapshotOf := func(name string) *inventory.ObjectRef {
		return &inventory.ObjectRef{Kind: inventory.KindFlinkDeployment, Namespace: "ns", Name: name}
	}
	records := []cleanup.LiveRecord{
		{Path: listing.Report.Savepoints[3].Path + "/", By: "FlinkStateSnapshot ns/p-1", Owner: snapshotOf("payments")},
		{Path: listing.Report.Savepoints[4].Path, By: "FlinkStateSnapshot ns/old-1", Owner: snapshotOf("retired")},
	}
	a := &Activities{Flink: oneClient{&fakeFlink{jobs: jobs}}, Storage: &storage.Resolver{Guard: guard}, Now: func() time.Time { return now }}
	var notes []string
	lineage, err := lineageIn(t, a, inv, listing, records, &notes)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		listing.Report.Savepoints[0].Path: "t/c1/orders",
		listing.Report.Savepoints[3].Path: "t/c1/payments",
	}
	if len(lineage) != len(want) {
		t.Errorf("lineage %v; want exactly %v", lineage, want)
	}
	for p, j := range want {
		if lineage[p] != j {
			t.Errorf("%s: lineage %q, want %q", p, lineage[p], j)
		}
	}

	fs, p, err := a.Storage.Resolve(ctx, invRoot)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := catalog.Store{FS: fs, Root: p}.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range entries {
		got[e.Path] = e.Trigger + " " + e.Job.String() + " " + e.JobID
	}
	wantEntries := map[string]string{
		listing.Report.Savepoints[0].Path: catalog.TriggerDiscovered + " t/c1/orders " + jobs[0].ID,
		listing.Report.Savepoints[3].Path: catalog.TriggerOperator + " t/c1/payments ",
	}
	if len(got) != len(wantEntries) {
		t.Errorf("catalog %v; want %v", got, wantEntries)
	}
	for p, w := range wantEntries {
		if got[p] != w {
			t.Errorf("catalog entry of %s: %q, want %q", p, got[p], w)
		}
	}

	// The catalog now answers alone: without history or records, the same.
	a.Flink = oneClient{&fakeFlink{}}
	again, err := lineageIn(t, a, inv, listing, nil, &notes)
	if err != nil {
		t.Fatal(err)
	}
	for p, j := range want {
		if again[p] != j {
			t.Errorf("from the catalog alone, %s: %q, want %q", p, again[p], j)
		}
	}
}

// lineageIn runs savepointLineage inside an activity, where it heartbeats.
func lineageIn(t *testing.T, a *Activities, inv inventory.Inventory, listing cleanup.Listing, records []cleanup.LiveRecord, notes *[]string) (map[string]string, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(func(ctx context.Context) (map[string]string, error) {
		return a.savepointLineage(ctx, inv, inv.Tenants, listing, records, a.jobHistory(ctx, inv), notes)
	}, activity.RegisterOptions{Name: "Lineage"})
	v, err := env.ExecuteActivity("Lineage")
	if err != nil {
		return nil, err
	}
	var out map[string]string
	return out, v.Get(&out)
}
