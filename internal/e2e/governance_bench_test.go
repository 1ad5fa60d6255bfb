//go:build realpeers

package e2e_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/flinkmaint/flinkmaint/activities"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// TestGovernanceBench measures one governance run in trash mode over a
// large tree of retired job dirs on the sandbox HDFS, once per worker
// count: the plan (listing gathered in as many parts as workers), the
// execution of its shards across the workers, items per second, and the
// workers' peak RSS. It prints figures and checks only that every item
// was trashed. The tree is built once under /flinkmaint-bench/governance
// and reused: after each run it is moved back from the trash.
//
//	FLINKMAINT_BENCH_GOVERNANCE=1      run it (make bench-governance)
//	FLINKMAINT_BENCH_ITEMS=500000      retired job dirs (plan items)
//	FLINKMAINT_BENCH_FILES_PER_ITEM=1  files in each
//	FLINKMAINT_BENCH_WORKERS=1,3       worker counts, one run each
func TestGovernanceBench(t *testing.T) {
	if os.Getenv("FLINKMAINT_BENCH_GOVERNANCE") == "" {
		t.Skip("a benchmark, not a check: make bench-governance runs it (FLINKMAINT_BENCH_GOVERNANCE=1)")
	}
	items := benchInt(t, "FLINKMAINT_BENCH_ITEMS", 500_000)
	filesPer := benchInt(t, "FLINKMAINT_BENCH_FILES_PER_ITEM", 1)
	var workerCounts []int
	for _, f := range strings.Split(envOr("FLINKMAINT_BENCH_WORKERS", "1,3"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 8 {
			t.Fatalf("FLINKMAINT_BENCH_WORKERS=%q: want worker counts from 1 to 8, comma-separated", os.Getenv("FLINKMAINT_BENCH_WORKERS"))
		}
		workerCounts = append(workerCounts, n)
	}
	peers := sandbox.RequirePeers(t)
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Hour)
	defer cancel()

	base := fmt.Sprintf("/flinkmaint-bench/governance/%dx%d", items, filesPer)
	hc, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{peers.HDFS.NameNode}, User: peers.HDFS.User})
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	tree := sandbox.RetiredJobTree{Dir: base + "/tenant/checkpoints", Jobs: items, FilesPerJob: filesPer, Clients: 8, ModTime: time.Now().Add(-30 * 24 * time.Hour)}
	if cs, err := hc.GetContentSummary(tree.Dir); err != nil || cs.FileCount() != tree.Files() || cs.DirectoryCount() != 2*items+1 {
		_ = hc.RemoveAll(base)
		if err := hc.MkdirAll(tree.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err := tree.Write(ctx, peers, func(done int) {
			if done%(max(items/10, 100)) == 0 {
				t.Logf("tree: %d of %d job dirs after %s", done, items, time.Since(start).Round(time.Second))
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		d := time.Since(start)
		t.Logf("built %d files in %d job dirs in %s (%.0f job dirs/s)", tree.Files(), items, d.Round(time.Second), float64(items)/d.Seconds())
	}
	for _, d := range []string{"/tenant/savepoints", "/trash", "/plans"} {
		if err := hc.MkdirAll(base+d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root := peers.HDFS.URI + base
	c := peers.Clusters[0]
	invPath := writeInventory(t, inventory.Static{
		Tenants: []inventory.Tenant{{Name: "bench", Root: root + "/tenant"}},
		Clusters: []inventory.Cluster{{Tenant: "bench", ClusterID: c.ClusterID, Mode: inventory.ModeSession, RESTURL: c.RESTURL,
			CheckpointDir: root + "/tenant/checkpoints", SavepointDir: root + "/tenant/savepoints"}},
	})

	var figures []string
	// One queue for every run: the tenant lock a run takes lives on it.
	queue := "bench-gov-" + randomHex(3)
	for _, n := range workerCounts {
		runID := fmt.Sprintf("bench-%dw-%s", n, randomHex(3))
		fleet := startWorkers(t, fmt.Sprintf(`temporal:
  address: %s
worker:
  taskQueue: %s
  shutdownTimeout: 5s
http:
  listen: ""
storage:
  hdfsUser: %s
  writableRoots: [%q]
inventory:
  staticFile: %s
cleanup:
  trashRoot: %s
  planDir: %s
`, tmp.HostPort, queue, peers.HDFS.User, root, invPath, root+"/trash", root+"/plans"), n)
		in := workflows.GovernanceInput{RunID: runID, Reason: "governance bench", Mode: workflows.ModeAuto,
			Scope:       activities.Scope{Tenants: []string{"bench"}},
			GatherParts: max(n, 2), ExecuteParallelism: 2 * n}
		wfID := workflows.GovernanceWorkflowID(runID)
		start := time.Now()
		wf, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wfID, TaskQueue: queue}, workflows.GovernanceWorkflowType, in)
		if err != nil {
			t.Fatal(err)
		}
		var rep workflows.GovernanceReport
		if err := wf.Get(ctx, &rep); err != nil {
			t.Fatalf("governance run with %d workers: %v\n%s", n, err, fleet.tails())
		}
		wall := time.Since(start)
		if rep.Execution == nil || rep.Execution.Items != int64(items) {
			t.Fatalf("run with %d workers trashed %+v; want %d items", n, rep.Execution, items)
		}
		var peak int64
		for _, p := range fleet {
			if rss, err := p.PeakRSS(); err == nil {
				peak = max(peak, rss)
			}
			p.Stop()
		}
		ph := governancePhases(t, ctx, tmp.Client, wfID)
		line := fmt.Sprintf("%d worker(s): %d items (%d files) in %s; plan %s (gather in %d parts %s), execute %s = %.0f items/s (%d shard activities, %d at once), tally %s; peak worker RSS %.0f MiB; %d history events",
			n, items, tree.Files(), wall.Round(time.Millisecond), ph.plan.Round(time.Millisecond), in.GatherParts, ph.gather.Round(time.Millisecond),
			ph.execute.Round(time.Millisecond), float64(items)/ph.execute.Seconds(), ph.parts, in.ExecuteParallelism,
			ph.tally.Round(time.Millisecond), float64(peak)/(1<<20), ph.events)
		t.Log(line)
		figures = append(figures, line)

		// Put the tree back for the next run: one rename of the trashed
		// checkpoint root, whose job dirs keep their times.
		trashed := base + "/trash/" + runID + tree.Dir
		if err := hc.Remove(tree.Dir); err != nil {
			t.Fatalf("remove the emptied %s: %v", tree.Dir, err)
		}
		if err := hc.Rename(trashed, tree.Dir); err != nil {
			t.Fatalf("move %s back: %v", trashed, err)
		}
		for _, d := range []string{base + "/trash/" + runID, base + "/trash/_audit/" + runID, base + "/plans/" + runID} {
			if err := hc.RemoveAll(d); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, f := range figures {
		fmt.Println("governance bench:", f)
	}
}

// phases are the parts of a governance run, from its history.
type phases struct {
	gather, plan, execute, tally time.Duration
	events, parts                int
}

// governancePhases reads when each part of run wfID began and ended: the
// plan from the first gather scheduled to the plan completed, the
// execution from the first shard scheduled to the last completed.
func governancePhases(t *testing.T, ctx context.Context, c client.Client, wfID string) phases {
	t.Helper()
	kind := map[int64]string{}
	first, last := map[string]time.Time{}, map[string]time.Time{}
	var ph phases
	it := c.GetWorkflowHistory(ctx, wfID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		ph.events++
		at := e.GetEventTime().AsTime()
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			name := a.GetActivityType().GetName()
			kind[e.GetEventId()] = name
			if name == "ExecuteCleanupPart" {
				ph.parts++
			}
			if _, ok := first[name]; !ok {
				first[name] = at
			}
		}
		if a := e.GetActivityTaskCompletedEventAttributes(); a != nil {
			last[kind[a.GetScheduledEventId()]] = at
		}
	}
	planStart := first["PlanCleanup"]
	if g, ok := first["GatherCleanup"]; ok {
		planStart = g
		ph.gather = last["GatherCleanup"].Sub(g)
	}
	ph.plan = last["PlanCleanup"].Sub(planStart)
	ph.execute = last["ExecuteCleanupPart"].Sub(first["ExecuteCleanupPart"])
	ph.tally = last["TallyCleanup"].Sub(first["TallyCleanup"])
	return ph
}

func benchInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
