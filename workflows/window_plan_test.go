package workflows

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// planFleet fakes the reads a plan and a window's preflight make, and
// records every activity that would change something.
type planFleet struct {
	mu         sync.Mutex
	found      core.DiscoverJobsResult
	quota      map[string]capacity.TenantQuota // by tenant
	drillErr   error
	quotaAsked []capacity.CheckQuotaInput
	changes    []string // activities that act on jobs or storage
}

func newPlanFleet() *planFleet {
	recipe := inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun, Jar: "/job.jar"}
	f := &planFleet{quota: map[string]capacity.TenantQuota{}}
	f.found = core.DiscoverJobsResult{
		Tenants:  []inventory.Tenant{{Name: "team-a", Root: "hdfs://nn/a"}, {Name: "team-b", Root: "hdfs://nn/b"}},
		Clusters: []inventory.Cluster{{Tenant: "team-a", ClusterID: "cluster-a"}, {Tenant: "team-b", ClusterID: "cluster-b"}},
		Skipped:  []core.SkippedJob{{Key: "cluster-b/adhoc", JobID: "e", Reason: "the inventory has no restart recipe for this job name"}},
	}
	for i, key := range []string{"cluster-a/billing", "cluster-a/orders", "cluster-b/clicks", "cluster-b/sessions", "cluster-b/views"} {
		cluster, name, _ := strings.Cut(key, "/")
		tenant := "team-" + cluster[len(cluster)-1:]
		f.found.Jobs = append(f.found.Jobs, core.JobTarget{Key: key, Tenant: tenant, ClusterID: cluster, JobName: name,
			JobID: strings.Repeat(fmt.Sprint(i), 32), CheckpointDir: "hdfs://nn/" + cluster + "/checkpoints", SavepointDir: "hdfs://nn/" + cluster + "/savepoints",
			Restart: recipe, Drillable: name == "orders"})
	}
	f.quota["team-a"] = capacity.TenantQuota{Tenant: "team-a", Root: "hdfs://nn/a", NamespaceUsed: 1000, NamespaceQuota: 15000, Level: "ok", Headroom: 14000}
	f.quota["team-b"] = capacity.TenantQuota{Tenant: "team-b", Root: "hdfs://nn/b", NamespaceUsed: 14000, NamespaceQuota: 15000, Level: "critical",
		Reason: "93% of the namespace quota", Headroom: 1000}
	return f
}

// register installs the fakes on env.
func (f *planFleet) register(env *testsuite.TestWorkflowEnvironment) {
	var a *windows.Activities
	var drill *drills.Activities
	var capa *capacity.Activities
	env.OnActivity(a.DiscoverJobs, mock.Anything, mock.Anything).Return(func(context.Context, core.DiscoverJobsInput) (core.DiscoverJobsResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.found, nil
	})
	env.OnActivity(capa.CheckQuota, mock.Anything, mock.Anything).Return(func(_ context.Context, in capacity.CheckQuotaInput) (capacity.CheckQuotaResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.quotaAsked = append(f.quotaAsked, in)
		per := map[string]int64{}
		for _, r := range in.Restart {
			per[r.Tenant] += 20
		}
		var res capacity.CheckQuotaResult
		for _, t := range in.Tenants {
			q := f.quota[t.Name]
			q.RestartAllowed = true
			if n := per[t.Name]; n > 0 {
				q.ProjectedFiles = n
				q.RestartAllowed = t.Name != "team-b"
				q.GateReason = fmt.Sprintf("restart needs %d of %d free", n, q.Headroom)
				if !q.RestartAllowed {
					q.GateReason = "would leave the namespace above the critical watermark"
				}
			}
			res.Tenants = append(res.Tenants, q)
		}
		return res, nil
	})
	env.OnActivity(drill.CheckDrillCluster, mock.Anything).Return(func(context.Context) error { return f.drillErr })
	changes := func(name string) func() {
		return func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.changes = append(f.changes, name)
		}
	}
	env.OnActivity(a.StopWithSavepoint, mock.Anything, mock.Anything).Return(core.StopWithSavepointResult{}, nil).Run(func(mock.Arguments) { changes("StopWithSavepoint")() })
	env.OnActivity(a.WriteDocument, mock.Anything, mock.Anything).Return(core.WriteDocumentResult{}, nil).Run(func(mock.Arguments) { changes("WriteDocument")() })
	env.OnActivity(a.RestartJob, mock.Anything, mock.Anything).Return(core.RestartJobResult{}, nil).Run(func(mock.Arguments) { changes("RestartJob")() })
}

