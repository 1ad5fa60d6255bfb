//go:build realpeers

package app_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/metrics"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// TestGovernanceRestorePutsTheTrashBackOnRealPeers first runs a fixed job
// id twice into one job dir, as application mode with HA does: run 1
// checkpoints past two savepoints and is cancelled; run 2, the same id on
// the other cluster, is restored from the older savepoint and so numbers
// its checkpoints below run 1's last. Both clusters list that one id. A
// plan keeps run 2's last checkpoint and what it names (the highest chk-N
// is run 1's, not the latest state) and run 1's. It then trashes the
// retired job's dir and an older savepoint of it, and restores the
// run's trash: a dry run moves nothing; an item
// whose original path was re-created is refused while the rest goes back;
// once that path is free it goes back too and the items back already are
// left alone; a restore of everything back is a no-op. A job then restores
// from the checkpoint at its original path and checkpoints, and from the
// savepoint. Then a retired job's older checkpoint, trashed apart from the
// shared files only it names, comes back whole from a restore of its dir
// alone (sharedFilesComeBackWithTheirCheckpoint).
func TestGovernanceRestorePutsTheTrashBackOnRealPeers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e := newFailClosedEnv(t, ctx)
	ca := e.peers.Clusters[0]
	sfx := peertest.RandomHex(4)
	ckpts, sps := e.root+"/a/checkpoints", e.root+"/a/savepoints"
	fixed := "ffffffff" + peertest.RandomHex(4) + "0000000000000000"
	fc, job, taken := e.jobWithTwoSavepoints(ctx, ca, fixed, "restore-src-"+sfx, ckpts, sps, 2)
	// Checkpoints after both savepoints: run 1 ends above them.
	after := e.checkpointed(ctx, fc, job, 1).Counts.Completed
	e.checkpointed(ctx, fc, job, after+2)
	e.cancel(ctx, fc, job)
	jobDir := ckpts + "/" + job
	latest := e.latestCompleted(jobDir)
	run2Latest := e.secondRunFromAnOlderSavepoint(ctx, fc, e.peers.Clusters[1], job, ckpts, taken[0], latest)
	// A month ago, in the order things happened: the savepoints, run 1's
	// last checkpoint, run 2's.
	plain := func(uri string) string { return strings.TrimPrefix(uri, e.peers.HDFS.URI) }
	e.age(plain(jobDir), time.Now().Add(-30*24*time.Hour), false)
	e.age(plain(latest), time.Now().Add(-31*24*time.Hour), false)
	e.age(plain(taken[1]), time.Now().Add(-32*24*time.Hour), false)
	e.age(plain(taken[0]), time.Now().Add(-33*24*time.Hour), false)

	_, kept := e.plan(ctx, "runs-"+sfx, core.Scope{Tenants: []string{e.tenant[0]}}, cleanup.Policy{})
	for _, cp := range []string{run2Latest, latest} {
		k, ok := keptAt(kept, cp)
		if !ok || k.Reason != cleanup.KeepLatestRetired || !strings.Contains(k.By, "several runs") {
			t.Errorf("%s kept %+v; want %s, the dir holding several runs", cp, k, cleanup.KeepLatestRetired)
		}
	}
	_, names := e.metadataRefs(ctx, run2Latest)
	for _, it := range kept.Delete {
		if it.Path == jobDir || it.Path == run2Latest || slices.Contains(names, it.Path) {
			t.Errorf("planned %s (%s): run 2's last state or a file it names", it.Path, it.Rule)
		}
	}

	runID := "restore-" + sfx
	sum, plan := e.plan(ctx, runID, core.Scope{Tenants: []string{e.tenant[0]}},
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
	var ex governance.ExecuteCleanupResult
	if err := e.activity(app.NewFamilies(e.acts).Governance.ExecuteCleanup, governance.ExecuteCleanupInput{RunID: runID, PlanPath: sum.PlanPath, PlanSHA256: sum.PlanSHA256}, &ex); err != nil {
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
		var res governance.RestoreTrashResult
		if err := e.activity(app.NewFamilies(e.acts).Governance.RestoreTrash, governance.RestoreTrashInput{RunID: runID, DryRun: dry}, &res); err != nil {
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

	e.sharedFilesComeBackWithTheirCheckpoint(ctx, ca, "shared-"+sfx, ckpts)
}

// sharedFilesComeBackWithTheirCheckpoint runs a job on cluster c that
// checkpoints only when told to, into ckpts, until the oldest of its three
// retained checkpoints names shared files the newest does not (RocksDB
// compacted them away). Cancelled and a month old, the job is retired: a
// plan keeps its newest checkpoint and trashes the older one and those
// files as separate items. A restore of the older checkpoint's dir alone
// lists them (dry) and puts them all back, and a job restores from it and
// checkpoints.
func (e *failClosedEnv) sharedFilesComeBackWithTheirCheckpoint(ctx context.Context, c sandbox.FlinkCluster, runID, ckpts string) {
	e.t.Helper()
	manual := map[string]string{"execution.checkpointing.interval": "1h", "execution.checkpointing.num-retained": "3"}
	fc, job := e.start(ctx, c, runID, ckpts, "", "", manual)
	jobDir := ckpts + "/" + job
	var retained, olderRefs, only []string
	for n := 1; len(only) == 0; n++ {
		if n > 20 {
			e.t.Fatalf("after 20 checkpoints of job %s the oldest retained, %s, names no file under %s/shared/ that the newest does not: the case is not exercised",
				job, retained[0], jobDir)
		}
		retained = e.retainedAfter(ctx, jobDir, e.checkpointNow(ctx, fc, job), 3)
		if len(retained) < 3 {
			continue
		}
		_, olderRefs = e.metadataRefs(ctx, retained[0])
		_, newestRefs := e.metadataRefs(ctx, retained[2])
		only = nil
		for _, f := range olderRefs {
			if strings.HasPrefix(f, jobDir+"/shared/") && !slices.Contains(newestRefs, f) {
				only = append(only, f)
			}
		}
	}
	older, middle, newest := retained[0], retained[1], retained[2]
	e.t.Logf("%s names %d shared files %s does not", older, len(only), newest)
	e.cancel(ctx, fc, job)
	e.age(strings.TrimPrefix(jobDir, e.peers.HDFS.URI), time.Now().Add(-30*24*time.Hour), false)

	sum, plan := e.plan(ctx, runID, core.Scope{Tenants: []string{e.tenant[0]}}, cleanup.Policy{})
	planned := map[string]cleanup.Item{}
	for _, it := range plan.Delete {
		planned[it.Path] = it
	}
	if it, ok := planned[older]; !ok || it.Kind != cleanup.KindCheckpointDir {
		e.t.Fatalf("%s planned as %+v; want the retired job's older checkpoint as an item of its own", older, it)
	}
	var apart []string
	for _, f := range only {
		if it, ok := planned[f]; ok && it.Kind == cleanup.KindSharedFile {
			apart = append(apart, f)
		}
	}
	if _, whole := planned[jobDir]; whole || len(apart) == 0 {
		e.t.Fatalf("planned the job dir %s whole: %v; of the shared files only %s names (%v) as items of their own: %v; want at least one",
			jobDir, whole, older, only, apart)
	}
	if _, ok := planned[newest]; ok {
		e.t.Fatalf("planned %s, the retired job's latest checkpoint", newest)
	}
	var ex governance.ExecuteCleanupResult
	if err := e.activity(app.NewFamilies(e.acts).Governance.ExecuteCleanup, governance.ExecuteCleanupInput{RunID: runID, PlanPath: sum.PlanPath, PlanSHA256: sum.PlanSHA256}, &ex); err != nil {
		e.t.Fatalf("execute: %v", err)
	}
	for _, p := range append([]string{older}, apart...) {
		if e.exists(p) {
			e.t.Fatalf("%s still in place after the run: %+v refused %+v", p, ex.Outcomes, ex.Refused)
		}
	}

	restore := func(dry bool) map[string]cleanup.Record {
		e.t.Helper()
		var res governance.RestoreTrashResult
		if err := e.activity(app.NewFamilies(e.acts).Governance.RestoreTrash, governance.RestoreTrashInput{RunID: runID, Paths: []string{older}, DryRun: dry}, &res); err != nil {
			e.t.Fatalf("restore of %s (dry %v): %v", older, dry, err)
		}
		if len(res.Tenants) != 1 || res.Tenants[0] != e.tenant[0] {
			e.t.Errorf("restore names tenants %v; want %s, whose lock it needs", res.Tenants, e.tenant[0])
		}
		out := map[string]cleanup.Record{}
		for _, r := range res.Items {
			out[r.Path] = r
		}
		return out
	}
	got := restore(true)
	for _, p := range append([]string{older}, apart...) {
		if got[p].Outcome != cleanup.OutcomeStarted || e.exists(p) {
			e.t.Fatalf("dry run: %s %+v (in place: %v); want it listed to go back and not moved: %+v", p, got[p], e.exists(p), got)
		}
	}
	got = restore(false)
	for _, p := range append([]string{older}, apart...) {
		if got[p].Outcome != cleanup.OutcomeRestored || !e.exists(p) {
			e.t.Fatalf("restore: %s %+v (in place: %v); want it back: %+v", p, got[p], e.exists(p), got)
		}
	}
	for _, f := range olderRefs {
		if !e.exists(f) {
			e.t.Errorf("%s names %s, which is not back", older, f)
		}
	}
	if _, trashed := planned[middle]; trashed && (got[middle].Path != "" || e.exists(middle)) {
		e.t.Errorf("%s went back (%+v); only what %s needs was asked for", middle, got[middle], older)
	}
	e.restores(ctx, c, older)
}

// checkpointNow triggers a checkpoint of job and returns its id once it
// completed, triggering again while Flink declines (tasks not running yet).
func (e *failClosedEnv) checkpointNow(ctx context.Context, fc *flink.Client, job string) int64 {
	e.t.Helper()
	var id int64
	e.waitFor(ctx, 2*time.Minute, "a checkpoint of job "+job, func() (bool, string) {
		tr, err := fc.TriggerCheckpoint(ctx, job, flink.CheckpointConfigured)
		if err == nil {
			actx, cancel := context.WithTimeout(ctx, time.Minute)
			id, err = fc.AwaitCheckpoint(actx, job, tr.TriggerID)
			cancel()
		}
		if err != nil && !flink.IsRetryable(err) {
			e.t.Fatalf("checkpoint of job %s: %v", job, err)
		}
		return err == nil, stringOr(err, "")
	})
	return id
}

// retainedAfter waits until the completed checkpoints in jobDir are those
// Flink retains once chk-id completed: chk-id or a newer one among at most
// n (it discards subsumed ones in the background). It returns them oldest
// first.
func (e *failClosedEnv) retainedAfter(ctx context.Context, jobDir string, id int64, n int) []string {
	e.t.Helper()
	var done []string
	e.waitFor(ctx, time.Minute, fmt.Sprintf("at most %d completed checkpoints in %s, the newest chk-%d", n, jobDir, id), func() (bool, string) {
		entries, err := e.raw.ReadDir(strings.TrimPrefix(jobDir, e.peers.HDFS.URI))
		if err != nil {
			return false, err.Error()
		}
		var ids []int64
		for _, en := range entries {
			var k int64
			if _, err := fmt.Sscanf(en.Name(), "chk-%d", &k); err == nil && e.exists(fmt.Sprintf("%s/chk-%d/_metadata", jobDir, k)) {
				ids = append(ids, k)
			}
		}
		slices.Sort(ids)
		done = done[:0]
		for _, k := range ids {
			done = append(done, fmt.Sprintf("%s/chk-%d", jobDir, k))
		}
		return len(ids) > 0 && len(ids) <= n && ids[len(ids)-1] >= id, fmt.Sprintf("completed %v", ids)
	})
	return done
}

// secondRunFromAnOlderSavepoint runs job id job a second time, on cluster
// c (a session cluster refuses an id it still lists), restored from the
// older savepoint from into the same checkpoint dir, until it completes a
// checkpoint; then cancels it. It returns that run's last checkpoint,
// numbered below run 1's last, last1. Both clusters must list the id.
func (e *failClosedEnv) secondRunFromAnOlderSavepoint(ctx context.Context, first *flink.Client, c sandbox.FlinkCluster, job, ckpts, from, last1 string) string {
	e.t.Helper()
	fc2, job2 := e.startAs(ctx, c, job, "second-run", ckpts, from, flink.RestoreNoClaim, nil)
	if job2 != job {
		e.t.Fatalf("second run got job id %s; want %s", job2, job)
	}
	st := e.checkpointed(ctx, fc2, job, 1)
	e.cancel(ctx, fc2, job)
	last2 := strings.TrimRight(st.Latest.Completed.ExternalPath, "/")
	var n1, n2 int64
	_, err1 := fmt.Sscanf(last1[strings.LastIndex(last1, "/")+1:], "chk-%d", &n1)
	_, err2 := fmt.Sscanf(last2[strings.LastIndex(last2, "/")+1:], "chk-%d", &n2)
	if err1 != nil || err2 != nil || n2 >= n1 || !strings.HasPrefix(last2, ckpts+"/"+job+"/") {
		e.t.Fatalf("run 2 ended at %s, run 1 at %s: want run 2 below run 1 in the same job dir; the case is not exercised", last2, last1)
	}
	for run, fc := range []*flink.Client{first, fc2} {
		if s, err := fc.JobState(ctx, job); err != nil || s != flink.JobCanceled {
			e.t.Fatalf("job %s of run %d: %s %v; want both clusters to list the one id as cancelled", job, run+1, s, err)
		}
	}
	e.waitFor(ctx, time.Minute, "run 2's last checkpoint written", func() (bool, string) {
		return e.exists(last2 + "/_metadata"), last2 + " has no _metadata yet"
	})
	return last2
}

func keptAt(p cleanup.Plan, path string) (cleanup.Kept, bool) {
	for _, k := range p.Keep {
		if k.Path == path {
			return k, true
		}
	}
	return cleanup.Kept{}, false
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

// jobWithTwoSavepoints starts a job (of jobID, "" for one Flink chooses)
// checkpointing into ckpts, waits for n
// checkpoints, takes two savepoints into sps and waits until the job's
// checkpoint history (served from a cache) names both: the evidence that
// they are the job's.
func (e *failClosedEnv) jobWithTwoSavepoints(ctx context.Context, c sandbox.FlinkCluster, jobID, name, ckpts, sps string, n int64) (*flink.Client, string, []string) {
	e.t.Helper()
	fc, job := e.startAs(ctx, c, jobID, name, ckpts, "", "", nil)
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
