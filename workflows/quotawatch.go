package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/notify"
	"github.com/flinkmaint/flinkmaint/internal/quota"
)

// QuotaWatchInput starts a quota watch. State carries the sample ring
// across continue-as-new (and lets a one-shot run start from another
// watch's samples).
type QuotaWatchInput struct {
	Scope core.Scope `json:"scope"`
	// Interval between samples. Default 15m.
	Interval        Duration `json:"interval,omitempty"`
	WarningPercent  float64  `json:"warningPercent,omitempty"`  // default 80
	CriticalPercent float64  `json:"criticalPercent,omitempty"` // default 90
	// AlertDaysToFull raises a warning when the forecast says the namespace
	// quota fills within this many days. Default 7; negative disables it.
	AlertDaysToFull float64 `json:"alertDaysToFull,omitempty"`
	// MaxSamples bounds the ring kept per tenant. Default 288.
	MaxSamples int `json:"maxSamples,omitempty"`
	// Iterations > 0 takes that many samples and completes (schedules,
	// the CLI); 0 watches until cancelled.
	Iterations int `json:"iterations,omitempty"`
	// ProjectRestart also projects restarting the running jobs.
	ProjectRestart bool    `json:"projectRestart,omitempty"`
	SafetyMargin   float64 `json:"safetyMargin,omitempty"` // default 0.2
	// SamplesPath keeps the ring on storage too, so scheduled runs (each a
	// new workflow) continue one series.
	SamplesPath string           `json:"samplesPath,omitempty"`
	State       *QuotaWatchState `json:"state,omitempty"`
}

// ApplyDefaults fills zero values.
func (in *QuotaWatchInput) ApplyDefaults() {
	setDur(&in.Interval, 15*time.Minute)
	setFloat(&in.WarningPercent, 80)
	setFloat(&in.CriticalPercent, 90)
	setFloat(&in.AlertDaysToFull, 7)
	setInt(&in.MaxSamples, 288)
	setFloat(&in.SafetyMargin, 0.2)
}

// Validate returns every problem, naming the field and what is valid.
func (in *QuotaWatchInput) Validate() error {
	var errs []error
	bad := func(format string, args ...interface{}) { errs = append(errs, fmt.Errorf(format, args...)) }
	if in.Interval < Duration(time.Second) {
		bad("interval=%s: use 1s or more, e.g. 15m", in.Interval)
	}
	if !(in.WarningPercent > 0 && in.WarningPercent <= in.CriticalPercent && in.CriticalPercent <= 100) {
		bad("warningPercent=%v, criticalPercent=%v: want 0 < warning <= critical <= 100", in.WarningPercent, in.CriticalPercent)
	}
	if in.MaxSamples < 2 || in.MaxSamples > 10000 {
		bad("maxSamples=%d: use 2..10000 (a forecast needs two samples)", in.MaxSamples)
	}
	if in.Iterations < 0 {
		bad("iterations=%d: use 0 (watch until cancelled) or a positive count", in.Iterations)
	}
	if in.SafetyMargin < 0 || in.SafetyMargin > 10 {
		bad("safetyMargin=%v: use 0..10 (0.2 = +20%%)", in.SafetyMargin)
	}
	if in.SamplesPath != "" && !strings.HasPrefix(in.SamplesPath, "/") && !strings.Contains(in.SamplesPath, "://") {
		bad("samplesPath=%q: use an absolute path or URI under the worker's writable roots", in.SamplesPath)
	}
	return errors.Join(errs...)
}

// QuotaSample is one point of a tenant's series.
type QuotaSample = capacity.QuotaSample

// QuotaForecast is when a tenant's quota fills at the fitted rate.
type QuotaForecast struct {
	PerDay     float64   `json:"perDay"`
	Growing    bool      `json:"growing"`
	DaysToFull float64   `json:"daysToFull,omitempty"`
	FullAt     time.Time `json:"fullAt,omitempty"`
	Samples    int       `json:"samples"`
}

