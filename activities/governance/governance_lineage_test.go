package governance

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/internal/acttest"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// TestSavepointOwnersOnlyOnEvidence covers each source of whose savepoint
// is whose and each way it must refuse: a job id prefix and the time a
// savepoint was written prove nothing; Flink's checkpoint history naming
// the exact path does; an operator record only in its savepoint's own
// tenant's namespaces; a catalog entry only if it is the file its path
// names, its path is under its tenant's root and its job that tenant's;
// claims that disagree leave the owner unknown. What is proven is
// catalogued with its evidence.
func TestSavepointOwnersOnlyOnEvidence(t *testing.T) {
	// The tenant root as a URI and as a plain path; listings spell
	// savepoints as URIs either way.
	for name, plain := range map[string]bool{"uri root": false, "plain root": true} {
		t.Run(name, func(t *testing.T) { testSavepointOwners(t, plain) })
	}
}

func testSavepointOwners(t *testing.T, plainRoot bool) {
	ctx := context.Background()
	tmp := t.TempDir()
	guard, err := storage.NewGuard("file://" + tmp)
	if err != nil {
		t.Fatal(err)
	}
	root, otherRoot := "file://"+tmp+"/tenant", "file://"+tmp+"/other"
	invRoot, invOtherRoot := root, otherRoot
	if plainRoot {
		invRoot, invOtherRoot = tmp+"/tenant", tmp+"/other"
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ms := func(d time.Duration) int64 { return now.Add(-d).UnixMilli() }
	// Application mode with HA: every job id starts ffffffff.
	ordersID, leftID, rightID := "ffffffff"+strings.Repeat("1", 8)+strings.Repeat("0", 16), "ffffffff"+strings.Repeat("2", 8)+strings.Repeat("0", 16),
		"ffffffff"+strings.Repeat("3", 8)+strings.Repeat("0", 16)
	jobs := []flink.JobOverview{
		{ID: ordersID, Name: "orders", State: flink.JobFinished, StartTime: ms(10 * time.Hour), EndTime: ms(8 * time.Hour)},
		{ID: leftID, Name: "left", State: flink.JobRunning, StartTime: ms(5 * time.Hour), EndTime: -1},
		{ID: rightID, Name: "right", State: flink.JobRunning, StartTime: ms(4 * time.Hour), EndTime: -1},
	}
	deployment := inventory.ObjectRef{APIVersion: "flink.apache.org/v1beta1", Kind: inventory.KindFlinkDeployment, Namespace: "ns", Name: "payments"}
	inv := inventory.Inventory{
		Tenants: []inventory.Tenant{{Name: "t", Namespace: "ns", Root: invRoot}, {Name: "o", Namespace: "ns-o", Root: invOtherRoot}},
		Clusters: []inventory.Cluster{
			{Tenant: "t", ClusterID: "c1", RESTURL: "http://c1", Jobs: []inventory.JobSpec{
				{Name: "payments", Restart: inventory.RestartRecipe{Kind: inventory.RestartOperatorResume, Resource: &deployment}}}},
			{Tenant: "o", ClusterID: "c2", RESTURL: "http://c2"},
		},
	}
	sp := func(name string, written time.Duration) layout.Savepoint {
		return layout.Savepoint{Path: root + "/savepoints/" + name, JobIDPrefix: strings.Split(name, "-")[1], Completed: true, Written: now.Add(-written),
			Usage: layout.Usage{Files: 2, Dirs: 1, Bytes: 10, Newest: now.Add(-written)}}
	}
	sps := []layout.Savepoint{
		sp("savepoint-ffffff-000000000001", 9*time.Hour), // orders' history names it
		sp("savepoint-ffffff-000000000002", 2*time.Hour), // written while left and right ran; no history names it
		sp("savepoint-ffffff-000000000003", time.Hour),   // left's history names it, right shares the prefix
		sp("savepoint-cccccc-000000000004", time.Hour),   // a FlinkStateSnapshot of payments in the tenant's namespace
		sp("savepoint-dddddd-000000000005", time.Hour),   // a snapshot of a resource gone
		sp("savepoint-eeeeee-000000000006", time.Hour),   // claimed for payments from another tenant's namespace
		sp("savepoint-ffffff-000000000007", time.Hour),   // the catalog and left's history disagree
		sp("savepoint-abcdef-000000000008", time.Hour),   // a catalog entry of another tenant's job
		sp("savepoint-abcdef-000000000009", time.Hour),   // a catalog entry under the wrong file name
	}
	listing := cleanup.Listing{Report: layout.Report{Savepoints: sps}}
	savepointStats := func(paths ...string) flink.CheckpointingStatistics {
		var st flink.CheckpointingStatistics
		for i, p := range paths {
			st.History = append(st.History, flink.CheckpointStatistics{ID: int64(i + 1), Status: "COMPLETED", IsSavepoint: true, ExternalPath: p + "/"})
		}
		return st
	}
	fl := &acttest.Flink{Jobs: jobs, StatsByJob: map[string]flink.CheckpointingStatistics{
		ordersID: savepointStats(sps[0].Path),
		leftID:   savepointStats(sps[2].Path, sps[6].Path),
	}}
	snapshotOf := func(name string) *inventory.ObjectRef {
		return &inventory.ObjectRef{Kind: inventory.KindFlinkDeployment, Namespace: "ns", Name: name}
	}
	records := []cleanup.LiveRecord{
		{Path: sps[3].Path + "/", By: "FlinkStateSnapshot ns/p-1", Owner: snapshotOf("payments"), Tenant: "t"},
		{Path: sps[4].Path, By: "FlinkStateSnapshot ns/old-1", Owner: snapshotOf("retired"), Tenant: "t"},
		{Path: sps[5].Path, By: "FlinkStateSnapshot ns-o/p-2", Owner: snapshotOf("payments"), Tenant: "o"},
	}
	clusters := clientsByURL{"http://c1": fl, "http://c2": &acttest.Flink{}}
	a := &Activities{Flink: clusters, Storage: &storage.Resolver{Guard: guard}, Now: func() time.Time { return now }}
	fs, p, err := a.Storage.Resolve(ctx, invRoot)
	if err != nil {
		t.Fatal(err)
	}
	store := catalog.Store{FS: fs, Root: p}
	// Planted in the tenant's own catalog: a claim of another tenant's job,
	// a window entry that left's history contradicts, an entry under
	// another entry's file name, a guess an earlier release made from the
	// prefix, and a file that does not decode.
	for _, e := range []catalog.Entry{
		{Path: sps[7].Path, Job: catalog.LogicalJob{Tenant: "o", Cluster: "c2", Job: "billing"}, Trigger: catalog.TriggerAdopted},
		{Path: sps[6].Path, Job: catalog.LogicalJob{Tenant: "t", Cluster: "c1", Job: "orders"}, JobID: ordersID, Trigger: catalog.TriggerWindow},
		{Path: sps[1].Path, Job: catalog.LogicalJob{Tenant: "t", Cluster: "c1", Job: "right"}, JobID: rightID, Trigger: catalog.TriggerDiscovered},
	} {
		if err := store.Put(ctx, e, false); err != nil {
			t.Fatal(err)
		}
	}
	// Job records: one of a job gone from every history, one that names
	// another tenant's job.
	goneID, plantedID := "ffffffff"+strings.Repeat("4", 8)+strings.Repeat("0", 16), "ffffffff"+strings.Repeat("5", 8)+strings.Repeat("0", 16)
	if _, err := (catalog.JobStore{FS: fs, Root: p}).Record(ctx, []catalog.JobRecord{
		{JobID: goneID, Job: catalog.LogicalJob{Tenant: "t", Cluster: "app-gone", Job: "ledger"}},
		{JobID: plantedID, Job: catalog.LogicalJob{Tenant: "o", Cluster: "c2", Job: "billing"}},
	}, func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	catDir := filepath.Join(tmp, "tenant", catalog.Dir)
	misnamed, _ := json.Marshal(catalog.Entry{Path: sps[8].Path, Job: catalog.LogicalJob{Tenant: "t", Cluster: "c1", Job: "orders"}, Trigger: catalog.TriggerAdopted})
	if err := os.WriteFile(filepath.Join(catDir, "000000000000000000000000.json"), misnamed, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(catDir, "111111111111111111111111.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}

	var notes []string
	owners, err := ownersIn(t, a, inv, listing, records, &notes)
	if err != nil {
		t.Fatal(err)
	}
	wantLineage := map[string]string{
		sps[0].Path: "t/c1/orders",
		sps[2].Path: "t/c1/left",
		sps[3].Path: "t/c1/payments",
	}
	wantIDs := map[string]string{sps[0].Path: ordersID, sps[2].Path: leftID}
	check := func(what string, owners core.SnapshotOwners) {
		t.Helper()
		if len(owners.Lineage) != len(wantLineage) || len(owners.JobIDs) != len(wantIDs) {
			t.Errorf("%s: lineage %v and job ids %v; want exactly %v and %v (notes %q)", what, owners.Lineage, owners.JobIDs, wantLineage, wantIDs, notes)
		}
		for p, j := range wantLineage {
			if owners.Lineage[p] != j {
				t.Errorf("%s: %s: lineage %q, want %q", what, p, owners.Lineage[p], j)
			}
		}
		for p, id := range wantIDs {
			if owners.JobIDs[p] != id {
				t.Errorf("%s: %s: job id %q, want %q", what, p, owners.JobIDs[p], id)
			}
		}
	}
	check("first run", owners)
	for id, j := range map[string]string{ordersID: "t/c1/orders", leftID: "t/c1/left", rightID: "t/c1/right", goneID: "t/app-gone/ledger", plantedID: ""} {
		if owners.Jobs[id] != j {
			t.Errorf("job %s is %q; want %q", id, owners.Jobs[id], j)
		}
	}
	for _, want := range []string{"000000000000000000000000.json", "111111111111111111111111.json", "is not of tenant t",
		"found from a job id prefix by an earlier release", sps[6].Path + " is claimed by", "job " + plantedID + " as o/c2/billing is no evidence", "FlinkStateSnapshot ns-o/p-2 names " + sps[5].Path} {
		found := false
		for _, n := range notes {
			found = found || strings.Contains(n, want)
		}
		if !found {
			t.Errorf("no note mentions %q: %q", want, notes)
		}
	}

	entries, err := store.List(ctx)
	if err == nil {
		t.Fatalf("strict List of a catalog with an undecodable file: %d entries, no error", len(entries))
	}
	entries, _, err = store.Claims(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range entries {
		if e.Evidence != "" {
			got[e.Path] = e.Trigger + " " + e.Job.String() + " " + e.JobID
		}
	}
	wantEntries := map[string]string{
		sps[0].Path: catalog.TriggerDiscovered + " t/c1/orders " + ordersID,
		sps[2].Path: catalog.TriggerDiscovered + " t/c1/left " + leftID,
		sps[3].Path: catalog.TriggerOperator + " t/c1/payments ",
	}
	if len(got) != len(wantEntries) {
		t.Errorf("catalogued with evidence %v; want %v", got, wantEntries)
	}
	for p, w := range wantEntries {
		if got[p] != w {
			t.Errorf("catalog entry of %s: %q, want %q", p, got[p], w)
		}
	}

	// The catalog now answers alone: without history or records, the same;
	// the window entry that left's history contradicted stands once that
	// history is gone (it is flinkmaint's own kind of record).
	a.Flink = clientsByURL{"http://c1": &acttest.Flink{}, "http://c2": &acttest.Flink{}}
	notes = nil
	wantLineage[sps[6].Path], wantIDs[sps[6].Path] = "t/c1/orders", ordersID
	again, err := ownersIn(t, a, inv, listing, nil, &notes)
	if err != nil {
		t.Fatal(err)
	}
	check("from the catalog alone", again)
}

// clientsByURL is one fake Flink per cluster REST URL.
type clientsByURL map[string]core.FlinkAPI

func (c clientsByURL) For(_ context.Context, url string) (core.FlinkAPI, error) { return c[url], nil }

// ownersIn runs savepointOwners inside an activity, where it heartbeats.
func ownersIn(t *testing.T, a *Activities, inv inventory.Inventory, listing cleanup.Listing, records []cleanup.LiveRecord, notes *[]string) (core.SnapshotOwners, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	type result struct{ Lineage, JobIDs, Jobs map[string]string }
	env.RegisterActivityWithOptions(func(ctx context.Context) (result, error) {
		o, err := a.lineage().Owners(ctx, inv, inv.Tenants, listing, records, a.lineage().JobHistory(ctx, inv), notes)
		return result{o.Lineage, o.JobIDs, o.Jobs}, err
	}, activity.RegisterOptions{Name: "Owners"})
	v, err := env.ExecuteActivity("Owners")
	if err != nil {
		return core.SnapshotOwners{}, err
	}
	var out result
	err = v.Get(&out)
	return core.SnapshotOwners{Lineage: out.Lineage, JobIDs: out.JobIDs, Jobs: out.Jobs}, err
}
