package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/internal/acttest"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// viewFlink is one cluster's REST answers for DescribeInventory.
type viewFlink struct {
	acttest.Flink
	version   string
	listErr   error
	statsErrs map[string]error
}

func (f *viewFlink) ClusterOverview(context.Context) (flink.ClusterOverview, error) {
	return flink.ClusterOverview{FlinkVersion: f.version}, nil
}

func (f *viewFlink) Checkpoints(ctx context.Context, jobID string) (flink.CheckpointingStatistics, error) {
	if err := f.statsErrs[jobID]; err != nil {
		return flink.CheckpointingStatistics{}, err
	}
	return f.Flink.Checkpoints(ctx, jobID)
}

func (f *viewFlink) ListJobs(ctx context.Context) ([]flink.JobOverview, error) {
	if f.listErr != nil {
		return nil, f.listErr
	}
	return f.Flink.ListJobs(ctx)
}

// byURL hands out each REST URL's client; an unknown URL is an error, as
// a malformed endpoint is.
type byURL map[string]core.FlinkAPI

func (b byURL) For(_ context.Context, u string) (core.FlinkAPI, error) {
	if c, ok := b[u]; ok {
		return c, nil
	}
	return nil, errors.New("no such endpoint")
}

// TestDescribeInventoryShowsTheFleetAndWhatItCannotSee: every cluster in
// scope with its dirs and version, each job with its state, recipe and
// restore points, the window's own skip reasons, the inventory's jobs no
// cluster runs, and each thing that cannot be seen as an error in the
// view, never as a failed activity.
func TestDescribeInventoryShowsTheFleetAndWhatItCannotSee(t *testing.T) {
	recipe := inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun, Jar: "/j.jar"}
	inv := inventory.Inventory{
		Tenants: []inventory.Tenant{{Name: "team-a", Root: "hdfs://nn/a"}, {Name: "team-b", Root: "hdfs://nn/b"}},
		Clusters: []inventory.Cluster{
			{Tenant: "team-a", ClusterID: "cluster-a", RESTURL: "http://a", CheckpointDir: "hdfs://nn/a/checkpoints", FlinkVersion: "1.19",
				Jobs: []inventory.JobSpec{{Name: "orders", Restart: recipe}, {Name: "gone", Restart: recipe}}},
			{Tenant: "team-b", ClusterID: "cluster-b", RESTURL: "http://b", Jobs: []inventory.JobSpec{{Name: "billing", Restart: recipe}}},
			{Tenant: "team-b", ClusterID: "cluster-bad", RESTURL: "http://bad"},
		},
		RetiredClusters: []string{"cluster-old"},
	}
	const orders, payments, twin1, twin2 = "a0000000000000000000000000000000", "b0000000000000000000000000000000", "c0000000000000000000000000000000", "d0000000000000000000000000000000"
	const failedEarly, dropped, broken = "e0000000000000000000000000000000", "f0000000000000000000000000000000", "90000000000000000000000000000000"
	const starting = "80000000000000000000000000000000"
	stats := func(chk, sp, from string) flink.CheckpointingStatistics {
		var s flink.CheckpointingStatistics
		s.Latest.Completed = &flink.CheckpointStatistics{ExternalPath: chk}
		if sp != "" {
			s.Latest.Savepoint = &flink.CheckpointStatistics{ExternalPath: sp}
		}
		if from != "" {
			s.Latest.Restored = &flink.RestoredCheckpoint{ExternalPath: from}
		}
		return s
	}
	a := &Activities{Inventory: acttest.Inventory(inv), Flink: byURL{
		"http://a": &viewFlink{version: "1.20.3", statsErrs: map[string]error{
			failedEarly: fmt.Errorf("checkpoint statistics: %w", flink.ErrCheckpointingDisabled),
			dropped:     fmt.Errorf("checkpoint statistics: %w", flink.ErrJobNotFound),
			broken:      errors.New("500 Internal Server Error"),
			starting:    fmt.Errorf("checkpoint statistics: %w", flink.ErrServerError),
		}, Flink: acttest.Flink{
			Jobs: []flink.JobOverview{
				{ID: orders, Name: "orders", State: flink.JobRunning},
				{ID: payments, Name: "payments", State: flink.JobRunning},
				{ID: twin1, Name: "twin", State: flink.JobRunning},
				{ID: twin2, Name: "twin", State: flink.JobRunning},
				{ID: failedEarly, Name: "bad-restore", State: flink.JobFailed},
				{ID: dropped, Name: "dropped", State: flink.JobCanceled},
				{ID: broken, Name: "broken", State: flink.JobRunning},
				{ID: starting, Name: "starting", State: flink.JobInitializing},
			},
			StatsByJob: map[string]flink.CheckpointingStatistics{
				orders:   stats("hdfs://nn/a/checkpoints/"+orders+"/chk-7", "hdfs://nn/a/savepoints/sp-1", "hdfs://nn/a/savepoints/sp-0"),
				payments: stats("hdfs://nn/a/checkpoints/"+payments+"/chk-3", "", ""),
			}}},
		"http://b": &viewFlink{listErr: errors.New("connection refused")},
	}}

	var view InventoryView
	if err := acttest.Run(t, a, a.DescribeInventory, DescribeInventoryInput{}, &view); err != nil {
		t.Fatal(err)
	}
	if len(view.Tenants) != 2 || len(view.Clusters) != 3 || view.Retired[0] != "cluster-old" || len(view.Errors) != 0 {
		t.Fatalf("view %+v", view)
	}
	ca := view.Clusters[0]
	if ca.ClusterID != "cluster-a" || ca.FlinkVersion != "1.20.3" || ca.CheckpointDir != "hdfs://nn/a/checkpoints" || ca.Error != "" {
		t.Fatalf("cluster-a %+v", ca)
	}
	jobs := map[string][]JobView{}
	for _, j := range ca.Jobs {
		jobs[j.Name] = append(jobs[j.Name], j)
	}
	if o := jobs["orders"][0]; o.State != "RUNNING" || o.Restart != inventory.RestartRESTJarRun || o.Note != "" ||
		!strings.HasSuffix(o.LatestCheckpoint, "/chk-7") || o.LatestSavepoint != "hdfs://nn/a/savepoints/sp-1" || o.RestoredFrom != "hdfs://nn/a/savepoints/sp-0" {
		t.Errorf("orders %+v", o)
	}
	if p := jobs["payments"][0]; p.Restart != "" || !strings.Contains(p.Note, "a window skips it: the inventory has no restart recipe") {
		t.Errorf("payments %+v; want the window's skip reason", p)
	}
	if tw := jobs["twin"]; len(tw) != 2 || !strings.Contains(tw[0].Note, `2 jobs named "twin" run on cluster-a`) {
		t.Errorf("twins %+v; want both, each with the window's skip reason", tw)
	}
	if g := jobs["gone"]; len(g) != 1 || g[0].ID != "" || !strings.Contains(g[0].Note, "the cluster does not list it") {
		t.Errorf("gone %+v; want the inventory's job that no cluster runs", g)
	}
	// What Flink cannot say of a job that never ran, or no longer knows,
	// is a note; any other error is a problem.
	if f := jobs["bad-restore"][0]; f.Error != "" || !strings.Contains(f.Note, "no checkpoint statistics") {
		t.Errorf("job that failed before it ran %+v; want a note, no error", f)
	}
	if d := jobs["dropped"][0]; d.Error != "" || !strings.Contains(d.Note, "no longer knows") {
		t.Errorf("dropped job %+v; want a note, no error", d)
	}
	if s := jobs["starting"][0]; s.Error != "" || !strings.Contains(s.Note, "INITIALIZING") {
		t.Errorf("initializing job %+v; want a note, no error", s)
	}
	if b := jobs["broken"][0]; !strings.Contains(b.Error, "500 Internal Server Error") {
		t.Errorf("job whose statistics fail %+v; want the error", b)
	}
	cb, bad := view.Clusters[1], view.Clusters[2]
	if cb.ClusterID != "cluster-b" || !strings.Contains(cb.Error, "list jobs at http://b: connection refused") ||
		len(cb.Jobs) != 1 || cb.Jobs[0].Name != "billing" {
		t.Errorf("cluster-b %+v; want the listing error and the inventory's job", cb)
	}
	if bad.ClusterID != "cluster-bad" || !strings.Contains(bad.Error, `REST endpoint "http://bad": no such endpoint`) {
		t.Errorf("cluster-bad %+v", bad)
	}
	if n := view.Problems(); n != 3 {
		t.Errorf("problems %d; want 3 (cluster-b, cluster-bad, the broken job)", n)
	}

	// A scope: one tenant, and names the inventory lacks said as errors.
	if err := acttest.Run(t, a, a.DescribeInventory, DescribeInventoryInput{Tenants: []string{"team-a", "team-x"}, Clusters: []string{"cluster-a", "cluster-z"}}, &view); err != nil {
		t.Fatal(err)
	}
	if len(view.Clusters) != 1 || view.Clusters[0].ClusterID != "cluster-a" || len(view.Errors) != 2 ||
		view.Errors[0] != `tenant "team-x" is not in the inventory; it has team-a, team-b` ||
		!strings.HasPrefix(view.Errors[1], `cluster "cluster-z" is not in the inventory; it has cluster-a, cluster-b, cluster-bad`) {
		t.Fatalf("scoped view %+v", view)
	}

	// An empty inventory has no tenant a scope can name.
	a.Inventory = acttest.Inventory(inventory.Inventory{})
	if err := acttest.Run(t, a, a.DescribeInventory, DescribeInventoryInput{Tenants: []string{"team-a"}}, &view); err != nil {
		t.Fatal(err)
	}
	if len(view.Errors) != 1 || view.Errors[0] != `tenant "team-a" is not in the inventory; it has none` {
		t.Fatalf("scoped view of an empty inventory %+v", view)
	}

	// An inventory that cannot be read is a finding too.
	a.Inventory = failingInventory{errors.New("static inventory /etc/inv.yaml: line 3: unknown key")}
	if err := acttest.Run(t, a, a.DescribeInventory, DescribeInventoryInput{}, &view); err != nil {
		t.Fatal(err)
	}
	if len(view.Errors) != 1 || !strings.Contains(view.Errors[0], "line 3: unknown key") || view.Problems() != 1 {
		t.Fatalf("view of an unreadable inventory %+v", view)
	}
}

type failingInventory struct{ err error }

func (f failingInventory) Discover(context.Context) (inventory.Inventory, error) {
	return inventory.Inventory{}, f.err
}
