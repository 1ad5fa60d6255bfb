package workflows

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/drills"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

var detailsAt = time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)

// detailsWindow is a window of n jobs in the given phase, every savepoint
// taken and every restart pending.
func detailsWindow(phase string, keys ...string) (WindowInput, WindowState) {
	in := WindowInput{WindowID: "wk-49", Reason: "dc network change", Scope: core.Scope{Tenants: []string{"team-a", "team-b"}},
		Policy: WindowPolicy{ManifestDir: "hdfs://nn/flinkmaint/windows"}}
	in.Policy.ApplyDefaults()
	st := WindowState{WindowID: "wk-49", Phase: phase, StartedAt: detailsAt.Add(-time.Hour), ManifestPath: "hdfs://nn/flinkmaint/windows/wk-49/manifest.json"}
	for _, k := range keys {
		st.Jobs = append(st.Jobs, JobProgress{Target: core.JobTarget{Key: k}, SavepointState: StepDone, RestartState: StepPending,
			SavepointPath: "hdfs://nn/sp/" + k})
	}
	return in, st
}

// The whole text of a window waiting for the network change: phase, the
// table, the decision and the commands that answer it, byte for byte.
func TestWindowDetailsWaitingForTheNetworkChange(t *testing.T) {
	in, st := detailsWindow(WindowPhaseNetworkGate, "cluster-a/orders", "cluster-a/payments", "cluster-b/clicks")
	st.Skipped = []core.SkippedJob{{Key: "cluster-a/adhoc", Reason: "no restart recipe"}}
	st.Pending = &PendingDecision{Kind: DecisionNetworkChange, Allowed: []string{UpdateConfirmNetworkChange}, Since: detailsAt,
		Reason: "all jobs in scope are stopped with savepoints; confirm the network change is done (flinkmaint window confirm-network-change)"}
	want := "**Window** `wk-49` · **phase** `network-gate`\n\n" +
		"| jobs | total | pending | running | done | skipped | failed |\n|---|--:|--:|--:|--:|--:|--:|\n" +
		"| savepoint | 3 | 0 | 0 | 3 | 0 | 0 |\n" +
		"| restart | 3 | 3 | 0 | 0 | 0 | 0 |\n\n" +
		"1 job(s) in scope left alone (no restart recipe, not running, ...): `flinkmaint window status wk-49` says why.\n\n" +
		"### Waiting for a decision: `network-change`\n\n" +
		"Since 2026-12-01T09:30:00Z. all jobs in scope are stopped with savepoints; confirm the network change is done (flinkmaint window confirm-network-change)\n\n" +
		"Answer with one of:\n\n```sh\n" +
		"flinkmaint window confirm-network-change wk-49 --reason TEXT\n" +
		"flinkmaint window abort wk-49 --reason TEXT\n" +
		"```\n\n" +
		"The CLI records who answers from `FLINKMAINT_OPERATOR`, else the login name.\n\n" +
		"Manifest: `hdfs://nn/flinkmaint/windows/wk-49/manifest.json`\n"
	got := windowDetails(&in, &st)
	if got != want {
		t.Fatalf("details:\n%s\nwant:\n%s", got, want)
	}
	if again := windowDetails(&in, &st); again != got {
		t.Fatalf("details changed between two renderings of one state:\n%s\n%s", got, again)
	}
}

