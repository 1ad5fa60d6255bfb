package redact

import "testing"

func TestURLHidesPasswords(t *testing.T) {
	for raw, want := range map[string]string{
		"http://alice:s3cret@jm:8081/x": "http://alice:xxxxx@jm:8081/x",
		"http://alice:s3cret@[::1":      "http://xxxxx@[::1",
		"http://jm:8081":                "http://jm:8081",
		"not a url at all":              "not a url at all",
		"http://jm/a@b":                 "http://jm/a@b",
	} {
		if got := URL(raw); got != want {
			t.Errorf("URL(%q) = %q; want %q", raw, got, want)
		}
	}
}
