package workflows

import (
	"context"
	"errors"
	"fmt"
	"sort"
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
	"github.com/flinkmaint/flinkmaint/activities/drills"
	"github.com/flinkmaint/flinkmaint/activities/oncall"
	"github.com/flinkmaint/flinkmaint/activities/upgrades"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/freeze"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/notify"
)

const unmatchedText = "Failed to rollback to checkpoint/savepoint hdfs://nn/sp/savepoint-orders. Cannot map checkpoint/savepoint state for operator fcfb2cd74328d289a0b17a4030f9cfdc to the new program, because the operator is not available in the new program."

// upgradeFixture fakes the activities of an upgrade of cluster-a/orders
// from recipe v1 and records what they were asked. A started version whose
// arguments hold --fail-on-restore never becomes healthy; one holding
// --state-uid cannot map its state unless allowed to drop it.
type upgradeFixture struct {
	mu        sync.Mutex
	t         *testing.T
	env       *testsuite.TestWorkflowEnvironment
	stops     int
	started   []windows.RestartJobInput
	cancelled []string
	ended     []upgrades.EndJobInput
	recorded  []upgrades.RecordRecipeInput
	forgotten []upgrades.ForgetRecipeInput
	manifests []string
	// manifestBeforeStop says a manifest naming the previous jar was on
	// storage when the job was stopped.
	manifestBeforeStop bool
	// failGates makes the gate fail this many times before it passes.
	failGates int
	// calls are the operator activities in the order they ran; suspendFails
	// makes suspends after the first fail; failJobs are job IDs whose gate
	// fails.
	calls        []string
	specChanges  []inventory.JobSpecChange
	suspendFails bool
	failJobs     map[string]bool
	gates        []windows.AwaitHealthyInput
	events       []notify.Event
	frozen       bool
	// stopErr, when set, is what StopWithSavepoint fails with.
	stopErr error
	// quotaFull makes the quota check say the new version does not fit.
	quotaFull bool
	// retireFails makes ending the previous version fail.
	retireFails bool
	// rehearse says what the rehearsal meets: "" no drill cluster (not
	// rehearsed), "compatible", "unmatched" (the copy's submission fails
	// on an unmatched operator), "no-slots".
	rehearse       string
	prepared       []upgrades.PrepareRehearsalInput
	drillStarts    []drills.StartDrillJobInput
	drillEnds      []drills.EndDrillInput
	rehearsalSaved []upgrades.RecordRehearsalInput
}

var previousJobID = strings.Repeat("1", 32)

var previousRecipe = inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun, Jar: "/jars/orders-v1.jar", EntryClass: "com.example.Orders",
	ProgramArgs: []string{"--version", "1"}}

