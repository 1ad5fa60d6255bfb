package cleanup

import (
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// The planner's guards against what a listing or the inventory cannot
// tell: a write time, a savepoint's time, a record that names more than
// one thing. Each case plans differently without its guard.

// undated clears the _metadata time of the listed checkpoint or savepoint
// at path, as a listing made by a worker of an earlier release (during a
// rollout) carries none; the times in its dir stay.
func (f *fixture) undated(path string) {
	for i := range f.l.Report.Jobs {
		for k := range f.l.Report.Jobs[i].Checkpoints {
			if c := &f.l.Report.Jobs[i].Checkpoints[k]; c.Path == path {
				c.Written = time.Time{}
				return
			}
		}
	}
	for i := range f.l.Report.Savepoints {
		if sp := &f.l.Report.Savepoints[i]; sp.Path == path {
			sp.Written = time.Time{}
			return
		}
	}
	panic("nothing listed at " + path)
}

// TestAnEndIsEvidenceOnlyForAKnownWriteBeforeIt: a cluster that lists a
// job as ended proves that its dir is written no more only when the dir's
// last write is known and came before that end. A dir listed without a
// write time may be another run writing there now, restored from anything:
// no snapshot is planned.
func TestAnEndIsEvidenceOnlyForAKnownWriteBeforeIt(t *testing.T) {
	for name, tc := range map[string]struct {
		written time.Time
		frozen  bool
	}{
		"written before the end":      {written: now.Add(-8 * time.Minute)},
		"written at a time not known": {frozen: true},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture()
			// A retired job whose older checkpoint goes by the retired-job rule.
			f.job(jobB, old)
			older := f.chk(jobB, 1, true, old.Add(-time.Hour))
			f.chk(jobB, 2, true, old)
			// A job dir with no completed checkpoint; cluster c1 lists its job
			// as ended five minutes ago.
			f.job(jobA, tc.written)
			f.chk(jobA, 1, false, tc.written)
			f.live.Clusters = []LiveCluster{{ClusterID: "c1", Ended: []EndedJob{{ID: jobA, At: now.Add(-5 * time.Minute)}}, CheckpointDirs: []string{ckRoot}}}
			p := f.plan(t)
			k, _ := keptFor(p, older)
			switch {
			case tc.frozen && (plannedAt(p, older) != "" || k.Reason != KeepUnknownRestore || !strings.Contains(k.By, jobDir(jobA))):
				t.Fatalf("%s planned %q, kept %+v; want it kept: %s may be written now by a run restored from it", older, plannedAt(p, older), k, jobDir(jobA))
			case !tc.frozen && plannedAt(p, older) != RuleRetiredJob:
				t.Fatalf("%s planned %q, kept %+v; want %s: the job writing %s ended after its last write", older, plannedAt(p, older), k, RuleRetiredJob, jobDir(jobA))
			}
		})
	}
}

// TestACheckpointWithoutItsTimeIsAsNewAsItsDir: a retired job's latest
// checkpoint listed without its _metadata time goes only for a savepoint
// of the same job newer than everything in its dir. Taking the missing
// time as the oldest possible would let any proven savepoint delete it.
// A savepoint listed without its own time proves nothing newer.
func TestACheckpointWithoutItsTimeIsAsNewAsItsDir(t *testing.T) {
	dirTime := old.Add(2 * time.Hour)
	for name, tc := range map[string]struct {
		savepoint time.Time
		undated   bool // the savepoint too is listed without its time
		goes      bool
	}{
		"a savepoint older than the checkpoint's dir":      {savepoint: old.Add(time.Hour)},
		"a savepoint newer than all in the dir":            {savepoint: old.Add(3 * time.Hour), goes: true},
		"a savepoint without its time, its dir the newest": {savepoint: old.Add(3 * time.Hour), undated: true},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture()
			f.job(jobA, dirTime)
			latest := f.chk(jobA, 2, true, dirTime)
			f.undated(latest)
			sp := f.savepoint(jobA[:6], "0123456789ab", true, tc.savepoint)
			if tc.undated {
				f.undated(sp)
			}
			f.savepointJobIDs = map[string]string{sp: jobA}
			p := f.plan(t)
			switch k, _ := keptFor(p, latest); {
			case tc.goes && plannedAt(p, latest) != RuleRetiredJob:
				t.Fatalf("%s kept %+v; want %s: savepoint %s of the job is newer than all in its dir", latest, k, RuleRetiredJob, sp)
			case !tc.goes && (plannedAt(p, latest) != "" || k.Reason != KeepLatestRetired):
				t.Fatalf("%s planned %q, kept %+v; want %s: no savepoint of the job is known to be newer", latest, plannedAt(p, latest), k, KeepLatestRetired)
			}
		})
	}
}

