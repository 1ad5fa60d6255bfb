package cleanup

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// liveMeta records what a live job's restore point or latest checkpoint
// references, as the activity reads it wherever it lies.
func (f *fixture) liveMeta(dir string, refs ...string) {
	if f.live.Metadata == nil {
		f.live.Metadata = map[string]MetadataResult{}
	}
	f.live.Metadata[dir+"/_metadata"] = MetadataResult{Refs: &References{Metadata: dir + "/_metadata", Dir: dir, Files: refs}}
}

func (f *fixture) build(sp Spellings) (Plan, error) {
	if len(f.live.Clusters) == 0 {
		f.live.Clusters = []LiveCluster{{ClusterID: "c1"}}
	}
	return BuildPlan(Input{Now: now, Listing: f.l, Live: f.live, Policy: f.pol, Spellings: sp, Lineage: byPrefix(f.l),
		SavepointJobIDs: f.savepointJobIDs, JobLineage: f.jobLineage, Tenants: []inventory.Tenant{{Name: "team-t", Root: "/t"}},
		ReadOnlyKubeClusters: f.readOnly})
}

func planned(p Plan) map[string]Rule {
	out := map[string]Rule{}
	for _, it := range p.Delete {
		out[it.Path] = it.Rule
	}
	return out
}

func keptFor(p Plan, path string) (Kept, bool) {
	for _, k := range p.Keep {
		if k.Path == path {
			return k, true
		}
	}
	return Kept{}, false
}

// A job in another tenant, restored in CLAIM mode from a retired job here,
// references its shared/ files from its latest checkpoint only (Flink has
// subsumed the restored chk-N). Those files survive.
func TestPlanKeepsWhatALiveJobsLatestCheckpointReferences(t *testing.T) {
	f := newFixture()
	f.job(jobA, old)
	f.chk(jobA, 3, true, old, jobDir(jobA)+"/shared/only-in-a")
	used := f.state(jobA, "shared", "used-by-b", 10, old)
	unused := f.state(jobA, "shared", "unused", 10, old)
	otherTenant := nn + "/other/checkpoints/" + jobB + "/chk-40"
	f.liveJob(LiveJob{JobID: jobB, LatestCheckpoint: otherTenant})
	f.liveMeta(otherTenant, used, otherTenant+"/exclusive")
	p, err := f.build(Spellings{})
	if err != nil {
		t.Fatal(err)
	}
	del := planned(p)
	if _, ok := del[used]; ok {
		t.Fatalf("%s planned (%s) though live job %s's latest checkpoint references it", used, del[used], jobB)
	}
	if _, ok := del[jobDir(jobA)]; ok {
		t.Fatalf("the retired job dir is planned whole though a file in it is referenced")
	}
	if k, ok := keptFor(p, used); !ok || k.Reason != KeepReferenced || !strings.Contains(k.By, otherTenant) {
		t.Fatalf("%s kept as %+v; want referenced by %s", used, k, otherTenant)
	}
	if del[unused] != RuleRetiredJob {
		t.Fatalf("%s: %q; the unreferenced file of the retired job is still garbage", unused, del[unused])
	}
}

func TestPlanFailsOnALiveJobItCannotSee(t *testing.T) {
	cases := map[string]func(f *fixture){
		"latest checkpoint unparseable": func(f *fixture) {
			d := nn + "/other/" + jobB + "/chk-4"
			f.liveJob(LiveJob{JobID: jobB, LatestCheckpoint: d})
			f.live.Metadata = map[string]MetadataResult{d + "/_metadata": {Error: "unsupported version 99"}}
		},
		"latest checkpoint not read": func(f *fixture) {
			f.liveJob(LiveJob{JobID: jobB, LatestCheckpoint: nn + "/other/" + jobB + "/chk-4"})
		},
		"restore point not read": func(f *fixture) {
			f.liveJob(LiveJob{JobID: jobB, RestorePath: nn + "/other/savepoint-bbbbbb-0123456789ab"})
		},
	}
	for name, build := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture()
			f.job(jobA, old)
			f.state(jobA, "shared", "s", 1, old)
			build(f)
			_, err := f.build(Spellings{})
			if !errors.Is(err, ErrSourceUnknown) || !strings.Contains(err.Error(), jobB) {
				t.Fatalf("err %v; want ErrSourceUnknown naming job %s", err, jobB)
			}
		})
	}
}

