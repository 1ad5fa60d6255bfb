package main

import (
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// Schedules start their runs with the summary the Web UI shows.
func TestScheduleActionsCarryASummary(t *testing.T) {
	for name, act := range map[string]scheduleAction{
		"governance":  &governanceSchedule{workflow: scheduleGovernance, gov: govFlags{mode: workflows.ModeAuto, action: workflows.CleanupActionTrash, tenants: []string{"team-a"}}},
		"quota watch": &governanceSchedule{workflow: scheduleQuotaWatch, gov: govFlags{tenants: []string{"team-a"}}},
		"savepoints":  &savepointSchedule{concurrency: 4, format: workflows.FormatCanonical, timeout: time.Hour, scope: core.Scope{Tenants: []string{"team-a"}}},
		"drill":       &drillFlags{tier: 1, concurrency: 2, soak: time.Second, running: time.Minute, checkpoint: time.Minute},
	} {
		spec := scheduleSpec{every: time.Hour}
		_, wf, err := spec.build("nightly", "q", act)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := workflows.StartSummary(wf.Args[0]); wf.StaticSummary == "" || wf.StaticSummary != want {
			t.Errorf("%s: schedule action summary %q, want %q", name, wf.StaticSummary, want)
		}
	}
}

// A window's post-restart cleanup is named by its workflow ID, which the
// governance commands take as it is.
func TestGovernanceIDOfAWindowCleanup(t *testing.T) {
	for arg, want := range map[string]string{
		"nightly":            "governance-nightly",
		"governance-nightly": "governance-nightly",
		"flinkmaint-nightly-2026-12-01T03:00:00Z":  "flinkmaint-nightly-2026-12-01T03:00:00Z",
		workflows.WindowCleanupWorkflowID("wk-49"): "window-wk-49/cleanup",
		"window-wk-49": "governance-window-wk-49",
	} {
		if got := governanceID(arg); got != want {
			t.Errorf("governanceID(%q) = %q, want %q", arg, got, want)
		}
	}
}
