package workflows

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/drills"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// drillTargets are n checkpoints of jobs with a drill recipe, on two
// tenants.
func drillTargets(n int) []core.DrillTarget {
	var out []core.DrillTarget
	for i := range n {
		out = append(out, core.DrillTarget{Key: fmt.Sprintf("c/job-%d", i), Tenant: []string{"team-a", "team-b"}[i%2], ClusterID: "c",
			JobName: fmt.Sprintf("job-%d", i), Snapshot: fmt.Sprintf("hdfs://nn/ck/j%d/chk-5", i), Kind: core.SnapshotCheckpoint,
			Recipe:       &inventory.DrillRecipe{Jar: "/jars/j.jar", ProgramArgs: []string{"--sink", "discard"}, SandboxArgs: []string{"--sink", "discard"}},
			DrillCluster: "http://drill:8081", DrillDir: fmt.Sprintf("hdfs://nn/drills/run/c/job-%d-%d", i, i)})
	}
	return out
}

// newDrillTestEnv registers the drill workflows on a test environment.
func newDrillTestEnv() *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(JobDrillWorkflow, workflow.RegisterOptions{Name: JobDrillWorkflowType})
	openGates(env)
	return env
}

// TestRestoreDrillCleansUpWhateverHappens: every snapshot is drilled in a
// child, never more than Concurrency at once; a storage proof that finds a
// missing file starts no restore; a restore that fails, and one that
// passes, both end with their drill job cancelled and drill dir removed;
// a checkpoint its job removed during the drill is inconclusive, not a
// failure; the run fails with the report and records every outcome.
func TestRestoreDrillCleansUpWhateverHappens(t *testing.T) {
	env := newDrillTestEnv()
	var a *windows.Activities
	var drill *drills.Activities
	targets := drillTargets(6)
	targets[5].Recipe = nil // tier 1 only
	env.OnActivity(drill.SelectDrillTargets, mockAny, mockAny).Return(func(_ context.Context, in drills.SelectDrillTargetsInput) (drills.SelectDrillTargetsResult, error) {
		if !in.Restore || in.RunID == "" || in.Selection.Mode != drills.DrillLatestCheckpoint {
			t.Errorf("select %+v; want tier 2 over the latest checkpoints, named by the run", in)
		}
		return drills.SelectDrillTargetsResult{Targets: targets, Tenants: []string{"team-a", "team-b"}}, nil
	})
	env.OnActivity(drill.ProveSnapshotStorage, mockAny, mockAny).Return(func(_ context.Context, in drills.ProveSnapshotInput) (drills.StorageProof, error) {
		if strings.Contains(in.Snapshot, "/j1/") {
			return drills.StorageProof{Files: 3, Problems: []drills.StorageProblem{{Path: "hdfs://nn/ck/j1/shared/x", Problem: "missing", Operator: "op-1", Subtask: 0}}}, nil
		}
		return drills.StorageProof{Files: 4, Bytes: 40}, nil
	})
	var mu sync.Mutex
	inflight, most := 0, 0
	started := map[string]bool{}
	env.OnActivity(drill.StartDrillJob, mockAny, mockAny).Return(func(_ context.Context, in drills.StartDrillJobInput) (drills.StartDrillJobResult, error) {
		mu.Lock()
		defer mu.Unlock()
		inflight++
		most = max(most, inflight)
		started[in.Target.Key] = true
		if len(in.JobID) != 32 {
			t.Errorf("drill job id %q; want Flink's 32 hex digits", in.JobID)
		}
		return drills.StartDrillJobResult{JobID: in.JobID}, nil
	})
	env.OnActivity(a.AwaitHealthy, mockAny, mockAny).Return(func(_ context.Context, in windows.AwaitHealthyInput) (windows.AwaitHealthyResult, error) {
		time.Sleep(10 * time.Millisecond)
		if in.RESTURL != "http://drill:8081" || !strings.HasPrefix(in.CheckpointDir, "hdfs://nn/drills/") {
			t.Errorf("await %+v; want the drill cluster and the drill dir", in)
		}
		switch {
		case strings.Contains(in.SavepointPath, "/j2/"):
			return windows.AwaitHealthyResult{}, temporal.NewNonRetryableApplicationError("job is FAILED after restart: IllegalStateException: boom", core.ErrTypeJobUnhealthy, nil)
		case strings.Contains(in.SavepointPath, "/j3/"):
			return windows.AwaitHealthyResult{}, temporal.NewNonRetryableApplicationError("job is FAILED after restart: FileNotFoundException", core.ErrTypeJobUnhealthy, nil)
		}
		return windows.AwaitHealthyResult{RestoredFrom: in.SavepointPath, CheckpointID: 1, CheckpointPath: in.CheckpointDir + "/x/chk-1"}, nil
	})
	ended := map[string]drills.EndDrillInput{}
	env.OnActivity(drill.EndDrill, mockAny, mockAny).Return(func(_ context.Context, in drills.EndDrillInput) (drills.EndDrillResult, error) {
		mu.Lock()
		defer mu.Unlock()
		inflight--
		ended[in.DrillDir] = in
		// j3's job subsumed the checkpoint while the copy restored.
		return drills.EndDrillResult{Cancelled: in.JobIDs[:1], Removed: in.DrillDir, SnapshotGone: strings.Contains(in.Snapshot, "/j3/")}, nil
	})
	var recorded drills.RecordDrillRunInput
	env.OnActivity(drill.RecordDrillRun, mockAny, mockAny).Return(func(_ context.Context, in drills.RecordDrillRunInput) error {
		recorded = in
		return nil
	})
	env.ExecuteWorkflow(RestoreDrillWorkflow, RestoreDrillInput{Concurrency: 2})

	var appErr *temporal.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Type() != ErrTypeDrillsFailed || !strings.Contains(err.Error(), "c/job-1") || !strings.Contains(err.Error(), "c/job-2") {
		t.Fatalf("run ended with %v; want %s naming c/job-1 and c/job-2", err, ErrTypeDrillsFailed)
	}
	var rep RestoreDrillReport
	if err := appErr.Details(&rep); err != nil {
		t.Fatal(err)
	}
	if rep.Passed != 3 || rep.Failed != 2 || rep.Inconclusive != 1 || len(rep.Jobs) != 6 {
		t.Fatalf("report %+v; want 3 passed, 2 failed, 1 inconclusive", rep)
	}
	want := map[string]string{"c/job-0": catalog.DrillPassed, "c/job-1": catalog.DrillFailed, "c/job-2": catalog.DrillFailed,
		"c/job-3": catalog.DrillInconclusive, "c/job-4": catalog.DrillPassed, "c/job-5": catalog.DrillPassed}
	for _, j := range rep.Jobs {
		if j.Outcome != want[j.Key] {
			t.Errorf("%s: outcome %s (%s); want %s", j.Key, j.Outcome, j.Error, want[j.Key])
		}
	}
	if j := rep.Jobs[1]; j.Tier != 1 || started["c/job-1"] || !strings.Contains(j.Error, "hdfs://nn/ck/j1/shared/x is missing") || !strings.Contains(j.Error, "op-1") {
		t.Errorf("job-1 %+v; want tier 1 failing on the missing file, naming its operator, and no restore", j)
	}
	if j := rep.Jobs[2]; j.Tier != 2 || !strings.Contains(j.Error, "boom") || j.Cleanup == nil || j.Cleanup.Removed == "" {
		t.Errorf("job-2 %+v; want tier 2 failing with the job's exception, cleaned up", j)
	}
	if j := rep.Jobs[5]; j.Tier != 1 || j.Restore != nil || !strings.Contains(j.Note, "no drill recipe") {
		t.Errorf("job-5 %+v; want tier 1 alone, saying it has no drill recipe", j)
	}
	for _, k := range []int{0, 2, 3, 4} {
		in, ok := ended[targets[k].DrillDir]
		if !ok || len(in.JobIDs) != 2 || in.DrillCluster != "http://drill:8081" {
			t.Errorf("%s: end %+v (%v); want its drill jobs cancelled and dir removed", targets[k].Key, in, ok)
		}
	}
	if len(ended) != 4 || most > 2 {
		t.Errorf("%d drills ended, at most %d at once; want the 4 restores ended, at most 2 at once", len(ended), most)
	}
	if recorded.RunID != rep.RunID || len(recorded.Results) != 6 || recorded.Results[3].Outcome != catalog.DrillInconclusive || recorded.Results[2].Tier != 2 {
		t.Errorf("recorded %+v; want every outcome with its tier", recorded)
	}
}