// TestAJobWithAnUndatedSavepointKeepsThemAll: when one of a job's
// savepoints is listed without its _metadata time, which are its newest
// cannot be told, so retention plans none of them.
func TestAJobWithAnUndatedSavepointKeepsThemAll(t *testing.T) {
	for name, undated := range map[string]bool{"one listed without its time": true, "all with their times": false} {
		t.Run(name, func(t *testing.T) {
			f := newFixture()
			var sps []string
			for i := range 4 {
				sps = append(sps, f.savepoint("dddddd", "00000000000"+itoa(int64(i)), true, old.Add(time.Duration(i)*time.Hour)))
			}
			if undated {
				f.undated(sps[3])
			}
			p := f.plan(t)
			if !undated {
				if got := planned(p); len(got) != 2 || got[sps[0]] != RuleSavepointRetention || got[sps[1]] != RuleSavepointRetention {
					t.Fatalf("planned %v; want %s and %s by retention: the test shows nothing", got, sps[0], sps[1])
				}
				return
			}
			for _, sp := range sps {
				if k, ok := keptFor(p, sp); !ok || k.Reason != KeepLineageUnknown || !strings.Contains(k.By, "without its _metadata time") {
					t.Errorf("%s planned %q, kept %+v; want %s: the job's newest cannot be told", sp, plannedAt(p, sp), k, KeepLineageUnknown)
				}
			}
		})
	}
}

// TestASnapshotResourceGoesWithOneSavepointOnly: a FlinkStateSnapshot
// resource is deleted with its savepoint only when all its records name
// that one savepoint and the resource is not being deleted already (the
// operator may be disposing of the savepoint itself); otherwise its
// records keep what they name.
func TestASnapshotResourceGoesWithOneSavepointOnly(t *testing.T) {
	for name, records := range map[string]func(sp1, sp2 string) []LiveRecord{
		"records naming two savepoints": func(sp1, sp2 string) []LiveRecord {
			status := snapshotRecord("split", sp1, inventory.SnapshotCompleted, true)
			spec := snapshotRecord("split", sp2, inventory.SnapshotCompleted, true)
			spec.By = "FlinkStateSnapshot ns/split spec.savepoint.path"
			return []LiveRecord{status, spec}
		},
		"being deleted": func(sp1, sp2 string) []LiveRecord {
			r := snapshotRecord("going", sp1, inventory.SnapshotCompleted, true)
			r.Snapshot.Deleting = true
			return []LiveRecord{r}
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture()
			f.pol.KeepSavepoints = 1
			sp1 := f.savepoint("aaaaaa", "000000000001", true, old)
			sp2 := f.savepoint("aaaaaa", "000000000002", true, old.Add(time.Minute))
			f.savepoint("aaaaaa", "000000000003", true, old.Add(time.Hour))
			f.live.Records = records(sp1, sp2)
			p := f.plan(t)
			for _, it := range p.Delete {
				if len(it.Snapshots) > 0 {
					t.Errorf("%s planned with resources %v; want none released", it.Path, it.Snapshots)
				}
			}
			if k, ok := keptFor(p, sp1); !ok || k.Reason != KeepOperatorRecord {
				t.Errorf("%s planned %q, kept %+v; want %s", sp1, plannedAt(p, sp1), k, KeepOperatorRecord)
			}
		})
	}
}

// TestWhatTheInventoryReadIsRetainedWhateverNamesIt: a _metadata the
// live inventory read keeps what it references even when no live job or
// record it lists names that snapshot.
func TestWhatTheInventoryReadIsRetainedWhateverNamesIt(t *testing.T) {
	for name, read := range map[string]bool{"read for no job": true, "not read": false} {
		t.Run(name, func(t *testing.T) {
			f := newFixture()
			f.job(jobA, old)
			f.chk(jobA, 1, true, old)
			used := f.state(jobA, "shared", "s1", 10, old)
			if read {
				f.liveMeta(nn+"/elsewhere/"+jobC+"/chk-9", used)
			}
			p := f.plan(t)
			k, _ := keptFor(p, used)
			switch {
			case read && (plannedAt(p, used) != "" || k.Reason != KeepReferenced):
				t.Fatalf("%s planned %q, kept %+v; want it %s by what the inventory read", used, plannedAt(p, used), k, KeepReferenced)
			case !read && plannedAt(p, used) != RuleRetiredJob:
				t.Fatalf("%s kept %+v; want %s when nothing names it: the test shows nothing", used, k, RuleRetiredJob)
			}
		})
	}
}