// A wave with failed restarts: the counts per step, the wave, one command
// per allowed action and failed job (a job name with a space quoted for
// the shell), and no more than maxDetailItems jobs however many failed.
func TestWindowDetailsRestartFailures(t *testing.T) {
	keys := []string{"cluster-a/Orders Job"}
	for i := range 12 {
		keys = append(keys, fmt.Sprintf("cluster-b/job-%02d", i))
	}
	keys = append(keys, "cluster-c/canary", "cluster-c/late", "cluster-c/gone")
	in, st := detailsWindow(WindowPhaseRestart, keys...)
	st.Waves, st.Wave = 3, 1
	failed := keys[:13]
	for i := range st.Jobs {
		j := &st.Jobs[i]
		switch {
		case j.Target.Key == "cluster-c/canary":
			j.RestartWave, j.RestartState = 0, StepDone
		case j.Target.Key == "cluster-c/late":
			j.RestartWave, j.RestartState = 2, StepPending
		case j.Target.Key == "cluster-c/gone":
			j.SavepointState, j.RestartState, j.SkipReason = StepFailed, StepSkipped, "operator skipped it"
		default:
			j.RestartWave, j.RestartState, j.RestartError = 1, StepFailed, "job failed on restore | see Flink"
		}
	}
	st.Pending = &PendingDecision{Kind: DecisionRestartFailures, Jobs: failed, Since: detailsAt,
		Allowed: []string{ActionRetryJob, ActionSkipJob, ActionResume, ActionAbort},
		Reason:  "wave 1: 13 job(s) did not become healthy (budget 0): cluster-a/Orders Job: job failed on restore | see *Flink*"}
	got := windowDetails(&in, &st)
	for _, want := range []string{
		"**phase** `restart`",
		"| savepoint | 16 | 0 | 0 | 15 | 0 | 1 |\n",
		"| restart | 16 | 1 | 0 | 1 | 1 | 13 |\n",
		"**Restart waves**: 3 (wave 0 is the canary wave). Now wave 1: 13 job(s), 0 healthy, 0 restarting, 13 failed.",
		"### Waiting for a decision: `restart-failures`",
		`see \*Flink\*`, // the reason's markup is text
		"Jobs: `cluster-a/Orders Job`, `cluster-b/job-00`,",
		" and 3 more\n",
		"flinkmaint window decide wk-49 --action retry-job --job 'cluster-a/Orders Job' --reason TEXT\n",
		"flinkmaint window decide wk-49 --action skip-job --job cluster-b/job-08 --reason TEXT\n",
		"flinkmaint window decide wk-49 --action resume --reason TEXT\n",
		"flinkmaint window decide wk-49 --action abort --reason TEXT\n",
		"flinkmaint window status wk-49   # lists all 13 jobs\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("details lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "job-09") || strings.Count(got, "--action retry-job") != maxDetailItems {
		t.Errorf("details name more than %d of the failed jobs:\n%s", maxDetailItems, got)
	}
	if strings.Contains(got, "confirm-network-change") {
		t.Errorf("details offer the network confirmation for a restart decision:\n%s", got)
	}
}

// A paused window says how to resume; one with neither pause nor decision
// offers no command; the canary, network, cleanup and proof lines follow
// the state.
func TestWindowDetailsPauseAndProgress(t *testing.T) {
	in, st := detailsWindow(WindowPhaseCleanup, "cluster-a/orders", "cluster-a/payments")
	in.Policy.Drill.ProveSavepoints = true
	st.Jobs[0].ProofState, st.Jobs[1].ProofState = StepDone, ProofWaived
	st.Jobs[0].RestartState, st.Jobs[1].RestartState = StepDone, StepDone
	st.Jobs[1].RestartWave = 1
	st.Paused, st.PausedBy = true, "alice"
	st.Canary = &CanaryDrill{Key: "cluster-a/orders", Attempts: 1, Outcome: catalog.DrillPassed}
	st.Network = &NetworkConfirmation{By: "bob", At: detailsAt, Reminders: 2}
	st.Cleanup = &WindowCleanup{WorkflowID: WindowCleanupWorkflowID("wk-49"), Mode: ModePlanAndApprove}
	got := windowDetails(&in, &st)
	for _, want := range []string{
		"**Paused** by alice", "flinkmaint window resume wk-49\n",
		"| restart | 2 | 0 | 0 | 2 | 0 | 0 |",
		"**Storage proof** of the savepoints: 1 passed, 0 failed, 1 waived, 0 to prove.",
		"**Restart waves**: 2 (wave 0 is the canary wave).",
		"**Canary drill** of `cluster-a/orders`: passed (attempt 1).",
		"**Network change** confirmed by bob at 2026-12-01T09:30:00Z, after 2 reminder(s).",
		"**Cleanup**: governance `window-wk-49/cleanup` (plan-and-approve)",
		"flinkmaint governance approve window-wk-49/cleanup --plan-sha256 SHA --reason TEXT\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("details lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Waiting for a decision") || strings.Contains(got, "window decide") {
		t.Errorf("details show a decision none is pending for:\n%s", got)
	}
	st.Paused = false
	st.Cleanup.Outcome, st.Cleanup.PlannedItems, st.Cleanup.ReclaimedFiles, st.Cleanup.ReclaimedBytes = GovernancePhaseCompleted, 4, 30, 3<<20
	if got := windowDetails(&in, &st); strings.Contains(got, "resume") || !strings.Contains(got, "completed: 4 item(s) planned, 30 file(s) and 3.0 MiB reclaimed") {
		t.Errorf("details after the pause and the cleanup:\n%s", got)
	}
}

