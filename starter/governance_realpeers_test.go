//go:build realpeers

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/spf13/cobra"

	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// TestScheduleCommandsOnDevServer drives `governance schedule` against a
// real dev server: create, list, trigger (a run starts), update, delete.
func TestScheduleCommandsOnDevServer(t *testing.T) {
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	w := worker.New(tmp.Client, "cli-schedule-test", worker.Options{})
	app.Register(w, &app.Ports{Identity: "cli-schedule-test"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	env := map[string]string{"TEMPORAL_ADDRESS": tmp.HostPort, "FLINKMAINT_TASK_QUEUE": "cli-schedule-test"}
	mustRun := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := runCLI(args, env)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		return stdout
	}
	out := mustRun("governance", "schedule", "create", "nightly", "--every", "24h", "--mode", "auto", "--tenant", "team-a")
	if !strings.Contains(out, "flinkmaint-nightly created: Governance every 24h0m0s") {
		t.Fatalf("create: %s", out)
	}
	if code, _, stderr := runCLI([]string{"governance", "schedule", "create", "nightly", "--every", "24h"}, env); code != exitFailure || !strings.Contains(stderr, "already exists") {
		t.Fatalf("second create: exit %d %s", code, stderr)
	}
	mustRun("governance", "schedule", "trigger", "nightly")
	var rows []scheduleRow
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if err := json.Unmarshal([]byte(mustRun("governance", "schedule", "list", "-o", "json")), &rows); err != nil {
			t.Fatal(err)
		}
		if len(rows) == 1 && len(rows[0].RecentRuns) == 1 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if len(rows) != 1 || rows[0].Workflow != workflows.GovernanceWorkflowType || len(rows[0].RecentRuns) != 1 || !strings.HasPrefix(rows[0].RecentRuns[0], "flinkmaint-nightly-") {
		t.Fatalf("list after trigger: %+v", rows)
	}
	// The run exists; this worker has no inventory, so it fails, and says why.
	st := mustRun("governance", "status", rows[0].RecentRuns[0])
	if !strings.Contains(st, "mode     auto") {
		t.Errorf("status of the scheduled run:\n%s", st)
	}
	// governance list finds it by status once visibility has it, and a
	// filter it does not match leaves it out.
	scheduled := rows[0].RecentRuns[0]
	listed := func(args ...string) []runRow {
		t.Helper()
		var runs []runRow
		if err := json.Unmarshal([]byte(mustRun(append([]string{"governance", "list", "-o", "json"}, args...)...)), &runs); err != nil {
			t.Fatal(err)
		}
		return runs
	}
	peertest.WaitFor(t, context.Background(), 30*time.Second, "the failed scheduled run listed", func() (bool, string) {
		runs := listed("--status", "failed")
		return len(runs) == 1 && runs[0].WorkflowID == scheduled && runs[0].Status == "failed", fmt.Sprintf("%+v", runs)
	})
	// The shell completes run and schedule names from Temporal.
	complete := func(args ...string) string {
		t.Helper()
		return mustRun(append([]string{cobra.ShellCompRequestCmd}, args...)...)
	}
	if out := complete("governance", "status", "flinkmaint-nightly-"); !strings.Contains(out, scheduled+"\n") {
		t.Errorf("completion of governance status: %q; want %s", out, scheduled)
	}
	if out := complete("governance", "schedule", "describe", ""); !strings.Contains(out, "nightly\n") {
		t.Errorf("completion of governance schedule describe: %q; want nightly", out)
	}
	if out := complete("savepoints", "schedule", "describe", ""); strings.Contains(out, "nightly") {
		t.Errorf("completion of savepoints schedule describe offers the governance schedule: %q", out)
	}
	// --watch on a run that has ended shows its status once and says so.
	if out := mustRun("governance", "status", scheduled, "--watch", "--interval", "1s"); strings.Count(out, "mode     auto") != 1 || !strings.Contains(out, "the run has ended: Failed") {
		t.Errorf("status --watch of the ended run:\n%s", out)
	}
	for _, filter := range [][]string{{"--status", "running"}, {"--pending"}, {"--tenant", "no-such-tenant"}} {
		if runs := listed(filter...); len(runs) != 0 {
			t.Errorf("governance list %v: %+v; want none", filter, runs)
		}
	}
	// An update changes only the flags given, keeps the schedule's state
	// unless --paused is given, and a command of another kind refuses it.
	describe := func() scheduleDescription {
		t.Helper()
		var d scheduleDescription
		if err := json.Unmarshal([]byte(mustRun("governance", "schedule", "describe", "nightly", "-o", "json")), &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	hasFlag := func(d scheduleDescription, name, value string) bool {
		return slices.Contains(d.Flags, [2]string{name, value})
	}
	mustRun("governance", "schedule", "pause", "nightly", "--note", "holiday")
	mustRun("governance", "schedule", "update", "nightly", "--cron", "0 3 * * *", "--time-zone", "Europe/Berlin")
	if d := describe(); !d.Paused || d.Spec != "cron 0 3 * * * (Europe/Berlin)" || !hasFlag(d, "mode", "auto") || !hasFlag(d, "tenant", "team-a") || hasFlag(d, "every", "24h0m0s") {
		t.Fatalf("after pause and update of the cron: %+v; want paused, the cron in Berlin time, mode auto and tenant team-a kept, no interval", d)
	}
	mustRun("governance", "schedule", "unpause", "nightly")
	mustRun("governance", "schedule", "update", "nightly", "--every", "7d", "--keep-savepoints", "5")
	if d := describe(); d.Paused || d.Spec != "168h0m0s" || !hasFlag(d, "mode", "auto") || !hasFlag(d, "keep-savepoints", "5") || hasFlag(d, "cron", "0 3 * * *") {
		t.Fatalf("after unpause and update to every 7d: %+v", d)
	}
	for _, other := range [][]string{
		{"savepoints", "schedule", "update", "nightly", "--every", "1h"},
		{"drill", "schedule", "delete", "nightly"},
		{"savepoints", "schedule", "trigger", "nightly"},
	} {
		if code, _, stderr := runCLI(other, env); code != exitUsage || !strings.Contains(stderr, `schedule nightly starts "Governance"`) {
			t.Fatalf("%v: exit %d %s; want it refused, naming the schedule's kind", other, code, stderr)
		}
	}
	if d := describe(); d.Workflow != workflows.GovernanceWorkflowType || d.Spec != "168h0m0s" {
		t.Fatalf("after the refused commands: %+v", d)
	}
	out = mustRun("governance", "schedule", "update", "nightly", "--workflow", "quota-watch", "--cron", "0 3 * * *")
	if !strings.Contains(out, "QuotaWatch every cron 0 3 * * *") {
		t.Fatalf("update: %s", out)
	}
	mustRun("governance", "schedule", "delete", "nightly")

	// Savepoint schedules share the name space and the list.
	out = mustRun("savepoints", "schedule", "create", "six-hourly", "--every", "6h", "--tenant", "team-a", "--concurrency", "8", "--format", "native")
	if !strings.Contains(out, "flinkmaint-six-hourly created: ScheduledSavepoints every 6h0m0s") {
		t.Fatalf("savepoints schedule create: %s", out)
	}
	if code, _, stderr := runCLI([]string{"savepoints", "schedule", "create", "six-hourly", "--every", "6h"}, env); code != exitFailure ||
		!strings.Contains(stderr, "use `flinkmaint savepoints schedule update six-hourly`") {
		t.Fatalf("second savepoints schedule create: exit %d %s", code, stderr)
	}
	if err := json.Unmarshal([]byte(mustRun("savepoints", "schedule", "list", "-o", "json")), &rows); err != nil || len(rows) != 1 ||
		rows[0].Workflow != workflows.ScheduledSavepointsWorkflowType {
		t.Fatalf("savepoints schedule list: %+v %v", rows, err)
	}
	mustRun("savepoints", "schedule", "delete", "six-hourly")
	if err := json.Unmarshal([]byte(mustRun("governance", "schedule", "list", "-o", "json")), &rows); err != nil || len(rows) != 0 {
		t.Fatalf("list after delete: %+v %v", rows, err)
	}
	if code, _, stderr := runCLI([]string{"governance", "schedule", "delete", "nightly"}, env); code != exitFailure || !strings.Contains(stderr, "no schedule named nightly") {
		t.Fatalf("delete missing: exit %d %s", code, stderr)
	}
}

// TestStartRefusesAReusedNameOnDevServer: names of windows, drills and
// governance runs are never reused; a second start says so instead of
// handing back the first run as if it had started. Each run carries the
// summary the Web UI shows.
func TestStartRefusesAReusedNameOnDevServer(t *testing.T) {
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	env := map[string]string{"TEMPORAL_ADDRESS": tmp.HostPort, "FLINKMAINT_TASK_QUEUE": "cli-reuse-test"}
	window := filepath.Join(t.TempDir(), "window.yaml")
	if err := os.WriteFile(window, []byte("windowId: reused\nreason: test\npolicy:\n  manifestDir: hdfs://nn:8020/w\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args        []string
		id, summary string
	}{
		{[]string{"window", "start", "-f", window}, "window-reused", "window reused: all jobs in every tenant — test"},
		{[]string{"drill", "start", "--name", "reused", "--tier", "1"}, "drill-reused", "restore drill (tier 1): latest checkpoints of all jobs in every tenant"},
		{[]string{"governance", "run", "--name", "reused", "--reason", "test"}, "governance-reused", "governance of every tenant (plan-and-approve) — test"},
	} {
		args := tc.args
		if code, _, stderr := runCLI(args, env); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		if code, _, stderr := runCLI(args, env); code == exitOK || !strings.Contains(stderr, "already started once") {
			t.Errorf("%v again: exit %d, %s; want refused as already started", args, code, stderr)
		}
		// The Web UI shows what the run is about.
		desc, err := tmp.Client.DescribeWorkflow(context.Background(), tc.id, "")
		if err != nil {
			t.Fatal(err)
		}
		if summary, err := desc.GetStaticSummary(); err != nil || summary != tc.summary {
			t.Errorf("%s: summary %q (%v), want %q", tc.id, summary, err, tc.summary)
		}
	}
}

// TestOverrideFreezeIsRecordedOnDevServer: --override-freeze with its
// reason reaches the workflow's input, where the freeze check reads it
// and the report records who overrode the freeze and why.
func TestOverrideFreezeIsRecordedOnDevServer(t *testing.T) {
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	env := map[string]string{"TEMPORAL_ADDRESS": tmp.HostPort, "FLINKMAINT_TASK_QUEUE": "cli-freeze-test"}
	t.Setenv("FLINKMAINT_OPERATOR", "carol")
	window := filepath.Join(t.TempDir(), "window.yaml")
	if err := os.WriteFile(window, []byte("windowId: frozen\nreason: test\npolicy:\n  manifestDir: hdfs://nn:8020/w\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const why = "restore test agreed with the business"
	for _, tc := range []struct {
		args []string
		id   string
	}{
		{[]string{"window", "start", "-f", window}, "window-frozen"},
		{[]string{"drill", "start", "--name", "frozen", "--tier", "1"}, "drill-frozen"},
		{[]string{"governance", "run", "--name", "frozen", "--reason", "test"}, "governance-frozen"},
	} {
		args := append(tc.args, "--override-freeze", "--reason", why)
		if tc.args[0] == "governance" {
			args = append(tc.args[:len(tc.args)-2], "--override-freeze", "--reason", why)
		}
		if code, _, stderr := runCLI(args, env); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		it := tmp.Client.GetWorkflowHistory(context.Background(), tc.id, "", false, 0)
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		payloads := ev.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()
		if len(payloads) != 1 {
			t.Fatalf("%s: %d input payloads", tc.id, len(payloads))
		}
		var in struct {
			OverrideFreeze *workflows.FreezeOverride `json:"overrideFreeze"`
		}
		if err := json.Unmarshal(payloads[0].GetData(), &in); err != nil {
			t.Fatal(err)
		}
		if o := in.OverrideFreeze; o == nil || o.By != "carol" || o.Reason != why {
			t.Errorf("%s: overrideFreeze %+v; want carol's, with the reason", tc.id, o)
		}
	}
}
