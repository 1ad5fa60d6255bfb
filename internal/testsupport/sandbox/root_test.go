package sandbox

import (
	"strings"
	"testing"
)

// recordingTB notes how a helper ended a test instead of ending this one.
type recordingTB struct {
	testing.TB
	fatal, skip string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.fatal = format
	panic(r)
}
func (r *recordingTB) Skipf(format string, args ...any) {
	r.skip = format
	panic(r)
}

func TestRequireSharedFailsUnderCIWhenAbsent(t *testing.T) {
	sharedDirName = "shared-absent-for-test"
	t.Cleanup(func() { sharedDirName = "shared" })
	for name, ci := range map[string]string{"in CI": "true", "own clone": ""} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("CI", ci)
			r := &recordingTB{TB: t}
			func() {
				defer func() { _ = recover() }()
				RequireShared(r)
			}()
			switch {
			case ci != "" && (r.fatal == "" || r.skip != ""):
				t.Fatalf("CI=%q: fatal %q skip %q; want the test failed", ci, r.fatal, r.skip)
			case ci == "" && (r.skip == "" || r.fatal != ""):
				t.Fatalf("no CI: fatal %q skip %q; want the test skipped", r.fatal, r.skip)
			case !strings.Contains(r.fatal+r.skip, "reference material"):
				t.Fatalf("message %q does not say what is missing", r.fatal+r.skip)
			}
		})
	}
}
