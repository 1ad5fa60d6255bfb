//go:build realpeers

package app_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// TestSavepointRetentionFollowsTheLogicalJobOnRealPeers restarts one job
// six times through maintenance windows (six job ids, six id prefixes),
// each window cataloguing its savepoint under the job's logical name.
// With keep 2 and no max age, the plan deletes exactly the four oldest of
// that job's savepoints; another job's savepoints are untouched; every
// kept savepoint restores.
func TestSavepointRetentionFollowsTheLogicalJobOnRealPeers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	sfx := peertest.RandomHex(4)
	ordersName, paymentsName := "lin-orders-"+sfx, "lin-payments-"+sfx
	var ckpts, sps string
	e := newFailClosedEnvWith(t, ctx, func(e *failClosedEnv, s *inventory.Static, cfg *config.Config) {
		ckpts, sps = e.root+"/a/checkpoints", e.root+"/a/savepoints"
		s.Clusters[0].Jobs = []inventory.JobSpec{{Name: ordersName, Restart: inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun,
			Jar: e.peers.SampleJob.Jar, EntryClass: e.peers.SampleJob.EntryClass,
			ProgramArgs: []string{"--checkpoint-dir", ckpts, "--job-name", ordersName, "--keys", "2000", "--value-bytes", "256", "--rate", "200"}}}}
	})
	ca := e.peers.Clusters[0]
	const queue = "lineage-e2e"
	w := worker.New(tmp.Client, queue, worker.Options{})
	app.Register(w, e.acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	fc, ordersID := e.start(ctx, ca, ordersName, ckpts, "", "", nil)
	_, paymentsID := e.start(ctx, ca, paymentsName, ckpts, "", "", nil)
	e.checkpointed(ctx, fc, ordersID, 1)
	e.checkpointed(ctx, fc, paymentsID, 1) // its tasks run: a savepoint can be triggered
	// Two savepoints of payments, taken without stopping it.
	var paymentsSPs []string
	for range 2 {
		tr, err := fc.TriggerSavepoint(ctx, paymentsID, flink.SavepointRequest{TargetDirectory: sps})
		if err != nil {
			t.Fatal(err)
		}
		loc, err := fc.AwaitSavepoint(ctx, paymentsID, tr.TriggerID)
		if err != nil {
			t.Fatal(err)
		}
		paymentsSPs = append(paymentsSPs, strings.TrimRight(loc, "/"))
	}
	// Flink's checkpoint history names only a job's last few checkpoints
	// and savepoints: a savepoint taken outside flinkmaint is proven to be
	// its job's while the history names it, and catalogued then (here by
	// a listing; any plan does the same), so that it outlives the history.
	// Flink serves the statistics from a cache: wait until they name both.
	e.waitFor(ctx, time.Minute, "payments' checkpoint history names its savepoints", func() (bool, string) {
		st, err := fc.Checkpoints(ctx, paymentsID)
		named := map[string]bool{}
		for _, h := range st.History {
			named[strings.TrimRight(h.ExternalPath, "/")] = h.IsSavepoint
		}
		return err == nil && named[paymentsSPs[0]] && named[paymentsSPs[1]], stringOr(err, fmt.Sprintf("%d entries", len(st.History)))
	})
	var seen governance.ListSavepointsResult
	if err := e.activity(app.NewFamilies(e.acts).Governance.ListSavepoints, governance.ListSavepointsInput{Tenants: []string{e.tenant[0]}}, &seen); err != nil {
		t.Fatal(err)
	}
	if len(seen.Savepoints) != 2 || seen.Savepoints[0].Job == "" || seen.Savepoints[1].Job == "" {
		t.Fatalf("savepoints list right after payments' savepoints: %+v; want both with their job", seen.Savepoints)
	}
	// A savepoint no job's history knows: a copy under a prefix no job has.
	stray := sps + "/savepoint-f0f0f0-" + peertest.RandomHex(6)
	if _, err := e.peers.HadoopShell(ctx, "-cp", strings.TrimPrefix(paymentsSPs[0], e.peers.HDFS.URI), strings.TrimPrefix(stray, e.peers.HDFS.URI)); err != nil {
		t.Fatal(err)
	}
	var ordersSPs []string
	lastID := ordersID
	for i := range 6 {
		in := workflows.WindowInput{
			WindowID: fmt.Sprintf("lineage-%s-%d", sfx, i+1), Reason: fmt.Sprintf("restart %d", i+1),
			Scope: core.Scope{IncludeJobs: []string{ordersName}},
			Policy: workflows.WindowPolicy{
				ManifestDir: e.root + "/windows",
				Restart: workflows.RestartPolicy{CanarySize: 1, Concurrency: 1, Soak: workflows.Duration(time.Second),
					RunningTimeout: workflows.Duration(2 * time.Minute), CheckpointTimeout: workflows.Duration(90 * time.Second)},
				Cleanup: workflows.CleanupPolicy{Mode: workflows.CleanupModeSkip},
			},
		}
		run, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.WindowWorkflowID(in.WindowID), TaskQueue: queue},
			workflows.MaintenanceWindowWorkflowType, in)
		if err != nil {
			t.Fatal(err)
		}
		peertest.WaitForWindow(t, ctx, tmp.Client, run, func(st workflows.WindowState) bool { return st.Phase == workflows.WindowPhaseNetworkGate })
		peertest.Update(t, ctx, tmp.Client, run, workflows.UpdateConfirmNetworkChange, workflows.ConfirmNetworkChangeRequest{By: "e2e", Reason: "restart"})
		var rep workflows.WindowReport
		if err := run.Get(ctx, &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Phase != workflows.WindowPhaseCompleted || len(rep.Jobs) != 1 || rep.Jobs[0].RestartState != workflows.StepDone || rep.Jobs[0].Target.JobID != lastID {
			t.Fatalf("window %d: phase %s, jobs %+v", i+1, rep.Phase, rep.Jobs)
		}
		ordersSPs = append(ordersSPs, strings.TrimRight(rep.Jobs[0].SavepointPath, "/"))
		lastID = rep.Jobs[0].NewJobID
		id := lastID
		t.Cleanup(func() { _ = fc.CancelJob(context.Background(), id) })
	}
	prefixes := map[string]bool{}
	for _, sp := range ordersSPs {
		prefixes[sp[strings.LastIndex(sp, "/savepoint-")+len("/savepoint-"):][:6]] = true
	}
	if len(prefixes) != 6 {
		t.Fatalf("six windows left savepoints of %d job id prefixes; want 6: %v", len(prefixes), ordersSPs)
	}
	// Each window catalogued its savepoint under the logical job.
	fs, root, err := e.acts.Storage.Resolve(ctx, e.root+"/a")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := catalog.Store{FS: fs, Root: root}.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	windowed := 0
	for _, en := range entries {
		if en.Trigger == catalog.TriggerWindow && en.Job.Job == ordersName && en.Job.Cluster == ca.ClusterID && en.Job.Tenant == e.tenant[0] &&
			strings.HasPrefix(en.RunID, "lineage-"+sfx+"-") && en.Format == workflows.FormatCanonical {
			windowed++
		}
	}
	if windowed != 6 {
		t.Fatalf("catalog %+v; want the six window savepoints of %s", entries, ordersName)
	}

	sum, plan := e.plan(ctx, "lineage-"+sfx, core.Scope{Tenants: []string{e.tenant[0]}},
		cleanup.Policy{KeepSavepoints: 2, SavepointMaxAge: time.Nanosecond})
	var deleted []string
	for _, it := range plan.Delete {
		if it.Kind == cleanup.KindSavepointDir {
			deleted = append(deleted, it.Path)
		}
	}
	sort.Strings(deleted)
	want := append([]string(nil), ordersSPs[:4]...)
	sort.Strings(want)
	if strings.Join(deleted, "\n") != strings.Join(want, "\n") {
		t.Fatalf("savepoints planned for deletion:\n%s\nwant the four oldest of %s:\n%s", strings.Join(deleted, "\n"), ordersName, strings.Join(want, "\n"))
	}
	kept := map[string]cleanup.Kept{}
	for _, k := range plan.Keep {
		kept[k.Path] = k
	}
	if k := kept[stray]; k.Reason != cleanup.KeepLineageUnknown {
		t.Errorf("savepoint %s that no job's history knows kept as %+v; want %s", stray, k, cleanup.KeepLineageUnknown)
	}
	survivors := append(append([]string(nil), ordersSPs[4:]...), paymentsSPs...)
	for _, sp := range survivors {
		if k := kept[sp]; k.Reason == "" || (k.Reason == cleanup.KeepNewestSavepoints && !strings.Contains(k.By, ca.ClusterID+"/")) {
			t.Errorf("savepoint %s kept as %+v; want kept, naming its logical job", sp, k)
		}
	}
	var ex governance.ExecuteCleanupResult
	if err := e.activity(app.NewFamilies(e.acts).Governance.ExecuteCleanup, governance.ExecuteCleanupInput{RunID: "lineage-" + sfx, PlanPath: sum.PlanPath, PlanSHA256: sum.PlanSHA256}, &ex); err != nil {
		t.Fatalf("execute: %v", err)
	}
	for _, sp := range ordersSPs[:4] {
		if e.exists(sp) {
			t.Errorf("%s still in place after the run", sp)
		}
	}
	// Stop the jobs so that the sandbox has slots for the restores.
	e.cancel(ctx, fc, lastID)
	e.cancel(ctx, fc, paymentsID)
	for _, sp := range survivors {
		e.restores(ctx, ca, sp)
	}

	// savepoints list shows the stray one without a job; adopting it into
	// payments brings it under payments' retention: the next plan keeps it
	// and the newer original, and deletes the oldest.
	catalogOp := func(in workflows.SavepointCatalogInput) workflows.SavepointCatalogResult {
		t.Helper()
		run, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.SavepointCatalogWorkflowID(peertest.RandomHex(6)), TaskQueue: queue},
			workflows.SavepointCatalogWorkflowType, in)
		if err != nil {
			t.Fatal(err)
		}
		var out workflows.SavepointCatalogResult
		if err := run.Get(ctx, &out); err != nil {
			t.Fatalf("savepoint catalog %+v: %v", in, err)
		}
		return out
	}
	listed := catalogOp(workflows.SavepointCatalogInput{List: &governance.ListSavepointsInput{Tenants: []string{e.tenant[0]}}}).List
	jobOf := map[string]string{}
	for _, r := range listed.Savepoints {
		jobOf[r.Path] = r.Job
	}
	paymentsJob := e.tenant[0] + "/" + ca.ClusterID + "/" + paymentsName
	if jobOf[stray] != "" || jobOf[paymentsSPs[1]] != paymentsJob || jobOf[ordersSPs[5]] != e.tenant[0]+"/"+ca.ClusterID+"/"+ordersName {
		t.Fatalf("savepoints list %+v; want %s without a job, payments' and orders' with theirs", listed.Savepoints, stray)
	}
	adopted := catalogOp(workflows.SavepointCatalogInput{Adopt: &governance.AdoptSavepointsInput{Job: ca.ClusterID + "/" + paymentsName, Paths: []string{stray}}}).Adopt
	if len(adopted.Adopted) != 1 || adopted.Adopted[0].Job != paymentsJob {
		t.Fatalf("adopt: %+v", adopted)
	}
	onlyPayments := catalogOp(workflows.SavepointCatalogInput{List: &governance.ListSavepointsInput{Job: ca.ClusterID + "/" + paymentsName}}).List
	if len(onlyPayments.Savepoints) != 3 {
		t.Fatalf("savepoints list --job %s/%s: %+v; want its two savepoints and the adopted one", ca.ClusterID, paymentsName, onlyPayments.Savepoints)
	}
	_, plan = e.plan(ctx, "lineage-after-adopt-"+sfx, core.Scope{Tenants: []string{e.tenant[0]}},
		cleanup.Policy{KeepSavepoints: 2, SavepointMaxAge: time.Nanosecond})
	deleted = deleted[:0]
	for _, it := range plan.Delete {
		if it.Kind == cleanup.KindSavepointDir {
			deleted = append(deleted, it.Path)
		}
	}
	if len(deleted) != 1 || deleted[0] != paymentsSPs[0] {
		t.Fatalf("after adopting %s into %s, the plan deletes %v; want only the oldest, %s", stray, paymentsName, deleted, paymentsSPs[0])
	}
}

