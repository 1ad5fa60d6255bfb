//go:build realpeers

package app_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// TestWindowDrillsTheCanaryAndProvesSavepointsOnRealPeers runs a window
// with both drill policies on real Flink and HDFS: the canary is stopped
// and a copy of it restored from its savepoint on the drill cluster before
// the other job stops, leaving no drill job or drill dir behind; a file
// lost from the other job's savepoint during the network change fails the
// storage proof before any restart, naming the file, and the job the
// operator skips stays stopped while the canary comes back healthy.
func TestWindowDrillsTheCanaryAndProvesSavepointsOnRealPeers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	sfx := peertest.RandomHex(4)
	canary, other := "wd-a-"+sfx, "wd-b-"+sfx
	d := newDrillEnv(t, ctx, map[string]*inventory.DrillRecipe{canary: sampleDrill(canary), other: sampleDrill(other)})
	d.serve(tmp, "window-drill-"+sfx)
	ca := d.peers.Clusters[0]
	ckpts := d.root + "/a/checkpoints"
	fc, canaryID := d.start(ctx, ca, canary, ckpts, "", "", nil)
	_, otherID := d.start(ctx, ca, other, ckpts, "", "", nil)
	d.checkpointed(ctx, fc, canaryID, 1)
	d.checkpointed(ctx, fc, otherID, 1)

	soak := workflows.Duration(3 * time.Second)
	in := workflows.WindowInput{WindowID: "drill-" + sfx, Reason: "window drill test",
		Scope: core.Scope{Tenants: []string{d.tenant[0]}, IncludeJobs: []string{canary, other}},
		Policy: workflows.WindowPolicy{
			ManifestDir: d.root + "/windows",
			Restart:     workflows.RestartPolicy{Soak: soak},
			Cleanup:     workflows.CleanupPolicy{Mode: workflows.CleanupModeSkip},
			Drill:       workflows.DrillPolicy{ProveSavepoints: true, Canary: true},
		}}
	run, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.WindowWorkflowID(in.WindowID), TaskQueue: d.queue},
		workflows.MaintenanceWindowWorkflowType, in)
	if err != nil {
		t.Fatal(err)
	}
	canaryKey, otherKey := ca.ClusterID+"/"+canary, ca.ClusterID+"/"+other

	// 1. The canary's savepoint is drilled before the other job stops.
	st := peertest.WaitForWindow(t, ctx, tmp.Client, run, func(s workflows.WindowState) bool {
		return s.Pending != nil && s.Pending.Kind == workflows.DecisionNetworkChange
	})
	c := st.Canary
	if c == nil || c.Key != canaryKey || c.Outcome != catalog.DrillPassed || c.Result == nil || c.Result.Restore == nil {
		t.Fatalf("canary %+v; want %s drilled and passed", c, canaryKey)
	}
	cj, oj := jobOf(t, st, canaryKey), jobOf(t, st, otherKey)
	if c.Snapshot != cj.SavepointPath || strings.TrimRight(c.Result.Restore.RestoredFrom, "/") != cj.SavepointPath {
		t.Errorf("canary drill of %s restored from %s; want the canary's savepoint %s", c.Snapshot, c.Result.Restore.RestoredFrom, cj.SavepointPath)
	}
	if !oj.StoppedAt.After(cj.StoppedAt.Add(soak.D())) {
		t.Errorf("other job stopped at %s, canary at %s; want the other stopped only after the canary's drill (soak %s)", oj.StoppedAt, cj.StoppedAt, soak)
	}
	if c.Result.Cleanup == nil || c.Result.Cleanup.Removed == "" || d.exists(c.Result.Cleanup.Removed) {
		t.Errorf("canary drill cleanup %+v; want its drill dir removed", c.Result.Cleanup)
	}
	d.noDrillJobRunning(ctx, c.Result.Restore.JobID)

	// 2. A file lost from the other job's savepoint during the change
	// fails the proof before any restart.
	_, refs := d.metadataRefs(ctx, oj.SavepointPath)
	victim := ""
	for _, f := range refs {
		if !strings.HasSuffix(f, "/_metadata") {
			victim = f
			break
		}
	}
	if victim == "" {
		t.Fatalf("savepoint %s references no file besides _metadata: %v", oj.SavepointPath, refs)
	}
	if err := d.raw.Remove(strings.TrimPrefix(victim, d.peers.HDFS.URI)); err != nil {
		t.Fatal(err)
	}
	peertest.Update(t, ctx, tmp.Client, run, workflows.UpdateConfirmNetworkChange, workflows.ConfirmNetworkChangeRequest{By: "test", Reason: "change done"})
	st = peertest.WaitForWindow(t, ctx, tmp.Client, run, func(s workflows.WindowState) bool {
		return s.Pending != nil && s.Pending.Kind == workflows.DecisionSavepointProof
	})
	if st.Phase != workflows.WindowPhaseProveSavepoints || len(st.Pending.Jobs) != 1 || st.Pending.Jobs[0] != otherKey ||
		!strings.Contains(st.Pending.Reason, victim) || !strings.Contains(st.Pending.Reason, "missing") {
		t.Fatalf("phase %s pending %+v; want the proof of %s failing on %s", st.Phase, st.Pending, otherKey, victim)
	}
	for _, j := range st.Jobs {
		if j.RestartState != workflows.StepPending {
			t.Errorf("%s restart %s while the proof failed; want none restarted", j.Target.Key, j.RestartState)
		}
	}
	peertest.Update(t, ctx, tmp.Client, run, workflows.UpdateDecide, workflows.DecideRequest{Action: workflows.ActionSkipJob, Job: otherKey, By: "test", Reason: "restore by hand"})

	var rep workflows.WindowReport
	if err := run.Get(ctx, &rep); err != nil {
		t.Fatalf("window: %v", err)
	}
	for _, j := range rep.Jobs {
		switch j.Target.Key {
		case canaryKey:
			newID := j.NewJobID
			t.Cleanup(func() { _ = fc.CancelJob(context.Background(), newID) })
			if j.ProofState != workflows.StepDone || j.RestartState != workflows.StepDone || strings.TrimRight(j.RestoredFrom, "/") != j.SavepointPath {
				t.Errorf("canary %+v; want proven and restarted from its savepoint", j)
			}
			if s, err := fc.JobState(ctx, j.NewJobID); err != nil || s != flink.JobRunning {
				t.Errorf("canary's new job %s is %s (%v); want running", j.NewJobID, s, err)
			}
		case otherKey:
			if j.ProofState != workflows.StepFailed || j.RestartState != workflows.StepSkipped || j.NewJobID != "" || !strings.Contains(j.SkipReason, victim) {
				t.Errorf("other %+v; want its proof failed on %s and the job left stopped", j, victim)
			}
		}
	}
	jobs, err := fc.ListJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.Name == other && !j.State.IsGloballyTerminal() {
			t.Errorf("job %s (%s) is %s; the skipped job must stay stopped", other, j.ID, j.State)
		}
	}
	var listed governance.ListSavepointsResult
	if err := d.activity(app.NewFamilies(d.acts).Governance.ListSavepoints, governance.ListSavepointsInput{Tenants: []string{d.tenant[0]}}, &listed); err != nil {
		t.Fatal(err)
	}
	recorded := false
	for _, row := range listed.Savepoints {
		recorded = recorded || row.Path == c.Snapshot && row.Drill != nil && row.Drill.Outcome == catalog.DrillPassed && row.Drill.Tier == 2
	}
	if !recorded {
		t.Errorf("savepoints list %+v; want the canary's savepoint with its passing drill", listed.Savepoints)
	}
	if left := d.drillLeftovers(); len(left) > 0 {
		t.Errorf("drill root holds %v after the window; want nothing but run dirs", left)
	}
	if dir := os.Getenv(sandbox.EnvCaptureHistory); dir != "" {
		sandbox.CaptureHistory(t, tmp.Client, run.GetID(), run.GetRunID(), dir+"/window-drill.json.gz")
	}
}

// jobOf is key's progress in a window's state.
func jobOf(t *testing.T, st workflows.WindowState, key string) workflows.JobProgress {
	t.Helper()
	for _, j := range st.Jobs {
		if j.Target.Key == key {
			return j
		}
	}
	t.Fatalf("window has no job %s: %+v", key, st.Jobs)
	return workflows.JobProgress{}
}
