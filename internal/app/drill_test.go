//go:build realpeers

package app_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/drills"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/checkpoint"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/metrics"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/faulthook"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/workerproc"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// drillEnv is a fail-closed env whose inventory holds the first sandbox
// cluster only, the second serving as the drill cluster, with drill
// recipes for the named jobs.
type drillEnv struct {
	*failClosedEnv
	drillRoot string
	drill     sandbox.FlinkCluster
	static    *inventory.Static
	queue     string // the task queue of the drill runs
	// versionClusters are drill clusters by Flink version, for rehearsals.
	versionClusters []config.DrillCluster
	// hooks hold the worker processes' activities where a test says.
	hooks *faulthook.Hooks
}

// stateCheckClass is the sample job's State Processor API state check.
const stateCheckClass = "io.github.flinkmaint.sandbox.job.VerifyState"

// sampleDrill is the sample job's drill recipe: a copy that discards its
// output, optionally failing on restore or checking its state.
func sampleDrill(name string, extra ...string) *inventory.DrillRecipe {
	args := append([]string{"--job-name", "drill-" + name, "--keys", "2000", "--value-bytes", "256", "--rate", "200", "--sink", "discard"}, extra...)
	return &inventory.DrillRecipe{ProgramArgs: args, SandboxArgs: []string{"--sink", "discard"}}
}

func newDrillEnv(t *testing.T, ctx context.Context, recipes map[string]*inventory.DrillRecipe) *drillEnv {
	t.Helper()
	d := &drillEnv{}
	d.failClosedEnv = newFailClosedEnvWith(t, ctx, func(e *failClosedEnv, static *inventory.Static, cfg *config.Config) {
		d.drill = e.peers.Clusters[1]
		static.Clusters = static.Clusters[:1]
		static.Tenants = static.Tenants[:1]
		for name, r := range recipes {
			static.Clusters[0].Jobs = append(static.Clusters[0].Jobs, inventory.JobSpec{Name: name,
				Restart: inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun, Jar: e.peers.SampleJob.Jar, EntryClass: e.peers.SampleJob.EntryClass,
					ProgramArgs: []string{"--checkpoint-dir", e.root + "/a/checkpoints", "--job-name", name, "--keys", "2000", "--value-bytes", "256", "--rate", "200"}},
				Drill: r})
		}
		d.drillRoot = e.root + "/drills"
		d.static = static
		cfg.Drill = config.Drill{ClusterRESTURL: d.drill.RESTURL, Root: d.drillRoot}
	})
	if _, err := d.peers.HadoopShell(ctx, "-mkdir", "-p", d.plain+"/drills"); err != nil {
		t.Fatal(err)
	}
	return d
}

// serve runs a worker of the env's activities on queue until the test
// ends; the drill runs of the test go to that queue.
func (d *drillEnv) serve(tmp *sandbox.Temporal, queue string) {
	d.t.Helper()
	d.queue = queue
	w := worker.New(tmp.Client, queue, worker.Options{})
	app.Register(w, d.acts)
	if err := w.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(w.Stop)
}

// workerProcess builds the worker binary and starts it on queue with the
// env's inventory, storage and drill settings, to be killed and started
// again; it is stopped when the test ends.
func (d *drillEnv) workerProcess(tmp *sandbox.Temporal, queue string) *workerproc.Process {
	d.t.Helper()
	return d.workerProcessOf(tmp, queue, workerproc.Build(d.t))
}

// workerProcessOf is workerProcess with the worker binary bin (another
// release's), with the env's cleanup settings too.
func (d *drillEnv) workerProcessOf(tmp *sandbox.Temporal, queue, bin string) *workerproc.Process {
	d.t.Helper()
	dir := d.t.TempDir()
	cfg := peertest.WorkerConfig(tmp.HostPort, queue)
	cfg.Storage.HDFSUser = d.peers.HDFS.User
	cfg.Storage.WritableRoots = []string{d.root}
	cfg.Inventory.StaticFile = peertest.WriteInventory(d.t, *d.static)
	cfg.Drill = config.Drill{ClusterRESTURL: d.drill.RESTURL, Root: d.drillRoot, Clusters: d.versionClusters}
	cfg.Cleanup.TrashRoot, cfg.Cleanup.PlanDir = d.root+"/trash", d.root+"/plans"
	cfgPath := peertest.WriteWorkerConfig(d.t, cfg)
	d.queue = queue
	if d.hooks == nil {
		d.hooks = faulthook.New(d.t)
	}
	w := workerproc.New(d.t, bin, cfgPath, filepath.Join(dir, "worker.log")).WithHooks(d.hooks)
	w.Start()
	return w
}

