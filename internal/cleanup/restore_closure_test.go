package cleanup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/checkpoint/checkpointtest"
)

// Job ids of the restore scenarios.
const (
	jobJ        = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a"
	jobK        = "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b"
	jobClaimed  = "0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c"
	jobClaiming = "0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d"
)

// snapshotMetadata writes a _metadata at tenant-relative rel naming files, aged
// to when, and returns the dir it is in.
func (e *localEnv) snapshotMetadata(rel string, id int64, when time.Time, files ...checkpointtest.File) string {
	e.t.Helper()
	p := filepath.Join(e.tenant, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, checkpointtest.Metadata(checkpointtest.Spec{CheckpointID: id, Files: files}), 0o644); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Chtimes(p, when, when); err != nil {
		e.t.Fatal(err)
	}
	return "file://" + filepath.Dir(p)
}

// shared and private name a tenant-relative file as a _metadata does.
func (e *localEnv) shared(rel string) checkpointtest.File {
	return checkpointtest.File{Path: e.uri(rel), Shared: true, Size: 10}
}

func (e *localEnv) private(rel string) checkpointtest.File {
	return checkpointtest.File{Path: e.uri(rel), Size: 5}
}

// plain is a URI as a --path glob names it.
func plain(uri string) string { return strings.TrimPrefix(uri, "file://") }

// trashOf is where run put the item at uri.
func (e *localEnv) trashOf(run, uri string) string {
	return "file://" + e.trash + "/" + run + plain(uri)
}

// trashRun plans with pol, requires the plan to delete exactly want, and
// trashes it in run.
func (e *localEnv) trashRun(run string, pol Policy, want ...string) {
	e.t.Helper()
	pol.Action = ActionTrash
	plan := e.plan(Live{}, pol)
	got := map[string]bool{}
	for _, it := range plan.Delete {
		got[it.Path] = true
	}
	for _, w := range want {
		if !got[w] {
			e.t.Fatalf("run %s: the plan deletes %v; want %v (keeps %+v)", run, planned(plan), want, plan.Keep)
		}
	}
	if len(got) != len(want) {
		e.t.Fatalf("run %s: the plan deletes %v; want only %v", run, planned(plan), want)
	}
	res, err := e.executor(run, nil).Run(context.Background(), plan)
	if err != nil || res.Counts[OutcomeTrashed] != len(want) {
		e.t.Fatalf("run %s: %+v %v", run, res, err)
	}
}

// retiredJob lays out job's dir, retired long ago: chk-1, older, names
// shared/old (only it) and shared/both; chk-2, the latest by id and by
// time, names shared/both.
func (e *localEnv) retiredJob(job string) (chk1, chk2 string) {
	e.t.Helper()
	d := "checkpoints/" + job
	e.file(d+"/shared/old", 10, e.past)
	e.file(d+"/shared/both", 10, e.past)
	e.file(d+"/chk-1/x", 5, e.past)
	e.file(d+"/chk-2/y", 5, e.past)
	chk1 = e.snapshotMetadata(d+"/chk-1/_metadata", 1, e.past, e.shared(d+"/shared/old"), e.shared(d+"/shared/both"), e.private(d+"/chk-1/x"))
	chk2 = e.snapshotMetadata(d+"/chk-2/_metadata", 2, e.past, e.shared(d+"/shared/both"), e.private(d+"/chk-2/y"))
	e.age(d, e.past)
	e.age(d+"/chk-1", e.past.Add(-time.Hour))
	return chk1, chk2
}

// retiredJobTrashedApart is the default retired-job case: run r1 trashes
// chk-1 and shared/old as separate items and keeps chk-2 (the latest) and
// shared/both (chk-2 names it).
func (e *localEnv) retiredJobTrashedApart(job string) (chk1, chk2 string) {
	e.t.Helper()
	chk1, chk2 = e.retiredJob(job)
	e.trashRun("r1", Policy{}, chk1, e.uri("checkpoints/"+job+"/shared/old"))
	return chk1, chk2
}

// thenCollapsed: a later run r2 trashes what is left of job's dir whole.
func (e *localEnv) thenCollapsed(job string) {
	e.t.Helper()
	e.age("checkpoints/"+job, e.past) // r1's moves touched the dir
	e.trashRun("r2", Policy{DeleteLatestRetiredCheckpoint: true}, e.uri("checkpoints/"+job))
}

