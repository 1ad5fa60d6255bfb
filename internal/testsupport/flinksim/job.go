package flinksim

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Job states, as Flink's JobStatus names them.
const (
	stateRunning    = "RUNNING"
	stateRestarting = "RESTARTING"
	stateFinished   = "FINISHED"
	stateCanceled   = "CANCELED"
	stateFailed     = "FAILED"
)

// allStates lists every JobStatus: Flink reports a timestamp for each.
var allStates = []string{"INITIALIZING", "CREATED", "RUNNING", "FAILING", "FAILED", "CANCELLING",
	"CANCELED", "FINISHED", "RESTARTING", "SUSPENDED", "RECONCILING"}

const (
	// historySize is Flink's web.checkpoints.history default.
	historySize = 10
	// exceptionHistorySize is Flink's web.exception-history-size default.
	exceptionHistorySize = 16
	// restartBackoff is the first delay of Flink's default
	// exponential-delay restart strategy; a job failing on restore is
	// re-attempted at this pace.
	restartBackoff = time.Second
	// notAddressable is the external path Flink reports for checkpoints
	// that are not written to a file system.
	notAddressable = "<checkpoint-not-externally-addressable>"
)

// failureCause is a Java exception as Flink reports it.
type failureCause struct {
	class string
	trace string
}

// javaError formats an exception with a fake frame and optional causes, so
// the text has the shape Flink's stack traces have.
func javaError(class, msg string, causes ...string) failureCause {
	trace := class + ": " + msg + "\n\tat org.apache.flink.runtime.simulated(Simulated.java:1)"
	for _, c := range causes {
		trace += "\nCaused by: " + c + "\n\t... 1 more"
	}
	return failureCause{class: class, trace: trace}
}

func jobNotFoundFailure(jobID string) failureCause {
	return javaError("org.apache.flink.runtime.messages.FlinkJobNotFoundException", "Could not find Flink job ("+jobID+")")
}

func suspendingFailure() failureCause {
	return javaError("org.apache.flink.runtime.checkpoint.CheckpointException", "Checkpoint Coordinator is suspending.")
}

// checkpointRecord is one completed checkpoint or savepoint.
type checkpointRecord struct {
	id        int64
	triggered time.Time
	completed time.Time
	savepoint bool
	kind      string // CHECKPOINT, SAVEPOINT or SYNC_SAVEPOINT
	format    string // savepoints: CANONICAL or NATIVE
	path      string
	discarded bool
}

// operation is a savepoint or stop-with-savepoint, keyed by trigger ID.
type operation struct {
	triggerID string
	stop      bool
	cancelJob bool
	drain     bool
	format    string
	target    location
	triggered time.Time
	doneAt    time.Time
	done      bool
	location  string
	failure   *failureCause
}

// restoreInfo is what a job was started from.
type restoreInfo struct {
	id        int64
	path      string
	savepoint bool
	at        time.Time
}

// job is one simulated Flink job. Its state advances lazily: every access
// first calls advance(now), which settles the savepoints and periodic
// checkpoints due by then. Nothing runs in the background.
type job struct {
	mu    sync.Mutex
	fleet *Fleet

	id, name    string
	parallelism int
	ckDir       location // checkpoint base dir; the job writes to <ckDir>/<id>
	hasCkDir    bool
	start, end  time.Time
	state       string
	restored    *restoreInfo
	restoreMode string
	// failure is why a job FAILED at start or, with restartLoop, why it
	// fails again after every restart.
	failure     *failureCause
	restartLoop bool

	nextID    int64 // next checkpoint ID (checkpoints and savepoints share it)
	periodic  int64 // periodic checkpoints completed so far
	completed int64
	history   []checkpointRecord // oldest first
	latest    *checkpointRecord  // newest periodic checkpoint
	latestSP  *checkpointRecord  // newest savepoint
	onDisk    int64              // ID of the chk-N directory on disk, 0 if none

	ops     map[string]*operation
	pending []*operation // in doneAt order

	submissions, stopRequests, stopOps, stops, cancels int
	savepoints                                         []string
	diskErr                                            string
}