// run executes one drill run to its end on a worker of its own.
func (d *drillEnv) run(ctx context.Context, tmp *sandbox.Temporal, id string, in workflows.RestoreDrillInput) (workflows.RestoreDrillReport, error) {
	d.t.Helper()
	run, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.RestoreDrillWorkflowID(id), TaskQueue: d.queue},
		workflows.RestoreDrillWorkflowType, in)
	if err != nil {
		d.t.Fatal(err)
	}
	var rep workflows.RestoreDrillReport
	err = run.Get(ctx, &rep)
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == workflows.ErrTypeDrillsFailed {
		if derr := appErr.Details(&rep); derr != nil {
			d.t.Fatalf("drill report in the error details: %v", derr)
		}
	}
	return rep, err
}

// noDrillJobRunning fails when a drill job of the run is not globally
// terminal on the drill cluster.
func (d *drillEnv) noDrillJobRunning(ctx context.Context, ids ...string) {
	d.t.Helper()
	fc := peertest.FlinkClient(d.t, d.drill.RESTURL)
	for _, id := range ids {
		s, err := fc.JobState(ctx, id)
		if flink.Reason(err) == flink.ErrorReasonJobNotFound {
			continue
		}
		if err != nil || !s.IsGloballyTerminal() {
			d.t.Errorf("drill job %s is %s after the run (%v); want it ended", id, s, err)
		}
	}
}