// A governance run waiting for approval: the plan's figures and the
// commands naming the run the way the CLI finds it.
func TestGovernanceDetailsAwaitingApproval(t *testing.T) {
	st := GovernanceState{RunID: "nightly-1a2b3c4d", Mode: ModePlanAndApprove, Phase: GovernancePhaseAwaitingApproval, StartedAt: detailsAt,
		ApprovalDeadline: detailsAt.Add(24 * time.Hour),
		Plan: &governance.PlanSummary{PlanPath: "hdfs://nn/plans/nightly/plan.json", PlanSHA256: "5f1e0c3a", Action: CleanupActionTrash,
			Items: 12, Files: 40, Dirs: 5, Bytes: 1536, KeptItems: 30, LiveJobs: 4,
			ScopeTenants: []inventory.Tenant{{Name: "team-a"}, {Name: "team-b"}}}}
	got := governanceDetails("governance-nightly", &st)
	for _, want := range []string{
		"**Governance** `nightly-1a2b3c4d` (plan-and-approve) · **phase** `awaiting-approval`",
		"| planned (trash) | 12 | 40 | 5 | 1.5 KiB |\n",
		"| kept | 30 | | | |\n",
		"Tenants: team-a, team-b; 4 live job(s) read for references.",
		"### Waiting for approval",
		"Until 2026-12-02T09:30:00Z",
		"flinkmaint governance approve nightly --plan-sha256 5f1e0c3a --reason TEXT\n",
		"flinkmaint governance reject nightly --reason TEXT\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("details lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "| applied") {
		t.Errorf("details show an execution that did not happen:\n%s", got)
	}
	for id, name := range map[string]string{
		"governance-nightly":              "nightly",
		"window-wk-49/cleanup":            "window-wk-49/cleanup",
		"flinkmaint-nightly-2026-12-01T0": "flinkmaint-nightly-2026-12-01T0",
		"governance-governance-x":         "governance-governance-x",
		"governance-a b":                  "'a b'",
	} {
		if got := governanceCommandName(id); got != name {
			t.Errorf("governanceCommandName(%q) = %q, want %q", id, got, name)
		}
	}

	st.Approval = &ApprovalRecord{Approved: true, By: "alice", Reason: "reviewed", At: detailsAt}
	st.Phase = GovernancePhaseCompleted
	st.FinishedAt = detailsAt.Add(time.Hour)
	st.Execution = &governance.ExecuteCleanupResult{Items: 12, Files: 40, Dirs: 5, Bytes: 1536}
	got = governanceDetails("governance-nightly", &st)
	for _, want := range []string{"| applied | 12 | 40 | 5 | 1.5 KiB |\n", "**Plan approved** by alice at 2026-12-01T09:30:00Z: reviewed", "finished 2026-12-01T10:30:00Z"} {
		if !strings.Contains(got, want) {
			t.Errorf("details after execution lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "governance approve") {
		t.Errorf("details still ask for approval:\n%s", got)
	}
}

func TestDrillDetailsCountSnapshots(t *testing.T) {
	rep := RestoreDrillReport{RunID: "drill-nightly", Tier: 2, StartedAt: detailsAt, Tenants: []string{"team-a"}, Running: 1,
		Skipped: []core.SkippedJob{{Key: "c/x"}},
		Jobs: []JobDrillResult{
			{Key: "c/job-0", Snapshot: "hdfs://nn/ck/j0/chk-5", Outcome: catalog.DrillPassed},
			{Key: "c/job-1", Snapshot: "hdfs://nn/ck/j1/chk-5", Outcome: catalog.DrillFailed, Error: "missing hdfs://nn/ck/j1/shared/x"},
			{Key: "c/job-2", Snapshot: "hdfs://nn/ck/j2/chk-7", Outcome: catalog.DrillInconclusive, Error: "subsumed"},
			{Key: "c/job-3", Snapshot: "hdfs://nn/ck/j3/chk-9"},
			{Key: "c/job-4", Snapshot: "hdfs://nn/ck/j4/chk-9"},
		}}
	got := drillDetails(&rep)
	for _, want := range []string{
		"**Restore drill** `drill-nightly` (tier 2) · **phase** `drilling`",
		"| | 5 | 1 | 1 | 1 | 1 | 1 |\n",
		"Tenants: team-a. 1 job(s) without a snapshot to drill.",
		"| `c/job-1` | `chk-5` | failed | missing hdfs://nn/ck/j1/shared/x |\n",
		"| `c/job-2` | `chk-7` | inconclusive | subsumed |\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("details lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "c/job-0") {
		t.Errorf("details list a passed snapshot as a failure:\n%s", got)
	}
	if got := drillDetails(&RestoreDrillReport{RunID: "d", Tier: 1}); !strings.Contains(got, "`selecting snapshots`") {
		t.Errorf("details before selection:\n%s", got)
	}
}

func TestUpgradeDetails(t *testing.T) {
	in := upgradeInput("--version", "2")
	in.ApplyDefaults()
	st := UpgradeState{UpgradeID: in.UpgradeID, Phase: UpgradePhaseStart, Mode: UpgradeModeStop, StartedAt: detailsAt,
		Job:       core.JobTarget{Key: in.Job, JobID: "aaaa0000aaaa0000aaaa0000aaaa0000"},
		Savepoint: "hdfs://nn/sp/savepoint-1", NewJobID: "bbbb1111bbbb1111bbbb1111bbbb1111", StartAttempts: 2,
		GateError: "Cannot map checkpoint/savepoint state for operator fcfb2cd74328d289a0b17a4030f9cfdc to the new program",
		Unmatched: []string{"fcfb2cd74328d289a0b17a4030f9cfdc"}}
	got := upgradeDetails(&in, &st)
	for _, want := range []string{
		"**Upgrade** `orders-v2` of `cluster-a/orders` (mode stop) · **phase** `start`",
		"| old job | `aaaa0000aaaa0000aaaa0000aaaa0000` |\n",
		"| savepoint | `hdfs://nn/sp/savepoint-1` |\n",
		"| new job | `bbbb1111bbbb1111bbbb1111bbbb1111` (start attempt 2) |\n",
		"| unmatched state | fcfb2cd74328d289a0b17a4030f9cfdc |\n",
		"flinkmaint upgrade rollback orders-v2 --reason TEXT\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("details lack %q:\n%s", want, got)
		}
	}
	st.Pending = &PendingDecision{Kind: DecisionUnmatchedState, Since: detailsAt, Reason: "the new version cannot restore the state of operator(s) fcfb2cd74328d289a0b17a4030f9cfdc",
		Allowed: []string{ActionAllowNonRestoredState, ActionRollback}}
	got = upgradeDetails(&in, &st)
	for _, want := range []string{
		"### Waiting for a decision: `unmatched-state`",
		"flinkmaint upgrade decide orders-v2 --action allow-non-restored-state --reason TEXT\n",
		"flinkmaint upgrade decide orders-v2 --action rollback --reason TEXT\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("details with a decision lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "upgrade rollback orders-v2") {
		t.Errorf("details offer the rollback update beside a decision that answers it:\n%s", got)
	}
}

// Summaries say what a run or child does in one line that the server
// accepts (at most 400 bytes), however long the input.
func TestSummaries(t *testing.T) {
	many := make([]string, 40)
	for i := range many {
		many[i] = fmt.Sprintf("tenant-with-a-long-name-%02d", i)
	}
	for name, tc := range map[string]struct {
		got, want string
	}{
		"window": {StartSummary(WindowInput{WindowID: "wk-49", Reason: "dc\nnetwork change", Scope: core.Scope{Tenants: []string{"team-a", "team-b"}}}),
			"window wk-49: all jobs in team-a, team-b — dc network change"},
		"window jobs": {StartSummary(WindowInput{WindowID: "w", Reason: "r", Scope: core.Scope{Clusters: []string{"cluster-a"}, IncludeJobs: []string{"orders-*"}, ExcludeJobs: []string{"orders-test"}}}),
			"window w: jobs orders-* except orders-test in every tenant on cluster-a — r"},
		"governance": {StartSummary(GovernanceInput{Mode: ModePlanAndApprove, Scope: core.Scope{Tenants: []string{"team-a"}}}),
			"governance of team-a (plan-and-approve)"},
		"governance default mode": {StartSummary(GovernanceInput{Reason: "nightly"}), "governance of every tenant (plan) — nightly"},
		"drill": {StartSummary(RestoreDrillInput{Tier: 1, Schedule: "nightly", Selection: drills.DrillSelection{Mode: drills.DrillRunSavepoints, RunID: "window-wk-49"}}),
			"restore drill (tier 1): savepoints of run window-wk-49 (schedule nightly)"},
		"drill snapshot": {StartSummary(RestoreDrillInput{Selection: drills.DrillSelection{Mode: drills.DrillSnapshot, Job: "c/orders", Snapshot: "hdfs://nn/sp/savepoint-1a/"}}),
			"restore drill (tier 2): c/orders from savepoint-1a"},
		"upgrade": {StartSummary(UpgradeInput{UpgradeID: "orders-v2", Job: "cluster-a/orders", Reason: "schema v2"}), "upgrade orders-v2: cluster-a/orders to a new version (mode stop) — schema v2"},
		"savepoints": {StartSummary(ScheduledSavepointsInput{Schedule: "six-hourly", Scope: core.Scope{Tenants: []string{"team-a"}}}),
			"savepoints of all jobs in team-a, jobs keep running (schedule six-hourly)"},
		"quota":   {StartSummary(QuotaWatchInput{Iterations: 1}), "quota check of every tenant"},
		"usage":   {StartSummary(capacity.TenantUsageInput{Tenants: []string{"team-a"}}), "storage usage of team-a"},
		"adopt":   {StartSummary(SavepointCatalogInput{Adopt: &governance.AdoptSavepointsInput{Job: "c/orders", Paths: []string{"a", "b"}}}), "adopt 2 savepoint(s) into c/orders"},
		"ping":    {StartSummary(PingInput{Message: "hello"}), "ping: hello"},
		"unknown": {StartSummary(42), ""},
		"savepoint child": {savepointChildSummary("cluster-a/orders", "window wk-49", 2),
			"stop cluster-a/orders with savepoint (window wk-49, attempt 2)"},
		"restart child": {restartChildSummary("restart", "cluster-a/orders", "window wk-49, "+waveText(0), 1),
			"restart cluster-a/orders from savepoint (window wk-49, canary wave)"},
		"drill child": {drillChildSummary("canary ", "cluster-a/orders", "hdfs://nn/sp/savepoint-1a", 2, "window wk-49"),
			"canary restore drill of cluster-a/orders savepoint-1a (tier 2, window wk-49)"},
		"cleanup child": {governanceSummary(GovernanceInput{Mode: ModePlanAndApprove, Scope: core.Scope{Tenants: []string{"team-a", "team-b"}},
			Reason: "post-restart cleanup of maintenance window wk-49"}),
			"governance of team-a, team-b (plan-and-approve) — post-restart cleanup of maintenance window wk-49"},
		"many tenants": {StartSummary(GovernanceInput{Mode: ModeAuto, Scope: core.Scope{Tenants: many}}),
			"governance of tenant-with-a-long-name-00, tenant-with-a-long-name-01, tenant-with-a-long-name-02, tenant-with-a-long-name-03 and 36 more (auto)"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", name, tc.got, tc.want)
		}
	}
	long := StartSummary(WindowInput{WindowID: "w", Reason: strings.Repeat("ü", 500)})
	if len(long) > maxSummaryBytes || !utf8.ValidString(long) || !strings.HasSuffix(long, "…") {
		t.Errorf("long summary: %d bytes, valid UTF-8 %v: %q", len(long), utf8.ValidString(long), long)
	}
}

func TestMarkdownAndShellText(t *testing.T) {
	if got := mdText("a|b *c* _d_ <script>\n[x](y) `z`"); got != `a\|b \*c\* \_d\_ \<script\> \[x\](y) \`+"`z\\`" {
		t.Errorf("mdText: %q", got)
	}
	for in, want := range map[string]string{"cluster-a/orders": "cluster-a/orders", "a b": "'a b'", "it's": `'it'\''s'`, "": "''"} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %q, want %q", in, got, want)
		}
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 3 << 20: "3.0 MiB", 5 << 40: "5.0 TiB"} {
		if got := bytesText(n); got != want {
			t.Errorf("bytesText(%d) = %q, want %q", n, got, want)
		}
	}
}