func newUpgradeFixture(t *testing.T) *upgradeFixture {
	var s testsuite.WorkflowTestSuite
	f := &upgradeFixture{t: t, env: s.NewTestWorkflowEnvironment()}
	env := f.env
	env.RegisterWorkflowWithOptions(JobUpgradeWorkflow, workflow.RegisterOptions{Name: JobUpgradeWorkflowType})
	env.RegisterWorkflowWithOptions(JobSavepointWorkflow, workflow.RegisterOptions{Name: JobSavepointWorkflowType})
	env.RegisterWorkflowWithOptions(JobRestartWorkflow, workflow.RegisterOptions{Name: JobRestartWorkflowType})
	env.RegisterWorkflowWithOptions(JobRehearsalWorkflow, workflow.RegisterOptions{Name: JobRehearsalWorkflowType})
	var a *windows.Activities
	var upg *upgrades.Activities
	var capa *capacity.Activities
	var onc *oncall.Activities
	f.fakeRehearsal()
	env.OnActivity(onc.CheckFreeze, mock.Anything, mock.Anything).Return(func(_ context.Context, in oncall.CheckFreezeInput) (oncall.CheckFreezeResult, error) {
		if f.frozen {
			return oncall.CheckFreezeResult{Active: []freeze.Active{{Name: "trading-hours", Tenants: in.Tenants, Until: time.Date(2026, 12, 1, 16, 30, 0, 0, time.UTC)}}}, nil
		}
		return oncall.CheckFreezeResult{}, nil
	})
	openGates(env)
	env.OnActivity(a.DiscoverJobs, mock.Anything, mock.Anything).Return(func(_ context.Context, in core.DiscoverJobsInput) (core.DiscoverJobsResult, error) {
		if len(in.Scope.Clusters) != 1 || in.Scope.Clusters[0] != "cluster-a" {
			return core.DiscoverJobsResult{}, nil
		}
		return core.DiscoverJobsResult{Tenants: []inventory.Tenant{{Name: "team-a", Root: "hdfs://nn/a"}},
			Jobs: []core.JobTarget{{Key: "cluster-a/orders", Tenant: "team-a", ClusterID: "cluster-a", RESTURL: "http://cluster-a",
				JobName: "orders", JobID: previousJobID, SavepointDir: "hdfs://nn/sp", Restart: previousRecipe},
				{Key: "cluster-a/payments", Tenant: "team-a", ClusterID: "cluster-a", RESTURL: "http://cluster-a", JobName: "payments",
					JobID: strings.Repeat("2", 32), Restart: inventory.RestartRecipe{Kind: inventory.RestartOperatorResume,
						Resource: &inventory.ObjectRef{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkDeployment", Namespace: "team-a", Name: "payments"}}}},
			Skipped: []core.SkippedJob{{Key: "cluster-a/twice", Reason: "2 jobs named \"twice\" run on cluster-a"}}}, nil
	})
	env.OnActivity(upg.CheckUpgrade, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(onc.Notify, mock.Anything, mock.Anything).Return(func(_ context.Context, in oncall.NotifyInput) (oncall.NotifyResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.events = append(f.events, in.Event)
		return oncall.NotifyResult{}, nil
	})
	env.OnActivity(capa.CheckQuota, mock.Anything, mock.Anything).Return(func(context.Context, capacity.CheckQuotaInput) (capacity.CheckQuotaResult, error) {
		return capacity.CheckQuotaResult{Tenants: []capacity.TenantQuota{
			{Tenant: "team-b", RestartAllowed: true}, {Tenant: "team-a", RestartAllowed: !f.quotaFull, GateReason: "over the critical watermark"}}}, nil
	})
	env.OnActivity(a.WriteDocument, mock.Anything, mock.Anything).Return(func(_ context.Context, in core.WriteDocumentInput) (core.WriteDocumentResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.manifests = append(f.manifests, string(in.Content))
		return core.WriteDocumentResult{Path: in.Path}, nil
	})
	env.OnActivity(a.StopWithSavepoint, mock.Anything, mock.Anything).Return(func(_ context.Context, in core.StopWithSavepointInput) (core.StopWithSavepointResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.stops++
		f.manifestBeforeStop = len(f.manifests) > 0 && strings.Contains(f.manifests[len(f.manifests)-1], previousRecipe.Jar)
		if f.stopErr != nil {
			return core.StopWithSavepointResult{}, f.stopErr
		}
		return core.StopWithSavepointResult{SavepointPath: "hdfs://nn/sp/savepoint-orders"}, nil
	})
	env.OnActivity(a.VerifySavepoint, mock.Anything, mock.Anything).Return(windows.VerifySavepointResult{Files: 5}, nil)
	env.OnActivity(a.TakeSavepoint, mock.Anything, mock.Anything).Return(func(_ context.Context, in windows.TakeSavepointInput) (windows.TakeSavepointResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls = append(f.calls, "savepoint "+in.Job.JobID)
		f.manifestBeforeStop = len(f.manifests) > 0 && strings.Contains(f.manifests[len(f.manifests)-1], previousRecipe.Jar)
		return windows.TakeSavepointResult{SavepointPath: "hdfs://nn/sp/savepoint-orders"}, nil
	})
	env.OnActivity(a.RestartJob, mock.Anything, mock.Anything).Return(func(_ context.Context, in windows.RestartJobInput) (core.RestartJobResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.started = append(f.started, in)
		if hasArg(in.Job.Restart, "--state-uid") && !in.Job.Restart.AllowNonRestoredState {
			// Flink puts the cause after a long stack: the operator is past
			// what a person's text keeps.
			return core.RestartJobResult{}, temporal.NewNonRetryableApplicationError("run cluster-a/orders: org.apache.flink.runtime.client.JobInitializationException: "+
				strings.Repeat("at org.apache.flink.runtime.scheduler.DefaultScheduler.restoreState(DefaultScheduler.java:123) ", 8)+unmatchedText, "FlinkBadRequest", nil)
		}
		return core.RestartJobResult{JobID: in.NewJobID}, nil
	})
	env.OnActivity(a.AwaitHealthy, mock.Anything, mock.Anything).Return(func(_ context.Context, in windows.AwaitHealthyInput) (windows.AwaitHealthyResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls = append(f.calls, "gate "+in.JobID)
		f.gates = append(f.gates, in)
		if f.failJobs[in.JobID] {
			return windows.AwaitHealthyResult{}, temporal.NewNonRetryableApplicationError("job FAILED: NoSuchMethodError", core.ErrTypeJobUnhealthy, nil)
		}
		if in.RESTURL == "http://drill" {
			if f.rehearse == "no-slots" {
				return windows.AwaitHealthyResult{}, temporal.NewNonRetryableApplicationError("job not RUNNING within 5m0s (state CREATED)", core.ErrTypeJobUnhealthy, nil)
			}
			return windows.AwaitHealthyResult{RestoredFrom: in.SavepointPath, CheckpointID: 3}, nil
		}
		for _, s := range f.started {
			if s.NewJobID == in.JobID && hasArg(s.Job.Restart, "--fail-on-restore") || f.failGates > 0 {
				f.failGates--
				return windows.AwaitHealthyResult{}, temporal.NewNonRetryableApplicationError("job FAILED: sample job started with --fail-on-restore", core.ErrTypeJobUnhealthy, nil)
			}
		}
		return windows.AwaitHealthyResult{RestoredFrom: in.SavepointPath, CheckpointID: 9}, nil
	})
	env.OnActivity(a.CancelJob, mock.Anything, mock.Anything).Return(func(_ context.Context, in core.CancelJobInput) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.cancelled = append(f.cancelled, in.JobID)
		return nil
	})
	env.OnActivity(upg.EndJob, mock.Anything, mock.Anything).Return(func(_ context.Context, in upgrades.EndJobInput) (upgrades.EndJobResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.ended = append(f.ended, in)
		f.calls = append(f.calls, "end "+in.Job.JobID)
		if in.Job.JobID == previousJobID && f.retireFails {
			return upgrades.EndJobResult{}, temporal.NewNonRetryableApplicationError("the JobManager refuses the stop", "FlinkBadRequest", nil)
		}
		if in.Job.JobID == previousJobID {
			return upgrades.EndJobResult{Savepoint: "hdfs://nn/sp/savepoint-retired"}, nil
		}
		return upgrades.EndJobResult{Savepoint: "hdfs://nn/sp/savepoint-new-version"}, nil
	})
	env.OnActivity(upg.RecordRecipe, mock.Anything, mock.Anything).Return(func(_ context.Context, in upgrades.RecordRecipeInput) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.recorded = append(f.recorded, in)
		f.calls = append(f.calls, "record")
		return nil
	})
	env.OnActivity(upg.ForgetRecipe, mock.Anything, mock.Anything).Return(func(_ context.Context, in upgrades.ForgetRecipeInput) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.forgotten = append(f.forgotten, in)
		return nil
	})
	// The operator's side of an operator job.
	env.OnActivity(a.ReadSavepointMarks, mock.Anything, mock.Anything).Return(core.OperatorSavepointMarks{}, nil)
	env.OnActivity(a.SuspendJob, mock.Anything, mock.Anything).Return(func(_ context.Context, in windows.SuspendJobInput) (core.StopWithSavepointResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls = append(f.calls, "suspend")
		if f.suspendFails && f.stops > 0 {
			return core.StopWithSavepointResult{}, temporal.NewNonRetryableApplicationError("job FAILED: no savepoint", core.ErrTypeOperatorLastStateFallback, nil)
		}
		f.stops++
		return core.StopWithSavepointResult{SavepointPath: "hdfs://nn/sp/savepoint-payments-" + strings.Repeat("x", f.stops)}, nil
	})
	env.OnActivity(upg.ReadSpecInverse, mock.Anything, mock.Anything).Return(func(_ context.Context, in upgrades.OperatorSpecChangeInput) (inventory.JobSpecChange, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls = append(f.calls, "read-inverse")
		return inventory.JobSpecChange{Image: "payments:1.0"}, nil
	})
	env.OnActivity(upg.ChangeOperatorSpec, mock.Anything, mock.Anything).Return(func(_ context.Context, in upgrades.OperatorSpecChangeInput) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls = append(f.calls, "change "+in.Change.Image)
		f.specChanges = append(f.specChanges, in.Change)
		return nil
	})
	env.OnActivity(a.ResumeJob, mock.Anything, mock.Anything).Return(func(_ context.Context, in core.ResumeJobInput) (core.RestartJobResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls = append(f.calls, "resume "+in.SavepointPath)
		return core.RestartJobResult{JobID: "new-version"}, nil
	})
	env.OnActivity(upg.DiscardJob, mock.Anything, mock.Anything).Return(func(_ context.Context, in upgrades.DiscardJobInput) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls = append(f.calls, "discard")
		return nil
	})
	env.OnActivity(upg.RedeployJob, mock.Anything, mock.Anything).Return(func(_ context.Context, in core.ResumeJobInput) (core.RestartJobResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls = append(f.calls, "redeploy "+in.SavepointPath)
		return core.RestartJobResult{JobID: "previous-version"}, nil
	})
	return f
}

