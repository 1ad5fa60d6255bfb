package capacity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/internal/acttest"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/metrics"
	"github.com/flinkmaint/flinkmaint/internal/storage"
	"github.com/flinkmaint/flinkmaint/internal/usage"
)

// TestTenantUsage walks a local tenant root whose job the cluster's job
// history names: the job dir and the savepoint its checkpoint history
// names are its logical job's, the trash under the root is trash, the first run has
// no growth and writes the sample the second compares with, and the
// gauges carry the per-kind figures.
func TestTenantUsage(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "team-a")
	const job = "abcdef0123456789abcdef0123456789"
	for p, data := range map[string]string{
		"checkpoints/" + job + "/chk-1/_metadata":            "meta",
		"checkpoints/" + job + "/shared/sst":                 "0123456789",
		"savepoints/savepoint-abcdef-0123456789ab/_metadata": "sp",
		"trash/run-1/file":                                   "tt",
	} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	guard, err := storage.NewGuard(base)
	if err != nil {
		t.Fatal(err)
	}
	gov, err := metrics.NewGovernance(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now().Add(-time.Hour).UnixMilli()
	a := &Activities{
		Inventory: acttest.Inventory{
			Tenants: []inventory.Tenant{{Name: "team-a", Root: "file://" + root}, {Name: "team-b", Root: filepath.Join(base, "team-b")}},
			Clusters: []inventory.Cluster{{Tenant: "team-a", ClusterID: "c1", RESTURL: "http://c1",
				CheckpointDir: root + "/checkpoints", SavepointDir: "file://" + root + "/savepoints"}},
		},
		Flink: acttest.OneClient{C: &acttest.Flink{Jobs: []flink.JobOverview{{ID: job, Name: "orders", State: flink.JobRunning, StartTime: started}},
			Stats: flink.CheckpointingStatistics{History: []flink.CheckpointStatistics{{ID: 1, Status: "COMPLETED", IsSavepoint: true,
				ExternalPath: "file://" + root + "/savepoints/savepoint-abcdef-0123456789ab"}}}}},
		Storage: &storage.Resolver{Guard: guard},
		Cleanup: core.CleanupSettings{TrashRoot: root + "/trash"},
		Metrics: gov,
	}

	var first TenantUsageResult
	if err := acttest.Run(t, a, a.TenantUsage, TenantUsageInput{Tenants: []string{"team-a"}}, &first); err != nil {
		t.Fatal(err)
	}
	if len(first.Tenants) != 1 || first.Tenants[0].Since != nil {
		t.Fatalf("first run %+v; want team-a without growth", first)
	}
	rep := first.Tenants[0]
	var orders *usage.JobUsage
	for i := range rep.Jobs {
		if rep.Jobs[i].Job == "team-a/c1/orders" {
			orders = &rep.Jobs[i]
		}
	}
	// job dir, chk-1, _metadata, shared/, sst; the savepoint dir and its _metadata
	if orders == nil || orders.Figures != (usage.Figures{Files: 3, Dirs: 4, Bytes: 16}) {
		t.Fatalf("orders %+v in %+v; want its job dir and its savepoint", orders, rep.Jobs)
	}
	kinds := map[usage.Kind]usage.Figures{}
	for _, k := range rep.Kinds {
		kinds[k.Kind] = k.Figures
		var m dto.Metric
		if err := gov.UsageFiles.WithLabelValues("team-a", string(k.Kind)).Write(&m); err != nil || int64(m.GetGauge().GetValue()) != k.Files {
			t.Errorf("flinkmaint_usage_files{kind=%q} = %v (%v); want %d", k.Kind, m.GetGauge().GetValue(), err, k.Files)
		}
	}
	if kinds[usage.KindTrash] != (usage.Figures{Files: 1, Dirs: 2, Bytes: 2}) {
		t.Errorf("trash %+v; want trash/, run-1/ and its file", kinds[usage.KindTrash])
	}
	if _, err := os.Stat(filepath.Join(root, usage.SampleDir, usage.SampleName)); err != nil {
		t.Fatalf("no sample written: %v", err)
	}

	var second TenantUsageResult
	if err := acttest.Run(t, a, a.TenantUsage, TenantUsageInput{Top: 1, OmitJobs: true}, &second); err != nil {
		t.Fatal(err)
	}
	if len(second.Tenants) != 1 || second.Tenants[0].Since == nil || second.Tenants[0].Jobs != nil || len(second.Tenants[0].TopFiles) != 1 {
		t.Fatalf("second run %+v; want growth, no per-job rows, one top offender", second.Tenants)
	}
	if !strings.Contains(strings.Join(second.Notes, "\n"), "root "+filepath.Join(base, "team-b")+" of tenant team-b does not exist") {
		t.Errorf("notes %v; want team-b's missing root noted", second.Notes)
	}
	for _, k := range second.Tenants[0].Kinds {
		if k.Kind == usage.KindFlinkmaint && (k.Growth == nil || k.Growth.Files != 2) {
			t.Errorf("flinkmaint growth %+v; want the catalog entry and the sample the first run wrote", k.Growth)
		}
	}
}

func TestTenantUsageRefusesWhatItCannotDo(t *testing.T) {
	a := &Activities{Inventory: acttest.Inventory{Tenants: []inventory.Tenant{{Name: "team-a"}, {Name: "team-b"}}}, Storage: &storage.Resolver{}}
	for name, tc := range map[string]struct {
		in   TenantUsageInput
		want string
	}{
		"unknown tenant": {TenantUsageInput{Tenants: []string{"team-c"}}, `tenant "team-c" is not in the inventory; its tenants are team-a, team-b`},
		"bad top":        {TenantUsageInput{Top: -3}, "top=-3: use 1 to 1000"},
	} {
		var res TenantUsageResult
		err := acttest.Run(t, a, a.TenantUsage, tc.in, &res)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error naming %q", name, err, tc.want)
			continue
		}
		if typ, nonRetryable := acttest.ErrType(t, err); typ != core.ErrTypeInvalidInput || !nonRetryable {
			t.Errorf("%s: %s (non-retryable %v); want non-retryable %s", name, typ, nonRetryable, core.ErrTypeInvalidInput)
		}
	}
}
