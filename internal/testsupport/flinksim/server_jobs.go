package flinksim

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"
)

// Job endpoints. The view helpers on *job are called with j.mu held.

func (j *job) duration(now time.Time) int64 {
	return j.clock(now).Sub(j.start).Milliseconds()
}

func (j *job) lastModification() time.Time {
	if j.terminal() {
		return j.end
	}
	return j.start
}

// vertexState is the ExecutionState of the job's tasks.
func (j *job) vertexState() string {
	switch j.state {
	case stateRunning:
		return "RUNNING"
	case stateFinished:
		return "FINISHED"
	case stateFailed:
		return "FAILED"
	default:
		return "CANCELED"
	}
}

var executionStates = []string{"CREATED", "SCHEDULED", "DEPLOYING", "RUNNING", "FINISHED", "CANCELING",
	"CANCELED", "FAILED", "RECONCILING", "INITIALIZING"}

func (j *job) taskCounts() taskCounts {
	var tc taskCounts
	if j.initFailed() {
		return tc
	}
	n := len(vertexNames) * j.parallelism
	tc.Total = n
	switch j.vertexState() {
	case "RUNNING":
		tc.Running = n
	case "FINISHED":
		tc.Finished = n
	case "FAILED":
		tc.Failed = n
	default:
		tc.Canceled = n
	}
	return tc
}

// initFailed reports a job that failed before it ran (bad restore).
func (j *job) initFailed() bool { return j.state == stateFailed && !j.restartLoop && j.failure != nil }

func (j *job) timestamps(now time.Time) map[string]int64 {
	ts := make(map[string]int64, len(allStates))
	for _, s := range allStates {
		ts[s] = 0
	}
	start := j.start.UnixMilli()
	ts["INITIALIZING"], ts["CREATED"] = start, start
	switch {
	case j.initFailed():
	case j.restartLoop:
		// The job runs, fails and restarts every restartBackoff.
		last := j.start.Add(time.Duration(j.attempts(now)-1) * restartBackoff)
		ts["RUNNING"], ts["RESTARTING"] = last.UnixMilli(), last.UnixMilli()+1
	default:
		ts["RUNNING"] = start
	}
	if j.terminal() {
		ts[j.state] = j.end.UnixMilli()
		if j.state == stateCanceled {
			ts["CANCELLING"] = j.end.UnixMilli()
		}
	}
	return ts
}

func (h *handler) jobDetails(j *job) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.advance(h.now)
	vertices := []map[string]any{}
	statusCounts := map[string]int{}
	for _, s := range executionStates {
		statusCounts[s] = 0
	}
	if !j.initFailed() {
		vs := j.vertexState()
		statusCounts[vs] = len(vertexNames)
		for i, name := range vertexNames {
			id := vertexID(j.name, i)
			tasks := map[string]int{}
			for _, s := range executionStates {
				tasks[s] = 0
			}
			tasks[vs] = j.parallelism
			vertices = append(vertices, map[string]any{
				"id": fmt.Sprintf("%x", id), "name": name, "maxParallelism": j.maxParallelism(), "parallelism": j.parallelism,
				"status": vs, "start-time": millis(j.start), "end-time": millis(j.end), "duration": j.duration(h.now),
				"tasks": tasks, "metrics": map[string]any{"read-bytes": 0, "read-bytes-complete": true, "write-bytes": 0,
					"write-bytes-complete": true, "read-records": 0, "read-records-complete": true, "write-records": 0,
					"write-records-complete": true, "accumulated-backpressured-time": 0, "accumulated-idle-time": 0,
					"accumulated-busy-time": 0},
			})
		}
	}
	h.json(http.StatusOK, map[string]any{
		"jid": j.id, "name": j.name, "isStoppable": false, "state": j.state, "job-type": "STREAMING",
		"start-time": millis(j.start), "end-time": millis(j.end), "duration": j.duration(h.now),
		"maxParallelism": -1, "now": h.now.UnixMilli(), "timestamps": j.timestamps(h.now),
		"vertices": vertices, "status-counts": statusCounts,
		"plan": map[string]any{"jid": j.id, "name": j.name, "type": "STREAMING", "nodes": []any{}},
	})
}