// fakeRehearsal fakes the drill side of a rehearsal, as f.rehearse says.
func (f *upgradeFixture) fakeRehearsal() {
	var a *upgrades.Activities
	var drill *drills.Activities
	f.env.OnActivity(a.PrepareRehearsal, mock.Anything, mock.Anything).Return(func(_ context.Context, in upgrades.PrepareRehearsalInput) (upgrades.PrepareRehearsalResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.prepared = append(f.prepared, in)
		if f.rehearse == "unreachable" {
			return upgrades.PrepareRehearsalResult{}, temporal.NewNonRetryableApplicationError("reach drill cluster http://drill: connection refused", "FlinkUnavailable", nil)
		}
		if f.rehearse == "" {
			return upgrades.PrepareRehearsalResult{NotRehearsed: "no drill cluster is configured"}, nil
		}
		spec := inventory.JobSpec{Name: "orders", Restart: previousRecipe,
			Drill: &inventory.DrillRecipe{ProgramArgs: []string{"--version", "1", "--sink", "discard"}, SandboxArgs: []string{"--sink", "discard"}}}
		recipe, why := upgrades.RehearsalRecipe(spec, in.NewRecipe, "1.20", in.ProgramArgs)
		if why != "" {
			return upgrades.PrepareRehearsalResult{NotRehearsed: why}, nil
		}
		return upgrades.PrepareRehearsalResult{FlinkVersion: "1.20.3", Target: &core.DrillTarget{Key: in.Job.Key, Tenant: in.Job.Tenant,
			ClusterID: in.Job.ClusterID, JobName: in.Job.JobName, Kind: core.SnapshotSavepoint, Recipe: &recipe,
			DrillCluster: "http://drill", DrillDir: fmt.Sprintf("hdfs://nn/drills/%s/cluster-a/orders-%d", in.RunID, in.N)}}, nil
	})
	f.env.OnActivity(drill.StartDrillJob, mock.Anything, mock.Anything).Return(func(_ context.Context, in drills.StartDrillJobInput) (drills.StartDrillJobResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.drillStarts = append(f.drillStarts, in)
		f.calls = append(f.calls, "drill "+in.Target.Snapshot)
		if f.rehearse == "unmatched" {
			return drills.StartDrillJobResult{}, temporal.NewNonRetryableApplicationError("start drill of cluster-a/orders: "+
				strings.Repeat("at org.apache.flink.runtime.scheduler.DefaultScheduler.restoreState(DefaultScheduler.java:123) ", 8)+unmatchedText, "FlinkBadRequest", nil)
		}
		return drills.StartDrillJobResult{JobID: in.JobID}, nil
	})
	f.env.OnActivity(a.ExplainRehearsal, mock.Anything, mock.Anything).Return(func(_ context.Context, in upgrades.ExplainRehearsalInput) (upgrades.RehearsalCause, error) {
		if f.rehearse == "no-slots" {
			in.Failure += "\nCaused by: org.apache.flink.runtime.jobmanager.scheduler.NoResourceAvailableException: Could not acquire the minimum required resources."
		}
		return upgrades.ClassifyRestoreFailure(in.Failure), nil
	})
	f.env.OnActivity(drill.EndDrill, mock.Anything, mock.Anything).Return(func(_ context.Context, in drills.EndDrillInput) (drills.EndDrillResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.drillEnds = append(f.drillEnds, in)
		f.calls = append(f.calls, "end drill")
		return drills.EndDrillResult{Removed: in.DrillDir}, nil
	})
	f.env.OnActivity(a.RecordRehearsal, mock.Anything, mock.Anything).Return(func(_ context.Context, in upgrades.RecordRehearsalInput) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.rehearsalSaved = append(f.rehearsalSaved, in)
		return nil
	})
}

