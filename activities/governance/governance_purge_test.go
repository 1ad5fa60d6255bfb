package governance

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/internal/acttest"
	"github.com/flinkmaint/flinkmaint/internal/checkpoint/checkpointtest"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// TestPurgeKeepsWhatASnapshotRestoredFromTheTrashNeeds: a trash run past
// its TTL holds a savepoint a job was started from in CLAIM mode. The job
// has stopped (no cluster lists it), but its retained checkpoint names
// the savepoint's file at its trash path: the purge refuses the run,
// naming that checkpoint, as it does when a _metadata under a root cannot
// be read (it may name anything in the trash); a run nothing names goes.
func TestPurgeKeepsWhatASnapshotRestoredFromTheTrashNeeds(t *testing.T) {
	const job = "5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e"
	for name, tc := range map[string]struct {
		// metadata, when set, is the stopped job's retained checkpoint,
		// given the trashed savepoint's file.
		metadata func(trashed string) []byte
		refused  bool
	}{
		// On 5024bd4 the run is purged: purge read only live jobs.
		"a stopped job's retained checkpoint names the trash path": {
			metadata: func(trashed string) []byte {
				return checkpointtest.Metadata(checkpointtest.Spec{CheckpointID: 3, Files: []checkpointtest.File{{Path: trashed, Shared: true, Size: 1}}})
			},
			refused: true,
		},
		// On 5024bd4 the run is purged.
		"a _metadata under a root that cannot be read may name the trash": {
			metadata: func(string) []byte { return []byte("not a checkpoint") },
			refused:  true,
		},
		"nothing names the trash run": {},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			tenant, trash := filepath.Join(dir, "tenant"), filepath.Join(dir, "trash")
			longAgo := time.Now().Add(-30 * 24 * time.Hour)
			sp := filepath.Join(tenant, "savepoints", "savepoint-5e5e5e-000000000001")
			trashed := filepath.Join(trash, "old-run", sp)
			write := func(p string, data []byte) {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write(filepath.Join(trashed, "_metadata"), checkpointtest.Metadata(checkpointtest.Spec{CheckpointID: 1,
				Files: []checkpointtest.File{{Path: "state", Relative: true, Size: 1}}}))
			write(filepath.Join(trashed, "state"), []byte("s"))
			if err := os.MkdirAll(filepath.Join(tenant, "checkpoints"), 0o755); err != nil {
				t.Fatal(err)
			}
			chk := filepath.Join(tenant, "checkpoints", job, "chk-3", "_metadata")
			if tc.metadata != nil {
				write(chk, tc.metadata("file://"+filepath.Join(trashed, "state")))
			}
			var all []string
			_ = filepath.Walk(filepath.Join(trash, "old-run"), func(p string, _ os.FileInfo, err error) error {
				all = append(all, p)
				return err
			})
			for i := len(all) - 1; i >= 0; i-- {
				if err := os.Chtimes(all[i], longAgo, longAgo); err != nil {
					t.Fatal(err)
				}
			}
			guard, err := storage.NewGuard(tenant, trash)
			if err != nil {
				t.Fatal(err)
			}
			inv := inventory.Inventory{
				Tenants: []inventory.Tenant{{Name: "team-t", Root: "file://" + tenant}},
				Clusters: []inventory.Cluster{{Tenant: "team-t", ClusterID: "c1", Mode: inventory.ModeSession, RESTURL: "http://c1",
					CheckpointDir: "file://" + tenant + "/checkpoints", SavepointDir: "file://" + tenant + "/savepoints"}},
			}
			a := &Activities{Inventory: acttest.Inventory(inv), Flink: acttest.OneClient{C: &quietFlink{}}, Storage: &storage.Resolver{Guard: guard},
				Cleanup: core.CleanupSettings{TrashRoot: "file://" + trash}}
			var res PurgeTrashResult
			if err := acttest.Run(t, a, a.PurgeTrash, PurgeTrashInput{TTL: 7 * 24 * time.Hour}, &res); err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(filepath.Join(trashed, "state"))
			if !tc.refused {
				if len(res.Purged) != 1 || statErr == nil {
					t.Fatalf("purge %+v; want old-run purged", res)
				}
				return
			}
			if len(res.Purged) != 0 || len(res.Refused) != 1 || !strings.Contains(res.Refused[0], "old-run") || !strings.Contains(res.Refused[0], chk) {
				t.Fatalf("purge %+v; want old-run refused, naming %s", res, chk)
			}
			if statErr != nil {
				t.Fatalf("the savepoint file the stopped job's checkpoint names was purged: %v", statErr)
			}
		})
	}
}

// failedUnreadable lists one FAILED job whose exception history cannot be
// read: what a retry restores from is unknown.
type failedUnreadable struct{ quietFlink }

func (*failedUnreadable) ListJobs(context.Context) ([]flink.JobOverview, error) {
	return []flink.JobOverview{{ID: "0123456789abcdef0123456789abcdef", State: flink.JobFailed}}, nil
}

func (*failedUnreadable) Checkpoints(context.Context, string) (flink.CheckpointingStatistics, error) {
	return flink.CheckpointingStatistics{}, nil
}

func (*failedUnreadable) JobExceptions(context.Context, string, int) (flink.JobExceptions, error) {
	return flink.JobExceptions{}, &flink.Error{Op: "exceptions", StatusCode: 500, Message: "internal"}
}

// A restore source that cannot be read may name anything in the trash: a
// purge waits (retryably) until it can be read, and deletes nothing.
func TestPurgeWaitsWhileARestoreSourceIsUnknown(t *testing.T) {
	dir := t.TempDir()
	tenant, trash := filepath.Join(dir, "tenant"), filepath.Join(dir, "trash")
	old := filepath.Join(trash, "old-run", tenant, "savepoints", "savepoint-5e5e5e-000000000001", "state")
	if err := os.MkdirAll(filepath.Dir(old), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old, []byte("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	longAgo := time.Now().Add(-30 * 24 * time.Hour)
	for p := old; strings.HasPrefix(p, trash+"/"); p = filepath.Dir(p) {
		if err := os.Chtimes(p, longAgo, longAgo); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(tenant, "checkpoints"), 0o755); err != nil {
		t.Fatal(err)
	}
	guard, err := storage.NewGuard(tenant, trash)
	if err != nil {
		t.Fatal(err)
	}
	inv := inventory.Inventory{
		Tenants: []inventory.Tenant{{Name: "team-t", Root: "file://" + tenant}},
		Clusters: []inventory.Cluster{{Tenant: "team-t", ClusterID: "c1", Mode: inventory.ModeSession, RESTURL: "http://c1",
			CheckpointDir: "file://" + tenant + "/checkpoints"}},
	}
	a := &Activities{Inventory: acttest.Inventory(inv), Flink: acttest.OneClient{C: &failedUnreadable{}}, Storage: &storage.Resolver{Guard: guard},
		Cleanup: core.CleanupSettings{TrashRoot: "file://" + trash}, LiveReadWait: 10 * time.Millisecond}
	var res PurgeTrashResult
	err = acttest.Run(t, a, a.PurgeTrash, PurgeTrashInput{TTL: 7 * 24 * time.Hour}, &res)
	if err == nil || !strings.Contains(err.Error(), "cannot be told") {
		t.Fatalf("purge %+v err %v; want it to wait, naming the unknown restore source", res, err)
	}
	if _, statErr := os.Stat(old); statErr != nil {
		t.Fatalf("the trash was purged while a restore source was unknown: %v", statErr)
	}
}