// One file, several spellings: references in any spelling known to name
// the scanned file system keep the file; an unknown spelling of a path
// under a scanned root refuses the plan; a file system proven distinct is
// left alone.
func TestPlanOneSpellingPerFile(t *testing.T) {
	spellings := map[string]string{
		"hostname":       "hdfs://localhost:8020",
		"default port":   "hdfs://nn",
		"nameservice":    "hdfs://ns1",
		"default fs":     "hdfs://",
		"upper case":     "HDFS://NN:8020",
		"double slashes": "hdfs://nn:8020/",
	}
	for name, prefix := range spellings {
		t.Run(name, func(t *testing.T) {
			f := newFixture()
			f.liveJob(LiveJob{JobID: jobA})
			f.job(jobA, recent)
			file := f.state(jobA, "shared", "s1", 10, old)
			spelled := prefix + "/" + strings.TrimPrefix(file, nn+"/")
			if name == "double slashes" {
				spelled = strings.Replace(spelled, "/shared/", "//shared/./", 1)
			}
			f.chk(jobA, 7, true, recent, spelled)
			aliases := []string{"hdfs://localhost:8020", "hdfs://nn", "hdfs://ns1", "hdfs://"}
			p, err := f.build(Spellings{Base: nn, Aliases: aliases})
			if err != nil {
				t.Fatal(err)
			}
			if r, ok := planned(p)[file]; ok {
				t.Fatalf("%s planned (%s) though referenced as %s", file, r, spelled)
			}
			// Unknown spelling: the plan is refused and says what to set.
			_, err = f.build(Spellings{Base: nn})
			if name != "upper case" && name != "double slashes" {
				if !errors.Is(err, ErrSourceUnknown) || !strings.Contains(err.Error(), "storage.authorityAliases") {
					t.Fatalf("err %v; want ErrSourceUnknown naming storage.authorityAliases", err)
				}
			}
		})
	}
	t.Run("distinct file system", func(t *testing.T) {
		f := newFixture()
		f.liveJob(LiveJob{JobID: jobA})
		f.job(jobA, recent)
		file := f.state(jobA, "shared", "s1", 10, old)
		f.chk(jobA, 7, true, recent, "hdfs://other-cluster:8020/t/checkpoints/"+jobA+"/shared/s1")
		p, err := f.build(Spellings{Base: nn, Distinct: []string{"hdfs://other-cluster:8020"}})
		if err != nil {
			t.Fatal(err)
		}
		if planned(p)[file] != RuleUnreferencedState {
			t.Fatalf("%s not planned; a same-named path on another file system does not keep it", file)
		}
	})
}

func TestPlanKeepsUploadsOfPendingCheckpoints(t *testing.T) {
	f := newFixture()
	f.pol.Grace = 30 * time.Minute
	pendingSince := now.Add(-3 * time.Hour)
	f.liveJob(LiveJob{JobID: jobA, InFlightCheckpoint: 12, OldestPending: pendingSince})
	f.job(jobA, recent)
	f.chk(jobA, 11, true, now.Add(-time.Hour))           // completed after the pending one started
	inc := f.chk(jobA, 10, false, now.Add(-2*time.Hour)) // concurrent, older id, still pending
	upload := f.state(jobA, "shared", "for-pending", 10, pendingSince.Add(time.Minute))
	before := f.state(jobA, "shared", "before-pending", 10, pendingSince.Add(-time.Hour))
	p, err := f.build(Spellings{})
	if err != nil {
		t.Fatal(err)
	}
	del := planned(p)
	for _, keep := range []string{upload, inc} {
		if k, ok := keptFor(p, keep); !ok || k.Reason != KeepPendingUpload {
			t.Errorf("%s: kept %+v, planned %q; want kept as %s", keep, k, del[keep], KeepPendingUpload)
		}
	}
	if del[before] != RuleUnreferencedState {
		t.Errorf("%s (older than every pending checkpoint) not planned: %q", before, del[before])
	}
}

func TestPlanRefusesGraceBelowACheckpointTimeout(t *testing.T) {
	f := newFixture()
	f.pol.Grace, f.pol.MaxCheckpointTimeout = 10*time.Minute, 2*time.Hour
	f.liveJob(LiveJob{JobID: jobA, CheckpointTimeout: time.Hour})
	_, err := f.build(Spellings{})
	if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "grace") || !strings.Contains(err.Error(), jobA) {
		t.Fatalf("err %v; want invalid input naming grace and job %s", err, jobA)
	}
	// A live job's timeout above the longest the policy says the fleet
	// allows: the policy is wrong about jobs outside the inventory too.
	f.pol.Grace, f.pol.MaxCheckpointTimeout = 2*time.Hour, 30*time.Minute
	_, err = f.build(Spellings{})
	if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "maxCheckpointTimeout") || !strings.Contains(err.Error(), jobA) {
		t.Fatalf("err %v; want invalid input naming maxCheckpointTimeout and job %s", err, jobA)
	}
}

