package workflows

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/duration"
)

// Duration is a time.Duration written as "90s", "5m" or "7d" in window
// files, in JSON and in history, so operators read it as they wrote it.
// internal/duration reads it, as it reads every duration.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes Go duration syntax.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON accepts a duration string. A bare number other than 0 is
// refused: "soak: 30" in a file would otherwise mean 30 nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n float64
		if err2 := json.Unmarshal(b, &n); err2 == nil && n == 0 {
			*d = 0
			return nil
		} else if err2 == nil {
			return fmt.Errorf("duration %s has no unit: write it as %ss, %sm or %sh", b, b, b, b)
		}
		return fmt.Errorf("%s is not a duration: use a string such as %s", b, duration.Examples)
	}
	return d.UnmarshalText([]byte(s))
}

// UnmarshalText lets YAML decoders read durations from strings.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := duration.Parse(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
