package cleanup

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// A fixed job id (application mode with HA) writes every run of its
// cluster into one job dir. A run restored from an older savepoint
// numbers its checkpoints below the earlier run's: the latest state is
// the newest checkpoint by its _metadata's time, never the highest chk-N.
func TestRetiredJobDirOfManyRunsKeepsEveryLastState(t *testing.T) {
	run1 := now.Add(-20 * 24 * time.Hour) // run 1 ends at chk-1000
	run2 := now.Add(-10 * 24 * time.Hour) // run 2, from a savepoint of chk-500, ends at chk-600
	for name, tc := range map[string]struct {
		// checkpoints: id -> written; every one completed.
		checkpoints map[int64]time.Time
		keep        []int64 // kept as a last state
		plan        []int64 // planned retired-job
		severalRuns bool
	}{
		"a rollback: the newer run numbers below the older": {
			checkpoints: map[int64]time.Time{999: run1.Add(-time.Minute), 1000: run1, 599: run2.Add(-time.Minute), 600: run2},
			keep:        []int64{999, 1000, 599, 600}, severalRuns: true,
		},
		"one run: ids rise with time": {
			checkpoints: map[int64]time.Time{98: run1, 99: run2.Add(-time.Minute), 100: run2},
			keep:        []int64{100}, plan: []int64{98, 99},
		},
		"runs that each went on from the one before": {
			checkpoints: map[int64]time.Time{10: run1, 11: run1.Add(time.Hour), 501: run2},
			keep:        []int64{501}, plan: []int64{10, 11},
		},
		"a listing without _metadata times": {
			checkpoints: map[int64]time.Time{1000: {}, 600: run2},
			keep:        []int64{1000, 600}, severalRuns: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture()
			newest := time.Time{}
			for _, at := range tc.checkpoints {
				if at.After(newest) {
					newest = at
				}
			}
			f.job(jobA, newest)
			paths := map[int64]string{}
			shared := map[int64]string{}
			for id, at := range tc.checkpoints {
				shared[id] = f.state(jobA, "shared", fmt.Sprintf("sst-of-%d", id), 10, at)
				paths[id] = f.chk(jobA, id, true, at, shared[id])
				if at.IsZero() {
					js := &f.l.Report.Jobs[0]
					js.Checkpoints[len(js.Checkpoints)-1].Usage.Newest = run1
				}
			}
			p, err := f.build(Spellings{})
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range tc.keep {
				k, ok := keptFor(p, paths[id])
				if !ok || k.Reason != KeepLatestRetired {
					t.Errorf("chk-%d kept %+v (planned %v); want %s", id, k, planned(p), KeepLatestRetired)
				}
				if got := strings.Contains(k.By, "cannot be told"); got != tc.severalRuns {
					t.Errorf("chk-%d kept by %q; want several runs said: %v", id, k.By, tc.severalRuns)
				}
				// What a last state names stays with it.
				if k, ok := keptFor(p, shared[id]); !ok || k.Reason != KeepReferenced {
					t.Errorf("%s kept %+v (planned %v); want %s", shared[id], k, planned(p), KeepReferenced)
				}
			}
			for _, id := range tc.plan {
				if planned(p)[paths[id]] != RuleRetiredJob {
					k, _ := keptFor(p, paths[id])
					t.Errorf("chk-%d planned %q (kept %+v); want %s", id, planned(p)[paths[id]], k, RuleRetiredJob)
				}
			}
		})
	}
}

// A savepoint of the same job taken after every run's last checkpoint
// is the job's newest restore point: the runs' last states go.
func TestRunsLastStatesGoOnceANewerSavepointOfTheJobIsProven(t *testing.T) {
	f := newFixture()
	f.job(jobA, now.Add(-10*24*time.Hour))
	f.chk(jobA, 1000, true, now.Add(-20*24*time.Hour))
	f.chk(jobA, 600, true, now.Add(-10*24*time.Hour))
	sp := f.savepoint("aaaaaa", "000000000001", true, now.Add(-9*24*time.Hour))
	f.savepointJobIDs = map[string]string{sp: jobA}
	p, err := f.build(Spellings{})
	if err != nil {
		t.Fatal(err)
	}
	if got := planned(p)[jobDir(jobA)]; got != RuleRetiredJob {
		t.Errorf("job dir planned %q (kept %v); want both runs' checkpoints gone with it (%s), the savepoint newer", got, p.Keep, RuleRetiredJob)
	}
	// The same savepoint older than run 2's last checkpoint: run 2's
	// last state stays.
	f = newFixture()
	f.job(jobA, now.Add(-10*24*time.Hour))
	c1000 := f.chk(jobA, 1000, true, now.Add(-20*24*time.Hour))
	c600 := f.chk(jobA, 600, true, now.Add(-10*24*time.Hour))
	sp = f.savepoint("aaaaaa", "000000000001", true, now.Add(-15*24*time.Hour))
	f.savepointJobIDs = map[string]string{sp: jobA}
	if p, err = f.build(Spellings{}); err != nil {
		t.Fatal(err)
	}
	if k, ok := keptFor(p, c600); !ok || k.Reason != KeepLatestRetired {
		t.Errorf("%s kept %+v (planned %v); want %s: no savepoint is newer", c600, k, planned(p), KeepLatestRetired)
	}
	if planned(p)[c1000] != RuleRetiredJob {
		t.Errorf("%s planned %q; want %s: the savepoint is newer", c1000, planned(p)[c1000], RuleRetiredJob)
	}
}

