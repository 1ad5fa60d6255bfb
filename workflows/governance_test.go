package workflows

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/activities/oncall"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/freeze"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/usage"
)

// govFixture fakes the governance activities and records their calls.
type govFixture struct {
	t         *testing.T
	env       *testsuite.TestWorkflowEnvironment
	planned   []governance.PlanCleanupInput
	executed  []governance.ExecuteCleanupInput
	samples   int
	documents map[string]string
	planItems int64
	// shards, when set, makes the plan sharded, with one Kubernetes object
	// unless noObjects; partErr fails one part.
	shards    int
	noObjects bool
	parts     []governance.ExecuteCleanupPartInput
	partErr   func(governance.ExecuteCleanupPartInput) error
	// verified counts the checks of a whole sharded plan; verifyErr fails
	// them.
	verified  int
	verifyErr error
	tallies   int
	// completed, when set, hears each activity completion.
	completed func(*activity.Info, error)
	usage     []capacity.TenantUsageInput
	usageErr  error
	// executeTakes and usageTakes, when set, are how long (test time)
	// ExecuteCleanup and TenantUsage take: a window in which to act on a
	// run that is executing, or planned but not yet ended.
	executeTakes time.Duration
	usageTakes   time.Duration
}

const testPlanSHA = "5f1e0c3a"

func newGovFixture(t *testing.T) *govFixture {
	var f *govFixture
	f = newGovFixtureLocked(t, func(env *testsuite.TestWorkflowEnvironment) {
		openGates(env, func(info *activity.Info, err error) {
			if f.completed != nil {
				f.completed(info, err)
			}
		})
	})
	return f
}

// newGovFixtureLocked is the fixture with its own tenant lock manager.
func newGovFixtureLocked(t *testing.T, locks func(*testsuite.TestWorkflowEnvironment)) *govFixture {
	var s testsuite.WorkflowTestSuite
	f := &govFixture{t: t, env: s.NewTestWorkflowEnvironment(), documents: map[string]string{}, planItems: 3}
	locks(f.env)
	gatherInParts(f.env)
	var a *windows.Activities
	var gov *governance.Activities
	var capa *capacity.Activities
	f.env.OnActivity(gov.PlanCleanup, mockAny, mockAny).Return(func(_ context.Context, in governance.PlanCleanupInput) (governance.PlanCleanupResult, error) {
		f.planned = append(f.planned, in)
		return governance.PlanCleanupResult{Summary: governance.PlanSummary{
			RunID: in.RunID, PlanPath: "hdfs://nn/flinkmaint/plans/" + in.RunID + "/plan.json", PlanSHA256: testPlanSHA,
			Items: f.planItems, Files: 10 * f.planItems, Bytes: 1000 * f.planItems, Action: string(in.Policy.Action),
			Tenants:      []governance.TenantPlan{{Tenant: "team-a", Items: f.planItems, Files: 10 * f.planItems, Bytes: 1000 * f.planItems}},
			ScopeTenants: []inventory.Tenant{{Name: "team-a", Root: "hdfs://nn/a"}}, Shards: f.shards, Objects: f.objects(),
		}}, nil
	})
	var mu sync.Mutex
	f.env.OnActivity(gov.ExecuteCleanupPart, mockAny, mockAny).Return(func(_ context.Context, in governance.ExecuteCleanupPartInput) (governance.ExecuteCleanupPartResult, error) {
		mu.Lock()
		f.parts = append(f.parts, in)
		mu.Unlock()
		if f.partErr != nil {
			if err := f.partErr(in); err != nil {
				return governance.ExecuteCleanupPartResult{}, err
			}
		}
		return governance.ExecuteCleanupPartResult{Total: 1, Removed: 1}, nil
	})
	f.env.OnActivity(gov.VerifyCleanupPlan, mockAny, mockAny).Return(func(_ context.Context, in governance.ExecuteCleanupInput) error {
		f.verified++
		return f.verifyErr
	})
	f.env.OnActivity(gov.TallyCleanup, mockAny, mockAny).Return(func(_ context.Context, in governance.ExecuteCleanupInput) (governance.ExecuteCleanupResult, error) {
		f.tallies++
		return governance.ExecuteCleanupResult{RunID: in.RunID, Total: f.shards + 1, Items: int64(f.shards + 1)}, nil
	})
	f.env.OnActivity(gov.ExecuteCleanup, mockAny, mockAny).AfterFn(func() time.Duration { return f.executeTakes }).Return(func(_ context.Context, in governance.ExecuteCleanupInput) (governance.ExecuteCleanupResult, error) {
		f.executed = append(f.executed, in)
		return governance.ExecuteCleanupResult{RunID: in.RunID, ManifestDir: "hdfs://nn/trash/_audit/" + in.RunID, Total: 3, Items: 3, Files: 30, Bytes: 3000,
			Tenants: []governance.TenantReclaim{{Tenant: "team-a", Items: 3, Files: 30, Bytes: 3000}}}, nil
	})
	f.env.OnActivity(capa.SampleQuota, mockAny, mockAny).Return(func(_ context.Context, in capacity.SampleQuotaInput) (capacity.SampleQuotaResult, error) {
		f.samples++
		used := int64(900)
		if len(f.executed) > 0 {
			used = 870
		}
		return capacity.SampleQuotaResult{Tenants: []capacity.TenantQuota{{Tenant: "team-a", Root: "hdfs://nn/a", NamespaceUsed: used, NamespaceQuota: 1000,
			Percent: float64(used) / 10, Level: "warning"}}}, nil
	})
	f.env.OnActivity(capa.TenantUsage, mockAny, mockAny).AfterFn(func() time.Duration { return f.usageTakes }).Return(func(_ context.Context, in capacity.TenantUsageInput) (capacity.TenantUsageResult, error) {
		f.usage = append(f.usage, in)
		if f.usageErr != nil {
			return capacity.TenantUsageResult{}, f.usageErr
		}
		orders := usage.Offender{Job: "team-a/cluster-a/orders", Figures: usage.Figures{Files: 700, Dirs: 90, Bytes: 5 << 20}}
		return capacity.TenantUsageResult{Tenants: []usage.Report{{Tenant: "team-a", Root: "hdfs://nn/a",
			Kinds:    []usage.KindUsage{{Kind: usage.KindShared, Figures: usage.Figures{Files: 700, Dirs: 90, Bytes: 5 << 20}}},
			TopFiles: []usage.Offender{orders}, TopBytes: []usage.Offender{orders}}}}, nil
	})
	f.env.OnActivity(gov.PurgeTrash, mockAny, mockAny).Return(governance.PurgeTrashResult{Purged: []string{"hdfs://nn/trash/old"}}, nil)
	f.env.OnActivity(a.WriteDocument, mockAny, mockAny).Return(func(_ context.Context, in core.WriteDocumentInput) (core.WriteDocumentResult, error) {
		f.documents[in.Path] = string(in.Content)
		return core.WriteDocumentResult{Path: in.Path}, nil
	})
	return f
}

