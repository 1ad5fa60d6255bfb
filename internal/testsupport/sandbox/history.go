package sandbox

import (
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	enumspb "go.temporal.io/api/enums/v1"
)

// EnvCaptureHistory names a directory; when set, integration tests write the
// histories of the workflows they ran there, for the replay tests.
const EnvCaptureHistory = "FLINKMAINT_CAPTURE_HISTORY"

// CaptureHistory writes a closed workflow's history as gzipped JSON, the
// format the replay tests read (the same JSON `temporal workflow show
// --output json` prints), and the workflow ID beside it in <name>.id.
func CaptureHistory(t testing.TB, c client.Client, workflowID, runID, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	iter := c.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	hist := &historypb.History{}
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatalf("read history of %s: %v", workflowID, err)
		}
		hist.Events = append(hist.Events, ev)
	}
	data, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(hist)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	// A temporary file renamed into place: tests that run in parallel never
	// leave a half-written recording for the replay test.
	f, err := os.CreateTemp(filepath.Dir(path), ".capture-*")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f.Name())
	zw := gzip.NewWriter(f)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		t.Fatal(err)
	}
	// Workflows that derive names from their own ID replay only under it.
	if err := os.WriteFile(strings.TrimSuffix(path, ".json.gz")+".id", []byte(workflowID+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("captured history of %s (%d events) to %s", workflowID, len(hist.Events), path)
}

// CaptureEveryType writes, for each workflow type that ran on the server,
// the history of its shortest completed run (a closed or an open one if
// none completed) as
// type-<WorkflowType>.json.gz in dir: children and singletons included,
// so the replay tests cover every registered type. A type already
// captured in dir by an earlier test is captured again only from a closed
// run that replaces an open one.
func CaptureEveryType(t testing.TB, c client.Client, dir string) {
	t.Helper()
	// Parallel tests compare with and replace one another's recordings.
	captureMu.Lock()
	defer captureMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// rank: 2 completed, 1 closed otherwise, 0 still open.
	type pick struct {
		id, runID string
		rank      int
		events    int64
	}
	best := map[string]pick{}
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{NextPageToken: token})
		if err != nil {
			t.Logf("capture every type: list workflows: %v", err)
			return
		}
		for _, e := range resp.Executions {
			p := pick{id: e.GetExecution().GetWorkflowId(), runID: e.GetExecution().GetRunId(), events: e.GetHistoryLength()}
			switch e.GetStatus() {
			case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
				p.rank = 2
			case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
			default:
				p.rank = 1
			}
			typ := e.GetType().GetName()
			if b, ok := best[typ]; !ok || p.rank > b.rank || p.rank == b.rank && p.events < b.events {
				best[typ] = p
			}
		}
		if token = resp.NextPageToken; len(token) == 0 {
			break
		}
	}
	for typ, p := range best {
		path := filepath.Join(dir, "type-"+typ+".json.gz")
		// Keep what an earlier test captured unless this run completed and
		// is shorter: the recordings stay small and complete.
		if had, ok := historyLength(path); ok && (p.rank < 2 || p.events >= had) {
			continue
		}
		CaptureHistory(t, c, p.id, p.runID, path)
	}
}

var captureMu sync.Mutex

// historyLength is the number of events of a captured history; ok is
// false when there is none at path or it does not read.
func historyLength(path string) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return 0, false
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return 0, false
	}
	var h historypb.History
	if protojson.Unmarshal(data, &h) != nil {
		return 0, false
	}
	return int64(len(h.Events)), true
}
