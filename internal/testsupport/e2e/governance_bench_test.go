//go:build realpeers

package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// TestGovernanceBench measures one governance run in trash mode over a
// large tree of retired job dirs on the sandbox HDFS, once per worker
// count: the plan (listing gathered in as many parts as workers), the
// execution of its shards across the workers, items per second, and the
// workers' peak RSS; then the restore of that run (governance restore),
// which puts the tree back for the next run, items per second again. It
// prints figures and checks only that every item was trashed and put
// back. The tree is built once under /flinkmaint-bench/governance and
// reused.
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
	b := newGovernanceBench(t, fmt.Sprintf("%dx%d", items, filesPer))
	tree := sandbox.RetiredJobTree{Dir: b.base + "/tenant/checkpoints", Jobs: items, FilesPerJob: filesPer, Clients: 8, ModTime: time.Now().Add(-30 * 24 * time.Hour)}
	b.ensureTree(tree.Dir, tree.Files(), 2*items+1, false, func(progress func(int)) error { return tree.Write(b.ctx, b.peers, progress) })

	var figures []string
	for _, n := range b.workerCounts {
		rep, line := b.run(n, workflows.ModeAuto, tree.Files())
		if rep.Execution == nil || rep.Execution.Items != int64(items) {
			t.Fatalf("run with %d workers trashed %+v; want %d items", n, rep.Execution, items)
		}
		figures = append(figures, line)
		b.removeRun(rep.RunID)
	}
	for _, f := range figures {
		fmt.Println("governance bench:", f)
	}
}

// TestGovernanceFleetBench measures planning over the checkpoints of a
// fleet of incremental jobs (sandbox.FleetTree): every retained _metadata
// is read and every shared file looked up among their references. The
// plan is made (mode plan, nothing executed) once per worker count; it
// checks only that the plan holds exactly the shared files no checkpoint
// references. The _metadata come from a local dir written by the
// checkpoint package's TestWriteFleetMetadata with the same shape.
//
//	FLINKMAINT_BENCH_FLEET=1                 run it (make bench-governance-fleet)
//	FLINKMAINT_BENCH_FLEET_METADATA=dir      the _metadata, <job>/chk-<c>/_metadata
//	FLINKMAINT_BENCH_FLEET_JOBS=5000         jobs
//	FLINKMAINT_BENCH_FLEET_CHECKPOINTS=10    retained checkpoints per job
//	FLINKMAINT_BENCH_FLEET_SHARED=180        shared files per job
//	FLINKMAINT_BENCH_FLEET_REFERENCED=155    of them referenced by a checkpoint
//	FLINKMAINT_BENCH_WORKERS=1,3             worker counts, one run each
func TestGovernanceFleetBench(t *testing.T) {
	if os.Getenv("FLINKMAINT_BENCH_FLEET") == "" {
		t.Skip("a benchmark, not a check: make bench-governance-fleet runs it (FLINKMAINT_BENCH_FLEET=1)")
	}
	metaDir := os.Getenv("FLINKMAINT_BENCH_FLEET_METADATA")
	if metaDir == "" {
		t.Fatal("FLINKMAINT_BENCH_FLEET_METADATA is empty: want the dir TestWriteFleetMetadata -fleet-out wrote")
	}
	jobs := benchInt(t, "FLINKMAINT_BENCH_FLEET_JOBS", 5000)
	checkpoints := benchInt(t, "FLINKMAINT_BENCH_FLEET_CHECKPOINTS", 10)
	shared := benchInt(t, "FLINKMAINT_BENCH_FLEET_SHARED", 180)
	referenced := benchInt(t, "FLINKMAINT_BENCH_FLEET_REFERENCED", 155)
	if referenced > shared {
		t.Fatalf("FLINKMAINT_BENCH_FLEET_REFERENCED=%d exceeds FLINKMAINT_BENCH_FLEET_SHARED=%d", referenced, shared)
	}
	b := newGovernanceBench(t, fmt.Sprintf("fleet-%dx%dx%d", jobs, checkpoints, shared))
	tree := sandbox.FleetTree{Dir: b.base + "/tenant/checkpoints", Jobs: jobs, Checkpoints: checkpoints, SharedPerJob: shared, Clients: 8,
		SharedModTime: time.Now().Add(-30 * 24 * time.Hour),
		Metadata: func(i, c int) ([]byte, error) {
			return os.ReadFile(filepath.Join(metaDir, fmt.Sprintf("%032x", i+1), fmt.Sprintf("chk-%d", c), "_metadata"))
		}}
	b.ensureTree(tree.Dir, tree.Files(), tree.Dirs(), true, func(progress func(int)) error { return tree.Write(b.ctx, b.peers, progress) })

	want := int64(jobs * (shared - referenced))
	var figures []string
	for _, n := range b.workerCounts {
		rep, line := b.run(n, workflows.ModePlan, tree.Files())
		var planned int64
		for _, tr := range rep.Tenants {
			planned += tr.PlannedItems
		}
		if planned != want {
			t.Fatalf("run with %d workers planned %d items; want the %d unreferenced shared files", n, planned, want)
		}
		figures = append(figures, line)
		b.removeRun(rep.RunID)
	}
	for _, f := range figures {
		fmt.Println("governance fleet bench:", f)
	}
}

