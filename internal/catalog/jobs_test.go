package catalog

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestJobRecords: seen jobs are added, records of job ids no longer wanted
// are dropped, an unchanged set is not rewritten, and a job id seen as
// two logical jobs is recorded as both (the reader trusts neither).
func TestJobRecords(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	root := st.Root
	s := JobStore{FS: st.FS, Root: root}
	if g, err := s.List(ctx); err != nil || len(g) != 0 {
		t.Fatalf("no records yet: %v %v", g, err)
	}
	orders := LogicalJob{Tenant: "a", Cluster: "app-1", Job: "orders"}
	at := time.Unix(100, 0).UTC()
	idA, idB := "ffffffff000000010000000000000000", "ffffffff000000020000000000000000"
	all := func(string) bool { return true }
	if changed, err := s.Record(ctx, []JobRecord{{JobID: idA, Job: orders, SeenAt: at}, {JobID: idB, Job: orders, SeenAt: at}}, all); err != nil || !changed {
		t.Fatalf("first record: %v %v", changed, err)
	}
	if changed, err := s.Record(ctx, []JobRecord{{JobID: idA, Job: orders, SeenAt: at.Add(time.Hour)}}, all); err != nil || changed {
		t.Fatalf("the same job again: changed %v, %v; want no rewrite", changed, err)
	}
	other := LogicalJob{Tenant: "a", Cluster: "app-1", Job: "payments"}
	if _, err := s.Record(ctx, []JobRecord{{JobID: idA, Job: other, SeenAt: at}}, func(id string) bool { return id == idA }); err != nil {
		t.Fatal(err)
	}
	recs, err := s.List(ctx)
	if err != nil || len(recs) != 2 || recs[0].JobID != idA || recs[1].JobID != idA {
		t.Fatalf("records %+v %v; want %s twice (orders and payments) and %s dropped", recs, err, idA, idB)
	}
	if err := os.WriteFile(root+"/"+JobsFile, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx); err == nil {
		t.Fatal("a file that does not decode: no error")
	}
}