func (f *govFixture) objects() int64 {
	if f.noObjects {
		return 0
	}
	return int64(min(f.shards, 1))
}

// objectParts counts the executed parts that were the plan's objects.
func (f *govFixture) objectParts() int {
	n := 0
	for _, p := range f.parts {
		if p.Objects {
			n++
		}
	}
	return n
}

func (f *govFixture) status() GovernanceState {
	f.t.Helper()
	v, err := f.env.QueryWorkflow(QueryStatus)
	if err != nil {
		f.t.Fatal(err)
	}
	var st GovernanceState
	if err := v.Get(&st); err != nil {
		f.t.Fatal(err)
	}
	return st
}

// update sends an update and reports whether it was accepted; on
// completion it decodes the result into out (when not nil). An update
// that the run never answered (it ended first, or the callback sending it
// never fired) fails the test when it ends.
func (f *govFixture) update(name string, arg interface{}, wantAccepted bool, wantRejection string, out interface{}) {
	f.t.Helper()
	answered := mustBeAnswered(f.t, name, arg)
	f.env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
		OnReject: func(err error) {
			answered.Store(true)
			if wantAccepted {
				f.t.Errorf("update %s(%+v) rejected: %v", name, arg, err)
			} else if !strings.Contains(err.Error(), wantRejection) {
				f.t.Errorf("update %s(%+v) rejected with %q, want it to mention %q", name, arg, err, wantRejection)
			}
		},
		OnAccept: func() {
			if !wantAccepted {
				f.t.Errorf("update %s(%+v) accepted, want rejection", name, arg)
			}
		},
		OnComplete: func(res interface{}, err error) {
			answered.Store(true)
			if err != nil {
				f.t.Errorf("update %s failed: %v", name, err)
				return
			}
			if out != nil {
				if p, ok := out.(*governance.PlanSummary); ok {
					if s, ok := res.(governance.PlanSummary); ok {
						*p = s
					}
				}
			}
		},
	}, arg)
}

func (f *govFixture) report() *GovernanceReport {
	f.t.Helper()
	if !f.env.IsWorkflowCompleted() {
		f.t.Fatal("governance run did not complete")
	}
	if err := f.env.GetWorkflowError(); err != nil {
		f.t.Fatalf("governance run failed: %v", err)
	}
	var rep GovernanceReport
	if err := f.env.GetWorkflowResult(&rep); err != nil {
		f.t.Fatal(err)
	}
	return &rep
}

