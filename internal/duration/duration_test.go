package duration

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestParseAcceptsGoUnitsAndDays(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"0":          0,
		"30s":        30 * time.Second,
		"1h30m":      90 * time.Minute,
		"500ms":      500 * time.Millisecond,
		"7d":         7 * 24 * time.Hour,
		"14d":        14 * 24 * time.Hour,
		"0d":         0,
		"1d12h":      36 * time.Hour,
		"1d30m15s":   24*time.Hour + 30*time.Minute + 15*time.Second,
		"+2d":        48 * time.Hour,
		"-5m":        -5 * time.Minute,
		"-1d12h":     -36 * time.Hour,
		"106751d":    106751 * 24 * time.Hour,
		"2d1.5h":     48*time.Hour + 90*time.Minute,
		"336h0m0s":   14 * 24 * time.Hour, // what the durations write back
		"1d0h0m0.5s": 24*time.Hour + 500*time.Millisecond,
	} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}

func TestParseRefusesWithValueAndExamples(t *testing.T) {
	for in, why := range map[string]string{
		"":                      "",
		"soon":                  "",
		"30":                    "",
		"7":                     "",
		"d":                     "",
		"7D":                    "",
		"1.5d":                  "days are whole",
		"1,5d":                  "days are whole",
		"1d-1h":                 "",
		"1d+1h":                 "",
		"1h7d":                  "",
		"7dd":                   "",
		"7d ":                   "",
		" 7d":                   "",
		"--1d":                  "",
		"0x10d":                 "",
		"106752d":               "too long",
		"106751d24h":            "too long",
		"99999999999999999999d": "too long",
	} {
		_, err := Parse(in)
		var de *Error
		if !errors.As(err, &de) {
			t.Errorf("Parse(%q) = %v; want an *Error", in, err)
			continue
		}
		msg := err.Error()
		for _, want := range []string{`"` + in + `" is not a duration`, "7d", "1d12h", "30s", why} {
			if !strings.Contains(msg, want) {
				t.Errorf("Parse(%q): %q does not say %q", in, msg, want)
			}
		}
	}
}

func TestFormatIsReadBack(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 30 * time.Second: "30s", 15 * time.Minute: "15m", time.Hour: "1h", 90 * time.Minute: "1h30m",
		24 * time.Hour: "24h", 36 * time.Hour: "36h", 7 * 24 * time.Hour: "7d", 14*24*time.Hour + time.Hour: "337h",
		-7 * 24 * time.Hour: "-168h", time.Hour + 30*time.Second: "1h0m30s",
	} {
		got := Format(d)
		if got != want {
			t.Errorf("Format(%v) = %q, want %q", d, got, want)
		}
		if back, err := Parse(got); err != nil || back != d {
			t.Errorf("Parse(Format(%v)) = %v, %v", d, back, err)
		}
	}
}

// Pattern matches exactly the unsigned values Parse reads, so a schema
// built on it refuses no duration the worker takes.
func TestPatternAgreesWithParse(t *testing.T) {
	re := regexp.MustCompile(Pattern)
	for _, in := range []string{"0", "30s", "1h30m", "500ms", "1.5h", "7d", "0d", "1d12h", "14d0s", "1d30m15s", "2d1.5h", "336h0m0s", "3µs",
		"", "soon", "30", "7", "d", "7D", "1.5d", "1d-1h", "1h7d", "7dd", "7d ", "-5m", "+7d", ".5h", "1d.5h", "1.h", ".h", "1d.h", "d1h", "1d1"} {
		d, err := Parse(in)
		parsed := err == nil && d >= 0 && in != "" && in[0] != '+' && in[0] != '-'
		if matched := re.MatchString(in); matched != parsed {
			t.Errorf("%q: Pattern matches %v, Parse reads it as a non-negative unsigned duration %v (%v, %v)", in, matched, parsed, d, err)
		}
	}
}
