//go:build realpeers

package app_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/faulthook"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/workerproc"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// TestGovernanceSurvivesWorkerKill executes an approved cleanup through the
// real worker binary and kills it with SIGKILL while items are being moved
// to trash: once 100 are moved, the execution is held there (a fault hook)
// until the kill. After a restart the run completes: every planned item is in the
// trash, none is left in place, and the audit manifest has exactly one final
// record per item (nothing redone, nothing skipped).
func TestGovernanceSurvivesWorkerKill(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	e := newGovEnv(t, ctx) // its in-process worker polls another queue

	const items = 300
	longAgo := time.Now().Add(-30 * 24 * time.Hour)
	garbage := map[string]bool{}
	for i := 0; i < items; i++ {
		dir := fmt.Sprintf("%s/tenant/checkpoints/%032x", e.plain, i+1)
		e.put(t, dir, map[string]int{"chk-1/state": 10}, longAgo)
		garbage[e.peers.HDFS.URI+dir] = true
	}

	dir := t.TempDir()
	bin := workerproc.Build(t)
	invPath := filepath.Join(dir, "inventory.yaml")
	inv, err := os.ReadFile(e.acts.Inventory.(*app.ObservedInventory).Source.(app.StaticInventory).Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(invPath, inv, 0o600); err != nil {
		t.Fatal(err)
	}
	const queue = "governance-crash"
	cfg := peertest.WorkerConfig(e.tmp.HostPort, queue)
	cfg.Storage.HDFSUser = e.peers.HDFS.User
	cfg.Storage.WritableRoots = []string{e.root}
	cfg.Inventory.StaticFile = invPath
	cfg.Cleanup.TrashRoot, cfg.Cleanup.PlanDir = e.root+"/trash", e.root+"/plans"
	cfgPath := peertest.WriteWorkerConfig(t, cfg)
	hooks := faulthook.New(t)
	w := workerproc.New(t, bin, cfgPath, filepath.Join(dir, "worker.log")).WithHooks(hooks)
	w.Start()

	in := workflows.GovernanceInput{RunID: "crash-" + e.tenant, Reason: "crash-safety test", Mode: workflows.ModeAuto,
		Scope: core.Scope{Tenants: []string{e.tenant}}}
	hooks.Arm(faulthook.Hold{Name: "execute", Activity: "ExecuteCleanupPart", At: faulthook.Heartbeat, Hit: 100})
	wf, err := e.tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.GovernanceWorkflowID(in.RunID), TaskQueue: queue},
		workflows.GovernanceWorkflowType, in)
	if err != nil {
		t.Fatal(err)
	}

	// Kill while the execution holds at its 100th item: those moved, the
	// others not, the manifest naming them all as started.
	fs, _, err := e.acts.Storage.Resolve(ctx, e.root)
	if err != nil {
		t.Fatal(err)
	}
	audit := e.root + "/trash/_audit"
	held := hooks.WaitHeld(ctx, "execute", peertest.WorkflowEnded(ctx, e.tmp.Client, wf.GetID()))
	w.Kill()
	recs, err := cleanup.ReadManifest(ctx, fs, audit, in.RunID)
	if err != nil {
		t.Fatal(err)
	}
	killedAt := 0
	for _, r := range recs {
		if r.Outcome == cleanup.OutcomeTrashed {
			killedAt++
		}
	}
	if killedAt >= items {
		t.Fatalf("the manifest records all %d items trashed while the execution was held at %s: the case was not reached", killedAt, held.Details)
	}
	moved := 0
	for g := range garbage {
		if !e.exists(t, g[len(e.peers.HDFS.URI):]) {
			moved++
		}
	}
	if moved == 0 || moved == items {
		t.Fatalf("%d of %d items moved while the execution was held at %s; want some, not all", moved, items, held.Details)
	}
	t.Logf("worker killed with %d of %d items moved, %d recorded trashed", moved, items, killedAt)
	w.Start()

	var rep workflows.GovernanceReport
	if err := wf.Get(ctx, &rep); err != nil {
		t.Fatalf("governance run: %v\nworker log:\n%s", err, w.Tail())
	}
	if rep.Outcome != workflows.GovernancePhaseCompleted || rep.Execution == nil || rep.Execution.Items != items {
		t.Fatalf("report outcome %s execution %+v", rep.Outcome, rep.Execution)
	}
	recs, err = cleanup.ReadManifest(ctx, fs, audit, in.RunID)
	if err != nil {
		t.Fatal(err)
	}
	final := map[string]int{}
	for _, r := range recs {
		if !garbage[r.Path] {
			t.Errorf("manifest records %s, which was not garbage", r.Path)
		}
		if r.Outcome == cleanup.OutcomeTrashed {
			final[r.Path]++
		}
	}
	for g := range garbage {
		if final[g] != 1 {
			t.Errorf("%s has %d trashed records, want exactly 1", g, final[g])
		}
		p := g[len(e.peers.HDFS.URI):]
		if e.exists(t, p) {
			t.Errorf("%s still in place", p)
		}
		if !e.exists(t, e.plain+"/trash/"+in.RunID+p) {
			t.Errorf("%s not in trash", p)
		}
	}
	if t.Failed() {
		return
	}
	testRestoreSurvivesWorkerKill(t, ctx, e, w, hooks, queue, in.RunID, garbage)
}

