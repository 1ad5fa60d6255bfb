//go:build realpeers

package app_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	gohdfs "github.com/colinmarc/hdfs/v2"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"gopkg.in/yaml.v3"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/metrics"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// govEnv is one test's private tree on the sandbox HDFS, a worker over it
// and a dev server.
type govEnv struct {
	peers  *sandbox.Peers
	tmp    *sandbox.Temporal
	acts   *app.Ports
	gov    *metrics.Governance
	raw    *gohdfs.Client
	root   string // hdfs://.../flinkmaint-test/governance-<suffix>
	plain  string // the same as a plain path
	tenant string
	queue  string
}

func newGovEnv(t *testing.T, ctx context.Context) *govEnv {
	t.Helper()
	peers := sandbox.RequirePeers(t)
	suffix := peertest.RandomHex(4)
	e := &govEnv{peers: peers, plain: "/flinkmaint-test/governance-" + suffix, tenant: "gov-" + suffix, queue: "governance-e2e-" + suffix}
	e.root = peers.HDFS.URI + e.plain
	if _, err := peers.HadoopShell(ctx, "-mkdir", "-p", e.plain+"/tenant/checkpoints", e.plain+"/tenant/savepoints", e.plain+"/trash", e.plain+"/plans"); err != nil {
		t.Fatalf("create test tree: %v", err)
	}
	var err error
	e.raw, err = gohdfs.NewClient(gohdfs.ClientOptions{Addresses: []string{peers.HDFS.NameNode}, User: peers.HDFS.User})
	if err != nil {
		t.Fatalf("raw HDFS client: %v", err)
	}
	t.Cleanup(func() {
		if os.Getenv("FLINKMAINT_KEEP_TEST_TREE") == "" {
			_ = e.raw.RemoveAll(e.plain)
		}
		_ = e.raw.Close()
	})

	// The inventory names one real cluster whose checkpoint and savepoint
	// dirs are this test's own, so nothing of other tests is in scope.
	c := peers.Clusters[0]
	static := inventory.Static{
		Tenants: []inventory.Tenant{{Name: e.tenant, Root: e.root + "/tenant"}},
		Clusters: []inventory.Cluster{{Tenant: e.tenant, ClusterID: c.ClusterID, Mode: inventory.ModeSession, RESTURL: c.RESTURL,
			CheckpointDir: e.root + "/tenant/checkpoints", SavepointDir: e.root + "/tenant/savepoints"}},
	}
	data, err := yaml.Marshal(static)
	if err != nil {
		t.Fatal(err)
	}
	invPath := filepath.Join(t.TempDir(), "inventory.yaml")
	if err := os.WriteFile(invPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Storage.HDFSUser = peers.HDFS.User
	cfg.Storage.WritableRoots = []string{e.root}
	cfg.Inventory.StaticFile = invPath
	cfg.Cleanup.TrashRoot, cfg.Cleanup.PlanDir = e.root+"/trash", e.root+"/plans"
	if err := cfg.Validate(); err != nil {
		t.Fatalf("worker config: %v", err)
	}
	acts := peertest.NewPorts(t, cfg, "governance-e2e")
	e.gov, err = metrics.NewGovernance(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	acts.Metrics = e.gov
	e.acts = acts

	e.tmp = sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	w := worker.New(e.tmp.Client, e.queue, worker.Options{})
	app.Register(w, acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return e
}

// put writes files under dir and ages the whole dir, children first
// (creating a child touches its parent).
func (e *govEnv) put(t *testing.T, dir string, files map[string]int, when time.Time) {
	t.Helper()
	ctx := context.Background()
	fs, _, err := e.acts.Storage.Resolve(ctx, e.root)
	if err != nil {
		t.Fatal(err)
	}
	for name, size := range files {
		p := e.peers.HDFS.URI + dir + "/" + name
		if err := fs.MkdirAll(ctx, p[:strings.LastIndex(p, "/")]); err != nil {
			t.Fatal(err)
		}
		if err := fs.WriteFile(ctx, p, make([]byte, size)); err != nil {
			// "replication in progress" on close: the data is acknowledged.
			if fi, serr := fs.Stat(ctx, p); serr != nil || fi.Size != int64(size) {
				t.Fatal(err)
			}
		}
	}
	var all []string
	if err := e.raw.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			all = append(all, p)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(all)))
	for _, p := range all {
		if err := e.raw.Chtimes(p, when, when); err != nil {
			t.Fatal(err)
		}
	}
}

// runJob runs the sample job on the first sandbox cluster, checkpointing
// into the test's tenant tree, and cancels it when the test ends.
func (e *govEnv) runJob(t *testing.T, ctx context.Context, name string, args ...string) (*flink.Client, string) {
	t.Helper()
	fc := peertest.FlinkClient(t, e.peers.Clusters[0].RESTURL)
	jarID, err := fc.UploadJar(ctx, e.peers.SampleJob.Jar)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fc.DeleteJar(context.Background(), jarID) })
	run, err := fc.RunJar(ctx, jarID, flink.RunJarRequest{EntryClass: e.peers.SampleJob.EntryClass,
		ProgramArgs: append([]string{"--checkpoint-dir", e.root + "/tenant/checkpoints", "--job-name", name}, args...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fc.CancelJob(context.Background(), run.JobID) })
	return fc, run.JobID
}

