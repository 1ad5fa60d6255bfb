package quota

import (
	"math"
	"sort"
	"time"
)

// Sample is one observation of a root's usage (namespace or bytes).
//
// Where samples live: the scheduled quota-watch workflow records one per run
// and carries the most recent ones in its input across continue-as-new (a
// few hundred int64 pairs), so the forecast is deterministic, replayable and
// needs no extra store; callers that keep samples elsewhere (a manifest on
// HDFS, Prometheus) pass them in the same way. Forecast is a pure function
// over that slice.
type Sample struct {
	At   time.Time
	Used int64
}

// ForecastResult is a least-squares trend of usage over time.
type ForecastResult struct {
	// PerDay is the fitted growth in units per day (negative when usage
	// shrinks).
	PerDay float64
	// Growing is false when the trend is flat or shrinking; then DaysToFull
	// and FullAt are meaningless (zero) and the root never fills at this rate.
	Growing bool
	// DaysToFull counts from the newest sample to the moment the fitted line
	// reaches limit; 0 if it already has.
	DaysToFull float64
	FullAt     time.Time
	Samples    int
}

// Forecast fits used = a + b·t by ordinary least squares over the samples
// and returns when the line reaches limit. It needs at least two samples at
// distinct times and a positive limit. The newest sample's time is "now",
// so no clock is read.
func Forecast(samples []Sample, limit int64) (ForecastResult, error) {
	if limit <= 0 {
		return ForecastResult{}, invalid("limit %d: want a positive quota (no quota, no forecast)", limit)
	}
	if len(samples) < 2 {
		return ForecastResult{}, invalid("%d samples: need at least 2", len(samples))
	}
	s := append([]Sample(nil), samples...)
	sort.Slice(s, func(i, j int) bool { return s[i].At.Before(s[j].At) })
	t0 := s[0].At
	last := s[len(s)-1].At
	if !last.After(t0) {
		return ForecastResult{}, invalid("all %d samples are at %s: need samples at two or more times", len(s), t0.Format(time.RFC3339))
	}
	// Days since the first sample keep the numbers small and well
	// conditioned.
	n := float64(len(s))
	var sx, sy float64
	for _, p := range s {
		if p.Used < 0 {
			return ForecastResult{}, invalid("sample at %s has negative usage %d", p.At.Format(time.RFC3339), p.Used)
		}
		sx += p.At.Sub(t0).Hours() / 24
		sy += float64(p.Used)
	}
	mx, my := sx/n, sy/n
	var sxx, sxy float64
	for _, p := range s {
		dx := p.At.Sub(t0).Hours()/24 - mx
		sxx += dx * dx
		sxy += dx * (float64(p.Used) - my)
	}
	slope := sxy / sxx
	r := ForecastResult{PerDay: slope, Samples: len(s)}
	if slope <= 0 || math.IsNaN(slope) {
		return r, nil
	}
	r.Growing = true
	intercept := my - slope*mx
	xLast := last.Sub(t0).Hours() / 24
	xFull := (float64(limit) - intercept) / slope
	r.DaysToFull = max(xFull-xLast, 0)
	r.FullAt = last.Add(time.Duration(r.DaysToFull * 24 * float64(time.Hour)))
	return r, nil
}