// TenantWatch is one tenant's latest sample, series, forecast and alert.
type TenantWatch struct {
	Tenant            string               `json:"tenant"`
	Latest            capacity.TenantQuota `json:"latest"`
	Samples           []QuotaSample        `json:"samples"`
	NamespaceForecast *QuotaForecast       `json:"namespaceForecast,omitempty"`
	SpaceForecast     *QuotaForecast       `json:"spaceForecast,omitempty"`
	// Level is ok, warning or critical (watermarks or forecast).
	Level       string    `json:"level"`
	AlertReason string    `json:"alertReason,omitempty"`
	AlertSince  time.Time `json:"alertSince,omitempty"`
	// AlertKind is the notification kind of the alert (quota-watermark or
	// days-to-full); AlertRepeats counts its repeats.
	AlertKind    string `json:"alertKind,omitempty"`
	AlertRepeats int    `json:"alertRepeats,omitempty"`
}

// QuotaWatchState is the watch's state: the status query returns it and
// continue-as-new carries it.
type QuotaWatchState struct {
	Tenants      []TenantWatch `json:"tenants"`
	Level        string        `json:"level"`
	Alerting     bool          `json:"alerting"`
	SamplesTaken int64         `json:"samplesTaken"`
	LastSampleAt time.Time     `json:"lastSampleAt,omitempty"`
	LastError    string        `json:"lastError,omitempty"`
}

func (s *QuotaWatchState) tenant(name string) *TenantWatch {
	for i := range s.Tenants {
		if s.Tenants[i].Tenant == name {
			return &s.Tenants[i]
		}
	}
	s.Tenants = append(s.Tenants, TenantWatch{Tenant: name})
	sort.Slice(s.Tenants, func(i, j int) bool { return s.Tenants[i].Tenant < s.Tenants[j].Tenant })
	return s.tenant(name)
}

// samplesPerRun bounds one execution's history before continue-as-new.
const samplesPerRun = 500

// QuotaWatchWorkflow samples every tenant's quota use at an interval,
// keeps a bounded ring of samples per tenant, forecasts days-to-full, and
// raises an alert (search attribute FlinkmaintPhase=warning/critical, a
// log line and the flinkmaint_quota_watch_alerts metric) when a tenant
// crosses a watermark or is forecast to fill soon.
func QuotaWatchWorkflow(ctx workflow.Context, in QuotaWatchInput) (*QuotaWatchState, error) {
	in.ApplyDefaults()
	if err := in.Validate(); err != nil {
		return nil, newInvalidInputError(err.Error())
	}
	w := &quotaWatch{in: in, logger: workflow.GetLogger(ctx), notes: newNotifier(ctx, KindQuotaWatch, workflow.GetInfo(ctx).WorkflowExecution.ID, nil)}
	if in.State != nil {
		w.st = *in.State
	}
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (QuotaWatchState, error) { return w.st, nil }); err != nil {
		return nil, err
	}
	if in.State == nil && in.SamplesPath != "" {
		w.loadSamples(ctx)
	}
	var a *capacity.Activities
	for taken := 0; ; taken++ {
		var res capacity.SampleQuotaResult
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, shortActivityOptions()), a.SampleQuota, capacity.SampleQuotaInput{
			Scope: in.Scope, WarningPercent: in.WarningPercent, CriticalPercent: in.CriticalPercent,
			ProjectRestart: in.ProjectRestart, SafetyMargin: in.SafetyMargin,
		}).Get(ctx, &res)
		if err != nil {
			// A missed sample leaves a gap in the series; the watch goes on.
			w.st.LastError = errorText(err)
			w.logger.Warn("quota sample failed", "error", w.st.LastError)
			if in.Iterations > 0 && taken+1 >= in.Iterations {
				w.notes.flush(ctx)
				return &w.st, err
			}
		} else {
			w.st.LastError = ""
			w.record(ctx, res)
			w.saveSamples(ctx)
		}
		if in.Iterations > 0 && taken+1 >= in.Iterations {
			break
		}
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() || taken+1 >= samplesPerRun {
			w.notes.flush(ctx)
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return nil, err
			}
			next := in
			st := w.st
			next.State = &st
			return nil, workflow.NewContinueAsNewError(ctx, QuotaWatchWorkflowType, next)
		}
		if err := workflow.Sleep(ctx, in.Interval.D()); err != nil {
			return nil, err
		}
	}
	w.notes.flush(ctx)
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return nil, err
	}
	return &w.st, nil
}

