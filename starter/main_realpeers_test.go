//go:build realpeers

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/flinkmaint/flinkmaint/activities"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// TestPingOnDevServer runs `flinkmaint ping` against a real dev server: with
// a worker it succeeds and prints the UI link; without one it times out with
// exit code 4.
func TestPingOnDevServer(t *testing.T) {
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	w := worker.New(tmp.Client, "cli-test", worker.Options{})
	app.Register(w, &activities.Activities{Identity: "cli-test-worker"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	env := map[string]string{"TEMPORAL_ADDRESS": tmp.HostPort, "FLINKMAINT_TASK_QUEUE": "cli-test"}

	code, stdout, stderr := runCLI([]string{"ping", "--message", "hello"}, env)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{`"hello"`, "cli-test-worker", "round trip", "http://localhost:8233/namespaces/default/workflows/ping%2F"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table output lacks %q:\n%s", want, stdout)
		}
	}

	code, stdout, stderr = runCLI([]string{"ping", "-o", "json", "--ui-url", "https://temporal.example/"}, env)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out pingOutput
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("json output: %v\n%s", err, stdout)
	}
	if out.Worker != "cli-test-worker" || out.RoundTrip <= 0 || !strings.HasPrefix(out.URL, "https://temporal.example/namespaces/default/workflows/") {
		t.Fatalf("unexpected json output %+v", out)
	}

	env["FLINKMAINT_TASK_QUEUE"] = "nobody-polls-this"
	code, _, stderr = runCLI([]string{"ping", "--timeout", "3s"}, env)
	if code != exitWorkflowFailed || !strings.Contains(stderr, "nobody-polls-this") {
		t.Fatalf("exit %d, stderr %q; want %d naming the task queue", code, stderr, exitWorkflowFailed)
	}
}

// TestDoctorOnDevServer runs `flinkmaint doctor` against real dev servers:
// healthy with a worker (exit 0, every check ok); a task queue nobody polls
// fails the workers check (exit 1) naming the queue; a namespace without
// flinkmaint's search attributes fails that check with the command that
// creates the missing ones.
func TestDoctorOnDevServer(t *testing.T) {
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	w := worker.New(tmp.Client, "doctor-test", worker.Options{Identity: "doctor-test-worker"})
	app.Register(w, &activities.Activities{Identity: "doctor-test-worker"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	doctor := func(env map[string]string) (int, map[string]doctorCheck) {
		t.Helper()
		code, stdout, stderr := runCLI([]string{"doctor", "-o", "json", "--timeout", "20s"}, env)
		var checks []doctorCheck
		if err := json.Unmarshal([]byte(stdout), &checks); err != nil {
			t.Fatalf("doctor: exit %d: %v\n%s%s", code, err, stdout, stderr)
		}
		byName := map[string]doctorCheck{}
		for _, c := range checks {
			byName[c.Check] = c
		}
		return code, byName
	}
	env := map[string]string{"TEMPORAL_ADDRESS": tmp.HostPort, "FLINKMAINT_TASK_QUEUE": "doctor-test"}
	code, checks := doctor(env)
	if code != exitOK || len(checks) != 5 {
		t.Fatalf("doctor with a worker: exit %d, %+v; want exit 0 and five checks", code, checks)
	}
	for name, c := range checks {
		if c.Result != checkOK {
			t.Errorf("%s: %+v; want ok", name, c)
		}
	}
	if !strings.Contains(checks["workers"].Detail, "doctor-test-worker") || !strings.Contains(checks["round trip"].Detail, "doctor-test-worker") {
		t.Errorf("workers and round trip should name the worker: %+v %+v", checks["workers"], checks["round trip"])
	}

	env["FLINKMAINT_TASK_QUEUE"] = "nobody-polls-this"
	if code, checks := doctor(env); code != exitFailure || checks["workers"].Result != checkFail ||
		!strings.Contains(checks["workers"].Fix, "worker.taskQueue=nobody-polls-this") {
		t.Fatalf("doctor on a queue nobody polls: exit %d, %+v", code, checks)
	}

	bare := sandbox.StartTemporal(t, temporal.NewSearchAttributes(workflows.SearchAttrKind.ValueSet("")))
	code, checks = doctor(map[string]string{"TEMPORAL_ADDRESS": bare.HostPort, "FLINKMAINT_TASK_QUEUE": "doctor-test"})
	sa := checks["search attributes"]
	if code != exitFailure || sa.Result != checkFail || strings.Contains(sa.Detail, "FlinkmaintKind") ||
		!strings.Contains(sa.Fix, "--name FlinkmaintTenants --type KeywordList") || strings.Count(sa.Fix, "--name ") != 6 {
		t.Fatalf("doctor without the search attributes: exit %d, %+v", code, sa)
	}
}