// queryWorkflowMetadata is the SDK's built-in query the Web UI reads a
// run's current details with.
const queryWorkflowMetadata = "__temporal_workflow_metadata"

// currentDetails reads what the UI reads: the workflow metadata query.
func currentDetails(t *testing.T, env *testsuite.TestWorkflowEnvironment) string {
	t.Helper()
	v, err := env.QueryWorkflow(queryWorkflowMetadata)
	if err != nil {
		t.Fatal(err)
	}
	var md sdkpb.WorkflowMetadata
	if err := v.Get(&md); err != nil {
		t.Fatal(err)
	}
	return md.GetCurrentDetails()
}

// The running window keeps its details current: waiting for the network
// change, they show the decision and its command; once confirmed and
// finished, the last phase and no decision.
func TestWindowSetsItsCurrentDetails(t *testing.T) {
	f := newWindowFixture(t, 3)
	later(t, f.env, func() {
		got := currentDetails(t, f.env)
		for _, want := range []string{"**phase** `network-gate`", "| savepoint | 3 | 0 | 0 | 3 | 0 | 0 |", "flinkmaint window confirm-network-change w1 --reason TEXT"} {
			if !strings.Contains(got, want) {
				t.Errorf("details at 1m lack %q:\n%s", want, got)
			}
		}
		f.update(UpdateConfirmNetworkChange, ConfirmNetworkChangeRequest{By: "alice", Reason: "done"}, false)
	}, time.Minute)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, windowInput())
	f.result()
	got := currentDetails(t, f.env)
	for _, want := range []string{"**phase** `completed`", "| restart | 3 | 0 | 0 | 3 | 0 | 0 |", "**Network change** confirmed by alice"} {
		if !strings.Contains(got, want) {
			t.Errorf("details at the end lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Waiting for a decision") {
		t.Errorf("details at the end still show a decision:\n%s", got)
	}
}

func TestGovernanceSetsItsCurrentDetails(t *testing.T) {
	f := newGovFixture(t)
	f.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: GovernanceWorkflowID("nightly")})
	later(t, f.env, func() {
		got := currentDetails(t, f.env)
		if !strings.Contains(got, "flinkmaint governance approve nightly --plan-sha256 "+testPlanSHA+" --reason TEXT") || !strings.Contains(got, "| planned (trash) | 3 | 30 |") {
			t.Errorf("details while waiting for approval:\n%s", got)
		}
		f.update(UpdateApprove, ApproveRequest{By: "alice", PlanSHA256: testPlanSHA}, true, "", nil)
	}, time.Minute)
	f.env.ExecuteWorkflow(GovernanceWorkflow, GovernanceInput{RunID: "g2", Mode: ModePlanAndApprove})
	f.report()
	if got := currentDetails(t, f.env); !strings.Contains(got, "**phase** `completed`") || !strings.Contains(got, "| applied | 3 | 30 |") {
		t.Errorf("details at the end:\n%s", got)
	}
}

