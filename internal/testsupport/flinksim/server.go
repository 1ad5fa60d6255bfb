package flinksim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

const (
	// maxJSONBody bounds request bodies other than jar uploads.
	maxJSONBody = 1 << 20
	// maxUpload is Flink's rest.server.max-content-length default.
	maxUpload = 100 << 20
	// defaultJobName is what the project's sample job calls itself
	// without --job-name.
	defaultJobName = "stateful-sample-job"
)

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

// ServeHTTP routes <clusterID>/[v1/]<Flink REST path> to the cluster.
func (f *Fleet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := &handler{f: f, w: w, r: r, now: time.Now()}
	segs, ok := splitPath(r.URL.EscapedPath())
	if !ok || len(segs) == 0 {
		h.notFound()
		return
	}
	if h.c = f.clusterAt(segs[0]); h.c == nil {
		h.notFound()
		return
	}
	rest := segs[1:]
	if len(rest) > 0 && rest[0] == "v1" {
		rest = rest[1:] // Flink registers every handler with and without /v1
	}
	h.route(rest)
}

func splitPath(escaped string) ([]string, bool) {
	trimmed := strings.Trim(escaped, "/")
	if trimmed == "" {
		return nil, true
	}
	segs := strings.Split(trimmed, "/")
	for i, s := range segs {
		u, err := url.PathUnescape(s)
		if err != nil {
			return nil, false
		}
		segs[i] = u
	}
	return segs, true
}

// handler serves one request.
type handler struct {
	f   *Fleet
	c   *cluster
	w   http.ResponseWriter
	r   *http.Request
	now time.Time
}

func is(segs []string, want ...string) bool {
	if len(segs) != len(want) {
		return false
	}
	for i := range want {
		if want[i] != "*" && segs[i] != want[i] {
			return false
		}
	}
	return true
}

func (h *handler) route(p []string) {
	m := h.r.Method
	switch {
	case m == http.MethodGet && is(p, "overview"):
		h.clusterOverview()
	case m == http.MethodGet && is(p, "config"):
		h.dashboardConfig()
	case m == http.MethodGet && is(p, "jobmanager", "config"):
		h.json(http.StatusOK, h.c.config(""))
	case m == http.MethodGet && is(p, "jobs"):
		h.jobIDs()
	case m == http.MethodGet && is(p, "jobs", "overview"):
		h.jobsOverview()
	case len(p) >= 2 && p[0] == "jobs":
		h.jobRoute(p[1], p[2:])
	case m == http.MethodGet && is(p, "jars"):
		h.listJars()
	case m == http.MethodPost && is(p, "jars", "upload"):
		h.uploadJar()
	case m == http.MethodPost && is(p, "jars", "*", "run"):
		h.runJar(p[1])
	case m == http.MethodDelete && is(p, "jars", "*"):
		h.deleteJar(p[1])
	default:
		h.notFound()
	}
}

func (h *handler) jobRoute(jobID string, p []string) {
	m := h.r.Method
	type route struct {
		fn func(*job)
		// orphan serves an unknown job ID instead of the generic 404.
		orphan func()
	}
	var rt route
	switch {
	case m == http.MethodGet && is(p):
		rt = route{fn: h.jobDetails}
	case m == http.MethodPatch && is(p):
		rt = route{fn: h.cancelJob, orphan: func() { h.fail(http.StatusNotFound, "Job could not be found.") }}
	case m == http.MethodGet && is(p, "status"):
		rt = route{fn: h.jobStatus}
	case m == http.MethodGet && is(p, "exceptions"):
		rt = route{fn: h.jobExceptions}
	case m == http.MethodGet && is(p, "jobmanager", "config"):
		rt = route{fn: h.jobConfig}
	case m == http.MethodGet && is(p, "checkpoints"):
		rt = route{fn: h.checkpoints}
	case m == http.MethodGet && is(p, "checkpoints", "config"):
		rt = route{fn: h.checkpointConfig}
	case m == http.MethodGet && is(p, "checkpoints", "details", "*"):
		rt = route{fn: func(j *job) { h.checkpointDetails(j, p[2]) }}
	case m == http.MethodPost && (is(p, "stop") || is(p, "savepoints")):
		stop := p[0] == "stop"
		rt = route{fn: func(j *job) { h.triggerSavepoint(j, jobID, stop) }, orphan: func() { h.triggerSavepoint(nil, jobID, stop) }}
	case m == http.MethodGet && is(p, "savepoints", "*"):
		rt = route{fn: func(j *job) { h.savepointStatus(j, jobID, p[1]) }, orphan: func() { h.savepointStatus(nil, jobID, p[1]) }}
	}
	if rt.fn == nil {
		h.notFound()
		return
	}
	if !hex32.MatchString(jobID) {
		h.fail(http.StatusBadRequest, fmt.Sprintf("Bad request, could not parse parameters: Cannot resolve path parameter (jobid) from value \"%s\".", jobID))
		return
	}
	j := h.c.job(jobID)
	switch {
	case j != nil:
		rt.fn(j)
	case rt.orphan != nil:
		rt.orphan()
	default:
		h.fail(http.StatusNotFound, "org.apache.flink.runtime.rest.NotFoundException: Job "+jobID+" not found\n\tat org.apache.flink.runtime.rest.handler.job.AbstractExecutionGraphHandler.lambda$handleRequest$1(AbstractExecutionGraphHandler.java:99)")
	}
}

