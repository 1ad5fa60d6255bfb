package workflows

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/internal/catalog"
)

// A compatible rehearsal runs before anything stops: a savepoint of the
// running job, the new version started from it on the drill cluster with
// its sinks sandboxed, gated, cleaned up and recorded; then the upgrade.
func TestUpgradeRehearsesTheNewVersionBeforeStopping(t *testing.T) {
	f := newUpgradeFixture(t)
	f.rehearse = "compatible"
	in := upgradeInput("--version", "2", "--sink", "kafka")
	in.Rehearsal.ProgramArgs = []string{"--version", "2", "--sink", "print"}
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, in)
	if err := f.env.GetWorkflowError(); err != nil {
		t.Fatalf("upgrade failed: %v", err)
	}
	var st UpgradeState
	if err := f.env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	if st.Phase != UpgradePhaseCommitted || st.Rehearsal == nil || st.Rehearsal.Verdict != catalog.RehearsalCompatible {
		t.Fatalf("phase %s rehearsal %+v; want committed after a compatible rehearsal", st.Phase, st.Rehearsal)
	}
	if len(f.drillStarts) != 1 {
		t.Fatalf("drill starts %+v; want one copy", f.drillStarts)
	}
	d := f.drillStarts[0]
	want := "savepoint " + previousJobID + " | drill hdfs://nn/sp/savepoint-orders | gate " + d.JobID + " | end drill | gate "
	if got := strings.Join(f.calls, " | "); !strings.HasPrefix(got, want) || f.stops != 1 {
		t.Errorf("calls %s (stops %d); want the rehearsal (%s) before the one stop", got, f.stops, want)
	}
	if len(f.prepared) != 1 || f.prepared[0].NewRecipe == nil || f.prepared[0].NewRecipe.Jar != "/jars/orders-v2.jar" || f.prepared[0].N != 1 {
		t.Errorf("prepared %+v; want the new recipe rehearsed once", f.prepared)
	}
	if d.Target.Snapshot != "hdfs://nn/sp/savepoint-orders" || strings.Join(d.Target.Recipe.ProgramArgs, " ") != "--version 2 --sink discard" {
		t.Errorf("drill started %+v recipe %+v; want the new version, sandboxed, from the rehearsal savepoint", d.Target, d.Target.Recipe)
	}
	if len(f.drillEnds) != 1 || f.drillEnds[0].DrillDir != d.Target.DrillDir || len(f.drillEnds[0].JobIDs) != 2 || f.drillEnds[0].JobIDs[0] != d.JobID {
		t.Errorf("drill ends %+v; want the copy %s and its dir removed", f.drillEnds, d.JobID)
	}
	if len(f.rehearsalSaved) != 1 || f.rehearsalSaved[0].Verdict != catalog.RehearsalCompatible || f.rehearsalSaved[0].Snapshot != d.Target.Snapshot {
		t.Errorf("recorded %+v; want the verdict beside the savepoint", f.rehearsalSaved)
	}
}

// An incompatible new version pauses the upgrade before anything stops,
// naming Flink's cause; abort changes nothing.
func TestUpgradeStopsNothingWhenTheRehearsalFindsItIncompatible(t *testing.T) {
	f := newUpgradeFixture(t)
	f.rehearse = "unmatched"
	seen := false
	later(t, f.env, func() {
		st := f.status()
		if st.Pending == nil || st.Pending.Kind != DecisionRehearsal || !strings.Contains(st.Pending.Reason, "fcfb2cd74328d289a0b17a4030f9cfdc") ||
			!strings.Contains(st.Pending.Reason, "Nothing has been stopped") || st.Phase != UpgradePhaseRehearse {
			t.Errorf("phase %s pending %+v; want a rehearsal decision naming the unmatched operator", st.Phase, st.Pending)
			return
		}
		seen = true
		sendRefused(t, f.env, UpdateDecide, DecideRequest{Action: ActionRollback, By: "op"}, "accepts abort, retry, resume")
		f.update(UpdateDecide, DecideRequest{Action: ActionAbort, By: "op", Reason: "fix the uid"}, false)
	}, time.Minute)
	in := upgradeInput("--version", "2", "--state-uid", "v2")
	in.Rehearsal.ProgramArgs = []string{"--state-uid", "v2"}
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, in)
	var appErr *temporal.ApplicationError
	if err := f.env.GetWorkflowError(); !errors.As(err, &appErr) || !strings.Contains(err.Error(), "nothing changed") {
		t.Fatalf("upgrade ended with %v; want aborted, nothing changed", err)
	}
	if !seen || f.stops != 0 || len(f.started) != 0 || len(f.manifests) == 0 {
		t.Fatalf("seen %v stops %d started %d; want a pause and no stop, no start", seen, f.stops, len(f.started))
	}
	if len(f.drillEnds) != 1 || len(f.rehearsalSaved) != 1 || f.rehearsalSaved[0].Verdict != catalog.RehearsalIncompatible ||
		!strings.Contains(f.rehearsalSaved[0].Cause, "fcfb2cd74328d289a0b17a4030f9cfdc") {
		t.Errorf("drill ends %+v records %+v; want the copy cleaned up and the incompatible verdict recorded with its cause", f.drillEnds, f.rehearsalSaved)
	}
}

