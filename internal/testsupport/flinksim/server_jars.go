package flinksim

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"regexp"
	"sort"
	"strings"
)

// Jar endpoints: upload, list, delete and run (submission, with restore).

func (h *handler) listJars() {
	h.c.mu.RLock()
	jars := make([]*jar, 0, len(h.c.jars))
	for _, j := range h.c.jars {
		jars = append(jars, j)
	}
	h.c.mu.RUnlock()
	sort.Slice(jars, func(a, b int) bool {
		if !jars[a].uploaded.Equal(jars[b].uploaded) {
			return jars[a].uploaded.After(jars[b].uploaded)
		}
		return jars[a].id < jars[b].id
	})
	files := make([]map[string]any, 0, len(jars))
	for _, j := range jars {
		files = append(files, map[string]any{"id": j.id, "name": j.name, "uploaded": j.uploaded.UnixMilli(), "entry": []any{}})
	}
	h.json(http.StatusOK, map[string]any{"address": h.f.base, "files": files})
}

func (h *handler) uploadJar() {
	mt, _, err := mime.ParseMediaType(h.r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		h.fail(http.StatusBadRequest, "Exactly 1 file must be sent, received 0.")
		return
	}
	h.r.Body = http.MaxBytesReader(h.w, h.r.Body, maxUpload)
	mr, err := h.r.MultipartReader()
	if err != nil {
		h.fail(http.StatusBadRequest, "Failed to parse the multipart request: "+err.Error())
		return
	}
	var names []string
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil && part.FileName() != "" {
			names = append(names, part.FileName())
		}
		if err == nil {
			// Only the jar's name matters to the simulation.
			_, err = io.Copy(io.Discard, part)
		}
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				h.fail(http.StatusRequestEntityTooLarge, "Request entity too large.")
				return
			}
			h.fail(http.StatusBadRequest, "Failed to parse the multipart request: "+err.Error())
			return
		}
	}
	if len(names) != 1 {
		h.fail(http.StatusBadRequest, fmt.Sprintf("Exactly 1 file must be sent, received %d.", len(names)))
		return
	}
	name := path.Base(strings.ReplaceAll(names[0], "\\", "/"))
	if !strings.HasSuffix(name, ".jar") {
		h.fail(http.StatusBadRequest, "Only Jar files are allowed.")
		return
	}
	j := &jar{id: randomUUID() + "_" + name, name: name, uploaded: h.now}
	h.c.mu.Lock()
	h.c.jars[j.id] = j
	h.c.mu.Unlock()
	h.json(http.StatusOK, map[string]string{"filename": h.c.uploadDir + "/" + j.id, "status": "success"})
}

func randomUUID() string {
	s := randomHex(32)
	return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
}

func (h *handler) deleteJar(id string) {
	h.c.mu.Lock()
	_, ok := h.c.jars[id]
	delete(h.c.jars, id)
	h.c.mu.Unlock()
	if !ok {
		h.fail(http.StatusBadRequest, fmt.Sprintf("File %s does not exist in %s.", id, h.c.uploadDir))
		return
	}
	h.json(http.StatusOK, map[string]any{})
}

type jarRunBody struct {
	AllowNonRestoredState bool              `json:"allowNonRestoredState"`
	ClaimMode             string            `json:"claimMode"`
	EntryClass            string            `json:"entryClass"`
	FlinkConfiguration    map[string]string `json:"flinkConfiguration"`
	JobID                 string            `json:"jobId"`
	Parallelism           int               `json:"parallelism"`
	ProgramArgs           string            `json:"programArgs"`
	ProgramArgsList       []string          `json:"programArgsList"`
	RestoreMode           string            `json:"restoreMode"`
	SavepointPath         string            `json:"savepointPath"`
}

// runFailure answers a failed submission the way Flink's JarRunHandler does.
func (h *handler) runFailure(cause string) {
	h.fail(http.StatusBadRequest, "org.apache.flink.runtime.rest.handler.RestHandlerException: Could not execute application.\n"+
		"\tat org.apache.flink.runtime.webmonitor.handlers.JarRunHandler.lambda$handleRequest$1(JarRunHandler.java:114)\n"+
		"Caused by: "+cause)
}

var uriWithScheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*://.*`)

