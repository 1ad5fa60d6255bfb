package sandbox

import (
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	historypb "go.temporal.io/api/history/v1"
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
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
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
	// Workflows that derive names from their own ID replay only under it.
	if err := os.WriteFile(strings.TrimSuffix(path, ".json.gz")+".id", []byte(workflowID+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("captured history of %s (%d events) to %s", workflowID, len(hist.Events), path)
}
