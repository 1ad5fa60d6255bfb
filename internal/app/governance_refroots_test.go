//go:build realpeers

package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
)

// TestExecutionRereadsReferenceRootsOnRealPeers plans a retired job's whole
// dir, latest checkpoint included; while the plan waits for approval, a
// job on a cluster outside the inventory restores that checkpoint in
// CLAIM mode and checkpoints into a configured reference root, its
// checkpoint naming the retired job's shared files. The execution reads
// the reference root again and refuses the retired job's dir, recording
// the checkpoint that needs it; the job then restores from its own latest
// checkpoint.
func TestExecutionRereadsReferenceRootsOnRealPeers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var ref string
	e := newFailClosedEnvWith(t, ctx, func(e *failClosedEnv, s *inventory.Static, cfg *config.Config) {
		ref = e.root + "/ref"
		s.Clusters = s.Clusters[:1] // the second cluster is outside the inventory
		cfg.Cleanup.ReferenceRoots = []string{ref}
	})
	if _, err := e.peers.HadoopShell(ctx, "-mkdir", "-p", strings.TrimPrefix(ref, e.peers.HDFS.URI)); err != nil {
		t.Fatal(err)
	}
	ca, cb := e.peers.Clusters[0], e.peers.Clusters[1]
	sfx := peertest.RandomHex(4)
	ckpts := e.root + "/a/checkpoints"
	// One checkpoint at a long interval keeps the retired job's RocksDB at
	// one or two files, so the job restored from it has no compaction
	// pending that would replace them before its first checkpoint.
	slow := map[string]string{"execution.checkpointing.interval": "20s", "execution.checkpointing.num-retained": "1"}
	fr, retired := e.start(ctx, ca, "refroot-retired-"+sfx, ckpts, "", "", slow)
	jobDir := ckpts + "/" + retired
	e.checkpointedIntoFiles(ctx, fr, retired, jobDir)
	e.cancel(ctx, fr, retired)
	latest := e.latestCompleted(jobDir)
	e.age(strings.TrimPrefix(jobDir, e.peers.HDFS.URI), time.Now().Add(-30*24*time.Hour), false)

	runID := "refroot-" + sfx
	sum, plan := e.plan(ctx, runID, core.Scope{Tenants: []string{e.tenant[0]}}, cleanup.Policy{DeleteLatestRetiredCheckpoint: true})
	if len(plan.ReferenceRoots) != 1 {
		t.Fatalf("plan reference roots %+v; want %s", plan.ReferenceRoots, ref)
	}
	planned := false
	for _, it := range plan.Delete {
		planned = planned || it.Path == jobDir
	}
	if !planned {
		t.Fatalf("the retired job's dir %s is not planned: %+v", jobDir, plan.Delete)
	}

	// While the plan waits: CLAIM restore outside the inventory, keeping
	// three checkpoints and taking one every 20 s, so the restored
	// checkpoint stays where it is until the execution.
	fx, claimed := e.start(ctx, cb, "refroot-claim-"+sfx, ref, latest, flink.RestoreClaim,
		map[string]string{"execution.checkpointing.interval": "20s", "execution.checkpointing.num-retained": "3"})
	e.checkpointed(ctx, fx, claimed, 1)
	xLatest, refsX := e.latestRefs(ctx, fx, claimed)
	var intoRetired []string
	for _, f := range refsX {
		if strings.HasPrefix(f, jobDir+"/") {
			intoRetired = append(intoRetired, f)
		}
	}
	if len(intoRetired) == 0 {
		t.Fatalf("the CLAIM restore's checkpoint %s names nothing of %s (refs %v); the case is not exercised", xLatest, jobDir, refsX)
	}

	var ex governance.ExecuteCleanupResult
	if err := e.activity(app.NewFamilies(e.acts).Governance.ExecuteCleanup, governance.ExecuteCleanupInput{RunID: runID, PlanPath: sum.PlanPath, PlanSHA256: sum.PlanSHA256}, &ex); err != nil {
		t.Fatalf("execute: %v", err)
	}
	refusedBy := ""
	for _, r := range ex.Refused {
		if r.Path == jobDir {
			refusedBy = r.Detail
		}
	}
	if !strings.Contains(refusedBy, "completed since planning") || !strings.Contains(refusedBy, xLatest) {
		t.Fatalf("the retired job's dir refused with %q (refused %+v); want it refused, naming %s", refusedBy, ex.Refused, xLatest)
	}
	for _, f := range append(intoRetired, latest+"/_metadata") {
		if !e.exists(f) {
			t.Errorf("%s, which the CLAIM restore needs, is gone", f)
		}
	}
	e.cancel(ctx, fx, claimed)
	e.restores(ctx, cb, xLatest)
}
