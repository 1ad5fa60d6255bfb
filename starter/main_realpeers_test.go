//go:build realpeers

package main

import (
	"encoding/json"
	"strings"
	"testing"

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
