//go:build realpeers

package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// TestRestartFootprintCountsOnlyReferencedSharedFiles measures a real
// RocksDB job's checkpoint footprint, then buries its shared/ dir in
// orphaned uploads: the full checkpoint a restart uploads again is what
// the newest _metadata references, so the orphans do not make the quota
// gate refuse a restart that fits. Once the job stops with a savepoint,
// Flink discards its checkpoints and its dir tells nothing: the gate
// needs the footprint measured while the job ran.
func TestRestartFootprintCountsOnlyReferencedSharedFiles(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := newGovEnv(t, ctx)
	fc, jobID := e.runJob(t, ctx, "footprint-"+e.tenant, "--keys", "4000", "--value-bytes", "256", "--rate", "800")
	ckptRoot := e.root + "/tenant/checkpoints"
	for ctx.Err() == nil {
		if stats, err := fc.Checkpoints(ctx, jobID); err == nil && stats.Counts.Completed >= 3 {
			break
		}
		time.Sleep(time.Second)
	}

	tenant := inventory.Tenant{Name: e.tenant, Root: e.root + "/tenant"}
	in := capacity.CheckQuotaInput{Tenants: []inventory.Tenant{tenant}, WarningPercent: 80, CriticalPercent: 90, SafetyMargin: 0.2,
		Restart: []capacity.RestartFootprintInput{{Key: "cluster-a/footprint", Tenant: e.tenant, CheckpointDir: ckptRoot + "/" + jobID}}}
	measure := func() capacity.Footprint {
		t.Helper()
		var s testsuite.WorkflowTestSuite
		env := s.NewTestActivityEnvironment()
		quota := app.NewFamilies(e.acts).Capacity
		env.RegisterActivity(quota)
		v, err := env.ExecuteActivity(quota.CheckQuota, in)
		if err != nil {
			t.Fatal(err)
		}
		var res capacity.CheckQuotaResult
		if err := v.Get(&res); err != nil {
			t.Fatal(err)
		}
		if len(res.Footprints) != 1 || len(res.Tenants) != 1 {
			t.Fatalf("result %+v; want one footprint and one tenant", res)
		}
		t.Logf("footprint %+v, tenant %+v", res.Footprints[0], res.Tenants[0])
		return res.Footprints[0]
	}
	before := measure()
	if before.FullCheckpointFiles < 3 || before.FilesPerCheckpoint < 2 {
		t.Fatalf("footprint %+v of a RocksDB job with incremental checkpoints; want its SST files counted", before)
	}

	// Only the orphans are aged: Flink deletes its own subsumed files in
	// this dir meanwhile, so it cannot be walked and aged as a whole.
	const orphans = 300
	shared := e.plain + "/tenant/checkpoints/" + jobID + "/shared/"
	old := time.Now().Add(-30 * 24 * time.Hour)
	for i := 0; i < orphans; i++ {
		p := shared + fmt.Sprintf("%08x-orphan-%04d", i, i)
		if err := e.raw.CreateEmptyFile(p); err != nil {
			t.Fatal(err)
		}
		if err := e.raw.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	after := measure()
	// The job goes on checkpointing, so its own files may change a little;
	// 300 orphans may not show.
	if after.FullCheckpointFiles >= before.FullCheckpointFiles+orphans/2 || after.FilesPerCheckpoint >= before.FilesPerCheckpoint+orphans/6 {
		t.Fatalf("footprint %+v after %d orphans, %+v before: the orphans were counted as state", after, orphans, before)
	}

	// Stopped with a savepoint, the job's checkpoints are gone: only what
	// was measured before can be projected.
	trig, err := fc.StopWithSavepoint(ctx, jobID, flink.StopRequest{TargetDirectory: e.root + "/tenant/savepoints"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fc.AwaitSavepoint(ctx, jobID, trig.TriggerID); err != nil {
		t.Fatal(err)
	}
	// Flink discards them once the job has finished, which may be a moment
	// after its savepoint completed.
	stopped := measure()
	for stopped.FullCheckpointFiles != 0 && ctx.Err() == nil {
		time.Sleep(time.Second)
		stopped = measure()
	}
	if stopped.FullCheckpointFiles != 0 || stopped.FilesPerCheckpoint >= after.FilesPerCheckpoint {
		t.Fatalf("footprint %+v of the stopped job, %+v while it ran: want no checkpoint left to measure, so only the preflight footprint tells", stopped, after)
	}
	in.Restart[0].Measured = &after
	if got := measure(); got.FilesPerCheckpoint != after.FilesPerCheckpoint || got.FullCheckpointFiles != after.FullCheckpointFiles {
		t.Fatalf("with the preflight footprint %+v the gate measured %+v", after, got)
	}
}