// TestSnapshotIdentityOnEvidenceOnRealPeers runs two jobs whose ids share
// their first eight hex digits, as every job of an application cluster
// with HA does (ffffffff…): one on a cluster outside the inventory takes a
// savepoint, checkpoints again and is cancelled without one; the other, on
// an inventory cluster, takes two savepoints after that, and the older is
// pinned. A plan keeping one savepoint per job, with no max age and a
// retired-job TTL of an hour (the cancelled job aged two days), keeps the
// cancelled job's latest checkpoint (no savepoint proven to be that job's is newer) and what it
// references, keeps its savepoint as lineage-unknown (no history names it;
// the shared prefix is no evidence), keeps the newest savepoint of the
// other job although the pinned one has a newer file in its dir, and lists
// the unknown savepoint under savepoints list --unknown; the plan records
// which job id ran which logical job. The cancelled job then restores from
// the checkpoint that was kept.
func TestSnapshotIdentityOnEvidenceOnRealPeers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	sfx := peertest.RandomHex(4)
	var ckpts, sps string
	e := newFailClosedEnvWith(t, ctx, func(e *failClosedEnv, s *inventory.Static, _ *config.Config) {
		ckpts, sps = e.root+"/a/checkpoints", e.root+"/a/savepoints"
		s.Clusters = s.Clusters[:1] // the second cluster is outside the inventory
	})
	ca, cb := e.peers.Clusters[0], e.peers.Clusters[1]
	retiredID, otherID := "ffffffff"+peertest.RandomHex(4)+"0000000000000000", "ffffffff"+peertest.RandomHex(4)+"0000000000000000"
	savepoint := func(fc *flink.Client, job string) string {
		t.Helper()
		tr, err := fc.TriggerSavepoint(ctx, job, flink.SavepointRequest{TargetDirectory: sps})
		if err != nil {
			t.Fatal(err)
		}
		loc, err := fc.AwaitSavepoint(ctx, job, tr.TriggerID)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimRight(loc, "/")
	}

	fo, _ := e.startAs(ctx, ca, otherID, "ident-other-"+sfx, ckpts, "", "", nil)
	fr, _ := e.startAs(ctx, cb, retiredID, "ident-retired-"+sfx, ckpts, "", "", nil)
	e.checkpointed(ctx, fo, otherID, 1)
	e.checkpointed(ctx, fr, retiredID, 1)
	retiredSP := savepoint(fr, retiredID)
	// A checkpoint after the savepoint: the checkpoint is the newest
	// restore point of the job.
	after := e.checkpointed(ctx, fr, retiredID, 1).Counts.Completed
	e.checkpointed(ctx, fr, retiredID, after+1)
	e.cancel(ctx, fr, retiredID)
	// Its latest checkpoint as it ended: the highest chk-N with a _metadata
	// (Flink's statistics are served from a cache).
	jobDir := strings.TrimPrefix(ckpts, e.peers.HDFS.URI) + "/" + retiredID
	chks, err := e.raw.ReadDir(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	latestID := -1
	for _, c := range chks {
		var n int
		if _, err := fmt.Sscanf(c.Name(), "chk-%d", &n); err == nil && n > latestID && e.exists(e.root+"/a/checkpoints/"+retiredID+"/"+c.Name()+"/_metadata") {
			latestID = n
		}
	}
	latest, latestRefs := e.metadataRefs(ctx, fmt.Sprintf("%s/%s/chk-%d", ckpts, retiredID, latestID))
	// Cancelled two days ago. Its savepoint keeps its time: written while
	// the other job ran, which a prefix and a time window took for proof.
	e.age(strings.TrimPrefix(ckpts, e.peers.HDFS.URI)+"/"+retiredID, time.Now().Add(-48*time.Hour), false)
	pinned := savepoint(fo, otherID)
	newest := savepoint(fo, otherID)
	if _, err := e.peers.HadoopShell(ctx, "-touchz", strings.TrimPrefix(pinned, e.peers.HDFS.URI)+"/"+cleanup.PinMarkerName); err != nil {
		t.Fatal(err)
	}
	for _, sp := range []string{retiredSP, pinned, newest} {
		if !strings.Contains(sp, "/savepoint-ffffff-") {
			t.Fatalf("savepoint %s: want the ffffff prefix both jobs share", sp)
		}
	}
	// The job's checkpoint history is the evidence of whose the newest
	// savepoint is; Flink serves it from a cache (web.refresh-interval),
	// so the plan waits until the history names it.
	e.waitFor(ctx, time.Minute, "job "+otherID+"'s checkpoint history names "+newest, func() (bool, string) {
		st, err := fo.Checkpoints(ctx, otherID)
		if err != nil {
			return false, err.Error()
		}
		for _, c := range st.History {
			if strings.TrimRight(c.ExternalPath, "/") == newest {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d entries", len(st.History))
	})

	_, plan := e.plan(ctx, "ident-"+sfx, core.Scope{Tenants: []string{e.tenant[0]}},
		cleanup.Policy{KeepSavepoints: 1, SavepointMaxAge: time.Nanosecond, RetiredJobTTL: time.Hour})
	kept := map[string]cleanup.Kept{}
	for _, k := range plan.Keep {
		kept[k.Path] = k
	}
	for path, want := range map[string]cleanup.Reason{latest: cleanup.KeepLatestRetired, retiredSP: cleanup.KeepLineageUnknown,
		pinned: cleanup.KeepPinned, newest: cleanup.KeepNewestSavepoints} {
		if k := kept[path]; k.Reason != want {
			t.Errorf("%s kept as %+v; want %s", path, k, want)
		}
	}
	for _, f := range append([]string{latest + "/_metadata"}, latestRefs...) {
		for _, it := range plan.Delete {
			if f == it.Path || strings.HasPrefix(f, it.Path+"/") {
				t.Errorf("%s, which the cancelled job's latest checkpoint needs, is planned as %s (%s): %s", f, it.Rule, it.Path, it.Detail)
			}
		}
	}

	// The plan recorded which job id runs which logical job, for when the
	// cluster's history is gone.
	fs, root, err := e.acts.Storage.Resolve(ctx, e.root+"/a")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := catalog.JobStore{FS: fs, Root: root}.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]string{}
	for _, r := range recs {
		recorded[r.JobID] = r.Job.String()
	}
	if want := e.tenant[0] + "/" + ca.ClusterID + "/ident-other-" + sfx; recorded[otherID] != want {
		t.Errorf("job records %v; want %s as %s", recorded, otherID, want)
	}

	var listed governance.ListSavepointsResult
	if err := e.activity(app.NewFamilies(e.acts).Governance.ListSavepoints, governance.ListSavepointsInput{Tenants: []string{e.tenant[0]}, Unknown: true}, &listed); err != nil {
		t.Fatal(err)
	}
	var unknown []string
	for _, r := range listed.Savepoints {
		unknown = append(unknown, r.Path)
	}
	if len(unknown) != 1 || unknown[0] != retiredSP {
		t.Errorf("savepoints list --unknown: %v; want only %s", unknown, retiredSP)
	}

	e.cancel(ctx, fo, otherID) // a slot for the restore
	e.restores(ctx, ca, latest)
}