func hasArg(r inventory.RestartRecipe, arg string) bool {
	for _, a := range r.ProgramArgs {
		if a == arg {
			return true
		}
	}
	return false
}

func upgradeInput(args ...string) UpgradeInput {
	return UpgradeInput{UpgradeID: "orders-v2", Reason: "new version", Job: "cluster-a/orders", ManifestDir: "hdfs://nn/flinkmaint/upgrades",
		Recipe: UpgradeRecipe{Jar: "/jars/orders-v2.jar", ProgramArgs: args}}
}

func (f *upgradeFixture) status() UpgradeState {
	f.t.Helper()
	var st UpgradeState
	queryInto(f.t, f.env, QueryUpgradeStatus, &st)
	return st
}

func (f *upgradeFixture) update(name string, arg interface{}, wantErr bool) {
	f.t.Helper()
	sendUpdate(f.t, f.env, name, arg, wantErr)
}

// rolledBack returns the state of an upgrade that ended rolled back.
func (f *upgradeFixture) rolledBack() UpgradeState {
	f.t.Helper()
	var appErr *temporal.ApplicationError
	err := f.env.GetWorkflowError()
	if !errors.As(err, &appErr) || appErr.Type() != ErrTypeUpgradeRolledBack {
		f.t.Fatalf("upgrade ended with %v; want %s", err, ErrTypeUpgradeRolledBack)
	}
	var st UpgradeState
	if err := appErr.Details(&st); err != nil {
		f.t.Fatal(err)
	}
	return st
}

func TestUpgradeCommitsTheNewVersion(t *testing.T) {
	f := newUpgradeFixture(t)
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, upgradeInput("--version", "2"))
	if err := f.env.GetWorkflowError(); err != nil {
		t.Fatalf("upgrade failed: %v", err)
	}
	var st UpgradeState
	if err := f.env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	if st.Phase != UpgradePhaseCommitted || !st.RecipeRecorded || st.Savepoint != "hdfs://nn/sp/savepoint-orders" || st.Healthy == nil {
		t.Fatalf("state %+v; want committed from the upgrade savepoint", st)
	}
	if f.stops != 1 || !f.manifestBeforeStop {
		t.Errorf("stops %d, manifest before the stop %v; want one stop after the manifest named the previous recipe", f.stops, f.manifestBeforeStop)
	}
	if len(f.started) != 1 || f.started[0].SavepointPath != st.Savepoint || f.started[0].Job.Restart.Jar != "/jars/orders-v2.jar" ||
		strings.Join(f.started[0].Job.Restart.ProgramArgs, " ") != "--version 2" || f.started[0].Job.Restart.EntryClass != previousRecipe.EntryClass {
		t.Errorf("started %+v; want v2 (jar and args new, entry class kept) from the upgrade savepoint", f.started)
	}
	if len(f.recorded) != 1 || f.recorded[0].Base.Jar != previousRecipe.Jar || f.recorded[0].Recipe.Jar != "/jars/orders-v2.jar" {
		t.Errorf("recorded %+v; want v2 recorded over v1", f.recorded)
	}
	if len(f.ended) != 0 || len(f.forgotten) != 0 {
		t.Errorf("ended %v, forgotten %v; want no rollback", f.ended, f.forgotten)
	}
}

// A new version that fails after its restore rolls back by itself: the new
// version is ended, the old recipe restarts from the pre-upgrade savepoint.
func TestUpgradeRollsBackWhenTheGateFails(t *testing.T) {
	f := newUpgradeFixture(t)
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, upgradeInput("--version", "2", "--fail-on-restore"))
	st := f.rolledBack()
	if st.Phase != UpgradePhaseRolledBack || st.Rollback == nil || st.Rollback.Healthy == nil ||
		st.Rollback.NewVersionSavepoint != "hdfs://nn/sp/savepoint-new-version" || !strings.Contains(st.Rollback.Reason, "--fail-on-restore") {
		t.Fatalf("state %+v rollback %+v; want rolled back with the gate's error", st, st.Rollback)
	}
	if len(f.ended) != 1 || f.ended[0].Job.JobID != st.NewJobID {
		t.Errorf("ended %+v; want the new version %s ended before the old one starts", f.ended, st.NewJobID)
	}
	if len(f.started) != 2 || f.started[1].Job.Restart.Jar != previousRecipe.Jar || f.started[1].SavepointPath != st.Savepoint ||
		f.started[1].NewJobID == f.started[0].NewJobID {
		t.Errorf("started %+v; want the previous recipe from the upgrade savepoint as a job of its own", f.started)
	}
	if len(f.recorded) != 0 {
		t.Errorf("recorded %+v; a rolled-back upgrade records nothing", f.recorded)
	}
}