// governanceBench is what the governance benchmarks share: the sandbox
// peers, a dev server, one task queue for every run (the tenant lock a
// run takes lives on it), and a tenant rooted at base on the sandbox HDFS.
type governanceBench struct {
	t            *testing.T
	ctx          context.Context
	peers        *sandbox.Peers
	tmp          *sandbox.Temporal
	hc           *hdfs.Client
	base, root   string
	invPath      string
	queue        string
	workerCounts []int
}

func newGovernanceBench(t *testing.T, name string) *governanceBench {
	t.Helper()
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
	t.Cleanup(cancel)
	hc, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{peers.HDFS.NameNode}, User: peers.HDFS.User})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hc.Close() })
	base := "/flinkmaint-bench/governance/" + name
	root := peers.HDFS.URI + base
	c := peers.Clusters[0]
	invPath := peertest.WriteInventory(t, inventory.Static{
		Tenants: []inventory.Tenant{{Name: "bench", Root: root + "/tenant"}},
		Clusters: []inventory.Cluster{{Tenant: "bench", ClusterID: c.ClusterID, Mode: inventory.ModeSession, RESTURL: c.RESTURL,
			CheckpointDir: root + "/tenant/checkpoints", SavepointDir: root + "/tenant/savepoints"}},
	})
	return &governanceBench{t: t, ctx: ctx, peers: peers, tmp: tmp, hc: hc, base: base, root: root, invPath: invPath,
		queue: "bench-gov-" + peertest.RandomHex(3), workerCounts: workerCounts}
}

