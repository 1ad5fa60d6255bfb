//go:build realpeers

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/notify"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// TestPingOnDevServer runs `flinkmaint ping` against a real dev server: with
// a worker it succeeds and prints the UI link; without one it times out with
// exit code 4.
func TestPingOnDevServer(t *testing.T) {
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	w := worker.New(tmp.Client, "cli-test", worker.Options{})
	app.Register(w, &app.Ports{Identity: "cli-test-worker"})
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
	// A worker over a real local root: its trash root is created at first
	// use, so doctor probes the root itself.
	root := t.TempDir()
	cfg := config.Default()
	cfg.Storage.WritableRoots = []string{root}
	cfg.Cleanup.TrashRoot = root + "/trash"
	startDoctorWorker(t, tmp, "doctor-test", cfg)
	// A worker whose root is gone, whose inventory's cluster does not
	// answer and whose notification sink refuses connections.
	inv := filepath.Join(t.TempDir(), "inventory.yaml")
	if err := os.WriteFile(inv, []byte("tenants: [{name: t1, root: "+root+"/t1}]\nclusters: [{tenant: t1, clusterId: c1, mode: session, restUrl: \"http://127.0.0.1:1\"}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	broken := config.Default()
	broken.Storage.WritableRoots = []string{root + "/gone"}
	broken.Inventory.StaticFile = inv
	broken.Notify.Sinks = []notify.SinkConfig{{Name: "pager", Type: notify.TypeAlertmanager, URL: "http://127.0.0.1:1"}}
	startDoctorWorker(t, tmp, "doctor-broken", broken)
	doctor := func(env map[string]string) (int, map[string]doctorCheck) {
		t.Helper()
		code, stdout, stderr := runCLI([]string{"doctor", "-o", "json", "--timeout", "60s"}, env)
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
	if code != exitOK || len(checks) != 8 {
		t.Fatalf("doctor with a worker: exit %d, %+v; want exit 0 and eight checks", code, checks)
	}
	for name, c := range checks {
		if c.Result != checkOK {
			t.Errorf("%s: %+v; want ok", name, c)
		}
	}
	if !strings.Contains(checks["workers"].Detail, "doctor-test-worker") || !strings.Contains(checks["round trip"].Detail, "doctor-test-worker") ||
		!strings.Contains(checks["worker version"].Detail, "doctor-test-worker") {
		t.Errorf("workers, round trip and worker version should name the worker: %+v %+v %+v", checks["workers"], checks["round trip"], checks["worker version"])
	}
	if c := checks["storage trash root "+root+"/trash"]; c.Detail != "writable in file://"+root+" (created at first use)" {
		t.Errorf("trash root: %+v", c)
	}
	if leftover, _ := filepath.Glob(filepath.Join(root, ".flinkmaint-doctor-*")); len(leftover) > 0 || checks["storage writable root "+root].Detail != "readable and writable" {
		t.Errorf("writable root: %+v; probe files left: %v", checks["storage writable root "+root], leftover)
	}

	env["FLINKMAINT_TASK_QUEUE"] = "doctor-broken"
	code, checks = doctor(env)
	for check, want := range map[string]string{
		"storage writable root " + root + "/gone": "does not exist",
		"flink clusters": "1 of 1 do not answer: c1 (http://127.0.0.1:1)",
		"notify pager":   "alertmanager sink pager",
	} {
		if c := checks[check]; c.Result != checkFail || !strings.Contains(c.Detail, want) || c.Fix == "" {
			t.Errorf("%s: %+v; want fail with %q and a fix", check, c, want)
		}
	}
	if code != exitFailure || checks["inventory"].Result != checkOK {
		t.Fatalf("doctor on the broken worker: exit %d, %+v; want exit 1", code, checks)
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

// startDoctorWorker starts a worker on queue with activities built from
// cfg as the worker binary builds them.
func startDoctorWorker(t *testing.T, tmp *sandbox.Temporal, queue string, cfg config.Config) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	acts, closeAdapters, err := app.NewPorts(cfg, queue+"-worker")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = closeAdapters() })
	w := worker.New(tmp.Client, queue, worker.Options{Identity: queue + "-worker"})
	app.Register(w, acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	// The server lists a poller from its first poll on; doctor must not
	// run before that.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, typ := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
		for {
			resp, err := tmp.Client.DescribeTaskQueue(ctx, queue, typ)
			if err == nil && len(resp.GetPollers()) > 0 {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("no worker polls %s for %s tasks: %v", queue, typ, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
