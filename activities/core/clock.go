package core

import (
	"time"
)

// Now reads clock, or the wall clock when clock is nil (tests set a fixed
// clock on an activities type; the worker leaves it nil).
func Now(clock func() time.Time) time.Time {
	if clock != nil {
		return clock()
	}
	return time.Now()
}
