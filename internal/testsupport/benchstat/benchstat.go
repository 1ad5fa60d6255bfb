// Package benchstat summarises the repeated runs of a bench: a figure
// quoted from one run does not reproduce on a busy machine, its median and
// spread over several do.
package benchstat

import (
	"fmt"
	"slices"
	"time"
)

// Durations are the times of one measurement over several runs.
type Durations []time.Duration

// Median is the middle run (the mean of the two middle ones for an even
// count); zero without runs.
func (d Durations) Median() time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// String is "median (min–max, n runs)".
func (d Durations) String() string {
	if len(d) == 0 {
		return "no runs"
	}
	return fmt.Sprintf("%v (%v–%v, %d runs)", d.Median().Round(time.Millisecond),
		slices.Min(d).Round(time.Millisecond), slices.Max(d).Round(time.Millisecond), len(d))
}
