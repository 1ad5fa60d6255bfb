// Package peertest holds the helpers the real-peer tests share: the files a
// worker reads, Flink and Temporal waits, and one way to poll a condition.
// Each helper fails the test with what it last saw rather than returning an
// error, so tests read as the scenario they prove.
package peertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"gopkg.in/yaml.v3"

	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// WriteInventory writes static as the inventory.yaml a worker reads and
// returns its path (in the test's temporary dir).
func WriteInventory(t testing.TB, static inventory.Static) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "inventory.yaml")
	data, err := yaml.Marshal(static)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// WorkerConfig is the configuration of a worker process under test: the
// dev server at temporalHostPort, its own task queue, 5 s to stop, no HTTP
// listener (several run side by side). Tests add storage, inventory and
// cleanup settings, then write it with WorkerConfigYAML or WriteWorkerConfig.
func WorkerConfig(temporalHostPort, queue string) config.Config {
	cfg := config.Default()
	cfg.Temporal.Address = temporalHostPort
	cfg.Worker.TaskQueue = queue
	cfg.Worker.ShutdownTimeout = config.Duration(5 * time.Second)
	cfg.HTTP.Listen = ""
	return cfg
}

// WorkerConfigYAML is cfg as the worker.yaml the worker reads: only the
// keys that differ from the defaults, so a worker of an earlier release
// (the rolling-upgrade test) reads it too. It must pass the worker's own
// validation: a test never starts a worker that would exit on its
// configuration.
func WorkerConfigYAML(t testing.TB, cfg config.Config) string {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("worker configuration of the test: %v", err)
	}
	asMap := func(c config.Config) map[string]any {
		data, err := yaml.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	data, err := yaml.Marshal(withoutDefaults(asMap(cfg), asMap(config.Default())))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// withoutDefaults drops from m every key whose value is the default's.
func withoutDefaults(m, def map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		sub, isMap := v.(map[string]any)
		defSub, defIsMap := def[k].(map[string]any)
		switch {
		case isMap && defIsMap:
			if rest := withoutDefaults(sub, defSub); len(rest) > 0 {
				out[k] = rest
			}
		case !reflect.DeepEqual(v, def[k]):
			out[k] = v
		}
	}
	return out
}

// WriteWorkerConfig writes cfg as worker.yaml in the test's temporary dir
// and returns its path.
func WriteWorkerConfig(t testing.TB, cfg config.Config) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(path, []byte(WorkerConfigYAML(t, cfg)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// RandomHex is n random bytes in hex: names of tenants, dirs and queues that
// no other test, run beside this one, uses.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// FlinkClient is a REST client of the Flink cluster at url.
func FlinkClient(t testing.TB, url string) *flink.Client {
	t.Helper()
	c, err := flink.New(flink.Options{BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// WaitFor polls cond until it holds, failing the test with cond's last word
// when bound (or ctx) passes first.
func WaitFor(t testing.TB, ctx context.Context, bound time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	for {
		ok, why := cond()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v; last: %s", what, ctx.Err(), why)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// WaitForCheckpoint waits until Flink counts a completed checkpoint of the
// job (at most 3 minutes).
func WaitForCheckpoint(t testing.TB, ctx context.Context, c *flink.Client, jobID string) {
	t.Helper()
	WaitFor(t, ctx, 3*time.Minute, "a completed checkpoint of job "+jobID, func() (bool, string) {
		stats, err := c.Checkpoints(ctx, jobID)
		if err != nil {
			return false, err.Error()
		}
		if stats.Counts.Completed > 0 {
			return true, ""
		}
		return false, checkpointWaitState(ctx, c, jobID, stats)
	})
}

// checkpointWaitState says why a job has no completed checkpoint yet: its
// state and task statuses, the checkpoints counted, and the free slots of
// its cluster (a job whose tasks wait for a slot takes no checkpoint).
func checkpointWaitState(ctx context.Context, c *flink.Client, jobID string, stats flink.CheckpointingStatistics) string {
	why := fmt.Sprintf("no completed checkpoint yet (%d triggered, %d in progress, %d failed)",
		stats.Counts.Total, stats.Counts.InProgress, stats.Counts.Failed)
	if d, err := c.JobDetails(ctx, jobID); err == nil {
		why += fmt.Sprintf("; job %s, tasks %v", d.State, d.StatusCounts)
	}
	if o, err := c.ClusterOverview(ctx); err == nil {
		why += fmt.Sprintf("; cluster: %d of %d slots free, %d jobs running", o.SlotsAvailable, o.SlotsTotal, o.JobsRunning)
	}
	return why
}

// WaitForWindow polls the window's status until done holds; a window that
// ends first fails the test.
func WaitForWindow(t testing.TB, ctx context.Context, c client.Client, run client.WorkflowRun, done func(workflows.WindowState) bool) workflows.WindowState {
	t.Helper()
	var st workflows.WindowState
	for ctx.Err() == nil {
		v, err := c.QueryWorkflow(ctx, run.GetID(), "", workflows.QueryStatus)
		if err == nil && v.Get(&st) == nil && done(st) {
			return st
		}
		if st.Phase == workflows.WindowPhaseCompleted || st.Phase == workflows.WindowPhaseAborted {
			t.Fatalf("window ended (%s) before the expected state: %+v", st.Phase, st)
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("window never reached the expected state; last: phase %s pending %+v", st.Phase, st.Pending)
	return st
}

// WorkflowEnded returns a check that says how workflow id ended, or ""
// while it runs (or cannot be asked): for a wait on a case the run must
// reach before it ends, such as a fault hook's hold.
func WorkflowEnded(ctx context.Context, c client.Client, id string) func() string {
	return func() string {
		d, err := c.DescribeWorkflow(ctx, id, "")
		if err != nil {
			return ""
		}
		if st := d.RawResponse.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return fmt.Sprintf("workflow %s ended %s first", id, st)
		}
		return ""
	}
}

// Update sends a workflow update and waits until the workflow has run it.
func Update(t testing.TB, ctx context.Context, c client.Client, run client.WorkflowRun, name string, arg any) {
	t.Helper()
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: name,
		Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		t.Fatalf("update %s: %v", name, err)
	}
	if err := h.Get(ctx, nil); err != nil {
		t.Fatalf("update %s: %v", name, err)
	}
}

// NewPorts builds the worker's real ports from cfg, as the worker
// does, and closes their adapters when the test ends.
func NewPorts(t testing.TB, cfg config.Config, identity string) *app.Ports {
	t.Helper()
	acts, closeAdapters, err := app.NewPorts(cfg, identity)
	if err != nil {
		t.Fatalf("activities from the test's configuration: %v", err)
	}
	t.Cleanup(func() { _ = closeAdapters() })
	return acts
}