func TestUpgradeSetsItsCurrentDetails(t *testing.T) {
	f := newUpgradeFixture(t)
	later(t, f.env, func() {
		got := currentDetails(t, f.env)
		if !strings.Contains(got, "flinkmaint upgrade decide orders-v2 --action allow-non-restored-state --reason TEXT") {
			t.Errorf("details while the unmatched state waits for a decision:\n%s", got)
		}
		f.update(UpdateDecide, DecideRequest{Action: ActionAllowNonRestoredState, By: "op", Reason: "obsolete"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, upgradeInput("--version", "2", "--state-uid", "v2"))
	if err := f.env.GetWorkflowError(); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if got := currentDetails(t, f.env); !strings.Contains(got, "**phase** `committed`") || strings.Contains(got, "Waiting for a decision") {
		t.Errorf("details at the end:\n%s", got)
	}
}

func TestRestoreDrillSetsItsCurrentDetails(t *testing.T) {
	env := newDrillTestEnv()
	var a *drills.Activities
	targets := drillTargets(3)
	env.OnActivity(a.SelectDrillTargets, mockAny, mockAny).Return(drills.SelectDrillTargetsResult{Targets: targets, Tenants: []string{"team-a", "team-b"}}, nil)
	env.OnActivity(a.ProveSnapshotStorage, mockAny, drills.ProveSnapshotInput{Snapshot: targets[2].Snapshot}).
		Return(drills.StorageProof{Files: 4}, nil).After(time.Hour)
	env.OnActivity(a.ProveSnapshotStorage, mockAny, mockAny).Return(drills.StorageProof{Files: 4}, nil)
	env.OnActivity(a.RecordDrillRun, mockAny, mockAny).Return(nil)
	later(t, env, func() {
		if got := currentDetails(t, env); !strings.Contains(got, "**phase** `drilling`") || !strings.Contains(got, "| | 3 | 0 | 1 | 2 | 0 | 0 |") {
			t.Errorf("details while one snapshot is drilled:\n%s", got)
		}
	}, 30*time.Minute)
	env.ExecuteWorkflow(RestoreDrillWorkflow, RestoreDrillInput{Tier: 1, Concurrency: 3})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if got := currentDetails(t, env); !strings.Contains(got, "**phase** `finished`") || !strings.Contains(got, "| | 3 | 0 | 0 | 3 | 0 | 0 |") {
		t.Errorf("details at the end:\n%s", got)
	}
}

// childSummaries records the static summary of every child a workflow
// starts, as the options it starts them with say.
type childSummaries struct {
	interceptor.WorkerInterceptorBase
	mu  sync.Mutex
	got map[string]string // child workflow ID -> summary
}

func watchChildSummaries(env *testsuite.TestWorkflowEnvironment) *childSummaries {
	c := &childSummaries{got: map[string]string{}}
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{c}})
	return c
}

func (c *childSummaries) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &childSummariesInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, c: c}
}

