package cleanup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPurgeRefusesARunARestoreSourceNeeds: two runs past the TTL; a live
// job restored from a savepoint in one of them (named under another
// spelling of the file system), the other needed by nothing. The needed
// run is refused and recorded with who needs it, the other purged; a
// source that does not answer stops the purge before anything goes.
func TestPurgeRefusesARunARestoreSourceNeeds(t *testing.T) {
	e := newLocalEnv(t)
	for _, run := range []string{"needed-run", "free-run"} {
		dir := filepath.Join(e.trash, run, "savepoints", "savepoint-aaaaaa-000000000001")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "_metadata"), []byte("m"), 0o644); err != nil {
			t.Fatal(err)
		}
		filepath.Walk(filepath.Join(e.trash, run), func(p string, _ os.FileInfo, _ error) error { return os.Chtimes(p, e.past, e.past) })
	}
	restored := "file:" + filepath.Join(e.trash, "needed-run", "savepoints", "savepoint-aaaaaa-000000000001") // file:/ spelling
	cfg := PurgeConfig{FS: e.fs, TrashRoot: "file://" + e.trash, TTL: 7 * 24 * time.Hour, Now: time.Now(),
		Needed: func(context.Context) (map[string]string, error) { return nil, errors.New("cluster c1 does not answer") }}
	if res, err := PurgeTrash(context.Background(), cfg); err == nil || !IsRetryable(err) || len(res.Purged) != 0 {
		t.Fatalf("purge with a source that does not answer: %+v, %v; want a retryable error and nothing purged", res, err)
	}
	for _, run := range []string{"needed-run", "free-run"} {
		if _, err := os.Stat(filepath.Join(e.trash, run)); err != nil {
			t.Fatalf("%s gone after a purge that could not read its sources", run)
		}
	}
	cfg.Needed = func(context.Context) (map[string]string, error) {
		return map[string]string{restored: "restore point of live job ab12 on cluster c1"}, nil
	}
	res, err := PurgeTrash(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Purged) != 1 || !strings.HasSuffix(res.Purged[0].Path, "/free-run") {
		t.Fatalf("purged %+v; want only free-run", res.Purged)
	}
	if len(res.Refused) != 1 || !strings.HasSuffix(res.Refused[0].Path, "/needed-run") || !strings.Contains(res.Refused[0].Detail, "live job ab12") {
		t.Fatalf("refused %+v; want needed-run, naming the job", res.Refused)
	}
	if _, err := os.Stat(filepath.Join(e.trash, "needed-run", "savepoints", "savepoint-aaaaaa-000000000001", "_metadata")); err != nil {
		t.Fatalf("the savepoint a live job restores from is gone: %v", err)
	}
	data, err := os.ReadFile(strings.TrimPrefix(res.Manifest, "file://"))
	if err != nil || !strings.Contains(string(data), `"outcome":"refused"`) {
		t.Fatalf("purge manifest %s: %v %s; want the refused run recorded", res.Manifest, err, data)
	}
}