// TestPlanKeepsWhatAWriterOutsideTheInventoryMayBeUploading: a job dir
// absent from the inventory, written within the longest checkpoint
// timeout the fleet allows, keeps its unreferenced state files and
// incomplete checkpoints, though they are older than the grace period: a
// job outside the inventory with a long timeout may still be uploading
// them. Written before that, they go.
func TestPlanKeepsWhatAWriterOutsideTheInventoryMayBeUploading(t *testing.T) {
	f := newFixture()
	f.pol.Grace, f.pol.MaxCheckpointTimeout = 10*time.Minute, 2*time.Hour
	written := now.Add(-time.Hour) // past the grace, within the timeout
	f.job(jobA, written)
	done := f.chk(jobA, 1, true, now.Add(-3*time.Hour))
	upload := f.state(jobA, "shared", "upload-for-chk-2", 10, now.Add(-90*time.Minute))
	inFlight := f.chk(jobA, 2, false, now.Add(-90*time.Minute))
	p, err := f.build(Spellings{})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{upload, inFlight} {
		if k, ok := keptFor(p, path); !ok || k.Reason != KeepPossiblyLive || !strings.Contains(k.By, "2h0m0s") {
			t.Errorf("%s kept %+v (planned %v); want %s", path, k, planned(p), KeepPossiblyLive)
		}
	}
	if k, ok := keptFor(p, done); !ok || k.Reason != KeepWithinTTL {
		t.Errorf("%s kept %+v; want %s", done, k, KeepWithinTTL)
	}

	f = newFixture()
	f.pol.Grace, f.pol.MaxCheckpointTimeout = 10*time.Minute, 2*time.Hour
	f.job(jobA, now.Add(-3*time.Hour))
	upload = f.state(jobA, "shared", "upload-for-chk-2", 10, now.Add(-3*time.Hour))
	inFlight = f.chk(jobA, 2, false, now.Add(-3*time.Hour))
	if p, err = f.build(Spellings{}); err != nil {
		t.Fatal(err)
	}
	for path, rule := range map[string]Rule{upload: RuleUnreferencedState, inFlight: RuleIncompleteCheckpoint} {
		if planned(p)[path] != rule {
			t.Errorf("%s, written past the timeout, planned %q; want %s", path, planned(p)[path], rule)
		}
	}

	// A job its inventory cluster lists as ended after the dir's last
	// write (a window stopped it a minute ago) is no writer: its old
	// orphans go at once. Written after the listed end (the same id
	// resubmitted elsewhere), or ended at an unknown time, it may be one.
	// An end is evidence only for the dir the listing cluster writes: a
	// fixed job id listed as ended by a cluster writing another root (the
	// same cluster-id elsewhere), or by one whose checkpoint dir is not
	// known, proves nothing of this dir.
	for name, tc := range map[string]struct {
		ended   []EndedJob
		roots   []string
		planned bool
	}{
		"ended after its last write":             {[]EndedJob{{ID: jobA, At: now.Add(-time.Minute)}}, []string{ckRoot}, true},
		"ended, its cluster's root spelled /":    {[]EndedJob{{ID: jobA, At: now.Add(-time.Minute)}}, []string{ckRoot + "/"}, true},
		"written after its end":                  {[]EndedJob{{ID: jobA, At: now.Add(-2 * time.Hour)}}, []string{ckRoot}, false},
		"an end of unknown time":                 {[]EndedJob{{ID: jobA}}, []string{ckRoot}, false},
		"not listed as ended":                    {nil, []string{ckRoot}, false},
		"ended on a cluster writing other roots": {[]EndedJob{{ID: jobA, At: now.Add(-time.Minute)}}, []string{"hdfs://nn:8020/other/checkpoints"}, false},
		"ended on a cluster of unknown root":     {[]EndedJob{{ID: jobA, At: now.Add(-time.Minute)}}, nil, false},
		"ended, its history naming this dir":     {[]EndedJob{{ID: jobA, At: now.Add(-time.Minute), Dirs: []string{jobDir(jobA)}}}, []string{"hdfs://nn:8020/other/checkpoints"}, true},
		"ended, its history naming another dir":  {[]EndedJob{{ID: jobA, At: now.Add(-time.Minute), Dirs: []string{"hdfs://nn:8020/other/checkpoints/" + jobA}}}, nil, false},
	} {
		f = newFixture()
		f.pol.Grace, f.pol.MaxCheckpointTimeout = 10*time.Minute, 2*time.Hour
		f.job(jobA, now.Add(-2*time.Minute))
		f.chk(jobA, 3, true, now.Add(-2*time.Minute))
		orphan := f.state(jobA, "shared", "orphan", 10, now.Add(-45*24*time.Hour))
		f.live.Clusters = []LiveCluster{{ClusterID: "c1", Ended: tc.ended, CheckpointDirs: tc.roots}}
		if p, err = f.build(Spellings{}); err != nil {
			t.Fatal(err)
		}
		if got := planned(p)[orphan] == RuleUnreferencedState; got != tc.planned {
			k, _ := keptFor(p, orphan)
			t.Errorf("%s: %s planned %v (kept %+v); want planned %v", name, orphan, got, k, tc.planned)
		}
	}
}

