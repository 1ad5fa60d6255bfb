package cleanup

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
)

// propertyTree is one generated scene: two tenants' checkpoint and
// savepoint roots (only the first is scanned), jobs live and retired,
// cross-job references as CLAIM and LEGACY restores leave them, live jobs
// whose latest checkpoints lie outside the scan, pending checkpoints,
// job ids that share their prefix (application mode with HA gives every
// job ffffffff…), pin markers written into old savepoints, FlinkStateSnapshot
// resources of both tenants, and every path written in one of several
// spellings of one file system.
type propertyTree struct {
	r    *rand.Rand
	now  time.Time
	in   Input
	meta map[string][]string // every _metadata (scanned or live) -> canonical files it names
	// unscanned are retained _metadata outside the scan: needed only when
	// a live job restored from one.
	unscanned map[string][]string
	// ownerOf is the job that truly took each savepoint (canonical path);
	// retired are the scanned jobs absent from the inventory, with their
	// latest completed checkpoint and its time.
	ownerOf map[string]string
	retired map[string]layout.Checkpoint
}

var propertySpellings = []string{nn, "hdfs://localhost:8020", "hdfs://nn", "hdfs://", "HDFS://NN:8020"}

func (g *propertyTree) spell(canonical string) string {
	s := propertySpellings[g.r.IntN(len(propertySpellings))]
	p := strings.TrimPrefix(canonical, nn)
	if g.r.IntN(4) == 0 {
		p = strings.Replace(p, "/", "//", 1)
	}
	return s + p
}

func (g *propertyTree) age() time.Time {
	switch g.r.IntN(4) {
	case 0:
		return g.now.Add(-time.Duration(g.r.IntN(120)) * time.Minute)
	case 1:
		return g.now.Add(-time.Duration(g.r.IntN(48)) * time.Hour)
	default:
		return g.now.Add(-time.Duration(g.r.IntN(60*24)) * time.Hour)
	}
}