func TestGovernancePlanModeTouchesNothing(t *testing.T) {
	f := newGovFixture(t)
	f.env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{RunID: "g1", Policy: GovernancePolicy{Grace: Duration(2 * time.Hour)}})
	rep := f.report()
	if rep.Outcome != GovernancePhasePlanned || rep.Mode != ModePlan || len(f.executed) != 0 {
		t.Fatalf("outcome %s mode %s, %d executions; want planned, plan, none", rep.Outcome, rep.Mode, len(f.executed))
	}
	if len(f.planned) != 1 || f.planned[0].Policy.Grace != 2*time.Hour || f.planned[0].Policy.Action != CleanupActionTrash || f.planned[0].RunID != "g1" {
		t.Fatalf("plan input %+v", f.planned)
	}
	md := f.documents["hdfs://nn/flinkmaint/plans/g1/report.md"]
	if !strings.Contains(md, "**planned**") || !strings.Contains(md, "| team-a | 30 | 3000 |") {
		t.Fatalf("report.md:\n%s", md)
	}
	if _, ok := f.documents["hdfs://nn/flinkmaint/plans/g1/report.json"]; !ok {
		t.Fatal("report.json not written")
	}
	if len(rep.Tenants) != 1 || rep.Tenants[0].PlannedFiles != 30 || rep.Tenants[0].NamespaceBefore != 900 {
		t.Fatalf("tenants %+v", rep.Tenants)
	}
	// The storage usage of the plan's tenants, without per-job rows.
	if len(f.usage) != 1 || !f.usage[0].OmitJobs || strings.Join(f.usage[0].Tenants, ",") != "team-a" {
		t.Fatalf("usage input %+v; want the plan's tenants, kinds and top offenders only", f.usage)
	}
	if len(rep.Usage) != 1 || rep.Usage[0].Tenant != "team-a" {
		t.Fatalf("report usage %+v", rep.Usage)
	}
	for _, want := range []string{"## Storage usage", "| shared | 700 | 90 | 5242880 | - | - | - |", "first sample", "| team-a/cluster-a/orders | 700 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}

func TestGovernanceUsageFailureIsANote(t *testing.T) {
	f := newGovFixture(t)
	f.usageErr = temporal.NewNonRetryableApplicationError("permission denied", core.ErrTypeStoragePermission, nil)
	f.env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{RunID: "g7"})
	rep := f.report()
	if rep.Outcome != GovernancePhasePlanned || rep.Usage != nil || !strings.Contains(strings.Join(rep.Notes, " "), "storage usage unknown") {
		t.Fatalf("outcome %s, usage %+v, notes %v; want planned with a note", rep.Outcome, rep.Usage, rep.Notes)
	}
}

func TestGovernanceApprove(t *testing.T) {
	f := newGovFixture(t)
	f.executeTakes = 10 * time.Minute
	var approved governance.PlanSummary
	later(t, f.env, func() {
		st := f.status()
		if st.Phase != GovernancePhaseAwaitingApproval || st.Plan == nil || len(f.executed) != 0 {
			t.Errorf("at 1m: phase %s plan %v executed %d; want awaiting approval", st.Phase, st.Plan != nil, len(f.executed))
		}
		f.update(UpdateApprove, ApproveRequest{}, false, "name the approver", nil)
		f.update(UpdateApprove, ApproveRequest{By: "alice", PlanSHA256: "deadbeef"}, false, "does not match", nil)
		f.update(UpdateReject, RejectRequest{By: "bob"}, false, "reason is empty", nil)
		f.update(UpdateApprove, ApproveRequest{By: "alice", Reason: "reviewed", PlanSHA256: testPlanSHA}, true, "", &approved)
	}, time.Minute)
	// The execution takes from about 1m to 11m: a decision sent meanwhile
	// is refused and the approval recorded stays the one executed.
	later(t, f.env, func() {
		if st := f.status(); st.Phase != GovernancePhaseExecuting || len(f.executed) != 0 {
			t.Errorf("at 2m: phase %s, %d executions finished; want the execution running", st.Phase, len(f.executed))
		}
		f.update(UpdateReject, RejectRequest{By: "bob", Reason: "too late"}, false, "phase executing (mode plan-and-approve), not waiting for approval", nil)
		f.update(UpdateApprove, ApproveRequest{By: "carol", Reason: "me too", PlanSHA256: testPlanSHA}, false, "not waiting for approval", nil)
	}, 2*time.Minute)
	f.env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{RunID: "g2", Mode: ModePlanAndApprove})
	rep := f.report()
	if rep.Outcome != GovernancePhaseCompleted || rep.Approval == nil || !rep.Approval.Approved || rep.Approval.By != "alice" || rep.Approval.Reason != "reviewed" {
		t.Fatalf("outcome %s approval %+v; want completed, approved by alice", rep.Outcome, rep.Approval)
	}
	if approved.PlanSHA256 != testPlanSHA || approved.Items != 3 {
		t.Errorf("approve returned %+v, want the plan summary", approved)
	}
	if len(f.executed) != 1 || f.executed[0].PlanSHA256 != testPlanSHA || f.executed[0].RunID != "g2" || f.executed[0].PlanPath != "hdfs://nn/flinkmaint/plans/g2/plan.json" {
		t.Fatalf("executed %+v", f.executed)
	}
	if rep.ReclaimedFiles != 30 || len(rep.Tenants) != 1 || rep.Tenants[0].ReclaimedFiles != 30 || rep.Tenants[0].NamespaceAfter != 870 {
		t.Fatalf("report %+v tenants %+v", rep, rep.Tenants)
	}
	if f.samples != 2 {
		t.Errorf("quota sampled %d times, want before and after", f.samples)
	}
}