func (c *childSummaries) summaries() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	for k, v := range c.got {
		out[k] = v
	}
	return out
}

type childSummariesInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	c *childSummaries
}

func (i *childSummariesInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&childSummariesOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, c: i.c})
}

type childSummariesOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	c *childSummaries
}

func (o *childSummariesOutbound) ExecuteChildWorkflow(ctx workflow.Context, childType string, args ...interface{}) workflow.ChildWorkflowFuture {
	opts := workflow.GetChildWorkflowOptions(ctx)
	o.c.mu.Lock()
	o.c.got[opts.WorkflowID] = opts.StaticSummary
	o.c.mu.Unlock()
	return o.Next.ExecuteChildWorkflow(ctx, childType, args...)
}

// checkSummaries wants a summary on every child and the given ones exactly.
func checkSummaries(t *testing.T, got map[string]string, want map[string]string) {
	t.Helper()
	for id, s := range got {
		if s == "" {
			t.Errorf("child %s started without a summary", id)
		}
	}
	for id, s := range want {
		if got[id] != s {
			t.Errorf("child %s: summary %q, want %q (children: %v)", id, got[id], s, got)
		}
	}
}

// Every child a window starts says what it does: the savepoints, the
// restarts by wave, the canary drill and the post-restart cleanup.
func TestWindowChildrenCarryASummary(t *testing.T) {
	f := newWindowFixture(t, 4)
	children := watchChildSummaries(f.env)
	later(t, f.env, func() {
		f.update(UpdateConfirmNetworkChange, ConfirmNetworkChangeRequest{By: "alice", Reason: "done"}, false)
	}, time.Minute)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, windowInput())
	f.result()
	got := children.summaries()
	if len(got) != 4+4+1 {
		t.Errorf("children %v; want 4 savepoints, 4 restarts and the cleanup", got)
	}
	checkSummaries(t, got, map[string]string{
		JobSavepointWorkflowID("w1", "cluster-a/job-a", 1): "stop cluster-a/job-a with savepoint (window w1)",
		JobRestartWorkflowID("w1", "cluster-a/job-a", 1):   "restart cluster-a/job-a from savepoint (window w1, canary wave)",
		JobRestartWorkflowID("w1", "cluster-b/job-b", 1):   "restart cluster-b/job-b from savepoint (window w1, wave 1)",
		WindowCleanupWorkflowID("w1"):                      "governance of team-a, team-b (plan-and-approve) — post-restart cleanup of maintenance window w1",
	})
}

