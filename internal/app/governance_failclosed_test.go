//go:build realpeers

package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	gohdfs "github.com/colinmarc/hdfs/v2"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// failClosedEnv is two tenants on the sandbox HDFS, each with its own
// Flink cluster, and a worker's activities over them.
type failClosedEnv struct {
	t      *testing.T
	peers  *sandbox.Peers
	acts   *app.Ports
	raw    *gohdfs.Client
	jar    map[string]string // REST URL -> uploaded jar id
	plain  string            // test tree, plain path
	root   string            // test tree, hdfs://127.0.0.1:port/...
	tenant [2]string
}

func newFailClosedEnv(t *testing.T, ctx context.Context) *failClosedEnv {
	t.Helper()
	return newFailClosedEnvWith(t, ctx, nil)
}

// newFailClosedEnvWith lets a test change the static inventory and the
// worker's configuration before the worker is built.
func newFailClosedEnvWith(t *testing.T, ctx context.Context, mod func(*failClosedEnv, *inventory.Static, *config.Config)) *failClosedEnv {
	t.Helper()
	peers := sandbox.RequirePeers(t)
	sfx := peertest.RandomHex(4)
	e := &failClosedEnv{t: t, peers: peers, jar: map[string]string{}, plain: "/flinkmaint-test/failclosed-" + sfx,
		tenant: [2]string{"fc-a-" + sfx, "fc-b-" + sfx}}
	e.root = peers.HDFS.URI + e.plain
	if _, err := peers.HadoopShell(ctx, "-mkdir", "-p", e.plain+"/a/checkpoints", e.plain+"/a/savepoints", e.plain+"/b/checkpoints",
		e.plain+"/restore", e.plain+"/trash", e.plain+"/plans"); err != nil {
		t.Fatalf("create test tree: %v", err)
	}
	var err error
	e.raw, err = gohdfs.NewClient(gohdfs.ClientOptions{Addresses: []string{peers.HDFS.NameNode}, User: peers.HDFS.User})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if os.Getenv("FLINKMAINT_KEEP_TEST_TREE") == "" {
			_ = e.raw.RemoveAll(e.plain)
		}
		_ = e.raw.Close()
	})
	ca, cb := peers.Clusters[0], peers.Clusters[1]
	static := inventory.Static{
		Tenants: []inventory.Tenant{{Name: e.tenant[0], Root: e.root + "/a"}, {Name: e.tenant[1], Root: e.root + "/b"}},
		Clusters: []inventory.Cluster{
			{Tenant: e.tenant[0], ClusterID: ca.ClusterID, Mode: inventory.ModeSession, RESTURL: ca.RESTURL,
				CheckpointDir: e.root + "/a/checkpoints", SavepointDir: e.root + "/a/savepoints"},
			{Tenant: e.tenant[1], ClusterID: cb.ClusterID, Mode: inventory.ModeSession, RESTURL: cb.RESTURL,
				CheckpointDir: e.root + "/b/checkpoints"},
		},
	}
	cfg := config.Default()
	cfg.Storage.HDFSUser = peers.HDFS.User
	cfg.Storage.HadoopConfDir = t.TempDir()
	cfg.Storage.WritableRoots = []string{e.root}
	// The default hold, so the worker.yaml written for a worker of the
	// previous release (rolling_upgrade_test.go) names no key it lacks.
	cfg.Cleanup.TrashRoot, cfg.Cleanup.PlanDir = e.root+"/trash", e.root+"/plans"
	if mod != nil {
		mod(e, &static, &cfg)
	}
	cfg.Inventory.StaticFile = peertest.WriteInventory(t, static)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	acts := peertest.NewPorts(t, cfg, "failclosed")
	// Its activities run outside a worker, where no window or upgrade
	// of flinkmaint can be in flight.
	acts.Runs = nil
	e.acts = acts
	return e
}

// start runs the sample job on cluster c and cancels it when the test ends.
func (e *failClosedEnv) start(ctx context.Context, c sandbox.FlinkCluster, name, ckptDir, from string, mode flink.RestoreMode, conf map[string]string) (*flink.Client, string) {
	e.t.Helper()
	return e.startAs(ctx, c, "", name, ckptDir, from, mode, conf)
}