func (h *handler) runJar(jarID string) {
	h.c.mu.RLock()
	_, ok := h.c.jars[jarID]
	h.c.mu.RUnlock()
	if !ok {
		h.fail(http.StatusBadRequest, fmt.Sprintf("Jar file %s/%s does not exist", h.c.uploadDir, jarID))
		return
	}
	var b jarRunBody
	if !h.decode(&b, "JarRunRequestBody") {
		return
	}
	mode := b.ClaimMode
	if mode == "" {
		mode = b.RestoreMode
	}
	switch mode {
	case "", "CLAIM", "NO_CLAIM", "LEGACY":
	default:
		h.badFormat("JarRunRequestBody")
		return
	}
	if b.JobID == "" {
		b.JobID = randomHex(32)
	} else if !hex32.MatchString(b.JobID) {
		h.badFormat("JarRunRequestBody")
		return
	}
	args := b.ProgramArgsList
	if len(args) == 0 {
		args = strings.Fields(b.ProgramArgs)
	}
	// The arguments of the project's sample job that change what a job
	// looks like from outside; others are accepted and ignored.
	name, ckArg, failOnRestore := defaultJobName, "", false
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--fail-on-restore":
			failOnRestore = true
		case "--job-name", "--checkpoint-dir":
			if i+1 >= len(args) || strings.TrimSpace(args[i+1]) == "" {
				h.runFailure("java.lang.IllegalArgumentException: " + args[i] + " needs a value")
				return
			}
			if args[i] == "--job-name" {
				name = args[i+1]
			} else {
				ckArg = args[i+1]
			}
			i++
		}
	}
	if ckArg != "" && !uriWithScheme.MatchString(ckArg) {
		h.runFailure("java.lang.IllegalArgumentException: --checkpoint-dir '" + ckArg + "' must be a URI with a scheme")
		return
	}
	if h.c.job(b.JobID) != nil {
		h.duplicate(b.JobID)
		return
	}

	ck, hasCk := h.c.checkpointDir()
	for _, d := range []string{ckArg, b.FlinkConfiguration["execution.checkpointing.dir"], b.FlinkConfiguration["state.checkpoints.dir"]} {
		if d == "" {
			continue
		}
		loc, err := parseLocation(d)
		var unsupported errUnsupportedScheme
		if err != nil && !errors.As(err, &unsupported) {
			h.runFailure("java.lang.IllegalArgumentException: checkpoint directory " + d + ": " + err.Error())
			return
		}
		ck, hasCk = loc, true
		break
	}
	j := newJob(h.f, b.JobID, name, b.Parallelism, ck, hasCk, h.now)
	j.restoreMode = mode
	if b.SavepointPath != "" {
		h.restore(j, b.SavepointPath, failOnRestore)
	}
	h.c.mu.Lock()
	if _, dup := h.c.jobs[b.JobID]; dup {
		h.c.mu.Unlock()
		h.duplicate(b.JobID)
		return
	}
	h.c.jobs[j.id] = j
	h.c.order = append(h.c.order, j)
	h.c.mu.Unlock()
	h.json(http.StatusOK, map[string]string{"jobid": j.id})
}

// duplicate answers a submission whose job ID the cluster already has.
func (h *handler) duplicate(jobID string) {
	if j := h.c.job(jobID); j != nil {
		j.mu.Lock()
		j.submissions++
		j.mu.Unlock()
	}
	h.runFailure("org.apache.flink.runtime.client.DuplicateJobSubmissionException: Job has already been submitted.\n\tat org.apache.flink.runtime.dispatcher.Dispatcher.submitJob(Dispatcher.java:522)")
}

// restore starts j from the snapshot at p. A snapshot that cannot be read
// fails the job at initialization: Flink accepts the submission and the
// JobMaster then fails to start.
func (h *handler) restore(j *job, p string, failOnRestore bool) {
	dir, err := snapshotDir(p)
	var hdr snapshotHeader
	var cause string
	var unsupported errUnsupportedScheme
	switch {
	case errors.As(err, &unsupported):
		cause = "org.apache.flink.core.fs.UnsupportedFileSystemSchemeException: " + err.Error()
	case err != nil:
		cause = "java.lang.IllegalArgumentException: Cannot use location " + p + ": " + err.Error()
	default:
		hdr, cause = readSnapshotHeader(dir)
	}
	if cause != "" {
		f := javaError("org.apache.flink.runtime.client.JobInitializationException", "Could not start the JobMaster.", cause)
		j.state, j.end, j.failure = stateFailed, j.start, &f
		return
	}
	j.restored = &restoreInfo{id: hdr.checkpointID, path: dir.qualified, savepoint: hdr.savepoint, at: j.start}
	j.nextID = hdr.checkpointID + 1
	if failOnRestore {
		f := javaError("java.lang.IllegalStateException",
			"sample job started with --fail-on-restore and this start restores state (from a checkpoint or savepoint): failing on purpose")
		j.state, j.failure, j.restartLoop = stateRestarting, &f, true
	}
}
