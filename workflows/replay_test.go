package workflows_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/temporalconn"
	"github.com/flinkmaint/flinkmaint/workflows"
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
			hist := readHistory(t, file)
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

// typeNames records the workflow types a registry is given.
type typeNames []string

func (n *typeNames) RegisterWorkflowWithOptions(_ interface{}, o workflow.RegisterOptions) {
	*n = append(*n, o.Name)
}

// TestRecordedHistoriesCoverEveryTypeAndChange fails when a registered
// workflow type has no recorded history, or when no history shows a
// change of the version ledger at its newest version: the code path that
// runs started today take would then be unproven by replay. Record with
// `make capture-history`.
func TestRecordedHistoriesCoverEveryTypeAndChange(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]bool{}
	versions := map[string]workflow.Version{} // the newest seen per change id
	dc := converter.GetDefaultDataConverter()
	for _, file := range files {
		for _, ev := range readHistory(t, file).GetEvents() {
			if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
				types[a.GetWorkflowType().GetName()] = true
			}
			m := ev.GetMarkerRecordedEventAttributes()
			if m == nil || m.GetMarkerName() != "Version" {
				continue
			}
			var id string
			var v workflow.Version
			if dc.FromPayloads(m.GetDetails()["change-id"], &id) != nil || dc.FromPayloads(m.GetDetails()["version"], &v) != nil {
				t.Fatalf("%s: a version marker that does not decode: %v", file, m.GetDetails())
			}
			if v > versions[id] {
				versions[id] = v
			}
		}
	}
	var registered typeNames
	app.RegisterWorkflows(&registered)
	for _, typ := range registered {
		if !types[typ] {
			t.Errorf("workflow type %s has no recorded history in testdata/histories: record one (make capture-history)", typ)
		}
	}
	for _, c := range workflows.VersionLedger {
		if versions[c.ID] < c.Newest {
			t.Errorf("change %s: no recorded history shows version %d (newest seen: %d): record a run on the new branch (make capture-history)", c.ID, c.Newest, versions[c.ID])
		}
	}
}

// readHistory reads a recorded history (gzipped JSON).
func readHistory(t *testing.T, file string) *historypb.History {
	t.Helper()
	data, err := readGzip(file)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := client.HistoryFromJSON(bytes.NewReader(data), client.HistoryJSONOptions{})
	if err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	return hist
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