// Retry rehearses again from a new savepoint; resume goes on knowingly,
// and the note says who decided.
func TestUpgradeRehearsalRetryThenResume(t *testing.T) {
	f := newUpgradeFixture(t)
	f.rehearse = "unmatched"
	answers := []DecideRequest{{Action: ActionRetry, By: "op"}, {Action: ActionResume, By: "lead", Reason: "the state of that operator is obsolete"}}
	for i, ans := range answers {
		later(t, f.env, func() {
			if st := f.status(); st.Pending == nil || st.Pending.Kind != DecisionRehearsal {
				t.Errorf("answer %d: pending %+v; want the rehearsal decision", i, st.Pending)
				return
			}
			f.update(UpdateDecide, ans, false)
		}, time.Duration(i+1)*time.Hour)
	}
	in := upgradeInput("--version", "2")
	in.Rehearsal.ProgramArgs = []string{"--version", "2"}
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, in)
	if len(f.prepared) != 2 || f.prepared[1].N != 2 || len(f.drillStarts) != 2 || f.drillStarts[0].JobID == f.drillStarts[1].JobID {
		t.Fatalf("prepared %+v drill starts %+v; want a second rehearsal with a copy of its own", f.prepared, f.drillStarts)
	}
	var st UpgradeState
	_ = f.env.GetWorkflowResult(&st)
	if f.stops != 1 || !strings.Contains(strings.Join(st.Notes, "\n"), "upgraded despite the rehearsal") || !strings.Contains(strings.Join(st.Notes, "\n"), "lead") {
		t.Errorf("stops %d notes %q; want the upgrade to go on, noting who decided", f.stops, st.Notes)
	}
}

// Without a drill cluster, mode auto notes why and upgrades; mode always
// asks first. No slots on the drill cluster is inconclusive, not a verdict.
func TestUpgradeRehearsalModes(t *testing.T) {
	f := newUpgradeFixture(t)
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, upgradeInput("--version", "2"))
	var st UpgradeState
	if err := f.env.GetWorkflowResult(&st); err != nil || st.Phase != UpgradePhaseCommitted ||
		!strings.Contains(strings.Join(st.Notes, "\n"), "not rehearsed: no drill cluster is configured") {
		t.Fatalf("auto without a drill cluster: %v phase %s notes %q; want committed with a note", err, st.Phase, st.Notes)
	}

	for _, tc := range []struct{ rehearse, mode, want string }{
		{"", RehearseAlways, "not rehearsed: no drill cluster"},
		{"no-slots", RehearseAuto, "inconclusive on Flink 1.20.3: the drill cluster had no free slots"},
		{"unreachable", RehearseAuto, "inconclusive: the rehearsal could not be prepared: reach drill cluster http://drill: connection refused"},
	} {
		f := newUpgradeFixture(t)
		f.rehearse = tc.rehearse
		asked := ""
		later(t, f.env, func() {
			if st := f.status(); st.Pending != nil {
				asked = st.Pending.Reason
			}
			f.update(UpdateDecide, DecideRequest{Action: ActionAbort, By: "op"}, false)
		}, time.Minute)
		in := upgradeInput("--version", "2")
		in.Rehearsal.Mode, in.Rehearsal.ProgramArgs = tc.mode, []string{"--version", "2"}
		f.env.ExecuteWorkflow(JobUpgradeWorkflow, in)
		if !strings.Contains(asked, tc.want) || f.stops != 0 {
			t.Errorf("%s/%s: asked %q, stops %d; want a decision saying %q and no stop", tc.rehearse, tc.mode, asked, f.stops, tc.want)
		}
	}

	f = newUpgradeFixture(t)
	in := upgradeInput("--version", "2")
	in.Rehearsal.Mode = RehearseNever
	f.env.ExecuteWorkflow(JobUpgradeWorkflow, in)
	if len(f.prepared) != 0 || f.stops != 1 {
		t.Errorf("never: prepared %d stops %d; want no rehearsal", len(f.prepared), f.stops)
	}
}