func TestUpgradeChildrenCarryASummary(t *testing.T) {
	f := newUpgradeFixture(t)
	children := watchChildSummaries(f.env)
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, upgradeInput("--version", "2"))
	if err := f.env.GetWorkflowError(); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	checkSummaries(t, children.summaries(), map[string]string{
		"upgrade-orders-v2/savepoint": "stop cluster-a/orders with savepoint (upgrade orders-v2)",
		"upgrade-orders-v2/start":     "start the new version of cluster-a/orders from savepoint (upgrade orders-v2)",
	})
}

func TestRestoreDrillChildrenCarryASummary(t *testing.T) {
	env := newDrillTestEnv()
	children := watchChildSummaries(env)
	var a *drills.Activities
	targets := drillTargets(2)
	env.OnActivity(a.SelectDrillTargets, mockAny, mockAny).Return(drills.SelectDrillTargetsResult{Targets: targets}, nil)
	env.OnActivity(a.ProveSnapshotStorage, mockAny, mockAny).Return(drills.StorageProof{Files: 4}, nil)
	env.OnActivity(a.RecordDrillRun, mockAny, mockAny).Return(nil)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "drill-nightly"})
	env.ExecuteWorkflow(RestoreDrillWorkflow, RestoreDrillInput{Tier: 1})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	checkSummaries(t, children.summaries(), map[string]string{
		JobDrillWorkflowID("drill-nightly", "c/job-1", 1): "restore drill of c/job-1 chk-5 (tier 1)",
	})
}

func TestWindowCanaryDrillCarriesASummary(t *testing.T) {
	f := newDrillFixture(t, 2, "cluster-b/job-b")
	children := watchChildSummaries(f.env)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, canaryInput())
	f.result()
	checkSummaries(t, children.summaries(), map[string]string{
		WindowCanaryDrillWorkflowID("w1", 1): "canary restore drill of cluster-b/job-b savepoint-job-b (tier 2, window w1)",
	})
}