type quotaWatch struct {
	in     QuotaWatchInput
	st     QuotaWatchState
	logger log.Logger
	notes  *notifier
}

// record adds a sample, recomputes forecasts and alert levels, and
// publishes them.
func (w *quotaWatch) record(ctx workflow.Context, res capacity.SampleQuotaResult) {
	w.st.SamplesTaken++
	w.st.LastSampleAt = res.At
	metrics := workflow.GetMetricsHandler(ctx)
	worst := "ok"
	var alerting []string
	for _, q := range res.Tenants {
		t := w.st.tenant(q.Tenant)
		t.Latest = q
		t.Samples = append(t.Samples, QuotaSample{At: res.At, Namespace: q.NamespaceUsed, Space: q.SpaceUsed})
		if n := len(t.Samples) - w.in.MaxSamples; n > 0 {
			t.Samples = append([]QuotaSample(nil), t.Samples[n:]...)
		}
		t.NamespaceForecast = forecast(t.Samples, q.NamespaceQuota, func(s QuotaSample) int64 { return s.Namespace })
		t.SpaceForecast = forecast(t.Samples, q.SpaceQuota, func(s QuotaSample) int64 { return s.Space })
		level, reason := q.Level, q.Reason
		if level == "ok" && w.in.AlertDaysToFull > 0 {
			for _, f := range []struct {
				dim string
				fc  *QuotaForecast
			}{{"namespace", t.NamespaceForecast}, {"space", t.SpaceForecast}} {
				if f.fc != nil && f.fc.Growing && f.fc.DaysToFull < w.in.AlertDaysToFull {
					level = "warning"
					reason = fmt.Sprintf("%s: %s quota forecast to fill in %.1f days (at %.0f per day, %d samples); alertDaysToFull=%v",
						q.Root, f.dim, f.fc.DaysToFull, f.fc.PerDay, f.fc.Samples, w.in.AlertDaysToFull)
					break
				}
			}
		}
		tagged := metrics.WithTags(map[string]string{"tenant": q.Tenant})
		tagged.Gauge("flinkmaint_quota_watch_percent").Update(q.Percent)
		if t.NamespaceForecast != nil && t.NamespaceForecast.Growing {
			tagged.Gauge("flinkmaint_quota_watch_days_to_full").Update(t.NamespaceForecast.DaysToFull)
		}
		if level != "ok" {
			kind := notify.KindQuotaWatermark
			if q.Level == "ok" {
				kind = notify.KindDaysToFull
			}
			if t.Level != level || t.AlertKind != kind {
				t.AlertSince, t.AlertRepeats = res.At, 0
				w.logger.Warn("quota alert", "tenant", q.Tenant, "level", level, "reason", reason)
				metrics.WithTags(map[string]string{"tenant": q.Tenant, "level": level}).Counter("flinkmaint_quota_watch_alerts").Inc(1)
			} else {
				t.AlertRepeats++ // keeps an Alertmanager alert firing
			}
			t.AlertKind = kind
			w.notes.send(ctx, notify.Event{Kind: kind, Tenants: []string{q.Tenant}, Severity: level, Title: fmt.Sprintf("tenant %s quota %s", q.Tenant, level),
				Text: reason, Reminder: t.AlertRepeats, RepeatEvery: w.in.Interval.D()})
			alerting = append(alerting, q.Tenant)
			tagged.Gauge("flinkmaint_quota_watch_alerting").Update(1)
		} else {
			if t.Level != "" && t.Level != "ok" {
				w.logger.Info("quota alert cleared", "tenant", q.Tenant, "was", t.Level)
				w.notes.send(ctx, notify.Event{Kind: t.AlertKind, Tenants: []string{q.Tenant}, Severity: t.Level, Resolved: true,
					Title: fmt.Sprintf("tenant %s quota back to ok (was %s)", q.Tenant, t.Level)})
			}
			t.AlertSince, t.AlertKind, t.AlertRepeats = time.Time{}, "", 0
			tagged.Gauge("flinkmaint_quota_watch_alerting").Update(0)
		}
		t.Level, t.AlertReason = level, reason
		if severity(level) > severity(worst) {
			worst = level
		}
	}
	w.st.Level, w.st.Alerting = worst, worst != "ok"
	err := workflow.UpsertTypedSearchAttributes(ctx,
		SearchAttrKind.ValueSet(KindQuotaWatch),
		SearchAttrPhase.ValueSet(worst),
		SearchAttrTenants.ValueSet(alerting),
	)
	if err != nil {
		w.logger.Warn("search attributes not updated", "error", err)
	}
	summary := "all tenants ok"
	if len(alerting) > 0 {
		summary = worst + ": " + strings.Join(alerting, ", ")
	}
	_ = workflow.UpsertMemo(ctx, map[string]interface{}{"summary": summary})
}