// TestJobDrillCleansUpWhenCancelled: a drill run cancelled while its copy
// restores still cancels the copy and removes its drill dir.
func TestJobDrillCleansUpWhenCancelled(t *testing.T) {
	env := newDrillTestEnv()
	var a *windows.Activities
	var drill *drills.Activities
	target := drillTargets(1)[0]
	env.OnActivity(drill.ProveSnapshotStorage, mockAny, mockAny).Return(drills.StorageProof{Files: 2}, nil)
	env.OnActivity(drill.StartDrillJob, mockAny, mockAny).Return(func(_ context.Context, in drills.StartDrillJobInput) (drills.StartDrillJobResult, error) {
		return drills.StartDrillJobResult{JobID: in.JobID}, nil
	})
	// Not healthy yet: retried with backoff, during which the run is
	// cancelled.
	env.OnActivity(a.AwaitHealthy, mockAny, mockAny).Return(windows.AwaitHealthyResult{}, errors.New("flink: 503, try again"))
	var end *drills.EndDrillInput
	env.OnActivity(drill.EndDrill, mockAny, mockAny).Return(func(_ context.Context, in drills.EndDrillInput) (drills.EndDrillResult, error) {
		end = &in
		return drills.EndDrillResult{Removed: in.DrillDir}, nil
	})
	later(t, env, env.CancelWorkflow, time.Second)
	env.ExecuteWorkflow(JobDrillWorkflow, JobDrillInput{RunID: "drill-x", Target: target, Tier: 2,
		Health: RestartPolicy{RunningTimeout: Duration(5 * time.Minute), CheckpointTimeout: Duration(5 * time.Minute), Soak: Duration(time.Minute)}})
	if end == nil || end.DrillDir != target.DrillDir || len(end.JobIDs) != 2 {
		t.Fatalf("end %+v after cancellation; want the drill job cancelled and its dir removed", end)
	}
}

// TestRestoreDrillInputNamesWhatIsWrong: every bad field is named.
func TestRestoreDrillInputNamesWhatIsWrong(t *testing.T) {
	in := RestoreDrillInput{Tier: 3, Concurrency: 100, Soak: Duration(-time.Second),
		Selection: drills.DrillSelection{Mode: drills.DrillSnapshot, Job: "no-slash", SamplePerTenant: -1},
		Scope:     core.Scope{IncludeJobs: []string{"["}}}
	in.ApplyDefaults()
	err := in.Validate()
	for _, want := range []string{"tier=3", "concurrency=100", "soak=-1s", `job (cluster/name, got "no-slash")`, "samplePerTenant=-1", `"["`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate: %v; want it to name %s", err, want)
		}
	}
	ok := RestoreDrillInput{Selection: drills.DrillSelection{Mode: drills.DrillRunSavepoints, RunID: "window-w1"}}
	ok.ApplyDefaults()
	if err := ok.Validate(); err != nil || ok.Tier != 2 || ok.Concurrency != 2 {
		t.Fatalf("defaults %+v: %v", ok, err)
	}
}