// A decision is taken once: a second one sent right after it is refused,
// whichever the first was, and the first is the one recorded and acted on.
// After an approval the run shows awaiting-approval until its tenant lock
// is asked for, so there only the decision already recorded refuses it
// (the refusal names the phase).
func TestGovernanceDecidesOnce(t *testing.T) {
	const stillAwaiting = "is in phase awaiting-approval (mode plan-and-approve), not waiting for approval"
	for name, tc := range map[string]struct {
		first, second   func(f *govFixture)
		outcome, by     string
		approved, execs bool
	}{
		"approve then reject": {
			first: func(f *govFixture) {
				f.update(UpdateApprove, ApproveRequest{By: "alice", Reason: "reviewed", PlanSHA256: testPlanSHA}, true, "", nil)
			},
			second: func(f *govFixture) {
				f.update(UpdateReject, RejectRequest{By: "bob", Reason: "changed my mind"}, false, stillAwaiting, nil)
			},
			outcome: GovernancePhaseCompleted, by: "alice", approved: true, execs: true,
		},
		"reject then approve": {
			first: func(f *govFixture) {
				f.update(UpdateReject, RejectRequest{By: "bob", Reason: "savepoints still needed"}, true, "", nil)
			},
			second: func(f *govFixture) {
				f.update(UpdateApprove, ApproveRequest{By: "alice", Reason: "reviewed", PlanSHA256: testPlanSHA}, false, "is in phase rejected", nil)
			},
			outcome: GovernancePhaseRejected, by: "bob",
		},
		"approve twice": {
			first: func(f *govFixture) {
				f.update(UpdateApprove, ApproveRequest{By: "alice", Reason: "reviewed"}, true, "", nil)
			},
			second: func(f *govFixture) {
				f.update(UpdateApprove, ApproveRequest{By: "carol", Reason: "also reviewed"}, false, stillAwaiting, nil)
			},
			outcome: GovernancePhaseCompleted, by: "alice", approved: true, execs: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newGovFixture(t)
			later(t, f.env, func() {
				tc.first(f)
				tc.second(f)
			}, time.Minute)
			f.env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{RunID: "g-once", Mode: ModePlanAndApprove})
			rep := f.report()
			if rep.Outcome != tc.outcome || rep.Approval == nil || rep.Approval.Approved != tc.approved || rep.Approval.By != tc.by || (len(f.executed) == 1) != tc.execs {
				t.Fatalf("outcome %s, approval %+v, executed %d; want %s decided by %s", rep.Outcome, rep.Approval, len(f.executed), tc.outcome, tc.by)
			}
		})
	}
}

// A run in plan mode never waits for a decision: an approve or reject
// sent while it has a plan is refused, and nothing is executed.
func TestGovernancePlanModeRefusesDecisions(t *testing.T) {
	f := newGovFixture(t)
	f.usageTakes = 10 * time.Minute // after the plan, before the run ends
	later(t, f.env, func() {
		if st := f.status(); st.Plan == nil || st.Phase != GovernancePhasePlanning {
			t.Errorf("at 5m: phase %s, plan %v; want a plan made, usage being sampled", st.Phase, st.Plan != nil)
		}
		f.update(UpdateApprove, ApproveRequest{By: "alice", Reason: "looks fine", PlanSHA256: testPlanSHA}, false, "(mode plan), not waiting for approval", nil)
		f.update(UpdateReject, RejectRequest{By: "bob", Reason: "no"}, false, "(mode plan), not waiting for approval", nil)
	}, 5*time.Minute)
	f.env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{RunID: "g-plan-only"})
	rep := f.report()
	if rep.Outcome != GovernancePhasePlanned || rep.Approval != nil || len(f.executed) != 0 || len(f.parts) != 0 {
		t.Fatalf("outcome %s, approval %+v, executed %d; want planned, no decision, nothing executed", rep.Outcome, rep.Approval, len(f.executed))
	}
}

func TestGovernanceReject(t *testing.T) {
	f := newGovFixture(t)
	later(t, f.env, func() {
		f.update(UpdateReject, RejectRequest{By: "bob", Reason: "savepoints still needed"}, true, "", nil)
	}, time.Minute)
	f.env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{RunID: "g3", Mode: ModePlanAndApprove})
	rep := f.report()
	if rep.Outcome != GovernancePhaseRejected || len(f.executed) != 0 || rep.Approval == nil || rep.Approval.Approved || rep.Approval.Reason != "savepoints still needed" {
		t.Fatalf("outcome %s executed %d approval %+v", rep.Outcome, len(f.executed), rep.Approval)
	}
}