// TestPlanKeepsEverySnapshotWhileAWriterOutsideTheInventoryRestoredFromTheUnknown:
// a job dir absent from the inventory, written within the longest
// checkpoint timeout, that holds no completed checkpoint yet belongs to a
// job that started from a snapshot nothing names: it may be any of the
// plan's checkpoints or savepoints (restored in CLAIM mode it now owns
// them). Until its first checkpoint names its restore point, no snapshot
// is planned; what is no snapshot (an HA dir of a retired cluster, a
// checkpoint that never completed) still is. A job its cluster lists as
// ended writes nothing: it holds nothing back. Once that dir is older than the timeout, the snapshots
// go by their own rules again.
func TestPlanKeepsEverySnapshotWhileAWriterOutsideTheInventoryRestoredFromTheUnknown(t *testing.T) {
	build := func(started time.Time, roots []string, ended ...EndedJob) (p Plan, snapshots []string, ha string) {
		f := newFixture()
		f.pol.Grace, f.pol.MaxCheckpointTimeout = 10*time.Minute, 2*time.Hour
		f.job(jobA, started) // shared/ and taskowned/ made, no chk-N yet
		f.job(jobB, old)
		snapshots = append(snapshots, f.chk(jobB, 4, true, old))
		f.chk(jobB, 5, true, old)
		for i, r := range []string{"000000000001", "000000000002", "000000000003", "000000000004"} {
			snapshots = append(snapshots, f.savepoint("cccccc", r, true, old.Add(time.Duration(i)*time.Hour)))
		}
		f.job(jobC, old)
		f.chk(jobC, 9, false, old)
		ha = f.ha("retired-cluster", old)
		p, err := BuildPlan(Input{Now: now, Listing: f.l, Live: Live{Clusters: []LiveCluster{{ClusterID: "c1", Ended: ended, CheckpointDirs: roots}}}, Policy: f.pol,
			Lineage: byPrefix(f.l), RetiredClusters: []string{"retired-cluster"}})
		if err != nil {
			t.Fatal(err)
		}
		return p, snapshots[:2], ha // the oldest savepoint is past keep-K
	}

	own := []string{ckRoot}
	p, snapshots, ha := build(now.Add(-time.Hour), own)
	for _, path := range snapshots {
		if k, ok := keptFor(p, path); !ok || k.Reason != KeepUnknownRestore || !strings.Contains(k.By, jobA) {
			t.Errorf("%s kept %+v (planned %v); want %s naming job %s", path, k, planned(p), KeepUnknownRestore, jobA)
		}
	}
	// What no snapshot is: an HA dir of a retired cluster, a retired job
	// dir with only an incomplete checkpoint.
	for path, rule := range map[string]Rule{ha: RuleRetiredHACluster, jobDir(jobC): RuleRetiredJob} {
		if planned(p)[path] != rule {
			t.Errorf("%s planned %q; want %s (%v)", path, planned(p)[path], rule, planned(p))
		}
	}

	for what, p := range map[string]Plan{
		"once the writer is past the timeout": planOf(build(now.Add(-3*time.Hour), own)),
		// A job a window stopped with a savepoint: Flink removed its
		// checkpoints as it finished, and its cluster lists it as ended.
		"when its cluster lists the writer as ended": planOf(build(now.Add(-time.Hour), own, EndedJob{ID: jobA, At: now.Add(-50 * time.Minute)})),
	} {
		for _, path := range snapshots {
			if _, ok := planned(p)[path]; !ok {
				k, _ := keptFor(p, path)
				t.Errorf("%s not planned %s: kept %+v", path, what, k)
			}
		}
	}
	// An end is evidence only for what was written before it: a dir
	// written an hour after its job id ended is another job's (resubmitted
	// under the same id, elsewhere), and an end of unknown time proves
	// nothing.
	for what, p := range map[string]Plan{
		"written after the listed end": planOf(build(now.Add(-time.Hour), own, EndedJob{ID: jobA, At: now.Add(-2 * time.Hour)})),
		"an end of unknown time":       planOf(build(now.Add(-time.Hour), own, EndedJob{ID: jobA})),
		// The fixed job id of an application cluster, listed as ended by
		// the cluster in the inventory, while a cluster outside it with
		// the same cluster-id writes into another root.
		"ended on a cluster writing another root": planOf(build(now.Add(-time.Hour), []string{"hdfs://nn:8020/other/checkpoints"}, EndedJob{ID: jobA, At: now.Add(-50 * time.Minute)})),
	} {
		for _, path := range snapshots {
			if k, ok := keptFor(p, path); !ok || k.Reason != KeepUnknownRestore {
				t.Errorf("%s, writer %s: kept %+v (planned %v); want %s", path, what, k, planned(p), KeepUnknownRestore)
			}
		}
	}
}