// requireHome fails unless every tenant-relative path is at home.
func (e *localEnv) requireHome(what string, rels ...string) {
	e.t.Helper()
	for _, r := range rels {
		if !e.exists(e.uri(r)) {
			e.t.Errorf("%s: %s is not back", what, r)
		}
	}
}

func (e *localEnv) requireAway(what string, rels ...string) {
	e.t.Helper()
	for _, r := range rels {
		if e.exists(e.uri(r)) {
			e.t.Errorf("%s: %s is back; want it left in the trash", what, r)
		}
	}
}

// TestRestoreGivesBackTheClosure: governance restore --path X (what every
// hint in the manifest names) puts back X and everything X's _metadata
// names that governance trashed, whichever run and item holds it, in an
// order that works, or refuses the snapshot, naming what is missing,
// and moves nothing.
func TestRestoreGivesBackTheClosure(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]func(t *testing.T, e *localEnv){
		// On 5024bd4: shared/old stays in the trash.
		"a retired job's older checkpoint comes back with the shared files trashed apart from it": func(t *testing.T, e *localEnv) {
			chk1, _ := e.retiredJobTrashedApart(jobJ)
			res, err := Restore(ctx, e.restoreConfig(func(c *RestoreConfig) { c.Paths = []string{plain(chk1)} }))
			if err != nil {
				t.Fatal(err)
			}
			e.requireHome("restore of chk-1", "checkpoints/"+jobJ+"/chk-1/_metadata", "checkpoints/"+jobJ+"/chk-1/x", "checkpoints/"+jobJ+"/shared/old")
			if got := outcomes(res)[e.uri("checkpoints/"+jobJ+"/shared/old")]; got.Outcome != OutcomeRestored {
				t.Errorf("shared/old: %+v; want it restored and reported", got)
			}
		},
		// On 5024bd4: nothing is selected (the result has no item).
		"a path inside a collapsed job dir selects the job dir": func(t *testing.T, e *localEnv) {
			_, chk2 := e.retiredJob(jobK)
			e.trashRun("r1", Policy{DeleteLatestRetiredCheckpoint: true}, e.uri("checkpoints/"+jobK))
			res, err := Restore(ctx, e.restoreConfig(func(c *RestoreConfig) { c.Paths = []string{plain(chk2)} }))
			if err != nil {
				t.Fatal(err)
			}
			if got := outcomes(res)[e.uri("checkpoints/"+jobK)]; got.Outcome != OutcomeRestored {
				t.Errorf("the job dir holding %s: %+v; want it restored (result %+v)", chk2, got, res)
			}
			e.requireHome("restore of chk-2", "checkpoints/"+jobK+"/chk-2/_metadata", "checkpoints/"+jobK+"/shared/both")
		},
		// On 5024bd4: A/shared/a1 stays in run r0's trash.
		"a checkpoint restored in CLAIM mode comes back with the other job's files an earlier run trashed": func(t *testing.T, e *localEnv) {
			a := "checkpoints/" + jobClaimed
			e.file(a+"/shared/a1", 10, e.past)
			e.file(a+"/chk-5/p", 5, e.past)
			e.snapshotMetadata(a+"/chk-5/_metadata", 5, e.past, e.shared(a+"/shared/a1"), e.private(a+"/chk-5/p"))
			e.age(a, e.past)
			e.trashRun("r0", Policy{DeleteLatestRetiredCheckpoint: true}, e.uri(a))
			// Job B was started from A's chk-5 in CLAIM mode: its checkpoint
			// names A's shared file where A wrote it.
			b := "checkpoints/" + jobClaiming
			e.file(b+"/shared/b1", 10, e.past)
			chk7 := e.snapshotMetadata(b+"/chk-7/_metadata", 7, e.past, e.shared(a+"/shared/a1"), e.shared(b+"/shared/b1"))
			e.age(b, e.past)
			e.trashRun("r1", Policy{DeleteLatestRetiredCheckpoint: true}, e.uri(b))
			res, err := Restore(ctx, e.restoreConfig(func(c *RestoreConfig) { c.Paths = []string{plain(chk7)} }))
			if err != nil {
				t.Fatal(err)
			}
			e.requireHome("restore of B's chk-7", b+"/chk-7/_metadata", b+"/shared/b1", a+"/shared/a1")
			if got := outcomes(res)[e.uri(a)]; got.Outcome != OutcomeRestored {
				t.Errorf("A's job dir from run r0: %+v; want it restored and reported", got)
			}
			// Run r0's own restore finds it back.
			again, err := Restore(ctx, e.restoreConfig(func(c *RestoreConfig) { c.RunID = "r0" }))
			if err != nil || again.AlreadyBack != 1 || again.Counts[OutcomeRefused] != 0 {
				t.Errorf("restore of run r0 after: %+v %v; want A already back", again, err)
			}
		},
		// On 5024bd4: A's job dir stays in run r0's trash.
		"a snapshot that cannot go back whole does not hold back another that needs the same files": func(t *testing.T, e *localEnv) {
			a := "checkpoints/" + jobClaimed
			e.file(a+"/shared/a1", 10, e.past)
			e.snapshotMetadata(a+"/chk-5/_metadata", 5, e.past, e.shared(a+"/shared/a1"))
			e.age(a, e.past)
			e.trashRun("r0", Policy{DeleteLatestRetiredCheckpoint: true}, e.uri(a))
			// Jobs B and K were both started from A's chk-5 in CLAIM mode;
			// K's own shared file is lost from the trash below.
			b, k := "checkpoints/"+jobClaiming, "checkpoints/"+jobK
			e.file(b+"/shared/b1", 10, e.past)
			e.snapshotMetadata(b+"/chk-7/_metadata", 7, e.past, e.shared(a+"/shared/a1"), e.shared(b+"/shared/b1"))
			e.file(k+"/shared/k1", 10, e.past)
			e.snapshotMetadata(k+"/chk-9/_metadata", 9, e.past, e.shared(a+"/shared/a1"), e.shared(k+"/shared/k1"))
			e.age(b, e.past)
			e.age(k, e.past)
			e.trashRun("r1", Policy{DeleteLatestRetiredCheckpoint: true}, e.uri(b), e.uri(k))
			if err := os.Remove(plain(e.trashOf("r1", e.uri(k+"/shared/k1")))); err != nil {
				t.Fatal(err)
			}
			res, err := Restore(ctx, e.restoreConfig(nil))
			if err != nil {
				t.Fatal(err)
			}
			e.requireHome("restore of run r1", b+"/chk-7/_metadata", b+"/shared/b1", a+"/shared/a1")
			e.requireAway("restore of run r1", k)
			if got := outcomes(res)[e.uri(k)]; got.Outcome != OutcomeRefused || !strings.Contains(got.Detail, "/shared/k1") {
				t.Errorf("K: %+v; want it refused, naming shared/k1", got)
			}
		},
		// On 5024bd4: chk-1 goes back without shared/old.
		"a snapshot that cannot be made whole is refused, naming what is missing, and nothing moves": func(t *testing.T, e *localEnv) {
			chk1, _ := e.retiredJobTrashedApart(jobJ)
			gone := e.trashOf("r1", e.uri("checkpoints/"+jobJ+"/shared/old"))
			if err := os.Remove(plain(gone)); err != nil {
				t.Fatal(err)
			}
			res, err := Restore(ctx, e.restoreConfig(func(c *RestoreConfig) { c.Paths = []string{plain(chk1)} }))
			if err != nil {
				t.Fatal(err)
			}
			got := outcomes(res)[chk1]
			if got.Outcome != OutcomeRefused || !strings.Contains(got.Detail, "/shared/old") {
				t.Errorf("chk-1: %+v; want it refused, naming shared/old", got)
			}
			e.requireAway("refused restore", "checkpoints/"+jobJ+"/chk-1")
			if !e.exists(e.trashOf("r1", chk1)) {
				t.Errorf("chk-1 left the trash")
			}
		},
		// On 5024bd4: shared/both (inside run r2's job dir) stays in the trash.
		"a later run's collapsed job dir goes back first, the earlier run's items into it": func(t *testing.T, e *localEnv) {
			chk1, _ := e.retiredJobTrashedApart(jobJ)
			e.thenCollapsed(jobJ)
			res, err := Restore(ctx, e.restoreConfig(func(c *RestoreConfig) { c.Paths = []string{plain(chk1)} }))
			if err != nil {
				t.Fatal(err)
			}
			j := "checkpoints/" + jobJ
			e.requireHome("restore of chk-1", j+"/chk-1/_metadata", j+"/shared/old", j+"/shared/both", j+"/chk-2/_metadata")
			if res.Counts[OutcomeRefused] != 0 {
				t.Errorf("restore: %+v; want nothing refused", res)
			}
		},
		// On 5024bd4: run r2's job dir is refused, "its original path exists again".
		"a job dir an earlier restore re-created is merged, overwriting nothing": func(t *testing.T, e *localEnv) {
			e.retiredJobTrashedApart(jobJ)
			e.thenCollapsed(jobJ)
			j := "checkpoints/" + jobJ
			// A file alone: its restore re-creates the job dir.
			if _, err := Restore(ctx, e.restoreConfig(func(c *RestoreConfig) { c.Paths = []string{plain(e.uri(j + "/shared/old"))} })); err != nil {
				t.Fatal(err)
			}
			e.requireHome("restore of shared/old", j+"/shared/old")
			res, err := Restore(ctx, e.restoreConfig(func(c *RestoreConfig) { c.RunID = "r2" }))
			if err != nil {
				t.Fatal(err)
			}
			if got := outcomes(res)[e.uri(j)]; got.Outcome != OutcomeRestored {
				t.Errorf("run r2's job dir: %+v; want it merged into the dir the first restore made", got)
			}
			e.requireHome("restore of run r2", j+"/chk-2/_metadata", j+"/shared/both", j+"/shared/old")
			if e.exists(e.trashOf("r2", e.uri(j))) {
				t.Errorf("run r2's trash still holds the job dir after it was merged back")
			}
			again, err := Restore(ctx, e.restoreConfig(func(c *RestoreConfig) { c.RunID = "r2" }))
			if err != nil || again.AlreadyBack != 1 {
				t.Errorf("restore of run r2 again: %+v %v; want it already back", again, err)
			}
		},
		// On 5024bd4: the dry run lists chk-1 only.
		"a dry run lists the closure and moves nothing": func(t *testing.T, e *localEnv) {
			chk1, _ := e.retiredJobTrashedApart(jobJ)
			e.thenCollapsed(jobJ)
			res, err := Restore(ctx, e.restoreConfig(func(c *RestoreConfig) { c.Paths = []string{plain(chk1)}; c.DryRun = true }))
			if err != nil {
				t.Fatal(err)
			}
			got := outcomes(res)
			for _, p := range []string{chk1, e.uri("checkpoints/" + jobJ + "/shared/old"), e.uri("checkpoints/" + jobJ)} {
				if got[p].Outcome != OutcomeStarted {
					t.Errorf("dry run: %s %+v; want it listed as to be restored (result %+v)", p, got[p], res)
				}
			}
			e.requireAway("dry run", "checkpoints/"+jobJ)
		},
	} {
		t.Run(name, func(t *testing.T) { tc(t, newLocalEnv(t)) })
	}
}

