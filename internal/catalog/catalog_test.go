package catalog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/storage"
)

func newStore(t *testing.T) Store {
	t.Helper()
	root := t.TempDir()
	g, err := storage.NewGuard(root)
	if err != nil {
		t.Fatal(err)
	}
	return Store{FS: storage.NewLocal(g), Root: root}
}

func TestPutIsIdempotentAndRefusesAnotherJob(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	orders := LogicalJob{Tenant: "a", Cluster: "c1", Job: "orders"}
	e := Entry{Path: "hdfs://nn:8020/sp/savepoint-aaaaaa-000000000001/", Job: orders, JobID: "aaaaaa00000000000000000000000000",
		Trigger: TriggerWindow, RunID: "w1", RecordedAt: time.Unix(1, 0).UTC()}
	for range 2 {
		if err := s.Put(ctx, e, false); err != nil {
			t.Fatal(err)
		}
	}
	other := e
	other.Job.Job = "payments"
	if err := s.Put(ctx, other, false); !errors.Is(err, ErrConflict) {
		t.Fatalf("put for another job: %v; want ErrConflict", err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 1 || list[0].Job != orders || list[0].Path != "hdfs://nn:8020/sp/savepoint-aaaaaa-000000000001" {
		t.Fatalf("list %+v %v; want the one entry of orders, path without trailing /", list, err)
	}
	other.Trigger = TriggerAdopted
	if err := s.Put(ctx, other, true); err != nil {
		t.Fatal(err)
	}
	if list, _ = s.List(ctx); len(list) != 1 || list[0].Job.Job != "payments" || list[0].Trigger != TriggerAdopted {
		t.Fatalf("after replace %+v; want payments, adopted", list)
	}
	if err := s.Put(ctx, Entry{Path: "hdfs://nn/sp/x", Trigger: TriggerWindow}, false); !errors.Is(err, ErrInvalid) {
		t.Fatalf("entry without job: %v; want ErrInvalid", err)
	}
}

func TestListFailsOnACorruptEntry(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if list, err := s.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("empty catalog: %v %v", list, err)
	}
	if err := os.MkdirAll(filepath.Join(s.Root, Dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Root, Dir, "bad.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx); !errors.Is(err, ErrInvalid) {
		t.Fatalf("corrupt entry: %v; want ErrInvalid", err)
	}
}

func TestDrillRecordReplacesTheSnapshotsLastDrill(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	d := DrillStore(s)
	if list, err := d.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("no drills yet: %v %v", list, err)
	}
	job := LogicalJob{Tenant: "a", Cluster: "c1", Job: "orders"}
	first := DrillRecord{Snapshot: "hdfs://nn/ck/j/chk-7/", Kind: "checkpoint", Job: job, RunID: "d1", Tier: 2, Outcome: DrillFailed, Error: "boom", At: time.Unix(1, 0).UTC()}
	if err := d.Put(ctx, first); err != nil {
		t.Fatal(err)
	}
	second := first
	second.RunID, second.Outcome, second.Error = "d2", DrillPassed, ""
	for range 2 { // a retry writes the same again
		if err := d.Put(ctx, second); err != nil {
			t.Fatal(err)
		}
	}
	list, err := d.List(ctx)
	if err != nil || len(list) != 1 || list[0].RunID != "d2" || list[0].Outcome != DrillPassed || list[0].Snapshot != "hdfs://nn/ck/j/chk-7" {
		t.Fatalf("records %+v %v; want d2's pass alone, path without trailing /", list, err)
	}
	if err := d.Put(ctx, DrillRecord{Snapshot: "hdfs://nn/x", Outcome: DrillPassed}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("record without run: %v; want ErrInvalid", err)
	}
}
