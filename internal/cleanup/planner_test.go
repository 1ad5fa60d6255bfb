package cleanup

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
)

const (
	nn     = "hdfs://nn:8020"
	ckRoot = nn + "/t/checkpoints"
	spRoot = nn + "/t/savepoints"
	haRoot = nn + "/t/ha"
	jobA   = "aaaaaa00000000000000000000000001"
	jobB   = "bbbbbb00000000000000000000000002"
	jobC   = "cccccc00000000000000000000000003"
)

var (
	now    = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	old    = now.Add(-30 * 24 * time.Hour)
	recent = now.Add(-time.Minute)
)

// fixture builds a listing by hand.
// byPrefix is the lineage tests assume unless they say otherwise: one
// logical job per job id prefix.
func byPrefix(l Listing) map[string]string {
	m := map[string]string{}
	for _, sp := range l.Report.Savepoints {
		m[sp.Path] = "t/c/" + sp.JobIDPrefix
	}
	return m
}

type fixture struct {
	l       Listing
	live    Live
	pol     Policy
	drilled []string
	// savepointJobIDs and jobLineage are the evidence of whose snapshot is
	// whose beyond the lineage (savepoint dir -> full job id, job id ->
	// logical job); none unless a test gives it.
	savepointJobIDs map[string]string
	jobLineage      map[string]string
	// readOnly are the Kubernetes clusters the worker may not delete in.
	readOnly map[string]bool
}

func newFixture() *fixture {
	return &fixture{l: Listing{
		Roots:    []layout.Root{{Path: ckRoot, Kind: layout.CheckpointRoot}, {Path: spRoot, Kind: layout.SavepointRoot}, {Path: haRoot, Kind: layout.HARoot}},
		Metadata: map[string]MetadataResult{},
	}}
}

func jobDir(id string) string { return ckRoot + "/" + id }

func usage(files int64, t time.Time) layout.Usage {
	return layout.Usage{Files: files, Dirs: 1, Bytes: files * 10, Newest: t}
}

// job adds a job dir; newest is the newest mtime of the whole dir.
func (f *fixture) job(id string, newest time.Time) *layout.JobCheckpoints {
	f.l.Report.Jobs = append(f.l.Report.Jobs, layout.JobCheckpoints{Root: ckRoot, Path: jobDir(id), JobID: id,
		HasShared: true, HasTaskOwn: true, Total: usage(10, newest)})
	return &f.l.Report.Jobs[len(f.l.Report.Jobs)-1]
}