func planOf(p Plan, _ []string, _ string) Plan { return p }

func TestPlanHADirsByConfiguredOwner(t *testing.T) {
	f := newFixture()
	custom := f.ha("custom-id", old)
	gone := f.ha("gone", old)
	f.live.Clusters = []LiveCluster{{ClusterID: "cluster-a", HADir: haRoot + "/custom-id"}}
	p, err := f.build(Spellings{})
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := keptFor(p, custom); !ok || k.Reason != KeepLiveCluster {
		t.Fatalf("%s kept %+v; want kept as the HA dir of cluster-a", custom, k)
	}
	if planned(p)[gone] != RuleRetiredHACluster {
		t.Fatalf("%s not planned", gone)
	}
	f.live.Clusters = append(f.live.Clusters, LiveCluster{ClusterID: "cluster-b", HAUnknown: true})
	if p, err = f.build(Spellings{}); err != nil {
		t.Fatal(err)
	}
	if k, ok := keptFor(p, gone); !ok || k.Reason != KeepHAOwnerUnknown || !strings.Contains(k.By, "cluster-b") {
		t.Fatalf("%s kept %+v; want %s naming cluster-b", gone, k, KeepHAOwnerUnknown)
	}
	// Declared retired by the inventory: its TTL alone decides.
	p, err = BuildPlan(Input{Now: now, Listing: f.l, Live: f.live, Policy: f.pol, RetiredClusters: []string{"gone"}, Lineage: byPrefix(f.l)})
	if err != nil {
		t.Fatal(err)
	}
	if planned(p)[gone] != RuleRetiredHACluster || len(p.RetiredClusters) != 1 {
		t.Fatalf("%s of a cluster the inventory retired not planned: %+v", gone, p.Delete)
	}
	if k, ok := keptFor(p, custom); !ok || k.Reason != KeepLiveCluster {
		t.Fatalf("%s kept %+v; the live cluster's own HA dir stays", custom, k)
	}
}

