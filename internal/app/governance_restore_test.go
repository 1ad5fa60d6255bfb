//go:build realpeers

package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flinkmaint/flinkmaint/activities"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/metrics"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// TestGovernanceRestorePutsTheTrashBackOnRealPeers trashes a retired
// job's checkpoint dir (with its latest checkpoint) and an older savepoint
// of it, then restores the run's trash: a dry run moves nothing; an item
// whose original path was re-created is refused while the rest goes back;
// once that path is free it goes back too and the items back already are
// left alone; a restore of everything back is a no-op. A job then restores
// from the checkpoint at its original path and checkpoints, and from the
// savepoint.
func TestGovernanceRestorePutsTheTrashBackOnRealPeers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e := newFailClosedEnv(t, ctx)
	ca := e.peers.Clusters[0]
	sfx := peertest.RandomHex(4)
	ckpts, sps := e.root+"/a/checkpoints", e.root+"/a/savepoints"
	fc, job, taken := e.jobWithTwoSavepoints(ctx, ca, "restore-src-"+sfx, ckpts, sps, 2)
	e.cancel(ctx, fc, job)
	jobDir := ckpts + "/" + job
	latest := e.latestCompleted(jobDir)
	e.age(strings.TrimPrefix(jobDir, e.peers.HDFS.URI), time.Now().Add(-30*24*time.Hour), false)

	runID := "restore-" + sfx
	sum, plan := e.plan(ctx, runID, activities.Scope{Tenants: []string{e.tenant[0]}},
		cleanup.Policy{DeleteLatestRetiredCheckpoint: true, KeepSavepoints: 1, SavepointMaxAge: time.Nanosecond})
	want := map[string]bool{jobDir: false, taken[0]: false}
	var files int64
	for _, it := range plan.Delete {
		if _, ok := want[it.Path]; ok {
			want[it.Path] = true
			files += it.Files
		}
	}
	if !want[jobDir] || !want[taken[0]] {
		t.Fatalf("planned %+v; want the retired job's dir %s and the older savepoint %s", plan.Delete, jobDir, taken[0])
	}
	var ex activities.ExecuteCleanupResult
	if err := e.activity(e.acts.ExecuteCleanup, activities.ExecuteCleanupInput{RunID: runID, PlanPath: sum.PlanPath, PlanSHA256: sum.PlanSHA256}, &ex); err != nil {
		t.Fatalf("execute: %v", err)
	}
	if e.exists(latest) || e.exists(taken[0]) {
		t.Fatalf("%s or %s still in place after the run: %+v refused %+v", latest, taken[0], ex.Outcomes, ex.Refused)
	}
	m, err := metrics.NewGovernance(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	e.acts.Metrics = m
	restore := func(dry bool) map[string]cleanup.Record {
		t.Helper()
		var res activities.RestoreTrashResult
		if err := e.activity(e.acts.RestoreTrash, activities.RestoreTrashInput{RunID: runID, DryRun: dry}, &res); err != nil {
			t.Fatalf("restore (dry %v): %v", dry, err)
		}
		if len(res.Tenants) != 1 || res.Tenants[0] != e.tenant[0] {
			t.Errorf("restore names tenants %v; want %s, whose lock it needs", res.Tenants, e.tenant[0])
		}
		out := map[string]cleanup.Record{}
		for _, r := range res.Items {
			out[r.Path] = r
		}
		return out
	}

	if got := restore(true); got[jobDir].Outcome != cleanup.OutcomeStarted || got[taken[0]].Outcome != cleanup.OutcomeStarted || e.exists(latest) {
		t.Fatalf("dry run %+v; want both to be restored and nothing moved", got)
	}
	// Someone re-created the savepoint's path: it stays in the trash.
	if _, err := e.peers.HadoopShell(ctx, "-mkdir", "-p", strings.TrimPrefix(taken[0], e.peers.HDFS.URI)); err != nil {
		t.Fatal(err)
	}
	got := restore(false)
	if r := got[taken[0]]; r.Outcome != cleanup.OutcomeRefused || !strings.Contains(r.Detail, "exists again") || !e.exists(r.TrashPath+"/_metadata") {
		t.Errorf("re-created savepoint path: %+v; want it refused and the savepoint kept in the trash", r)
	}
	if r := got[jobDir]; r.Outcome != cleanup.OutcomeRestored || !e.exists(latest+"/_metadata") {
		t.Fatalf("job dir: %+v; want it back with %s", r, latest)
	}
	if _, err := e.peers.HadoopShell(ctx, "-rm", "-r", strings.TrimPrefix(taken[0], e.peers.HDFS.URI)); err != nil {
		t.Fatal(err)
	}
	got = restore(false)
	if r := got[taken[0]]; r.Outcome != cleanup.OutcomeRestored || !e.exists(taken[0]+"/_metadata") {
		t.Errorf("savepoint once its path is free: %+v; want it back", r)
	}
	if r := got[jobDir]; r.Outcome != cleanup.OutcomeRestored || !strings.Contains(r.Detail, "already back") {
		t.Errorf("job dir on the second restore: %+v; want it left as it is", r)
	}
	for p, r := range restore(false) {
		if !strings.Contains(r.Detail, "already back") {
			t.Errorf("a restore of everything back moved %s: %+v", p, r)
		}
	}
	if got := metricValue(t, m.RestoredFiles.WithLabelValues(e.tenant[0])); got != float64(files) {
		t.Errorf("restored files counted %v; want %d, each item once", got, files)
	}
	e.restores(ctx, ca, latest)
	e.restores(ctx, ca, taken[0])
}