// TestRestoreNeverMergesIntoADirARunningJobWrites: a fixed job id's new
// run writes into the dir a collapsed item came from. Restoring the item
// touches nothing there while the run may be writing; once the dir is
// quiet it goes back beside that run's files, overwriting none.
func TestRestoreNeverMergesIntoADirARunningJobWrites(t *testing.T) {
	ctx := context.Background()
	k := "checkpoints/" + jobK
	for name, tc := range map[string]struct {
		// newRun writes the new run's files, at when.
		newRun func(e *localEnv, when time.Time)
		// quietBack: once the new run's files are old, the item goes back;
		// otherwise it is refused again, naming quietDetail.
		quietBack   bool
		quietDetail string
	}{
		// On 5024bd4: refused, but telling the user to move the running
		// job's dir aside.
		"a new run of the same job id": {
			newRun: func(e *localEnv, when time.Time) {
				e.file(k+"/chk-101/state", 5, when)
				e.file(k+"/shared/new", 5, when)
			},
			quietBack: true,
		},
		// On 5024bd4: refused, asking to move the running job's dir aside,
		// and later without naming the file that would be overwritten.
		"a new run whose checkpoint has the same number": {
			newRun: func(e *localEnv, when time.Time) {
				e.file(k+"/chk-2/_metadata", 5, when)
			},
			quietDetail: "/chk-2/_metadata",
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newLocalEnv(t)
			e.retiredJob(jobK)
			e.trashRun("r1", Policy{DeleteLatestRetiredCheckpoint: true}, e.uri(k))
			tc.newRun(e, time.Now())
			before := snapshotTree(t, filepath.Join(e.tenant, k))
			res, err := Restore(ctx, e.restoreConfig(func(c *RestoreConfig) { c.Paths = []string{plain(e.uri(k))} }))
			if err != nil {
				t.Fatal(err)
			}
			got := outcomes(res)[e.uri(k)]
			if got.Outcome != OutcomeRefused || !strings.Contains(got.Detail, "writes into") || strings.Contains(got.Detail, "move it aside") {
				t.Errorf("while the new run writes: %+v; want it refused, naming the writer, without asking to move the running job's dir", got)
			}
			if after := snapshotTree(t, filepath.Join(e.tenant, k)); after != before {
				t.Errorf("the running job's dir changed:\n%s\nwant\n%s", after, before)
			}
			e.age(k, e.past.Add(time.Hour)) // the new run stopped long ago
			res, err = Restore(ctx, e.restoreConfig(func(c *RestoreConfig) { c.Paths = []string{plain(e.uri(k))} }))
			if err != nil {
				t.Fatal(err)
			}
			got = outcomes(res)[e.uri(k)]
			switch {
			case tc.quietBack && got.Outcome != OutcomeRestored:
				t.Errorf("once the dir is quiet: %+v; want it back beside the new run's files", got)
			case tc.quietBack:
				e.requireHome("quiet restore", k+"/chk-2/_metadata", k+"/shared/both", k+"/chk-101/state", k+"/shared/new")
			case got.Outcome != OutcomeRefused || !strings.Contains(got.Detail, tc.quietDetail):
				t.Errorf("a restore that would overwrite %s: %+v; want it refused, naming it", tc.quietDetail, got)
			}
		})
	}
}