// A savepoint planned for retention is restored from while the plan waits
// for approval: the executor refuses it, and the files it references.
func TestExecutorRefusesWhatALiveJobStartedFromAfterPlanning(t *testing.T) {
	const retired = "0123456789abcdef0123456789abcdef"
	const restored = "fedcba9876543210fedcba9876543210"
	e := newLocalEnv(t)
	sp := e.file("savepoints/savepoint-012345-aaaaaaaaaaaa/state", 10, e.past)
	spDir := strings.TrimSuffix(sp, "/state")
	shared := e.file("checkpoints/"+retired+"/shared/s1", 10, e.past)
	plan := e.plan(Live{}, Policy{})
	want := map[string]bool{spDir: false, e.uri("checkpoints/" + retired): false}
	for _, it := range plan.Delete {
		if _, ok := want[it.Path]; ok {
			want[it.Path] = true
		}
	}
	for p, ok := range want {
		if !ok {
			t.Fatalf("%s not planned; plan %+v", p, plan.Delete)
		}
	}
	liveNow := func(context.Context) (Live, error) {
		return Live{
			Clusters: []LiveCluster{{ClusterID: "c1", Jobs: []LiveJob{{JobID: restored, RestorePath: spDir}}}},
			Metadata: map[string]MetadataResult{spDir + "/_metadata": {Refs: &References{Metadata: spDir + "/_metadata", Dir: spDir,
				Files: []string{sp, shared}}}},
		}, nil
	}
	res, err := e.executor("r1", func(c *ExecutorConfig) { c.Live = liveNow }).Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts[OutcomeRefused] != 2 {
		t.Fatalf("result %+v; want both the restore point and the dir it references refused", res)
	}
	for _, r := range res.Refused {
		if !strings.Contains(r.Detail, restored) && !strings.Contains(r.Detail, "live job") {
			t.Errorf("refused %s: %q does not name the live job", r.Path, r.Detail)
		}
	}
	if !e.exists(sp) || !e.exists(shared) {
		t.Fatal("a file the live job needs was removed")
	}
	// A live job whose state cannot be read stops everything.
	e2 := newLocalEnv(t)
	e2.garbage()
	plan2 := e2.plan(Live{}, Policy{})
	unknown := func(context.Context) (Live, error) {
		return Live{Clusters: []LiveCluster{{ClusterID: "c1", Jobs: []LiveJob{{JobID: restored, LatestCheckpoint: "file:///elsewhere/chk-3"}}}},
			Metadata: map[string]MetadataResult{"file:///elsewhere/chk-3/_metadata": {Error: "truncated"}}}, nil
	}
	res, err = e2.executor("r1", func(c *ExecutorConfig) { c.Live = unknown }).Run(context.Background(), plan2)
	if err != nil || res.Counts[OutcomeRefused] != len(plan2.Delete) {
		t.Fatalf("result %+v err %v; want every item refused", res, err)
	}
}

// A savepoint the operator would resume from, and a checkpoint a
// FlinkStateSnapshot names, are kept with what they reference, as is a
// savepoint a run of flinkmaint in flight holds; a record whose _metadata
// cannot be read refuses the plan.
func TestPlanKeepsSnapshotsOnRecord(t *testing.T) {
	f := newFixture()
	f.pol.KeepSavepoints = 1
	old1 := f.savepoint("aaaaaa", "000000000001", true, old)
	f.savepoint("aaaaaa", "000000000002", true, old.Add(time.Hour))
	f.job(jobB, old)
	chk := f.chk(jobB, 4, true, old, jobDir(jobB)+"/shared/s1")
	f.chk(jobB, 5, true, old.Add(time.Minute))
	shared := f.state(jobB, "shared", "s1", 10, old)
	f.live.Records = []LiveRecord{{Path: old1, By: "FlinkDeployment ns/orders status.jobStatus.upgradeSavepointPath"},
		{Path: chk, By: "FlinkStateSnapshot ns/snap-1 status.path"}}
	p, err := f.build(Spellings{})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{old1, chk} {
		if k, ok := keptFor(p, path); !ok || k.Reason != KeepOperatorRecord {
			t.Errorf("%s kept %+v; want %s", path, k, KeepOperatorRecord)
		}
	}
	if r, ok := planned(p)[shared]; ok {
		t.Errorf("%s, referenced by a checkpoint on record, planned as %s", shared, r)
	}
	// Held by a window in flight instead: kept for that run.
	f.live.Records = []LiveRecord{{Path: old1, By: "run window-w1 (window savepoint of job a)", Run: "window-w1"}}
	p, err = f.build(Spellings{})
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := keptFor(p, old1); !ok || k.Reason != KeepHeldByRun || !strings.Contains(k.By, "window-w1") {
		t.Errorf("%s kept %+v; want %s by window-w1", old1, k, KeepHeldByRun)
	}
	// Seen FAILED restoring from it by a job its cluster no longer lists:
	// kept for that job's retry, said as such.
	f.live.Records = []LiveRecord{{Path: old1, By: "failed job 0123 on c1, last seen FAILED restoring from it at 2026-03-01T10:00:00Z", FailedJob: "0123"}}
	p, err = f.build(Spellings{})
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := keptFor(p, old1); !ok || k.Reason != KeepFailedRestore || !strings.Contains(k.By, "failed job 0123") {
		t.Errorf("%s kept %+v; want %s by failed job 0123", old1, k, KeepFailedRestore)
	}
	f.live.Records = f.live.Records[:0]
	f.live.Records = append(f.live.Records, LiveRecord{Path: old1, By: "FlinkDeployment ns/orders status.jobStatus.upgradeSavepointPath"})
	f.live.Metadata = map[string]MetadataResult{old1 + "/_metadata": {Error: "truncated"}}
	delete(f.l.Metadata, old1+"/_metadata")
	if _, err := f.build(Spellings{}); !errors.Is(err, ErrSourceUnknown) || !strings.Contains(err.Error(), "upgradeSavepointPath") {
		t.Fatalf("err %v; want ErrSourceUnknown naming the record", err)
	}
}