// ensureTree builds the tree at dir with write unless it is there already,
// whole (files files and dirs dirs, dir included) and, if byURI, built
// for this sandbox HDFS: a tree whose _metadata name files by the HDFS URI
// has it stamped beside it. It also makes the tenant's other dirs.
func (b *governanceBench) ensureTree(dir string, files, dirs int, byURI bool, write func(progress func(done int)) error) {
	t := b.t
	stamp := b.base + "/built-for"
	built, _ := b.hc.ReadFile(stamp)
	stale := byURI && string(built) != b.peers.HDFS.URI
	if cs, err := b.hc.GetContentSummary(dir); err != nil || cs.FileCount() != files || cs.DirectoryCount() != dirs || stale {
		_ = b.hc.RemoveAll(b.base)
		if err := b.hc.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err := write(func(done int) {
			if done%1000 == 0 {
				t.Logf("tree: %d job dirs after %s", done, time.Since(start).Round(time.Second))
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		d := time.Since(start)
		t.Logf("built %d files in %d dirs in %s (%.0f files/s)", files, dirs, d.Round(time.Second), float64(files)/d.Seconds())
		if err := sandbox.WriteFile(b.hc, stamp, []byte(b.peers.HDFS.URI)); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"/tenant/savepoints", "/trash", "/plans"} {
		if err := b.hc.MkdirAll(b.base+d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// run starts n workers, runs one governance of the tenant in mode and
// stops them; it returns the report and a line of figures.
func (b *governanceBench) run(n int, mode string, files int) (*workflows.GovernanceReport, string) {
	t := b.t
	runID := fmt.Sprintf("bench-%dw-%s", n, peertest.RandomHex(3))
	cfg := peertest.WorkerConfig(b.tmp.HostPort, b.queue)
	cfg.Storage.HDFSUser = b.peers.HDFS.User
	cfg.Storage.WritableRoots = []string{b.root}
	cfg.Inventory.StaticFile = b.invPath
	cfg.Cleanup.TrashRoot, cfg.Cleanup.PlanDir = b.root+"/trash", b.root+"/plans"
	fleet := startWorkers(t, peertest.WorkerConfigYAML(t, cfg), n, nil)
	in := workflows.GovernanceInput{RunID: runID, Reason: "governance bench", Mode: mode,
		Scope:       core.Scope{Tenants: []string{"bench"}},
		GatherParts: max(n, 2), ExecuteParallelism: 2 * n}
	wfID := workflows.GovernanceWorkflowID(runID)
	start := time.Now()
	wf, err := b.tmp.Client.ExecuteWorkflow(b.ctx, client.StartWorkflowOptions{ID: wfID, TaskQueue: b.queue}, workflows.GovernanceWorkflowType, in)
	if err != nil {
		t.Fatal(err)
	}
	var rep workflows.GovernanceReport
	if err := wf.Get(b.ctx, &rep); err != nil {
		t.Fatalf("governance run with %d workers: %v\n%s", n, err, fleet.tails())
	}
	wall := time.Since(start)
	restored := ""
	if mode == workflows.ModeAuto && rep.Execution != nil {
		restored = b.restore(runID, rep.Execution.Items, fleet)
	}
	var peak int64
	for _, p := range fleet {
		if rss, err := p.PeakRSS(); err == nil {
			peak = max(peak, rss)
		}
		p.Stop()
	}
	ph := governancePhases(t, b.ctx, b.tmp.Client, wfID)
	var planned, kept int64
	for _, tr := range rep.Tenants {
		planned += tr.PlannedItems
		for _, k := range tr.Kept {
			kept += k.Items
		}
	}
	line := fmt.Sprintf("%d worker(s): %d files, %d items planned, %d kept, in %s; plan %s (gather in %d parts %s)",
		n, files, planned, kept, wall.Round(time.Millisecond), ph.plan.Round(time.Millisecond), in.GatherParts, ph.gather.Round(time.Millisecond))
	if ph.parts > 0 {
		line += fmt.Sprintf(", execute %s = %.0f items/s (%d shard activities, %d at once; %.2f namenode calls an item), tally %s",
			ph.execute.Round(time.Millisecond), float64(planned)/ph.execute.Seconds(), ph.parts, in.ExecuteParallelism,
			float64(ph.namenodeCalls)/float64(planned), ph.tally.Round(time.Millisecond))
	}
	line += fmt.Sprintf("; peak worker RSS %.0f MiB; %d history events%s", float64(peak)/(1<<20), ph.events, restored)
	t.Log(line)
	return &rep, line
}

// restore puts the trash of run runID back with a governance restore on
// the running workers and returns its figures.
func (b *governanceBench) restore(runID string, items int64, fleet workerFleet) string {
	t := b.t
	start := time.Now()
	wf, err := b.tmp.Client.ExecuteWorkflow(b.ctx, client.StartWorkflowOptions{ID: workflows.GovernanceRestoreWorkflowID(runID), TaskQueue: b.queue},
		workflows.GovernanceRestoreWorkflowType, workflows.GovernanceRestoreInput{RunID: runID, By: "bench", Reason: "put the tree back for the next run"})
	if err != nil {
		t.Fatal(err)
	}
	var st workflows.GovernanceRestoreState
	if err := wf.Get(b.ctx, &st); err != nil {
		t.Fatalf("restore of %s: %v\n%s", runID, err, fleet.tails())
	}
	wall := time.Since(start)
	if st.Result == nil || int64(st.Result.Counts[cleanup.OutcomeRestored]) != items {
		t.Fatalf("restore of %s: %+v; want all %d items back", runID, st.Result, items)
	}
	return fmt.Sprintf("; restore %s = %.0f items/s", wall.Round(time.Millisecond), float64(items)/wall.Seconds())
}

// removeRun removes what run runID left on HDFS: its trash, audit, restore
// record and plan.
func (b *governanceBench) removeRun(runID string) {
	for _, d := range []string{b.base + "/trash/" + runID, b.base + "/trash/_audit/" + runID, b.base + "/trash/_audit/_restore/" + runID, b.base + "/plans/" + runID} {
		if err := b.hc.RemoveAll(d); err != nil {
			b.t.Fatal(err)
		}
	}
}

// phases are the parts of a governance run, from its history.
type phases struct {
	gather, plan, execute, tally time.Duration
	events, parts                int
	// namenodeCalls are what the parts' executors asked of the namenode.
	namenodeCalls uint64
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
			name := kind[a.GetScheduledEventId()]
			last[name] = at
			if p := a.GetResult().GetPayloads(); name == "ExecuteCleanupPart" && len(p) == 1 {
				var part governance.ExecuteCleanupPartResult
				if err := json.Unmarshal(p[0].GetData(), &part); err != nil {
					t.Fatalf("result of %s: %v", name, err)
				}
				ph.namenodeCalls += part.NamenodeCalls
			}
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
