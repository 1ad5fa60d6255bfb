package quota

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestEvaluate(t *testing.T) {
	tests := map[string]struct {
		in      Summary
		wantNS  Usage
		wantSpc Usage
	}{
		"both quotas": {Summary{Files: 9000, Dirs: 1000, SpaceConsumed: 300, NamespaceQuota: 15000, SpaceQuota: 1200},
			Usage{10000, 15000, 5000, 100 * 10000.0 / 15000}, Usage{300, 1200, 900, 25}},
		"no quotas": {Summary{Files: 5, Dirs: 1, SpaceConsumed: 7, NamespaceQuota: -1, SpaceQuota: -1},
			Usage{6, -1, -1, 0}, Usage{7, -1, -1, 0}},
		"over quota": {Summary{Files: 20, Dirs: 1, NamespaceQuota: 10, SpaceQuota: -1},
			Usage{21, 10, 0, 210}, Usage{0, -1, -1, 0}},
		"zero quota": {Summary{Dirs: 1, NamespaceQuota: 0, SpaceQuota: 0},
			Usage{1, 0, 0, 100}, Usage{0, 0, 0, 100}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := Evaluate("/t", tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if s.Namespace != tc.wantNS || s.Space != tc.wantSpc {
				t.Fatalf("got ns %+v space %+v; want %+v %+v", s.Namespace, s.Space, tc.wantNS, tc.wantSpc)
			}
		})
	}
	if _, err := Evaluate("/t", Summary{Files: -1}); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("negative: %v", err)
	}
}

