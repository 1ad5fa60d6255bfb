// Package quota turns HDFS content summaries into usage, headroom and
// restart-gate decisions, and forecasts when a tenant root fills up. All
// functions are pure: inputs are passed in, no clock is read.
package quota

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalidInput is wrapped by every input validation error.
var ErrInvalidInput = errors.New("quota: invalid input")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidInput}, args...)...)
}

// Summary is the content summary of a tenant root as the namenode reports
// it (storage.ContentSummary carries the same fields). A quota of -1 (or
// any negative value) means none is set.
type Summary struct {
	Files          int64
	Dirs           int64 // including the root itself, as HDFS counts it
	SpaceConsumed  int64 // bytes times replication, what the space quota counts
	NamespaceQuota int64
	SpaceQuota     int64
}

// Usage is one quota dimension of a root.
type Usage struct {
	Used     int64
	Quota    int64 // -1: no quota
	Headroom int64 // Quota-Used (never below 0); -1 without a quota
	Percent  float64
}

// Limited reports whether a quota is set.
func (u Usage) Limited() bool { return u.Quota >= 0 }

// Status is the usage of one tenant root.
type Status struct {
	Root      string
	Namespace Usage // files + directories
	Space     Usage // bytes after replication
}

func usage(used, limit int64) Usage {
	if limit < 0 {
		return Usage{Used: used, Quota: -1, Headroom: -1}
	}
	u := Usage{Used: used, Quota: limit, Headroom: max(limit-used, 0)}
	if limit > 0 {
		u.Percent = 100 * float64(used) / float64(limit)
	} else {
		u.Percent = 100
	}
	return u
}

// Evaluate computes usage, headroom and percentage of both quotas.
func Evaluate(root string, s Summary) (Status, error) {
	if s.Files < 0 || s.Dirs < 0 || s.SpaceConsumed < 0 {
		return Status{}, invalid("root %s: negative counts (files %d, dirs %d, space %d)", root, s.Files, s.Dirs, s.SpaceConsumed)
	}
	return Status{
		Root:      root,
		Namespace: usage(s.Files+s.Dirs, s.NamespaceQuota),
		Space:     usage(s.SpaceConsumed, s.SpaceQuota),
	}, nil
}

// Level is a watermark verdict.
type Level int

// Levels, in increasing severity.
const (
	LevelOK Level = iota
	LevelWarning
	LevelCritical
)

func (l Level) String() string {
	switch l {
	case LevelOK:
		return "ok"
	case LevelWarning:
		return "warning"
	case LevelCritical:
		return "critical"
	}
	return fmt.Sprintf("level(%d)", int(l))
}

// Watermarks are percentages of a quota: at or above Warning alert, at or
// above Critical page.
type Watermarks struct {
	Warning  float64
	Critical float64
}

// Validate checks 0 < Warning <= Critical <= 100.
func (w Watermarks) Validate() error {
	if !(w.Warning > 0 && w.Warning <= w.Critical && w.Critical <= 100) {
		return invalid("watermarks warning=%v critical=%v: want 0 < warning <= critical <= 100", w.Warning, w.Critical)
	}
	return nil
}

// WatermarkResult is the worse of the two dimensions.
type WatermarkResult struct {
	Level     Level
	Namespace Level
	Space     Level
	Reason    string
}

// CheckWatermark compares both quotas of s with w. A dimension without a
// quota is always LevelOK.
func CheckWatermark(s Status, w Watermarks) (WatermarkResult, error) {
	if err := w.Validate(); err != nil {
		return WatermarkResult{}, err
	}
	level := func(u Usage) Level {
		switch {
		case !u.Limited():
			return LevelOK
		case u.Percent >= w.Critical:
			return LevelCritical
		case u.Percent >= w.Warning:
			return LevelWarning
		}
		return LevelOK
	}
	r := WatermarkResult{Namespace: level(s.Namespace), Space: level(s.Space)}
	r.Level = max(r.Namespace, r.Space)
	if r.Level != LevelOK {
		r.Reason = fmt.Sprintf("%s: namespace %.1f%% of %d (%s), space %.1f%% of %d bytes (%s); watermarks warning %.0f%%, critical %.0f%%",
			s.Root, s.Namespace.Percent, s.Namespace.Quota, r.Namespace, s.Space.Percent, s.Space.Quota, r.Space, w.Warning, w.Critical)
	}
	return r, nil
}

// ceilMul returns ceil(n * (1+margin)) without float surprises for exact
// values (e.g. 100 * 1.1 must be 110, not 111).
func ceilMul(n int64, margin float64) int64 {
	v := float64(n) * (1 + margin)
	r := math.Round(v)
	if math.Abs(v-r) < 1e-9 {
		return int64(r)
	}
	return int64(math.Ceil(v))
}