// A retained checkpoint under a reference root (cleanup.referenceRoots,
// scanned read-only) keeps the files of a retired job it references.
func TestPlanKeepsWhatAReferenceRootNames(t *testing.T) {
	f := newFixture()
	f.job(jobA, old)
	used := f.state(jobA, "shared", "used-elsewhere", 10, old)
	ref := nn + "/legacy/checkpoints/" + jobB + "/chk-9"
	in := Input{Now: now, Listing: f.l, Live: Live{Clusters: []LiveCluster{{ClusterID: "c1"}}}, Policy: f.pol,
		References: map[string]MetadataResult{ref + "/_metadata": {Refs: &References{Metadata: ref + "/_metadata", Dir: ref, Files: []string{used}}}}}
	p, err := BuildPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := planned(p)[used]; ok {
		t.Fatalf("%s planned as %s though a reference root's checkpoint names it", used, r)
	}
	if k, ok := keptFor(p, used); !ok || k.Reason != KeepReferenced || !strings.Contains(k.By, ref) {
		t.Fatalf("%s kept as %+v; want referenced by %s", used, k, ref)
	}
	in.References = nil
	if p, err = BuildPlan(in); err != nil || planned(p)[used] == "" && planned(p)[jobDir(jobA)] == "" {
		t.Fatalf("without the reference root %s is not planned (err %v): the test shows nothing", used, err)
	}
}

func snapshotRecord(name, path, state string, savepoint bool) LiveRecord {
	return LiveRecord{Path: path, By: "FlinkStateSnapshot ns/" + name + " status.path", Tenant: "team-t", Snapshot: &SnapshotRef{
		Ref: inventory.ObjectRef{APIVersion: "flink.apache.org/v1beta1", Kind: inventory.KindFlinkStateSnapshot, Namespace: "ns", Name: name},
		SnapshotResource: inventory.SnapshotResource{UID: "uid-" + name, ResourceVersion: "7", State: state, Savepoint: savepoint,
			DisposeOnDelete: true, Path: path}}}
}

