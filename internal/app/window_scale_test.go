//go:build realpeers

package app_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/proto"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/temporalconn"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/flinksim"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/workerproc"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// Settings of the fleet-scale window test, for the benchmarks
// (scripts/bench-window.sh): the number of jobs (default 300), the
// savepoint concurrency (default 10) and how long each simulated savepoint
// takes (default 20ms).
const (
	EnvScaleJobs           = "FLINKMAINT_SCALE_JOBS"
	EnvScaleConcurrency    = "FLINKMAINT_SCALE_CONCURRENCY"
	EnvScaleSavepointDelay = "FLINKMAINT_SCALE_SAVEPOINT_DELAY"
	// EnvScaleWorkerProcess=1 runs the worker as its own process (the
	// worker binary), so that its resident set is measured alone.
	EnvScaleWorkerProcess = "FLINKMAINT_SCALE_WORKER_PROCESS"
)

// scaleSetting reads a positive integer setting, or def.
func scaleSetting(t *testing.T, env string, def int) int {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: use a positive number", env, v)
	}
	return n
}

// peakRSS is this process's peak resident set (VmHWM), or "unknown".
func peakRSS() string {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// TestMaintenanceWindowHistoryStaysBoundedAtFleetScale runs a window over a
// simulated fleet (Flink's REST API simulated; Temporal, the worker and
// storage real) with a small per-run event budget: 300 jobs against the
// smallest budget a window accepts (500 events), so that each phase spans
// several runs, as a fleet of thousands does against the default budget
// (the benchmark, scripts/bench-window.sh, runs 5000 jobs with a budget of
// 2000). The
// window must hand over to fresh runs inside the savepoint and restart
// phases, each run's history must stay within the budget plus the drain of
// the children running at the handover, and every job must still be
// stopped once and restarted once from exactly its recorded savepoint.
func TestMaintenanceWindowHistoryStaysBoundedAtFleetScale(t *testing.T) {
	t.Parallel()
	n := scaleSetting(t, EnvScaleJobs, 300)
	concurrency := scaleSetting(t, EnvScaleConcurrency, 10)
	savepointDelay := 20 * time.Millisecond
	if v := os.Getenv(EnvScaleSavepointDelay); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: use a positive duration such as 2s", EnvScaleSavepointDelay, v)
		}
		savepointDelay = d
	}
	const clusters = 4
	maxEventsPerRun := 500
	if n >= 1000 {
		maxEventsPerRun = 2000 // the benchmark's fleets, and the budget its figures were measured with
	}
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	sim, err := flinksim.Start(flinksim.Options{SavepointDelay: savepointDelay, CheckpointDelay: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	root := t.TempDir()
	jar := filepath.Join(root, "job.jar")
	if err := os.WriteFile(jar, []byte("PK\x05\x06"+strings.Repeat("\x00", 18)), 0o600); err != nil {
		t.Fatal(err)
	}
	var static inventory.Static
	for c := range clusters {
		id := fmt.Sprintf("sim-%d", c)
		tenantRoot := "file://" + filepath.Join(root, id)
		if err := os.MkdirAll(filepath.Join(root, id, "checkpoints"), 0o755); err != nil {
			t.Fatal(err)
		}
		tenant := "scale-" + id
		static.Tenants = append(static.Tenants, inventory.Tenant{Name: tenant, Root: tenantRoot})
		cl := inventory.Cluster{Tenant: tenant, ClusterID: id, Mode: inventory.ModeSession, RESTURL: sim.AddCluster(id),
			CheckpointDir: tenantRoot + "/checkpoints", SavepointDir: tenantRoot + "/savepoints"}
		for j := c; j < n; j += clusters {
			name := fmt.Sprintf("scale-job-%05d", j)
			sim.AddJob(id, name, cl.CheckpointDir)
			cl.Jobs = append(cl.Jobs, inventory.JobSpec{Name: name, Restart: inventory.RestartRecipe{
				Kind: inventory.RestartRESTJarRun, Jar: jar, EntryClass: "com.example.Job", ProgramArgs: []string{"--job-name", name}}})
		}
		static.Clusters = append(static.Clusters, cl)
	}

	const queue = "window-scale"
	invPath := peertest.WriteInventory(t, static)
	var workerProc *workerproc.Process
	switch v := os.Getenv(EnvScaleWorkerProcess); v {
	case "1":
		dir := t.TempDir()
		wcfg := peertest.WorkerConfig(tmp.HostPort, queue)
		wcfg.Worker.MaxConcurrentActivities = 2 * concurrency
		wcfg.Log.Level = "warn"
		wcfg.Storage.WritableRoots = []string{"file://" + root}
		wcfg.Inventory.StaticFile = invPath
		cfgPath := peertest.WriteWorkerConfig(t, wcfg)
		workerProc = workerproc.New(t, workerproc.Build(t), cfgPath, filepath.Join(dir, "worker.log"))
		workerProc.Start()
	case "", "0":
		cfg := config.Default()
		cfg.Storage.WritableRoots = []string{"file://" + root}
		cfg.Inventory.StaticFile = invPath
		acts := peertest.NewPorts(t, cfg, "window-scale")
		// The SDK fails a workflow task whose coroutine has not yielded within
		// the deadlock timeout (1s) of wall time. Under the race detector, on
		// two cores shared with the other packages' tests, a task that encodes
		// a thousand jobs' manifest can be descheduled that long without
		// blocking anything; the SDK then goes on beside the coroutine and the
		// race detector reports the SDK. This test bounds history, not latency.
		w := worker.New(tmp.Client, queue, worker.Options{MaxConcurrentActivityExecutionSize: 2 * concurrency,
			DeadlockDetectionTimeout: 30 * time.Second})
		app.Register(w, acts)
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
	default:
		t.Fatalf("%s=%q: use 1 (worker process) or 0 (in this process)", EnvScaleWorkerProcess, v)
	}

	in := workflows.WindowInput{
		WindowID: "scale-" + peertest.RandomHex(4), Reason: "fleet-scale history test",
		Scope: core.Scope{IncludeJobs: []string{"scale-job-*"}},
		Policy: workflows.WindowPolicy{
			ManifestDir: "file://" + root + "/windows",
			Savepoint:   workflows.SavepointPolicy{Concurrency: concurrency},
			Network:     workflows.NetworkPolicy{Skip: true},
			Restart: workflows.RestartPolicy{CanarySize: 1, WaveSize: n / 2, Concurrency: concurrency,
				Soak: workflows.Duration(time.Millisecond), RunningTimeout: workflows.Duration(time.Minute), CheckpointTimeout: workflows.Duration(time.Minute)},
			Cleanup: workflows.CleanupPolicy{Mode: workflows.CleanupModeSkip},
			History: workflows.HistoryPolicy{MaxEventsPerRun: maxEventsPerRun},
		},
	}
	start := time.Now()
	run, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.WindowWorkflowID(in.WindowID), TaskQueue: queue},
		workflows.MaintenanceWindowWorkflowType, in)
	if err != nil {
		t.Fatal(err)
	}
	firstRunID := run.GetRunID() // Get follows the chain and moves the run ID along
	var rep workflows.WindowReport
	if err := run.Get(ctx, &rep); err != nil {
		if workerProc != nil {
			t.Fatalf("%v\nworker log:\n%s", err, workerProc.Tail())
		}
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	workerRSS := "in this process"
	if workerProc != nil {
		b, err := workerProc.PeakRSS()
		if err != nil {
			t.Fatalf("worker RSS: %v", err)
		}
		workerRSS = fmt.Sprintf("%.0f MiB (worker process alone)", float64(b)/(1<<20))
	}
	if rep.Phase != workflows.WindowPhaseCompleted || len(rep.Jobs) != n {
		t.Fatalf("window ended %s with %d of %d jobs", rep.Phase, len(rep.Jobs), n)
	}

	// Every job stopped once and restarted once, from its own savepoint.
	recorded := map[string]workflows.JobProgress{}
	for _, j := range rep.Jobs {
		recorded[j.Target.ClusterID+"/"+j.Target.JobName] = j
		if j.SavepointState != workflows.StepDone || j.RestartState != workflows.StepDone || j.RestoredFrom != j.SavepointPath {
			t.Errorf("%s: savepoint %s %q, restart %s restored from %q: %s", j.Target.Key, j.SavepointState, j.SavepointPath,
				j.RestartState, j.RestoredFrom, firstNonEmpty(j.SavepointError, j.RestartError))
		}
	}
	for c := range clusters {
		id := fmt.Sprintf("sim-%d", c)
		running := map[string]int{}
		for _, job := range sim.Jobs(id) {
			if job.Stops > 1 {
				t.Errorf("%s/%s (%s) stopped %d times", id, job.Name, job.ID, job.Stops)
			}
			if job.State == "RUNNING" {
				running[job.Name]++
				if want := recorded[id+"/"+job.Name].SavepointPath; job.RestoredFrom != want {
					t.Errorf("%s/%s runs restored from %q; its savepoint is %q", id, job.Name, job.RestoredFrom, want)
				}
			}
		}
		for name, k := range running {
			if k != 1 {
				t.Errorf("%s/%s runs %d times", id, name, k)
			}
		}
		if len(running) != len(static.Clusters[c].Jobs) {
			t.Errorf("cluster %s: %d of %d jobs running after the window", id, len(running), len(static.Clusters[c].Jobs))
		}
	}

	// The manifest names every job's savepoint.
	manifest, err := os.ReadFile(strings.TrimPrefix(rep.Manifest, "file://"))
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range rep.Jobs {
		if !strings.Contains(string(manifest), j.SavepointPath) {
			t.Errorf("manifest lacks %s's savepoint %s", j.Target.Key, j.SavepointPath)
		}
	}

	// Each run's history within the budget, plus the children that were
	// running when it handed over (at most concurrency, each a handful of
	// events) and the hand-over itself.
	runs := windowRuns(t, ctx, tmp.Client, run.GetID(), firstRunID)
	slack := concurrency*12 + 100
	handovers := map[string]int{}
	total, totalBytes, largest, largestBytes, carried := 0, 0, 0, 0, 0
	for i, r := range runs {
		total += r.events
		totalBytes += r.bytes
		largest, largestBytes, carried = max(largest, r.events), max(largestBytes, r.bytes), max(carried, r.carried)
		if r.events > maxEventsPerRun+slack {
			t.Errorf("run %d (%s): %d events; budget %d + slack %d", i, r.runID, r.events, maxEventsPerRun, slack)
		}
		// Temporal suggests a hand-over at 4 MiB of history by default.
		if r.bytes > 4<<20 {
			t.Errorf("run %d (%s): %.1f MiB of history", i, r.runID, float64(r.bytes)/(1<<20))
		}
		if r.nextPhase != "" {
			handovers[r.nextPhase]++
		}
	}
	for _, phase := range []string{workflows.WindowPhaseSavepointAll, workflows.WindowPhaseRestart} {
		if handovers[phase] == 0 {
			t.Errorf("no run handed over inside phase %s (hand-overs by phase: %v)", phase, handovers)
		}
	}
	// A run that resumed inside savepoint-all from carried state and
	// handed over again: the replay tests keep both paths deterministic.
	if dir := os.Getenv(sandbox.EnvCaptureHistory); dir != "" && len(runs) > 1 {
		sandbox.CaptureHistory(t, tmp.Client, run.GetID(), runs[1].runID, dir+"/window-handover.json.gz")
	}
	// Savepoint-all against its ideal: ceil(N/C) rounds of one savepoint.
	if d, ok := rep.PhaseDuration(workflows.WindowPhaseSavepointAll); ok {
		ideal := time.Duration((n+concurrency-1)/concurrency) * savepointDelay
		t.Logf("savepoint-all: %d jobs at concurrency %d, %s per simulated savepoint: makespan %s, ideal ceil(N/C)*T %s, ratio %.2f",
			n, concurrency, savepointDelay, d.Round(time.Millisecond), ideal, float64(d)/float64(ideal))
	}
	savepointBreakdown(t, ctx, tmp.Client, runs)
	restart, _ := rep.PhaseDuration(workflows.WindowPhaseRestart)
	t.Logf("restart phase %s; peak RSS of the worker %s; of this test process %s", restart.Round(time.Millisecond), workerRSS, peakRSS())
	t.Logf("%d jobs, %d clusters, concurrency %d: window completed in %s over %d runs (hand-overs by phase %v); "+
		"history: %d events / %.1f MiB in total, largest run %d events / %.2f MiB, largest carried state %.1f KiB as stored; manifest %.1f KiB",
		n, clusters, concurrency, elapsed.Round(time.Second), len(runs), handovers,
		total, float64(totalBytes)/(1<<20), largest, float64(largestBytes)/(1<<20), float64(carried)/1024, float64(len(manifest))/1024)
}

