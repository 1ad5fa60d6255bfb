package cleanup

import (
	"strings"
	"testing"
	"time"
)

// One job restarted six times has six job-id prefixes: retention counts
// its savepoints together by lineage and deletes all but the newest K,
// leaves another job's alone, and keeps what no lineage names.
func TestPlanRetainsSavepointsPerLogicalJob(t *testing.T) {
	f := newFixture()
	f.pol.KeepSavepoints = 2
	f.pol.SavepointMaxAge = time.Nanosecond
	lineage := map[string]string{}
	var orders []string
	for i, prefix := range []string{"a00001", "a00002", "a00003", "a00004", "a00005", "a00006"} {
		sp := f.savepoint(prefix, "00000000000"+itoa(int64(i)), true, old.Add(time.Duration(i)*time.Hour))
		orders = append(orders, sp)
		lineage[sp] = "t1/c1/orders"
	}
	other := f.savepoint("b00001", "000000000001", true, old)
	lineage[other] = "t1/c1/payments"
	orphan := f.savepoint("c00001", "000000000001", true, old)
	p, err := BuildPlan(Input{Now: now, Listing: f.l, Live: Live{Clusters: []LiveCluster{{ClusterID: "c1"}}}, Policy: f.pol, Lineage: lineage})
	if err != nil {
		t.Fatal(err)
	}
	got := planned(p)
	for i, sp := range orders {
		_, deleted := got[sp]
		if want := i < 4; deleted != want {
			t.Errorf("orders savepoint #%d (%s): planned %v, want %v", 6-i, sp, deleted, want)
		}
	}
	if k, ok := keptFor(p, orders[5]); !ok || k.Reason != KeepNewestSavepoints || !strings.Contains(k.By, "t1/c1/orders") {
		t.Errorf("newest orders savepoint kept %+v; want %s naming the job", k, KeepNewestSavepoints)
	}
	if k, ok := keptFor(p, other); !ok || k.Reason != KeepNewestSavepoints {
		t.Errorf("payments' only savepoint kept %+v; want %s", k, KeepNewestSavepoints)
	}
	if k, ok := keptFor(p, orphan); !ok || k.Reason != KeepLineageUnknown {
		t.Errorf("savepoint without lineage kept %+v; want %s", k, KeepLineageUnknown)
	}
	if _, err := BuildPlan(Input{Now: now, Listing: f.l, Live: Live{Clusters: []LiveCluster{{ClusterID: "c1"}}}, Policy: f.pol,
		Lineage: map[string]string{orders[0]: "t1/c1/orders", orders[0] + "/": "t1/c1/other"}}); err == nil || !strings.Contains(err.Error(), "two logical jobs") {
		t.Errorf("one savepoint with two jobs: err %v; want invalid input", err)
	}
}