// TestRestoreDrillOnRealPeers drills on real Flink and HDFS: the latest
// checkpoint of a live job passes both tiers, its copy restored on the
// drill cluster from exactly that checkpoint, checkpointing into its own
// drill dir, which is gone afterwards, while the production job runs on
// with its id and keeps checkpointing; a retained checkpoint missing one
// shared/ file fails tier 1 naming the file and its operator, without a
// restore; a job whose copy fails on restore fails tier 2 with Flink's
// exception. Outcomes are recorded beside the snapshots and in metrics.
func TestRestoreDrillOnRealPeers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	sfx := peertest.RandomHex(4)
	live, broken, failing, checked := "drill-live-"+sfx, "drill-broken-"+sfx, "drill-failing-"+sfx, "drill-checked-"+sfx
	// The live job's copy also runs the sample job's state check, which
	// passes; the checked job's check wants payloads of another size.
	liveDrill, checkedDrill := sampleDrill(live), sampleDrill(checked)
	liveDrill.Verify = &inventory.DrillVerify{EntryClass: stateCheckClass, ProgramArgs: []string{"--snapshot", inventory.SnapshotPlaceholder, "--min-keys", "100", "--value-bytes", "256"}}
	checkedDrill.Verify = &inventory.DrillVerify{EntryClass: stateCheckClass, ProgramArgs: []string{"--snapshot", inventory.SnapshotPlaceholder, "--value-bytes", "999"}}
	d := newDrillEnv(t, ctx, map[string]*inventory.DrillRecipe{
		live: liveDrill, broken: sampleDrill(broken), failing: sampleDrill(failing, "--fail-on-restore"), checked: checkedDrill})
	gov, err := metrics.NewGovernance(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	d.acts.Metrics = gov
	d.serve(tmp, "drills-"+sfx)
	ca := d.peers.Clusters[0]
	ckpts := d.root + "/a/checkpoints"
	// A 10 s interval keeps the drilled checkpoint retained (3 are) while
	// the copy restores from it.
	fc, liveID := d.start(ctx, ca, live, ckpts, "", "", map[string]string{"execution.checkpointing.interval": "10s"})
	// The second checkpoint, 10 s of input after the first: the first may
	// come before the source has produced the keys the state check wants.
	before := d.checkpointed(ctx, fc, liveID, 2).Counts.Completed

	// 1. The live job's latest checkpoint passes both tiers.
	rep, err := d.run(ctx, tmp, "pass-"+sfx, workflows.RestoreDrillInput{Scope: core.Scope{IncludeJobs: []string{live}},
		Soak: workflows.Duration(3 * time.Second)})
	if err != nil {
		t.Fatalf("drill of a healthy checkpoint: %v (report %+v)", err, rep)
	}
	if rep.Passed != 1 || len(rep.Jobs) != 1 {
		t.Fatalf("report %+v; want one snapshot, passed", rep)
	}
	j := rep.Jobs[0]
	drilledCheckpoint := strings.TrimRight(j.Snapshot, "/")
	if j.Tier != 2 || j.Kind != core.SnapshotCheckpoint || !strings.HasPrefix(j.Snapshot, ckpts+"/"+liveID+"/chk-") ||
		j.Storage == nil || j.Storage.Files < 2 || j.Restore == nil {
		t.Fatalf("drill %+v; want both tiers over a checkpoint of %s", j, liveID)
	}
	if strings.TrimRight(j.Restore.RestoredFrom, "/") != j.Snapshot || !strings.HasPrefix(j.Restore.CheckpointPath, d.drillRoot+"/") || !j.Restore.Verified {
		t.Fatalf("restore %+v; want restored from %s, checkpointing under %s, its state checked", j.Restore, j.Snapshot, d.drillRoot)
	}
	if j.Cleanup == nil || j.Cleanup.Removed == "" || d.exists(j.Cleanup.Removed) {
		t.Fatalf("cleanup %+v; want the drill dir removed", j.Cleanup)
	}
	d.noDrillJobRunning(ctx, j.Restore.JobID)
	if s, err := fc.JobState(ctx, liveID); err != nil || s != flink.JobRunning {
		t.Fatalf("production job %s is %s after the drill (%v); want it running", liveID, s, err)
	}
	if dir := os.Getenv(sandbox.EnvCaptureHistory); dir != "" {
		sandbox.CaptureHistory(t, tmp.Client, workflows.RestoreDrillWorkflowID("pass-"+sfx), "", dir+"/drill.json.gz")
	}
	d.waitFor(ctx, 2*time.Minute, "the production job keeps checkpointing", func() (bool, string) {
		st, err := fc.Checkpoints(ctx, liveID)
		return err == nil && st.Counts.Completed > before, stringOr(err, "no new checkpoint yet")
	})

	// 2. A retained checkpoint missing one shared/ file fails tier 1.
	_, brokenID := d.start(ctx, ca, broken, ckpts, "", "", nil)
	d.checkpointed(ctx, fc, brokenID, 2)
	d.cancel(ctx, fc, brokenID)
	st, err := fc.Checkpoints(ctx, brokenID)
	if err != nil || st.Latest.Completed == nil {
		t.Fatalf("checkpoints of %s: %v", brokenID, err)
	}
	chk := strings.TrimRight(st.Latest.Completed.ExternalPath, "/")
	victim, operator := d.sharedFileOf(ctx, chk)
	if err := d.raw.Remove(strings.TrimPrefix(victim, d.peers.HDFS.URI)); err != nil {
		t.Fatal(err)
	}
	rep, err = d.run(ctx, tmp, "broken-"+sfx, workflows.RestoreDrillInput{
		Selection: drills.DrillSelection{Mode: drills.DrillSnapshot, Job: ca.ClusterID + "/" + broken, Snapshot: chk}})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != workflows.ErrTypeDrillsFailed || rep.Failed != 1 {
		t.Fatalf("drill of a checkpoint missing %s: %v, report %+v; want %s", victim, err, rep, workflows.ErrTypeDrillsFailed)
	}
	j = rep.Jobs[0]
	if j.Tier != 1 || j.Restore != nil || !strings.Contains(j.Error, victim) || !strings.Contains(j.Error, "missing") || !strings.Contains(j.Error, operator) {
		t.Fatalf("drill %+v; want tier 1 alone, failing on %s missing, naming operator %s", j, victim, operator)
	}

	// 3. A copy that cannot restore fails tier 2 with Flink's exception.
	_, failingID := d.start(ctx, ca, failing, ckpts, "", "", nil)
	d.checkpointed(ctx, fc, failingID, 1)
	d.cancel(ctx, fc, failingID)
	st, err = fc.Checkpoints(ctx, failingID)
	if err != nil || st.Latest.Completed == nil {
		t.Fatalf("checkpoints of %s: %v", failingID, err)
	}
	failingChk := strings.TrimRight(st.Latest.Completed.ExternalPath, "/")
	rep, err = d.run(ctx, tmp, "failing-"+sfx, workflows.RestoreDrillInput{
		Selection: drills.DrillSelection{Mode: drills.DrillSnapshot, Job: ca.ClusterID + "/" + failing, Snapshot: failingChk},
		Soak:      workflows.Duration(3 * time.Second)})
	if !errors.As(err, &appErr) || rep.Failed != 1 {
		t.Fatalf("drill of a job failing on restore: %v, report %+v; want it failed", err, rep)
	}
	j = rep.Jobs[0]
	if j.Tier != 2 || j.Storage == nil || !j.Storage.Passed() || !strings.Contains(j.Error, "--fail-on-restore") {
		t.Fatalf("drill %+v; want tier 1 passed and tier 2 failed with the job's exception", j)
	}
	if j.Cleanup == nil || j.Cleanup.Removed != "" && d.exists(j.Cleanup.Removed) {
		t.Fatalf("cleanup %+v; want no drill dir left", j.Cleanup)
	}
	d.noDrillJobRunning(ctx, j.Restore.JobID)

	// 4. The savepoints one run took: the live job's passes its state
	// check; the checked job's restores, then fails its check.
	_, checkedID := d.start(ctx, ca, checked, ckpts, "", "", nil)
	d.checkpointed(ctx, fc, checkedID, 1)
	takeRun := "sched-" + sfx
	takeSavepoint := func(name, id, runID, trigger string) string {
		var took windows.TakeSavepointResult
		job := core.JobTarget{Key: ca.ClusterID + "/" + name, Tenant: d.tenant[0], ClusterID: ca.ClusterID, RESTURL: ca.RESTURL,
			JobName: name, JobID: id, SavepointDir: d.root + "/a/savepoints"}
		if err := d.activity(app.NewFamilies(d.acts).Windows.TakeSavepoint, windows.TakeSavepointInput{Job: job, TriggerID: trigger, RunID: runID}, &took); err != nil {
			t.Fatalf("savepoint of %s: %v", name, err)
		}
		return took.SavepointPath
	}
	savepoints := map[string]string{}
	for name, id := range map[string]string{live: liveID, checked: checkedID} {
		savepoints[name] = takeSavepoint(name, id, takeRun, strings.Repeat(id[:2], 16))
	}
	rep, err = d.run(ctx, tmp, "run-"+sfx, workflows.RestoreDrillInput{
		Selection: drills.DrillSelection{Mode: drills.DrillRunSavepoints, RunID: takeRun}, Soak: workflows.Duration(3 * time.Second)})
	if !errors.As(err, &appErr) || rep.Passed != 1 || rep.Failed != 1 || len(rep.Jobs) != 2 {
		t.Fatalf("drill of run %s: %v, report %+v; want one pass, one failed state check", takeRun, err, rep)
	}
	for _, j := range rep.Jobs {
		switch {
		case j.Kind != core.SnapshotSavepoint || j.Snapshot != savepoints[strings.TrimPrefix(j.Key, ca.ClusterID+"/")]:
			t.Errorf("drill %+v; want the run's savepoint of the job", j)
		case j.Key == ca.ClusterID+"/"+live && (j.Outcome != catalog.DrillPassed || j.Restore == nil || !j.Restore.Verified):
			t.Errorf("live %+v; want restored and its state check passed", j)
		case j.Key == ca.ClusterID+"/"+checked && (j.Outcome != catalog.DrillFailed || !strings.Contains(j.Error, "state check failed")):
			t.Errorf("checked %+v; want the state check's failure", j)
		}
		if j.Restore != nil {
			d.noDrillJobRunning(ctx, j.Restore.JobID)
		}
	}
	var listed governance.ListSavepointsResult
	if err := d.activity(app.NewFamilies(d.acts).Governance.ListSavepoints, governance.ListSavepointsInput{Tenants: []string{d.tenant[0]}}, &listed); err != nil {
		t.Fatal(err)
	}
	drilled := 0
	for _, row := range listed.Savepoints {
		if row.Path == savepoints[live] || row.Path == savepoints[checked] {
			want := map[bool]string{true: catalog.DrillPassed, false: catalog.DrillFailed}[row.Path == savepoints[live]]
			if row.Drill == nil || row.Drill.Outcome != want || row.Drill.RunID != rep.RunID || row.Drill.Tier != 2 {
				t.Errorf("savepoints list row %+v; want its drill %s by %s", row, want, rep.RunID)
			}
			drilled++
		}
	}
	if drilled != 2 {
		t.Errorf("savepoints list %+v; want both drilled savepoints", listed.Savepoints)
	}

	// 5. Retention keeps the newest savepoint of a job whose drill passed,
	// here older than the one retention keeps, unless told to ignore drills.
	trigger := []byte(strings.Repeat(liveID[:2], 16)) // the first savepoint's, with one digit changed
	if trigger[0] == '0' {
		trigger[0] = '1'
	} else {
		trigger[0] = '0'
	}
	newer := takeSavepoint(live, liveID, "sched2-"+sfx, string(trigger))
	retention := cleanup.Policy{KeepSavepoints: 1, SavepointMaxAge: time.Nanosecond}
	scope := core.Scope{Tenants: []string{d.tenant[0]}}
	_, plan := d.plan(ctx, "gov-drilled-"+sfx, scope, retention)
	kept := map[string]cleanup.Reason{}
	for _, k := range plan.Keep {
		kept[k.Path] = k.Reason
	}
	if kept[savepoints[live]] != cleanup.KeepLastDrilled || kept[newer] != cleanup.KeepNewestSavepoints {
		t.Errorf("plan keeps the drilled savepoint %s as %q and the newer %s as %q; want %q and %q",
			savepoints[live], kept[savepoints[live]], newer, kept[newer], cleanup.KeepLastDrilled, cleanup.KeepNewestSavepoints)
	}
	retention.IgnoreDrills = true
	_, plan = d.plan(ctx, "gov-ignore-drills-"+sfx, scope, retention)
	deleted := false
	for _, it := range plan.Delete {
		deleted = deleted || it.Path == savepoints[live] && it.Rule == cleanup.RuleSavepointRetention
	}
	if !deleted {
		t.Errorf("plan with ignoreDrills %+v; want the drilled savepoint %s deleted by retention", plan.Delete, savepoints[live])
	}

	// Recorded beside the snapshots, and in the metrics.
	fs, root, err := d.acts.Storage.Resolve(ctx, d.root+"/a")
	if err != nil {
		t.Fatal(err)
	}
	records, err := catalog.DrillStore{FS: fs, Root: root}.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]string{}
	for _, r := range records {
		outcomes[r.Job.Job] = r.Outcome
	}
	if outcomes[broken] != catalog.DrillFailed || outcomes[failing] != catalog.DrillFailed {
		t.Fatalf("drill records %+v; want %s passed, %s and %s failed", records, live, broken, failing)
	}
	if got := metricValue(t, gov.DrillFailed.WithLabelValues(d.tenant[0])); got != 1 {
		t.Errorf("restore_drill_failed = %v, want 1 (the latest run)", got)
	}
	// Its savepoint's record, and its checkpoint's while the checkpoint
	// exists: every plan drops the records of snapshots that are gone, and
	// the live job subsumes its checkpoints.
	want := map[string]bool{savepoints[live]: true, drilledCheckpoint: d.exists(drilledCheckpoint + "/_metadata")}
	for _, r := range records {
		if r.Job.Job != live {
			continue
		}
		if !want[r.Snapshot] || r.Outcome != catalog.DrillPassed {
			t.Errorf("drill record %+v of %s; want passed records of %v only", r, live, want)
		}
		delete(want, r.Snapshot)
	}
	for snap, there := range want {
		if there {
			t.Errorf("drill records %+v; want %s's record of %s, passed", records, live, snap)
		}
	}
	if got := metricValue(t, gov.DrillLastSuccess.WithLabelValues(d.tenant[0])); got < float64(time.Now().Add(-15*time.Minute).Unix()) {
		t.Errorf("restore_drill_last_success_timestamp_seconds = %v; want the first run's time", got)
	}
	if left := d.drillLeftovers(); len(left) > 0 {
		t.Errorf("drill root holds %v after the runs; want nothing but run dirs", left)
	}
}

