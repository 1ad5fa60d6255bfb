package windows

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/flinkmaint/flinkmaint/activities/internal/acttest"
	"github.com/flinkmaint/flinkmaint/internal/metrics"
)

// Each tenant of a scheduled savepoint run whose jobs all took theirs is
// fresh, even when another tenant's failed.
func TestRecordSavepointRunStampsTenantsWithoutFailures(t *testing.T) {
	gov, err := metrics.NewGovernance(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_700_000_000, 0)
	a := &Activities{Metrics: gov, Now: func() time.Time { return at }}
	err = acttest.Run(t, a, a.RecordSavepointRun, RecordSavepointRunInput{RunID: "r1", Tenants: []TenantSavepoints{
		{Tenant: "team-a", Taken: 3}, {Tenant: "team-b", Taken: 1, Failed: 1}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := testutil.ToFloat64(gov.TenantLastSuccess.WithLabelValues("scheduled-savepoints", "team-a")); v != float64(at.Unix()) {
		t.Errorf("team-a: %g, want %d", v, at.Unix())
	}
	if n := testutil.CollectAndCount(gov.TenantLastSuccess); n != 1 {
		t.Errorf("%d tenant series, want team-a's only", n)
	}
}
