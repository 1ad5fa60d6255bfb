package workflows_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/temporalconn"
)

// TestReplayRecordedHistories replays every recorded history against the
// current workflow code: a change that would break running workflows fails
// here. Record new histories with `make capture-history`.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no recorded histories in testdata/histories: run `make capture-history`")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := readGzip(file)
			if err != nil {
				t.Fatal(err)
			}
			hist, err := client.HistoryFromJSON(bytes.NewReader(data), client.HistoryJSONOptions{})
			if err != nil {
				t.Fatalf("parse %s: %v", file, err)
			}
			// A replay checks determinism, not latency: under -race on two
			// busy cores, encoding a thousand jobs' manifest can take longer
			// than the SDK's 1 s deadlock timeout without blocking anything.
			replayer, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: temporalconn.DataConverter(),
				DisableDeadlockDetection: true})
			if err != nil {
				t.Fatal(err)
			}
			app.RegisterWorkflows(replayer)
			// A workflow that names its children after its own ID replays
			// under the ID it ran with, recorded beside the history.
			var opts worker.ReplayWorkflowHistoryOptions
			if id, err := os.ReadFile(strings.TrimSuffix(file, ".json.gz") + ".id"); err == nil {
				opts.OriginalExecution.ID = strings.TrimSpace(string(id))
			}
			if err := replayer.ReplayWorkflowHistoryWithOptions(nil, hist, opts); err != nil {
				t.Fatalf("replay %s: %v", file, err)
			}
		})
	}
}

func readGzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}
