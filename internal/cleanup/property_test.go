package cleanup

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/layout"
)

// propertyTree is one generated scene: two tenants' checkpoint and
// savepoint roots (only the first is scanned), jobs live and retired,
// cross-job references as CLAIM and LEGACY restores leave them, live jobs
// whose latest checkpoints lie outside the scan, pending checkpoints, and
// every path written in one of several spellings of one file system.
type propertyTree struct {
	r    *rand.Rand
	now  time.Time
	in   Input
	meta map[string][]string // every _metadata (scanned or live) -> canonical files it names
	// unscanned are retained _metadata outside the scan: needed only when
	// a live job restored from one.
	unscanned map[string][]string
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
	g := &propertyTree{r: r, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.IntN(1e6)) * time.Minute), meta: map[string][]string{}, unscanned: map[string][]string{}}
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
		g.in.Listing.Report.Jobs = append(g.in.Listing.Report.Jobs, jc)
		for _, f := range j.shared {
			g.in.Listing.StateFiles = append(g.in.Listing.StateFiles, StateFile{Path: f, JobDir: j.dir, Kind: KindSharedFile, Size: 1, ModTime: g.age()})
		}
	}
	for i := range r.IntN(5) {
		j := jobs[r.IntN(len(jobs))]
		sp := fmt.Sprintf("%s/savepoints/savepoint-%s-%012x", scanned, j.id[:6], i)
		g.in.Listing.Report.Savepoints = append(g.in.Listing.Report.Savepoints, layout.Savepoint{Root: scanned + "/savepoints", Path: sp, JobIDPrefix: j.id[:6],
			Completed: true, Usage: layout.Usage{Newest: g.age(), Files: 2}})
		addMeta(g.in.Listing.Metadata, sp, []string{sp + "/state"})
		allSnapshots = append(allSnapshots, sp)
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
	// Some savepoints of known lineage, some not: both must be safe.
	g.in.Lineage = map[string]string{}
	for _, sp := range g.in.Listing.Report.Savepoints {
		if r.IntN(4) > 0 {
			g.in.Lineage[g.spell(sp.Path)] = "t/c/" + sp.JobIDPrefix
		}
	}
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
	}
	if planned == 0 {
		t.Fatal("no scene planned anything; the property is vacuous")
	}
	t.Logf("%d items planned over 400 scenes", planned)
}
