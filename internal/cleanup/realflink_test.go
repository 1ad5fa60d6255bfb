//go:build realpeers

package cleanup_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gohdfs "github.com/colinmarc/hdfs/v2"

	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

const realTestBase = "/flinkmaint-test/cleanup"

// realEnv is one test's private tree on the sandbox HDFS and its Flink jobs.
type realEnv struct {
	t     *testing.T
	peers *sandbox.Peers
	fs    *storage.HDFS
	raw   *gohdfs.Client
	fl    *flink.Client
	jarID string
	nnURI string
	base  string // plain path
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newRealEnv(t *testing.T, ctx context.Context, line string) *realEnv {
	t.Helper()
	peers := sandbox.RequirePeersLine(t, line)
	e := &realEnv{t: t, peers: peers, nnURI: peers.HDFS.URI, base: realTestBase + "/" + randHex(6)}
	if _, err := peers.HadoopShell(ctx, "-mkdir", "-p", e.base+"/tenant/checkpoints", e.base+"/tenant/savepoints",
		e.base+"/tenant/ha", e.base+"/live/checkpoints", e.base+"/trash", e.base+"/restore/checkpoints"); err != nil {
		t.Fatalf("create test tree: %v", err)
	}
	guard, err := storage.NewGuard(realTestBase)
	if err != nil {
		t.Fatal(err)
	}
	e.fs, err = storage.NewHDFS(ctx, storage.HDFSOptions{URI: peers.HDFS.URI, User: peers.HDFS.User, HadoopConfDir: t.TempDir(), Guard: guard})
	if err != nil {
		t.Fatalf("HDFS: %v", err)
	}
	e.raw, err = gohdfs.NewClient(gohdfs.ClientOptions{Addresses: []string{peers.HDFS.NameNode}, User: peers.HDFS.User})
	if err != nil {
		t.Fatalf("raw HDFS client: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_ = e.peers.ClearNamespaceQuota(ctx, e.base+"/tenant")
		if os.Getenv("FLINKMAINT_KEEP_TEST_TREE") == "" {
			if err := e.fs.RemoveAll(ctx, e.base); err != nil {
				t.Errorf("remove test tree %s: %v", e.base, err)
			}
		}
		e.fs.Close()
		e.raw.Close()
	})
	e.fl, err = flink.New(flink.Options{BaseURL: peers.Clusters[0].RESTURL, RequestTimeout: 30 * time.Second, PollInterval: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e.jarID, err = e.fl.UploadJar(ctx, peers.SampleJob.Jar)
	if err != nil {
		t.Fatalf("upload sample job: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = e.fl.DeleteJar(ctx, e.jarID)
	})
	return e
}

func (e *realEnv) uri(p string) string { return e.nnURI + p }

// startJob runs the sample job and cancels it when the test ends.
func (e *realEnv) startJob(ctx context.Context, name, ckptDir, from string, mode flink.RestoreMode) (string, error) {
	return e.startJobID(ctx, "", name, ckptDir, from, mode)
}

func (e *realEnv) startJobID(ctx context.Context, jobID, name, ckptDir, from string, mode flink.RestoreMode) (string, error) {
	req := flink.RunJarRequest{
		JobID:         jobID,
		EntryClass:    e.peers.SampleJob.EntryClass,
		ProgramArgs:   []string{"--checkpoint-dir", ckptDir, "--keys", "2000", "--value-bytes", "256", "--rate", "400", "--job-name", name},
		SavepointPath: from,
		RestoreMode:   mode,
	}
	res, err := e.fl.RunJar(ctx, e.jarID, req)
	if res.JobID != "" {
		e.t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = e.fl.CancelJob(ctx, res.JobID)
		})
	}
	return res.JobID, err
}

// waitCheckpoints waits until the job has completed n checkpoints since it
// started (and, when restored, until latest.restored names from).
func (e *realEnv) waitCheckpoints(ctx context.Context, jobID string, n int64, from string) flink.CheckpointingStatistics {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		st, err := e.fl.JobState(ctx, jobID)
		if err == nil && st.IsTerminal() {
			ex, _ := e.fl.JobExceptions(ctx, jobID, 3)
			e.t.Fatalf("job %s is %s before %d checkpoints: %s", jobID, st, n, firstException(ex))
		}
		stats, err := e.fl.Checkpoints(ctx, jobID)
		if err == nil && st == flink.JobRunning && stats.Counts.Completed >= n {
			if from == "" {
				return stats
			}
			r := stats.Latest.Restored
			if r == nil || strings.TrimSuffix(r.ExternalPath, "/") != strings.TrimSuffix(from, "/") {
				e.t.Fatalf("job %s: latest.restored %+v; want %s", jobID, r, from)
			}
			if stats.Latest.Completed == nil || stats.Latest.Completed.ID <= r.ID {
				e.t.Fatalf("job %s: no checkpoint after the restore of %d: %+v", jobID, r.ID, stats.Latest.Completed)
			}
			return stats
		}
		select {
		case <-ctx.Done():
			e.t.Fatalf("job %s: fewer than %d completed checkpoints before the deadline (state %s, err %v)", jobID, n, st, err)
		case <-time.After(time.Second):
		}
	}
}

