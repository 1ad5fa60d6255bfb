// Package buildinfo says which build of flinkmaint is running: the release
// set at build time (-ldflags "-X main.version=...") and the commit Go
// recorded when it built the binary from a git checkout.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Commit is the commit the binary was built from ("unknown" outside a git
// checkout), with "-dirty" when the tree had changes.
func Commit() string {
	commit, dirty := "unknown", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if dirty {
		commit += "-dirty"
	}
	return commit
}

// Describe is one line naming the release, the commit and the Go version.
func Describe(program, release string) string {
	return fmt.Sprintf("%s %s (commit %s, %s)", program, release, Commit(), runtime.Version())
}
