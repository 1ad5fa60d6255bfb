package metrics

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// gathered renders what reg gathers of the decision metrics, one
// "name{kind,decision,run} value" per series, sorted.
func gathered(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "flinkmaint_decision_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			var l []string
			for _, lp := range m.GetLabel() {
				l = append(l, lp.GetName()+"="+lp.GetValue())
			}
			out = append(out, fmt.Sprintf("%s{%s} %g", strings.TrimPrefix(mf.GetName(), "flinkmaint_decision_"), strings.Join(l, ","), m.GetGauge().GetValue()))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func TestDecisionsFollowTheNewestNotice(t *testing.T) {
	reg := prometheus.NewRegistry()
	g, err := NewGovernance(reg)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_000_000, 0)
	now := t0
	g.Decisions.now = func() time.Time { return now }
	every := 30 * time.Minute
	want := func(step, w string) {
		t.Helper()
		if got := gathered(t, reg); got != strings.TrimSpace(w) {
			t.Errorf("%s:\ngot\n%s\nwant\n%s", step, got, strings.TrimSpace(w))
		}
	}

	g.DecisionNotified("window", "savepoint-failures", "wk49", t0, t0, false, every)
	g.DecisionNotified("governance", "approval", "nightly", t0, t0, false, every)
	want("first notices", `
notice_timestamp_seconds{decision=approval,kind=governance,run=nightly} 1e+06
notice_timestamp_seconds{decision=savepoint-failures,kind=window,run=wk49} 1e+06
pending_since_timestamp_seconds{decision=approval,kind=governance,run=nightly} 1e+06
pending_since_timestamp_seconds{decision=savepoint-failures,kind=window,run=wk49} 1e+06`)

	// The window's answer, then its reminder delivered late: the answer
	// stays. The governance run's reminder at 30m.
	now = t0.Add(40 * time.Minute)
	g.DecisionNotified("window", "savepoint-failures", "wk49", t0.Add(35*time.Minute), t0.Add(35*time.Minute), true, every)
	g.DecisionNotified("window", "savepoint-failures", "wk49", t0, t0.Add(30*time.Minute), false, every)
	g.DecisionNotified("governance", "approval", "nightly", t0, t0.Add(30*time.Minute), false, every)
	want("answered, reminded", `
notice_timestamp_seconds{decision=approval,kind=governance,run=nightly} 1.0018e+06
notice_timestamp_seconds{decision=savepoint-failures,kind=window,run=wk49} 1.0021e+06
pending_since_timestamp_seconds{decision=approval,kind=governance,run=nightly} 1e+06`)

	// Nothing heard for twice the reminder interval: both dropped (the
	// governance run ended without an answer, or another replica took its
	// reminders). A decision without reminders is kept an hour.
	g.DecisionNotified("upgrade", "unmatched-state", "orders-v2", now, now, false, 0)
	now = t0.Add(96 * time.Minute)
	want("expired", `
notice_timestamp_seconds{decision=unmatched-state,kind=upgrade,run=orders-v2} 1.0024e+06
pending_since_timestamp_seconds{decision=unmatched-state,kind=upgrade,run=orders-v2} 1.0024e+06`)
	now = t0.Add(101 * time.Minute)
	want("all expired", ``)

	// The same decision asked again later in the run waits anew.
	g.DecisionNotified("window", "savepoint-failures", "wk49", now, now, false, every)
	want("asked again", `
notice_timestamp_seconds{decision=savepoint-failures,kind=window,run=wk49} 1.00606e+06
pending_since_timestamp_seconds{decision=savepoint-failures,kind=window,run=wk49} 1.00606e+06`)
}

func TestSucceededForStampsEachTenant(t *testing.T) {
	reg := prometheus.NewRegistry()
	g, err := NewGovernance(reg)
	if err != nil {
		t.Fatal(err)
	}
	g.SucceededFor("plan", []string{"team-a", "team-b"}, time.Unix(100, 0))
	g.SucceededFor("plan", []string{"team-a"}, time.Unix(200, 0))
	for tenant, want := range map[string]float64{"team-a": 200, "team-b": 100} {
		if got := testutil.ToFloat64(g.TenantLastSuccess.WithLabelValues("plan", tenant)); got != want {
			t.Errorf("tenant %s: %g, want %g", tenant, got, want)
		}
	}
}
