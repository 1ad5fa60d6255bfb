package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func runCLI(args []string, env map[string]string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, envOf(env), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestUsageErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
		want string
	}{
		"unknown command":       {[]string{"frobnicate"}, nil, "unknown command"},
		"unknown flag":          {[]string{"ping", "--frob"}, nil, "frob"},
		"bad output":            {[]string{"ping", "-o", "yaml"}, nil, `--output="yaml"`},
		"bad timeout":           {[]string{"ping", "--timeout", "0s"}, nil, "--timeout=0s"},
		"bad TLS env":           {[]string{"ping"}, map[string]string{"TEMPORAL_TLS": "perhaps"}, "TEMPORAL_TLS"},
		"cert without key":      {[]string{"ping", "--tls-cert", "/nonexistent/c.pem"}, nil, `--tls-cert="/nonexistent/c.pem" and --tls-key="": set both`},
		"unreadable CA":         {[]string{"ping", "--tls-ca", "/nonexistent/ca.pem"}, nil, `--tls-ca="/nonexistent/ca.pem" cannot be read`},
		"CA not PEM":            {[]string{"ping", "--tls-ca", "main_test.go"}, nil, `--tls-ca="main_test.go" holds no PEM certificate`},
		"cert and key not PEM":  {[]string{"ping", "--tls-cert", "main_test.go", "--tls-key", "main.go"}, nil, `--tls-cert="main_test.go" and --tls-key="main.go" are not a PEM client certificate and its private key`},
		"address without port":  {[]string{"ping", "--address", "temporal.example"}, nil, `--address="temporal.example" is not host:port`},
		"address of no host":    {[]string{"ping", "--address", "bad::addr"}, nil, `--address="bad::addr"`},
		"address from env":      {[]string{"ping"}, map[string]string{"TEMPORAL_ADDRESS": "a:b:c"}, `TEMPORAL_ADDRESS="a:b:c" is not host:port`},
		"group without name":    {[]string{"governance", "approve"}, nil, "exactly one NAME"},
		"approve without hash":  {[]string{"governance", "approve", "nightly"}, nil, "--plan-sha256 is required"},
		"decide bad action":     {[]string{"window", "decide", "w1", "--action", "frobnicate"}, nil, `--action="frobnicate" is not valid`},
		"retry-job without job": {[]string{"window", "decide", "w1", "--action", "retry-job"}, nil, "needs --job"},
		"resume with a job":     {[]string{"window", "decide", "w1", "--action", "resume", "--job", "c/o"}, nil, "--job applies to"},
		"window without file":   {[]string{"window", "start"}, nil, "-f window.yaml is required"},
		"window bad file":       {[]string{"window", "start", "-f", "/nonexistent/window.yaml"}, nil, "window file"},
		"group with argument":   {[]string{"quota", "extra"}, nil, "extra"},
		"adopt without job":     {[]string{"savepoints", "adopt", "hdfs://nn/sp/savepoint-a-b"}, nil, `--job=""`},
		"adopt without path":    {[]string{"savepoints", "adopt", "--job", "c/orders"}, nil, "at least one savepoint PATH"},
		"list bad job":          {[]string{"savepoints", "list", "--job", "orders"}, nil, `--job="orders"`},
		"list bad timeout":      {[]string{"savepoints", "list", "--timeout", "0s"}, nil, "--timeout=0s"},
		"list unknown of a job": {[]string{"savepoints", "list", "--unknown", "--job", "c/orders"}, nil, "--unknown and --job"},
		"drill run and snapshot": {[]string{"drill", "start", "--run", "window-w1", "--snapshot", "hdfs://nn/ck/chk-1", "--job", "c/o"}, nil,
			"--run and --snapshot are exclusive"},
		"drill snapshot without job": {[]string{"drill", "start", "--snapshot", "hdfs://nn/ck/chk-1"}, nil, `--job=""`},
		"drill job without snapshot": {[]string{"drill", "start", "--job", "c/o"}, nil, "give --snapshot too"},
		"drill bad tier":             {[]string{"drill", "start", "--tier", "3"}, nil, "tier=3"},
		"drill schedule no spec":     {[]string{"drill", "schedule", "create", "nightly"}, nil, "--every 24h"},
		"drill status without name":  {[]string{"drill", "status"}, nil, "exactly one NAME"},
		"watch bad interval":         {[]string{"window", "status", "w1", "--watch", "--interval", "0s"}, nil, "--interval=0s"},
		"until decision, no watch":   {[]string{"governance", "status", "nightly", "--until-decision"}, nil, "--until-decision goes with --watch"},
		"list bad status":            {[]string{"window", "list", "--status", "stuck"}, nil, `--status="stuck" is not valid`},
		"list bad limit":             {[]string{"governance", "list", "--limit", "0"}, nil, "--limit=0"},
		"list quoted tenant":         {[]string{"upgrade", "list", "--tenant", "a'b"}, nil, `--tenant="a'b"`},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := runCLI(tc.args, tc.env)
			if code != exitUsage {
				t.Fatalf("exit code %d, want %d; stderr: %s", code, exitUsage, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Fatalf("stderr %q does not mention %q", stderr, tc.want)
			}
		})
	}
}