// latestCompleted is the newest chk-N of jobDir with a _metadata.
func (e *failClosedEnv) latestCompleted(jobDir string) string {
	e.t.Helper()
	chks, err := e.raw.ReadDir(strings.TrimPrefix(jobDir, e.peers.HDFS.URI))
	if err != nil {
		e.t.Fatal(err)
	}
	latestID := -1
	for _, c := range chks {
		var n int
		if _, err := fmt.Sscanf(c.Name(), "chk-%d", &n); err == nil && n > latestID && e.exists(fmt.Sprintf("%s/%s/_metadata", jobDir, c.Name())) {
			latestID = n
		}
	}
	if latestID < 0 {
		e.t.Fatalf("%s has no completed checkpoint", jobDir)
	}
	return fmt.Sprintf("%s/chk-%d", jobDir, latestID)
}

// jobWithTwoSavepoints starts a job checkpointing into ckpts, waits for n
// checkpoints, takes two savepoints into sps and waits until the job's
// checkpoint history (served from a cache) names both: the evidence that
// they are the job's.
func (e *failClosedEnv) jobWithTwoSavepoints(ctx context.Context, c sandbox.FlinkCluster, name, ckpts, sps string, n int64) (*flink.Client, string, []string) {
	e.t.Helper()
	fc, job := e.start(ctx, c, name, ckpts, "", "", nil)
	e.checkpointed(ctx, fc, job, n)
	var taken []string
	for range 2 {
		tr, err := fc.TriggerSavepoint(ctx, job, flink.SavepointRequest{TargetDirectory: sps})
		if err != nil {
			e.t.Fatal(err)
		}
		loc, err := fc.AwaitSavepoint(ctx, job, tr.TriggerID)
		if err != nil {
			e.t.Fatal(err)
		}
		taken = append(taken, strings.TrimRight(loc, "/"))
	}
	e.waitFor(ctx, time.Minute, "the job's checkpoint history names its savepoints", func() (bool, string) {
		st, err := fc.Checkpoints(ctx, job)
		named := map[string]bool{}
		for _, h := range st.History {
			named[strings.TrimRight(h.ExternalPath, "/")] = true
		}
		return err == nil && named[taken[0]] && named[taken[1]], stringOr(err, fmt.Sprintf("%d entries", len(st.History)))
	})
	return fc, job, taken
}
