//go:build realpeers

package app_test

import (
	"context"
	"os"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// TestPingOnDevServer runs the real worker registration against a real
// Temporal dev server and completes a workflow end to end.
func TestPingOnDevServer(t *testing.T) {
	t.Parallel()
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	const queue = "app-test"
	w := worker.New(tmp.Client, queue, worker.Options{})
	app.Register(w, &app.Ports{Identity: "app-test-worker"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.PingWorkflowID("app-test"), TaskQueue: queue},
		workflows.PingWorkflowType, workflows.PingInput{Message: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	var res workflows.PingResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if res.Message != "hello" || res.Worker != "app-test-worker" || res.Hostname == "" || res.AnsweredAt.IsZero() {
		t.Fatalf("unexpected result %+v", res)
	}
	if path := os.Getenv(sandbox.EnvCaptureHistory); path != "" {
		sandbox.CaptureHistory(t, tmp.Client, run.GetID(), run.GetRunID(), path+"/ping.json.gz")
	}
}