func TestPingUnreachable(t *testing.T) {
	code, _, stderr := runCLI([]string{"ping", "--address", "127.0.0.1:1", "--connect-timeout", "1s"}, nil)
	if code != exitUnreachable || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Fatalf("exit %d, stderr %q; want %d naming the address", code, stderr, exitUnreachable)
	}
}

// TestShippedExamplesLoad keeps the documented example files valid.
func TestShippedExamplesLoad(t *testing.T) {
	in, err := loadWindowFile("../deploy/examples/window.yaml")
	if err != nil {
		t.Fatalf("example window.yaml: %v", err)
	}
	if in.WindowID != "2026-12-01-dc-network" || in.Policy.Restart.Soak.D().String() != "30s" || len(in.Scope.ExcludeJobs) != 1 {
		t.Fatalf("example window.yaml read wrong: %+v", in)
	}
	if _, err := inventory.LoadStatic("../deploy/examples/inventory.yaml"); err != nil {
		t.Fatalf("example inventory.yaml: %v", err)
	}
}

func TestWindowFileErrorsNameTheField(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"unknown key":     {"windowId: w\nreason: r\npolicy:\n  manifestDir: /m\n  savepoint:\n    concurency: 2\n", "concurency"},
		"bad duration":    {"windowId: w\nreason: r\npolicy:\n  manifestDir: /m\n  restart:\n    soak: soon\n", "soon"},
		"bare number":     {"windowId: w\nreason: r\npolicy:\n  manifestDir: /m\n  restart:\n    soak: 30\n", "duration 30 has no unit"},
		"bad policy":      {"windowId: w\nreason: r\npolicy:\n  manifestDir: /m\n  savepoint:\n    onFailure: cancel\n", "policy.savepoint.onFailure"},
		"missing field":   {"windowId: w\nreason: r\n", "policy.manifestDir"},
		"freeze override": {"windowId: w\nreason: r\npolicy:\n  manifestDir: /m\noverrideFreeze: {by: me, reason: r}\n", "overrideFreeze is not a key of the file (set by `window start --override-freeze --reason`"},
		"resume state":    {"windowId: w\nreason: r\npolicy:\n  manifestDir: /m\nresume: {}\n", "resume is not a key of the file"},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "window.yaml")
			if err := os.WriteFile(p, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := loadWindowFile(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// Window-file durations take days like every duration, and a bad one is
// named by its key path, with its value and valid examples.
func TestWindowFileDurations(t *testing.T) {
	write := func(t *testing.T, body string) string {
		p := filepath.Join(t.TempDir(), "window.yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const head = "windowId: w\nreason: r\npolicy:\n  manifestDir: /m\n"
	in, err := loadWindowFile(write(t, head+"  restart:\n    soak: 1d12h\n  cleanup:\n    policy:\n      retiredJobTTL: 14d\n      haTTL: 30d\n"))
	if err != nil {
		t.Fatalf("days: %v", err)
	}
	if p := in.Policy; p.Restart.Soak.D() != 36*time.Hour || p.Cleanup.Policy.RetiredJobTTL.D() != 14*24*time.Hour || p.Cleanup.Policy.HATTL.D() != 30*24*time.Hour {
		t.Fatalf("days read wrong: %+v", p)
	}
	for name, tc := range map[string]struct {
		body string
		want []string
	}{
		"bad ttl": {head + "  cleanup:\n    policy:\n      retiredJobTTL: 14x\n",
			[]string{`policy.cleanup.policy.retiredJobTTL: "14x" is not a duration`, "7d", "1d12h", "30s"}},
		"half day": {head + "  cleanup:\n    policy:\n      haTTL: 1.5d\n",
			[]string{`policy.cleanup.policy.haTTL: "1.5d" is not a duration`, "days are whole"}},
		"a list": {head + "  restart:\n    soak: [1, 2]\n",
			[]string{"policy.restart.soak: [1,2] is not a duration"}},
		"all at once": {head + "  restart:\n    soak: soon\n  cleanup:\n    policy:\n      grace: 2x\n    typo: 1\n",
			[]string{"policy.cleanup.typo", "policy.restart.soak: \"soon\"", "policy.cleanup.policy.grace: \"2x\""}},
		"negative stays refused": {head + "  cleanup:\n    policy:\n      retiredJobTTL: -14d\n",
			[]string{"policy.cleanup.policy.retiredJobTTL=-336h0m0s: use a positive duration"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadWindowFile(write(t, tc.body))
			for _, want := range tc.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v; want one saying %q", err, want)
				}
			}
		})
	}
}

// `flinkmaint version` and --version name the release and the commit,
// without dialing Temporal.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errOut := runCLI(args, nil)
		if code != exitOK || !strings.HasPrefix(out, "flinkmaint "+version+" (commit ") || !strings.Contains(out, "go1.") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want the release, the commit and the Go version", args, code, out, errOut)
		}
	}
}

