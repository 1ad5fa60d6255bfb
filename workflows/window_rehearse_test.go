package workflows

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/upgrades"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
)

// rehearseFixture adds a fake JobRehearsal child to a window fixture:
// verdicts says a job's verdicts in turn (compatible once they run out);
// stoppedAt is how many jobs had been stopped when each rehearsal ran.
type rehearseFixture struct {
	*windowFixture
	verdicts   map[string][]string
	rehearsals []JobRehearsalInput
	stoppedAt  []int
}

func newRehearseFixture(t *testing.T, n int) *rehearseFixture {
	f := &rehearseFixture{windowFixture: newWindowFixture(t, n), verdicts: map[string][]string{}}
	for i := range f.jobs {
		f.jobs[i].Drillable, f.jobs[i].DrillBuilds = true, []string{"2.2", "2.3"}
	}
	f.env.OnWorkflow(JobRehearsalWorkflowType, mock.Anything, mock.Anything).Return(func(_ workflow.Context, in JobRehearsalInput) (RehearsalResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.rehearsals = append(f.rehearsals, in)
		f.stoppedAt = append(f.stoppedAt, len(f.stopped))
		res := RehearsalResult{Key: in.Job.Key, Verdict: catalog.RehearsalCompatible, Savepoint: "hdfs://nn/sp/rehearsal-" + in.Job.JobName, FlinkVersion: "2.3.0"}
		if v := f.verdicts[in.Job.Key]; len(v) > 0 {
			res.Verdict, f.verdicts[in.Job.Key] = v[0], v[1:]
		}
		switch res.Verdict {
		case catalog.RehearsalIncompatible:
			res.Cause = &upgrades.RehearsalCause{Kind: upgrades.CauseSerializer, Text: "a state's serializer is incompatible with what the snapshot holds: StateMigrationException"}
		case catalog.RehearsalNotRehearsed:
			res.Savepoint, res.Why = "", "the drill recipe of "+in.Job.JobName+" has no build for Flink 2.3 (drill.flinkVersions)"
		}
		return res, nil
	})
	return f
}

func rehearseInput() WindowInput {
	in := windowInput()
	in.Policy.Network.Skip = true
	in.Policy.Rehearse.FlinkVersion = "2.3"
	return in
}

// Every job is rehearsed into the target version before any is stopped;
// compatible jobs go through the window as usual.
func TestWindowRehearsesEveryJobBeforeStoppingAny(t *testing.T) {
	f := newRehearseFixture(t, 4)
	f.verdicts["cluster-a/job-c"] = []string{catalog.RehearsalNotRehearsed}
	f.jobs[3].DrillBuilds = []string{"2.2"} // job-d has no build for 2.3
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, rehearseInput())
	rep := f.result()
	if len(f.rehearsals) != 3 || slices.ContainsFunc(f.rehearsals, func(in JobRehearsalInput) bool { return in.Job.Key == "cluster-b/job-d" }) {
		t.Fatalf("rehearsals %+v; want one per job with a build for 2.3", f.rehearsals)
	}
	for i, in := range f.rehearsals {
		if f.stoppedAt[i] != 0 || in.FlinkVersion != "2.3" || in.NewRecipe != nil || in.RunID != "window-w1" || in.N != 1 || in.Health.Soak == 0 || in.Format != FormatCanonical {
			t.Errorf("rehearsal %d: %+v with %d jobs stopped; want the 2.3 build rehearsed, run window-w1, before any stop", i, in, f.stoppedAt[i])
		}
	}
	for _, j := range rep.Jobs {
		if f.stopped[j.Target.Key] != 1 || j.RestartState != StepDone {
			t.Errorf("%s stopped %d times, restart %s; want every job through once (a job not rehearsed is reported, not held back)", j.Target.Key, f.stopped[j.Target.Key], j.RestartState)
		}
	}
	md := rep.Markdown()
	for _, want := range []string{"## Rehearsal", "| cluster-a/job-a | compatible | `hdfs://nn/sp/rehearsal-job-a` |",
		"| cluster-a/job-c | not-rehearsed |  | the drill recipe of job-c has no build for Flink 2.3", "| cluster-b/job-d | not-rehearsed |  | no build for Flink 2.3 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if !strings.Contains(strings.Join(phaseNames(rep), " "), "preflight rehearse savepoint-all") {
		t.Errorf("phases %v; want rehearse between preflight and savepoint-all", phaseNames(rep))
	}
}

func phaseNames(rep *WindowReport) []string {
	var out []string
	for _, p := range rep.Phases {
		out = append(out, p.Phase)
	}
	return out
}