func TestCheckWatermark(t *testing.T) {
	w := Watermarks{Warning: 80, Critical: 95}
	st := func(nsUsed, nsQuota, spUsed, spQuota int64) Status {
		s, err := Evaluate("/t", Summary{Files: nsUsed - 1, Dirs: 1, SpaceConsumed: spUsed, NamespaceQuota: nsQuota, SpaceQuota: spQuota})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := map[string]struct {
		s    Status
		want Level
	}{
		"ok":                   {st(10, 100, 1, 100), LevelOK},
		"ns warning exact":     {st(80, 100, 1, 100), LevelWarning},
		"ns critical":          {st(95, 100, 1, 100), LevelCritical},
		"space critical":       {st(10, 100, 99, 100), LevelCritical},
		"worse of two":         {st(85, 100, 99, 100), LevelCritical},
		"no quotas":            {st(1e6, -1, 1e9, -1), LevelOK},
		"just below warning":   {st(79, 100, 0, -1), LevelOK},
		"ns over quota (100+)": {st(150, 100, 0, -1), LevelCritical},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, err := CheckWatermark(tc.s, w)
			if err != nil {
				t.Fatal(err)
			}
			if r.Level != tc.want {
				t.Fatalf("level %v; want %v (%+v)", r.Level, tc.want, r)
			}
			if (r.Level != LevelOK) != (r.Reason != "") {
				t.Fatalf("reason %q for level %v", r.Reason, r.Level)
			}
		})
	}
	for name, bad := range map[string]Watermarks{"zero": {}, "inverted": {90, 80}, "over 100": {80, 101}} {
		t.Run("invalid "+name, func(t *testing.T) {
			if _, err := CheckWatermark(st(1, 10, 1, 10), bad); !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

func TestProjectRestart(t *testing.T) {
	tests := map[string]struct {
		jobs    []JobFootprint
		margin  float64
		raw     int64
		total   int64
		wantErr string
	}{
		"one job, retained 1": {
			// 3 + 10×1 + 10 + 2 = 25
			jobs: []JobFootprint{{JobID: "a", FilesPerCheckpoint: 10, NumRetained: 1, SavepointFiles: 2}}, raw: 25, total: 25},
		"full checkpoint larger": {
			// 3 + 10×3 + 200 + 0 = 233
			jobs: []JobFootprint{{JobID: "a", FilesPerCheckpoint: 10, NumRetained: 3, FullCheckpointFiles: 200}}, raw: 233, total: 233},
		"full checkpoint smaller is ignored": {
			jobs: []JobFootprint{{JobID: "a", FilesPerCheckpoint: 10, NumRetained: 3, FullCheckpointFiles: 5}}, raw: 43, total: 43},
		"two jobs with margin": {
			// a: 3+20+20+5 = 48; b: 3+2×2+2 = 9; 57 × 1.1 = 62.7 → 63
			jobs: []JobFootprint{
				{JobID: "a", FilesPerCheckpoint: 20, NumRetained: 1, SavepointFiles: 5},
				{JobID: "b", FilesPerCheckpoint: 2, NumRetained: 2},
			}, margin: 0.1, raw: 57, total: 63},
		"exact margin stays exact": {
			// 3 + 47 + 47 + 3 = 100 → 100 × 1.1 = 110, not 111
			jobs: []JobFootprint{{JobID: "a", FilesPerCheckpoint: 47, NumRetained: 1, SavepointFiles: 3}}, margin: 0.1, raw: 100, total: 110},
		"no jobs":            {jobs: nil, margin: 0.2, raw: 0, total: 0},
		"retained 0":         {jobs: []JobFootprint{{JobID: "a", FilesPerCheckpoint: 1}}, wantErr: "NumRetained 0"},
		"no files":           {jobs: []JobFootprint{{JobID: "a", NumRetained: 1}}, wantErr: "FilesPerCheckpoint 0"},
		"empty id":           {jobs: []JobFootprint{{FilesPerCheckpoint: 1, NumRetained: 1}}, wantErr: "empty JobID"},
		"duplicate":          {jobs: []JobFootprint{{JobID: "a", FilesPerCheckpoint: 1, NumRetained: 1}, {JobID: "a", FilesPerCheckpoint: 1, NumRetained: 1}}, wantErr: "listed twice"},
		"negative margin":    {margin: -0.1, wantErr: "safety margin"},
		"negative savepoint": {jobs: []JobFootprint{{JobID: "a", FilesPerCheckpoint: 1, NumRetained: 1, SavepointFiles: -1}}, wantErr: "negative"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, err := ProjectRestart(tc.jobs, tc.margin)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v; want error %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Raw != tc.raw || p.Total != tc.total {
				t.Fatalf("raw %d total %d; want %d %d", p.Raw, p.Total, tc.raw, tc.total)
			}
		})
	}
	p, _ := ProjectRestart([]JobFootprint{
		{JobID: "small", FilesPerCheckpoint: 1, NumRetained: 1},
		{JobID: "big", FilesPerCheckpoint: 100, NumRetained: 1},
		{JobID: "also-small", FilesPerCheckpoint: 1, NumRetained: 1},
	}, 0)
	if got := strings.Join(p.LargestJobs(), ","); got != "big,also-small,small" {
		t.Fatalf("LargestJobs %s", got)
	}
}

func TestGate(t *testing.T) {
	w := Watermarks{Warning: 80, Critical: 95}
	status := func(used, quota int64) Status {
		s, _ := Evaluate("/tenants/a", Summary{Files: used - 1, Dirs: 1, NamespaceQuota: quota, SpaceQuota: -1})
		return s
	}
	proj := func(total int64) Projection { return Projection{Total: total, Raw: total} }
	tests := map[string]struct {
		s       Status
		p       Projection
		allowed bool
		reason  string
	}{
		"fits":               {status(1000, 15000), proj(5000), true, "restart needs 5000 of 14000 free"},
		"exceeds headroom":   {status(14000, 15000), proj(1500), false, "free 500 or raise the quota"},
		"hits critical":      {status(10000, 15000), proj(4500), false, "critical watermark 95%"},
		"already over quota": {status(16000, 15000), proj(1), false, "only 0 of the namespace quota"},
		"no quota":           {status(1e6, -1), proj(1e6), true, "no namespace quota"},
		"nothing to restart": {status(10, 100), proj(0), true, "restart needs 0"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d, err := Gate(tc.s, tc.p, w)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tc.allowed || !strings.Contains(d.Reason, tc.reason) || !strings.Contains(d.Reason, "/tenants/a") {
				t.Fatalf("got %+v; want allowed=%v reason containing %q", d, tc.allowed, tc.reason)
			}
		})
	}
	if _, err := Gate(status(1, 10), proj(1), Watermarks{}); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("bad watermarks: %v", err)
	}
}