func (e *govEnv) exists(t *testing.T, plainPath string) bool {
	t.Helper()
	_, err := e.raw.Stat(plainPath)
	if err != nil && !os.IsNotExist(err) {
		t.Fatalf("stat %s: %v", plainPath, err)
	}
	return err == nil
}

// TestGovernanceOnRealPeers runs Governance in plan-and-approve mode on a
// real Flink job and HDFS through a real dev server: exactly the garbage
// (an incomplete chk-N past the grace period, a retired job's dir) is
// planned, nothing happens before the approve update, then exactly it is
// moved to trash and listed in the audit manifest, the job's latest
// checkpoint survives, and the report shows what was reclaimed.
func TestGovernanceOnRealPeers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e := newGovEnv(t, ctx)
	fc, jobID := e.runJob(t, ctx, "gov-"+e.tenant, "--keys", "2000", "--value-bytes", "256", "--rate", "400")
	peertest.WaitForCheckpoint(t, ctx, fc, jobID)

	// Garbage: an incomplete checkpoint of the live job and the dir of a
	// job that no longer exists, both a month old.
	longAgo := time.Now().Add(-30 * 24 * time.Hour)
	jobDir := e.plain + "/tenant/checkpoints/" + jobID
	incomplete := jobDir + "/chk-99999"
	retired := e.plain + "/tenant/checkpoints/" + peertest.RandomHex(16)
	e.put(t, incomplete, map[string]int{"9d7c1f6e-aaaa": 100}, longAgo)
	e.put(t, retired, map[string]int{"chk-7/_metadata-partial": 5, "shared/s1": 70, "taskowned/t1": 30}, longAgo)
	garbage := map[string]bool{e.peers.HDFS.URI + incomplete: true, e.peers.HDFS.URI + retired: true}

	in := workflows.GovernanceInput{RunID: "e2e-" + e.tenant, Reason: "end-to-end test", Mode: workflows.ModePlanAndApprove,
		Scope: core.Scope{Tenants: []string{e.tenant}}, ApprovalTimeout: workflows.Duration(10 * time.Minute)}
	wf, err := e.tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.GovernanceWorkflowID(in.RunID), TaskQueue: e.queue},
		workflows.GovernanceWorkflowType, in)
	if err != nil {
		t.Fatal(err)
	}
	st := waitGovernance(t, ctx, e.tmp.Client, wf.GetID(), func(st workflows.GovernanceState) bool {
		return st.Phase == workflows.GovernancePhaseAwaitingApproval
	})
	plan := st.Plan
	planned := map[string]bool{}
	for _, it := range plan.Sample {
		planned[it.Path] = true
	}
	if int(plan.Items) != len(garbage) || len(planned) != len(garbage) {
		t.Fatalf("plan has %d items %v; want exactly the garbage %v (notes %v)", plan.Items, planned, garbage, plan.Notes)
	}
	for g := range garbage {
		if !planned[g] {
			t.Fatalf("garbage %s not planned; plan %v", g, planned)
		}
	}
	if !e.exists(t, incomplete) || !e.exists(t, retired) {
		t.Fatal("garbage touched before approval")
	}
	if got := metricValue(t, e.gov.PlannedFiles.WithLabelValues(e.tenant)); got != float64(plan.Files) || got < 4 {
		t.Errorf("planned files metric %v, plan %d", got, plan.Files)
	}

	// The plan's files changed after review make every execution refuse,
	// naming the file, and move nothing; put back, the plan is approved.
	testPlanChangedAfterApproval(t, ctx, e, plan, []string{incomplete, retired})

	// A nameless approval is refused by the validator; a named one returns
	// the plan summary.
	rh, err := e.tmp.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: wf.GetID(), UpdateName: workflows.UpdateApprove,
		Args: []interface{}{workflows.ApproveRequest{}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = rh.Get(ctx, nil)
	}
	if err == nil || !strings.Contains(err.Error(), "approver") {
		t.Fatalf("approve without a name: %v; want refused naming the approver", err)
	}
	h, err := e.tmp.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: wf.GetID(), UpdateName: workflows.UpdateApprove,
		Args:         []interface{}{workflows.ApproveRequest{By: "e2e", Reason: "garbage only", PlanSHA256: plan.PlanSHA256}},
		WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		t.Fatal(err)
	}
	var approved governance.PlanSummary
	if err := h.Get(ctx, &approved); err != nil || approved.PlanSHA256 != plan.PlanSHA256 {
		t.Fatalf("approve returned %+v, %v", approved.PlanSHA256, err)
	}

	var rep workflows.GovernanceReport
	if err := wf.Get(ctx, &rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("report: outcome %s reclaimed %d files %d bytes; tenants %+v", rep.Outcome, rep.ReclaimedFiles, rep.ReclaimedBytes, rep.Tenants)
	if rep.Outcome != workflows.GovernancePhaseCompleted || rep.Execution == nil || rep.Execution.Items != int64(len(garbage)) || rep.ReclaimedFiles < 4 {
		t.Fatalf("report %+v execution %+v", rep, rep.Execution)
	}
	var tr *workflows.GovernanceTenantReport
	for i := range rep.Tenants {
		if rep.Tenants[i].Tenant == e.tenant {
			tr = &rep.Tenants[i]
		}
	}
	// Before/after are measured, not derived: the live job keeps
	// checkpointing during the run, so "after" may even exceed "before".
	// That the garbage itself is gone is checked path by path below.
	if tr == nil || tr.ReclaimedFiles != rep.ReclaimedFiles || tr.ReclaimedDirs == 0 ||
		tr.NamespaceBefore < tr.ReclaimedFiles+tr.ReclaimedDirs || tr.NamespaceAfter <= 0 {
		t.Errorf("tenant report %+v", tr)
	}

	// Exactly the garbage is in the trash and the manifest.
	for g := range garbage {
		p := strings.TrimPrefix(g, e.peers.HDFS.URI)
		if e.exists(t, p) {
			t.Errorf("%s still in place", p)
		}
		if !e.exists(t, e.plain+"/trash/"+in.RunID+p) {
			t.Errorf("%s not in trash at %s", p, e.plain+"/trash/"+in.RunID+p)
		}
	}
	fs, _, err := e.acts.Storage.Resolve(ctx, e.root)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := cleanup.ReadManifest(ctx, fs, e.root+"/trash/_audit", in.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(garbage) {
		t.Errorf("manifest has %d records, want %d: %+v", len(recs), len(garbage), recs)
	}
	for _, r := range recs {
		if !garbage[r.Path] || r.Outcome != cleanup.OutcomeTrashed {
			t.Errorf("manifest record %s %s: %s", r.Path, r.Outcome, r.Detail)
		}
	}
	// The job's latest checkpoint is intact.
	stats, err := fc.Checkpoints(ctx, jobID)
	if err != nil || stats.Latest.Completed == nil {
		t.Fatalf("checkpoints of %s: %+v %v", jobID, stats, err)
	}
	latest := strings.TrimPrefix(strings.TrimRight(stats.Latest.Completed.ExternalPath, "/"), e.peers.HDFS.URI)
	if !e.exists(t, latest+"/_metadata") {
		t.Errorf("latest checkpoint %s lost its _metadata", latest)
	}
	if d, err := fc.JobDetails(ctx, jobID); err != nil || d.State != flink.JobRunning {
		t.Errorf("job %s is %s after cleanup (%v)", jobID, d.State, err)
	}
	// The report is on storage too.
	md, err := fs.ReadFile(ctx, strings.TrimSuffix(rep.PlanPath, "plan.json")+"report.md", 1<<20)
	if err != nil || !strings.Contains(string(md), "**completed**") || !strings.Contains(string(md), "Approved by e2e") {
		t.Errorf("report.md: %v\n%s", err, md)
	}
	if got := metricValue(t, e.gov.ReclaimedFiles.WithLabelValues(e.tenant)); got != float64(rep.ReclaimedFiles) {
		t.Errorf("reclaimed files metric %v, report %d", got, rep.ReclaimedFiles)
	}
	if dir := os.Getenv(sandbox.EnvCaptureHistory); dir != "" {
		sandbox.CaptureHistory(t, e.tmp.Client, wf.GetID(), wf.GetRunID(), dir+"/governance.json.gz")
	}

	// A schedule of quota watching: create it, trigger it, see its run
	// sample the tenant.
	testQuotaWatchSchedule(t, ctx, e)
}

// testPlanChangedAfterApproval changes the header (plan.json, whose
// sha256 the approver names) and then the shard of a plan waiting for
// approval on HDFS, runs the executing activities on this worker as the
// run would once approved, and checks each refuses as CleanupPlanChanged,
// naming the changed file, with the planned paths in place and nothing in
// the trash. It puts the approved bytes back before it returns.
func testPlanChangedAfterApproval(t *testing.T, ctx context.Context, e *govEnv, plan *governance.PlanSummary, planned []string) {
	t.Helper()
	if plan.Shards != 1 {
		t.Fatalf("plan of %d shards; want the default of one shard for %d items", plan.Shards, plan.Items)
	}
	header := strings.TrimPrefix(plan.PlanPath, e.peers.HDFS.URI)
	shard := strings.TrimSuffix(header, "plan.json") + "items-00001.jsonl"
	run := func(fn, in any) error {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestActivityEnvironment()
		app.RegisterActivities(env, e.acts)
		_, err := env.ExecuteActivity(fn, in)
		return err
	}
	whole := governance.ExecuteCleanupInput{RunID: plan.RunID, PlanPath: plan.PlanPath, PlanSHA256: plan.PlanSHA256}
	part := governance.ExecuteCleanupPartInput{RunID: plan.RunID, PlanPath: plan.PlanPath, PlanSHA256: plan.PlanSHA256, Shard: 0}
	for _, c := range []struct {
		file, from, to string
	}{
		// Trash turned into delete, which nobody approved.
		{header, `"action":"trash"`, `"action":"delete"`},
		// An item's recorded reason rewritten: its path is the same, so
		// only the shard's hash in the approved header tells.
		{shard, `"detail":"`, `"detail":"edited after approval: `},
	} {
		approved, err := e.raw.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		changed := bytes.Replace(approved, []byte(c.from), []byte(c.to), 1)
		if bytes.Equal(changed, approved) {
			t.Fatalf("%s has no %s to change:\n%s", c.file, c.from, approved)
		}
		e.rewrite(t, c.file, changed)
		name := c.file[strings.LastIndex(c.file, "/")+1:]
		for _, exec := range []struct {
			name   string
			fn, in any
		}{{"ExecuteCleanup", app.NewFamilies(e.acts).Governance.ExecuteCleanup, whole}, {"ExecuteCleanupPart", app.NewFamilies(e.acts).Governance.ExecuteCleanupPart, part}, {"VerifyCleanupPlan", app.NewFamilies(e.acts).Governance.VerifyCleanupPlan, whole}} {
			err := run(exec.fn, exec.in)
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != core.ErrTypeCleanupPlanChanged || !appErr.NonRetryable() || !strings.Contains(err.Error(), name) {
				t.Errorf("%s with %s changed after approval: %v; want a non-retryable %s naming %s", exec.name, name, err, core.ErrTypeCleanupPlanChanged, name)
			}
			for _, p := range planned {
				if !e.exists(t, p) {
					t.Fatalf("%s with %s changed after approval moved %s", exec.name, name, p)
				}
			}
			if e.exists(t, e.plain+"/trash/"+plan.RunID) {
				t.Fatalf("%s with %s changed after approval moved something to the trash", exec.name, name)
			}
		}
		e.rewrite(t, c.file, approved)
	}
	data, err := e.raw.ReadFile(header)
	if sum := sha256.Sum256(data); err != nil || hex.EncodeToString(sum[:]) != plan.PlanSHA256 {
		t.Fatalf("plan header not put back as approved: %v", err)
	}
}

// rewrite replaces the file at plainPath with data.
func (e *govEnv) rewrite(t *testing.T, plainPath string, data []byte) {
	t.Helper()
	if err := e.raw.Remove(plainPath); err != nil {
		t.Fatal(err)
	}
	w, err := e.raw.Create(plainPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		// "replication in progress" on close: the data is acknowledged.
		if fi, serr := e.raw.Stat(plainPath); serr != nil || fi.Size() != int64(len(data)) {
			t.Fatal(err)
		}
	}
}

func testQuotaWatchSchedule(t *testing.T, ctx context.Context, e *govEnv) {
	in := workflows.QuotaWatchInput{Scope: core.Scope{Tenants: []string{e.tenant}}, Iterations: 1, SamplesPath: e.root + "/plans/quota-samples.json"}
	id := workflows.ScheduleID("quota-" + e.tenant)
	sc := e.tmp.Client.ScheduleClient()
	h, err := sc.Create(ctx, client.ScheduleOptions{ID: id, Spec: client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: 24 * time.Hour}}},
		Action: &client.ScheduleWorkflowAction{ID: id, Workflow: workflows.QuotaWatchWorkflowType, Args: []interface{}{in}, TaskQueue: e.queue}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Delete(context.Background()) })
	var runs []string
	for round := 0; round < 2; round++ {
		if err := h.Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
			t.Fatal(err)
		}
		var wfID string
		for ctx.Err() == nil && wfID == "" {
			d, err := h.Describe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(d.Info.RecentActions); n > round && d.Info.RecentActions[n-1].StartWorkflowResult != nil {
				wfID = d.Info.RecentActions[n-1].StartWorkflowResult.WorkflowID
			}
			time.Sleep(500 * time.Millisecond)
		}
		var st workflows.QuotaWatchState
		if err := e.tmp.Client.GetWorkflow(ctx, wfID, "").Get(ctx, &st); err != nil {
			t.Fatalf("scheduled run %s: %v", wfID, err)
		}
		if len(st.Tenants) != 1 || st.Tenants[0].Tenant != e.tenant || st.Tenants[0].Latest.NamespaceUsed < 5 {
			t.Fatalf("scheduled run %s sampled %+v", wfID, st.Tenants)
		}
		// The second run continues the series the first saved on storage.
		if got := len(st.Tenants[0].Samples); got != round+1 {
			t.Errorf("run %d has %d samples, want %d", round, got, round+1)
		}
		runs = append(runs, wfID)
	}
	t.Logf("scheduled quota watch runs: %v", runs)
	if dir := os.Getenv(sandbox.EnvCaptureHistory); dir != "" {
		sandbox.CaptureHistory(t, e.tmp.Client, runs[1], "", dir+"/quotawatch.json.gz")
	}
}

func waitGovernance(t *testing.T, ctx context.Context, c client.Client, id string, done func(workflows.GovernanceState) bool) workflows.GovernanceState {
	t.Helper()
	var st workflows.GovernanceState
	for ctx.Err() == nil {
		v, err := c.QueryWorkflow(ctx, id, "", workflows.QueryStatus)
		if err == nil && v.Get(&st) == nil && done(st) {
			return st
		}
		switch st.Phase {
		case workflows.GovernancePhaseCompleted, workflows.GovernancePhaseFailed, workflows.GovernancePhaseExpired, workflows.GovernancePhaseRejected:
			t.Fatalf("governance run ended (%s) before the expected state; notes %v", st.Phase, st.Notes)
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("governance run never reached the expected state; last phase %s notes %v", st.Phase, st.Notes)
	return st
}

// metricValue reads a gauge or counter.
func metricValue(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	if out.Gauge != nil {
		return out.Gauge.GetValue()
	}
	return out.Counter.GetValue()
}
