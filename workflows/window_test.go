package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/activities/oncall"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/freeze"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/notify"
)

// windowFixture fakes the activities of a window over a small fleet and
// records what they were asked to do.
type windowFixture struct {
	// mu guards the maps and flags below: fake activities run on their own
	// goroutines while delayed callbacks and assertions read and change them.
	mu      sync.Mutex
	t       *testing.T
	env     *testsuite.TestWorkflowEnvironment
	jobs    []core.JobTarget
	stopped map[string]int // job key -> stop-with-savepoint calls
	// unrecorded are the jobs stopped while no manifest written so far
	// named them: a person could not restart them by hand.
	unrecorded []string
	started    map[string][]string
	// failRestart makes RestartJob's health check fail for these keys
	// until cleared.
	failRestart map[string]bool
	// quotaShort makes the restart gate find team-a short of quota,
	// quotaShortBefore makes preflight find it so; gateRestarts records
	// what the gate was asked to project.
	quotaShort, quotaShortBefore bool
	failCancel                   bool
	drained                      []string // jobs stopped with drain
	gateRestarts                 []capacity.RestartFootprintInput
	documents                    map[string]string
	cancelled                    []string
	failStop                     map[string]bool
	failWrites                   bool
	// stoppedAnyway makes failStop jobs end without a savepoint.
	stoppedAnyway bool
	// recovered is what StopWithSavepoint says of how it found a savepoint.
	recovered  string
	governance []GovernanceInput
	failGov    bool
	// stopTakes is how long each stop-with-savepoint takes on the
	// workflow's clock; manifestWrites counts each manifest rewrite with
	// the phase it happened in.
	stopTakes      time.Duration
	manifestWrites []string
	locks          *lockLog
	events         []notify.Event
}

func newWindowFixture(t *testing.T, n int) *windowFixture {
	var s testsuite.WorkflowTestSuite
	return newWindowFixtureOn(t, s.NewTestWorkflowEnvironment(), n)
}