func firstException(ex flink.JobExceptions) string {
	if len(ex.History.Entries) == 0 {
		return "no exception recorded"
	}
	s := ex.History.Entries[0].Stacktrace
	if len(s) > 600 {
		s = s[:600]
	}
	return s
}

func (e *realEnv) cancelAndWait(ctx context.Context, jobID string) {
	e.t.Helper()
	if err := e.fl.CancelJob(ctx, jobID); err != nil {
		e.t.Fatalf("cancel %s: %v", jobID, err)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if st, err := e.fl.JobState(ctx, jobID); err == nil && st == flink.JobCanceled {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	e.t.Fatalf("job %s not CANCELED within a minute", jobID)
}

func (e *realEnv) savepoint(ctx context.Context, jobID, dir string) string {
	e.t.Helper()
	tr, err := e.fl.TriggerSavepoint(ctx, jobID, flink.SavepointRequest{TargetDirectory: dir})
	if err != nil {
		e.t.Fatalf("trigger savepoint: %v", err)
	}
	actx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	loc, err := e.fl.AwaitSavepoint(actx, jobID, tr.TriggerID)
	if err != nil {
		e.t.Fatalf("await savepoint: %v", err)
	}
	return strings.TrimSuffix(loc, "/")
}

// retainedCheckpoints is execution.checkpointing.num-retained of the
// sandbox clusters (sandbox/java/run.sh).
const retainedCheckpoints = 3

// waitRetainedOnly waits until the checkpoint dir of a cancelled job holds
// no chk-N but those Flink retains: the retainedCheckpoints latest
// completed checkpoints of stats (settledStats; savepoints are not among
// them).
func (e *realEnv) waitRetainedOnly(ctx context.Context, jobDir string, stats flink.CheckpointingStatistics) {
	e.t.Helper()
	var completed []int64
	for _, c := range stats.History {
		if c.Status == "COMPLETED" && !c.IsSavepoint {
			completed = append(completed, c.ID)
		}
	}
	sort.Slice(completed, func(i, j int) bool { return completed[i] > completed[j] })
	retained := map[string]bool{}
	for _, id := range completed[:min(retainedCheckpoints, len(completed))] {
		retained[fmt.Sprintf("chk-%d", id)] = true
	}
	dir := strings.TrimPrefix(jobDir, e.nnURI)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		entries, err := e.raw.ReadDir(dir)
		var extra []string
		for _, fi := range entries {
			if strings.HasPrefix(fi.Name(), "chk-") && !retained[fi.Name()] {
				extra = append(extra, fi.Name())
			}
		}
		if err == nil && len(extra) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			e.t.Fatalf("%s still holds %v (%v) besides the checkpoints Flink retains %v", dir, extra, err, retained)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// settledStats reads the checkpoint statistics of a cancelled job once
// they agree with its dir: the REST API serves them from a cache refreshed
// every few seconds, so right after the cancel they may miss a checkpoint
// that completed during it (its _metadata on storage, the statistics still
// saying in progress).
func (e *realEnv) settledStats(ctx context.Context, jobID, jobDir string) flink.CheckpointingStatistics {
	e.t.Helper()
	dir := strings.TrimPrefix(jobDir, e.nnURI)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		newest := int64(-1)
		entries, err := e.raw.ReadDir(dir)
		for _, fi := range entries {
			if id := chkNumber(fi.Name()); id > newest && strings.HasPrefix(fi.Name(), "chk-") {
				if _, serr := e.raw.Stat(dir + "/" + fi.Name() + "/" + layout.MetadataFileName); serr == nil {
					newest = id
				}
			}
		}
		stats, serr := e.fl.Checkpoints(ctx, jobID)
		if err == nil && serr == nil && stats.Latest.Completed != nil && stats.Latest.Completed.ID == newest && stats.Counts.InProgress == 0 {
			return stats
		}
		select {
		case <-ctx.Done():
			e.t.Fatalf("job %s: checkpoint statistics %+v (%v) never agreed with its dir (newest completed chk-%d, %v)", jobID, stats.Latest.Completed, serr, newest, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (e *realEnv) age(p string, when time.Time) {
	e.t.Helper()
	p = strings.TrimPrefix(p, e.nnURI)
	var dirs []string
	err := e.raw.Walk(p, func(q string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.IsDir() {
			dirs = append(dirs, q)
			return nil
		}
		return e.raw.Chtimes(q, when, when)
	})
	if err != nil {
		e.t.Fatalf("age %s: %v", p, err)
	}
	for i := len(dirs) - 1; i >= 0; i-- { // children first: creating them touched the parent
		if err := e.raw.Chtimes(dirs[i], when, when); err != nil {
			e.t.Fatalf("age %s: %v", dirs[i], err)
		}
	}
}

func (e *realEnv) write(ctx context.Context, p string, data []byte) {
	e.t.Helper()
	if err := e.fs.MkdirAll(ctx, p[:strings.LastIndex(p, "/")]); err != nil {
		e.t.Fatal(err)
	}
	if err := e.fs.WriteFile(ctx, p, data); err != nil {
		// "replication in progress" on close: the data is acknowledged.
		if fi, serr := e.fs.Stat(ctx, p); serr != nil || fi.Size != int64(len(data)) {
			e.t.Fatal(err)
		}
	}
}

func (e *realEnv) exists(ctx context.Context, p string) bool {
	_, err := e.fs.Stat(ctx, p)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		e.t.Fatalf("stat %s: %v", p, err)
	}
	return err == nil
}

// retainedReferences parses every _metadata under the roots now.
func (e *realEnv) retainedReferences(ctx context.Context, roots []layout.Root) map[string]string {
	e.t.Helper()
	l, err := cleanup.Gather(ctx, e.fs, roots, cleanup.GatherOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	refs := map[string]string{}
	for m, r := range l.Metadata {
		if r.Refs == nil {
			e.t.Fatalf("metadata %s unparseable after cleanup: %s", m, r.Error)
		}
		for _, f := range r.Refs.Files {
			refs[f] = m
		}
	}
	return refs
}

// TestRealSandboxCleanup proves the rules on real Flink and HDFS: cleanup
// removes exactly the garbage, every kept checkpoint and savepoint still
// restores, the quota gets headroom, a job checkpointing during the run
// loses nothing, and the naive age-based deletion breaks a restore. It
// runs on every Flink line of the sandbox (1.20 and 2.3, RocksDB
// incremental).
func TestRealSandboxCleanup(t *testing.T) {
	for _, line := range sandbox.Lines() {
		t.Run("flink-"+line, func(t *testing.T) { testRealSandboxCleanup(t, line) })
	}
}

func testRealSandboxCleanup(t *testing.T, line string) {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	e := newRealEnv(t, ctx, line)
	tenantRoot := e.base + "/tenant"
	ckptRoot := e.uri(tenantRoot + "/checkpoints")
	spRoot := e.uri(tenantRoot + "/savepoints")
	haRoot := e.uri(tenantRoot + "/ha")
	liveRoot := e.uri(e.base + "/live/checkpoints")
	restoreRoot := e.uri(e.base + "/restore/checkpoints")
	trashRoot := e.uri(e.base + "/trash")
	longAgo := time.Now().Add(-30 * 24 * time.Hour)

	// Job A: checkpoints and four savepoints, then cancelled (retired).
	jobA, err := e.startJob(ctx, "cleanup-a", ckptRoot, "", "")
	if err != nil {
		t.Fatalf("start job A: %v", err)
	}
	e.waitCheckpoints(ctx, jobA, 3, "")
	var sps []string
	for range 4 {
		sps = append(sps, e.savepoint(ctx, jobA, spRoot))
	}
	before := e.waitCheckpoints(ctx, jobA, 1, "").Counts.Completed
	e.waitCheckpoints(ctx, jobA, before+2, "")
	e.cancelAndWait(ctx, jobA)
	jobADir := ckptRoot + "/" + jobA
	statsA := e.settledStats(ctx, jobA, jobADir)
	latestA := strings.TrimSuffix(statsA.Latest.Completed.ExternalPath, "/")
	// Flink discards the subsumed and the aborted checkpoints of a
	// cancelled job in the background: age A once they are gone, or a
	// discard racing the aging removes what it walks and touches the dir.
	e.waitRetainedOnly(ctx, jobADir, statsA)

	// Age A, the two oldest savepoints, and add garbage of every kind.
	e.age(jobADir, longAgo)
	e.age(sps[0], longAgo)
	e.age(sps[1], longAgo.Add(time.Hour))
	e.write(ctx, sps[0]+"/"+cleanup.PinMarkerName, nil)
	e.age(sps[0], longAgo)
	garbage := map[string]bool{}
	addGarbage := func(p string, files map[string]int) {
		for name, size := range files {
			e.write(ctx, p+"/"+name, make([]byte, size))
		}
		e.age(p, longAgo)
		garbage[p] = true
	}
	addGarbage(jobADir+"/chk-99999", map[string]int{"9d7c1f6e-aaaa": 100})
	jobC := randHex(16)
	addGarbage(ckptRoot+"/"+jobC, map[string]int{"chk-1/x": 5, "shared/s1": 7, "shared/s2": 0, "taskowned/t": 3})
	spIncomplete := spRoot + "/savepoint-" + jobA[:6] + "-" + randHex(6)
	addGarbage(spIncomplete, map[string]int{"partial-state": 64})
	addGarbage(haRoot+"/cluster-gone", map[string]int{"completedCheckpoint0123456789ab": 20, "submittedJobGraph0123456789ab": 30,
		"blob/job_" + jobC + "/blob_p-0123": 40})
	e.write(ctx, haRoot+"/cluster-live/completedCheckpointba9876543210", []byte("x"))
	e.age(haRoot+"/cluster-live", longAgo)
	garbage[sps[1]] = true

	// A's dir was touched by adding garbage to it; age it again.
	e.age(jobADir, longAgo)

	// Exhaust the tenant's namespace quota.
	sum, err := e.fs.ContentSummary(ctx, tenantRoot)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.peers.SetNamespaceQuota(ctx, tenantRoot, sum.Namespace()); err != nil {
		t.Fatal(err)
	}
	if err := e.fs.Mkdir(ctx, tenantRoot+"/probe"); !errors.Is(err, storage.ErrNamespaceQuotaExceeded) {
		t.Fatalf("mkdir under an exhausted quota: %v; want ErrNamespaceQuotaExceeded", err)
	}

	// Job B: restored from A's latest checkpoint in LEGACY mode, so its
	// first checkpoints reference A's shared files; it stays live
	// throughout and writes outside the quota'd tree. B must be planned
	// right after its first checkpoint, while that checkpoint still
	// references A's files: RocksDB compaction replaces them within a few
	// checkpoints, sooner on a loaded machine, and at once when B opens a
	// checkpoint that A took with a compaction pending. So B's id is fixed
	// up front (its dir holds garbage before it starts), and an attempt
	// whose retained checkpoints hold no reference into A is discarded and
	// B started afresh from the next older of A's retained checkpoints.
	roots := []layout.Root{{Path: ckptRoot, Kind: layout.CheckpointRoot}, {Path: liveRoot, Kind: layout.CheckpointRoot},
		{Path: spRoot, Kind: layout.SavepointRoot}, {Path: haRoot, Kind: layout.HARoot}}
	var (
		jobB     string
		restoreA string // B's restore point: one of A's retained checkpoints
		listing  cleanup.Listing
	)
	var retainedA []string // newest first
	for i := len(statsA.History) - 1; i >= 0; i-- {
		if h := statsA.History[i]; h.Status == "COMPLETED" && !h.IsSavepoint && !h.Discarded {
			if p := strings.TrimSuffix(h.ExternalPath, "/"); e.exists(ctx, p+"/_metadata") {
				retainedA = append(retainedA, p)
			}
		}
	}
	sort.Slice(retainedA, func(i, j int) bool { return chkNumber(retainedA[i]) > chkNumber(retainedA[j]) })
	if len(retainedA) == 0 || retainedA[0] != latestA {
		t.Fatalf("job A's retained checkpoints %v do not start with its latest %s", retainedA, latestA)
	}
	live := func(ctx context.Context) (cleanup.Live, error) {
		lj := cleanup.LiveJob{JobID: jobB, RestorePath: restoreA}
		st, err := e.fl.Checkpoints(ctx, jobB)
		if err != nil {
			return cleanup.Live{}, err
		}
		for _, h := range st.History {
			if h.Status == "IN_PROGRESS" {
				lj.InFlightCheckpoint = h.ID
			}
		}
		return cleanup.Live{Clusters: []cleanup.LiveCluster{{ClusterID: e.peers.Clusters[0].ClusterID, Jobs: []cleanup.LiveJob{lj}}, {ClusterID: "cluster-live"}}}, nil
	}
	attemptsB := len(retainedA)
	for attempt := 1; ; attempt++ {
		restoreA = retainedA[attempt-1]
		jobB = randHex(16)
		jobBDir := liveRoot + "/" + jobB
		garbageB := []string{jobBDir + "/chk-88888", jobBDir + "/shared/zero-" + randHex(4)}
		e.write(ctx, garbageB[0]+"/0e1f-bbbb", make([]byte, 10))
		e.write(ctx, garbageB[1], nil)
		for _, g := range garbageB {
			e.age(g, longAgo)
			garbage[g] = true
		}
		if _, err := e.startJobID(ctx, jobB, "cleanup-b", liveRoot, restoreA, flink.RestoreLegacy); err != nil {
			t.Fatalf("start job B from %s: %v", restoreA, err)
		}
		e.waitCheckpoints(ctx, jobB, 1, restoreA)

		// Plan input. The in-flight checkpoint is read after the listing,
		// so one that started before it is covered.
		listing, err = cleanup.Gather(ctx, e.fs, roots, cleanup.GatherOptions{})
		if err != nil {
			t.Fatalf("gather: %v", err)
		}
		crossRefs := 0
		for m, r := range listing.Metadata {
			if r.Refs == nil {
				t.Fatalf("Flink-written metadata %s unparseable: %s", m, r.Error)
			}
			if strings.HasPrefix(m, jobBDir+"/") {
				for _, f := range r.Refs.Files {
					if strings.HasPrefix(f, jobADir+"/shared/") {
						crossRefs++
					}
				}
			}
		}
		t.Logf("attempt %d, restored from %s: job B's checkpoints hold %d references into job A's shared/", attempt, restoreA, crossRefs)
		if crossRefs > 0 {
			break
		}
		if attempt == attemptsB {
			t.Fatalf("job B (LEGACY restore) referenced none of job A's shared files in %d attempts; the cross-job case is not exercised", attemptsB)
		}
		e.cancelAndWait(ctx, jobB)
		if err := e.fs.RemoveAll(ctx, jobBDir); err != nil {
			t.Fatal(err)
		}
		for _, g := range garbageB {
			delete(garbage, g)
		}
	}
	inv, err := live(ctx)
	if err != nil {
		t.Fatal(err)
	}
	policy := cleanup.Policy{Grace: 3 * time.Second}
	// One logical job per job id prefix: each job here runs once.
	lineage := map[string]string{}
	for _, sp := range listing.Report.Savepoints {
		lineage[sp.Path] = "team-test/c/" + sp.JobIDPrefix
	}
	plan, err := cleanup.BuildPlan(cleanup.Input{Now: time.Now(), Listing: listing, Live: inv, Policy: policy, Lineage: lineage,
		Tenants: []inventory.Tenant{{Name: "team-test", Root: e.uri(tenantRoot)}}})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	data, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	var decoded cleanup.Plan
	if err := json.Unmarshal(data, &decoded); err != nil {
		t.Fatal(err)
	}
	for _, s := range plan.Summary {
		t.Logf("summary %q: reclaim %+v by rule %+v kept %+v", s.Tenant, s.Reclaim, s.ByRule, s.KeptItems)
	}
	planned := map[string]cleanup.Item{}
	for _, it := range plan.Delete {
		planned[it.Path] = it
	}
	for g := range garbage {
		if _, ok := planned[g]; !ok {
			var why []string
			for _, k := range plan.Keep {
				if strings.HasPrefix(g+"/", k.Path+"/") || strings.HasPrefix(k.Path+"/", g+"/") {
					why = append(why, fmt.Sprintf("%s kept: %s (%s)", k.Path, k.Reason, k.By))
				}
			}
			for p, it := range planned {
				if strings.HasPrefix(g+"/", p+"/") || strings.HasPrefix(p+"/", g+"/") {
					why = append(why, fmt.Sprintf("%s planned by %s", p, it.Rule))
				}
			}
			t.Errorf("garbage %s not planned for deletion: %v", g, why)
		}
	}
	for _, must := range []string{restoreA, sps[0], sps[2], sps[3], haRoot + "/cluster-live"} {
		for p := range planned {
			if strings.HasPrefix(p+"/", must+"/") || strings.HasPrefix(must+"/", p+"/") {
				t.Errorf("%s planned for deletion (%s) but must be kept", p, planned[p].Rule)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// Execute while job B keeps checkpointing; small batches, so the
	// executor re-reads new _metadata several times during the run.
	guard, err := storage.NewGuard(e.uri(tenantRoot), liveRoot, trashRoot)
	if err != nil {
		t.Fatal(err)
	}
	var progressMu sync.Mutex
	var progress []cleanup.Progress
	ex, err := cleanup.NewExecutor(cleanup.ExecutorConfig{FS: e.fs, Guard: guard, TrashRoot: trashRoot, RunID: "run-1",
		BatchSize: 3, Concurrency: 2, Live: live, Progress: func(p cleanup.Progress) {
			progressMu.Lock()
			progress = append(progress, p)
			progressMu.Unlock()
			time.Sleep(time.Second) // stretch the run over several of B's checkpoints
		}})
	if err != nil {
		t.Fatal(err)
	}
	startB, _ := e.fl.Checkpoints(ctx, jobB)
	res, err := ex.Run(ctx, decoded)
	if err != nil {
		t.Fatalf("run: %v (result %+v)", err, res)
	}
	endB, _ := e.fl.Checkpoints(ctx, jobB)
	t.Logf("run: %+v counts %v; job B completed %d checkpoints during it; %d progress calls", res.Reclaimed, res.Counts, endB.Counts.Completed-startB.Counts.Completed, len(progress))
	if endB.Counts.Completed <= startB.Counts.Completed {
		t.Errorf("job B completed no checkpoint during the run; concurrency not exercised")
	}
	for _, r := range res.Refused {
		t.Logf("refused %s: %s", r.Path, r.Detail)
	}
	recs, err := cleanup.ReadManifest(ctx, e.fs, trashRoot+"/_audit", "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(plan.Delete) {
		t.Errorf("manifest has %d records for %d items", len(recs), len(plan.Delete))
	}
	for _, r := range recs {
		switch r.Outcome {
		case cleanup.OutcomeTrashed:
			if e.exists(ctx, r.Path) || !e.exists(ctx, r.TrashPath) {
				t.Errorf("trashed %s: source still there or trash copy %s missing", r.Path, r.TrashPath)
			}
		case cleanup.OutcomeRefused, cleanup.OutcomeGone:
			if garbage[r.Path] {
				t.Errorf("garbage %s %s: %s", r.Path, r.Outcome, r.Detail)
			}
		default:
			t.Errorf("item %s ended %s: %s", r.Path, r.Outcome, r.Detail)
		}
	}

	// Nothing any surviving _metadata references was removed, including
	// those of checkpoints B completed during the run. B is stopped first
	// so Flink's own subsuming does not race the check.
	e.cancelAndWait(ctx, jobB)
	refs := e.retainedReferences(ctx, roots)
	for f, by := range refs {
		if !e.exists(ctx, f) {
			t.Errorf("%s (referenced by %s) is missing after cleanup", f, by)
		}
	}
	// Every trashed state file was unreferenced by all retained metadata.
	for _, r := range recs {
		if r.Outcome == cleanup.OutcomeTrashed {
			if by, ok := refs[r.Path]; ok {
				t.Errorf("trashed %s is referenced by %s", r.Path, by)
			}
		}
	}

	// Quota headroom.
	after, err := e.fs.ContentSummary(ctx, tenantRoot)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tenant namespace: before %d (quota %d), after %d", sum.Namespace(), after.NamespaceQuota, after.Namespace())
	if after.Namespace() >= after.NamespaceQuota {
		t.Errorf("no namespace headroom after cleanup: %d of %d", after.Namespace(), after.NamespaceQuota)
	}
	if err := e.fs.Mkdir(ctx, tenantRoot+"/probe"); err != nil {
		t.Errorf("mkdir after cleanup: %v", err)
	}
	if err := e.peers.ClearNamespaceQuota(ctx, tenantRoot); err != nil {
		t.Fatal(err)
	}
	if t.Failed() {
		t.FailNow()
	}

	// Every kept checkpoint and savepoint restores.
	statsB, err := e.fl.Checkpoints(ctx, jobB)
	if err != nil || statsB.Latest.Completed == nil {
		t.Fatalf("job B stats: %+v %v", statsB, err)
	}
	latestB := strings.TrimSuffix(statsB.Latest.Completed.ExternalPath, "/")
	kept := []string{restoreA, sps[0], sps[2], sps[3], latestB}
	for _, k := range plan.Keep {
		if k.Kind == cleanup.KindSavepointDir || (k.Kind == cleanup.KindCheckpointDir && strings.HasPrefix(k.Path, jobADir)) {
			if !containsStr(kept, k.Path) && e.exists(ctx, k.Path+"/_metadata") {
				kept = append(kept, k.Path)
			}
		}
	}
	sort.Strings(kept)
	for i, from := range kept {
		id, err := e.startJob(ctx, fmt.Sprintf("cleanup-restore-%d", i), restoreRoot, from, flink.RestoreNoClaim)
		if err != nil {
			t.Fatalf("restore from kept %s: %v", from, err)
		}
		e.waitCheckpoints(ctx, id, 1, from)
		e.cancelAndWait(ctx, id)
		t.Logf("restored from kept %s", from)
	}

	// The naive rule, "delete state older than a day", on the same tree
	// now that the safe restores are proven; it even spares the chk-N dirs
	// and deletes only old files in shared/. A copy would not do:
	// checkpoints reference shared files by absolute path, so a copied
	// checkpoint still reads the originals.
	naiveCutoff := time.Now().Add(-24 * time.Hour)
	var naive []string
	err = e.fs.Walk(ctx, ckptRoot, func(fi storage.FileInfo) error {
		if !fi.IsDir && fi.ModTime.Before(naiveCutoff) && strings.Contains(fi.Path, "/shared/") {
			naive = append(naive, fi.Path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range naive {
		if err := e.fs.Remove(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("naive pass deleted %d shared/ files older than a day", len(naive))
	id, err := e.startJob(ctx, "cleanup-naive", restoreRoot, restoreA, flink.RestoreNoClaim)
	if err == nil {
		err = e.waitFailure(ctx, id)
	}
	if err == nil {
		t.Fatalf("restore from %s succeeded after the naive deletion; the test shows nothing", restoreA)
	}
	if !missingFile(err.Error()) {
		t.Fatalf("restore after naive deletion failed, but not for a missing file: %v", err)
	}
	t.Logf("naive deletion breaks the restore: %.300s", err.Error())
}

// waitFailure waits until a restored job fails; it returns the failure
// (nil if the job ran and checkpointed instead). The first exception Flink
// records is not always the cause: a restore that downloads files on
// several threads may report another thread's "registry is already closed"
// first. So it goes on looking, through the exceptions of each attempt and
// those that happened at the same time, until one names a missing file,
// the job has failed for good, or two minutes have passed.
func (e *realEnv) waitFailure(ctx context.Context, jobID string) error {
	deadline := time.Now().Add(2 * time.Minute)
	var seen []string
	for time.Now().Before(deadline) {
		st, _ := e.fl.JobState(ctx, jobID)
		ex, _ := e.fl.JobExceptions(ctx, jobID, 20)
		seen = seen[:0]
		for _, en := range ex.History.Entries {
			seen = append(seen, en.Stacktrace)
			for _, c := range en.ConcurrentExceptions {
				seen = append(seen, c.Stacktrace)
			}
		}
		all := strings.Join(seen, "\n")
		switch {
		case missingFile(all) || st == flink.JobFailed && len(seen) > 0:
			return errors.New(all)
		case st == flink.JobFailed:
			return fmt.Errorf("job %s FAILED without a recorded exception", jobID)
		}
		if stats, err := e.fl.Checkpoints(ctx, jobID); err == nil && st == flink.JobRunning && stats.Counts.Completed > 0 && len(seen) == 0 {
			return nil
		}
		time.Sleep(time.Second)
	}
	if len(seen) > 0 {
		return errors.New(strings.Join(seen, "\n"))
	}
	return nil
}

// missingFile says whether a Flink failure names a file that is not there.
func missingFile(text string) bool {
	return strings.Contains(text, "FileNotFound") || strings.Contains(text, "does not exist") || strings.Contains(text, "File not found")
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// chkNumber is N of a .../chk-N path, -1 for anything else.
func chkNumber(p string) int64 {
	n, err := strconv.ParseInt(strings.TrimPrefix(p[strings.LastIndex(p, "/")+1:], "chk-"), 10, 64)
	if err != nil {
		return -1
	}
	return n
}
