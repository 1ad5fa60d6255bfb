package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/workflows"
)

const validWindow = "windowId: w1\nreason: network change\npolicy:\n  manifestDir: hdfs://nn/windows\n"

func writeWindow(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "window.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWindowFileChecksBeforeAnyServer: plan and start check the whole
// window file, nested policies included, before they dial Temporal (the
// address here answers nothing), and exit 2 naming field, value and what
// would be valid.
func TestWindowFileChecksBeforeAnyServer(t *testing.T) {
	env := map[string]string{"TEMPORAL_ADDRESS": "127.0.0.1:1"}
	for name, tc := range map[string]struct{ body, want string }{
		"cleanup action": {validWindow + "  cleanup:\n    policy:\n      action: shred\n",
			`policy.cleanup.policy.action="shred": use trash (default: recoverable) or delete`},
		"cleanup approval": {validWindow + "  cleanup:\n    approvalTimeout: -1h\n", "policy.cleanup.approvalTimeout=-1h0m0s: use a positive duration"},
		"cleanup mode":     {validWindow + "  cleanup:\n    mode: later\n", `policy.cleanup.mode="later": use plan-and-approve (default), plan, auto or skip`},
		"restart check": {validWindow + "  restart:\n    checks:\n      - metric: numRecordsInPerSecond\n        min: 5\n        max: 1\n",
			"policy.restart.checks[0]"},
		"drill canary job": {validWindow + "  drill:\n    canaryJob: orders\n", `policy.drill.canaryJob="orders" is set but policy.drill.canary is false`},
		"network":          {validWindow + "  network:\n    onDeadline: shrug\n", `policy.network.onDeadline="shrug": use wait or abort`},
		"quota":            {validWindow + "  quota:\n    safetyMargin: 20\n", "policy.quota.safetyMargin=20: use 0..10"},
		"savepoint":        {validWindow + "  savepoint:\n    concurrency: 1000\n", "policy.savepoint.concurrency=1000: use 1..256"},
		"scope glob":       {validWindow + "scope:\n  includeJobs: [\"orders-[\"]\n", `scope job pattern "orders-[" is not a valid glob`},
	} {
		for _, verb := range []string{"plan", "start"} {
			t.Run(name+"/"+verb, func(t *testing.T) {
				code, _, stderr := runCLI([]string{"window", verb, "-f", writeWindow(t, tc.body)}, env)
				if code != exitUsage || !strings.Contains(stderr, tc.want) {
					t.Fatalf("exit %d, stderr %q; want %d naming %q", code, stderr, exitUsage, tc.want)
				}
			})
		}
	}
	code, _, stderr := runCLI([]string{"window", "plan"}, env)
	if code != exitUsage || !strings.Contains(stderr, "-f window.yaml is required") {
		t.Fatalf("plan without a file: exit %d, %q", code, stderr)
	}
	code, _, stderr = runCLI([]string{"window", "plan", "-f", writeWindow(t, validWindow), "--timeout", "0s"}, env)
	if code != exitUsage || !strings.Contains(stderr, "--timeout=0s") {
		t.Fatalf("plan with --timeout 0s: exit %d, %q", code, stderr)
	}
	// A valid file gets as far as Temporal.
	code, _, stderr = runCLI([]string{"window", "plan", "-f", writeWindow(t, validWindow), "--connect-timeout", "1s"}, env)
	if code != exitUnreachable {
		t.Fatalf("a valid file with Temporal unreachable: exit %d, %q; want %d", code, stderr, exitUnreachable)
	}
}

// TestRefusedInputIsUsage: a workflow that refused its input reads as
// invalid usage; any other failure does not.
func TestRefusedInputIsUsage(t *testing.T) {
	refused := workflowFailedError{fmt.Errorf("WindowPlan failed: %w", roundTrip(
		temporal.NewNonRetryableApplicationError(`the scope does not resolve, so no job is stopped: tenant "x" is not in the inventory`, workflows.ErrTypeInvalidInput, nil)))}
	msg, ok := refusal(refused)
	if !ok || msg != `the scope does not resolve, so no job is stopped: tenant "x" is not in the inventory` {
		t.Fatalf("refusal(%v) = %q, %v", refused, msg, ok)
	}
	other := workflowFailedError{roundTrip(temporal.NewApplicationError("flink unreachable", core.ErrTypeInventory))}
	if _, ok := refusal(other); ok {
		t.Fatal("an inventory failure read as a refusal")
	}
	if _, ok := refusal(nil); ok || exitCode(usageErrorf("x")) != exitUsage || exitCode(other) != exitWorkflowFailed {
		t.Fatal("exit codes")
	}
	if _, ok := refusal(errors.New("plain")); ok {
		t.Fatal("a plain error read as a refusal")
	}
}

func TestStepJobKeyAndMedian(t *testing.T) {
	for id, want := range map[string]string{
		"window-w1/savepoint/cluster-a/orders":           "cluster-a/orders",
		"window-w1/savepoint/cluster-a/orders/attempt-3": "cluster-a/orders",
		"upgrade-u1/savepoint/cluster-b/clicks":          "cluster-b/clicks",
		"window-w1/restart/cluster-a/orders":             "",
		"window-w1/savepoint/orders":                     "",
	} {
		got, ok := stepJobKey(id, "/savepoint/")
		if (want == "") == ok || got != want && ok {
			t.Errorf("stepJobKey(%q) = %q, %v; want %q", id, got, ok, want)
		}
	}
	if m := median([]time.Duration{3 * time.Second, time.Second, 2 * time.Second}); m != 2*time.Second {
		t.Fatalf("median of 1s, 2s, 3s = %s", m)
	}
	if m := median([]time.Duration{4 * time.Second, time.Second, 2 * time.Second, 3 * time.Second}); m != 2500*time.Millisecond {
		t.Fatalf("median of 1s..4s = %s", m)
	}
}

func samplePlan() *workflows.WindowPlan {
	in := workflows.WindowInput{WindowID: "w1", Reason: "dc network", Ticket: "CHG-1", Policy: workflows.WindowPolicy{ManifestDir: "hdfs://nn/windows"}}
	in.Policy.Restart.Concurrency = 2
	in.Policy.ApplyDefaults()
	p := &workflows.WindowPlan{WindowID: in.WindowID, Reason: in.Reason, Ticket: in.Ticket, Policy: in.Policy,
		Scope:   core.Scope{Tenants: []string{"team-a", "team-b"}, ExcludeJobs: []string{"*-backfill"}},
		Tenants: []workflows.PlanTenant{{Name: "team-a", Clusters: []string{"cluster-a"}, Jobs: 2}, {Name: "team-b", Clusters: []string{"cluster-b"}, Jobs: 1, Skipped: 1}},
		Jobs: []workflows.PlanJob{
			{Key: "cluster-b/clicks", Tenant: "team-b", ClusterID: "cluster-b", JobName: "clicks", JobID: "cccc", RestartKind: "rest-jar-run", Wave: 1},
			{Key: "cluster-a/billing", Tenant: "team-a", ClusterID: "cluster-a", JobName: "billing", JobID: "aaaa", RestartKind: "rest-jar-run", SavepointDir: "hdfs://nn/a/sp"},
			{Key: "cluster-a/orders", Tenant: "team-a", ClusterID: "cluster-a", JobName: "orders", JobID: "bbbb", RestartKind: "operator-resume", Wave: 1},
		},
		Skipped: []core.SkippedJob{{Key: "cluster-b/adhoc", JobID: "eeee", Reason: "no restart recipe"}},
		Waves: []workflows.PlanWave{{Wave: 0, Canary: true, Jobs: []string{"cluster-a/billing"}, Concurrency: 2},
			{Wave: 1, Jobs: []string{"cluster-a/orders", "cluster-b/clicks"}, Concurrency: 2}},
		Quota: []workflows.PlanQuota{
			{TenantQuota: capacity.TenantQuota{Tenant: "team-a", NamespaceUsed: 100, NamespaceQuota: 1000, Percent: 10, Level: "ok", ProjectedFiles: 40, RestartAllowed: true,
				GateReason: "restart needs 40 of 900 free"}, ProjectedUsed: 140},
			{TenantQuota: capacity.TenantQuota{Tenant: "team-b", NamespaceUsed: 950, NamespaceQuota: 1000, Percent: 95, Level: "critical", Reason: "95% used", ProjectedFiles: 60,
				GateReason: "only 50 free"}, ProjectedUsed: 1010, PreflightPause: true},
		},
		Duration: workflows.PlanDuration{Method: "rounds × timeouts", Bound: workflows.Duration(90 * time.Minute), Phases: []workflows.PlanPhase{
			{Phase: "savepoint-all", Step: workflows.PlanStepSavepoint, Rounds: 1, Each: workflows.Duration(15 * time.Minute), Bound: workflows.Duration(15 * time.Minute), Basis: "1 round × 15m"},
			{Phase: "network-gate", Basis: "reminders every 30m", Wait: "the network change: flinkmaint window confirm-network-change w1", Until: "confirmed"},
			{Phase: "restart", Step: workflows.PlanStepRestart, Rounds: 2, Each: workflows.Duration(10*time.Minute + 30*time.Second), Bound: workflows.Duration(21 * time.Minute), Basis: "2 rounds"},
		}, Waits: []string{"network-gate: the network change: flinkmaint window confirm-network-change w1"}},
		Notes: []string{"savepoints not counted"},
	}
	return p
}

// TestRenderPlanShowsJobsOrderQuotaAndDuration: the table names every job
// per tenant with its wave, the skipped job and why, the canary and the
// waves in order with their concurrency, each tenant's quota verdict, and
// bounds, typical times only where measured.
func TestRenderPlanShowsJobsOrderQuotaAndDuration(t *testing.T) {
	p := samplePlan()
	p.Duration.SetTypical(workflows.PlanStepSavepoint, 40*time.Second, "median of 3 completed JobSavepoint runs")
	var b strings.Builder
	if err := renderPlan(&b, p); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(out, "\n")
	row := func(prefix string) string {
		for _, l := range lines {
			if norm := strings.Join(strings.Fields(l), " "); strings.HasPrefix(norm, prefix) {
				return norm
			}
		}
		t.Fatalf("no line starts with %q:\n%s", prefix, out)
		return ""
	}
	for prefix, want := range map[string]string{
		"window w1":                "window w1: plan only, nothing was stopped",
		"team-a cluster-a billing": "team-a cluster-a billing aaaa rest-jar-run hdfs://nn/a/sp canary",
		"team-a cluster-a orders":  "team-a cluster-a orders bbbb operator-resume - wave 1",
		"team-b cluster-b clicks":  "team-b cluster-b clicks cccc rest-jar-run - wave 1",
		"cluster-b/adhoc":          "cluster-b/adhoc eeee no restart recipe",
		"1.":                       "1. savepoint-all: 3 job(s), 4 at once, in key order (CANONICAL format, 15m0s timeout each, on failure: pause)",
		"4.":                       "4. restart canary: 1 job(s), 2 at once, failure budget 0: cluster-a/billing",
		"5.":                       "5. restart wave 1: 2 job(s), 2 at once, failure budget 0: cluster-a/orders, cluster-b/clicks",
		"team-a 100":               "team-a 100 1000 10.0% ok 40 140 fits restart needs 40 of 900 free",
		"team-b 950":               "team-b 950 1000 95.0% critical 60 1010 BLOCKED preflight pauses for a decision: 95% used; only 50 free",
		"savepoint-all 15m":        "savepoint-all 15m 40s 1 round × 15m; typical: 1 round(s) × 40s, median of 3 completed JobSavepoint runs",
		"network-gate":             "network-gate until confirmed - reminders every 30m",
		"restart 21m":              "restart 21m - 2 rounds",
		"total":                    "total 1h30m not measured plus the waits below",
	} {
		if got := row(prefix); got != want {
			t.Errorf("line %q:\n got %s\nwant %s", prefix, got, want)
		}
	}
	if strings.Index(out, "team-a cluster-a") > strings.Index(out, "team-b cluster-b") {
		t.Errorf("jobs not grouped by tenant:\n%s", out)
	}
	for _, want := range []string{"resolves to team-a (2 job(s), 0 skipped; clusters cluster-a); team-b (1 job(s), 1 skipped; clusters cluster-b)",
		"exclude *-backfill", "  - network-gate: the network change", "how: rounds × timeouts", "  - savepoints not counted"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	p.Duration.SetTypical(workflows.PlanStepRestart, 2*time.Minute, "median of 2")
	b.Reset()
	if err := renderPlan(&b, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "4m40s (savepoint-all and restart)") {
		t.Errorf("typical total missing:\n%s", b.String())
	}

	// The JSON form carries the same plan.
	var sb strings.Builder
	if err := printJSON(&sb, p); err != nil {
		t.Fatal(err)
	}
	var back workflows.WindowPlan
	if err := json.Unmarshal([]byte(sb.String()), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Waves) != 2 || back.Waves[1].Concurrency != 2 || back.Duration.Typical.D() != 4*time.Minute+40*time.Second || back.Quota[1].ProjectedUsed != 1010 ||
		!strings.Contains(sb.String(), `"restartAllowed": false`) {
		t.Fatalf("json round trip: %+v\n%s", back, sb.String())
	}
}

// historyClient answers ListWorkflow from canned pages, as Temporal's
// visibility lists closed runs.
type historyClient struct {
	client.Client // other methods are not called
	pages         map[string][][]*workflowpb.WorkflowExecutionInfo
	queries       []string
}

func (h *historyClient) ListWorkflow(_ context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	h.queries = append(h.queries, req.GetQuery())
	for wfType, pages := range h.pages {
		if !strings.Contains(req.GetQuery(), "'"+wfType+"'") {
			continue
		}
		page := 0
		if len(req.GetNextPageToken()) > 0 {
			page = int(req.GetNextPageToken()[0])
		}
		resp := &workflowservice.ListWorkflowExecutionsResponse{Executions: pages[page]}
		if page+1 < len(pages) {
			resp.NextPageToken = []byte{byte(page + 1)}
		}
		return resp, nil
	}
	return &workflowservice.ListWorkflowExecutionsResponse{}, nil
}

func ran(id string, took time.Duration) *workflowpb.WorkflowExecutionInfo {
	start := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	return &workflowpb.WorkflowExecutionInfo{Execution: &commonpb.WorkflowExecution{WorkflowId: id},
		StartTime: timestamppb.New(start), CloseTime: timestamppb.New(start.Add(took))}
}

// TestTypicalTimesComeFromPastRunsOfTheseJobs: the typical savepoint time
// is the median over every page of completed JobSavepoint runs of the
// plan's jobs (retries included, other jobs left out); without JobRestart
// runs the restart has bounds only, and the plan says so.
func TestTypicalTimesComeFromPastRunsOfTheseJobs(t *testing.T) {
	h := &historyClient{pages: map[string][][]*workflowpb.WorkflowExecutionInfo{
		workflows.JobSavepointWorkflowType: {
			{ran("window-w0/savepoint/cluster-a/billing", 30*time.Second), ran("window-w0/savepoint/cluster-x/other", time.Hour)},
			{ran("window-w0/savepoint/cluster-a/orders/attempt-2", 50*time.Second), ran("window-w9/savepoint/cluster-b/clicks", 40*time.Second)},
		},
	}}
	p := samplePlan()
	notes := measureTypical(context.Background(), h, p)
	var sp workflows.PlanPhase
	for _, ph := range p.Duration.Phases {
		if ph.Step == workflows.PlanStepSavepoint {
			sp = ph
		}
	}
	if sp.TypicalEach.D() != 40*time.Second || sp.Typical.D() != 40*time.Second ||
		sp.TypicalBasis != "median of 3 completed JobSavepoint runs of 3 of these 3 jobs in past windows" {
		t.Fatalf("savepoint phase %+v", sp)
	}
	if p.Duration.Typical != 0 || len(notes) != 1 || !strings.Contains(notes[0], "typical restart time not measured: Temporal lists no completed JobRestart of these jobs") {
		t.Fatalf("typical %s, notes %q; want no total and the restart named as unmeasured", p.Duration.Typical, notes)
	}
	if len(h.queries) != 3 || h.queries[0] != "WorkflowType = 'JobSavepoint' AND ExecutionStatus = 'Completed'" {
		t.Fatalf("queries %q", h.queries)
	}
}