// chk adds chk-N; completed ones get metadata referencing files.
func (f *fixture) chk(jobID string, id int64, completed bool, t time.Time, refs ...string) string {
	for i := range f.l.Report.Jobs {
		j := &f.l.Report.Jobs[i]
		if j.JobID != jobID {
			continue
		}
		p := j.Path + "/chk-" + itoa(id)
		j.Checkpoints = append(j.Checkpoints, layout.Checkpoint{ID: id, Path: p, Completed: completed, Usage: usage(2, t)})
		if completed {
			j.Checkpoints[len(j.Checkpoints)-1].Written = t
			f.meta(p, refs...)
		}
		return p
	}
	panic("no job " + jobID)
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func (f *fixture) meta(dir string, refs ...string) {
	f.l.Metadata[dir+"/_metadata"] = MetadataResult{Refs: &References{Metadata: dir + "/_metadata", Dir: dir, Files: refs}}
}

func (f *fixture) state(jobID, sub, name string, size int64, t time.Time) string {
	kind := KindSharedFile
	if sub == "taskowned" {
		kind = KindTaskOwnedFile
	}
	p := jobDir(jobID) + "/" + sub + "/" + name
	f.l.StateFiles = append(f.l.StateFiles, StateFile{Path: p, JobDir: jobDir(jobID), Kind: kind, Size: size, ModTime: t})
	return p
}

func (f *fixture) savepoint(prefix, random string, completed bool, t time.Time, refs ...string) string {
	p := spRoot + "/savepoint-" + prefix + "-" + random
	f.l.Report.Savepoints = append(f.l.Report.Savepoints, layout.Savepoint{Root: spRoot, Path: p, JobIDPrefix: prefix, Completed: completed, Usage: usage(3, t)})
	if completed {
		f.l.Report.Savepoints[len(f.l.Report.Savepoints)-1].Written = t
		f.meta(p, append([]string{p + "/state"}, refs...)...)
	}
	return p
}

// pin writes a pin marker into savepoint dir sp at t: its dir's newest
// time moves, its own time does not.
func (f *fixture) pin(sp string, t time.Time) {
	f.l.PinMarkers = append(f.l.PinMarkers, sp+"/"+PinMarkerName)
	for i := range f.l.Report.Savepoints {
		if s := &f.l.Report.Savepoints[i]; s.Path == sp {
			s.Usage.Files++
			s.Usage.Newest = t
		}
	}
}

func (f *fixture) ha(cluster string, t time.Time) string {
	p := haRoot + "/" + cluster
	f.l.Report.HAClusters = append(f.l.Report.HAClusters, layout.HACluster{Root: haRoot, Path: p, ClusterID: cluster, Total: usage(4, t)})
	return p
}

func (f *fixture) liveJob(j LiveJob) {
	if len(f.live.Clusters) == 0 {
		f.live.Clusters = []LiveCluster{{ClusterID: "c1"}}
	}
	f.live.Clusters[0].Jobs = append(f.live.Clusters[0].Jobs, j)
}

func (f *fixture) plan(t *testing.T) Plan {
	t.Helper()
	if len(f.live.Clusters) == 0 {
		f.live.Clusters = []LiveCluster{{ClusterID: "c1"}}
	}
	p, err := BuildPlan(Input{Now: now, Listing: f.l, Live: f.live, Policy: f.pol, Lineage: byPrefix(f.l), Drilled: f.drilled,
		SavepointJobIDs: f.savepointJobIDs, JobLineage: f.jobLineage, Tenants: []inventory.Tenant{{Name: "team-t", Root: "/t"}}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type expect struct {
	del  map[string]Rule   // exactly the deleted paths
	keep map[string]Reason // at least these kept paths
}

func TestPlanRules(t *testing.T) {
	cases := map[string]struct {
		build func(f *fixture) expect
	}{
		"incomplete checkpoint past grace deleted, younger kept": {func(f *fixture) expect {
			f.liveJob(LiveJob{JobID: jobA})
			f.job(jobA, recent)
			done := f.chk(jobA, 5, true, recent)
			oldInc := f.chk(jobA, 6, false, old)
			young := f.chk(jobA, 7, false, recent)
			return expect{del: map[string]Rule{oldInc: RuleIncompleteCheckpoint},
				keep: map[string]Reason{done: KeepLiveJob, young: KeepWithinGrace}}
		}},
		"in-flight checkpoint kept however old": {func(f *fixture) expect {
			f.liveJob(LiveJob{JobID: jobA, InFlightCheckpoint: 7})
			f.job(jobA, recent)
			f.chk(jobA, 6, true, recent)
			inflight := f.chk(jobA, 7, false, old)
			return expect{del: map[string]Rule{}, keep: map[string]Reason{inflight: KeepInFlight}}
		}},
		"retired job past TTL without metadata collapses to its dir": {func(f *fixture) expect {
			f.job(jobA, old)
			f.chk(jobA, 1, false, old)
			f.state(jobA, "shared", "s1", 100, old)
			f.state(jobA, "taskowned", "t1", 0, old)
			return expect{del: map[string]Rule{jobDir(jobA): RuleRetiredJob}}
		}},
		"retired job keeps its latest checkpoint and what it references": {func(f *fixture) expect {
			f.job(jobA, old)
			s0 := f.state(jobA, "shared", "s0", 10, old)
			s1 := f.state(jobA, "shared", "s1", 10, old)
			sz := f.state(jobA, "shared", "sz", 0, old)
			c1 := f.chk(jobA, 1, true, old.Add(-time.Hour), s0, s1)
			c2 := f.chk(jobA, 2, true, old, s1)
			return expect{
				del:  map[string]Rule{c1: RuleRetiredJob, s0: RuleRetiredJob, sz: RuleRetiredJob},
				keep: map[string]Reason{c2: KeepLatestRetired, s1: KeepReferenced},
			}
		}},
		"retired job with a newer savepoint of the same logical job goes entirely": {func(f *fixture) expect {
			f.job(jobA, old)
			s1 := f.state(jobA, "shared", "s1", 10, old)
			f.chk(jobA, 2, true, old, s1)
			sp := f.savepoint(jobA[:6], "0123456789ab", true, old.Add(time.Hour))
			f.jobLineage = map[string]string{jobA: "t/c/" + jobA[:6]}
			return expect{del: map[string]Rule{jobDir(jobA): RuleRetiredJob}, keep: map[string]Reason{sp: KeepNewestSavepoints}}
		}},
		"retired job with a newer savepoint of its own job id goes entirely": {func(f *fixture) expect {
			f.job(jobA, old)
			s1 := f.state(jobA, "shared", "s1", 10, old)
			f.chk(jobA, 2, true, old, s1)
			sp := f.savepoint(jobA[:6], "0123456789ab", true, old.Add(time.Hour))
			f.savepointJobIDs = map[string]string{sp: jobA}
			return expect{del: map[string]Rule{jobDir(jobA): RuleRetiredJob}, keep: map[string]Reason{sp: KeepNewestSavepoints}}
		}},
		"a newer savepoint that only shares the job id prefix proves nothing": {func(f *fixture) expect {
			// Application mode with HA: every job id starts ffffffff.
			retired, other := "ffffffff1111111100000000000000000", "ffffffff2222222200000000000000000"
			retired, other = retired[:32], other[:32]
			f.job(retired, old)
			c := f.chk(retired, 2, true, old)
			sp := f.savepoint("ffffff", "0123456789ab", true, old.Add(time.Hour))
			f.savepointJobIDs = map[string]string{sp: other}
			f.jobLineage = map[string]string{other: "t/c/ffffff"}
			return expect{del: map[string]Rule{}, keep: map[string]Reason{c: KeepLatestRetired, sp: KeepNewestSavepoints}}
		}},
		"a pin marker does not make an old savepoint the newest": {func(f *fixture) expect {
			f.pol.KeepSavepoints = 1
			pinnedOld := f.savepoint("aaaaaa", "000000000001", true, old)
			newest := f.savepoint("aaaaaa", "000000000002", true, old.Add(time.Hour))
			f.pin(pinnedOld, recent)
			return expect{del: map[string]Rule{}, keep: map[string]Reason{pinnedOld: KeepPinned, newest: KeepNewestSavepoints}}
		}},
		"pinning an old savepoint leaves a retired job's newer latest checkpoint": {func(f *fixture) expect {
			f.job(jobA, old.Add(time.Hour))
			c := f.chk(jobA, 2, true, old.Add(time.Hour))
			sp := f.savepoint(jobA[:6], "0123456789ab", true, old)
			f.savepointJobIDs = map[string]string{sp: jobA}
			f.pin(sp, recent)
			return expect{del: map[string]Rule{}, keep: map[string]Reason{c: KeepLatestRetired, sp: KeepPinned}}
		}},
		"a savepoint of the same job written before the latest checkpoint keeps it": {func(f *fixture) expect {
			f.job(jobA, old)
			c := f.chk(jobA, 2, true, old.Add(time.Hour))
			sp := f.savepoint(jobA[:6], "0123456789ab", true, old)
			f.savepointJobIDs = map[string]string{sp: jobA}
			return expect{del: map[string]Rule{}, keep: map[string]Reason{c: KeepLatestRetired, sp: KeepNewestSavepoints}}
		}},
		"retired job within TTL kept": {func(f *fixture) expect {
			f.job(jobA, now.Add(-24*time.Hour))
			c1 := f.chk(jobA, 1, true, now.Add(-48*time.Hour))
			c2 := f.chk(jobA, 2, true, now.Add(-24*time.Hour))
			return expect{del: map[string]Rule{}, keep: map[string]Reason{c1: KeepWithinTTL, c2: KeepWithinTTL}}
		}},
		"policy deletes the latest retired checkpoint": {func(f *fixture) expect {
			f.pol.DeleteLatestRetiredCheckpoint = true
			f.job(jobA, old)
			f.chk(jobA, 2, true, old)
			return expect{del: map[string]Rule{jobDir(jobA): RuleRetiredJob}}
		}},
		"CLAIM restore: a live job's checkpoint keeps a retired job's shared file": {func(f *fixture) expect {
			f.pol.DeleteLatestRetiredCheckpoint = true
			f.liveJob(LiveJob{JobID: jobB})
			f.job(jobA, old)
			a1 := f.state(jobA, "shared", "a1", 10, old)
			a2 := f.state(jobA, "shared", "a2", 10, old)
			c1 := f.chk(jobA, 1, true, old, a1, a2)
			f.job(jobB, recent)
			b1 := f.state(jobB, "shared", "b1", 10, old)
			bc := f.chk(jobB, 9, true, recent, a1, b1)
			return expect{
				del:  map[string]Rule{c1: RuleRetiredJob, a2: RuleRetiredJob},
				keep: map[string]Reason{a1: KeepReferenced, b1: KeepReferenced, bc: KeepLiveJob},
			}
		}},
		"a checkpoint dir another retained metadata references into is kept": {func(f *fixture) expect {
			f.pol.DeleteLatestRetiredCheckpoint = true
			f.liveJob(LiveJob{JobID: jobB})
			f.job(jobA, old)
			c1 := f.chk(jobA, 1, true, old)
			f.job(jobB, recent)
			f.chk(jobB, 3, true, recent, c1+"/private-file")
			return expect{del: map[string]Rule{}, keep: map[string]Reason{c1: KeepReferenced}}
		}},
		"fixpoint: a kept savepoint's references veto a checkpoint dir": {func(f *fixture) expect {
			f.pol.DeleteLatestRetiredCheckpoint = true
			f.job(jobA, old)
			c1 := f.chk(jobA, 1, true, old)
			// The savepoint is beyond K and old, but a live job restored from
			// it: kept, so what it references in chk-1 is kept too.
			sp := f.savepoint("dddddd", "0123456789ab", true, old, c1+"/x")
			f.savepoint("dddddd", "0123456789ac", true, recent)
			f.savepoint("dddddd", "0123456789ad", true, recent)
			f.liveJob(LiveJob{JobID: jobC, RestorePath: sp + "/_metadata"})
			return expect{del: map[string]Rule{}, keep: map[string]Reason{sp: KeepRestorePoint, c1: KeepReferenced}}
		}},
		"fixpoint: a retained checkpoint keeps an old savepoint": {func(f *fixture) expect {
			f.liveJob(LiveJob{JobID: jobB})
			sp := f.savepoint("dddddd", "0123456789ab", true, old)
			f.savepoint("dddddd", "0123456789ac", true, recent)
			f.savepoint("dddddd", "0123456789ad", true, recent)
			f.job(jobB, recent)
			f.chk(jobB, 3, true, recent, sp+"/state")
			return expect{del: map[string]Rule{}, keep: map[string]Reason{sp: KeepReferenced}}
		}},
		"savepoint retention": {func(f *fixture) expect {
			s1 := f.savepoint("dddddd", "000000000001", true, old.Add(1*time.Hour))
			s2 := f.savepoint("dddddd", "000000000002", true, old.Add(2*time.Hour))
			s3 := f.savepoint("dddddd", "000000000003", true, old.Add(3*time.Hour))
			s4 := f.savepoint("dddddd", "000000000004", true, old.Add(4*time.Hour))
			s5 := f.savepoint("dddddd", "000000000005", true, old.Add(5*time.Hour))
			young := f.savepoint("eeeeee", "000000000001", true, now.Add(-time.Hour))
			y2 := f.savepoint("eeeeee", "000000000002", true, now.Add(-2*time.Hour))
			y3 := f.savepoint("eeeeee", "000000000003", true, now.Add(-3*time.Hour))
			marker := f.savepoint("ffffff", "000000000001", true, old)
			f.l.PinMarkers = []string{marker + "/" + PinMarkerName}
			byPolicy := f.savepoint("ffffff", "000000000002", true, old.Add(-time.Hour))
			f.pol.PinnedSavepoints = []string{byPolicy}
			f.savepoint("ffffff", "000000000003", true, old.Add(time.Hour))
			f.savepoint("ffffff", "000000000004", true, old.Add(2*time.Hour))
			restore := f.savepoint("dddddd", "000000000000", true, old)
			f.liveJob(LiveJob{JobID: jobC, RestorePath: restore})
			incOld := f.savepoint("dddddd", "00000000000f", false, old)
			incNew := f.savepoint("dddddd", "00000000000e", false, recent)
			return expect{
				del: map[string]Rule{s1: RuleSavepointRetention, s2: RuleSavepointRetention, s3: RuleSavepointRetention,
					incOld: RuleIncompleteSavepoint},
				keep: map[string]Reason{s4: KeepNewestSavepoints, s5: KeepNewestSavepoints, young: KeepNewestSavepoints,
					y2: KeepNewestSavepoints, y3: KeepWithinMaxAge, marker: KeepPinned, byPolicy: KeepPinned,
					restore: KeepRestorePoint, incNew: KeepWithinGrace},
			}
		}},
		"the newest savepoint that passed a restore drill outlives retention": {func(f *fixture) expect {
			s1 := f.savepoint("dddddd", "000000000001", true, old.Add(1*time.Hour))
			s2 := f.savepoint("dddddd", "000000000002", true, old.Add(2*time.Hour))
			s3 := f.savepoint("dddddd", "000000000003", true, old.Add(3*time.Hour))
			s4 := f.savepoint("dddddd", "000000000004", true, old.Add(4*time.Hour))
			other := f.savepoint("eeeeee", "000000000001", true, old)
			f.savepoint("eeeeee", "000000000002", true, old.Add(time.Hour))
			f.savepoint("eeeeee", "000000000003", true, old.Add(2*time.Hour))
			f.drilled = []string{s1, s2, strings.Replace(other, "//nn:8020/", "//elsewhere:8020/", 1)}
			return expect{del: map[string]Rule{s1: RuleSavepointRetention, other: RuleSavepointRetention},
				keep: map[string]Reason{s2: KeepLastDrilled, s3: KeepNewestSavepoints, s4: KeepNewestSavepoints}}
		}},
		"a drilled savepoint of another job keeps nothing of this one": {func(f *fixture) expect {
			s1 := f.savepoint("dddddd", "000000000001", true, old.Add(1*time.Hour))
			f.savepoint("dddddd", "000000000002", true, old.Add(2*time.Hour))
			f.savepoint("dddddd", "000000000003", true, old.Add(3*time.Hour))
			e1 := f.savepoint("eeeeee", "000000000001", true, old)
			f.savepoint("eeeeee", "000000000002", true, old.Add(time.Hour))
			f.savepoint("eeeeee", "000000000003", true, old.Add(2*time.Hour))
			f.drilled = []string{e1}
			return expect{del: map[string]Rule{s1: RuleSavepointRetention}, keep: map[string]Reason{e1: KeepLastDrilled}}
		}},
		"ignoreDrills: retention alone decides": {func(f *fixture) expect {
			s1 := f.savepoint("dddddd", "000000000001", true, old.Add(1*time.Hour))
			s2 := f.savepoint("dddddd", "000000000002", true, old.Add(2*time.Hour))
			f.savepoint("dddddd", "000000000003", true, old.Add(3*time.Hour))
			f.savepoint("dddddd", "000000000004", true, old.Add(4*time.Hour))
			f.drilled = []string{s1, s2}
			f.pol.IgnoreDrills = true
			return expect{del: map[string]Rule{s1: RuleSavepointRetention, s2: RuleSavepointRetention}}
		}},
		"unparseable savepoint kept and reported": {func(f *fixture) expect {
			bad := f.savepoint("dddddd", "00000000000d", true, old)
			f.l.Metadata[bad+"/_metadata"] = MetadataResult{Error: "checkpoint metadata: truncated"}
			inc := f.savepoint("dddddd", "00000000000f", false, old)
			return expect{del: map[string]Rule{inc: RuleIncompleteSavepoint}, keep: map[string]Reason{bad: KeepUnparseable}}
		}},
		"unparseable metadata keeps its job dir and stops reference-dependent deletions": {func(f *fixture) expect {
			f.job(jobA, old)
			bad := f.chk(jobA, 3, true, old)
			f.l.Metadata[bad+"/_metadata"] = MetadataResult{Error: "checkpoint metadata: unknown state handle tag"}
			f.job(jobB, old)
			b1 := f.chk(jobB, 1, true, old.Add(-time.Hour))
			f.chk(jobB, 2, true, old)
			inc := f.chk(jobB, 3, false, old)
			orphan := f.state(jobB, "shared", "orphan", 5, old)
			sp := f.savepoint("dddddd", "000000000001", true, old)
			f.savepoint("dddddd", "000000000002", true, old.Add(time.Hour))
			f.savepoint("dddddd", "000000000003", true, old.Add(2*time.Hour))
			gone := f.ha("gone", old)
			return expect{
				del: map[string]Rule{inc: RuleIncompleteCheckpoint, gone: RuleRetiredHACluster},
				keep: map[string]Reason{jobDir(jobA): KeepUnparseable, b1: KeepUnparseableInScope,
					orphan: KeepUnparseableInScope, sp: KeepUnparseableInScope},
			}
		}},
		// On 5024bd4 b1, orphan and sp are planned: an unparseable savepoint
		// was taken to name nothing outside its dir.
		"an unparseable savepoint stops reference-dependent deletions: its _metadata is not known to be relative": {func(f *fixture) expect {
			f.job(jobB, old)
			b1 := f.chk(jobB, 1, true, old.Add(-time.Hour))
			b2 := f.chk(jobB, 2, true, old)
			orphan := f.state(jobB, "shared", "orphan", 5, old)
			bad := f.savepoint("eeeeee", "000000000009", true, old)
			f.l.Metadata[bad+"/_metadata"] = MetadataResult{Error: "checkpoint metadata: truncated"}
			sp := f.savepoint("dddddd", "000000000001", true, old)
			f.savepoint("dddddd", "000000000002", true, old.Add(time.Hour))
			f.savepoint("dddddd", "000000000003", true, old.Add(2*time.Hour))
			return expect{
				del: map[string]Rule{},
				keep: map[string]Reason{bad: KeepUnparseable, b2: KeepLatestRetired,
					b1: KeepUnparseableInScope, orphan: KeepUnparseableInScope, sp: KeepUnparseableInScope},
			}
		}},
		"unknown entries are kept and keep their job dir": {func(f *fixture) expect {
			f.job(jobA, old)
			f.chk(jobA, 1, false, old)
			f.l.Report.Unknown = []layout.Unknown{
				{Path: jobDir(jobA) + "/notes.txt", Reason: "a file directly in a job dir"},
				{Path: ckRoot + "/backup", IsDir: true, Reason: "not a job id"},
			}
			return expect{del: map[string]Rule{}, keep: map[string]Reason{jobDir(jobA): KeepUnknownLayout,
				jobDir(jobA) + "/notes.txt": KeepUnknown, ckRoot + "/backup": KeepUnknown}}
		}},
		"HA dirs": {func(f *fixture) expect {
			gone := f.ha("gone", old)
			live := f.ha("c1", old)
			young := f.ha("young", recent)
			odd := f.ha("odd", old)
			f.l.Report.Unknown = []layout.Unknown{{Path: odd + "/strange", Reason: "not blob/"}}
			return expect{del: map[string]Rule{gone: RuleRetiredHACluster},
				keep: map[string]Reason{live: KeepLiveCluster, young: KeepWithinTTL, odd: KeepUnknownLayout}}
		}},
		"zero-byte files go only when unreferenced": {func(f *fixture) expect {
			f.liveJob(LiveJob{JobID: jobA})
			f.job(jobA, recent)
			zRef := f.state(jobA, "shared", "zero-ref", 0, old)
			zFree := f.state(jobA, "shared", "zero-free", 0, old)
			zTask := f.state(jobA, "taskowned", "zero-task", 0, old)
			f.chk(jobA, 4, true, recent, zRef)
			return expect{del: map[string]Rule{zFree: RuleUnreferencedState, zTask: RuleUnreferencedState},
				keep: map[string]Reason{zRef: KeepReferenced}}
		}},
		"live job: state files newer than its latest checkpoint are kept": {func(f *fixture) expect {
			f.liveJob(LiveJob{JobID: jobA})
			f.job(jobA, recent)
			f.chk(jobA, 4, true, now.Add(-3*time.Hour))
			before := f.state(jobA, "shared", "before", 1, now.Add(-4*time.Hour))
			after := f.state(jobA, "shared", "after", 1, now.Add(-2*time.Hour))
			fresh := f.state(jobA, "shared", "fresh", 1, recent)
			return expect{del: map[string]Rule{before: RuleUnreferencedState},
				keep: map[string]Reason{after: KeepNewerThanCheckpoint, fresh: KeepWithinGrace}}
		}},
		"ForSt working files: kept however old while the job runs, normal rules once it is gone": {func(f *fixture) expect {
			// Flink 2.x ForSt with the primary dir defaulting to the checkpoint dir: the
			// running instance's files under shared/op_…__attempt_<n>/, an old attempt's
			// left behind by a failover, none referenced by the latest checkpoint.
			const op = "op_AsyncKeyedProcessOperator_fcfb2cd74328d289a0b17a4030f9cfdc__1_1__attempt_"
			f.liveJob(LiveJob{JobID: jobA})
			f.job(jobA, recent)
			f.chk(jobA, 9, true, now.Add(-time.Hour))
			liveOld := f.state(jobA, "shared", op+"0/db/0a1b2c3d-old-attempt", 1, old)
			liveCur := f.state(jobA, "shared", op+"1/db/4e5f6a7b-current", 1, now.Add(-3*time.Hour))
			// Not a working dir: the normal rule for an unreferenced shared file.
			flat := f.state(jobA, "shared", "9c8d7e6f-flat", 1, now.Add(-3*time.Hour))
			f.job(jobB, old)
			f.chk(jobB, 3, true, old)
			gone := f.state(jobB, "shared", op+"0/db/1234abcd-gone", 1, old)
			return expect{del: map[string]Rule{flat: RuleUnreferencedState, gone: RuleRetiredJob},
				keep: map[string]Reason{liveOld: KeepForStWorkingState, liveCur: KeepForStWorkingState}}
		}},
		"live job without any completed checkpoint keeps its state files": {func(f *fixture) expect {
			f.liveJob(LiveJob{JobID: jobA})
			f.job(jobA, recent)
			s := f.state(jobA, "shared", "first-upload", 1, now.Add(-2*time.Hour))
			return expect{del: map[string]Rule{}, keep: map[string]Reason{s: KeepNewerThanCheckpoint}}
		}},
		"restore point of a live job in a retired job's dir": {func(f *fixture) expect {
			f.pol.DeleteLatestRetiredCheckpoint = true
			f.job(jobA, old)
			s1 := f.state(jobA, "shared", "s1", 1, old)
			c1 := f.chk(jobA, 1, true, old.Add(-time.Hour))
			c2 := f.chk(jobA, 2, true, old, s1)
			f.liveJob(LiveJob{JobID: jobB, RestorePath: c2})
			return expect{del: map[string]Rule{c1: RuleRetiredJob}, keep: map[string]Reason{c2: KeepRestorePoint, s1: KeepReferenced}}
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture()
			want := tc.build(f)
			plan := f.plan(t)
			got := map[string]Rule{}
			for _, it := range plan.Delete {
				got[it.Path] = it.Rule
			}
			if want.del == nil {
				want.del = map[string]Rule{}
			}
			if !reflect.DeepEqual(got, want.del) {
				t.Errorf("deleted:\n got %v\nwant %v", got, want.del)
			}
			kept := map[string]Reason{}
			for _, k := range plan.Keep {
				if _, dup := kept[k.Path]; !dup {
					kept[k.Path] = k.Reason
				}
			}
			for p, r := range want.keep {
				if kept[p] != r {
					t.Errorf("kept %s: reason %q; want %q", p, kept[p], r)
				}
			}
			if t.Failed() {
				js, _ := json.MarshalIndent(plan.Keep, "", " ")
				t.Logf("keep: %s", js)
			}
		})
	}
}

func TestPlanDeterministicAndSerialisable(t *testing.T) {
	build := func(shuffle bool) Plan {
		f := newFixture()
		f.liveJob(LiveJob{JobID: jobB})
		f.job(jobA, old)
		a := f.state(jobA, "shared", "a", 1, old)
		f.state(jobA, "shared", "b", 1, old)
		f.chk(jobA, 1, true, old.Add(-time.Hour), a)
		f.chk(jobA, 2, true, old, a)
		f.job(jobB, recent)
		f.chk(jobB, 5, true, recent, a)
		f.chk(jobB, 4, false, old)
		for i := range 6 {
			f.savepoint("dddddd", strings.Repeat("0", 11)+itoa(int64(i)), true, old.Add(time.Duration(i)*time.Hour))
		}
		f.ha("gone", old)
		if shuffle {
			r := rand.New(rand.NewPCG(1, 2))
			r.Shuffle(len(f.l.Report.Savepoints), func(i, j int) {
				f.l.Report.Savepoints[i], f.l.Report.Savepoints[j] = f.l.Report.Savepoints[j], f.l.Report.Savepoints[i]
			})
			r.Shuffle(len(f.l.Report.Jobs), func(i, j int) { f.l.Report.Jobs[i], f.l.Report.Jobs[j] = f.l.Report.Jobs[j], f.l.Report.Jobs[i] })
			r.Shuffle(len(f.l.StateFiles), func(i, j int) { f.l.StateFiles[i], f.l.StateFiles[j] = f.l.StateFiles[j], f.l.StateFiles[i] })
		}
		return f.plan(t)
	}
	a, b := build(false), build(true)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatalf("plans differ with input order:\n%s\n%s", ja, jb)
	}
	for i := 1; i < len(a.Delete); i++ {
		if a.Delete[i-1].Path >= a.Delete[i].Path {
			t.Fatalf("delete list not sorted at %d", i)
		}
	}
	var back Plan
	if err := json.Unmarshal(ja, &back); err != nil {
		t.Fatal(err)
	}
	jc, _ := json.Marshal(back)
	if string(jc) != string(ja) {
		t.Fatal("plan does not survive a JSON round trip")
	}
	if len(a.Summary) != 1 || a.Summary[0].Tenant != "team-t" {
		t.Fatalf("summary %+v; want one for team-t", a.Summary)
	}
	s := a.Summary[0]
	var sum Totals
	for _, it := range a.Delete {
		sum.add(it.Files, it.Dirs, it.Bytes)
	}
	if s.Reclaim != sum || s.Reclaim.Items == 0 {
		t.Fatalf("summary reclaim %+v; items add up to %+v", s.Reclaim, sum)
	}
	if s.KeptItems[KeepReferenced].Items == 0 || s.ByRule[RuleSavepointRetention].Items != 4 {
		t.Fatalf("summary kept %+v by rule %+v", s.KeptItems, s.ByRule)
	}
}

func TestPlanRejectsBadInput(t *testing.T) {
	cases := map[string]struct {
		mod  func(in *Input)
		want string
	}{
		"zero now":         {func(in *Input) { in.Now = time.Time{} }, "now is zero"},
		"negative grace":   {func(in *Input) { in.Policy.Grace = -time.Second }, "grace"},
		"ttl below grace":  {func(in *Input) { in.Policy.Grace = 2 * time.Hour; in.Policy.RetiredJobTTL = time.Hour }, "retiredJobTTL"},
		"bad action":       {func(in *Input) { in.Policy.Action = "shred" }, `action "shred"`},
		"negative keep":    {func(in *Input) { in.Policy.KeepSavepoints = -1 }, "keepSavepoints"},
		"bad pinned":       {func(in *Input) { in.Policy.PinnedSavepoints = []string{"relative/sp"} }, "pinnedSavepoints"},
		"bad live job id":  {func(in *Input) { in.Live.Clusters = []LiveCluster{{ClusterID: "c", Jobs: []LiveJob{{JobID: "xyz"}}}} }, `"xyz"`},
		"empty cluster id": {func(in *Input) { in.Live.Clusters = []LiveCluster{{}} }, "clusterId"},
		"bad restore path": {func(in *Input) {
			in.Live.Clusters = []LiveCluster{{ClusterID: "c", Jobs: []LiveJob{{JobID: jobA, RestorePath: "sp"}}}}
		}, "restore point"},
		"empty metadata":      {func(in *Input) { in.Listing.Metadata = map[string]MetadataResult{nn + "/x/_metadata": {}} }, "neither references nor an error"},
		"tenant without root": {func(in *Input) { in.Tenants = []inventory.Tenant{{Name: "a"}} }, "both name and root"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := Input{Now: now}
			tc.mod(&in)
			_, err := BuildPlan(in)
			if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v; want ErrInvalidInput mentioning %q", err, tc.want)
			}
		})
	}
}

// BenchmarkBuildPlanRetiredJobs plans a root of 10,000 retired job dirs
// with one abandoned checkpoint each: every dir collapses into one item.
func BenchmarkBuildPlanRetiredJobs(b *testing.B) {
	old := time.Now().Add(-30 * 24 * time.Hour)
	l := Listing{Roots: []layout.Root{{Path: ckRoot, Kind: layout.CheckpointRoot}}, Metadata: map[string]MetadataResult{}}
	for i := range 10_000 {
		id := fmt.Sprintf("%032x", i+1)
		u := layout.Usage{Files: 1, Dirs: 2, Newest: old}
		l.Report.Jobs = append(l.Report.Jobs, layout.JobCheckpoints{Root: ckRoot, Path: jobDir(id), JobID: id,
			Checkpoints: []layout.Checkpoint{{ID: 1, Path: jobDir(id) + "/chk-1", Usage: u}}, Total: u})
	}
	in := Input{Now: time.Now(), Listing: l, Live: Live{Clusters: []LiveCluster{{ClusterID: "c1"}}}, Lineage: byPrefix(l)}
	for b.Loop() {
		p, err := BuildPlan(in)
		if err != nil || len(p.Delete) != 10_000 {
			b.Fatalf("%d items, %v", len(p.Delete), err)
		}
	}
}

// TestPlanTakesNoTenantsWordForAnothersJob: a claim another tenant can
// write (its catalog, its job records) that its savepoint is of this
// tenant's retired job, by job id or by logical job, never makes this
// tenant's latest checkpoint deletable.
func TestPlanTakesNoTenantsWordForAnothersJob(t *testing.T) {
	for name, evidence := range map[string]func(f *fixture, sp string){
		"job id":      func(f *fixture, sp string) { f.savepointJobIDs = map[string]string{sp: jobA} },
		"logical job": func(f *fixture, sp string) { f.jobLineage = map[string]string{jobA: "t/c/" + jobA[:6]} },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture()
			f.job(jobA, old)
			c := f.chk(jobA, 2, true, old)
			// A savepoint in tenant u's root, newer, and said to be jobA's.
			sp := nn + "/u/savepoints/savepoint-" + jobA[:6] + "-0123456789ab"
			f.l.Report.Savepoints = append(f.l.Report.Savepoints, layout.Savepoint{Root: nn + "/u/savepoints", Path: sp, JobIDPrefix: jobA[:6],
				Completed: true, Written: old.Add(time.Hour), Usage: usage(3, old.Add(time.Hour))})
			f.meta(sp, sp+"/state")
			evidence(f, sp)
			p, err := BuildPlan(Input{Now: now, Listing: f.l, Live: Live{Clusters: []LiveCluster{{ClusterID: "c1"}}}, Policy: f.pol,
				Lineage: byPrefix(f.l), SavepointJobIDs: f.savepointJobIDs, JobLineage: f.jobLineage,
				Tenants: []inventory.Tenant{{Name: "team-t", Root: "/t"}, {Name: "team-u", Root: "/u"}}})
			if err != nil {
				t.Fatal(err)
			}
			if k, ok := keptFor(p, c); !ok || k.Reason != KeepLatestRetired {
				t.Fatalf("%s kept %+v (planned %v); want %s", c, k, planned(p), KeepLatestRetired)
			}
		})
	}
}
