// Package duration reads the durations operators write in the worker's
// configuration, in window and upgrade files and in CLI flags: Go syntax
// (90s, 5m, 36h) with an optional leading number of whole days (7d,
// 1d12h), since retention is thought of in days. Every reader of a
// duration uses Parse, so a value valid in one place is valid in all.
package duration

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Examples lists valid values, for error messages and help texts.
const Examples = "30s, 5m, 36h, 7d or 1d12h"

// Pattern is a regular expression (RE2 and ECMA-262 alike, for JSON
// schemas) of the values Parse reads as zero or positive, written without
// a sign: "0", Go units, or whole days and optional Go units.
const Pattern = `^(0|[0-9]+d(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))*|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))+)$`

const day = 24 * time.Hour

// Error is a value that is not a duration. Callers name the key or flag
// it came from; Error names the value and what would be valid.
type Error struct {
	Value string
	// Why is set when the value is close to valid (days not whole, a
	// number out of range).
	Why string
}

func (e *Error) Error() string {
	why := ""
	if e.Why != "" {
		why = " (" + e.Why + ")"
	}
	return fmt.Sprintf("%q is not a duration%s: use Go units (s, m, h) with optional leading whole days, such as %s", e.Value, why, Examples)
}

// Parse reads s as a duration: time.ParseDuration's syntax, optionally
// after a number of whole days ("7d", "1d12h", "-2d"). A sign applies to
// the whole value; whether a negative value is allowed is the caller's
// rule. The error is an *Error.
func Parse(s string) (time.Duration, error) {
	i := strings.IndexByte(s, 'd')
	if i < 0 {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, &Error{Value: s}
		}
		return d, nil
	}
	sign, digits := time.Duration(1), s[:i]
	switch {
	case strings.HasPrefix(digits, "-"):
		sign, digits = -1, digits[1:]
	case strings.HasPrefix(digits, "+"):
		digits = digits[1:]
	}
	if digits == "" || strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		why := ""
		if strings.ContainsAny(digits, ".,") {
			why = "days are whole: write 1.5d as 1d12h"
		}
		return 0, &Error{Value: s, Why: why}
	}
	days, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || days > int64(math.MaxInt64/day) {
		return 0, &Error{Value: s, Why: "too long"}
	}
	total := time.Duration(days) * day
	if rest := s[i+1:]; rest != "" {
		// The rest carries no sign of its own: "1d-1h" is not a duration.
		if rest[0] == '-' || rest[0] == '+' {
			return 0, &Error{Value: s}
		}
		r, err := time.ParseDuration(rest)
		if err != nil {
			return 0, &Error{Value: s}
		}
		if r > math.MaxInt64-total {
			return 0, &Error{Value: s, Why: "too long"}
		}
		total += r
	}
	return sign * total, nil
}

// Format writes d as Parse reads it, shortest first: whole days of two or
// more as 7d, else Go syntax without zero parts (1h, 15m, 1h30m).
func Format(d time.Duration) string {
	if d >= 2*day && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