func (h *handler) jobStatus(j *job) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.advance(h.now)
	h.json(http.StatusOK, map[string]string{"status": j.state})
}

type rootException struct {
	ExceptionName        string            `json:"exceptionName"`
	Stacktrace           string            `json:"stacktrace"`
	Timestamp            int64             `json:"timestamp"`
	TaskName             *string           `json:"taskName"`
	Endpoint             *string           `json:"endpoint"`
	TaskManagerID        *string           `json:"taskManagerId"`
	FailureLabels        map[string]string `json:"failureLabels"`
	ConcurrentExceptions []any             `json:"concurrentExceptions"`
}

func (h *handler) jobExceptions(j *job) {
	limit := 20 // Flink's default for maxExceptions
	if v := h.r.URL.Query().Get("maxExceptions"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			h.fail(http.StatusBadRequest, fmt.Sprintf("Bad request, could not parse parameters: Cannot resolve query parameter (maxExceptions) from value \"%s\".", v))
			return
		}
		limit = n
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.advance(h.now)
	var all []rootException
	switch {
	case j.initFailed():
		all = append(all, rootException{ExceptionName: j.failure.class, Stacktrace: j.failure.trace, Timestamp: j.start.UnixMilli(),
			FailureLabels: map[string]string{}, ConcurrentExceptions: []any{}})
	case j.restartLoop:
		// Newest first; the history keeps the last exceptionHistorySize.
		n := j.attempts(h.now)
		task := fmt.Sprintf("%s (1/%d)", vertexNames[1], j.parallelism)
		tm, ep := "flinksim-taskmanager-1", "127.0.0.1:6121"
		for i := n - 1; i >= 0 && i >= n-exceptionHistorySize; i-- {
			all = append(all, rootException{ExceptionName: j.failure.class, Stacktrace: j.failure.trace,
				Timestamp: j.start.Add(time.Duration(i) * restartBackoff).UnixMilli(), TaskName: &task, Endpoint: &ep, TaskManagerID: &tm,
				FailureLabels: map[string]string{}, ConcurrentExceptions: []any{}})
		}
	}
	entries := all
	if len(entries) > limit {
		entries = entries[:limit]
	}
	out := map[string]any{
		"root-exception": nil, "timestamp": nil, "all-exceptions": []any{}, "truncated": false,
		"exceptionHistory": map[string]any{"entries": append([]rootException{}, entries...), "truncated": len(all) > len(entries)},
	}
	if len(all) > 0 {
		out["root-exception"], out["timestamp"] = all[0].Stacktrace, all[0].Timestamp
	}
	h.json(http.StatusOK, out)
}

func (h *handler) jobConfig(j *job) {
	j.mu.Lock()
	ck := ""
	if j.hasCkDir {
		ck = j.ckDir.qualified
	}
	j.mu.Unlock()
	h.json(http.StatusOK, h.c.config(ck))
}

type checkpointJSON struct {
	ClassName               string         `json:"className"`
	ID                      int64          `json:"id"`
	Status                  string         `json:"status"`
	IsSavepoint             bool           `json:"is_savepoint"`
	SavepointFormat         *string        `json:"savepointFormat"`
	TriggerTimestamp        int64          `json:"trigger_timestamp"`
	LatestAckTimestamp      int64          `json:"latest_ack_timestamp"`
	CheckpointedSize        int64          `json:"checkpointed_size"`
	StateSize               int64          `json:"state_size"`
	EndToEndDuration        int64          `json:"end_to_end_duration"`
	AlignmentBuffered       int64          `json:"alignment_buffered"`
	ProcessedData           int64          `json:"processed_data"`
	PersistedData           int64          `json:"persisted_data"`
	NumSubtasks             int            `json:"num_subtasks"`
	NumAcknowledgedSubtasks int            `json:"num_acknowledged_subtasks"`
	CheckpointType          string         `json:"checkpoint_type"`
	Tasks                   map[string]any `json:"tasks"`
	ExternalPath            string         `json:"external_path"`
	Discarded               bool           `json:"discarded"`
}