func newPropertyTree(seed uint64) *propertyTree {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := &propertyTree{r: r, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.IntN(1e6)) * time.Minute), meta: map[string][]string{},
		unscanned: map[string][]string{}, ownerOf: map[string]string{}, retired: map[string]layout.Checkpoint{}}
	// Half the scenes are an application-mode fleet: one job id prefix.
	collide := r.IntN(2) == 0
	scanned := nn + "/t1"
	g.in = Input{Now: g.now, Policy: Policy{Grace: time.Duration(1+r.IntN(3)) * time.Hour, KeepSavepoints: 1 + r.IntN(2), SavepointMaxAge: time.Duration(1+r.IntN(10)) * 24 * time.Hour},
		Spellings: Spellings{Base: nn, Aliases: propertySpellings[1:]},
		Listing: Listing{Metadata: map[string]MetadataResult{},
			Roots: []layout.Root{{Path: scanned + "/checkpoints", Kind: layout.CheckpointRoot}, {Path: scanned + "/savepoints", Kind: layout.SavepointRoot}}},
		Live: Live{Clusters: []LiveCluster{{ClusterID: "c1"}, {ClusterID: "c2"}}, Metadata: map[string]MetadataResult{}}}
	type job struct {
		id, dir string
		shared  []string
		chks    []string
		live    bool
	}
	var jobs []*job
	var allShared, allSnapshots []string
	for i := range 2 + r.IntN(6) {
		tenant := "t1"
		if r.IntN(3) == 0 {
			tenant = "t2"
		}
		j := &job{id: fmt.Sprintf("%06x%026x", i+1, r.Uint64()&0xffffffffffff), live: r.IntN(2) == 0}
		if collide {
			j.id = fmt.Sprintf("ffffffff%08x%016x", i+1, 0)
		}
		j.dir = nn + "/" + tenant + "/checkpoints/" + j.id
		for k := range 1 + r.IntN(6) {
			j.shared = append(j.shared, fmt.Sprintf("%s/shared/f%d", j.dir, k))
		}
		allShared = append(allShared, j.shared...)
		jobs = append(jobs, j)
	}
	pick := func(list []string) []string {
		var out []string
		for _, f := range list {
			if g.r.IntN(3) == 0 {
				out = append(out, f)
			}
		}
		return out
	}
	addMeta := func(m map[string]MetadataResult, dir string, files []string) {
		spelled := make([]string, len(files))
		for i, f := range files {
			spelled[i] = g.spell(f)
		}
		key := dir + "/_metadata"
		m[g.spell(key)] = MetadataResult{Refs: &References{Metadata: g.spell(key), Dir: g.spell(dir), Files: spelled}}
		g.meta[key] = append([]string{key}, files...)
	}
	for _, j := range jobs {
		scannedJob := strings.HasPrefix(j.dir, scanned+"/")
		jc := layout.JobCheckpoints{Root: scanned + "/checkpoints", Path: j.dir, JobID: j.id, HasShared: true, Total: layout.Usage{Newest: g.age(), Files: 10}}
		for n := range 1 + r.IntN(4) {
			c := layout.Checkpoint{ID: int64(n + 1), Path: fmt.Sprintf("%s/chk-%d", j.dir, n+1), Completed: r.IntN(4) != 0, Usage: layout.Usage{Newest: g.age(), Files: 2}}
			if c.Completed {
				c.Written = c.Usage.Newest.Add(-time.Duration(r.IntN(60)) * time.Second)
				// Own files, and sometimes another job's (a CLAIM or
				// LEGACY restore).
				refs := pick(j.shared)
				if r.IntN(3) == 0 {
					refs = append(refs, pick(allShared)...)
				}
				if scannedJob {
					addMeta(g.in.Listing.Metadata, c.Path, refs)
				} else {
					g.unscanned[c.Path+"/_metadata"] = append([]string{c.Path + "/_metadata"}, refs...)
				}
				j.chks = append(j.chks, c.Path)
				allSnapshots = append(allSnapshots, c.Path)
			}
			jc.Checkpoints = append(jc.Checkpoints, c)
		}
		if !scannedJob {
			continue
		}
		if !j.live {
			for _, c := range jc.Checkpoints {
				if c.Completed && c.ID > g.retired[j.id].ID {
					g.retired[j.id] = c
				}
			}
		}
		g.in.Listing.Report.Jobs = append(g.in.Listing.Report.Jobs, jc)
		for _, f := range j.shared {
			g.in.Listing.StateFiles = append(g.in.Listing.StateFiles, StateFile{Path: f, JobDir: j.dir, Kind: KindSharedFile, Size: 1, ModTime: g.age()})
		}
	}
	for i := range r.IntN(7) {
		j := jobs[r.IntN(len(jobs))]
		sp := fmt.Sprintf("%s/savepoints/savepoint-%s-%012x", scanned, j.id[:6], i)
		written := g.age()
		s := layout.Savepoint{Root: scanned + "/savepoints", Path: sp, JobIDPrefix: j.id[:6], Completed: true, Written: written,
			Usage: layout.Usage{Newest: written, Files: 2}}
		if r.IntN(4) == 0 {
			// A pin marker written now: the dir's newest time moves, the
			// savepoint's own does not.
			s.Usage.Newest = g.now.Add(-time.Minute)
			s.Usage.Files++
			g.in.Listing.PinMarkers = append(g.in.Listing.PinMarkers, g.spell(sp+"/"+PinMarkerName))
		}
		g.in.Listing.Report.Savepoints = append(g.in.Listing.Report.Savepoints, s)
		addMeta(g.in.Listing.Metadata, sp, []string{sp + "/state"})
		allSnapshots = append(allSnapshots, sp)
		g.ownerOf[sp] = j.id
		if r.IntN(3) == 0 {
			// A FlinkStateSnapshot names it, in its own tenant's namespace
			// or another's.
			tenant := []string{"t1", "t2", ""}[r.IntN(3)]
			g.in.Live.Records = append(g.in.Live.Records, LiveRecord{Path: g.spell(sp), By: "FlinkStateSnapshot " + tenant + "/s", Tenant: tenant,
				Snapshot: &SnapshotRef{Ref: inventory.ObjectRef{Kind: inventory.KindFlinkStateSnapshot, Namespace: tenant, Name: fmt.Sprintf("s%d", i)},
					SnapshotResource: inventory.SnapshotResource{UID: fmt.Sprintf("uid-%d", i), ResourceVersion: "1", State: inventory.SnapshotCompleted,
						Savepoint: true, Path: sp}}})
		}
	}
	for _, j := range jobs {
		if !j.live {
			continue
		}
		lj := LiveJob{JobID: j.id}
		if len(allSnapshots) > 0 && r.IntN(2) == 0 {
			lj.RestorePath = g.spell(allSnapshots[r.IntN(len(allSnapshots))])
		}
		// Its latest checkpoint, as Flink reports it: one of its own, or a
		// new one in a dir the plan does not scan.
		latest := nn + "/elsewhere/" + j.id + "/chk-99"
		if len(j.chks) > 0 && r.IntN(2) == 0 {
			latest = j.chks[len(j.chks)-1]
		}
		lj.LatestCheckpoint = g.spell(latest)
		if _, ok := g.meta[latest+"/_metadata"]; !ok {
			addMeta(g.in.Live.Metadata, latest, append(pick(j.shared), pick(allShared)...))
		} else {
			g.in.Live.Metadata[g.spell(latest+"/_metadata")] = MetadataResult{Refs: &References{Metadata: latest + "/_metadata", Dir: latest,
				Files: g.meta[latest+"/_metadata"][1:]}}
		}
		for _, snap := range []string{strings.TrimSuffix(lj.RestorePath, "/")} {
			if snap == "" {
				continue
			}
			c, _ := newCanon(g.in.Spellings, nil)
			canonical, _ := c.path(snap)
			refs, ok := g.meta[canonical+"/_metadata"]
			if !ok {
				refs = g.unscanned[canonical+"/_metadata"]
				g.meta[canonical+"/_metadata"] = refs // read as a live source
			}
			g.in.Live.Metadata[lj.RestorePath+"/_metadata"] = MetadataResult{Refs: &References{Metadata: snap + "/_metadata", Dir: snap, Files: refs[1:]}}
		}
		if r.IntN(2) == 0 {
			lj.OldestPending = g.age()
		}
		c := &g.in.Live.Clusters[r.IntN(2)]
		c.Jobs = append(c.Jobs, lj)
	}
	// Some savepoints of proven lineage or job id, some not; some job ids of
	// proven logical job: all must be safe. The logical job of a job here
	// is the job itself.
	g.in.Lineage, g.in.SavepointJobIDs, g.in.JobLineage = map[string]string{}, map[string]string{}, map[string]string{}
	for _, sp := range g.in.Listing.Report.Savepoints {
		if r.IntN(4) > 0 {
			g.in.Lineage[g.spell(sp.Path)] = "t/c/" + g.ownerOf[sp.Path]
		}
		if r.IntN(2) == 0 {
			g.in.SavepointJobIDs[g.spell(sp.Path)] = g.ownerOf[sp.Path]
		}
	}
	for _, j := range jobs {
		if r.IntN(2) == 0 {
			g.in.JobLineage[j.id] = "t/c/" + j.id
		}
	}
	g.in.Tenants = []inventory.Tenant{{Name: "t1", Root: nn + "/t1"}, {Name: "t2", Root: nn + "/t2"}}
	g.in.Policy.OperatorSnapshots = OperatorSnapshotsDelete
	return g
}