func TestGovernanceApprovalDeadline(t *testing.T) {
	f := newGovFixture(t)
	checked := false
	later(t, f.env, func() {
		checked = true
		if st := f.status(); st.Phase != GovernancePhaseAwaitingApproval {
			t.Errorf("at 5h59m: phase %s, want still awaiting approval", st.Phase)
		}
	}, 6*time.Hour-time.Minute)
	start := f.env.Now()
	f.env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{RunID: "g4", Mode: ModePlanAndApprove, ApprovalTimeout: Duration(6 * time.Hour)})
	rep := f.report()
	if !checked {
		t.Fatal("the run ended before 5h59m: the 6h approval deadline was not kept")
	}
	if waited := f.env.Now().Sub(start); waited < 6*time.Hour || waited > 6*time.Hour+time.Minute {
		t.Errorf("the run expired after %v; want the 6h approval deadline", waited)
	}
	if rep.Outcome != GovernancePhaseExpired || len(f.executed) != 0 || rep.Approval != nil {
		t.Fatalf("outcome %s executed %d approval %+v", rep.Outcome, len(f.executed), rep.Approval)
	}
	if !strings.Contains(strings.Join(rep.Notes, " "), "approvalTimeout=6h0m0s") {
		t.Errorf("notes %v do not explain the deadline", rep.Notes)
	}
}

func TestGovernanceAutoExecutesAndPurges(t *testing.T) {
	f := newGovFixture(t)
	later(t, f.env, func() {
		f.update(UpdateApprove, ApproveRequest{By: "alice"}, false, "has no plan yet", nil)
	}, 0)
	f.env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{Mode: ModeAuto, PurgeTrashAfter: Duration(7 * 24 * time.Hour)})
	rep := f.report()
	if rep.Outcome != GovernancePhaseCompleted || len(f.executed) != 1 || rep.Purge == nil || len(rep.Purge.Purged) != 1 {
		t.Fatalf("outcome %s executed %d purge %+v", rep.Outcome, len(f.executed), rep.Purge)
	}
	// Without a RunID the run is named after the workflow.
	if rep.RunID == "" || governance.CheckRunID(rep.RunID) != nil {
		t.Fatalf("derived run id %q", rep.RunID)
	}
}

// A sharded plan is executed shard by shard as separate activities, each
// exactly once, then its Kubernetes objects, then tallied; the plan was
// asked for in shards of the default size.
func TestGovernanceExecutesAShardedPlanPartByPart(t *testing.T) {
	f := newGovFixture(t)
	f.shards = 7
	f.env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{Mode: ModeAuto, ExecuteParallelism: 3})
	rep := f.report()
	if len(f.planned) != 1 || f.planned[0].ShardItems != cleanup.DefaultShardItems {
		t.Fatalf("plan requests %+v; want one with shards of %d items", f.planned, cleanup.DefaultShardItems)
	}
	// The scope was listed in the default 4 parts, each handed to the plan.
	if got := f.planned[0].Listings; len(got) != 4 || got[0].Part != 0 || got[3].Part != 3 || got[3].Parts != 4 {
		t.Fatalf("plan got listing parts %+v; want parts 0 to 3 of 4", got)
	}
	if len(f.executed) != 0 || f.tallies != 1 || rep.Execution == nil || rep.Execution.Items != 8 {
		t.Fatalf("whole-plan executions %d, tallies %d, execution %+v", len(f.executed), f.tallies, rep.Execution)
	}
	if f.verified != 1 {
		t.Fatalf("the whole plan checked %d times before its parts ran; want once", f.verified)
	}
	seen := map[int]int{}
	for i, p := range f.parts {
		if p.Objects {
			if i != len(f.parts)-1 {
				t.Fatalf("objects executed as part %d of %d: want them after every shard", i+1, len(f.parts))
			}
			continue
		}
		seen[p.Shard]++
	}
	for i := range f.shards {
		if seen[i] != 1 {
			t.Fatalf("shard %d executed %d times; parts %+v", i, seen[i], f.parts)
		}
	}
	if st := f.status(); st.ShardsExecuted != 7 {
		t.Fatalf("status counts %d shards executed; want 7", st.ShardsExecuted)
	}
	if n := f.objectParts(); n != 1 {
		t.Fatalf("the plan's objects executed %d times; want once", n)
	}

	// A sharded plan without objects has no objects part.
	f = newGovFixture(t)
	f.shards, f.noObjects = 2, true
	f.env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{Mode: ModeAuto})
	f.report()
	if len(f.parts) != 2 || f.objectParts() != 0 {
		t.Fatalf("parts %+v; want the 2 shards and no objects part", f.parts)
	}
}