func (j *job) checkpointView(r *checkpointRecord) *checkpointJSON {
	if r == nil {
		return nil
	}
	subtasks := len(vertexNames) * j.parallelism
	v := &checkpointJSON{ClassName: "completed", ID: r.id, Status: "COMPLETED", IsSavepoint: r.savepoint,
		TriggerTimestamp: r.triggered.UnixMilli(), LatestAckTimestamp: r.completed.UnixMilli(),
		EndToEndDuration: r.completed.Sub(r.triggered).Milliseconds(), NumSubtasks: subtasks, NumAcknowledgedSubtasks: subtasks,
		CheckpointType: r.kind, Tasks: map[string]any{}, ExternalPath: r.path, Discarded: r.discarded}
	if r.savepoint {
		f := r.format
		v.SavepointFormat = &f
	}
	return v
}

func (h *handler) checkpoints(j *job) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.advance(h.now)
	if j.initFailed() {
		h.fail(http.StatusNotFound, "Checkpointing has not been enabled.")
		return
	}
	history := make([]*checkpointJSON, 0, len(j.history))
	var e2e []int64
	for i := len(j.history) - 1; i >= 0; i-- {
		v := j.checkpointView(&j.history[i])
		history = append(history, v)
		e2e = append(e2e, v.EndToEndDuration)
	}
	zero := map[string]any{"min": 0, "max": 0, "avg": 0, "p50": 0.0, "p90": 0.0, "p95": 0.0, "p99": 0.0, "p999": 0.0}
	summary := map[string]any{"checkpointed_size": zero, "state_size": zero, "alignment_buffered": zero,
		"processed_data": zero, "persisted_data": zero, "end_to_end_duration": durationSummary(e2e)}
	var restored any
	if r := j.restored; r != nil {
		restored = map[string]any{"id": r.id, "restore_timestamp": r.at.UnixMilli(), "is_savepoint": r.savepoint, "external_path": r.path}
	}
	restoredCount := 0
	if j.restored != nil {
		restoredCount = 1
	}
	h.json(http.StatusOK, map[string]any{
		"counts": map[string]int64{"restored": int64(restoredCount), "total": j.completed, "in_progress": 0,
			"completed": j.completed, "failed": 0},
		"summary": summary,
		"latest": map[string]any{"completed": j.checkpointView(j.latest), "savepoint": j.checkpointView(j.latestSP),
			"failed": nil, "restored": restored},
		"history": history,
	})
}