// A savepoint that only a completed FlinkStateSnapshot names goes with the
// resource when the retention would delete it; with operatorSnapshots:
// keep, or when anything else keeps it, both stay.
func TestPlanDeletesASnapshotResourceWithItsSavepoint(t *testing.T) {
	f := newFixture()
	f.pol.KeepSavepoints = 1
	sp1 := f.savepoint("aaaaaa", "000000000001", true, old)
	sp2 := f.savepoint("aaaaaa", "000000000002", true, old.Add(time.Minute))
	sp3 := f.savepoint("aaaaaa", "000000000003", true, old.Add(2*time.Minute))
	sp4 := f.savepoint("aaaaaa", "000000000004", true, old.Add(3*time.Minute))
	newest := f.savepoint("aaaaaa", "000000000005", true, old.Add(time.Hour))
	f.live.Records = []LiveRecord{
		snapshotRecord("done", sp1, inventory.SnapshotCompleted, true),
		// Also the operator's restore point: kept.
		snapshotRecord("upgrade", sp2, inventory.SnapshotCompleted, true),
		{Path: sp2, By: "FlinkDeployment ns/orders status.jobStatus.upgradeSavepointPath"},
		// Not completed, or a checkpoint: the record keeps it.
		snapshotRecord("failed", sp3, "FAILED", true),
		snapshotRecord("as-checkpoint", sp4, inventory.SnapshotCompleted, false),
		// Among the newest K: kept, the resource too.
		snapshotRecord("newest", newest, inventory.SnapshotCompleted, true),
	}
	p, err := f.build(Spellings{})
	if err != nil {
		t.Fatal(err)
	}
	var item *Item
	for i := range p.Delete {
		if p.Delete[i].Path == sp1 {
			item = &p.Delete[i]
		}
	}
	if item == nil || len(item.Snapshots) != 1 || item.Snapshots[0].Ref.Name != "done" || item.Rule != RuleSavepointRetention {
		t.Fatalf("savepoint named only by a completed FlinkStateSnapshot planned as %+v; want %s with resource done", item, RuleSavepointRetention)
	}
	for path, want := range map[string]Reason{sp2: KeepOperatorRecord, sp3: KeepOperatorRecord, sp4: KeepOperatorRecord, newest: KeepNewestSavepoints} {
		if k, ok := keptFor(p, path); !ok || k.Reason != want {
			t.Errorf("%s kept %+v; want %s", path, k, want)
		}
	}
	if k, _ := keptFor(p, sp2); !strings.Contains(k.By, "upgradeSavepointPath") {
		t.Errorf("%s kept by %q; want the FlinkDeployment's upgradeSavepointPath", sp2, k.By)
	}
	for _, it := range p.Delete {
		if it.Path != sp1 && len(it.Snapshots) > 0 {
			t.Errorf("item %s carries resources %v", it.Path, it.Snapshots)
		}
	}

	// The same resource in another tenant's namespace, or in one no single
	// tenant holds: a run over this tenant's savepoints never deletes it,
	// so it keeps what it names.
	for _, other := range []string{"team-u", ""} {
		f.live.Records[0].Tenant = other
		p, err = f.build(Spellings{})
		if err != nil {
			t.Fatal(err)
		}
		if k, ok := keptFor(p, sp1); !ok || k.Reason != KeepOperatorRecord {
			t.Errorf("resource of tenant %q: %s kept %+v; want %s", other, sp1, k, KeepOperatorRecord)
		}
	}
	f.live.Records[0].Tenant = "team-t"

	f.pol.OperatorSnapshots = OperatorSnapshotsKeep
	p, err = f.build(Spellings{})
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := keptFor(p, sp1); !ok || k.Reason != KeepOperatorRecord || !strings.Contains(k.By, "ns/done") {
		t.Errorf("with operatorSnapshots keep, %s kept %+v; want %s by the resource", sp1, k, KeepOperatorRecord)
	}
	f.pol.OperatorSnapshots = "forget"
	if _, err := f.build(Spellings{}); !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "operatorSnapshots") {
		t.Errorf("policy operatorSnapshots forget: err %v; want invalid input naming the field", err)
	}
}

// A job that failed while restoring, whose exception history could not
// be read, may be retried from any snapshot: while its cluster lists it,
// no snapshot is planned; what is no snapshot still is. An operator record whose snapshot cannot be resolved is the same.
func TestPlanKeepsEverySnapshotWhileARestoreSourceIsUnknown(t *testing.T) {
	for name, tc := range map[string]struct {
		live   func(*fixture)
		naming string
	}{
		"a failed job's restore": {func(f *fixture) {
			f.liveJob(LiveJob{JobID: jobA, RestoreUnknown: "its exception history cannot be read"})
		}, jobA},
		"an operator record": {func(f *fixture) {
			f.live.Clusters = []LiveCluster{{ClusterID: "c1"}}
			f.live.UnknownSources = []string{"FlinkDeployment ns/orders: status.jobStatus.upgradeSnapshotReference names FlinkStateSnapshot ns/gone, which does not exist"}
		}, "ns/gone"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture()
			f.job(jobB, old)
			f.chk(jobB, 5, true, old)
			older := f.chk(jobB, 4, true, old.Add(-time.Hour))
			incomplete := f.chk(jobB, 6, false, old)
			sp := f.savepoint("cccccc", "000000000001", true, old)
			f.savepoint("cccccc", "000000000002", true, old.Add(time.Hour))
			f.pol.KeepSavepoints, f.pol.SavepointMaxAge = 1, time.Hour
			tc.live(f)
			p, err := f.build(Spellings{})
			if err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{older, sp} {
				if k, ok := keptFor(p, path); !ok || k.Reason != KeepUnknownRestore || !strings.Contains(k.By, tc.naming) {
					t.Errorf("%s kept %+v (planned %v); want %s naming %s", path, k, planned(p), KeepUnknownRestore, tc.naming)
				}
			}
			if planned(p)[incomplete] != RuleIncompleteCheckpoint {
				t.Errorf("%s planned %q; want %s", incomplete, planned(p)[incomplete], RuleIncompleteCheckpoint)
			}
		})
	}
}