// TestPlanNeverDeletesWhatARetainedOrLiveMetadataNeeds generates scenes and
// checks the planner's promise: no file that a live job's restore point or
// latest checkpoint names, and none that a retained _metadata names, is
// ever planned, however the paths are spelled.
func TestPlanNeverDeletesWhatARetainedOrLiveMetadataNeeds(t *testing.T) {
	planned := 0
	for seed := range uint64(400) {
		g := newPropertyTree(seed)
		plan, err := BuildPlan(g.in)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		planned += len(plan.Delete)
		covered := func(p string) (Item, bool) {
			for _, it := range plan.Delete {
				if under(p, it.Path) {
					return it, true
				}
			}
			return Item{}, false
		}
		needed := map[string]string{}
		for _, c := range g.in.Live.Clusters {
			for _, j := range c.Jobs {
				for _, v := range []string{j.RestorePath, j.LatestCheckpoint} {
					if v == "" {
						continue
					}
					cn, _ := newCanon(g.in.Spellings, nil)
					dir, _ := cn.path(v)
					for _, f := range g.meta[dir+"/_metadata"] {
						needed[f] = "live job " + j.JobID
					}
				}
			}
		}
		for m, files := range g.meta {
			if _, gone := covered(m); gone {
				continue // not retained: deleted with its dir
			}
			for _, f := range files {
				needed[f] = m
			}
		}
		for f, by := range needed {
			if it, ok := covered(f); ok {
				t.Fatalf("seed %d: %s, needed by %s, is planned as %s (%s)", seed, f, by, it.Rule, it.Path)
			}
		}
		g.checkRestorePoints(t, seed, plan, covered)
		for _, it := range plan.Delete {
			for _, s := range it.Snapshots {
				if it.Tenant == "" || s.Ref.Namespace != it.Tenant {
					t.Fatalf("seed %d: %s of tenant %q is deleted with savepoint %s of tenant %q", seed, s, s.Ref.Namespace, it.Path, it.Tenant)
				}
			}
		}
	}
	if planned == 0 {
		t.Fatal("no scene planned anything; the property is vacuous")
	}
	t.Logf("%d items planned over 400 scenes", planned)
}

