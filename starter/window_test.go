package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// Every window subcommand refuses a wrong number of arguments as a usage
// error (exit 2) before it dials Temporal, naming what it takes.
func TestWindowSubcommandsRefuseWrongArgumentCounts(t *testing.T) {
	// flags each subcommand needs past its arguments, so only the count is
	// wrong.
	oneID := map[string][]string{
		"status": nil, "report": nil, "pause": nil, "resume": nil,
		"confirm-network-change": {"--reason", "done"},
		"decide":                 {"--action", "resume"},
		"abort":                  {"--reason", "outage"},
	}
	noArgs := map[string][]string{"start": {"-f", "window.yaml"}, "list": nil, "plan": {"-f", "window.yaml"}}
	for _, sub := range newWindowCommand(&globals{}).Commands() {
		name := sub.Name()
		if _, ok := oneID[name]; !ok {
			if _, ok := noArgs[name]; !ok {
				t.Errorf("window %s is not covered by this test", name)
			}
		}
	}
	for name, flags := range oneID {
		for _, ids := range [][]string{nil, {"w1", "w2"}} {
			args := append(append([]string{"window", name}, ids...), flags...)
			code, _, stderr := runCLI(args, nil)
			want := []string{"flinkmaint window " + name + " takes exactly one WINDOW-ID argument, got " + string(rune('0'+len(ids))),
				"usage: flinkmaint window " + name + " WINDOW-ID"}
			if code != exitUsage {
				t.Errorf("%v: exit %d, want %d; stderr %q", args, code, exitUsage, stderr)
			}
			for _, w := range want {
				if !strings.Contains(stderr, w) {
					t.Errorf("%v: stderr %q does not say %q", args, stderr, w)
				}
			}
		}
	}
	for name, flags := range noArgs {
		args := append([]string{"window", name, "extra"}, flags...)
		if code, _, stderr := runCLI(args, nil); code != exitUsage || !strings.Contains(stderr, `"extra"`) {
			t.Errorf("%v: exit %d, stderr %q; want %d naming the extra argument", args, code, stderr, exitUsage)
		}
	}
}

// `window status` shows a decision about failed jobs a line per job, and
// the commands that answer it.
func TestPrintWindowStateShowsEachFailedJobAndTheCommands(t *testing.T) {
	st := workflows.WindowState{WindowID: "w1", Phase: workflows.WindowPhaseSavepointAll,
		Jobs: []workflows.JobProgress{{Target: core.JobTarget{Key: "cluster-b/job-b"}, SavepointState: workflows.StepFailed,
			Seen: core.JobSeenUnanswered, SavepointError: "connection refused"}},
		Pending: &workflows.PendingDecision{Kind: workflows.DecisionSavepointFailures, Since: time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC),
			Reason: "1 job(s) could not be stopped with a savepoint:\n- cluster-b/job-b: its state is unknown because its cluster did not answer; cause: connection refused",
			Jobs:   []string{"cluster-b/job-b"}, Allowed: []string{workflows.ActionRetryJob, workflows.ActionSkipJob, workflows.ActionResume, workflows.ActionAbort}}}
	var out bytes.Buffer
	if err := printWindowState(&out, &st); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"waiting savepoint-failures since 06:00:00\n        1 job(s) could not be stopped with a savepoint:\n" +
			"        - cluster-b/job-b: its state is unknown because its cluster did not answer; cause: connection refused\n",
		"answer: flinkmaint window decide w1 --action retry-job --job cluster-b/job-b --reason TEXT",
		"answer: flinkmaint window decide w1 --action skip-job --job cluster-b/job-b --reason TEXT",
		"answer: flinkmaint window decide w1 --action resume --reason TEXT",
		"answer: flinkmaint window decide w1 --action abort --reason TEXT",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status does not show %q:\n%s", want, out.String())
		}
	}
}

// A window file names every unknown key with its path at once, and a value
// of the wrong type by its path and what it takes.
func TestWindowFileErrorsNameTheKeys(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ body, want string }{
		"unknown keys": {"windowId: w\nscope:\n  tenants: [a]\npolicy:\n  restart:\n    canarySze: 2\nfoo: 1\n",
			"unknown keys (see docs/window-file.md or deploy/examples/window.yaml): foo, policy.restart.canarySze"},
		"wrong type": {"windowId: w\npolicy:\n  savepoint:\n    concurrency: many\n", "policy.savepoint.concurrency is a text value; want a whole number"},
		"not keys":   {"- a\n- b\n", "want keys such as those of deploy/examples/window.yaml, not a list"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
			if err := os.WriteFile(path, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runCLI([]string{"window", "start", "-f", path}, nil)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d mentioning %q", code, stderr, exitUsage, tc.want)
			}
		})
	}
}