// ---- responses

func (h *handler) json(status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		h.fail(http.StatusInternalServerError, "Internal server error.", "<Exception on server side:\n"+err.Error()+"\nEnd of exception on server side>")
		return
	}
	h.w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	h.w.WriteHeader(status)
	_, _ = h.w.Write(data)
}

// fail answers with Flink's error envelope.
func (h *handler) fail(status int, errs ...string) {
	h.json(status, map[string][]string{"errors": errs})
}

func (h *handler) notFound() {
	h.fail(http.StatusNotFound, "Not found: "+h.r.URL.Path)
}

func (h *handler) badFormat(bodyType string) {
	h.fail(http.StatusBadRequest, "Request did not match expected format "+bodyType+".")
}

// decode reads a JSON body strictly, as Flink's REST server does (unknown
// fields are rejected); an empty body counts as {}.
func (h *handler) decode(v any, bodyType string) bool {
	data, err := io.ReadAll(http.MaxBytesReader(h.w, h.r.Body, maxJSONBody))
	if err != nil {
		h.fail(http.StatusRequestEntityTooLarge, "Request entity too large.")
		return false
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return true
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		h.badFormat(bodyType)
		return false
	}
	return true
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}

// ---- cluster endpoints

func (h *handler) clusterOverview() {
	counts := map[string]int{}
	slots := 0
	for _, j := range h.c.list() {
		j.mu.Lock()
		j.advance(h.now)
		counts[j.state]++
		if !j.terminal() {
			slots += j.parallelism
		}
		j.mu.Unlock()
	}
	// Enough TaskManagers of four slots for every live job, plus one spare.
	tms := slots/4 + 1
	h.json(http.StatusOK, map[string]any{
		"taskmanagers": tms, "slots-total": tms * 4, "slots-available": tms*4 - slots,
		"slots-free-and-blocked": 0, "taskmanagers-blocked": 0,
		"jobs-running": counts[stateRunning] + counts[stateRestarting], "jobs-finished": counts[stateFinished],
		"jobs-cancelled": counts[stateCanceled], "jobs-failed": counts[stateFailed],
		"flink-version": h.f.opts.FlinkVersion, "flink-commit": "flinksim",
	})
}

func (h *handler) dashboardConfig() {
	h.json(http.StatusOK, map[string]any{
		"refresh-interval": 3000, "timezone-name": "Coordinated Universal Time", "timezone-offset": 0,
		"flink-version": h.f.opts.FlinkVersion, "flink-revision": "flinksim @ " + h.now.UTC().Format("2006-01-02T15:04:05+00:00"),
		"features": map[string]bool{"web-submit": true, "web-cancel": true, "web-rescale": false, "web-history": false},
	})
}

type configEntry struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// config is the effective configuration; ckDir overrides the cluster's
// checkpoint dir (a job's own setting).
func (c *cluster) config(ckDir string) []configEntry {
	if dir, ok := c.checkpointDir(); ckDir == "" && ok {
		ckDir = dir.qualified
	}
	cfg := []configEntry{
		{"execution.checkpointing.num-retained", "1"},
		{"execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION"},
		{"state.backend.type", "rocksdb"},
		{"kubernetes.cluster-id", c.id},
	}
	if ckDir != "" {
		cfg = append(cfg, configEntry{"execution.checkpointing.dir", ckDir})
	}
	if c.hasSPDir {
		cfg = append(cfg, configEntry{"execution.checkpointing.savepoint-dir", c.spDir.qualified})
	}
	return cfg
}

func (h *handler) jobIDs() {
	type entry struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	out := []entry{}
	for _, j := range h.c.list() {
		j.mu.Lock()
		j.advance(h.now)
		out = append(out, entry{j.id, j.state})
		j.mu.Unlock()
	}
	h.json(http.StatusOK, map[string]any{"jobs": out})
}

type jobOverview struct {
	JID              string     `json:"jid"`
	Name             string     `json:"name"`
	State            string     `json:"state"`
	StartTime        int64      `json:"start-time"`
	EndTime          int64      `json:"end-time"`
	Duration         int64      `json:"duration"`
	LastModification int64      `json:"last-modification"`
	Tasks            taskCounts `json:"tasks"`
}

// taskCounts is the tasks map of /jobs/overview: subtasks per
// ExecutionState, lower-cased, plus the total.
type taskCounts struct {
	Running      int `json:"running"`
	Canceling    int `json:"canceling"`
	Canceled     int `json:"canceled"`
	Total        int `json:"total"`
	Created      int `json:"created"`
	Scheduled    int `json:"scheduled"`
	Deploying    int `json:"deploying"`
	Reconciling  int `json:"reconciling"`
	Finished     int `json:"finished"`
	Initializing int `json:"initializing"`
	Failed       int `json:"failed"`
}

func (h *handler) jobsOverview() {
	jobs := h.c.list()
	out := make([]jobOverview, 0, len(jobs))
	for _, j := range jobs {
		j.mu.Lock()
		j.advance(h.now)
		out = append(out, jobOverview{JID: j.id, Name: j.name, State: j.state,
			StartTime: millis(j.start), EndTime: millis(j.end), Duration: j.duration(h.now),
			LastModification: j.lastModification().UnixMilli(), Tasks: j.taskCounts()})
		j.mu.Unlock()
	}
	h.json(http.StatusOK, map[string]any{"jobs": out})
}