// startAs is start with a fixed job id ("" lets Flink choose one).
func (e *failClosedEnv) startAs(ctx context.Context, c sandbox.FlinkCluster, jobID, name, ckptDir, from string, mode flink.RestoreMode, conf map[string]string) (*flink.Client, string) {
	e.t.Helper()
	fc := peertest.FlinkClient(e.t, c.RESTURL)
	if e.jar[c.RESTURL] == "" {
		id, err := fc.UploadJar(ctx, e.peers.SampleJob.Jar)
		if err != nil {
			e.t.Fatal(err)
		}
		e.jar[c.RESTURL] = id
		e.t.Cleanup(func() { _ = fc.DeleteJar(context.Background(), id) })
	}
	res, err := fc.RunJar(ctx, e.jar[c.RESTURL], flink.RunJarRequest{EntryClass: e.peers.SampleJob.EntryClass,
		ProgramArgs:   []string{"--checkpoint-dir", ckptDir, "--job-name", name, "--keys", "2000", "--value-bytes", "256", "--rate", "200"},
		SavepointPath: from, RestoreMode: mode, FlinkConfiguration: conf, JobID: jobID})
	if err != nil {
		e.t.Fatalf("start %s from %q: %v", name, from, err)
	}
	e.t.Cleanup(func() {
		// Wait for the end, so the tree is removed under no running job.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = fc.CancelJob(ctx, res.JobID)
		for ctx.Err() == nil {
			if s, err := fc.JobState(ctx, res.JobID); err != nil || s.IsGloballyTerminal() {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	return fc, res.JobID
}

// waitFor polls cond until it holds; what names it in the failure.
func (e *failClosedEnv) waitFor(ctx context.Context, limit time.Duration, what string, cond func() (bool, string)) {
	e.t.Helper()
	peertest.WaitFor(e.t, ctx, limit, what, cond)
}

// checkpointed waits for n completed checkpoints and returns the stats.
func (e *failClosedEnv) checkpointed(ctx context.Context, fc *flink.Client, job string, n int64) flink.CheckpointingStatistics {
	e.t.Helper()
	var st flink.CheckpointingStatistics
	e.waitFor(ctx, 3*time.Minute, "job "+job+" checkpoints", func() (bool, string) {
		s, err := fc.JobState(ctx, job)
		if err == nil && s.IsTerminal() {
			e.t.Fatalf("job %s is %s", job, s)
		}
		st, err = fc.Checkpoints(ctx, job)
		return err == nil && s == flink.JobRunning && st.Counts.Completed >= n && st.Latest.Completed != nil,
			stringOr(err, "state "+string(s))
	})
	return st
}

// checkpointedIntoFiles waits until the job's latest completed checkpoint
// names a file under dir. Flink triggers a job's first checkpoint after a
// random delay of up to one interval, so it may come before the job has
// written much; state files below state.storage.fs.memory-threshold are
// kept inside _metadata and name no file a restored job could share.
func (e *failClosedEnv) checkpointedIntoFiles(ctx context.Context, fc *flink.Client, job, dir string) {
	e.t.Helper()
	e.checkpointed(ctx, fc, job, 1)
	e.waitFor(ctx, 2*time.Minute, "a checkpoint of job "+job+" naming a file under "+dir, func() (bool, string) {
		st, err := fc.Checkpoints(ctx, job)
		if err != nil || st.Latest.Completed == nil {
			return false, stringOr(err, "no completed checkpoint")
		}
		latest, refs := e.metadataRefs(ctx, strings.TrimRight(st.Latest.Completed.ExternalPath, "/"))
		for _, f := range refs {
			if strings.HasPrefix(f, dir+"/") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%s names %v", latest, refs)
	})
}

func stringOr(err error, s string) string {
	if err != nil {
		return err.Error()
	}
	return s
}

func (e *failClosedEnv) cancel(ctx context.Context, fc *flink.Client, job string) {
	e.t.Helper()
	if err := fc.CancelJob(ctx, job); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor(ctx, time.Minute, "job "+job+" cancelled", func() (bool, string) {
		s, err := fc.JobState(ctx, job)
		return err == nil && s == flink.JobCanceled, stringOr(err, string(s))
	})
}

// restores proves that from restores: a new job is RUNNING, restored from
// exactly it, with a checkpoint completed after the restore.
func (e *failClosedEnv) restores(ctx context.Context, c sandbox.FlinkCluster, from string) {
	e.t.Helper()
	fc, job := e.start(ctx, c, "failclosed-restore", e.root+"/restore", from, flink.RestoreNoClaim, nil)
	e.waitFor(ctx, 3*time.Minute, "restore from "+from, func() (bool, string) {
		s, err := fc.JobState(ctx, job)
		if err == nil && s.IsTerminal() {
			ex, _ := fc.JobExceptions(ctx, job, 3)
			e.t.Fatalf("restore from %s: job %s is %s: %+v", from, job, s, ex.History.Entries)
		}
		st, err := fc.Checkpoints(ctx, job)
		if err != nil || st.Latest.Restored == nil {
			return false, stringOr(err, "not restored yet")
		}
		if got := strings.TrimRight(st.Latest.Restored.ExternalPath, "/"); got != strings.TrimRight(from, "/") {
			e.t.Fatalf("job %s restored from %s; want %s", job, got, from)
		}
		return st.Latest.Completed != nil && st.Latest.Completed.ID > st.Latest.Restored.ID, "no checkpoint after the restore yet"
	})
	e.cancel(ctx, fc, job)
}

// activity runs one activity as a worker would, retrying an error the
// activity marks retryable a few times as Temporal's retry policy does
// (the shared sandbox clusters run other tests' jobs, which may answer
// 503 for a moment); a non-retryable error returns at once.
func (e *failClosedEnv) activity(fn, in, out any) error {
	for attempt := 1; ; attempt++ {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestActivityEnvironment()
		app.RegisterActivities(env, e.acts)
		v, err := env.ExecuteActivity(fn, in)
		if err == nil {
			return v.Get(out)
		}
		var appErr *temporal.ApplicationError
		if attempt == 3 || errors.As(err, &appErr) && appErr.NonRetryable() {
			return err
		}
		e.t.Logf("attempt %d failed with a retryable error, retrying: %v", attempt, err)
		time.Sleep(2 * time.Second)
	}
}

// plan runs PlanCleanup and reads the whole plan back from storage.
func (e *failClosedEnv) plan(ctx context.Context, runID string, scope core.Scope, pol cleanup.Policy) (governance.PlanSummary, cleanup.Plan) {
	e.t.Helper()
	var res governance.PlanCleanupResult
	if err := e.activity(app.NewFamilies(e.acts).Governance.PlanCleanup, governance.PlanCleanupInput{RunID: runID, Scope: scope, Policy: pol}, &res); err != nil {
		e.t.Fatalf("plan: %v", err)
	}
	data, err := e.raw.ReadFile(strings.TrimPrefix(res.Summary.PlanPath, e.peers.HDFS.URI))
	if err != nil {
		e.t.Fatal(err)
	}
	var p cleanup.Plan
	if err := json.Unmarshal(data, &p); err != nil {
		e.t.Fatal(err)
	}
	return res.Summary, p
}

// age sets the mtime of every file below plain path dir (and the dirs).
func (e *failClosedEnv) age(dir string, when time.Time, filesOnly bool) {
	e.t.Helper()
	walk := func() (all []string, seen string) {
		var b strings.Builder
		_ = e.raw.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil {
				fmt.Fprintf(&b, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
				if !filesOnly || !fi.IsDir() {
					all = append(all, p)
				}
			}
			return nil
		})
		return all, b.String()
	}
	// Flink discards a stopped job's subsumed checkpoints in the
	// background: age the tree once it has settled (unchanged for 2 s), or
	// a late discard makes it look written a moment ago.
	all, last := walk()
	for settled, deadline := 0, time.Now().Add(time.Minute); settled < 4; {
		if time.Now().After(deadline) {
			e.t.Fatalf("%s did not settle within a minute", dir)
		}
		time.Sleep(500 * time.Millisecond)
		var now string
		all, now = walk()
		if now == last {
			settled++
		} else {
			settled = 0
		}
		last = now
	}
	sort.Sort(sort.Reverse(sort.StringSlice(all))) // children first
	for _, p := range all {
		if err := e.raw.Chtimes(p, when, when); err != nil && !os.IsNotExist(err) {
			e.t.Fatalf("age %s: %v", p, err)
		}
	}
}

// ageCheckpointed ages the files a running job's latest completed
// checkpoint references, and only those: a file its next checkpoint is
// uploading meanwhile keeps the fresh mtime every real upload has (aged, it
// would look like garbage no real cleanup could ever see).
func (e *failClosedEnv) ageCheckpointed(ctx context.Context, fc *flink.Client, job string, when time.Time) {
	e.t.Helper()
	dir, refs := e.latestRefs(ctx, fc, job)
	if len(refs) == 0 {
		e.t.Fatalf("%s references no file to age", dir)
	}
	for _, f := range refs {
		u, err := url.Parse(f)
		if err != nil {
			e.t.Fatalf("reference %q of %s: %v", f, dir, err)
		}
		if err := e.raw.Chtimes(u.Path, when, when); err != nil {
			e.t.Fatalf("age %s: %v", u.Path, err)
		}
	}
}

func (e *failClosedEnv) exists(uri string) bool {
	_, err := e.raw.Stat(strings.TrimPrefix(uri, e.peers.HDFS.URI))
	return err == nil
}

// latestRefs parses a live job's latest completed checkpoint now.
func (e *failClosedEnv) latestRefs(ctx context.Context, fc *flink.Client, job string) (string, []string) {
	e.t.Helper()
	st, err := fc.Checkpoints(ctx, job)
	if err != nil || st.Latest.Completed == nil {
		e.t.Fatalf("checkpoints of %s: %+v %v", job, st.Latest, err)
	}
	return e.metadataRefs(ctx, strings.TrimRight(st.Latest.Completed.ExternalPath, "/"))
}

// metadataRefs parses the _metadata of a checkpoint or savepoint dir.
func (e *failClosedEnv) metadataRefs(ctx context.Context, dir string) (string, []string) {
	e.t.Helper()
	fs, p, err := e.acts.Storage.Resolve(ctx, dir+"/_metadata")
	if err != nil {
		e.t.Fatal(err)
	}
	res, found, err := cleanup.ReadMetadata(ctx, fs, p)
	if err != nil || !found || res.Refs == nil {
		e.t.Fatalf("read %s: found %v, %v %s", p, found, err, res.Error)
	}
	return dir, res.Refs.Files
}

// TestGovernanceFailsClosedOnRealPeers reproduces, on two real Flink
// clusters and HDFS, three ways a cleanup used to delete state a job still
// needed, and proves each closed:
//   - a job in tenant B restored in CLAIM mode from a retired job of tenant
//     A references A's shared/ files from its latest checkpoint only (Flink
//     subsumed and deleted the restored one); a plan scoped to A keeps them;
//   - a job whose checkpoint dir is spelled hdfs://localhost:<port> while
//     the worker lists hdfs://127.0.0.1:<port> keeps its shared/ files;
//   - a savepoint planned for retention, then restored from while the plan
//     waits for approval, is refused by the executor.
//
// After the cleanup ran in trash mode, both live jobs restore from their
// latest checkpoints, and the savepoint restores too.
func TestGovernanceFailsClosedOnRealPeers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	e := newFailClosedEnv(t, ctx)
	ca, cb := e.peers.Clusters[0], e.peers.Clusters[1]
	longAgo := time.Now().Add(-30 * 24 * time.Hour)

	// Job A (tenant A): one checkpoint, two savepoints, cancelled. A long
	// interval keeps its RocksDB at one or two files, so the job restored
	// from it has no compaction pending that would replace them at once.
	slow := map[string]string{"execution.checkpointing.interval": "20s", "execution.checkpointing.num-retained": "1"}
	fa, jobA := e.start(ctx, ca, "failclosed-a", e.root+"/a/checkpoints", "", "", slow)
	e.checkpointedIntoFiles(ctx, fa, jobA, e.root+"/a/checkpoints/"+jobA)
	var sps []string
	for range 2 {
		tr, err := fa.TriggerSavepoint(ctx, jobA, flink.SavepointRequest{TargetDirectory: e.root + "/a/savepoints"})
		if err != nil {
			t.Fatal(err)
		}
		loc, err := fa.AwaitSavepoint(ctx, jobA, tr.TriggerID)
		if err != nil {
			t.Fatal(err)
		}
		sps = append(sps, strings.TrimRight(loc, "/"))
	}
	e.cancel(ctx, fa, jobA)
	stA, err := fa.Checkpoints(ctx, jobA)
	if err != nil || stA.Latest.Completed == nil {
		t.Fatalf("job A: %+v %v", stA.Latest, err)
	}
	latestA := strings.TrimRight(stA.Latest.Completed.ExternalPath, "/")
	_, refsA0 := e.metadataRefs(ctx, latestA)
	// A plan while the cluster's job history still has job A catalogues
	// its savepoints under the logical job; aged below, they predate the
	// job's run and only the catalog can tell whose they are.
	e.plan(ctx, "learn-lineage", core.Scope{Tenants: []string{e.tenant[0]}}, cleanup.Policy{})
	e.age(e.plain+"/a/checkpoints/"+jobA, longAgo, false)
	e.age(strings.TrimPrefix(sps[0], e.peers.HDFS.URI), longAgo, false)

	// Job B (tenant B) restores A's latest checkpoint in CLAIM mode and
	// retains one checkpoint, so its first checkpoint subsumes (deletes)
	// the restored one; a long interval keeps RocksDB from compacting A's
	// files away before the plan.
	fb, jobB := e.start(ctx, cb, "failclosed-b", e.root+"/b/checkpoints", latestA, flink.RestoreClaim, slow)
	e.waitFor(ctx, 2*time.Minute, "job B subsumes the restored "+latestA, func() (bool, string) {
		return !e.exists(latestA + "/_metadata"), "still there"
	})
	_, refsB := e.latestRefs(ctx, fb, jobB)
	t.Logf("restored %s referenced %v", latestA, refsA0)
	var intoA []string
	for _, f := range refsB {
		if strings.HasPrefix(f, e.root+"/a/checkpoints/"+jobA+"/shared/") {
			intoA = append(intoA, f)
		}
	}
	if len(intoA) == 0 {
		t.Fatalf("job B's latest checkpoint references nothing of job A's shared/ (refs %v; A's latest %s referenced %v); the cross-tenant case is not exercised", refsB, latestA, refsA0)
	}
	// Garbage beside them: an unreferenced shared file and an incomplete
	// checkpoint of the retired job.
	garbage := []string{e.root + "/a/checkpoints/" + jobA + "/shared/unreferenced-" + peertest.RandomHex(4), e.root + "/a/checkpoints/" + jobA + "/chk-9999"}
	for _, g := range []string{garbage[0], garbage[1] + "/part"} {
		fs, p, err := e.acts.Storage.Resolve(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		if err := fs.MkdirAll(ctx, p[:strings.LastIndex(p, "/")]); err != nil {
			t.Fatal(err)
		}
		if err := fs.WriteFile(ctx, p, []byte("garbage")); err != nil {
			t.Fatal(err)
		}
	}
	e.age(e.plain+"/a/checkpoints/"+jobA, longAgo, false)

	// Job D (tenant A, cluster A) checkpoints to hdfs://localhost:<port>;
	// its shared files look old enough to be garbage if its references
	// were compared as strings.
	port := e.peers.HDFS.NameNode[strings.LastIndex(e.peers.HDFS.NameNode, ":")+1:]
	fd, jobD := e.start(ctx, ca, "failclosed-d", "hdfs://localhost:"+port+e.plain+"/a/checkpoints", "", "", nil)
	e.checkpointed(ctx, fd, jobD, 2)
	e.checkpointedIntoFiles(ctx, fd, jobD, "hdfs://localhost:"+port+e.plain+"/a/checkpoints/"+jobD)
	e.ageCheckpointed(ctx, fd, jobD, time.Now().Add(-2*time.Hour))

	pol := cleanup.Policy{KeepSavepoints: 1}
	sum, plan := e.plan(ctx, "failclosed-1", core.Scope{Tenants: []string{e.tenant[0]}}, pol)
	dirD, refsD := e.latestRefs(ctx, fd, jobD)
	t.Logf("plan: %d items, %d kept, notes %v, spellings %+v", len(plan.Delete), len(plan.Keep), sum.Notes, plan.Spellings)
	planned := map[string]cleanup.Item{}
	for _, it := range plan.Delete {
		planned[it.Path] = it
	}
	isPlanned := func(p string) (cleanup.Item, bool) {
		for q, it := range planned {
			if q == p || strings.HasPrefix(p, q+"/") {
				return it, true
			}
		}
		return cleanup.Item{}, false
	}
	// Hole 1: B's references into A survive.
	for _, f := range intoA {
		if it, ok := isPlanned(f); ok {
			t.Errorf("%s planned as %s (%s) though live job %s of tenant B references it", f, it.Rule, it.Path, jobB)
		}
	}
	// Hole 2: every file of D's latest checkpoint is kept, as referenced.
	canonD := 0
	for _, f := range refsD {
		c := strings.Replace(f, "hdfs://localhost:"+port, e.peers.HDFS.URI, 1)
		if c != f {
			canonD++
		}
		if it, ok := isPlanned(c); ok {
			t.Errorf("%s (of live job %s's latest checkpoint %s) planned as %s", c, jobD, dirD, it.Rule)
		}
	}
	if canonD == 0 {
		t.Fatalf("job D's latest checkpoint %s names no file as hdfs://localhost:%s; the spelling case is not exercised", dirD, port)
	}
	for _, g := range garbage {
		if _, ok := isPlanned(g); !ok {
			t.Errorf("garbage %s not planned", g)
		}
	}
	// Hole 3 setup: the old savepoint is planned for retention.
	if it, ok := planned[sps[0]]; !ok || it.Rule != cleanup.RuleSavepointRetention {
		t.Fatalf("savepoint %s: planned %+v; want %s", sps[0], it, cleanup.RuleSavepointRetention)
	}
	if t.Failed() {
		t.FailNow()
	}

	// While the plan waits for approval, job C restores the planned
	// savepoint.
	fc, jobC := e.start(ctx, ca, "failclosed-c", e.root+"/restore", sps[0], flink.RestoreNoClaim, nil)
	e.checkpointed(ctx, fc, jobC, 1)

	var ex governance.ExecuteCleanupResult
	if err := e.activity(app.NewFamilies(e.acts).Governance.ExecuteCleanup, governance.ExecuteCleanupInput{RunID: "failclosed-1", PlanPath: sum.PlanPath, PlanSHA256: sum.PlanSHA256}, &ex); err != nil {
		t.Fatalf("execute: %v", err)
	}
	t.Logf("executed: %d items, outcomes %+v", ex.Items, ex.Outcomes)
	refused := map[string]string{}
	for _, r := range ex.Refused {
		refused[r.Path] = r.Detail
	}
	if d, ok := refused[sps[0]]; !ok || !strings.Contains(d, jobC) {
		t.Errorf("savepoint %s restored by job %s after planning: refused %q (ok %v); want refused naming the job", sps[0], jobC, d, ok)
	}
	for _, p := range append([]string{sps[0]}, intoA...) {
		if !e.exists(p) {
			t.Errorf("%s is gone after the cleanup", p)
		}
	}
	for _, g := range garbage {
		if e.exists(g) {
			t.Errorf("garbage %s is still there after the cleanup", g)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// The live jobs restore from their latest checkpoints, and so does
	// the savepoint C was started from.
	for _, j := range []struct {
		fc *flink.Client
		c  sandbox.FlinkCluster
		id string
	}{{fb, cb, jobB}, {fc, ca, jobC}, {fd, ca, jobD}} {
		e.cancel(ctx, j.fc, j.id)
		st, err := j.fc.Checkpoints(ctx, j.id)
		if err != nil || st.Latest.Completed == nil {
			t.Fatalf("job %s: %+v %v", j.id, st.Latest, err)
		}
		e.restores(ctx, j.c, strings.TrimRight(st.Latest.Completed.ExternalPath, "/"))
	}
	e.restores(ctx, ca, sps[0])
}
