package main

import (
	"strings"
	"testing"
)

// TestGovernanceUsageErrors: bad flags and arguments of governance and
// quota exit 2 and name the flag or field and what is valid, before any
// connection is made.
func TestGovernanceUsageErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"run bad mode":         {[]string{"governance", "run", "--mode", "yolo"}, `--mode="yolo"`},
		"run plan mode":        {[]string{"governance", "run", "--mode", "plan"}, "governance plan"},
		"plan bad action":      {[]string{"governance", "plan", "--action", "shred"}, `policy.action="shred"`},
		"plan negative grace":  {[]string{"governance", "plan", "--grace", "-1h"}, "policy.grace=-1h0m0s"},
		"plan ttl below grace": {[]string{"governance", "plan", "--grace", "2h", "--retired-job-ttl", "1h"}, "policy.retiredJobTTL"},
		"plan bad pin":         {[]string{"governance", "plan", "--pin", "relative"}, "policy.pinnedSavepoints[0]"},
		"plan bad timeout":     {[]string{"governance", "plan", "--timeout", "0s"}, "--timeout=0s"},
		"plan bad keep":        {[]string{"governance", "plan", "--keep-savepoints", "-1"}, "policy.keepSavepoints=-1"},
		"plan bad orphan ttl":  {[]string{"governance", "plan", "--orphan-ttl", "-2h"}, "policy.orphanTTL=-2h0m0s"},
		"plan bad duration":    {[]string{"governance", "plan", "--grace", "soon"}, "grace"},
		"plan override freeze": {[]string{"governance", "plan", "--override-freeze", "--reason", "x"}, "unknown flag: --override-freeze"},
		"plan purge":           {[]string{"governance", "plan", "--purge-trash-after", "24h"}, "unknown flag: --purge-trash-after"},
		"plan execute timeout": {[]string{"governance", "plan", "--execute-timeout", "1h"}, "unknown flag: --execute-timeout"},
		"plan parallelism":     {[]string{"governance", "plan", "--execute-parallelism", "2"}, "unknown flag: --execute-parallelism"},
		"reject without why":   {[]string{"governance", "reject", "g1"}, "--reason is required"},
		"approve two names":    {[]string{"governance", "approve", "a", "b"}, "exactly one NAME"},
		"status without name":  {[]string{"governance", "status"}, "exactly one NAME"},
		"schedule no spec":     {[]string{"governance", "schedule", "create", "nightly"}, "--cron"},
		"schedule both specs":  {[]string{"governance", "schedule", "create", "nightly", "--cron", "0 3 * * *", "--every", "1h"}, "exclusive"},
		"schedule bad cron":    {[]string{"governance", "schedule", "create", "nightly", "--cron", "daily"}, `--cron="daily"`},
		"schedule bad every":   {[]string{"governance", "schedule", "update", "nightly", "--every", "-1h"}, "--every=-1h0m0s"},
		"schedule bad kind":    {[]string{"governance", "schedule", "create", "nightly", "--every", "1h", "--workflow", "bogus"}, `--workflow="bogus"`},
		"schedule bad name":    {[]string{"governance", "schedule", "create", "a/b", "--every", "1h"}, `schedule name "a/b"`},
		"schedule bad mode":    {[]string{"governance", "schedule", "create", "n", "--every", "1h", "--mode", "yolo"}, `mode="yolo"`},
		"watch bad samples":    {[]string{"governance", "schedule", "create", "n", "--every", "1h", "--workflow", "quota-watch", "--samples-path", "rel"}, `samplesPath="rel"`},
		"sp schedule format":   {[]string{"savepoints", "schedule", "create", "n", "--every", "6h", "--format", "zip"}, `format="ZIP"`},
		"sp schedule conc":     {[]string{"savepoints", "schedule", "create", "n", "--every", "6h", "--concurrency", "0"}, "concurrency=0"},
		"sp schedule glob":     {[]string{"savepoints", "schedule", "create", "n", "--every", "6h", "--include-job", "a["}, `"a["`},
		"sp schedule no spec":  {[]string{"savepoints", "schedule", "create", "n"}, "--cron"},
		"quota bad timeout":    {[]string{"quota", "--timeout", "0s"}, "--timeout=0s"},
		"quota bad watermarks": {[]string{"quota", "--warning-percent", "95", "--critical-percent", "90"}, "warningPercent=95"},
		"quota extra argument": {[]string{"quota", "extra"}, "extra"},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := runCLI(append(tc.args, "--address", "127.0.0.1:1", "--connect-timeout", "1s"), nil)
			if code != exitUsage {
				t.Fatalf("exit code %d, want %d; stderr: %s", code, exitUsage, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Fatalf("stderr %q does not mention %q", stderr, tc.want)
			}
		})
	}
}