func planInput() WindowInput {
	in := windowInput()
	in.Policy.Restart = RestartPolicy{CanarySize: 1, WaveSize: 3, Concurrency: 2}
	in.Policy.Savepoint = SavepointPolicy{Concurrency: 2, Timeout: Duration(10 * time.Minute)}
	return in
}

func runPlan(t *testing.T, f *planFleet, in WindowInput) (*WindowPlan, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f.register(env)
	env.ExecuteWorkflow(WindowPlanWorkflow, WindowPlanInput{Window: in})
	if !env.IsWorkflowCompleted() {
		t.Fatal("plan did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		return nil, err
	}
	var plan WindowPlan
	if err := env.GetWorkflowResult(&plan); err != nil {
		t.Fatal(err)
	}
	if len(f.changes) > 0 {
		t.Fatalf("a plan ran %v; it must change nothing", f.changes)
	}
	return &plan, nil
}

func invalidInput(t *testing.T, err error) string {
	t.Helper()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != ErrTypeInvalidInput || !appErr.NonRetryable() {
		t.Fatalf("error %v; want a non-retryable %s", err, ErrTypeInvalidInput)
	}
	return err.Error()
}

// TestWindowPlanLaysOutJobsWavesQuotaAndDuration: the plan lists the jobs
// per tenant with their waves (the window's own assignment), the quota
// projection with the preflight and gate verdicts, and bounds that follow
// from the policy; it stops and writes nothing.
func TestWindowPlanLaysOutJobsWavesQuotaAndDuration(t *testing.T) {
	f := newPlanFleet()
	plan, err := runPlan(t, f, planInput())
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Jobs) != 5 || len(plan.Skipped) != 1 || plan.Skipped[0].Key != "cluster-b/adhoc" {
		t.Fatalf("jobs %+v skipped %+v", plan.Jobs, plan.Skipped)
	}
	var waves []string
	for _, w := range plan.Waves {
		waves = append(waves, fmt.Sprintf("%d%v:%s/c%d", w.Wave, w.Canary, strings.Join(w.Jobs, ","), w.Concurrency))
	}
	want := "0true:cluster-a/billing/c2 1false:cluster-a/orders,cluster-b/clicks,cluster-b/sessions/c2 2false:cluster-b/views/c2"
	if strings.Join(waves, " ") != want {
		t.Fatalf("waves %s; want %s", strings.Join(waves, " "), want)
	}
	for _, j := range plan.Jobs {
		if j.Key == "cluster-b/views" && (j.Wave != 2 || j.RestartKind != string(inventory.RestartRESTJarRun) || j.SavepointDir != "hdfs://nn/cluster-b/savepoints") {
			t.Fatalf("job %+v", j)
		}
	}
	if len(plan.Tenants) != 2 || plan.Tenants[1].Name != "team-b" || plan.Tenants[1].Jobs != 3 || plan.Tenants[1].Skipped != 1 ||
		strings.Join(plan.Tenants[1].Clusters, ",") != "cluster-b" {
		t.Fatalf("tenants %+v", plan.Tenants)
	}
	// The projection is asked for exactly the jobs the window would
	// restart, with their old checkpoint dirs, under the window's policy.
	if len(f.quotaAsked) != 1 || len(f.quotaAsked[0].Restart) != 5 || f.quotaAsked[0].Restart[0].CheckpointDir != "hdfs://nn/cluster-a/checkpoints/"+strings.Repeat("0", 32) ||
		f.quotaAsked[0].SafetyMargin != 0.2 || f.quotaAsked[0].CriticalPercent != 90 {
		t.Fatalf("quota asked %+v", f.quotaAsked)
	}
	a, b := plan.Quota[0], plan.Quota[1]
	if a.Tenant != "team-a" || a.ProjectedUsed != 1040 || !a.RestartAllowed || a.PreflightPause {
		t.Fatalf("team-a quota %+v", a)
	}
	if b.ProjectedUsed != 14060 || b.RestartAllowed || !b.PreflightPause || b.GateReason == "" {
		t.Fatalf("team-b quota %+v", b)
	}

	d := plan.Duration
	phase := map[string]PlanPhase{}
	for _, p := range d.Phases {
		phase[p.Phase] = p
	}
	// 5 jobs, 2 savepoints at once: 3 rounds of 10m. Waves of 1, 3 and 1
	// job, 2 restarts at once: 1 + 2 + 1 rounds of 5m + 5m + 30s.
	if sp := phase[WindowPhaseSavepointAll]; sp.Rounds != 3 || sp.Bound.D() != 30*time.Minute || sp.Step != PlanStepSavepoint {
		t.Fatalf("savepoint-all %+v", sp)
	}
	if r := phase[WindowPhaseRestart]; r.Rounds != 4 || r.Bound.D() != 42*time.Minute || !strings.Contains(r.Basis, "canary: 1, wave 1: 3, wave 2: 1") {
		t.Fatalf("restart %+v", r)
	}
	if g := phase[WindowPhaseNetworkGate]; g.Bound != 0 || g.Until != "confirmed" || !strings.Contains(g.Wait, "confirm-network-change w1") {
		t.Fatalf("network gate %+v", g)
	}
	if d.Bound.D() != 30*time.Minute+30*time.Minute+42*time.Minute { // savepoints + probe timeout + restarts
		t.Fatalf("bound %s", d.Bound)
	}
	waits := strings.Join(d.Waits, "\n")
	for _, w := range []string{"preflight: a decision: tenants above the critical watermark or too full for the restart before any job stops (team-b)", "network-gate: the network change",
		"quota-gate: a decision: the restart does not fit the namespace quota of team-b", "cleanup: the cleanup approval: flinkmaint governance status window-w1/cleanup shows the plan and its sha256, then flinkmaint governance approve window-w1/cleanup --plan-sha256 SHA"} {
		if !strings.Contains(waits, w) {
			t.Errorf("waits lack %q:\n%s", w, waits)
		}
	}
	if d.Typical != 0 {
		t.Fatalf("typical %s set without a measurement", d.Typical)
	}
	d.SetTypical(PlanStepSavepoint, time.Minute, "median of 3")
	if d.Typical != 0 {
		t.Fatalf("typical %s with the restart not measured", d.Typical)
	}
	d.SetTypical(PlanStepRestart, 2*time.Minute, "median of 4")
	if d.Typical.D() != 3*time.Minute+4*2*time.Minute {
		t.Fatalf("typical %s; want 3 rounds × 1m + 4 rounds × 2m", d.Typical)
	}
}