// sharedFileOf is a shared/ file the checkpoint references, and the
// operator whose state refers to it.
func (d *drillEnv) sharedFileOf(ctx context.Context, chk string) (string, string) {
	d.t.Helper()
	fs, p, err := d.acts.Storage.Resolve(ctx, chk+"/_metadata")
	if err != nil {
		d.t.Fatal(err)
	}
	data, err := fs.ReadFile(ctx, p, 1<<30)
	if err != nil {
		d.t.Fatal(err)
	}
	md, err := checkpoint.ParseBytes(data, chk+"/_metadata")
	if err != nil {
		d.t.Fatal(err)
	}
	for r := range md.References() {
		if strings.Contains(r.Path, "/shared/") {
			return r.Path, r.OperatorID
		}
	}
	d.t.Fatalf("%s references no shared/ file", chk)
	return "", ""
}

// drillLeftovers lists what lies under the drill root: a drill leaves
// nothing, not even empty directories (a namespace quota counts them).
func (d *drillEnv) drillLeftovers() []string {
	var left []string
	root := d.plain + "/drills"
	_ = d.raw.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err == nil && p != root {
			left = append(left, p)
		}
		return nil
	})
	return left
}

// TestRestoreDrillSurvivesWorkerKill runs a drill through the real worker
// binary and kills it with SIGKILL while the drill's copy of the job runs
// on the drill cluster (its health gate held in the soak by a fault hook). Once the run ends, the copy is no longer running,
// the drill root holds nothing, and the production job ran on untouched.
func TestRestoreDrillSurvivesWorkerKill(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	sfx := peertest.RandomHex(4)
	live := "drill-kill-" + sfx
	d := newDrillEnv(t, ctx, map[string]*inventory.DrillRecipe{live: sampleDrill(live)})

	w := d.workerProcess(tmp, "drill-kill-"+sfx)

	ca := d.peers.Clusters[0]
	fc, liveID := d.start(ctx, ca, live, d.root+"/a/checkpoints", "", "", map[string]string{"execution.checkpointing.interval": "10s"})
	d.checkpointed(ctx, fc, liveID, 1)
	// The gate of the copy holds in its soak: the copy runs and has
	// checkpointed.
	d.hooks.Arm(faulthook.Hold{Name: "soak", Activity: "AwaitHealthy", At: faulthook.Heartbeat, Detail: "soak", Hit: 1})
	run, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.RestoreDrillWorkflowID("kill-" + sfx), TaskQueue: "drill-kill-" + sfx},
		workflows.RestoreDrillWorkflowType, workflows.RestoreDrillInput{Scope: core.Scope{IncludeJobs: []string{live}},
			Soak: workflows.Duration(5 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}

	// Kill while the copy runs on the drill cluster.
	d.hooks.WaitHeld(ctx, "soak", peertest.WorkflowEnded(ctx, tmp.Client, run.GetID()))
	drillFC := peertest.FlinkClient(t, d.drill.RESTURL)
	var copyID string
	jobs, err := drillFC.ListJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.Name == "drill-"+live && j.State == flink.JobRunning {
			copyID = j.ID
		}
	}
	if copyID == "" {
		t.Fatalf("the drill's gate holds in its soak, yet no copy drill-%s runs on the drill cluster: %+v", live, jobs)
	}
	w.Kill()
	w.Start()

	var rep workflows.RestoreDrillReport
	if err := run.Get(ctx, &rep); err != nil {
		t.Fatalf("drill: %v\nworker log:\n%s", err, w.Tail())
	}
	if w.Starts() != 2 || rep.Passed != 1 || rep.Jobs[0].Restore == nil || rep.Jobs[0].Restore.JobID != copyID {
		t.Fatalf("report %+v after %d worker starts; want the one drill passed, by the copy %s", rep, w.Starts(), copyID)
	}
	d.noDrillJobRunning(ctx, copyID)
	jobs, err = drillFC.ListJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.Name == "drill-"+live && !j.State.IsGloballyTerminal() {
			t.Errorf("drill copy %s is %s after the run; want none running", j.ID, j.State)
		}
	}
	if left := d.drillLeftovers(); len(left) > 0 {
		t.Errorf("drill root holds %v after the run; want nothing", left)
	}
	if s, err := fc.JobState(ctx, liveID); err != nil || s != flink.JobRunning {
		t.Errorf("production job %s is %s after the drill (%v); want it running", liveID, s, err)
	}
}