// newWindowFixtureOn builds the fixture on env, whose earlier mocks win.
func newWindowFixtureOn(t *testing.T, env *testsuite.TestWorkflowEnvironment, n int) *windowFixture {
	f := &windowFixture{
		t: t, env: env,
		stopped: map[string]int{}, started: map[string][]string{}, failRestart: map[string]bool{}, documents: map[string]string{},
		failStop: map[string]bool{},
	}
	for i := 0; i < n; i++ {
		cluster := "cluster-a"
		if i%2 == 1 {
			cluster = "cluster-b"
		}
		name := "job-" + string(rune('a'+i))
		f.jobs = append(f.jobs, core.JobTarget{
			Key: cluster + "/" + name, Tenant: "team-" + cluster[len(cluster)-1:], ClusterID: cluster, RESTURL: "http://" + cluster,
			JobName: name, JobID: strings.Repeat(string(rune('0'+i)), 32), SavepointDir: "hdfs://nn/sp", CheckpointDir: "hdfs://nn/chk",
			Restart: inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun, Jar: "/job.jar"},
		})
	}
	env.RegisterWorkflowWithOptions(JobSavepointWorkflow, workflow.RegisterOptions{Name: JobSavepointWorkflowType})
	env.RegisterWorkflowWithOptions(JobRestartWorkflow, workflow.RegisterOptions{Name: JobRestartWorkflowType})
	env.RegisterWorkflowWithOptions(GovernanceWorkflow, workflow.RegisterOptions{Name: GovernanceWorkflowType})
	env.RegisterWorkflowWithOptions(JobDrillWorkflow, workflow.RegisterOptions{Name: JobDrillWorkflowType})
	env.RegisterWorkflowWithOptions(JobRehearsalWorkflow, workflow.RegisterOptions{Name: JobRehearsalWorkflowType})
	f.locks = openGates(env)
	env.OnWorkflow(GovernanceWorkflowType, mock.Anything, mock.Anything).Return(func(_ workflow.Context, in GovernanceInput) (*GovernanceReport, error) {
		f.mu.Lock()
		f.governance = append(f.governance, in)
		fail := f.failGov
		f.mu.Unlock()
		if fail {
			return nil, temporal.NewNonRetryableApplicationError("cleanup.trashRoot is empty", "CleanupNotConfigured", nil)
		}
		return &GovernanceReport{RunID: in.RunID, Mode: in.Mode, Outcome: GovernancePhaseCompleted, ReclaimedFiles: 3, ReclaimedBytes: 300,
			Tenants: []GovernanceTenantReport{{Tenant: "team-a", PlannedItems: 2, PlannedFiles: 3,
				ByRule: []governance.RuleTotals{{Rule: "retired-job", Items: 2, Files: 3, Dirs: 2, Bytes: 300}},
				Kept:   []governance.RuleTotals{{Rule: "latest-checkpoint-of-retired-job", Items: 1, Files: 1, Dirs: 1, Bytes: 10}}}}}, nil
	})
	var a *windows.Activities
	var capa *capacity.Activities
	env.OnActivity(a.DiscoverJobs, mock.Anything, mock.Anything).Return(func(_ context.Context, in core.DiscoverJobsInput) (core.DiscoverJobsResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return core.DiscoverJobsResult{
			Tenants:  []inventory.Tenant{{Name: "team-a", Root: "hdfs://nn/a"}, {Name: "team-b", Root: "hdfs://nn/b"}},
			Clusters: []inventory.Cluster{{ClusterID: "cluster-a", RESTURL: "http://cluster-a"}, {ClusterID: "cluster-b", RESTURL: "http://cluster-b"}},
			Jobs:     f.jobs,
			Skipped:  []core.SkippedJob{{Key: "cluster-a/no-recipe", JobID: "f", Reason: "no recipe"}},
		}, nil
	})
	env.OnActivity(capa.CheckQuota, mock.Anything, mock.Anything).Return(func(_ context.Context, in capacity.CheckQuotaInput) (capacity.CheckQuotaResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		var res capacity.CheckQuotaResult
		// Preflight measures each job's footprint; the gate, after the
		// stops, is handed it back.
		atGate := len(in.Restart) > 0 && in.Restart[0].Measured != nil
		if atGate {
			f.gateRestarts = append(f.gateRestarts, in.Restart...)
		}
		for _, r := range in.Restart {
			if !atGate {
				res.Footprints = append(res.Footprints, capacity.Footprint{Key: r.Key, FilesPerCheckpoint: 5, FullCheckpointFiles: 9})
			}
		}
		for _, t := range in.Tenants {
			q := capacity.TenantQuota{Tenant: t.Name, Root: t.Root, NamespaceUsed: 100, NamespaceQuota: 1000, Percent: 10, Level: "ok", RestartAllowed: true, Headroom: 900}
			if len(in.Restart) > 0 {
				q.ProjectedFiles = 40
			}
			if t.Name == "team-a" && (atGate && f.quotaShort || len(in.Restart) > 0 && !atGate && f.quotaShortBefore) {
				q.RestartAllowed, q.ProjectedFiles, q.GateReason = false, 5000, "needs 5000"
			}
			res.Tenants = append(res.Tenants, q)
		}
		return res, nil
	})
	env.OnActivity(a.StopWithSavepoint, mock.Anything, mock.Anything).Return(func(_ context.Context, in core.StopWithSavepointInput) (core.StopWithSavepointResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.stopped[in.Job.Key]++
		if in.Drain {
			f.drained = append(f.drained, in.Job.Key)
		}
		recorded := false
		for path, doc := range f.documents {
			recorded = recorded || strings.HasSuffix(path, "manifest.json") && strings.Contains(doc, in.Job.Key)
		}
		if !recorded {
			f.unrecorded = append(f.unrecorded, in.Job.Key)
		}
		if f.failStop[in.Job.Key] {
			if f.stoppedAnyway {
				return core.StopWithSavepointResult{}, temporal.NewNonRetryableApplicationError("job is CANCELED, not running", core.ErrTypeJobStoppedWithoutSavepoint, nil)
			}
			return core.StopWithSavepointResult{}, temporal.NewNonRetryableApplicationError("savepoint failed: quota", "FlinkStorageQuotaExceeded", nil)
		}
		return core.StopWithSavepointResult{SavepointPath: "hdfs://nn/sp/savepoint-" + in.Job.JobName, Recovered: f.recovered}, nil
	}).AfterFn(func() time.Duration {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.stopTakes
	})
	env.OnActivity(a.VerifySavepoint, mock.Anything, mock.Anything).Return(windows.VerifySavepointResult{Files: 5}, nil)
	env.OnActivity(a.WriteDocument, mock.Anything, mock.Anything).Return(func(_ context.Context, in core.WriteDocumentInput) (core.WriteDocumentResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.failWrites {
			return core.WriteDocumentResult{}, temporal.NewNonRetryableApplicationError("root does not exist", core.ErrTypeStorageNotFound, nil)
		}
		f.documents[in.Path] = string(in.Content)
		if strings.HasSuffix(in.Path, "manifest.json") {
			var m Manifest
			if err := json.Unmarshal(in.Content, &m); err != nil {
				f.t.Errorf("manifest %s: %v", in.Path, err)
			}
			f.manifestWrites = append(f.manifestWrites, m.Phase)
		}
		return core.WriteDocumentResult{Path: in.Path}, nil
	})
	env.OnActivity(a.ProbeEndpoints, mock.Anything, mock.Anything).Return(windows.ProbeEndpointsResult{}, nil)
	env.OnActivity(a.CancelJob, mock.Anything, mock.Anything).Return(func(_ context.Context, in core.CancelJobInput) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.failCancel {
			return temporal.NewNonRetryableApplicationError("JobManager unreachable", "FlinkUnavailable", nil)
		}
		f.cancelled = append(f.cancelled, in.JobID)
		return nil
	})
	env.OnActivity(a.RestartJob, mock.Anything, mock.Anything).Return(func(_ context.Context, in windows.RestartJobInput) (core.RestartJobResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.started[in.Job.Key] = append(f.started[in.Job.Key], in.SavepointPath)
		return core.RestartJobResult{JobID: in.NewJobID}, nil
	})
	env.OnActivity(a.AwaitHealthy, mock.Anything, mock.Anything).Return(func(_ context.Context, in windows.AwaitHealthyInput) (windows.AwaitHealthyResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		for key, fail := range f.failRestart {
			if fail && strings.HasSuffix(in.SavepointPath, "savepoint-"+strings.Split(key, "/")[1]) {
				return windows.AwaitHealthyResult{}, temporal.NewNonRetryableApplicationError("job failed on restore", core.ErrTypeJobUnhealthy, nil)
			}
		}
		return windows.AwaitHealthyResult{RestoredFrom: in.SavepointPath, CheckpointID: 7}, nil
	})
	return f
}

func windowInput() WindowInput {
	return WindowInput{WindowID: "w1", Reason: "dc network change", Policy: WindowPolicy{ManifestDir: "hdfs://nn/flinkmaint/windows"}}
}

func (f *windowFixture) status() WindowState {
	f.t.Helper()
	var st WindowState
	queryInto(f.t, f.env, QueryStatus, &st)
	return st
}

func (f *windowFixture) update(name string, arg interface{}, wantErr bool) {
	f.t.Helper()
	sendUpdate(f.t, f.env, name, arg, wantErr)
}