// TestWindowPlanRefusesWhatTheWindowRefuses: a scope that does not
// resolve, one without a job to maintain, an invalid nested policy and a
// canary without a drill recipe fail the plan as invalid input, naming why.
func TestWindowPlanRefusesWhatTheWindowRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		change func(*planFleet, *WindowInput)
		want   []string
	}{
		"unknown tenant": {func(f *planFleet, _ *WindowInput) {
			f.found.Unresolved = []string{`tenant "team-x" is not in the inventory; its tenants are team-a, team-b`}
		}, []string{"the scope does not resolve, so no job is stopped", `tenant "team-x" is not in the inventory; its tenants are team-a, team-b`}},
		"glob matches nothing": {func(f *planFleet, _ *WindowInput) {
			f.found.Unresolved = []string{`scope.includeJobs pattern "ordrs-*" matches no job running on the clusters in scope; they run orders`}
		}, []string{`"ordrs-*"`, "they run orders"}},
		"no job to maintain": {func(f *planFleet, _ *WindowInput) { f.found.Jobs = nil }, []string{
			"selects no job a window can stop and restart", "cluster-b/adhoc: the inventory has no restart recipe"}},
		"no job runs": {func(f *planFleet, _ *WindowInput) { f.found.Jobs, f.found.Skipped = nil, nil }, []string{
			"no job on the clusters in scope (cluster-a, cluster-b) both runs and passes scope.includeJobs and scope.excludeJobs"}},
		"cleanup policy": {func(_ *planFleet, in *WindowInput) {
			in.Policy.Cleanup.Policy.Action = "shred"
		}, []string{`policy.cleanup.policy.action="shred": use trash (default: recoverable) or delete`}},
		"canary without drill recipe": {func(_ *planFleet, in *WindowInput) {
			in.Policy.Drill = DrillPolicy{Canary: true, CanaryJob: "cluster-b/views"}
		}, []string{`policy.drill.canaryJob="cluster-b/views" is not a running job of this window with a drill recipe`}},
	} {
		t.Run(name, func(t *testing.T) {
			f := newPlanFleet()
			in := planInput()
			tc.change(f, &in)
			_, err := runPlan(t, f, in)
			msg := invalidInput(t, err)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
		})
	}
}

