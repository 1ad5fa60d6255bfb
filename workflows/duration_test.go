package workflows

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestDurationRefusesBareNumbers(t *testing.T) {
	for in, want := range map[string]time.Duration{`"30s"`: 30 * time.Second, `"1h30m"`: 90 * time.Minute, `0`: 0, `"0s"`: 0,
		`"14d"`: 14 * 24 * time.Hour, `"1d12h"`: 36 * time.Hour, `"336h0m0s"`: 14 * 24 * time.Hour} {
		var d Duration
		if err := json.Unmarshal([]byte(in), &d); err != nil || d.D() != want {
			t.Errorf("%s: %v, %v; want %v", in, d, err, want)
		}
	}
	for in, want := range map[string]string{`30`: "30s, 30m or 30h", `1.5`: "no unit", `"30"`: `"30" is not a duration`, `"1.5d"`: "days are whole", `true`: "use a string such as 30s"} {
		var d Duration
		if err := json.Unmarshal([]byte(in), &d); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v (%v); want an error saying %q", in, err, d, want)
		}
	}
	var p RestartPolicy
	if err := json.Unmarshal([]byte(`{"soak": 30}`), &p); err == nil || !strings.Contains(err.Error(), "no unit") {
		t.Errorf("restart policy with soak: 30: %v; want refused", err)
	}
}
