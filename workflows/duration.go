package workflows

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration written as "90s" or "5m" in window files, in
// JSON and in history, so operators read it as they wrote it.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes Go duration syntax.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON accepts Go duration syntax. A bare number other than 0 is
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
		return fmt.Errorf("duration %s: use a string such as \"30s\", \"5m\" or \"1h\"", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: use a value such as 30s, 5m or 1h", s)
	}
	*d = Duration(v)
	return nil
}

// UnmarshalText lets YAML decoders read durations from strings.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("duration %q: use a value such as 30s, 5m or 1h", string(b))
	}
	*d = Duration(v)
	return nil
}