// A restore that cannot map some state pauses, naming the operators;
// allowNonRestoredState is set only by that decision, and not recorded.
func TestUpgradePausesOnUnmatchedState(t *testing.T) {
	f := newUpgradeFixture(t)
	seen := false
	later(t, f.env, func() {
		st := f.status()
		if st.Pending == nil || st.Pending.Kind != DecisionUnmatchedState || !strings.Contains(st.Pending.Reason, "fcfb2cd74328d289a0b17a4030f9cfdc") ||
			len(st.Unmatched) != 1 {
			t.Errorf("pending %+v unmatched %v; want the unmatched operator named", st.Pending, st.Unmatched)
			return
		}
		seen = true
		f.update(UpdateDecide, DecideRequest{Action: ActionRetry, By: "op"}, true)
		f.update(UpdateDecide, DecideRequest{Action: ActionAllowNonRestoredState, By: "op", Reason: "old counter state is obsolete"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, upgradeInput("--version", "2", "--state-uid", "v2"))
	if err := f.env.GetWorkflowError(); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if !seen || len(f.started) != 2 || f.started[0].Job.Restart.AllowNonRestoredState || !f.started[1].Job.Restart.AllowNonRestoredState {
		t.Fatalf("seen %v, started %+v; want a pause, then a start allowed to drop the state", seen, f.started)
	}
	// The people on call were told of the decision with the commands that
	// answer it, that it was answered, and how the upgrade ended.
	var told []string
	reminders := 0
	for _, e := range f.events {
		switch {
		case e.Kind == notify.KindPhase:
		case e.Reminder > 0:
			reminders++
		default:
			told = append(told, fmt.Sprintf("%s %s resolved=%v %s", e.Kind, e.Decision, e.Resolved, strings.Join(e.Commands, "; ")))
		}
	}
	want := []string{"decision-pending unmatched-state resolved=false flinkmaint upgrade decide orders-v2 --action allow-non-restored-state --reason TEXT; " +
		"flinkmaint upgrade decide orders-v2 --action rollback --reason TEXT", "decision-pending unmatched-state resolved=true ", "finished  resolved=false "}
	// The workflow does not wait for a notification before the next, so
	// the test environment's activities may record them in either order.
	sort.Strings(told)
	sort.Strings(want)
	if strings.Join(told, " | ") != strings.Join(want, " | ") || reminders != 2 {
		t.Errorf("notifications (%d reminders in the hour it waited; want 2):\n%s\nwant:\n%s", reminders, strings.Join(told, "\n"), strings.Join(want, "\n"))
	}
	if e := f.events[len(f.events)-1]; len(e.Tenants) != 1 || e.Tenants[0] != "team-a" || e.Workflow != KindUpgrade || e.Run != "orders-v2" {
		t.Errorf("last event %+v; want upgrade orders-v2 about team-a", e)
	}
	if len(f.cancelled) != 1 || f.cancelled[0] != f.started[0].NewJobID {
		t.Errorf("cancelled %v; want the failed first start cancelled before the second", f.cancelled)
	}
	if len(f.recorded) != 1 || f.recorded[0].Recipe.AllowNonRestoredState {
		t.Errorf("recorded %+v; want the recipe without allowNonRestoredState", f.recorded)
	}
}

// During the hold after commit, a rollback is one command: the record is
// dropped and the previous version comes back.
func TestUpgradeRollbackAfterCommit(t *testing.T) {
	f := newUpgradeFixture(t)
	in := upgradeInput("--version", "2")
	in.HoldAfterCommit = Duration(24 * time.Hour)
	later(t, f.env, func() {
		if st := f.status(); st.Phase != UpgradePhaseHold {
			t.Errorf("phase %s; want hold", st.Phase)
		}
		f.update(UpdateRollback, RollbackRequest{By: "op"}, true)
		f.update(UpdateRollback, RollbackRequest{By: "op", Reason: "orders look wrong"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, in)
	st := f.rolledBack()
	if st.Rollback.By != "op" || len(f.recorded) != 1 || len(f.forgotten) != 1 || st.RecipeRecorded || len(f.ended) != 1 {
		t.Fatalf("rollback %+v, recorded %d, forgotten %d, ended %d; want the record dropped and the new version ended", st.Rollback, len(f.recorded), len(f.forgotten), len(f.ended))
	}
}

func TestUpgradeGateFailurePausesByPolicy(t *testing.T) {
	f := newUpgradeFixture(t)
	f.failGates = 1
	in := upgradeInput("--version", "2")
	in.OnGateFailure = OnGateFailurePause
	later(t, f.env, func() {
		st := f.status()
		if st.Pending == nil || st.Pending.Kind != DecisionUpgradeGateFailed {
			t.Errorf("pending %+v; want the failed gate", st.Pending)
			return
		}
		f.update(UpdateDecide, DecideRequest{Action: ActionRetry, By: "op", Reason: "TaskManager was restarting"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, in)
	if err := f.env.GetWorkflowError(); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if len(f.started) != 2 || len(f.ended) != 0 || len(f.cancelled) != 1 {
		t.Fatalf("started %d, ended %d, cancelled %v; want a retried start and no rollback", len(f.started), len(f.ended), f.cancelled)
	}
}

func TestUpgradeRefusesBadInputAndUnknownJobs(t *testing.T) {
	var in UpgradeInput
	in.ApplyDefaults()
	err := in.Validate()
	for _, want := range []string{"upgradeId", "reason", "job \"\"", "recipe is empty", "manifestDir"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("empty input: %v; want %q named", err, want)
		}
	}
	for job, want := range map[string]string{"cluster-a/twice": "2 jobs named", "cluster-a/gone": "not running", "cluster-z/orders": "not running"} {
		f := newUpgradeFixture(t)
		in := upgradeInput("--version", "2")
		in.Job = job
		f.env.ExecuteWorkflow(JobUpgradeWorkflow, in)
		if err := f.env.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), want) || f.stops != 0 {
			t.Errorf("upgrade of %s: %v, %d stops; want refused (%q) with nothing stopped", job, err, f.stops, want)
		}
	}
}

func operatorUpgradeInput() UpgradeInput {
	in := upgradeInput()
	in.Job, in.Recipe = "cluster-a/payments", UpgradeRecipe{}
	in.Spec = &inventory.JobSpecChange{Image: "payments:2.0"}
	return in
}

// An operator job's new version is a change to its resource: read its
// inverse before the stop, apply it while suspended, resume from the
// suspend savepoint; the resource stays the recipe of record.
func TestUpgradeOfAnOperatorJobCommits(t *testing.T) {
	f := newUpgradeFixture(t)
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, operatorUpgradeInput())
	if err := f.env.GetWorkflowError(); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	var st UpgradeState
	if err := f.env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	want := "read-inverse, suspend, change payments:2.0, resume hdfs://nn/sp/savepoint-payments-x, gate new-version"
	if got := strings.Join(f.calls, ", "); got != want {
		t.Fatalf("calls %s; want %s", got, want)
	}
	if st.Phase != UpgradePhaseCommitted || st.NewJobID != "new-version" || st.SpecInverse == nil || st.SpecInverse.Image != "payments:1.0" ||
		st.RecipeRecorded || len(f.recorded) != 0 {
		t.Fatalf("state %+v, recorded %v; want committed with the inverse kept and no recipe record", st, f.recorded)
	}
}

// A failing new version of an operator job takes no savepoint: it is
// stopped without one, its spec change undone, and the previous version
// redeployed from the pre-upgrade savepoint.
func TestUpgradeOfAnOperatorJobRollsBack(t *testing.T) {
	f := newUpgradeFixture(t)
	f.suspendFails = true
	f.failJobs = map[string]bool{"new-version": true}
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, operatorUpgradeInput())
	st := f.rolledBack()
	want := "read-inverse, suspend, change payments:2.0, resume hdfs://nn/sp/savepoint-payments-x, gate new-version, " +
		"suspend, discard, change payments:1.0, redeploy hdfs://nn/sp/savepoint-payments-x, gate previous-version"
	if got := strings.Join(f.calls, ", "); got != want {
		t.Fatalf("calls %s\nwant  %s", got, want)
	}
	if st.Rollback.JobID != "previous-version" || st.Rollback.NewVersionSavepoint != "" || len(st.Notes) == 0 {
		t.Fatalf("rollback %+v notes %v; want the previous version back, no new-version savepoint, noted", st.Rollback, st.Notes)
	}
}

// When the redeployed previous version of an operator job fails its gate
// too, the upgrade is not rolled back: it asks a person, and an abort ends
// it failed, saying neither version runs.
func TestUpgradeOfAnOperatorJobAsksWhenThePreviousVersionFailsItsGate(t *testing.T) {
	f := newUpgradeFixture(t)
	f.suspendFails = true
	f.failJobs = map[string]bool{"new-version": true, "previous-version": true}
	seen := false
	later(t, f.env, func() {
		st := f.status()
		if st.Pending == nil || st.Pending.Kind != DecisionRollbackFailed || st.Phase == UpgradePhaseRolledBack ||
			!strings.Contains(st.Rollback.Error, "NoSuchMethodError") {
			t.Errorf("pending %+v, phase %s, rollback %+v; want a rollback-failed decision naming the gate's cause", st.Pending, st.Phase, st.Rollback)
			return
		}
		seen = true
		f.update(UpdateDecide, DecideRequest{Action: ActionAbort, By: "op", Reason: "by hand"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, operatorUpgradeInput())
	var appErr *temporal.ApplicationError
	if err := f.env.GetWorkflowError(); !seen || !errors.As(err, &appErr) || appErr.Type() != ErrTypeUpgradeFailed {
		t.Fatalf("seen %v, ended with %v; want the decision, then %s", seen, err, ErrTypeUpgradeFailed)
	}
	if got := strings.Join(f.calls, ", "); !strings.HasSuffix(got, "redeploy hdfs://nn/sp/savepoint-payments-x, gate previous-version") {
		t.Errorf("calls %s; want the previous version redeployed from the pre-upgrade savepoint and gated", got)
	}
}

func TestUpgradeRefusesTheWrongKindOfNewVersion(t *testing.T) {
	for name, in := range map[string]UpgradeInput{
		"recipe for an operator job": func() UpgradeInput {
			in := operatorUpgradeInput()
			in.Spec, in.Recipe = nil, UpgradeRecipe{Jar: "/x.jar"}
			return in
		}(),
		"spec for a REST job": func() UpgradeInput {
			in := upgradeInput()
			in.Recipe = UpgradeRecipe{}
			in.Spec = &inventory.JobSpecChange{Image: "x"}
			return in
		}(),
	} {
		f := newUpgradeFixture(t)
		f.env.ExecuteWorkflow(JobUpgradeWorkflow, in)
		if err := f.env.GetWorkflowError(); err == nil || f.stops != 0 {
			t.Errorf("%s: %v, %d stops; want refused before anything stops", name, err, f.stops)
		}
	}
	in := upgradeInput("--x")
	in.Spec = &inventory.JobSpecChange{Image: "x"}
	if err := in.Validate(); err == nil || !strings.Contains(err.Error(), "recipe and spec are both given") {
		t.Errorf("both: %v", err)
	}
}

// In mode parallel the job keeps running through its savepoint; the new
// version starts beside it, and the previous version is ended only once
// the new one passed its gate, before its recipe is recorded.
func TestUpgradeInParallelRetiresThePreviousVersionAfterTheGate(t *testing.T) {
	f := newUpgradeFixture(t)
	in := upgradeInput("--version", "2")
	in.Mode = UpgradeModeParallel
	in.Recipe.FlinkConfiguration = map[string]string{"pipeline.object-reuse": "true"}
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, in)
	if err := f.env.GetWorkflowError(); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	var st UpgradeState
	if err := f.env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	if f.stops != 0 || !f.manifestBeforeStop {
		t.Errorf("stops %d, manifest before the savepoint %v; want the job kept running through a savepoint taken after the manifest", f.stops, f.manifestBeforeStop)
	}
	want := "savepoint " + previousJobID + " | gate " + st.NewJobID + " | end " + previousJobID + " | record"
	if got := strings.Join(f.calls, " | "); got != want {
		t.Errorf("calls %s; want %s", got, want)
	}
	if !st.Retired || st.RetiredSavepoint != "hdfs://nn/sp/savepoint-retired" || st.Phase != UpgradePhaseCommitted {
		t.Errorf("state %+v; want committed with the previous version retired", st)
	}
	if len(f.recorded) != 1 || f.recorded[0].Recipe.FlinkConfiguration["pipeline.object-reuse"] != "true" {
		t.Errorf("recorded %+v; want the new configuration in the recipe of record", f.recorded)
	}
}

// A parallel upgrade whose new version fails its gate ends the new version
// only: the previous one never stopped, so nothing is restored.
func TestUpgradeInParallelRollsBackByEndingTheNewVersion(t *testing.T) {
	f := newUpgradeFixture(t)
	in := upgradeInput("--version", "2", "--fail-on-restore")
	in.Mode = UpgradeModeParallel
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, in)
	st := f.rolledBack()
	want := "savepoint " + previousJobID + " | gate " + st.NewJobID + " | end " + st.NewJobID
	if got := strings.Join(f.calls, " | "); got != want {
		t.Errorf("calls %s; want %s", got, want)
	}
	if len(f.started) != 1 || st.Retired || len(f.recorded) != 0 {
		t.Errorf("started %d, retired %v, recorded %v; want the previous version left running untouched", len(f.started), st.Retired, f.recorded)
	}
}

// A rollback after a parallel upgrade committed restores the previous
// version from the savepoint it was retired with, gated without the checks
// the new version had to pass.
func TestUpgradeInParallelRollsBackFromTheRetiredSavepoint(t *testing.T) {
	f := newUpgradeFixture(t)
	in := upgradeInput("--version", "2")
	in.Mode = UpgradeModeParallel
	in.HoldAfterCommit = Duration(time.Hour)
	one := 1.0
	in.Health.Checks = []windows.MetricCheck{{Metric: "numRecordsOut", Vertex: "Sink", Min: &one}}
	var gates []windows.AwaitHealthyInput
	var a *windows.Activities
	f.env.OnActivity(a.AwaitHealthy, mock.Anything, mock.Anything).Return(func(_ context.Context, in windows.AwaitHealthyInput) (windows.AwaitHealthyResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		gates = append(gates, in)
		return windows.AwaitHealthyResult{RestoredFrom: in.SavepointPath, CheckpointID: 9}, nil
	})
	later(t, f.env, func() {
		if st := f.status(); st.Phase != UpgradePhaseHold {
			t.Errorf("phase %s; want hold", st.Phase)
		}
		f.update(UpdateRollback, RollbackRequest{By: "op", Reason: "latency"}, false)
	}, 10*time.Minute)
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, in)
	st := f.rolledBack()
	if len(f.started) != 2 || f.started[1].SavepointPath != "hdfs://nn/sp/savepoint-retired" || f.started[1].Job.Restart.Jar != previousRecipe.Jar {
		t.Errorf("started %+v; want the previous recipe restored from its retirement savepoint", f.started)
	}
	if len(f.gates) != 2 || len(f.gates[0].Checks) != 1 || len(f.gates[1].Checks) != 0 {
		t.Errorf("gates %+v; want the checks on the new version only", f.gates)
	}
	if len(f.forgotten) != 1 || st.RecipeRecorded {
		t.Errorf("forgotten %v; want the recipe of record dropped", f.forgotten)
	}
}

func TestUpgradeRecipeMergesConfiguration(t *testing.T) {
	prev := previousRecipe
	prev.FlinkConfiguration = map[string]string{"a": "1", "b": "2"}
	next := UpgradeRecipe{JarID: "x_orders.jar", FlinkConfiguration: map[string]string{"b": "3", "c": "4"}, Unset: []string{"a"}}.apply(prev)
	if next.Jar != "" || next.JarID != "x_orders.jar" || len(next.FlinkConfiguration) != 2 || next.FlinkConfiguration["b"] != "3" || next.FlinkConfiguration["c"] != "4" {
		t.Errorf("recipe %+v; want the jar replaced by the jar id and the configuration merged", next)
	}
	if prev.FlinkConfiguration["b"] != "2" {
		t.Errorf("the previous recipe changed: %v", prev.FlinkConfiguration)
	}
}

func TestUpgradeInputRefusesWhatWouldMoveOrDropState(t *testing.T) {
	one := 1.0
	for name, tc := range map[string]struct {
		mut  func(*UpgradeInput)
		want string
	}{
		"checkpoint dir": {func(in *UpgradeInput) {
			in.Recipe.FlinkConfiguration = map[string]string{"state.checkpoints.dir": "hdfs://nn/elsewhere"}
		}, "recipe.flinkConfiguration.state.checkpoints.dir"},
		"ignore unclaimed state": {func(in *UpgradeInput) {
			in.Recipe.FlinkConfiguration = map[string]string{"execution.savepoint.ignore-unclaimed-state": "true"}
		}, "a person's decision"},
		"unset a reserved key": {func(in *UpgradeInput) { in.Recipe.Unset = []string{"execution.checkpointing.dir"} }, "recipe.unset"},
		"spec checkpoint dir": {func(in *UpgradeInput) {
			in.Recipe = UpgradeRecipe{}
			in.Spec = &inventory.JobSpecChange{FlinkConfiguration: map[string]string{"state.savepoints.dir": "x"}}
		}, "spec.flinkConfiguration.state.savepoints.dir"},
		"jar and jar id": {func(in *UpgradeInput) { in.Recipe.JarID = "x_orders.jar" }, "recipe.jarId"},
		"mode":           {func(in *UpgradeInput) { in.Mode = "blue-green" }, `mode="blue-green"`},
		"parallel operator": {func(in *UpgradeInput) {
			in.Mode = UpgradeModeParallel
			in.Recipe = UpgradeRecipe{}
			in.Spec = &inventory.JobSpecChange{Image: "x"}
		}, "one job per resource"},
		"check without bounds": {func(in *UpgradeInput) { in.Health.Checks = []windows.MetricCheck{{Metric: "numRestarts"}} }, "health.checks[0] (numRestarts): give min, max or both"},
		"check agg on job": {func(in *UpgradeInput) {
			in.Health.Checks = []windows.MetricCheck{{Metric: "uptime", Agg: "sum", Min: &one}}
		}, "health.checks[0].agg"},
		"check metric list": {func(in *UpgradeInput) { in.Health.Checks = []windows.MetricCheck{{Metric: "a,b", Max: &one}} }, "health.checks[0].metric"},
	} {
		in := upgradeInput("--version", "2")
		tc.mut(&in)
		in.ApplyDefaults()
		err := in.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error naming %q", name, err, tc.want)
		}
	}
}

// Inside a freeze of its tenant an upgrade stops nothing unless a person
// overrides the freeze, and the override is recorded.
func TestUpgradeRespectsFreezes(t *testing.T) {
	f := newUpgradeFixture(t)
	f.frozen = true
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, upgradeInput("--version", "2"))
	err := f.env.GetWorkflowError()
	if !isFrozen(err) || !strings.Contains(err.Error(), `freeze "trading-hours" until 2026-12-01T16:30:00Z for team-a`) || f.stops != 0 {
		t.Fatalf("frozen upgrade: %v, stops %d; want refused before the stop, naming the freeze", err, f.stops)
	}
	f = newUpgradeFixture(t)
	f.frozen = true
	in := upgradeInput("--version", "2")
	in.OverrideFreeze = &FreezeOverride{By: "ann", Reason: "hotfix for INC-7"}
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, in)
	var st UpgradeState
	if err := f.env.GetWorkflowResult(&st); err != nil || st.Phase != UpgradePhaseCommitted || !strings.Contains(strings.Join(st.Notes, "\n"), "freeze overridden by ann: hotfix for INC-7") {
		t.Fatalf("overridden upgrade: %v, %+v; want committed with the override noted", err, st)
	}
}

// TestUpgradeStopsNothingWhenTheNewVersionDoesNotFit: a quota check
// saying the job's tenant cannot take the restart pauses the upgrade
// before the stop; aborted there, the job was never touched.
func TestUpgradeStopsNothingWhenTheNewVersionDoesNotFit(t *testing.T) {
	f := newUpgradeFixture(t)
	f.quotaFull = true
	seen := false
	later(t, f.env, func() {
		st := f.status()
		if st.Pending == nil || st.Pending.Kind != DecisionQuota || !strings.Contains(st.Pending.Reason, "tenant team-a") || f.stops != 0 {
			t.Errorf("pending %+v after %d stops; want a quota decision naming team-a before any stop", st.Pending, f.stops)
			return
		}
		seen = true
		// Nothing was stopped: there is nothing to roll back.
		f.update(UpdateRollback, RollbackRequest{By: "op", Reason: "changed my mind"}, true)
		f.update(UpdateDecide, DecideRequest{Action: ActionAbort, By: "op", Reason: "no room"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, upgradeInput("--version", "2"))
	if !seen || f.stops != 0 || len(f.started) != 0 {
		t.Fatalf("seen %v, %d stops, started %+v; want the pause and no stop", seen, f.stops, f.started)
	}
}

// TestUpgradeInParallelRollsBackWhenThePreviousVersionWillNotEnd: the
// new version is healthy but the previous one cannot be ended; answered
// with a rollback, the upgrade ends the new version and records nothing.
func TestUpgradeInParallelRollsBackWhenThePreviousVersionWillNotEnd(t *testing.T) {
	f := newUpgradeFixture(t)
	in := upgradeInput("--version", "2")
	in.Mode = UpgradeModeParallel
	f.retireFails = true
	asked := false
	later(t, f.env, func() {
		st := f.status()
		if st.Pending == nil || st.Pending.Kind != DecisionRetireFailed {
			t.Errorf("pending %+v; want %s", st.Pending, DecisionRetireFailed)
			return
		}
		asked = true
		f.update(UpdateDecide, DecideRequest{Action: ActionRollback, By: "op", Reason: "both run; keep the old one"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, in)
	st := f.rolledBack()
	if !asked || len(f.recorded) != 0 || st.Retired {
		t.Fatalf("asked %v, recorded %v, retired %v; want the rollback taken and nothing recorded", asked, f.recorded, st.Retired)
	}
}