// An incompatible job pauses the window before anything stops; retry-job
// rehearses it again, skip-job leaves it out, running, and the rest go on.
func TestWindowPausesOnAnIncompatibleRehearsalAndLeavesTheJobOut(t *testing.T) {
	f := newRehearseFixture(t, 3)
	f.verdicts["cluster-b/job-b"] = []string{catalog.RehearsalIncompatible, catalog.RehearsalIncompatible}
	answers := []DecideRequest{{Action: ActionRetryJob, Job: "cluster-b/job-b", By: "op"}, {Action: ActionSkipJob, Job: "cluster-b/job-b", By: "op", Reason: "keeps 1.20"}}
	for i, ans := range answers {
		later(t, f.env, func() {
			st := f.status()
			if st.Pending == nil || st.Pending.Kind != DecisionRehearsal || len(st.Pending.Jobs) != 1 || st.Pending.Jobs[0] != "cluster-b/job-b" ||
				!strings.Contains(st.Pending.Reason, "StateMigrationException") || len(f.stopped) != 0 {
				t.Errorf("answer %d: pending %+v with %d jobs stopped; want the rehearsal decision about job-b before any stop", i, st.Pending, len(f.stopped))
				return
			}
			if i == 0 {
				sendRefused(t, f.env, UpdateDecide, DecideRequest{Action: ActionSkipJob, Job: "cluster-a/job-a", By: "op"}, "not one the decision is about")
			}
			f.update(UpdateDecide, ans, false)
		}, time.Duration(i+1)*time.Hour)
	}
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, rehearseInput())
	rep := f.result()
	var again []int
	for _, in := range f.rehearsals {
		if in.Job.Key == "cluster-b/job-b" {
			again = append(again, in.N)
		}
	}
	if len(again) != 2 || again[1] != 2 {
		t.Errorf("job-b rehearsed as %v; want a second attempt after retry-job", again)
	}
	for _, j := range rep.Jobs {
		want := 1
		if j.Target.Key == "cluster-b/job-b" {
			want = 0
			if j.RestartState != StepSkipped || !strings.Contains(j.SkipReason, "keeps running, untouched") || j.Rehearsal != catalog.RehearsalIncompatible {
				t.Errorf("job-b %+v; want left out after its rehearsal, still running", j)
			}
		}
		if f.stopped[j.Target.Key] != want {
			t.Errorf("%s stopped %d times; want %d", j.Target.Key, f.stopped[j.Target.Key], want)
		}
	}
}

// resume goes on with the failed jobs, knowingly; abort stops nothing.
func TestWindowRehearsalResumeAndAbort(t *testing.T) {
	f := newRehearseFixture(t, 2)
	f.verdicts["cluster-a/job-a"] = []string{catalog.RehearsalInconclusive}
	later(t, f.env, func() {
		f.update(UpdateDecide, DecideRequest{Action: ActionResume, By: "lead", Reason: "known serializer change"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, rehearseInput())
	rep := f.result()
	if f.stopped["cluster-a/job-a"] != 1 || !rep.Jobs[0].RehearsalWaived || !strings.Contains(strings.Join(rep.Notes, "\n"), "lead goes on with 1 job(s)") ||
		!strings.Contains(rep.Markdown(), "inconclusive (went on knowingly)") {
		t.Errorf("stops %v notes %q job %+v; want job-a stopped and restarted, the waiver noted", f.stopped, rep.Notes, rep.Jobs[0])
	}

	f = newRehearseFixture(t, 2)
	f.verdicts["cluster-b/job-b"] = []string{catalog.RehearsalIncompatible}
	later(t, f.env, func() {
		f.update(UpdateDecide, DecideRequest{Action: ActionAbort, By: "lead", Reason: "fix job-b first"}, false)
	}, time.Hour)
	f.env.ExecuteWorkflow(MaintenanceWindowWorkflow, rehearseInput())
	var rep2 WindowReport
	_ = f.env.GetWorkflowResult(&rep2)
	if len(f.stopped) != 0 || rep2.Phase != WindowPhaseAborted {
		t.Errorf("abort: phase %s, stops %v; want aborted with nothing stopped", rep2.Phase, f.stopped)
	}
}

func TestWindowRehearsePolicyErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*RehearsePolicy)
		want string
	}{
		"not major.minor":          {func(p *RehearsePolicy) { p.FlinkVersion = "2.3.0" }, `policy.rehearse.flinkVersion="2.3.0"`},
		"concurrency too high":     {func(p *RehearsePolicy) { p.FlinkVersion, p.Concurrency = "2.3", 100 }, "policy.rehearse.concurrency=100"},
		"fields without a version": {func(p *RehearsePolicy) { p.Soak = Duration(time.Minute) }, "policy.rehearse: set flinkVersion"},
	} {
		in := windowInput()
		tc.edit(&in.Policy.Rehearse)
		in.Policy.ApplyDefaults()
		if err := in.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", name, err, tc.want)
		}
	}
	in := rehearseInput()
	in.Policy.ApplyDefaults()
	if p := in.Policy.Rehearse; p.Concurrency != 2 || p.Soak != in.Policy.Restart.Soak || in.Validate() != nil {
		t.Errorf("defaults %+v (%v); want concurrency 2 and the restart's health", p, in.Validate())
	}
}

func TestWindowPlanSaysWhatWouldBeRehearsed(t *testing.T) {
	p := RehearsePolicy{FlinkVersion: "2.3"}
	for _, tc := range []struct {
		job  core.JobTarget
		want string
	}{
		{core.JobTarget{Drillable: true, DrillBuilds: []string{"2.2", "2.3"}}, "rehearsed on Flink 2.3"},
		{core.JobTarget{Drillable: true, DrillBuilds: []string{"2.2"}}, "not rehearsed: no build for Flink 2.3"},
		{core.JobTarget{}, "not rehearsed: no drill recipe"},
	} {
		if got := planRehearsal(p, tc.job); got != tc.want {
			t.Errorf("%+v: %q; want %q", tc.job, got, tc.want)
		}
	}
	if got := planRehearsal(RehearsePolicy{}, core.JobTarget{Drillable: true}); got != "" {
		t.Errorf("without policy.rehearse: %q; want nothing", got)
	}
}