// The run writing a job dir now names its restore point in its first
// completed checkpoint. A completed checkpoint an earlier run of the same
// fixed job id left there is not that run's: until the writer completes
// one of its own, no snapshot is planned.
func TestAnEarlierRunsCheckpointHidesNoUnknownRestore(t *testing.T) {
	for name, tc := range map[string]struct {
		completed map[int64]time.Time
		writing   map[int64]time.Time // incomplete chk-N, newest write
		frozen    bool
	}{
		"a new run numbering below the earlier run's last": {
			completed: map[int64]time.Time{1000: now.Add(-3 * time.Minute)},
			writing:   map[int64]time.Time{101: now.Add(-time.Minute)},
			frozen:    true,
		},
		"a new run, the earlier run's last a day old": {
			completed: map[int64]time.Time{50: now.Add(-24 * time.Hour)},
			writing:   map[int64]time.Time{101: now.Add(-time.Minute)},
			frozen:    true,
		},
		"a run after its own checkpoint": {
			completed: map[int64]time.Time{100: now.Add(-3 * time.Minute)},
			writing:   map[int64]time.Time{101: now.Add(-time.Minute)},
		},
		"a new run whose first checkpoint completed": {
			completed: map[int64]time.Time{1000: now.Add(-24 * time.Hour), 501: now.Add(-2 * time.Minute)},
			writing:   map[int64]time.Time{502: now.Add(-time.Minute)},
		},
		"a new run, an abandoned checkpoint of the earlier run beside it": {
			completed: map[int64]time.Time{1000: now.Add(-24 * time.Hour), 501: now.Add(-2 * time.Minute)},
			writing:   map[int64]time.Time{1001: now.Add(-24 * time.Hour), 502: now.Add(-time.Minute)},
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture()
			f.pol.Grace, f.pol.MaxCheckpointTimeout = 10*time.Minute, 10*time.Minute
			f.job(jobA, now.Add(-time.Minute))
			for id, at := range tc.completed {
				f.chk(jobA, id, true, at)
			}
			for id, at := range tc.writing {
				f.chk(jobA, id, false, at)
			}
			f.job(jobB, old)
			f.chk(jobB, 4, true, old) // its latest, kept anyway
			retired := f.chk(jobB, 3, true, old.Add(-time.Hour))
			p, err := f.build(Spellings{})
			if err != nil {
				t.Fatal(err)
			}
			k, ok := keptFor(p, retired)
			switch {
			case tc.frozen && (!ok || k.Reason != KeepUnknownRestore || !strings.Contains(k.By, jobA)):
				t.Errorf("%s kept %+v (planned %v); want %s naming %s", retired, k, planned(p), KeepUnknownRestore, jobA)
			case !tc.frozen && ok && k.Reason == KeepUnknownRestore:
				t.Errorf("%s kept %+v; want no freeze: the writer has a checkpoint of its own", retired, k)
			}
		})
	}
}

// Property: whatever runs a retired job dir holds, the newest completed
// checkpoint by time is never planned (no savepoint is proven newer),
// nor anything it names; and the result does not depend on the order the
// checkpoints were listed in.
func TestPropertyTheNewestCheckpointOfAJobDirIsKept(t *testing.T) {
	for seed := uint64(0); seed < 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 49))
		f := newFixture()
		base := now.Add(-60 * 24 * time.Hour)
		f.job(jobA, base)
		type cp struct {
			id int64
			at time.Time
		}
		var cps []cp
		at := base
		runs := 1 + r.IntN(4)
		used := map[int64]bool{}
		for range runs {
			id := int64(1 + r.IntN(2000))
			for range 1 + r.IntN(4) {
				at = at.Add(time.Duration(1+r.IntN(600)) * time.Minute)
				id += int64(1 + r.IntN(3))
				if used[id] {
					continue
				}
				used[id] = true
				cps = append(cps, cp{id, at})
			}
		}
		r.Shuffle(len(cps), func(i, j int) { cps[i], cps[j] = cps[j], cps[i] })
		var newest cp
		paths := map[int64]string{}
		for _, c := range cps {
			paths[c.id] = f.chk(jobA, c.id, true, c.at, jobDir(jobA)+"/shared/of-"+itoa(c.id))
			f.state(jobA, "shared", "of-"+itoa(c.id), 10, c.at)
			if c.at.After(newest.at) {
				newest = c
			}
		}
		f.l.Report.Jobs[0].Total.Newest = newest.at
		p, err := f.build(Spellings{})
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{paths[newest.id], jobDir(jobA) + "/shared/of-" + itoa(newest.id)} {
			if rule := plannedAt(p, path); rule != "" {
				t.Fatalf("seed %d: %s planned %s; want it kept: chk-%d is the newest of %v", seed, path, rule, newest.id, cps)
			}
		}
	}
}
