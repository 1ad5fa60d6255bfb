package workflows

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/oncall"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/notify"
)

// quotaSeries fakes SampleQuota: team-a grows by growth files per sample
// (one sample per hour of workflow time), team-b stays flat.
type quotaSeries struct {
	n      int
	start  time.Time
	growth int64
	used   int64
	limit  int64
	saved  map[string]string
	events []notify.Event
}

func (q *quotaSeries) sample(_ context.Context, in capacity.SampleQuotaInput) (capacity.SampleQuotaResult, error) {
	at := q.start.Add(time.Duration(q.n) * time.Hour)
	used := q.used + int64(q.n)*q.growth
	q.n++
	level := func(u, l int64) string {
		p := 100 * float64(u) / float64(l)
		switch {
		case p >= in.CriticalPercent:
			return "critical"
		case p >= in.WarningPercent:
			return "warning"
		}
		return "ok"
	}
	a := capacity.TenantQuota{Tenant: "team-a", Root: "hdfs://nn/a", NamespaceUsed: used, NamespaceQuota: q.limit, SpaceQuota: -1,
		Percent: 100 * float64(used) / float64(q.limit), Level: level(used, q.limit)}
	if a.Level != "ok" {
		a.Reason = "hdfs://nn/a: namespace " + a.Level
	}
	return capacity.SampleQuotaResult{At: at, Tenants: []capacity.TenantQuota{
		a,
		{Tenant: "team-b", Root: "hdfs://nn/b", NamespaceUsed: 100, NamespaceQuota: 1000, SpaceQuota: -1, Percent: 10, Level: "ok"},
	}}, nil
}

func newQuotaEnv(t *testing.T, q *quotaSeries) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *windows.Activities
	var capa *capacity.Activities
	var onc *oncall.Activities
	env.OnActivity(capa.SampleQuota, mockAny, mockAny).Return(q.sample)
	env.OnActivity(a.WriteDocument, mockAny, mockAny).Return(func(_ context.Context, in core.WriteDocumentInput) (core.WriteDocumentResult, error) {
		q.saved[in.Path] = string(in.Content)
		return core.WriteDocumentResult{Path: in.Path}, nil
	})
	env.OnActivity(onc.Notify, mockAny, mockAny).Return(func(_ context.Context, in oncall.NotifyInput) (oncall.NotifyResult, error) {
		q.events = append(q.events, in.Event)
		return oncall.NotifyResult{}, nil
	})
	env.OnActivity(capa.LoadQuotaSamples, mockAny, mockAny).Return(capacity.LoadQuotaSamplesResult{Found: true, Doc: capacity.QuotaSamplesDoc{
		Tenants: []capacity.TenantSeries{{Tenant: "team-b", Samples: []capacity.QuotaSample{{At: q.start.Add(-time.Hour), Namespace: 100}}}},
	}}, nil)
	return env
}

