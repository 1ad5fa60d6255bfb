package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
)

// TestCompactKeepsTheCatalogSmall records 1,000 savepoints (one file each),
// compacts, and counts what the catalog costs the tenant's namespace quota
// then: the index alone. Entries of savepoints that are gone are dropped,
// those whose existence cannot be told are kept, and everything the
// catalog said before it still says after.
func TestCompactKeepsTheCatalogSmall(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	orders := LogicalJob{Tenant: "a", Cluster: "c1", Job: "orders"}
	const n = 1000
	path := func(i int) string { return fmt.Sprintf("hdfs://nn:8020/sp/savepoint-aaaaaa-%012d", i) }
	for i := range n {
		if err := s.Put(ctx, Entry{Path: path(i), Job: orders, Trigger: TriggerWindow}, false); err != nil {
			t.Fatal(err)
		}
	}
	files := func() int {
		des, err := os.ReadDir(s.dir())
		if err != nil {
			t.Fatal(err)
		}
		return len(des)
	}
	before := files()
	// Every tenth savepoint is gone; the existence of every seventh cannot
	// be told (kept).
	exists := func(_ context.Context, p string) (bool, error) {
		var i int
		if _, err := fmt.Sscanf(p, "hdfs://nn:8020/sp/savepoint-aaaaaa-%012d", &i); err != nil {
			return false, err
		}
		if i%7 == 0 {
			return false, errors.New("namenode unavailable")
		}
		return i%10 != 0, nil
	}
	res, err := s.Compact(ctx, exists)
	if err != nil {
		t.Fatal(err)
	}
	wantDropped := 0
	for i := range n {
		if i%10 == 0 && i%7 != 0 {
			wantDropped++
		}
	}
	if res.Dropped != wantDropped || res.Kept != n-wantDropped || res.Merged != n {
		t.Fatalf("compact %+v; want %d dropped, %d kept, %d merged", res, wantDropped, n-wantDropped, n)
	}
	after := files()
	t.Logf("catalog files after %d savepoints: %d before compaction, %d after", n, before, after)
	if before != n || after != 1 {
		t.Fatalf("catalog files: %d before, %d after; want %d and 1 (the index)", before, after, n)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != n-wantDropped {
		t.Fatalf("list after compaction: %d entries, %v; want %d", len(list), err, n-wantDropped)
	}
	claims, rejected, err := s.Claims(ctx)
	if err != nil || len(claims) != n-wantDropped || len(rejected) != 0 {
		t.Fatalf("claims after compaction: %d, rejected %v, %v", len(claims), rejected, err)
	}

	// The index answers Put as the files did: the same again is a no-op,
	// another job a conflict, a replacement a new file that wins.
	if err := s.Put(ctx, Entry{Path: path(1), Job: orders, Trigger: TriggerWindow}, false); err != nil || files() != 1 {
		t.Fatalf("same entry again after compaction: %v, %d files", err, files())
	}
	payments := LogicalJob{Tenant: "a", Cluster: "c1", Job: "payments"}
	if err := s.Put(ctx, Entry{Path: path(1), Job: payments, Trigger: TriggerWindow}, false); !errors.Is(err, ErrConflict) {
		t.Fatalf("another job after compaction: %v; want ErrConflict", err)
	}
	if err := s.Put(ctx, Entry{Path: path(1), Job: payments, Trigger: TriggerAdopted}, true); err != nil {
		t.Fatal(err)
	}
	for _, read := range []func() ([]Entry, error){
		func() ([]Entry, error) { return s.List(ctx) },
		func() ([]Entry, error) { c, _, err := s.Claims(ctx); return c, err },
	} {
		list, err := read()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range list {
			if e.Path == path(1) && e.Job != payments {
				t.Fatalf("after adopting %s into payments, the catalog says %s", e.Path, e.Job)
			}
		}
	}
	// A second compaction folds the replacement in.
	if _, err := s.Compact(ctx, func(context.Context, string) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	list, _ = s.List(ctx)
	for _, e := range list {
		if e.Path == path(1) && e.Job != payments {
			t.Fatalf("after the second compaction %s is %s; want payments", e.Path, e.Job)
		}
	}
	if files() != 1 {
		t.Fatalf("%d files after the second compaction; want 1", files())
	}
}

// TestClaimsReportsACorruptIndex: an index that does not decode is named
// and the entry files still count.
func TestClaimsReportsACorruptIndex(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	e := Entry{Path: "hdfs://nn:8020/sp/savepoint-aaaaaa-000000000001", Job: LogicalJob{Tenant: "a", Cluster: "c1", Job: "orders"}, Trigger: TriggerWindow}
	if err := s.Put(ctx, e, false); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.dir()+"/"+IndexName, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	claims, rejected, err := s.Claims(ctx)
	if err != nil || len(claims) != 1 || len(rejected) != 1 || rejected[0].File != s.dir()+"/"+IndexName {
		t.Fatalf("claims %v, rejected %v, %v; want the entry file and the index rejected", claims, rejected, err)
	}
	if _, err := s.List(ctx); !errors.Is(err, ErrInvalid) {
		t.Fatalf("strict list with a corrupt index: %v; want ErrInvalid", err)
	}
}

// TestCompactDrillRecords: drill records fold into one index, those of
// snapshots that are gone are dropped, and a newer record still wins.
func TestCompactDrillRecords(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	s := DrillStore(st)
	snap := func(i int) string { return fmt.Sprintf("hdfs://nn:8020/sp/savepoint-aaaaaa-%012d", i) }
	for i := range 3 {
		if err := s.Put(ctx, DrillRecord{Snapshot: snap(i), RunID: "d1", Outcome: DrillPassed, Tier: 2}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := s.Compact(ctx, func(_ context.Context, p string) (bool, error) { return p != snap(0), nil })
	if err != nil || res.Dropped != 1 || res.Kept != 2 || res.Merged != 3 {
		t.Fatalf("compact %+v %v; want 1 dropped, 2 kept, 3 merged", res, err)
	}
	if des, _ := os.ReadDir(s.dir()); len(des) != 1 {
		t.Fatalf("%d files after compaction; want the index", len(des))
	}
	if err := s.Put(ctx, DrillRecord{Snapshot: snap(1), RunID: "d2", Outcome: DrillFailed, Tier: 2}); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 2 || list[0].Snapshot != snap(1) || list[0].RunID != "d2" || list[1].RunID != "d1" {
		t.Fatalf("drills %+v %v; want %s by d2 and %s by d1", list, err, snap(1), snap(2))
	}
}

func TestRehearsalRecordsLatestPerSavepoint(t *testing.T) {
	ctx := context.Background()
	s := RehearsalStore(newStore(t))
	snap := func(i int) string { return fmt.Sprintf("hdfs://nn:8020/sp/savepoint-aaaaaa-%012d", i) }
	if err := s.Put(ctx, RehearsalRecord{Snapshot: snap(0), RunID: "r1"}); err == nil {
		t.Fatal("a record without a verdict was taken")
	}
	for i, v := range []string{RehearsalIncompatible, RehearsalCompatible} {
		if err := s.Put(ctx, RehearsalRecord{Snapshot: snap(i) + "/", RunID: "r1", Verdict: v, FlinkVersion: "2.3.0"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Compact(ctx, func(context.Context, string) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, RehearsalRecord{Snapshot: snap(0), RunID: "r2", Verdict: RehearsalCompatible}); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 2 || list[0].Snapshot != snap(0) || list[0].RunID != "r2" || list[1].Verdict != RehearsalCompatible {
		t.Fatalf("rehearsals %+v %v; want the newest verdict per savepoint, the index and a newer file merged", list, err)
	}
}