func newJob(f *Fleet, id, name string, parallelism int, ckDir location, hasCkDir bool, now time.Time) *job {
	j := &job{fleet: f, id: id, name: name, parallelism: min(max(parallelism, 1), 32768), ckDir: ckDir, hasCkDir: hasCkDir,
		start: now, state: stateRunning, nextID: 1, ops: map[string]*operation{}, submissions: 1}
	if j.jobDir().local != "" {
		// Flink creates shared/ and taskowned/ eagerly at job start.
		for _, d := range []string{"shared", "taskowned"} {
			if err := os.MkdirAll(filepath.Join(j.jobDir().local, d), 0o755); err != nil {
				j.diskErr = err.Error()
			}
		}
	}
	return j
}

// jobDir is <checkpoint dir>/<job ID>.
func (j *job) jobDir() location {
	if !j.hasCkDir {
		return location{}
	}
	return j.ckDir.join(j.id)
}

func (j *job) terminal() bool {
	return j.state == stateFinished || j.state == stateCanceled || j.state == stateFailed
}

// clock returns now, frozen at the end time of a terminal job.
func (j *job) clock(now time.Time) time.Time {
	if j.terminal() && now.After(j.end) {
		return j.end
	}
	return now
}

// attempts is how many times a job that fails on restore has failed by now.
func (j *job) attempts(now time.Time) int64 {
	if !j.restartLoop {
		return 0
	}
	return 1 + int64(j.clock(now).Sub(j.start)/restartBackoff)
}

// periodicDue is how many periodic checkpoints have completed by t.
func (j *job) periodicDue(t time.Time) int64 {
	first := j.start.Add(j.fleet.opts.CheckpointDelay)
	if t.Before(first) {
		return 0
	}
	return 1 + int64(t.Sub(first)/j.fleet.opts.CheckpointInterval)
}

// advance settles everything due by now: savepoints whose delay passed (in
// trigger order, with the periodic checkpoints that completed before each)
// and then the periodic checkpoints up to now.
func (j *job) advance(now time.Time) {
	for len(j.pending) > 0 && !j.pending[0].doneAt.After(now) {
		op := j.pending[0]
		j.pending = j.pending[1:]
		j.advanceCheckpoints(op.doneAt)
		j.complete(op, op.doneAt)
	}
	j.advanceCheckpoints(now)
	j.syncDisk()
}

func (j *job) advanceCheckpoints(t time.Time) {
	if j.state != stateRunning {
		return
	}
	due := j.periodicDue(t)
	n := due - j.periodic
	if n <= 0 {
		return
	}
	opts := j.fleet.opts
	first := j.start.Add(opts.CheckpointDelay)
	e2e := max(min(opts.CheckpointDelay, opts.CheckpointInterval)/2, time.Millisecond)
	// Only the newest ones can show in the history; the others just use IDs.
	from := max(j.periodic+1, due-historySize+1)
	j.nextID += from - (j.periodic + 1)
	for k := from; k <= due; k++ {
		done := first.Add(time.Duration(k-1) * opts.CheckpointInterval)
		rec := checkpointRecord{id: j.nextID, triggered: done.Add(-e2e), completed: done, kind: "CHECKPOINT", path: notAddressable}
		if j.hasCkDir {
			rec.path = j.jobDir().join(fmt.Sprintf("chk-%d", j.nextID)).qualified
		}
		j.nextID++
		j.record(rec)
	}
	j.periodic = due
	j.completed += n
}

// record adds a completed snapshot to the history. With the default of
// one retained checkpoint, a new checkpoint subsumes the previous one.
func (j *job) record(rec checkpointRecord) {
	if !rec.savepoint {
		for i := range j.history {
			if !j.history[i].savepoint {
				j.history[i].discarded = true
			}
		}
	}
	j.history = append(j.history, rec)
	if len(j.history) > historySize {
		j.history = append(j.history[:0], j.history[len(j.history)-historySize:]...)
	}
	last := j.history[len(j.history)-1]
	if rec.savepoint {
		j.latestSP = &last
	} else {
		j.latest = &last
	}
}