func severity(level string) int {
	switch level {
	case "warning":
		return 1
	case "critical":
		return 2
	}
	return 0
}

// forecast fits the series of one dimension against its quota; nil when
// there is no quota or too few samples.
func forecast(samples []QuotaSample, limit int64, value func(QuotaSample) int64) *QuotaForecast {
	if limit <= 0 || len(samples) < 2 {
		return nil
	}
	pts := make([]quota.Sample, 0, len(samples))
	for _, s := range samples {
		pts = append(pts, quota.Sample{At: s.At, Used: value(s)})
	}
	f, err := quota.Forecast(pts, limit)
	if err != nil {
		return nil
	}
	return &QuotaForecast{PerDay: f.PerDay, Growing: f.Growing, DaysToFull: f.DaysToFull, FullAt: f.FullAt, Samples: f.Samples}
}

func (w *quotaWatch) loadSamples(ctx workflow.Context) {
	var a *capacity.Activities
	var res capacity.LoadQuotaSamplesResult
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, shortActivityOptions()), a.LoadQuotaSamples,
		capacity.LoadQuotaSamplesInput{Path: w.in.SamplesPath}).Get(ctx, &res); err != nil {
		w.logger.Warn("samples not loaded; starting a new series", "path", w.in.SamplesPath, "error", err)
		return
	}
	for _, ts := range res.Doc.Tenants {
		t := w.st.tenant(ts.Tenant)
		t.Samples = ts.Samples
		if n := len(t.Samples) - w.in.MaxSamples; n > 0 {
			t.Samples = append([]QuotaSample(nil), t.Samples[n:]...)
		}
	}
}

func (w *quotaWatch) saveSamples(ctx workflow.Context) {
	if w.in.SamplesPath == "" {
		return
	}
	var doc capacity.QuotaSamplesDoc
	for _, t := range w.st.Tenants {
		doc.Tenants = append(doc.Tenants, capacity.TenantSeries{Tenant: t.Tenant, Samples: t.Samples})
	}
	data, err := json.Marshal(doc) //workflowcheck:ignore (deterministic: struct fields, sorted map keys)
	if err != nil {
		w.logger.Error("samples not encoded", "error", err)
		return
	}
	var a *windows.Activities
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, shortActivityOptions()), a.WriteDocument,
		core.WriteDocumentInput{Path: w.in.SamplesPath, Content: data}).Get(ctx, nil); err != nil {
		w.logger.Warn("samples not saved", "path", w.in.SamplesPath, "error", err)
	}
}
