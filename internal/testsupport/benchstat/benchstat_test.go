package benchstat

import (
	"testing"
	"time"
)

func TestMedianAndSpread(t *testing.T) {
	ms := func(v ...int) Durations {
		var d Durations
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	for _, tc := range []struct {
		runs   Durations
		median time.Duration
		text   string
	}{
		{ms(300, 100, 200), 200 * time.Millisecond, "200ms (100ms–300ms, 3 runs)"},
		{ms(400, 100, 300, 200), 250 * time.Millisecond, "250ms (100ms–400ms, 4 runs)"},
		{nil, 0, "no runs"},
	} {
		if got := tc.runs.Median(); got != tc.median {
			t.Errorf("median of %v = %v, want %v", tc.runs, got, tc.median)
		}
		if got := tc.runs.String(); got != tc.text {
			t.Errorf("%v prints %q, want %q", []time.Duration(tc.runs), got, tc.text)
		}
	}
}
