package oncall

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flinkmaint/flinkmaint/internal/metrics"
	"github.com/flinkmaint/flinkmaint/internal/notify"
)

// pendingSince is what reg exports as pending since, per run.
func pendingSince(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "flinkmaint_decision_pending_since_timestamp_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			out[labels["kind"]+"/"+labels["run"]+"/"+labels["decision"]] = m.GetGauge().GetValue()
		}
	}
	return out
}

// A worker without notification sinks still exports the decisions runs
// wait on: since when, from the reminder's number, and gone once answered.
func TestNotifyExportsPendingDecisions(t *testing.T) {
	reg := prometheus.NewRegistry()
	gov, err := metrics.NewGovernance(reg)
	if err != nil {
		t.Fatal(err)
	}
	a := &Activities{Metrics: gov}
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	ev := notify.Event{Kind: notify.KindDecisionPending, Workflow: "window", Run: "wk49", Decision: "savepoint-failures",
		Reminder: 2, RepeatEvery: 30 * time.Minute, At: start.Add(time.Hour)}
	notice := func(ev notify.Event) {
		t.Helper()
		if _, err := a.Notify(context.Background(), NotifyInput{Event: ev}); err != nil {
			t.Fatal(err)
		}
	}
	notice(ev)
	notice(notify.Event{Kind: notify.KindPhase, Workflow: "window", Run: "wk50", At: ev.At}) // no decision
	got := pendingSince(t, reg)
	if len(got) != 1 || got["window/wk49/savepoint-failures"] != float64(start.Unix()) {
		t.Errorf("pending %v, want window/wk49/savepoint-failures since %d", got, start.Unix())
	}

	ev.Resolved, ev.Reminder, ev.At = true, 0, ev.At.Add(time.Minute)
	notice(ev)
	if got := pendingSince(t, reg); len(got) != 0 {
		t.Errorf("pending %v after the answer, want none", got)
	}
}
