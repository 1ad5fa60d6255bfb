package core

import (
	"testing"
	"time"
)

// A savepoint's status is asked for again after a fifth of the time it has
// taken so far, within a minimum (a fifth of a poll interval unless set)
// and one interval.
func TestOperationPollDelay(t *testing.T) {
	for _, tc := range []struct {
		interval, least, elapsed, want time.Duration
	}{
		{0, 0, 0, 200 * time.Millisecond}, // the default interval, 1 s
		{0, 0, 500 * time.Millisecond, 200 * time.Millisecond},
		{0, 0, 2 * time.Second, 400 * time.Millisecond},
		{0, 0, 5 * time.Second, time.Second},
		{0, 0, time.Hour, time.Second},
		{10 * time.Second, 0, 20 * time.Second, 4 * time.Second},
		{10 * time.Second, 0, 0, 2 * time.Second},
		// A set minimum replaces the fifth of an interval, never above it.
		{3 * time.Second, 3 * time.Second, 0, 3 * time.Second},
		{3 * time.Second, 3 * time.Second, time.Minute, 3 * time.Second},
		{10 * time.Second, 5 * time.Second, 40 * time.Second, 8 * time.Second},
		{time.Second, 5 * time.Second, 0, time.Second},
	} {
		j := Jobs{PollInterval: tc.interval, OperationPollMin: tc.least}
		if got := j.OperationPollDelay(tc.elapsed); got != tc.want {
			t.Errorf("interval %v, minimum %v, elapsed %v: delay %v, want %v", tc.interval, tc.least, tc.elapsed, got, tc.want)
		}
	}
}