// checkRestorePoints checks that no job loses its newest restore point: a
// retired job's latest checkpoint is planned only if a savepoint that job
// truly took, newer by its own time, stays; no pinned savepoint and no
// job's newest savepoint of known lineage is planned.
func (g *propertyTree) checkRestorePoints(t *testing.T, seed uint64, plan Plan, covered func(string) (Item, bool)) {
	t.Helper()
	pinned := map[string]bool{}
	cn, _ := newCanon(g.in.Spellings, nil)
	for _, m := range g.in.Listing.PinMarkers {
		p, _ := cn.path(m)
		pinned[strings.TrimSuffix(p, "/"+PinMarkerName)] = true
	}
	newest := map[string]layout.Savepoint{} // job -> its newest savepoint of known lineage
	for _, sp := range g.in.Listing.Report.Savepoints {
		_, gone := covered(sp.Path)
		if gone && pinned[sp.Path] {
			t.Fatalf("seed %d: pinned savepoint %s is planned", seed, sp.Path)
		}
		if _, known := g.in.Lineage[sp.Path]; !known {
			for k := range g.in.Lineage {
				if p, _ := cn.path(k); p == sp.Path {
					known = true
				}
			}
			if !known {
				continue
			}
		}
		if n, ok := newest[g.ownerOf[sp.Path]]; !ok || sp.Written.After(n.Written) {
			newest[g.ownerOf[sp.Path]] = sp
		}
	}
	for job, sp := range newest {
		if it, gone := covered(sp.Path); gone {
			t.Fatalf("seed %d: %s, the newest savepoint of job %s, is planned as %s", seed, sp.Path, job, it.Rule)
		}
	}
	for job, c := range g.retired {
		if _, gone := covered(c.Path); !gone {
			continue
		}
		kept := false
		for _, sp := range g.in.Listing.Report.Savepoints {
			if _, spGone := covered(sp.Path); g.ownerOf[sp.Path] == job && sp.Written.After(c.Written) && !spGone {
				kept = true
			}
		}
		if !kept {
			t.Fatalf("seed %d: %s, the latest checkpoint of retired job %s, is planned with no newer savepoint of that job kept", seed, c.Path, job)
		}
	}
}