// A restore needs a reason unless it is a dry run, and a run name that
// can name a trash dir.
func TestGovernanceRestoreUsage(t *testing.T) {
	for args, want := range map[string]string{
		"governance restore":                        "exactly one RUN",
		"governance restore nightly-1":              "--reason is required",
		"governance restore ../x --dry-run":         "runId",
		"governance restore nightly-1 --timeout 0s": "--timeout=0s",
	} {
		code, _, errOut := runCLI(strings.Fields(args), nil)
		if code != exitUsage || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, stderr %q; want usage error naming %q", args, code, errOut, want)
		}
	}
}

// Durations of every flag are read by internal/duration, so they take
// whole days too; a bad one names the flag, the value and valid examples.
func TestDurationFlagsTakeDays(t *testing.T) {
	for in, want := range map[string]time.Duration{"7d": 7 * 24 * time.Hour, "1d12h": 36 * time.Hour, "90m": 90 * time.Minute, "0s": 0} {
		fl := pflag.NewFlagSet("t", pflag.ContinueOnError)
		var got time.Duration
		durationFlag(fl, &got, "ttl", time.Hour, "")
		if err := fl.Parse([]string{"--ttl", in}); err != nil || got != want {
			t.Errorf("--ttl %s = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"1.5d", "d", "7dd", "soon", "1d-2h", "x1d"} {
		fl := pflag.NewFlagSet("t", pflag.ContinueOnError)
		var got time.Duration
		durationFlag(fl, &got, "ttl", time.Hour, "")
		if err := fl.Parse([]string{"--ttl", in}); err == nil {
			t.Errorf("--ttl %s = %v; want an error", in, got)
		}
	}
	code, _, stderr := runCLI([]string{"governance", "plan", "--grace", "2x"}, nil)
	for _, want := range []string{"--grace", `"2x" is not a duration`, "7d", "1d12h"} {
		if code != exitUsage || !strings.Contains(stderr, want) {
			t.Errorf("--grace 2x: exit %d, stderr %q; want a usage error saying %q", code, stderr, want)
		}
	}
}

// A cron expression the server keeps as a calendar reads as cron again.
func TestSpecTextWritesCalendarsAsCron(t *testing.T) {
	s := client.ScheduleSpec{TimeZoneName: "Europe/Berlin", Calendars: []client.ScheduleCalendarSpec{{
		Minute: []client.ScheduleRange{{Start: 0}}, Hour: []client.ScheduleRange{{Start: 3}},
		DayOfMonth: []client.ScheduleRange{{Start: 1, End: 31}}, Month: []client.ScheduleRange{{Start: 1, End: 12}},
		DayOfWeek: []client.ScheduleRange{{Start: 1, End: 5}, {Start: 0, End: 6, Step: 2}},
	}}}
	if got, want := specText(s), "cron 0 3 * * 1-5,0-6/2 (Europe/Berlin)"; got != want {
		t.Errorf("specText = %q, want %q", got, want)
	}
}

// The restore's help says what it gives back: a snapshot whole, with
// what its _metadata names from any run's trash, or nothing of it.
// On 5024bd4 it says each item goes back on its own.
func TestGovernanceRestoreHelpSaysItRestoresWholeSnapshots(t *testing.T) {
	code, out, errOut := runCLI([]string{"governance", "restore", "--help"}, nil)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var missing []string
	for _, want := range []string{"everything its _metadata names", "earlier run", "nothing of it moves", "running job"} {
		if !strings.Contains(out, want) {
			missing = append(missing, want)
		}
	}
	if len(missing) > 0 {
		t.Errorf("help %q; want it to say %q", out, missing)
	}
}