// snapshotTree lists every path under dir with its size and time.
func snapshotTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %s\n", strings.TrimPrefix(p, dir), fi.Size(), fi.ModTime().UTC().Format(time.RFC3339Nano))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestRestoreHintsSayTheTruth: each trashed item's hint names a command
// that restores it whole, and says a job may restore from the trash path
// only when the snapshot's _metadata names its files relative to its dir.
func TestRestoreHintsSayTheTruth(t *testing.T) {
	e := newLocalEnv(t)
	chk1, _ := e.retiredJob(jobJ)
	// Two logical jobs, two savepoints each; retention trashes the older.
	sp := func(prefix, rnd string, when time.Time, files ...checkpointtest.File) string {
		d := "savepoints/savepoint-" + prefix + "-" + rnd
		e.file(d+"/state", 5, when)
		dir := e.snapshotMetadata(d+"/_metadata", 1, when, files...)
		e.age(d, when)
		return dir
	}
	relative := sp("aaaaaa", "000000000001", e.past, checkpointtest.File{Path: "state", Relative: true})
	sp("aaaaaa", "000000000002", e.past.Add(time.Hour), checkpointtest.File{Path: "state", Relative: true})
	absolute := sp("bbbbbb", "000000000001", e.past, e.private("savepoints/savepoint-bbbbbb-000000000001/state"))
	sp("bbbbbb", "000000000002", e.past.Add(time.Hour), checkpointtest.File{Path: "state", Relative: true})
	e.trashRun("r1", Policy{KeepSavepoints: 1, SavepointMaxAge: time.Nanosecond}, chk1, e.uri("checkpoints/"+jobJ+"/shared/old"), relative, absolute)
	recs, err := ReadManifest(context.Background(), e.fs, "file://"+e.trash+"/_audit", "r1")
	if err != nil {
		t.Fatal(err)
	}
	hints := map[string]string{}
	for _, r := range recs {
		hints[r.Path] = r.Restore
	}
	for name, tc := range map[string]struct {
		path      string
		want, not []string
	}{
		// On 5024bd4 the hint does not say the files it names come back.
		"a checkpoint comes back with what its _metadata names": {path: chk1,
			want: []string{"put it back", "every file its _metadata names", "flinkmaint governance restore r1 --path '" + plain(chk1) + "'"},
			not:  []string{"as it is"}},
		"a savepoint whose _metadata is relative restores from its trash path": {path: relative,
			want: []string{"a job restores from the trash path as it is", "flinkmaint governance restore r1 --path '" + plain(relative) + "'"}},
		// On 5024bd4 the hint says it restores from the trash path as it is.
		"a savepoint whose _metadata names a file by absolute path is put back first": {path: absolute,
			want: []string{"put it back before a job restores from it", "flinkmaint governance restore r1 --path '" + plain(absolute) + "'"},
			not:  []string{"as it is"}},
	} {
		t.Run(name, func(t *testing.T) {
			h := hints[tc.path]
			for _, w := range tc.want {
				if !strings.Contains(h, w) {
					t.Errorf("hint %q; want it to say %q", h, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(h, n) {
					t.Errorf("hint %q; want it not to say %q", h, n)
				}
			}
		})
	}
}

// TestRestoreAsksTheInventoryWhoWritesAJobDir: a job dir whose files are
// all old may still be a live job's (a long checkpoint interval): the
// inventory decides, bound to where the job's checkpoints go, and a
// restore that cannot ask moves nothing.
func TestRestoreAsksTheInventoryWhoWritesAJobDir(t *testing.T) {
	ctx := context.Background()
	k := "checkpoints/" + jobK
	for name, tc := range map[string]struct {
		live    func(e *localEnv) (Live, error)
		back    bool
		errWant bool
	}{
		"a live job of that id checkpoints there": {
			live: func(e *localEnv) (Live, error) {
				return liveWith(LiveJob{JobID: jobK, LatestCheckpoint: e.uri(k + "/chk-101")}), nil
			},
		},
		"a live job of that id has no checkpoint yet": {
			live: func(e *localEnv) (Live, error) { return liveWith(LiveJob{JobID: jobK}), nil },
		},
		"a live job of that id checkpoints under another root": {
			live: func(e *localEnv) (Live, error) {
				return liveWith(LiveJob{JobID: jobK, LatestCheckpoint: "file:///elsewhere/checkpoints/" + jobK + "/chk-7"}), nil
			},
			back: true,
		},
		"the inventory does not answer": {
			live:    func(e *localEnv) (Live, error) { return Live{}, errors.New("cluster c1 does not answer") },
			errWant: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newLocalEnv(t)
			e.retiredJob(jobK)
			e.trashRun("r1", Policy{DeleteLatestRetiredCheckpoint: true}, e.uri(k))
			e.file(k+"/chk-101/state", 5, e.past.Add(time.Hour)) // the new run, quiet on disk
			before := snapshotTree(t, filepath.Join(e.tenant, k))
			res, err := Restore(ctx, e.restoreConfig(func(c *RestoreConfig) {
				c.Paths = []string{plain(e.uri(k))}
				c.Live = func(context.Context) (Live, error) { return tc.live(e) }
			}))
			if tc.errWant {
				if err == nil || !IsRetryable(err) {
					t.Fatalf("restore: %+v %v; want a retryable error", res, err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			got := outcomes(res)[e.uri(k)]
			switch {
			case tc.back && got.Outcome != OutcomeRestored:
				t.Errorf("%+v; want it back beside the other root's job", got)
			case tc.back:
				e.requireHome("restore", k+"/chk-2/_metadata", k+"/chk-101/state")
			case !tc.errWant && (got.Outcome != OutcomeRefused || !strings.Contains(got.Detail, "is live on cluster c1")):
				t.Errorf("%+v; want it refused, naming the live job", got)
			}
			if !tc.back {
				if after := snapshotTree(t, filepath.Join(e.tenant, k)); after != before {
					t.Errorf("the live job's dir changed:\n%s\nwant\n%s", after, before)
				}
			}
		})
	}
}