// testRestoreSurvivesWorkerKill puts the run's trash back through the same
// worker binary, killed with SIGKILL while items move (held at the 100th
// by a fault hook): after a restart the
// restore completes, every item is back and none is left in the trash or
// lost on the way.
func testRestoreSurvivesWorkerKill(t *testing.T, ctx context.Context, e *govEnv, w *workerproc.Process, hooks *faulthook.Hooks, queue, runID string, garbage map[string]bool) {
	t.Helper()
	// Not in the dry run the restore begins with: in the moves.
	hooks.Arm(faulthook.Hold{Name: "restore", Activity: "RestoreTrash", At: faulthook.Heartbeat, Input: "DryRun:false", Hit: 100})
	in := workflows.GovernanceRestoreInput{RunID: runID, By: "crash-test", Reason: "crash-safety test of a restore"}
	wf, err := e.tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.GovernanceRestoreWorkflowID(runID), TaskQueue: queue},
		workflows.GovernanceRestoreWorkflowType, in)
	if err != nil {
		t.Fatal(err)
	}
	held := hooks.WaitHeld(ctx, "restore", peertest.WorkflowEnded(ctx, e.tmp.Client, wf.GetID()))
	w.Kill()
	back := 0
	for g := range garbage {
		if e.exists(t, g[len(e.peers.HDFS.URI):]) {
			back++
		}
	}
	if back == 0 || back == len(garbage) {
		t.Fatalf("%d of %d items back while the restore was held at %s; want some, not all", back, len(garbage), held.Details)
	}
	t.Logf("worker killed with %d of %d items back", back, len(garbage))
	w.Start()
	var st workflows.GovernanceRestoreState
	if err := wf.Get(ctx, &st); err != nil {
		t.Fatalf("restore: %v\nworker log:\n%s", err, w.Tail())
	}
	if st.Phase != workflows.RestorePhaseCompleted || st.Result == nil || st.Result.Counts[cleanup.OutcomeRestored] != len(garbage) {
		t.Fatalf("restore state %+v", st)
	}
	for g := range garbage {
		p := g[len(e.peers.HDFS.URI):]
		if !e.exists(t, p) || e.exists(t, e.plain+"/trash/"+runID+p) {
			t.Errorf("%s: back %v, in the trash %v; want it back only", p, e.exists(t, p), e.exists(t, e.plain+"/trash/"+runID+p))
		}
	}
	if dir := os.Getenv(sandbox.EnvCaptureHistory); dir != "" {
		sandbox.CaptureHistory(t, e.tmp.Client, wf.GetID(), wf.GetRunID(), dir+"/governance-restore.json.gz")
	}
}
