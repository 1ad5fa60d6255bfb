package cleanup

import (
	"fmt"
	"sort"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/layout"
)

// One job dir may hold many runs of one job id: application mode with HA
// gives every run of a cluster the id JobID(hash(cluster-id), 0), and the
// operator's last-state upgrades keep it. A run numbers its checkpoints
// on from what it restored (the restored checkpoint's id + 1), so a run
// restored from an older savepoint numbers below an earlier run's last
// checkpoint: checkpoint ids order checkpoints only inside one run, and
// "latest" is by the _metadata's own time. The rules below are the one
// home of that model for the planner and the executor.

// chkEntry is one chk-N dir of a job dir as the run rules see it.
type chkEntry struct {
	ID        int64
	Completed bool
	// At is a completed checkpoint's _metadata time, or the newest write
	// into an incomplete one; zero when unknown.
	At time.Time
}

func chkEntries(j layout.JobCheckpoints) []chkEntry {
	out := make([]chkEntry, 0, len(j.Checkpoints))
	for _, c := range j.Checkpoints {
		at := c.Written
		if !c.Completed {
			at = c.Usage.Newest
		}
		out = append(out, chkEntry{ID: c.ID, Completed: c.Completed, At: at})
	}
	return out
}

// lastStates returns the completed checkpoints of a job dir that may be
// a run's last state, by id, and why there is more than one. When the
// completed checkpoints' ids rise with their times, the dir holds what
// one run left (or runs that each went on from the one before): the
// newest is the last state. When an older checkpoint has a higher id than
// a newer one, a later run restarted the numbering (a rollback to an
// older savepoint, a redeploy of a fixed job id): which checkpoint ended
// which run cannot be told from the listing (runs may also have written
// at once, during a migration), so every completed checkpoint may be a
// last state. The same holds when a checkpoint was listed without its
// _metadata time (a listing of an earlier release).
func lastStates(jobID string, entries []chkEntry) (map[int64]bool, string) {
	var done []chkEntry
	for _, e := range entries {
		if e.Completed {
			done = append(done, e)
		}
	}
	all := func(why string) (map[int64]bool, string) {
		m := make(map[int64]bool, len(done))
		for _, e := range done {
			m[e.ID] = true
		}
		return m, why
	}
	for _, e := range done {
		if e.At.IsZero() {
			return all(fmt.Sprintf("chk-%d of job %s was listed without its _metadata time: the newest checkpoint of its dir cannot be told, "+
				"so every completed checkpoint there may be a run's last state", e.ID, jobID))
		}
	}
	if len(done) == 0 {
		return nil, ""
	}
	// By time; checkpoints of one time by id, which tells no restart.
	sort.Slice(done, func(a, b int) bool {
		if !done[a].At.Equal(done[b].At) {
			return done[a].At.Before(done[b].At)
		}
		return done[a].ID < done[b].ID
	})
	for i := 1; i < len(done); i++ {
		if done[i].ID <= done[i-1].ID {
			return all(fmt.Sprintf("the dir of job %s holds several runs of that job id: chk-%d (written %s) is newer than chk-%d (written %s); "+
				"which checkpoint ended which run cannot be told, so every completed checkpoint may be a run's last state (the newest is chk-%d)",
				jobID, done[i].ID, done[i].At.UTC().Format(time.RFC3339), done[i-1].ID, done[i-1].At.UTC().Format(time.RFC3339), done[len(done)-1].ID))
		}
	}
	return map[int64]bool{done[len(done)-1].ID: true}, ""
}

// ownCheckpoint says whether the run writing a job dir now (its newest
// write is at newest) has a completed checkpoint of its own, whose
// _metadata names what it restored from. Another run's completed
// checkpoint in the same dir says nothing of that: a checkpoint is the
// writer's own only if it is the newest completed one by time, the
// checkpoints written after it number on from it (a run restored from
// elsewhere into a fixed job id's dir numbers from what it restored), and
// it completed within gap of the newest write (the fleet's longest
// checkpoint timeout: a run checkpointing normally completes one at
// least that often while it writes). A run restored in CLAIM mode from a
// foreign checkpoint whose id lies just above the dir's newest, right
// after that one, cannot be told from a continuation by the listing.
func ownCheckpoint(entries []chkEntry, newest time.Time, gap time.Duration) bool {
	var own *chkEntry
	for i, e := range entries {
		if e.Completed && !e.At.IsZero() && (own == nil || e.At.After(own.At)) {
			own = &entries[i]
		}
	}
	if own == nil || newest.IsZero() || newest.Sub(own.At) > gap {
		return false
	}
	for _, e := range entries {
		if !e.Completed && e.At.After(own.At) && e.ID <= own.ID {
			return false
		}
	}
	return true
}