// TestWindowPlanDrillCanary: the canary the window would drill is the
// first job with a drill recipe; a drill cluster that cannot run it is a
// note, as the window would ask for a decision rather than fail.
func TestWindowPlanDrillCanary(t *testing.T) {
	f := newPlanFleet()
	f.drillErr = temporal.NewNonRetryableApplicationError("drill.clusterRestUrl is empty", "DrillNotConfigured", nil)
	in := planInput()
	in.Policy.Drill.Canary = true
	plan, err := runPlan(t, f, in)
	if err != nil {
		t.Fatal(err)
	}
	if plan.DrillCanary != "cluster-a/orders" || !strings.Contains(strings.Join(plan.Notes, "\n"), "drill.clusterRestUrl is empty") {
		t.Fatalf("canary %q notes %q", plan.DrillCanary, plan.Notes)
	}
	for _, p := range plan.Duration.Phases {
		if p.Phase == WindowPhaseSavepointAll && p.Rounds != 2 { // the canary's savepoint is taken before: 4 left, 2 at once
			t.Fatalf("savepoint-all %+v", p)
		}
	}
}

// TestWindowRefusesAScopeThatDoesNotResolve: a window whose scope names a
// tenant the inventory lacks fails in preflight, before any job is stopped
// and without waiting at the network gate; one with no job to maintain too.
func TestWindowRefusesAScopeThatDoesNotResolve(t *testing.T) {
	for name, change := range map[string]func(*planFleet){
		"unknown tenant": func(f *planFleet) {
			f.found = core.DiscoverJobsResult{Unresolved: []string{`tenant "team-x" is not in the inventory; its tenants are team-a, team-b`}}
		},
		"no job": func(f *planFleet) { f.found.Jobs = nil },
	} {
		t.Run(name, func(t *testing.T) {
			f := newPlanFleet()
			change(f)
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			f.register(env)
			env.ExecuteWorkflow(MaintenanceWindowWorkflow, windowInput())
			if !env.IsWorkflowCompleted() {
				t.Fatal("window did not end")
			}
			invalidInput(t, env.GetWorkflowError())
			for _, c := range f.changes {
				if c != "WriteDocument" { // the failed window's manifest, naming no job
					t.Fatalf("a refused window ran %s", c)
				}
			}
		})
	}
}

// TestWindowStartedBeforeTheScopeCheckKeepsItsRules: a window whose
// history predates changeStrictWindow goes on with a scope that selects
// nothing, as it did (it waits at the network gate), and is not refused
// for a cleanup policy it was started with.
func TestWindowStartedBeforeTheScopeCheckKeepsItsRules(t *testing.T) {
	f := newPlanFleet()
	f.found = core.DiscoverJobsResult{Unresolved: []string{`tenant "team-x" is not in the inventory`}}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	f.register(env)
	openGates(env)
	var a *windows.Activities
	env.OnActivity(a.ProbeEndpoints, mock.Anything, mock.Anything).Return(windows.ProbeEndpointsResult{}, nil)
	env.OnGetVersion(changeStrictWindow, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	in := windowInput()
	in.Policy.Cleanup.Policy.Action = "shred"
	in.Policy.Cleanup.Mode = CleanupModeSkip
	later(t, env, func() {
		var st WindowState
		queryInto(t, env, QueryStatus, &st)
		if st.Phase != WindowPhaseNetworkGate || len(st.Jobs) != 0 {
			t.Errorf("phase %s with %d jobs; want the old zero-job window waiting at the network gate", st.Phase, len(st.Jobs))
		}
		sendUpdate(t, env, UpdateConfirmNetworkChange, ConfirmNetworkChangeRequest{By: "op", Reason: "done"}, false)
	}, time.Minute)
	env.ExecuteWorkflow(MaintenanceWindowWorkflow, in)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("a window under its old rules failed: %v", err)
	}
}