// durationSummary is a StatsSummaryDto over the values (nearest rank).
func durationSummary(v []int64) map[string]any {
	if len(v) == 0 {
		return map[string]any{"min": 0, "max": 0, "avg": 0, "p50": 0.0, "p90": 0.0, "p95": 0.0, "p99": 0.0, "p999": 0.0}
	}
	s := append([]int64(nil), v...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	var sum int64
	for _, x := range s {
		sum += x
	}
	q := func(p float64) float64 { return float64(s[min(len(s)-1, int(p*float64(len(s))))]) }
	return map[string]any{"min": s[0], "max": s[len(s)-1], "avg": sum / int64(len(s)),
		"p50": q(0.5), "p90": q(0.9), "p95": q(0.95), "p99": q(0.99), "p999": q(0.999)}
}

func (h *handler) checkpointDetails(j *job, idText string) {
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil {
		h.fail(http.StatusBadRequest, fmt.Sprintf("Bad request, could not parse parameters: Cannot resolve path parameter (checkpointid) from value \"%s\".", idText))
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.advance(h.now)
	for i := range j.history {
		if j.history[i].id == id {
			h.json(http.StatusOK, j.checkpointView(&j.history[i]))
			return
		}
	}
	h.fail(http.StatusNotFound, fmt.Sprintf("Could not find checkpointing statistics for checkpoint %d.", id))
}

func (h *handler) checkpointConfig(j *job) {
	j.mu.Lock()
	failed := j.initFailed()
	j.mu.Unlock()
	if failed {
		h.fail(http.StatusNotFound, "Checkpointing is not enabled for this job ("+j.id+").")
		return
	}
	storage := "JobManagerCheckpointStorage"
	if j.hasCkDir {
		storage = "FileSystemCheckpointStorage"
	}
	h.json(http.StatusOK, map[string]any{
		"mode": "exactly_once", "interval": h.f.opts.CheckpointInterval.Milliseconds(), "timeout": 600000, "min_pause": 0,
		"max_concurrent": 1, "externalization": map[string]bool{"enabled": true, "delete_on_cancellation": false},
		"state_backend": "EmbeddedRocksDBStateBackend", "checkpoint_storage": storage, "unaligned_checkpoints": false,
		"tolerable_failed_checkpoints": 0, "aligned_checkpoint_timeout": 0, "checkpoints_after_tasks_finish": true,
		"state_changelog_enabled": false, "changelog_periodic_materialization_interval": 600000, "changelog_storage": "memory",
	})
}

// ---- savepoints, stop, cancel

type triggerBody struct {
	// Stop-with-savepoint names.
	TargetDirectory string `json:"targetDirectory"`
	Drain           bool   `json:"drain"`
	// Savepoint names.
	TargetDirectoryDash string `json:"target-directory"`
	CancelJob           bool   `json:"cancel-job"`
	// Both.
	FormatType string `json:"formatType"`
	TriggerID  string `json:"triggerId"`
}

// triggerSavepoint serves POST /jobs/{id}/stop and /jobs/{id}/savepoints;
// j is nil for a job the cluster does not know.
func (h *handler) triggerSavepoint(j *job, jobID string, stop bool) {
	var b triggerBody
	bodyType, dirField := "SavepointTriggerRequestBody", "target-directory"
	if stop {
		bodyType, dirField = "StopWithSavepointRequestBody", "targetDirectory"
	}
	if !h.decode(&b, bodyType) {
		return
	}
	// Each endpoint knows only its own field names.
	if stop && (b.TargetDirectoryDash != "" || b.CancelJob) || !stop && (b.TargetDirectory != "" || b.Drain) {
		h.badFormat(bodyType)
		return
	}
	target := b.TargetDirectory + b.TargetDirectoryDash
	switch b.FormatType {
	case "":
		b.FormatType = "CANONICAL"
	case "CANONICAL", "NATIVE":
	default:
		h.badFormat(bodyType)
		return
	}
	if b.TriggerID == "" {
		b.TriggerID = randomHex(32)
	} else if !hex32.MatchString(b.TriggerID) {
		h.badFormat(bodyType)
		return
	}
	op := &operation{triggerID: b.TriggerID, stop: stop, cancelJob: b.CancelJob, drain: b.Drain, format: b.FormatType, triggered: h.now}
	if target == "" {
		if !h.c.hasSPDir {
			h.fail(http.StatusBadRequest, "Config key [state.savepoints.dir] is not set. Property ["+dirField+"] must be provided.")
			return
		}
		op.target = h.c.spDir
	} else {
		loc, err := parseLocation(target)
		var unsupported errUnsupportedScheme
		switch {
		case errors.As(err, &unsupported):
			f := javaError("java.util.concurrent.CompletionException",
				"org.apache.flink.runtime.checkpoint.CheckpointException: An Exception occurred while triggering the checkpoint. IO-problem detected.",
				"org.apache.flink.core.fs.UnsupportedFileSystemSchemeException: "+err.Error())
			op.failure = &f
		case err != nil:
			f := javaError("java.util.concurrent.CompletionException",
				"org.apache.flink.runtime.checkpoint.CheckpointException: An Exception occurred while triggering the checkpoint. IO-problem detected.",
				"java.lang.IllegalArgumentException: Invalid target directory "+target+": "+err.Error())
			op.failure = &f
		}
		op.target = loc
	}

	if j == nil {
		// Flink registers the operation even for an unknown job, then
		// reports it failed.
		h.c.mu.Lock()
		key := jobID + "/" + b.TriggerID
		known, repeat := h.c.orphanOps[key]
		if !repeat {
			f := jobNotFoundFailure(jobID)
			op.failure, op.done = &f, true
			h.c.orphanOps[key] = op
		}
		h.c.mu.Unlock()
		if repeat {
			h.repeatedFailure(known)
			return
		}
		h.json(http.StatusAccepted, map[string]string{"request-id": b.TriggerID})
		return
	}

	j.mu.Lock()
	defer j.mu.Unlock()
	j.advance(h.now)
	if stop {
		j.stopRequests++
	}
	if known, ok := j.ops[b.TriggerID]; ok {
		// Same trigger ID: the same operation. Flink answers a repeat of a
		// failed one with its failure.
		if known.done && known.failure != nil {
			h.repeatedFailure(known)
			return
		}
		h.json(http.StatusAccepted, map[string]string{"request-id": b.TriggerID})
		return
	}
	j.ops[b.TriggerID] = op
	if stop {
		j.stopOps++
	}
	switch {
	case op.failure != nil:
		op.done = true
	case j.terminal():
		f := jobNotFoundFailure(j.id)
		op.failure, op.done = &f, true
	case j.state != stateRunning:
		f := j.tasksNotRunning()
		op.failure, op.done = &f, true
	default:
		op.doneAt = h.now.Add(h.f.opts.SavepointDelay)
		j.pending = append(j.pending, op)
	}
	h.json(http.StatusAccepted, map[string]string{"request-id": b.TriggerID})
}

// repeatedFailure answers a trigger that repeats the ID of a failed
// operation: Flink's operation cache hands back the failure, which the REST
// layer reports as an internal error.
func (h *handler) repeatedFailure(op *operation) {
	h.fail(http.StatusInternalServerError, "Internal server error.",
		"<Exception on server side:\n"+op.failure.trace+"\n\nEnd of exception on server side>")
}

func (h *handler) savepointStatus(j *job, jobID, triggerID string) {
	var op *operation
	if j == nil {
		h.c.mu.RLock()
		op = h.c.orphanOps[jobID+"/"+triggerID]
		h.c.mu.RUnlock()
	} else {
		j.mu.Lock()
		defer j.mu.Unlock()
		j.advance(h.now)
		op = j.ops[triggerID]
	}
	if op == nil {
		h.fail(http.StatusNotFound, fmt.Sprintf("There is no savepoint operation with triggerId=%s for job %s.", triggerID, jobID))
		return
	}
	if !op.done {
		h.json(http.StatusOK, map[string]any{"status": map[string]string{"id": "IN_PROGRESS"}, "operation": nil})
		return
	}
	operation := map[string]any{"location": op.location}
	if op.failure != nil {
		operation = map[string]any{"failure-cause": map[string]string{"class": op.failure.class, "stack-trace": op.failure.trace}}
	}
	h.json(http.StatusOK, map[string]any{"status": map[string]string{"id": "COMPLETED"}, "operation": operation})
}

func (h *handler) cancelJob(j *job) {
	switch h.r.URL.Query().Get("mode") {
	case "", "cancel":
	default:
		h.fail(http.StatusBadRequest, fmt.Sprintf("Bad request, could not parse parameters: Cannot resolve query parameter (mode) from value \"%s\".", h.r.URL.Query().Get("mode")))
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.advance(h.now)
	j.cancels++
	switch j.state {
	case stateRunning, stateRestarting:
		j.state, j.end = stateCanceled, h.now
		j.failPending()
		j.syncDisk()
	case stateCanceled:
	default:
		h.fail(http.StatusConflict, fmt.Sprintf("Job cancellation failed because the job has already reached another terminal state (%s).", j.state))
		return
	}
	h.json(http.StatusAccepted, map[string]any{})
}