// runHistory is one run of a workflow chained by continue-as-new.
type runHistory struct {
	runID     string
	events    int
	bytes     int
	carried   int    // bytes of the state the run started with, as stored
	nextPhase string // phase carried into the next run, if it continued as new
	// savepoints are the run's savepoint children, in the order started.
	savepoints []childSpan
	// refill sums, over each savepoint child that completed, the time from
	// its completion reaching the run to the next child's start.
	refill      time.Duration
	refillCount int
}

// childSpan is a child workflow as its parent saw it.
type childSpan struct {
	workflowID          string
	initiated, finished time.Time
}

// windowRuns follows a window's continue-as-new chain from its first run.
func windowRuns(t *testing.T, ctx context.Context, c client.Client, workflowID, firstRunID string) []runHistory {
	t.Helper()
	dc := temporalconn.DataConverter()
	var runs []runHistory
	for runID := firstRunID; runID != ""; {
		r := runHistory{runID: runID}
		next := ""
		index := map[int64]int{} // initiated event id -> r.savepoints
		var pending []time.Time  // savepoint completions waiting for the next start
		it := c.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatalf("history of %s/%s: %v", workflowID, runID, err)
			}
			r.events++
			r.bytes += proto.Size(ev)
			at := ev.GetEventTime().AsTime()
			if a := ev.GetStartChildWorkflowExecutionInitiatedEventAttributes(); a != nil && a.GetWorkflowType().GetName() == workflows.JobSavepointWorkflowType {
				index[ev.GetEventId()] = len(r.savepoints)
				r.savepoints = append(r.savepoints, childSpan{workflowID: a.GetWorkflowId(), initiated: at})
				for _, done := range pending {
					r.refill += at.Sub(done)
					r.refillCount++
				}
				pending = pending[:0]
			}
			if a := ev.GetChildWorkflowExecutionCompletedEventAttributes(); a != nil {
				if i, ok := index[a.GetInitiatedEventId()]; ok {
					r.savepoints[i].finished = at
					pending = append(pending, at)
				}
			}
			if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
				r.carried = proto.Size(a.GetInput())
			}
			if a := continuedAsNew(ev); a != nil {
				next = a.GetNewExecutionRunId()
				var carried workflows.WindowInput
				if err := dc.FromPayloads(a.GetInput(), &carried); err != nil {
					t.Fatalf("decode continue-as-new input of %s: %v", runID, err)
				}
				if carried.Resume == nil {
					t.Fatalf("run %s continued as new without its state", runID)
				}
				r.nextPhase = carried.Resume.Phase
			}
		}
		runs = append(runs, r)
		runID = next
	}
	return runs
}

