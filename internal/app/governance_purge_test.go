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
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
)

// TestPurgeRefusesATrashRunAJobRestoredFromOnRealPeers trashes a savepoint
// by retention on real HDFS, starts a job from its trash path (a savepoint
// restores from anywhere), and purges the trash past its TTL: the run is
// refused, naming the job, and stays; the trash path still restores. Once
// the job is gone, the next purge removes the run.
func TestPurgeRefusesATrashRunAJobRestoredFromOnRealPeers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e := newFailClosedEnv(t, ctx)
	ca := e.peers.Clusters[0]
	sfx := peertest.RandomHex(4)
	ckpts, sps := e.root+"/a/checkpoints", e.root+"/a/savepoints"
	fc, job, taken := e.jobWithTwoSavepoints(ctx, ca, "", "purge-src-"+sfx, ckpts, sps, 1)
	runID := "purge-" + sfx
	sum, plan := e.plan(ctx, runID, core.Scope{Tenants: []string{e.tenant[0]}}, cleanup.Policy{KeepSavepoints: 1, SavepointMaxAge: time.Nanosecond})
	planned := false
	for _, it := range plan.Delete {
		planned = planned || it.Path == taken[0]
	}
	if !planned {
		t.Fatalf("the older savepoint %s is not planned; plan deletes %+v", taken[0], plan.Delete)
	}
	var ex governance.ExecuteCleanupResult
	if err := e.activity(app.NewFamilies(e.acts).Governance.ExecuteCleanup, governance.ExecuteCleanupInput{RunID: runID, PlanPath: sum.PlanPath, PlanSHA256: sum.PlanSHA256}, &ex); err != nil {
		t.Fatalf("execute: %v", err)
	}
	plainRun := strings.TrimPrefix(e.root, e.peers.HDFS.URI) + "/trash/" + runID
	trashed := e.peers.HDFS.URI + plainRun + strings.TrimPrefix(taken[0], e.peers.HDFS.URI)
	if !e.exists(trashed + "/_metadata") {
		t.Fatalf("the trashed savepoint is not at %s", trashed)
	}
	e.cancel(ctx, fc, job) // a slot for the job restored from the trash

	// A job restored from the trash path, and the run aged past the TTL.
	fr, restored := e.start(ctx, ca, "purge-from-trash-"+sfx, e.root+"/restore", trashed, flink.RestoreNoClaim, nil)
	e.waitFor(ctx, 3*time.Minute, "job restored from "+trashed, func() (bool, string) {
		st, err := fr.Checkpoints(ctx, restored)
		return err == nil && st.Latest.Restored != nil, stringOr(err, "not restored yet")
	})
	e.age(plainRun, time.Now().Add(-30*24*time.Hour), false)
	var purge governance.PurgeTrashResult
	if err := e.activity(app.NewFamilies(e.acts).Governance.PurgeTrash, governance.PurgeTrashInput{TTL: 7 * 24 * time.Hour}, &purge); err != nil {
		t.Fatalf("purge: %v", err)
	}
	if len(purge.Purged) != 0 || len(purge.Refused) != 1 || !strings.Contains(purge.Refused[0], runID) || !strings.Contains(purge.Refused[0], restored) {
		t.Fatalf("purge %+v; want run %s refused, naming job %s", purge, runID, restored)
	}
	if !e.exists(trashed + "/_metadata") {
		t.Fatalf("%s was purged under the job restored from it", trashed)
	}
	e.cancel(ctx, fr, restored)
	e.restores(ctx, ca, trashed)

	// Nothing restores from it any more: the next purge removes the run.
	var again governance.PurgeTrashResult
	if err := e.activity(app.NewFamilies(e.acts).Governance.PurgeTrash, governance.PurgeTrashInput{TTL: 7 * 24 * time.Hour}, &again); err != nil {
		t.Fatalf("purge: %v", err)
	}
	if len(again.Refused) != 0 || len(again.Purged) != 1 || e.exists(e.peers.HDFS.URI+plainRun) {
		t.Fatalf("purge after the job ended %+v; want run %s purged", again, runID)
	}
}