func (f *windowFixture) result() *WindowReport {
	f.t.Helper()
	if !f.env.IsWorkflowCompleted() {
		f.t.Fatal("window did not complete")
	}
	if err := f.env.GetWorkflowError(); err != nil {
		f.t.Fatalf("window failed: %v", err)
	}
	var rep WindowReport
	if err := f.env.GetWorkflowResult(&rep); err != nil {
		f.t.Fatal(err)
	}
	return &rep
}

func TestWindowHappyPath(t *testing.T) {
	f := newWindowFixture(t, 4)
	later(t, f.env, func() {
		st := f.status()
		if st.Phase != WindowPhaseNetworkGate || st.Pending == nil || st.Pending.Kind != DecisionNetworkChange {
			t.Errorf("at 1m: phase %s pending %+v, want waiting in the network gate", st.Phase, st.Pending)
		}
		for _, j := range st.Jobs {
			if j.SavepointState != StepDone || j.RestartState != StepPending {
				t.Errorf("job %s: savepoint %s restart %s before confirmation", j.Target.Key, j.SavepointState, j.RestartState)
			}
		}
		f.update(UpdateDecide, DecideRequest{Action: ActionResume, By: "op"}, true) // nothing to decide
		f.update(UpdateConfirmNetworkChange, ConfirmNetworkChangeRequest{Reason: "done"}, true)
		f.update(UpdateConfirmNetworkChange, ConfirmNetworkChangeRequest{By: "alice", Reason: "switches replaced"}, false)
		f.update(UpdateConfirmNetworkChange, ConfirmNetworkChangeRequest{By: "bob", Reason: "me too"}, true) // already confirmed
	}, time.Minute)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, windowInput())
	rep := f.result()

	if rep.Phase != WindowPhaseCompleted || rep.Network == nil || rep.Network.By != "alice" {
		t.Fatalf("report phase %s network %+v", rep.Phase, rep.Network)
	}
	for _, j := range rep.Jobs {
		if f.stopped[j.Target.Key] != 1 {
			t.Errorf("%s stopped %d times, want once", j.Target.Key, f.stopped[j.Target.Key])
		}
		if got := f.started[j.Target.Key]; len(got) != 1 || got[0] != j.SavepointPath {
			t.Errorf("%s restarted from %v, want exactly [%s]", j.Target.Key, got, j.SavepointPath)
		}
		if j.RestartState != StepDone || j.RestoredFrom != j.SavepointPath || j.CheckpointID != 7 {
			t.Errorf("%s: %+v", j.Target.Key, j)
		}
	}
	waves := map[int]int{}
	for _, j := range rep.Jobs {
		waves[j.RestartWave]++
	}
	if waves[0] != 1 || waves[1] != 3 {
		t.Errorf("waves %v, want canary of 1 then 3", waves)
	}
	manifest := f.documents["hdfs://nn/flinkmaint/windows/w1/manifest.json"]
	for _, j := range rep.Jobs {
		if !strings.Contains(manifest, j.SavepointPath) {
			t.Errorf("manifest lacks %s", j.SavepointPath)
		}
	}
	if len(f.governance) != 1 || f.governance[0].Mode != ModePlanAndApprove || f.governance[0].RunID != "window-w1" ||
		len(f.governance[0].Scope.Tenants) != 2 {
		t.Errorf("post-restart cleanup runs %+v, want one plan-and-approve run over both tenants", f.governance)
	}
	if rep.Cleanup == nil || rep.Cleanup.Outcome != GovernancePhaseCompleted || rep.Cleanup.ReclaimedFiles != 3 || rep.Cleanup.PlannedItems != 2 {
		t.Errorf("report cleanup %+v", rep.Cleanup)
	}
	var phases []string
	for _, p := range rep.Phases {
		phases = append(phases, p.Phase)
	}
	if got, want := strings.Join(phases, " "), "preflight savepoint-all network-gate quota-gate restart cleanup report completed"; got != want {
		t.Errorf("phases %s; want %s", got, want)
	}
	if d, ok := rep.PhaseDuration(WindowPhaseNetworkGate); !ok || d < time.Minute {
		t.Errorf("network gate took %s (%v); the confirmation came after a minute", d, ok)
	}
	md := f.documents["hdfs://nn/flinkmaint/windows/w1/report.md"]
	for _, want := range []string{"cluster-a/no-recipe", "alice", "Post-restart cleanup", "- Phases: preflight 0s, savepoint-all ",
		// The quota before, at the restart gate with its projection, and after.
		"| team-a | 1000 | 100 (10.0%, ok) | 100 used + 40 projected for the restart, headroom 900: fits | 100 (10.0%, ok) |",
		// What the cleanup deleted by rule and kept by reason.
		"| team-a | delete: retired-job | 2 | 3 | 2 | 300 |", "| team-a | keep: latest-checkpoint-of-retired-job | 1 | 1 | 1 | 10 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown report lacks %q:\n%s", want, md)
		}
	}
}