func TestForecast(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	day := func(d float64) time.Time { return t0.Add(time.Duration(d * 24 * float64(time.Hour))) }
	tests := map[string]struct {
		samples  []Sample
		limit    int64
		growing  bool
		perDay   float64
		daysLeft float64
		wantErr  string
	}{
		"linear growth": {
			// 100/day from 1000; at day 4 usage 1400; limit 2000 → 6 more days.
			samples: []Sample{{day(0), 1000}, {day(1), 1100}, {day(2), 1200}, {day(3), 1300}, {day(4), 1400}},
			limit:   2000, growing: true, perDay: 100, daysLeft: 6},
		"unsorted input": {
			samples: []Sample{{day(4), 1400}, {day(0), 1000}, {day(2), 1200}},
			limit:   2000, growing: true, perDay: 100, daysLeft: 6},
		"noisy fit": {
			// Least squares through (0,0),(1,10),(2,10),(3,30): slope 9, intercept -1;
			// full at (1000+1)/9 = 111.22 days, 108.22 after the last sample.
			samples: []Sample{{day(0), 0}, {day(1), 10}, {day(2), 10}, {day(3), 30}},
			limit:   1000, growing: true, perDay: 9, daysLeft: 1001.0/9 - 3},
		"already past limit": {
			samples: []Sample{{day(0), 100}, {day(1), 200}},
			limit:   150, growing: true, perDay: 100, daysLeft: 0},
		"flat": {
			samples: []Sample{{day(0), 500}, {day(1), 500}, {day(2), 500}},
			limit:   1000, growing: false, perDay: 0},
		"shrinking": {
			samples: []Sample{{day(0), 500}, {day(1), 400}},
			limit:   1000, growing: false, perDay: -100},
		"hourly samples": {
			samples: []Sample{{day(0), 0}, {day(1.0 / 24), 10}, {day(2.0 / 24), 20}},
			limit:   2400, growing: true, perDay: 240, daysLeft: 10 - 2.0/24},
		"one sample":   {samples: []Sample{{day(0), 1}}, limit: 10, wantErr: "need at least 2"},
		"same time":    {samples: []Sample{{day(0), 1}, {day(0), 2}}, limit: 10, wantErr: "two or more times"},
		"no limit":     {samples: []Sample{{day(0), 1}, {day(1), 2}}, limit: -1, wantErr: "positive quota"},
		"negative use": {samples: []Sample{{day(0), -1}, {day(1), 2}}, limit: 10, wantErr: "negative usage"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, err := Forecast(tc.samples, tc.limit)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v; want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Growing != tc.growing || math.Abs(r.PerDay-tc.perDay) > 1e-6 {
				t.Fatalf("got %+v; want growing=%v perDay=%v", r, tc.growing, tc.perDay)
			}
			if !tc.growing {
				return
			}
			if math.Abs(r.DaysToFull-tc.daysLeft) > 1e-6 {
				t.Fatalf("days to full %v; want %v", r.DaysToFull, tc.daysLeft)
			}
			var last time.Time
			for _, s := range tc.samples {
				if s.At.After(last) {
					last = s.At
				}
			}
			if want := last.Add(time.Duration(tc.daysLeft * 24 * float64(time.Hour))); r.FullAt.Sub(want).Abs() > time.Second {
				t.Fatalf("FullAt %v; want %v", r.FullAt, want)
			}
		})
	}
}