// A shard that fails stops the run: no shard is started after it, the
// objects are not touched, nothing is tallied as if complete.
func TestGovernanceShardFailureStopsTheRun(t *testing.T) {
	f := newGovFixture(t)
	f.shards = 9
	// The other shards finish only once the workflow has been handed shard
	// 2's failure, so what starts afterwards does not depend on scheduling.
	delivered := make(chan struct{})
	var once sync.Once
	f.completed = func(info *activity.Info, err error) {
		if info.ActivityType.Name == "ExecuteCleanupPart" && err != nil {
			once.Do(func() { close(delivered) })
		}
	}
	f.partErr = func(in governance.ExecuteCleanupPartInput) error {
		if in.Shard == 1 && !in.Objects {
			return temporal.NewNonRetryableApplicationError("plan shard changed", core.ErrTypeCleanupPlanChanged, nil)
		}
		select {
		case <-delivered:
		case <-time.After(time.Minute):
		}
		return nil
	}
	f.env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{Mode: ModeAuto, ExecuteParallelism: 2})
	if !f.env.IsWorkflowCompleted() || f.env.GetWorkflowError() == nil {
		t.Fatal("the run did not fail")
	}
	if !strings.Contains(f.env.GetWorkflowError().Error(), "execute shard 2 of 9") {
		t.Fatalf("error %v; want it to name the shard", f.env.GetWorkflowError())
	}
	if len(f.parts) != 2 || f.tallies != 0 {
		t.Fatalf("%d parts run, %d tallies after shard 2 failed with 2 at once; want shards 1 and 2 only: %+v", len(f.parts), f.tallies, f.parts)
	}
	for _, p := range f.parts {
		if p.Objects {
			t.Fatal("the plan's objects were executed after a shard failed")
		}
	}
}

// A shard changed after approval stops the run before any shard runs:
// approve exactly what was reviewed, not the shards before the changed one.
func TestGovernanceChangedShardStopsTheRunBeforeAnyPart(t *testing.T) {
	f := newGovFixture(t)
	f.shards = 3
	f.verifyErr = temporal.NewNonRetryableApplicationError("plan shard items-00002.jsonl: sha256 differs", core.ErrTypeCleanupPlanChanged, nil)
	f.env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{Mode: ModeAuto})
	if !f.env.IsWorkflowCompleted() || f.env.GetWorkflowError() == nil {
		t.Fatal("the run did not fail")
	}
	if err := f.env.GetWorkflowError().Error(); !strings.Contains(err, "check the approved plan") || !strings.Contains(err, "items-00002") {
		t.Fatalf("error %v; want it to name the changed shard", err)
	}
	if len(f.parts) != 0 || f.tallies != 0 {
		t.Fatalf("%d parts and %d tallies ran; want none after the plan check failed", len(f.parts), f.tallies)
	}
}

// A part of the listing that cannot be gathered fails the run before
// anything is planned.
func TestGovernanceGatherFailureFailsThePlan(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	openGates(env)
	var a *capacity.Activities
	env.OnActivity(a.SampleQuota, mockAny, mockAny).Return(capacity.SampleQuotaResult{}, nil)
	gatherInParts(env, func(part int) error {
		if part == 2 {
			return temporal.NewNonRetryableApplicationError("namenode refused", core.ErrTypeStoragePermission, nil)
		}
		return nil
	})
	env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{Mode: ModeAuto})
	if err := env.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), "gather part 3 of 4") {
		t.Fatalf("error %v; want the failed gather part named", err)
	}
}

// An execution whose tenant another run holds waits, visibly, until it is
// released; the plan it made before is made again, since the held tenant
// changed meanwhile, and the lock is given back once it executed.
func TestGovernanceWaitsForTheTenantLock(t *testing.T) {
	released := 0
	f := newGovFixtureLocked(t, func(env *testsuite.TestWorkflowEnvironment) {
		var a *oncall.Activities
		env.OnActivity(a.CheckFreeze, mockAny, mockAny).Return(oncall.CheckFreezeResult{}, nil)
		env.OnActivity(a.RequestTenantLock, mockAny, mockAny).Return([]LockHold{{LockRequest: LockRequest{Owner: "window-wk49", Kind: KindWindow,
			Tenants: []string{"team-a"}, Reason: "window wk49: savepoint-all until every job is healthy"}}}, nil)
		env.OnSignalExternalWorkflow(mockAny, TenantLockWorkflowID, "", SignalLockRelease, mockAny).Return(func(_, _, _, _ string, _ interface{}) error {
			released++
			return nil
		})
	})
	later(t, f.env, func() {
		st := f.status()
		if st.Phase != GovernancePhaseWaitingForLock || !strings.Contains(st.WaitingFor, "window-wk49 holds team-a") || len(f.executed) != 0 {
			t.Errorf("while the window holds team-a: phase %s, waiting for %q, executed %d; want waiting, naming the window", st.Phase, st.WaitingFor, len(f.executed))
		}
		f.env.SignalWorkflow(SignalLockGranted, LockGrant{Tenants: []string{"team-a"}, Waited: true})
	}, time.Hour)
	f.env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{RunID: "g-lock", Mode: ModeAuto})
	rep := f.report()
	if rep.Outcome != GovernancePhaseCompleted || len(f.planned) != 2 || len(f.executed) != 1 || released != 1 {
		t.Fatalf("outcome %s, planned %d, executed %d, released %d; want planned again after the wait, executed once, released once",
			rep.Outcome, len(f.planned), len(f.executed), released)
	}
}