// TestWindowValidationCoversWhatItHandsOn: window.yaml's nested cleanup
// policy and the scope's patterns are checked with the rules their own
// workflow and activity apply, named as window.yaml spells them, once.
func TestWindowValidationCoversWhatItHandsOn(t *testing.T) {
	for name, tc := range map[string]struct {
		change func(*WindowInput)
		want   string
	}{
		"cleanup action": {func(in *WindowInput) { in.Policy.Cleanup.Policy.Action = "shred" }, `policy.cleanup.policy.action="shred"`},
		"cleanup keep":   {func(in *WindowInput) { in.Policy.Cleanup.Policy.KeepSavepoints = -1 }, "policy.cleanup.policy.keepSavepoints=-1: use 1 or more"},
		"cleanup ttl below grace": {func(in *WindowInput) {
			in.Policy.Cleanup.Policy.Grace, in.Policy.Cleanup.Policy.RetiredJobTTL = Duration(time.Hour), Duration(time.Minute)
		}, "policy.cleanup.policy.retiredJobTTL=1m0s is shorter than policy.cleanup.policy.grace=1h0m0s"},
		"cleanup pinned":   {func(in *WindowInput) { in.Policy.Cleanup.Policy.PinnedSavepoints = []string{"sp-1"} }, `policy.cleanup.policy.pinnedSavepoints[0]="sp-1"`},
		"cleanup approval": {func(in *WindowInput) { in.Policy.Cleanup.ApprovalTimeout = Duration(-time.Hour) }, "policy.cleanup.approvalTimeout=-1h0m0s: use a positive duration"},
		"cleanup skipped but bad": {func(in *WindowInput) {
			in.Policy.Cleanup.Mode, in.Policy.Cleanup.Policy.OperatorSnapshots = CleanupModeSkip, "purge"
		}, `policy.cleanup.policy.operatorSnapshots="purge"`},
		"run id":     {func(in *WindowInput) { in.WindowID = "dc:network" }, `windowId (the cleanup run is named window-<windowId>): run id "window-dc:network"`},
		"scope glob": {func(in *WindowInput) { in.Scope.IncludeJobs = []string{"orders-["} }, `scope job pattern "orders-[" is not a valid glob`},
	} {
		t.Run(name, func(t *testing.T) {
			in := windowInput()
			tc.change(&in)
			in.Policy.ApplyDefaults()
			err := in.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want one saying %q", err, tc.want)
			}
		})
	}
	// A bad watermark is the window's own field, named once.
	in := windowInput()
	in.Policy.Quota = QuotaPolicy{WarningPercent: 95, CriticalPercent: 90}
	in.Policy.ApplyDefaults()
	err := in.Validate()
	if err == nil || strings.Count(err.Error(), "criticalPercent") != 1 || !strings.Contains(err.Error(), "policy.quota.warningPercent=95") {
		t.Fatalf("error %v; want policy.quota's watermarks named once", err)
	}
	ok := windowInput()
	ok.Policy.ApplyDefaults()
	if err := ok.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

// TestRestartWavesAsTheWindowAssignsThem pins the wave layout the plan
// shows and the window uses.
func TestRestartWavesAsTheWindowAssignsThem(t *testing.T) {
	keys := []string{"a", "b", "c", "d", "e"}
	for name, tc := range map[string]struct {
		p    RestartPolicy
		want string
	}{
		"canary then the rest":     {RestartPolicy{CanarySize: 1}, "a|b,c,d,e"},
		"canary then waves of two": {RestartPolicy{CanarySize: 1, WaveSize: 2}, "a|b,c|d,e"},
		"bigger canary":            {RestartPolicy{CanarySize: 2, WaveSize: 2}, "a,b|c,d|e"},
		"no canary, waves":         {RestartPolicy{WaveSize: 2}, "a,b|c,d|e"},
		"one wave":                 {RestartPolicy{}, "a,b,c,d,e"},
	} {
		t.Run(name, func(t *testing.T) {
			var parts []string
			for _, w := range restartWaves(keys, tc.p) {
				parts = append(parts, strings.Join(w, ","))
			}
			if got := strings.Join(parts, "|"); got != tc.want {
				t.Fatalf("waves %s; want %s", got, tc.want)
			}
		})
	}
	if w := restartWaves(nil, RestartPolicy{CanarySize: 1}); len(w) != 0 {
		t.Fatalf("waves of no job: %v", w)
	}
}
