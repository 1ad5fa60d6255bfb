// Package gendoc keeps the documentation generated from the code current:
// a test renders a page and Check compares it with the committed file, or
// writes it under `make docs` (FLINKMAINT_UPDATE_DOCS=1).
package gendoc

import (
	"bytes"
	"os"
	"testing"
)

// EnvUpdate set to anything makes Check write the page instead.
const EnvUpdate = "FLINKMAINT_UPDATE_DOCS"

// Check fails the test when the file at path is not want; source says
// what the page is generated from, for the message.
func Check(t testing.TB, path string, want []byte, source string) {
	t.Helper()
	if os.Getenv(EnvUpdate) != "" {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s is not what %s say (%v): run `make docs` and commit it", path, source, err)
	}
}