// In plan-and-approve mode a plan made again after waiting for the tenant
// lock is approved again before anything executes: the first approval was
// of the plan made before the wait.
func TestGovernanceAsksAgainForAPlanMadeAgain(t *testing.T) {
	f := newGovFixtureLocked(t, func(env *testsuite.TestWorkflowEnvironment) {
		var a *oncall.Activities
		env.OnActivity(a.CheckFreeze, mockAny, mockAny).Return(oncall.CheckFreezeResult{}, nil)
		env.OnActivity(a.RequestTenantLock, mockAny, mockAny).Return([]LockHold{{LockRequest: LockRequest{Owner: "window-wk49", Kind: KindWindow,
			Tenants: []string{"team-a"}, Reason: "window wk49"}}}, nil)
		env.OnSignalExternalWorkflow(mockAny, TenantLockWorkflowID, "", SignalLockRelease, mockAny).Return(nil)
	})
	later(t, f.env, func() {
		f.update(UpdateApprove, ApproveRequest{By: "alice", Reason: "first plan", PlanSHA256: testPlanSHA}, true, "", nil)
	}, time.Minute)
	later(t, f.env, func() {
		if st := f.status(); st.Phase != GovernancePhaseWaitingForLock {
			t.Errorf("at 1h: phase %s; want waiting for the lock", st.Phase)
		}
		f.env.SignalWorkflow(SignalLockGranted, LockGrant{Tenants: []string{"team-a"}, Waited: true})
	}, time.Hour)
	later(t, f.env, func() {
		if st := f.status(); st.Phase != GovernancePhaseAwaitingApproval || st.Approval != nil || len(f.planned) != 2 || len(f.executed) != 0 {
			t.Errorf("at 2h: phase %s, approval %+v, planned %d, executed %d; want the plan made again awaiting a new approval, nothing executed",
				st.Phase, st.Approval, len(f.planned), len(f.executed))
		}
		f.update(UpdateApprove, ApproveRequest{By: "bob", Reason: "second plan", PlanSHA256: testPlanSHA}, true, "", nil)
	}, 2*time.Hour)
	later(t, f.env, func() {
		f.env.SignalWorkflow(SignalLockGranted, LockGrant{Tenants: []string{"team-a"}})
	}, 3*time.Hour)
	f.env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{RunID: "g-again", Mode: ModePlanAndApprove})
	rep := f.report()
	if rep.Outcome != GovernancePhaseCompleted || len(f.executed) != 1 || rep.Approval == nil || rep.Approval.By != "bob" {
		t.Fatalf("outcome %s, executed %d, approval %+v; want executed once, approved by bob", rep.Outcome, len(f.executed), rep.Approval)
	}
}

// With the listing gathered in one part, the plan lists the scope itself.
func TestGovernanceGathersInOnePartByPlanning(t *testing.T) {
	f := newGovFixture(t)
	f.env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{RunID: "g-one", GatherParts: 1})
	f.report()
	if len(f.planned) != 1 || f.planned[0].Listings != nil {
		t.Fatalf("plan inputs %+v; want one that lists the scope itself", f.planned)
	}
}

// Inside a freeze a governance execution started by hand is refused,
// naming the freeze and how to override it; overridden, it runs and says
// so; a plan (which changes nothing) is not stopped.
func TestGovernanceRespectsFreezes(t *testing.T) {
	frozen := func(env *testsuite.TestWorkflowEnvironment) {
		var a *oncall.Activities
		env.OnActivity(a.CheckFreeze, mockAny, mockAny).Return(oncall.CheckFreezeResult{Active: []freeze.Active{{Name: "black-friday",
			Until: time.Date(2026, 11, 30, 23, 59, 0, 0, time.UTC), Reason: "sales"}}}, nil)
		env.OnActivity(a.RequestTenantLock, mockAny, mockAny).Return(nil, nil)
		env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, err error) {
			if info.ActivityType.Name == "RequestTenantLock" {
				_ = env.SignalWorkflowByID(info.WorkflowExecution.ID, SignalLockGranted, LockGrant{})
			}
		})
		env.OnSignalExternalWorkflow(mockAny, TenantLockWorkflowID, "", SignalLockRelease, mockAny).Return(nil)
	}
	f := newGovFixtureLocked(t, frozen)
	f.env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{RunID: "g-frozen", Mode: ModeAuto})
	err := f.env.GetWorkflowError()
	if !isFrozen(err) || !strings.Contains(err.Error(), `freeze "black-friday" until 2026-11-30T23:59:00Z`) || !strings.Contains(err.Error(), "--override-freeze") ||
		len(f.planned) != 0 || len(f.executed) != 0 {
		t.Fatalf("frozen run: %v, planned %d, executed %d; want refused before planning, naming the freeze and the override", err, len(f.planned), len(f.executed))
	}

	f = newGovFixtureLocked(t, frozen)
	f.env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{RunID: "g-override", Mode: ModeAuto, OverrideFreeze: &FreezeOverride{By: "ann", Reason: "quota at 99%"}})
	rep := f.report()
	if rep.Outcome != GovernancePhaseCompleted || len(f.executed) != 1 || !strings.Contains(strings.Join(rep.Notes, "\n"), "freeze overridden by ann: quota at 99%") {
		t.Fatalf("overridden run: %s, executed %d, notes %v; want it executed with the override in the report", rep.Outcome, len(f.executed), rep.Notes)
	}

	f = newGovFixtureLocked(t, frozen)
	f.env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{RunID: "g-plan", Mode: ModePlan})
	if rep := f.report(); rep.Outcome != GovernancePhasePlanned {
		t.Fatalf("a plan inside a freeze ended %s; want planned", rep.Outcome)
	}
}