func watchResult(t *testing.T, env *testsuite.TestWorkflowEnvironment) QuotaWatchState {
	t.Helper()
	if !env.IsWorkflowCompleted() {
		t.Fatal("quota watch did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var st QuotaWatchState
	if err := env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestQuotaWatchAlertsAboveWatermark: team-a climbs 50 files per hour from
// 700 of 1000; the watch turns warning at 800 and critical at 900, and the
// forecast says when 1000 is reached.
func TestQuotaWatchAlertsAboveWatermark(t *testing.T) {
	q := &quotaSeries{start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), growth: 50, used: 700, limit: 1000, saved: map[string]string{}}
	env := newQuotaEnv(t, q)
	levels := map[int]string{}
	for i := 0; i < 5; i++ {
		i := i
		// Sample i is taken at i hours; look just after it.
		later(t, env, func() {
			v, err := env.QueryWorkflow(QueryStatus)
			if err != nil {
				t.Error(err)
				return
			}
			var st QuotaWatchState
			if err := v.Get(&st); err != nil {
				t.Error(err)
				return
			}
			levels[i] = st.Level
		}, time.Duration(i)*time.Hour+time.Minute)
	}
	env.ExecuteWorkflow(QuotaWatchWorkflow, QuotaWatchInput{Interval: Duration(time.Hour), Iterations: 6, AlertDaysToFull: -1, MaxSamples: 4})
	st := watchResult(t, env)
	want := map[int]string{0: "ok", 1: "ok", 2: "warning", 3: "warning", 4: "critical"}
	for i, l := range want {
		if levels[i] != l {
			t.Errorf("after sample %d (used %d): level %q, want %q", i, 700+50*i, levels[i], l)
		}
	}
	if !st.Alerting || st.Level != "critical" || st.SamplesTaken != 6 {
		t.Fatalf("final state %+v", st)
	}
	a := st.Tenants[0]
	if a.Tenant != "team-a" || len(a.Samples) != 4 || a.Samples[0].Namespace != 800 {
		t.Fatalf("team-a ring %+v; want the newest 4 samples", a.Samples)
	}
	f := a.NamespaceForecast
	// 950 now, +50/h = 1200/day: full in 50 files = 1/24 day.
	if f == nil || !f.Growing || math.Abs(f.PerDay-1200) > 1e-6 || math.Abs(f.DaysToFull-1.0/24) > 1e-6 {
		t.Fatalf("forecast %+v; want 1200/day, full in 1/24 day", f)
	}
	if !strings.Contains(a.AlertReason, "critical") || a.AlertSince.IsZero() {
		t.Errorf("alert reason %q since %v", a.AlertReason, a.AlertSince)
	}
	if b := st.Tenants[1]; b.Level != "ok" || b.NamespaceForecast == nil || b.NamespaceForecast.Growing {
		t.Errorf("team-b %+v; want ok and flat", b)
	}
	// Warning at 800 (a first notice, then a repeat that keeps the alert
	// firing), critical at 900 (a new first notice) and its repeat.
	var got []string
	for _, e := range q.events {
		got = append(got, fmt.Sprintf("%s %s %s r%d", e.Kind, strings.Join(e.Tenants, ","), e.Severity, e.Reminder))
	}
	want2 := "quota-watermark team-a warning r0 | quota-watermark team-a warning r1 | quota-watermark team-a critical r0 | quota-watermark team-a critical r1"
	if strings.Join(got, " | ") != want2 {
		t.Errorf("notifications %s; want %s", strings.Join(got, " | "), want2)
	}
}

// TestQuotaWatchForecastAlert: below every watermark, but growing fast
// enough to fill within alertDaysToFull, which is a warning.
func TestQuotaWatchForecastAlert(t *testing.T) {
	q := &quotaSeries{start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), growth: 20, used: 100, limit: 10000, saved: map[string]string{}}
	env := newQuotaEnv(t, q)
	env.ExecuteWorkflow(QuotaWatchWorkflow, QuotaWatchInput{Interval: Duration(time.Hour), Iterations: 3, SamplesPath: "hdfs://nn/watch/samples.json"})
	st := watchResult(t, env)
	a := st.Tenants[0]
	// 140 of 10000 at +480/day: about 20.5 days, above the default 7.
	if a.Level != "ok" || a.NamespaceForecast == nil || math.Abs(a.NamespaceForecast.DaysToFull-(10000-140)/480.0) > 1e-6 {
		t.Fatalf("team-a %+v forecast %+v", a, a.NamespaceForecast)
	}
	// The series loaded from storage continues: team-b has its old sample.
	if b := st.Tenants[1]; len(b.Samples) != 4 {
		t.Fatalf("team-b samples %+v; want the loaded one plus 3", b.Samples)
	}
	if doc := q.saved["hdfs://nn/watch/samples.json"]; !strings.Contains(doc, `"tenant":"team-b"`) {
		t.Fatalf("samples document not saved: %s", doc)
	}

	q2 := &quotaSeries{start: q.start, growth: 20, used: 100, limit: 10000, saved: map[string]string{}}
	env = newQuotaEnv(t, q2)
	env.ExecuteWorkflow(QuotaWatchWorkflow, QuotaWatchInput{Interval: Duration(time.Hour), Iterations: 3, AlertDaysToFull: 30})
	st = watchResult(t, env)
	if a := st.Tenants[0]; a.Level != "warning" || !strings.Contains(a.AlertReason, "forecast to fill") || st.Level != "warning" {
		t.Fatalf("with alertDaysToFull=30: team-a level %s reason %q", a.Level, a.AlertReason)
	}
}

func TestQuotaWatchInputValidation(t *testing.T) {
	for name, tc := range map[string]struct {
		in   QuotaWatchInput
		want string
	}{
		"tiny interval": {QuotaWatchInput{Interval: Duration(time.Millisecond)}, "interval=1ms"},
		"one sample":    {QuotaWatchInput{MaxSamples: 1}, "maxSamples=1"},
		"bad path":      {QuotaWatchInput{SamplesPath: "samples.json"}, `samplesPath="samples.json"`},
		"negative":      {QuotaWatchInput{Iterations: -1}, "iterations=-1"},
	} {
		t.Run(name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			env.ExecuteWorkflow(QuotaWatchWorkflow, tc.in)
			if err := env.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want one naming %q", err, tc.want)
			}
		})
	}
}