func TestWindowRestartFailurePausesForSkipDecision(t *testing.T) {
	f := newWindowFixture(t, 3)
	f.failRestart["cluster-b/job-b"] = true
	in := windowInput()
	in.Policy.Network.Skip = true
	in.Policy.Restart.CanarySize = 1
	var pendingSeen bool
	later(t, f.env, func() {
		st := f.status()
		if st.Pending == nil || st.Pending.Kind != DecisionRestartFailures || len(st.Pending.Jobs) != 1 || st.Pending.Jobs[0] != "cluster-b/job-b" {
			t.Errorf("pending = %+v, want restart-failures for cluster-b/job-b", st.Pending)
			return
		}
		pendingSeen = true
		f.update(UpdateDecide, DecideRequest{Action: ActionSkipJob, Job: "cluster-a/job-a", By: "bob"}, true) // not failed
		f.update(UpdateDecide, DecideRequest{Action: ActionSkipJob, Job: "cluster-b/job-b", By: "bob", Reason: "fix tomorrow"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	rep := f.result()
	if !pendingSeen {
		t.Fatal("window never paused for the failed restart")
	}
	for _, j := range rep.Jobs {
		switch j.Target.Key {
		case "cluster-b/job-b":
			if j.RestartState != StepSkipped || !strings.Contains(j.SkipReason, "bob") || !strings.Contains(j.SkipReason, "job failed on restore") {
				t.Errorf("skipped job: %+v", j)
			}
		default:
			if j.RestartState != StepDone {
				t.Errorf("%s restart %s, want done", j.Target.Key, j.RestartState)
			}
		}
	}
}

func TestWindowRetryJobCancelsFailedAttemptFirst(t *testing.T) {
	f := newWindowFixture(t, 1)
	f.failRestart["cluster-a/job-a"] = true
	in := windowInput()
	in.Policy.Network.Skip = true
	later(t, f.env, func() {
		f.mu.Lock()
		f.failRestart["cluster-a/job-a"] = false
		f.mu.Unlock()
		f.update(UpdateDecide, DecideRequest{Action: ActionRetryJob, Job: "cluster-a/job-a", By: "carol"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	rep := f.result()
	j := rep.Jobs[0]
	first := flinkID("w1", "cluster-a/job-a", "restart", 1)
	if j.RestartState != StepDone || j.RestartAttempts != 2 || len(f.cancelled) != 1 || f.cancelled[0] != first {
		t.Fatalf("job %+v, cancelled %v; want attempt 2 done after cancelling %s", j, f.cancelled, first)
	}
	if j.NewJobID != flinkID("w1", "cluster-a/job-a", "restart", 2) {
		t.Fatalf("new job id %s is not attempt 2's", j.NewJobID)
	}
}

// A retry whose cancel of the failed attempt failed never started its
// job: the next retry must still cancel the attempt that did start, or
// two instances of the job would run.
func TestWindowRetryAfterAFailedCancelCancelsEveryEarlierAttempt(t *testing.T) {
	f := newWindowFixture(t, 1)
	f.failRestart["cluster-a/job-a"] = true
	in := windowInput()
	in.Policy.Network.Skip = true
	retry := func(failCancel, failRestart bool) func() {
		return func() {
			f.mu.Lock()
			f.failCancel, f.failRestart["cluster-a/job-a"] = failCancel, failRestart
			f.mu.Unlock()
			f.update(UpdateDecide, DecideRequest{Action: ActionRetryJob, Job: "cluster-a/job-a", By: "carol"}, false)
		}
	}
	later(t, f.env, retry(true, false), time.Hour)    // attempt 2: its cancel of attempt 1 fails
	later(t, f.env, retry(false, false), 2*time.Hour) // attempt 3
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	rep := f.result()
	j := rep.Jobs[0]
	first := flinkID("w1", "cluster-a/job-a", "restart", 1)
	if j.RestartState != StepDone || j.RestartAttempts != 3 {
		t.Fatalf("job %+v; want attempt 3 done", j)
	}
	if !slices.Contains(f.cancelled, first) {
		t.Fatalf("cancelled %v; attempt 1 (%s), which started, was never cancelled", f.cancelled, first)
	}
	if got := f.started["cluster-a/job-a"]; len(got) != 2 {
		t.Fatalf("started %v; want attempts 1 and 3 only", got)
	}
}

func TestWindowQuotaGatePausesUntilRetry(t *testing.T) {
	f := newWindowFixture(t, 2)
	f.quotaShort = true
	in := windowInput()
	in.Policy.Network.Skip = true
	later(t, f.env, func() {
		st := f.status()
		if st.Phase != WindowPhaseQuotaGate || st.Pending == nil || st.Pending.Kind != DecisionQuota || !strings.Contains(st.Pending.Reason, "team-a") {
			t.Errorf("want quota pause naming team-a, got phase %s pending %+v", st.Phase, st.Pending)
		}
		for _, j := range st.Jobs {
			if j.RestartState != StepPending {
				t.Errorf("%s restarted before the quota gate passed", j.Target.Key)
			}
		}
		f.mu.Lock()
		f.quotaShort = false
		f.mu.Unlock()
		f.update(UpdateDecide, DecideRequest{Action: ActionRetry, By: "dave", Reason: "quota raised"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	rep := f.result()
	for _, j := range rep.Jobs {
		if j.RestartState != StepDone {
			t.Errorf("%s: restart %s", j.Target.Key, j.RestartState)
		}
	}
	// The gate projects from what preflight measured while the jobs ran,
	// not from their stopped jobs' dirs, which Flink has emptied.
	if len(f.gateRestarts) != 4 {
		t.Fatalf("gate asked %d times per job, want 2 checks of 2 jobs: %+v", len(f.gateRestarts), f.gateRestarts)
	}
	for _, r := range f.gateRestarts {
		if m := r.Measured; m == nil || m.Key != r.Key || m.FilesPerCheckpoint != 5 || m.FullCheckpointFiles != 9 || r.SavepointFiles == 0 {
			t.Errorf("gate input %+v; want preflight's footprint and the savepoint's files", r)
		}
	}
}

// A window whose jobs' restart would not fit their tenant's quota stops
// no job: it pauses in preflight until the quota is raised.
func TestWindowPreflightPausesWhenTheRestartWouldNotFit(t *testing.T) {
	f := newWindowFixture(t, 2)
	f.quotaShortBefore = true
	in := windowInput()
	in.Policy.Network.Skip = true
	later(t, f.env, func() {
		st := f.status()
		if st.Phase != WindowPhasePreflight || st.Pending == nil || st.Pending.Kind != DecisionPreflightWatermark ||
			!strings.Contains(st.Pending.Reason, "restart would not fit: needs 5000") {
			t.Errorf("want a preflight pause saying the restart would not fit, got phase %s pending %+v", st.Phase, st.Pending)
		}
		f.mu.Lock()
		stopped := len(f.stopped)
		f.quotaShortBefore = false
		f.mu.Unlock()
		if stopped != 0 {
			t.Errorf("%d jobs stopped before the quota allowed their restart", stopped)
		}
		f.update(UpdateDecide, DecideRequest{Action: ActionRetry, By: "dave", Reason: "quota raised"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	if rep := f.result(); rep.Phase != WindowPhaseCompleted {
		t.Fatalf("phase %s", rep.Phase)
	}
}

// A retry while the restart still would not fit asks again and stops
// nothing; a resume goes on, the manifest still written before the first
// stop.
func TestWindowPreflightRetryChecksAgainAndResumeGoesOn(t *testing.T) {
	f := newWindowFixture(t, 2)
	f.quotaShortBefore = true
	in := windowInput()
	in.Policy.Network.Skip = true
	asked := 0
	answer := func() {
		st := f.status()
		if st.Pending == nil || st.Pending.Kind != DecisionPreflightWatermark {
			t.Errorf("pending %+v; want the preflight watermark decision", st.Pending)
			return
		}
		asked++
		f.mu.Lock()
		stopped := len(f.stopped)
		f.mu.Unlock()
		if stopped != 0 {
			t.Errorf("%d jobs stopped while the restart would not fit", stopped)
		}
		if asked == 1 {
			f.update(UpdateDecide, DecideRequest{Action: ActionRetry, By: "dave", Reason: "cleaned up, I think"}, false)
			return
		}
		f.update(UpdateDecide, DecideRequest{Action: ActionResume, By: "dave", Reason: "the restart fits the hard quota"}, false)
	}
	later(t, f.env, answer, time.Hour)
	later(t, f.env, answer, 2*time.Hour)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	if rep := f.result(); rep.Phase != WindowPhaseCompleted || asked != 2 || len(f.unrecorded) != 0 {
		t.Fatalf("phase %s after %d questions, stopped without a manifest %v; want completed after 2, none", rep.Phase, asked, f.unrecorded)
	}
}

// While stops are in flight nothing waits for a person: a decision is
// refused, and a second abort of a window already aborting is refused
// too, keeping the first one's reason in the report.
func TestWindowRefusesADecisionWithNothingPendingAndASecondAbort(t *testing.T) {
	f := newWindowFixture(t, 2)
	f.stopTakes = 10 * time.Minute
	later(t, f.env, func() {
		if st := f.status(); st.Phase != WindowPhaseSavepointAll || st.Pending != nil {
			t.Errorf("phase %s pending %+v; want savepoint-all with nothing pending", st.Phase, st.Pending)
		}
		sendRefused(t, f.env, UpdateDecide, DecideRequest{Action: ActionRetry, By: "op", Reason: "why not"}, "is not waiting for a decision")
		f.update(UpdateAbort, AbortRequest{By: "erin", Reason: "change postponed"}, false)
	}, 2*time.Minute)
	later(t, f.env, func() {
		sendRefused(t, f.env, UpdateAbort, AbortRequest{By: "frank", Reason: "mine instead"}, "is already")
	}, 3*time.Minute)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, windowInput())
	rep := f.result()
	if rep.Phase != WindowPhaseAborted || !strings.Contains(rep.AbortReason, "change postponed (by erin)") {
		t.Fatalf("phase %s abort %q; want aborted for the first reason", rep.Phase, rep.AbortReason)
	}
}

func TestWindowAbortInNetworkGateLeavesJobsStoppedAndReports(t *testing.T) {
	f := newWindowFixture(t, 2)
	later(t, f.env, func() {
		f.update(UpdateAbort, AbortRequest{By: "erin"}, true) // no reason
		f.update(UpdateAbort, AbortRequest{By: "erin", Reason: "change postponed"}, false)
		f.update(UpdateAbort, AbortRequest{By: "frank", Reason: "again"}, true) // already aborting
	}, time.Minute)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, windowInput())
	rep := f.result()
	if rep.Phase != WindowPhaseAborted || !strings.Contains(rep.AbortReason, "change postponed") {
		t.Fatalf("phase %s abort %q", rep.Phase, rep.AbortReason)
	}
	for _, j := range rep.Jobs {
		if len(f.started[j.Target.Key]) != 0 || j.SavepointPath == "" {
			t.Errorf("%s: restarted %v, savepoint %q", j.Target.Key, f.started[j.Target.Key], j.SavepointPath)
		}
	}
	if _, ok := f.documents["hdfs://nn/flinkmaint/windows/w1/report.md"]; !ok {
		t.Error("aborted window wrote no report")
	}
}

// The people on call hear of the network change the window waits for,
// with the command that confirms it, every reminder interval until it is
// confirmed; the window holds its tenants from savepoint-all until every
// job is back.
func TestWindowTellsThePeopleOnCallAndHoldsItsTenants(t *testing.T) {
	f := newWindowFixture(t, 2)
	var a *oncall.Activities
	f.env.OnActivity(a.Notify, mockAny, mockAny).Return(func(_ context.Context, in oncall.NotifyInput) (oncall.NotifyResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.events = append(f.events, in.Event)
		return oncall.NotifyResult{}, nil
	})
	in := windowInput()
	in.Policy.Network.ReminderInterval = Duration(10 * time.Minute)
	later(t, f.env, func() {
		f.update(UpdateConfirmNetworkChange, ConfirmNetworkChangeRequest{By: "ops", Reason: "done"}, false)
	}, 25*time.Minute)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	f.result()
	var pending []string
	for _, e := range f.events {
		if e.Kind == notify.KindDecisionPending {
			pending = append(pending, fmt.Sprintf("r%d resolved=%v %s", e.Reminder, e.Resolved, strings.Join(e.Commands, "; ")))
		}
	}
	cmd := "flinkmaint window confirm-network-change " + in.WindowID + " --reason TEXT; flinkmaint window abort " + in.WindowID + " --reason TEXT"
	want := []string{"r0 resolved=false " + cmd, "r1 resolved=false " + cmd, "r2 resolved=false " + cmd, "r0 resolved=true "}
	if strings.Join(pending, " | ") != strings.Join(want, " | ") {
		t.Errorf("decision notifications:\n%s\nwant:\n%s", strings.Join(pending, "\n"), strings.Join(want, "\n"))
	}
	// Notifications are not awaited, so they may run in any order.
	var finished []notify.Event
	for _, e := range f.events {
		if e.Kind == notify.KindFinished {
			finished = append(finished, e)
		}
	}
	if len(finished) != 1 || len(finished[0].Tenants) != 2 {
		t.Errorf("end events %+v; want one, about the window's two tenants", finished)
	}
	const wid = "default-test-workflow-id"
	wantLocks := "acquire " + wid + " team-a,team-b | release " + wid
	if got := f.locks.String(); got != wantLocks {
		t.Errorf("tenant locks: %s; want %s", got, wantLocks)
	}
}

// A window whose tenant lock cannot be requested stops nothing: without
// the lock a governance execution or an upgrade could change a job between
// its savepoint and its restart.
func TestWindowStopsNothingWithoutItsTenantLock(t *testing.T) {
	f := newWindowFixture(t, 2)
	f.locks.refuse = temporal.NewNonRetryableApplicationError("the tenant lock manager is not running", "LockUnavailable", nil)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, windowInput())
	err := f.env.GetWorkflowError()
	if err == nil || !strings.Contains(err.Error(), "tenant lock") || len(f.stopped) != 0 {
		t.Fatalf("window ended with %v after stopping %v; want it failed on the tenant lock with no job stopped", err, f.stopped)
	}
}

// The tenant lock a window holds is in its state from savepoint-all until
// every job is back: that state is what a run it hands over to starts from,
// so the next run neither asks for the lock again nor forgets to give it back.
func TestWindowStateSaysItHoldsItsTenantLock(t *testing.T) {
	f := newWindowFixture(t, 2)
	seen := false
	later(t, f.env, func() {
		st := f.status()
		if st.Phase != WindowPhaseNetworkGate || !st.TenantLockHeld {
			t.Errorf("phase %s, tenant lock held %v; want the lock in the state at the network gate", st.Phase, st.TenantLockHeld)
		}
		seen = true
		f.update(UpdateConfirmNetworkChange, ConfirmNetworkChangeRequest{By: "ops", Reason: "done"}, false)
	}, 10*time.Minute)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, windowInput())
	f.result()
	const wid = "default-test-workflow-id"
	if got, want := f.locks.String(), "acquire "+wid+" team-a,team-b | release "+wid; !seen || got != want {
		t.Errorf("seen %v, tenant locks %s; want it held at the gate and given back: %s", seen, got, want)
	}
}

func TestWindowNetworkGateAutoConfirmAndReminders(t *testing.T) {
	f := newWindowFixture(t, 1)
	in := windowInput()
	in.Policy.Network.ReminderInterval = Duration(10 * time.Minute)
	in.Policy.Network.AutoConfirmAfter = Duration(35 * time.Minute)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	rep := f.result()
	if rep.Network == nil || !rep.Network.Auto || rep.Network.Reminders != 3 {
		t.Fatalf("network confirmation %+v, want auto after 3 reminders", rep.Network)
	}
	// At autoConfirmAfter, not at the next reminder after it.
	if waited := rep.Network.At.Sub(rep.StartedAt); waited < 35*time.Minute || waited >= 36*time.Minute {
		t.Errorf("confirmed automatically %s after the start; want at 35m", waited)
	}
}

// Past policy.network.deadline a window that waits says so once and goes
// on waiting; one told to abort ends aborted, with the jobs left stopped.
func TestWindowNetworkGateDeadline(t *testing.T) {
	for _, onDeadline := range []string{OnDeadlineWait, OnDeadlineAbort} {
		t.Run(onDeadline, func(t *testing.T) {
			f := newWindowFixture(t, 1)
			in := windowInput()
			in.Policy.Network.ReminderInterval = Duration(10 * time.Minute)
			in.Policy.Network.Deadline = Duration(15 * time.Minute)
			in.Policy.Network.OnDeadline = onDeadline
			if onDeadline == OnDeadlineWait {
				later(t, f.env, func() {
					f.update(UpdateConfirmNetworkChange, ConfirmNetworkChangeRequest{By: "ops", Reason: "late but done"}, false)
				}, 45*time.Minute)
			}
			f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
			rep := f.result()
			notes := 0
			for _, n := range rep.Notes {
				if strings.Contains(n, "network change not confirmed within 15m") {
					notes++
				}
			}
			switch onDeadline {
			case OnDeadlineWait:
				if rep.Phase != WindowPhaseCompleted || notes != 1 || rep.Network == nil || rep.Network.By != "ops" {
					t.Errorf("phase %s, %d deadline notes, network %+v; want completed after the late confirmation, the deadline noted once", rep.Phase, notes, rep.Network)
				}
			case OnDeadlineAbort:
				if rep.Phase != WindowPhaseAborted || !strings.Contains(rep.AbortReason, "policy.network.deadline=15m") || len(f.started) != 0 {
					t.Errorf("phase %s, abort %q, started %v; want aborted at the deadline with nothing restarted", rep.Phase, rep.AbortReason, f.started)
				}
			}
		})
	}
}

// A job whose stop failed but which no longer runs is not reported as
// running: the skip reason tells the person to restart it by hand.
func TestWindowSavepointFailureOfAStoppedJobSaysItIsNotRunning(t *testing.T) {
	f := newWindowFixture(t, 2)
	f.failStop["cluster-a/job-a"] = true
	f.stoppedAnyway = true
	in := windowInput()
	in.Policy.Network.Skip = true
	in.Policy.Savepoint.OnFailure = OnFailureSkip
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	rep := f.result()
	for _, j := range rep.Jobs {
		if j.Target.Key != "cluster-a/job-a" {
			continue
		}
		if !j.StoppedWithoutSavepoint || strings.Contains(j.SkipReason, "keeps running") || !strings.Contains(j.SkipReason, "no longer running") {
			t.Errorf("stopped job without savepoint: %+v", j)
		}
	}
}

// A savepoint found in the finished job's history, after Flink forgot the
// stop, is used and the report says so.
func TestWindowReportsARecoveredSavepoint(t *testing.T) {
	f := newWindowFixture(t, 1)
	f.recovered = "Flink no longer knew the stop operation; savepoint 7 from the finished job's checkpoint history"
	in := windowInput()
	in.Policy.Network.Skip = true
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	rep := f.result()
	if j := rep.Jobs[0]; j.SavepointRecovered != f.recovered || j.RestartState != StepDone {
		t.Fatalf("job %+v; want restarted from the recovered savepoint, noted", j)
	}
	if md := rep.Markdown(); !strings.Contains(md, "no longer knew the stop operation") {
		t.Fatalf("markdown does not mention the recovered savepoint:\n%s", md)
	}
}

func TestWindowSavepointFailureSkipPolicyKeepsJobRunning(t *testing.T) {
	f := newWindowFixture(t, 2)
	f.failStop["cluster-a/job-a"] = true
	in := windowInput()
	in.Policy.Network.Skip = true
	in.Policy.Savepoint.OnFailure = OnFailureSkip
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	rep := f.result()
	for _, j := range rep.Jobs {
		if j.Target.Key == "cluster-a/job-a" {
			if j.SavepointState != StepSkipped || j.RestartState != StepSkipped || !strings.Contains(j.SkipReason, "keeps running") {
				t.Errorf("failed job: %+v", j)
			}
			if len(f.started[j.Target.Key]) != 0 {
				t.Error("a job without a savepoint was restarted")
			}
		}
	}
}

func TestWindowRejectsInvalidInput(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.ExecuteWorkflow(MaintenanceWindowWorkflow, WindowInput{WindowID: "a/b", Policy: WindowPolicy{Savepoint: SavepointPolicy{OnFailure: "cancel"}}})
	err := env.GetWorkflowError()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != ErrTypeInvalidInput {
		t.Fatalf("error %v, want %s", err, ErrTypeInvalidInput)
	}
	for _, want := range []string{"windowId", "reason", "policy.manifestDir", "onFailure"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
}

func TestWindowStopsNoJobBeforeItsManifestIsWritten(t *testing.T) {
	f := newWindowFixture(t, 2)
	f.failWrites = true
	in := windowInput()
	in.Policy.Network.Skip = true
	paused := false
	later(t, f.env, func() {
		paused = true
		st := f.status()
		if st.Phase != WindowPhasePreflight || st.Pending == nil || st.Pending.Kind != DecisionManifestUnwritable || !strings.Contains(st.Pending.Reason, "manifest.json") {
			t.Errorf("want a manifest-unwritable pause in preflight, got phase %s pending %+v", st.Phase, st.Pending)
		}
		f.mu.Lock()
		stopped := len(f.stopped)
		f.failWrites = false
		f.mu.Unlock()
		if stopped != 0 {
			t.Errorf("%d jobs stopped before the manifest was written", stopped)
		}
		f.update(UpdateDecide, DecideRequest{Action: ActionRetry, By: "ops", Reason: "root created"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	rep := f.result()
	if !paused {
		t.Fatal("the window finished before the check an hour in: it did not wait for its manifest")
	}
	if len(f.unrecorded) > 0 {
		t.Fatalf("jobs %v stopped before a manifest naming them was written", f.unrecorded)
	}
	for _, j := range rep.Jobs {
		if j.RestartState != StepDone {
			t.Errorf("%s: %s", j.Target.Key, j.RestartState)
		}
	}
}

func TestWindowCleanupSkipAndFailureDoNotFailTheWindow(t *testing.T) {
	for name, mode := range map[string]string{"skip": CleanupModeSkip, "failing governance": ModeAuto} {
		t.Run(name, func(t *testing.T) {
			f := newWindowFixture(t, 1)
			in := windowInput()
			in.Policy.Network.Skip = true
			in.Policy.Cleanup.Mode = mode
			// A governance run that fails: the jobs are back, the window
			// completes and says so.
			f.failGov = mode == ModeAuto
			f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
			rep := f.result()
			if rep.Phase != WindowPhaseCompleted {
				t.Fatalf("phase %s", rep.Phase)
			}
			switch mode {
			case CleanupModeSkip:
				if rep.Cleanup != nil || len(f.governance) != 0 {
					t.Fatalf("cleanup ran although skipped: %+v", rep.Cleanup)
				}
			default:
				if rep.Cleanup == nil || !strings.Contains(rep.Cleanup.Error, "trashRoot") {
					t.Fatalf("cleanup %+v, want the failure recorded", rep.Cleanup)
				}
			}
		})
	}
}

// TestWindowSpacesManifestRewritesBetweenResults: in a run that keeps its
// history bounded, child results rewrite the manifest at most once per
// boundedManifestInterval of workflow time (encoding it is linear in the
// fleet), and the phase's end still writes every savepoint into it.
func TestWindowSpacesManifestRewritesBetweenResults(t *testing.T) {
	const jobs = 24
	f := newWindowFixture(t, jobs)
	f.stopTakes = 2 * time.Second
	in := windowInput()
	in.Policy.Savepoint.Concurrency = 1
	atGate := ""
	later(t, f.env, func() {
		st := f.status()
		if st.Phase != WindowPhaseNetworkGate {
			t.Errorf("at 10m: phase %s, want the network gate", st.Phase)
		}
		f.mu.Lock()
		atGate = f.documents["hdfs://nn/flinkmaint/windows/w1/manifest.json"]
		f.mu.Unlock()
		f.update(UpdateConfirmNetworkChange, ConfirmNetworkChangeRequest{By: "alice", Reason: "done"}, false)
	}, 10*time.Minute)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	rep := f.result()

	during := 0
	for _, phase := range f.manifestWrites {
		if phase == WindowPhaseSavepointAll {
			during++
		}
	}
	// 24 stops of 2s one at a time: 48s of results, so about five
	// rewrites, not one per result.
	if most := int(time.Duration(jobs)*f.stopTakes/boundedManifestInterval) + 2; during > most || during == 0 {
		t.Errorf("%d manifest rewrites during savepoint-all (phases of all rewrites: %v); want 1..%d", during, f.manifestWrites, most)
	}
	for _, j := range rep.Jobs {
		if !strings.Contains(atGate, j.SavepointPath) {
			t.Errorf("manifest at the network gate lacks %s's savepoint %s", j.Target.Key, j.SavepointPath)
		}
	}
}

// Inside a freeze of one of its tenants a window stops nothing unless a
// person overrides the freeze, and the override is in the report.
func TestWindowRespectsFreezes(t *testing.T) {
	for _, override := range []*FreezeOverride{nil, {By: "ann", Reason: "datacenter move cannot wait"}} {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		var a *oncall.Activities
		env.OnActivity(a.CheckFreeze, mockAny, mockAny).Return(func(_ context.Context, in oncall.CheckFreezeInput) (oncall.CheckFreezeResult, error) {
			if strings.Join(in.Tenants, ",") != "team-a,team-b" {
				t.Errorf("freeze asked about %v; want the window's tenants", in.Tenants)
			}
			return oncall.CheckFreezeResult{Active: []freeze.Active{{Name: "trading", Tenants: []string{"team-b"}, Until: time.Date(2026, 12, 1, 16, 30, 0, 0, time.UTC)}}}, nil
		})
		f := newWindowFixtureOn(t, env, 2)
		in := windowInput()
		in.Policy.Network.Skip = true
		in.OverrideFreeze = override
		env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
		if override == nil {
			if err := env.GetWorkflowError(); !isFrozen(err) || !strings.Contains(err.Error(), `freeze "trading" until 2026-12-01T16:30:00Z for team-b`) || len(f.stopped) != 0 {
				t.Fatalf("frozen window: %v, stopped %v; want refused before any stop, naming the freeze", err, f.stopped)
			}
			continue
		}
		rep := f.result()
		if rep.Phase != WindowPhaseCompleted || len(f.stopped) != 2 || !strings.Contains(strings.Join(rep.Notes, "\n"), "freeze overridden by ann: datacenter move cannot wait") {
			t.Fatalf("overridden window: %s, stopped %v, notes %v", rep.Phase, f.stopped, rep.Notes)
		}
	}
}

// Drain is off unless asked for; the window's policy drains every job but
// those whose inventory entry says drainOnStop: false.
func TestWindowDrainsOnlyWhenAsked(t *testing.T) {
	no := false
	for name, tc := range map[string]struct {
		drain bool
		want  string
	}{"off by default": {false, ""}, "policy, job opted out": {true, "cluster-a/job-a"}} {
		t.Run(name, func(t *testing.T) {
			f := newWindowFixture(t, 2)
			f.jobs[1].DrainOnStop = &no
			in := windowInput()
			in.Policy.Network.Skip = true
			in.Policy.Savepoint.Drain = tc.drain
			f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
			if rep := f.result(); rep.Phase != WindowPhaseCompleted {
				t.Fatalf("phase %s", rep.Phase)
			}
			if got := strings.Join(f.drained, ","); got != tc.want {
				t.Errorf("drained %q; want %q", got, tc.want)
			}
		})
	}
}

// An operator-run job is suspended through its resource, which does not
// drain: a window asked to drain it refuses before stopping anything.
func TestDrainRefusedForOperatorJobs(t *testing.T) {
	yes := true
	jobs := []core.JobTarget{
		{Key: "c/rest", Restart: inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun}},
		{Key: "c/op", Restart: inventory.RestartRecipe{Kind: inventory.RestartOperatorResume}},
	}
	if err := drainRefusal(jobs, SavepointPolicy{}); err != nil {
		t.Fatalf("no drain asked: %v", err)
	}
	err := drainRefusal(jobs, SavepointPolicy{Drain: true})
	if err == nil || !strings.Contains(err.Error(), "c/op") || strings.Contains(err.Error(), "c/rest") || !strings.Contains(err.Error(), "drainOnStop: false") {
		t.Fatalf("drain of an operator job: %v", err)
	}
	jobs[0].DrainOnStop, jobs[1].DrainOnStop = &yes, nil
	if err := drainRefusal(jobs, SavepointPolicy{}); err != nil {
		t.Fatalf("drain asked for the REST job only: %v", err)
	}
}