func TestGovernanceEmptyPlanSkipsApproval(t *testing.T) {
	f := newGovFixture(t)
	f.planItems = 0
	f.env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{RunID: "g5", Mode: ModePlanAndApprove})
	rep := f.report()
	if rep.Outcome != GovernancePhaseCompleted || len(f.executed) != 0 {
		t.Fatalf("outcome %s executed %d", rep.Outcome, len(f.executed))
	}
}

func TestGovernancePlanFailureFailsTheRun(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	openGates(env)
	var a *governance.Activities
	var capa *capacity.Activities
	env.OnActivity(capa.SampleQuota, mockAny, mockAny).Return(capacity.SampleQuotaResult{}, nil)
	gatherInParts(env)
	env.OnActivity(a.PlanCleanup, mockAny, mockAny).Return(governance.PlanCleanupResult{},
		temporal.NewNonRetryableApplicationError("scope spans two file systems", core.ErrTypeInvalidInput, nil))
	env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{RunID: "g6", Mode: ModeAuto})
	err := env.GetWorkflowError()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != core.ErrTypeInvalidInput || !strings.Contains(err.Error(), "two file systems") {
		t.Fatalf("error %v; want the plan's InvalidInput", err)
	}
}

func TestGovernanceInputValidation(t *testing.T) {
	for name, tc := range map[string]struct {
		in   GovernanceInput
		want string
	}{
		"bad mode":       {GovernanceInput{Mode: "yolo"}, `mode="yolo"`},
		"bad action":     {GovernanceInput{Policy: GovernancePolicy{Action: "shred"}}, `policy.action="shred"`},
		"bad run id":     {GovernanceInput{RunID: "a/b"}, "runId"},
		"negative grace": {GovernanceInput{Policy: GovernancePolicy{Grace: Duration(-time.Hour)}}, "policy.grace=-1h0m0s"},
		"ttl < grace":    {GovernanceInput{Policy: GovernancePolicy{Grace: Duration(2 * time.Hour), RetiredJobTTL: Duration(time.Hour)}}, "policy.retiredJobTTL"},
		"bad pin":        {GovernanceInput{Policy: GovernancePolicy{PinnedSavepoints: []string{"relative/sp"}}}, "policy.pinnedSavepoints[0]"},
		"bad watermark":  {GovernanceInput{WarningPercent: 95, CriticalPercent: 90}, "warningPercent=95"},
		"negative shard": {GovernanceInput{ShardItems: -1}, "shardItems=-1: use 1 to 100000"},
		"huge shard":     {GovernanceInput{ShardItems: 100_001}, "shardItems=100001"},
		"parallelism":    {GovernanceInput{ExecuteParallelism: 65}, "executeParallelism=65: use 1 to 64"},
	} {
		t.Run(name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			env.ExecuteWorkflow(GovernanceWorkflow, tc.in)
			err := env.GetWorkflowError()
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != ErrTypeInvalidInput || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want InvalidInput naming %q", err, tc.want)
			}
		})
	}
}

func TestCleanupRunID(t *testing.T) {
	for in, want := range map[[2]string]string{
		{"governance-nightly-2026-01-02T03:04:05Z", "0f1e2d3c-aaaa-bbbb"}: "governance-nightly-2026-01-02T03-04-05Z-0f1e2d3c",
		{"/weird id/", "r"}: "weird-id--r",
	} {
		got := cleanupRunID(in[0], in[1])
		if got != want || governance.CheckRunID(got) != nil {
			t.Errorf("cleanupRunID(%q, %q) = %q, want %q (valid)", in[0], in[1], got, want)
		}
	}
}