// complete finishes a savepoint operation at time at.
func (j *job) complete(op *operation, at time.Time) {
	op.done = true
	switch {
	case op.failure != nil:
		return
	case j.terminal():
		f := suspendingFailure()
		op.failure = &f
		return
	case j.state != stateRunning:
		f := j.tasksNotRunning()
		op.failure = &f
		return
	}
	kind := savepointKind(op.stop, op.drain, op.format)
	dir, err := createSavepointDir(op.target, j.id)
	if err == nil {
		err = writeSnapshot(dir.local, encodeMetadata(j.nextID, j.operators(), kind))
	}
	if err != nil {
		f := javaError("java.util.concurrent.CompletionException",
			"org.apache.flink.runtime.checkpoint.CheckpointException: Failure to finalize checkpoint.",
			"java.io.IOException: "+err.Error())
		op.failure = &f
		return
	}
	rec := checkpointRecord{id: j.nextID, triggered: op.triggered, completed: at, savepoint: true,
		kind: "SAVEPOINT", format: op.format, path: dir.qualified}
	if op.stop {
		rec.kind = "SYNC_SAVEPOINT"
	}
	j.nextID++
	j.completed++
	j.record(rec)
	op.location = dir.qualified
	j.savepoints = append(j.savepoints, dir.qualified)
	switch {
	case op.stop:
		// A stop-with-savepoint ends the job FINISHED, which discards its
		// retained checkpoints.
		j.state, j.end = stateFinished, at
		j.stops++
		for i := range j.history {
			if !j.history[i].savepoint {
				j.history[i].discarded = true
			}
		}
		if j.latest != nil {
			j.latest.discarded = true
		}
		j.failPending()
	case op.cancelJob:
		j.state, j.end = stateCanceled, at
		j.failPending()
	}
}

// failPending fails the savepoints still in progress when the job ends.
func (j *job) failPending() {
	for _, op := range j.pending {
		f := suspendingFailure()
		op.done, op.failure = true, &f
	}
	j.pending = nil
}

func (j *job) tasksNotRunning() failureCause {
	return javaError("org.apache.flink.runtime.checkpoint.CheckpointException",
		fmt.Sprintf("Checkpoint triggering task %s (1/%d) of job %s is not being executed at the moment. Aborting checkpoint. Failure reason: Not all required tasks are currently running.",
			vertexNames[0], j.parallelism, j.id))
}

// syncDisk keeps the chk-N directory of the latest retained checkpoint on
// disk, as Flink does with one retained checkpoint: written when it
// completes, the subsumed one deleted. A finished job keeps none. Disk
// errors are recorded, not fatal: they show in JobInfo.DiskError.
func (j *job) syncDisk() {
	dir := j.jobDir()
	if dir.local == "" {
		return
	}
	remove := func(id int64) {
		chk := filepath.Join(dir.local, fmt.Sprintf("chk-%d", id))
		// Non-recursive, like Flink: unknown files keep the directory.
		for _, p := range []string{filepath.Join(chk, "_metadata"), chk} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				j.diskErr = err.Error()
			}
		}
	}
	if j.state == stateFinished {
		if j.onDisk != 0 {
			remove(j.onDisk)
			j.onDisk = 0
		}
		return
	}
	if j.latest == nil || j.latest.id == j.onDisk {
		return
	}
	chk := filepath.Join(dir.local, fmt.Sprintf("chk-%d", j.latest.id))
	if err := writeSnapshot(chk, encodeMetadata(j.latest.id, j.operators(), retainedCheckpointKind())); err != nil {
		j.diskErr = err.Error()
		return
	}
	if j.onDisk != 0 {
		remove(j.onDisk)
	}
	j.onDisk = j.latest.id
}

// vertexNames are the two operator chains of the project's sample job.
var vertexNames = [2]string{"Source: sequence-source -> throttle", "keyed-payload-state -> Sink: discard-sink"}

// vertexID derives a stable vertex (and head operator) ID from the job
// name, as stable operator uids give a real job the same IDs on restart.
func vertexID(jobName string, i int) [16]byte {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s#%d", jobName, i)))
	var id [16]byte
	copy(id[:], sum[:16])
	return id
}

// maxParallelism is Flink's default: 1.5 × parallelism rounded up to a
// power of two, within [128, 32768].
func (j *job) maxParallelism() int {
	m := 128
	for m < j.parallelism+j.parallelism/2 && m < 32768 {
		m *= 2
	}
	return m
}

func (j *job) operators() []operatorRef {
	ops := make([]operatorRef, len(vertexNames))
	for i := range ops {
		ops[i] = operatorRef{id: vertexID(j.name, i), parallelism: int32(j.parallelism), maxParallelism: int32(j.maxParallelism())}
	}
	return ops
}