// `upgrade check` rehearses and ends: nothing stopped, no manifest, no
// tenant lock, a run ID apart from the upgrade's; a verdict other than
// compatible fails the check with it.
func TestUpgradeCheckOnlyRehearses(t *testing.T) {
	for _, tc := range []struct {
		rehearse, flinkVersion string
		wantErr                string
	}{
		{"compatible", "2.3", ""},
		{"unmatched", "", "incompatible on Flink 1.20.3: Flink cannot map the state of operator fcfb2cd74328d289a0b17a4030f9cfdc"},
		{"", "", "not rehearsed: no drill cluster"},
	} {
		f := newUpgradeFixture(t)
		f.rehearse = tc.rehearse
		f.frozen = true // a check stops nothing: a freeze does not hold it
		in := upgradeInput("--version", "1")
		in.CheckOnly, in.ManifestDir, in.Rehearsal.FlinkVersion = true, "", tc.flinkVersion
		f.env.ExecuteWorkflow(JobUpgradeWorkflow, in)
		err := f.env.GetWorkflowError()
		var appErr *temporal.ApplicationError
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: check failed: %v", tc.rehearse, err)
		case tc.wantErr != "" && (!errors.As(err, &appErr) || appErr.Type() != ErrTypeUpgradeCheckFailed || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: check ended with %v; want %s saying %q", tc.rehearse, err, ErrTypeUpgradeCheckFailed, tc.wantErr)
		}
		if f.stops != 0 || len(f.started) != 0 || len(f.manifests) != 0 {
			t.Errorf("%s: stops %d starts %d manifests %d; a check changes nothing", tc.rehearse, f.stops, len(f.started), len(f.manifests))
		}
		if len(f.prepared) != 1 || f.prepared[0].RunID != UpgradeCheckWorkflowID("orders-v2") || f.prepared[0].FlinkVersion != tc.flinkVersion {
			t.Errorf("%s: prepared %+v; want one rehearsal of run %s into %q", tc.rehearse, f.prepared, UpgradeCheckWorkflowID("orders-v2"), tc.flinkVersion)
		}
	}
}

func TestUpgradeRehearsalInputErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*UpgradeInput)
		want string
	}{
		"unknown mode":                {func(in *UpgradeInput) { in.Rehearsal.Mode = "sometimes" }, `rehearsal.mode="sometimes"`},
		"flink version on an upgrade": {func(in *UpgradeInput) { in.Rehearsal.FlinkVersion = "2.3" }, "use `upgrade check --flink-version`"},
		"bad flink version":           {func(in *UpgradeInput) { in.CheckOnly, in.Rehearsal.FlinkVersion = true, "2.3.0" }, `rehearsal.flinkVersion="2.3.0": use major.minor`},
		"check that never rehearses":  {func(in *UpgradeInput) { in.CheckOnly, in.Rehearsal.Mode = true, RehearseNever }, "a check is its rehearsal"},
	} {
		in := upgradeInput("--version", "2")
		tc.edit(&in)
		in.ApplyDefaults()
		if err := in.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", name, err, tc.want)
		}
	}
	in := upgradeInput("--version", "2")
	in.CheckOnly, in.ManifestDir = true, ""
	in.ApplyDefaults()
	if err := in.Validate(); err != nil {
		t.Errorf("a check needs no manifest dir: %v", err)
	}
}