// savepointBreakdown logs where a savepoint child's time goes, averaged
// over up to 200 of them (every n-th): the figures that say what bounds
// savepoint-all's makespan beside its ideal.
func savepointBreakdown(t *testing.T, ctx context.Context, c client.Client, runs []runHistory) {
	t.Helper()
	var all []childSpan
	var refill time.Duration
	refills := 0
	for _, r := range runs {
		all = append(all, r.savepoints...)
		refill, refills = refill+r.refill, refills+r.refillCount
	}
	if len(all) == 0 {
		t.Fatalf("no savepoint child found in the window's history (%d runs)", len(runs))
	}
	step := max(len(all)/200, 1)
	// Spans of each child, in order: the start reaching the child, its
	// first workflow task scheduling the stop, the stop activity waiting
	// for a worker, running, then the same for the verify activity, the
	// child's closing task, and its completion reaching the parent.
	names := []string{"start child", "schedule stop", "stop queued", "stop runs", "schedule verify", "verify queued", "verify runs", "complete child", "completion to parent"}
	sums := make([]time.Duration, len(names))
	n := 0
	for i := 0; i < len(all); i += step {
		ch := all[i]
		if ch.finished.IsZero() {
			continue
		}
		var marks []time.Time // started, then each activity's scheduled/started/completed, then completed
		it := c.GetWorkflowHistory(ctx, ch.workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatalf("history of %s: %v", ch.workflowID, err)
			}
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
				enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED, enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
				enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
				marks = append(marks, ev.GetEventTime().AsTime())
			}
		}
		// A retried activity or a run that did not complete reads
		// differently: leave it out of the averages.
		if len(marks) != 8 {
			continue
		}
		spans := []time.Duration{marks[0].Sub(ch.initiated)}
		for k := 1; k < len(marks); k++ {
			spans = append(spans, marks[k].Sub(marks[k-1]))
		}
		spans = append(spans, ch.finished.Sub(marks[7]))
		for k, d := range spans {
			sums[k] += d
		}
		n++
	}
	if n == 0 {
		t.Fatalf("none of %d savepoint children read as started, two activities and completed", len(all))
	}
	var parts []string
	var total time.Duration
	for k, name := range names {
		avg := sums[k] / time.Duration(n)
		total += avg
		parts = append(parts, fmt.Sprintf("%s %s", name, avg.Round(time.Millisecond)))
	}
	var avgRefill time.Duration // none when every job had a slot from the start
	if refills > 0 {
		avgRefill = refill / time.Duration(refills)
	}
	t.Logf("a savepoint child, averaged over %d of %d: %s; its slot refilled %s after the parent saw it complete; per slot %s",
		n, len(all), strings.Join(parts, ", "), avgRefill.Round(time.Millisecond), (total + avgRefill).Round(time.Millisecond))
}

func continuedAsNew(ev *historypb.HistoryEvent) *historypb.WorkflowExecutionContinuedAsNewEventAttributes {
	if ev.GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW {
		return nil
	}
	return ev.GetWorkflowExecutionContinuedAsNewEventAttributes()
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
