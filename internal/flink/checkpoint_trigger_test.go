package flink

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// checkpointServer is a fake of Flink's checkpoint trigger cache: a POST
// registers its trigger ID, each status poll of it answers IN_PROGRESS
// until pending polls are used up, then done.
type checkpointServer struct {
	mu       sync.Mutex
	bodies   []string
	paths    []string
	known    map[string]int // trigger ID -> polls left in progress
	pending  int
	done     string // operation JSON once completed
	postMode string // "ok", "drop" (register, then kill the connection), "500", "incremental", "404"
	state    JobState
}

func newCheckpointServer(t *testing.T, cs *checkpointServer) *Client {
	t.Helper()
	if cs.known == nil {
		cs.known = map[string]int{}
	}
	srv := httptest.NewServer(cs)
	t.Cleanup(srv.Close)
	return newTestClient(t, srv.URL)
}

func (s *checkpointServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paths = append(s.paths, r.Method+" "+r.URL.Path)
	w.Header().Set("Content-Type", "application/json")
	if strings.HasSuffix(r.URL.Path, "/status") {
		if s.state == "" {
			w.WriteHeader(500)
			_, _ = io.WriteString(w, `{"errors":["Internal server error.","<Exception on server side:\norg.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job (`+jobA+`)\n\tat x\nEnd of exception on server side>"]}`)
			return
		}
		_, _ = io.WriteString(w, `{"status":"`+string(s.state)+`"}`)
		return
	}
	if r.Method == http.MethodGet {
		id := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		left, ok := s.known[id]
		switch {
		case !ok:
			w.WriteHeader(404)
			_, _ = io.WriteString(w, `{"errors":["org.apache.flink.runtime.rest.handler.RestHandlerException: There is no checkpoint operation with triggerId=`+id+` for job `+jobA+`.\n\tat x"]}`)
		case left > 0:
			s.known[id] = left - 1
			_, _ = io.WriteString(w, `{"status":{"id":"IN_PROGRESS"},"operation":null}`)
		default:
			_, _ = io.WriteString(w, `{"status":{"id":"COMPLETED"},"operation":`+s.done+`}`)
		}
		return
	}
	data, _ := io.ReadAll(r.Body)
	s.bodies = append(s.bodies, string(data))
	var body struct {
		TriggerID string `json:"triggerId"`
	}
	_ = json.Unmarshal(data, &body)
	switch s.postMode {
	case "drop":
		s.known[body.TriggerID] = s.pending
		conn, _, _ := w.(http.Hijacker).Hijack()
		_ = conn.Close()
	case "500":
		w.WriteHeader(500)
		_, _ = io.WriteString(w, `{"errors":["Internal server error."]}`)
	case "incremental": // Flink 1.20 and 2.3 verbatim
		w.WriteHeader(500)
		_, _ = io.WriteString(w, `{"errors":["Internal server error.","<Exception on server side:\njava.lang.IllegalStateException: Flink does not support triggering incremental checkpoint explicitly. See FLINK-33723.\n\tat org.apache.flink.runtime.rest.handler.job.checkpoints.CheckpointHandlers$CheckpointTriggerHandler.handleRequest(CheckpointHandlers.java:145)\n\nEnd of exception on server side>"]}`)
	case "404":
		w.WriteHeader(404)
		_, _ = io.WriteString(w, `{"errors":["org.apache.flink.runtime.rest.NotFoundException: Job `+jobA+` not found\n\tat a.b(C.java:1)"]}`)
	default:
		s.known[body.TriggerID] = s.pending
		w.WriteHeader(202)
		_, _ = io.WriteString(w, `{"request-id":"`+body.TriggerID+`"}`)
	}
}

func TestTriggerCheckpointAndAwaitItsID(t *testing.T) {
	for name, sc := range map[string]struct {
		typ  CheckpointType
		body string
	}{
		"full":            {CheckpointFull, `{"checkpointType":"FULL","triggerId":"*"}`},
		"configured":      {CheckpointConfigured, `{"checkpointType":"CONFIGURED","triggerId":"*"}`},
		"Flink's default": {"", `{"triggerId":"*"}`},
	} {
		t.Run(name, func(t *testing.T) {
			cs := &checkpointServer{pending: 2, done: `{"checkpointId":42}`}
			c := newCheckpointServer(t, cs)
			tr, err := c.TriggerCheckpoint(context.Background(), jobA, sc.typ)
			if err != nil || tr.JobID != jobA || !hex32.MatchString(tr.TriggerID) || tr.Reattached {
				t.Fatalf("trigger = %+v, %v", tr, err)
			}
			jsonEqual(t, []byte(strings.Replace(cs.bodies[0], tr.TriggerID, "*", 1)), sc.body)
			id, err := c.AwaitCheckpoint(context.Background(), jobA, tr.TriggerID)
			if err != nil || id != 42 {
				t.Fatalf("await = %d, %v", id, err)
			}
			want := []string{"POST /jobs/" + jobA + "/checkpoints"}
			for range 3 {
				want = append(want, "GET /jobs/"+jobA+"/checkpoints/"+tr.TriggerID)
			}
			if strings.Join(cs.paths, "\n") != strings.Join(want, "\n") {
				t.Fatalf("requests:\n%s\nwant:\n%s", strings.Join(cs.paths, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestTriggerCheckpointErrors(t *testing.T) {
	scenarios := map[string]struct {
		postMode       string
		typ            CheckpointType
		wantReason     string
		retryable      bool
		contains       string
		wantReattached bool
	}{
		"lost response re-attaches by polling":            {postMode: "drop", wantReattached: true},
		"server error without operation is returned":      {postMode: "500", wantReason: ErrorReasonServerError, retryable: true, contains: "Internal server error"},
		"unknown job answered 404":                        {postMode: "404", wantReason: ErrorReasonJobNotFound, contains: "Job " + jobA + " not found"},
		"incremental refused by Flink is not retried":     {postMode: "incremental", typ: CheckpointIncremental, wantReason: ErrorReasonBadRequest, contains: "FLINK-33723.; trigger CONFIGURED instead"},
		"fresh trigger ID for each call, posted as given": {postMode: "ok"},
	}
	for name, sc := range scenarios {
		t.Run(name, func(t *testing.T) {
			cs := &checkpointServer{postMode: sc.postMode, done: `{"checkpointId":7}`}
			c := newCheckpointServer(t, cs)
			tr, err := c.TriggerCheckpoint(context.Background(), jobA, sc.typ)
			if sc.wantReason == "" {
				if err != nil || tr.Reattached != sc.wantReattached {
					t.Fatalf("trigger = %+v, %v; want reattached %v", tr, err, sc.wantReattached)
				}
				if id, err := c.AwaitCheckpoint(context.Background(), jobA, tr.TriggerID); err != nil || id != 7 {
					t.Fatalf("await = %d, %v", id, err)
				}
				return
			}
			if Reason(err) != sc.wantReason || IsRetryable(err) != sc.retryable || !strings.Contains(err.Error(), sc.contains) {
				t.Fatalf("want %s (retryable %v) containing %q, got %v", sc.wantReason, sc.retryable, sc.contains, err)
			}
			if !errors.Is(err, reasonSentinel(sc.wantReason)) {
				t.Fatalf("errors.Is(err, sentinel %s) is false", sc.wantReason)
			}
			if len(cs.bodies) != 1 {
				t.Fatalf("%d POSTs; want 1", len(cs.bodies))
			}
		})
	}
}

func TestAwaitCheckpointFailures(t *testing.T) {
	// What Flink 1.20 answers for a trigger on a job it does not run: the
	// POST is accepted and the operation fails.
	jobNotFound := `{"failureCause":{"class":"java.util.concurrent.CompletionException","stack-trace":"java.util.concurrent.CompletionException: org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job (` + jobA + `)\n\tat java.base/java.util.concurrent.CompletableFuture.encodeThrowable(CompletableFuture.java:332)","serialized-throwable":"rO0AB"}}`
	declined := `{"failureCause":{"class":"org.apache.flink.runtime.checkpoint.CheckpointException","stack-trace":"org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint triggering task Source (1/1) of job ` + jobA + ` is not being executed at the moment. Aborting checkpoint. Failure reason: Not all required tasks are currently running.\n\tat x"}}`
	expired := `{"failureCause":{"class":"org.apache.flink.runtime.checkpoint.CheckpointException","stack-trace":"org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint expired before completing.\n\tat x"}}`
	scenarios := map[string]struct {
		done      string
		state     JobState
		reason    string
		retryable bool
		contains  string
	}{
		"unknown job":                          {jobNotFound, "", ErrorReasonJobNotFound, false, "Could not find Flink job"},
		"declined while the job runs":          {declined, JobRunning, ErrorReasonTasksNotReady, true, "not being executed"},
		"declined because the job was stopped": {declined, JobCanceled, ErrorReasonJobNotRunning, false, "not being executed"},
		"expired":                              {expired, JobRunning, ErrorReasonOperationFailed, true, "Checkpoint expired before completing"},
		"completed without an ID":              {`{}`, JobRunning, ErrorReasonMalformedResponse, false, "without checkpointId"},
		"completed with a null operation":      {`null`, JobRunning, ErrorReasonMalformedResponse, false, "without checkpointId"},
	}
	for name, sc := range scenarios {
		t.Run(name, func(t *testing.T) {
			cs := &checkpointServer{pending: 1, done: sc.done, state: sc.state}
			c := newCheckpointServer(t, cs)
			tr, err := c.TriggerCheckpoint(context.Background(), jobA, CheckpointFull)
			if err != nil {
				t.Fatal(err)
			}
			id, err := c.AwaitCheckpoint(context.Background(), jobA, tr.TriggerID)
			if id != 0 || Reason(err) != sc.reason || IsRetryable(err) != sc.retryable || !strings.Contains(err.Error(), sc.contains) {
				t.Fatalf("await = %d; want %s (retryable %v) containing %q, got %v", id, sc.reason, sc.retryable, sc.contains, err)
			}
		})
	}

	t.Run("unknown trigger ID", func(t *testing.T) {
		c := newCheckpointServer(t, &checkpointServer{state: JobRunning})
		_, err := c.AwaitCheckpoint(context.Background(), jobA, trigA)
		if !errors.Is(err, ErrOperationNotFound) || IsRetryable(err) || !strings.Contains(err.Error(), "no checkpoint operation") {
			t.Fatalf("want non-retryable %s, got %v", ErrorReasonOperationNotFound, err)
		}
	})
	t.Run("unknown operation status", func(t *testing.T) {
		srv, _ := fakeFlink(t, 200, "application/json", `{"status":{"id":"EXPLODED"}}`)
		_, err := newTestClient(t, srv.URL).AwaitCheckpoint(context.Background(), jobA, trigA)
		if !errors.Is(err, ErrMalformedResponse) || !strings.Contains(err.Error(), "EXPLODED") {
			t.Fatalf("want %s naming the status, got %v", ErrorReasonMalformedResponse, err)
		}
	})
	t.Run("server trigger ID that is not one", func(t *testing.T) {
		srv, _ := fakeFlink(t, 202, "application/json", `{"request-id":"../x"}`)
		_, err := newTestClient(t, srv.URL).TriggerCheckpoint(context.Background(), jobA, CheckpointFull)
		if !errors.Is(err, ErrMalformedResponse) || !strings.Contains(err.Error(), "../x") {
			t.Fatalf("want %s naming the request-id, got %v", ErrorReasonMalformedResponse, err)
		}
	})
	t.Run("in progress past the deadline", func(t *testing.T) {
		srv, _ := fakeFlink(t, 200, "application/json", `{"status":{"id":"IN_PROGRESS"}}`)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := newTestClient(t, srv.URL).AwaitCheckpoint(ctx, jobA, trigA)
		if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("await past deadline: %v", err)
		}
	})
}

func TestCheckpointTriggerRejectsBadInputBeforeAnyRequest(t *testing.T) {
	srv, rec := fakeFlink(t, 200, "application/json", `{}`)
	c := newTestClient(t, srv.URL)
	ctx := context.Background()
	scenarios := map[string]struct {
		call  func() error
		field string
	}{
		"trigger with a bad job ID": {func() error { _, err := c.TriggerCheckpoint(ctx, "abc", CheckpointFull); return err }, "job ID"},
		"trigger of an unknown type": {func() error {
			_, err := c.TriggerCheckpoint(ctx, jobA, "full")
			return err
		}, `checkpointType "full"`},
		"await with a bad job ID":     {func() error { _, err := c.AwaitCheckpoint(ctx, "../jobs", trigA); return err }, "job ID"},
		"await with a bad trigger ID": {func() error { _, err := c.AwaitCheckpoint(ctx, jobA, "not-hex"); return err }, "trigger ID"},
		"status with no trigger ID": {func() error {
			_, err := c.CheckpointTriggerStatus(ctx, jobA, "")
			return err
		}, "trigger ID"},
	}
	for name, sc := range scenarios {
		t.Run(name, func(t *testing.T) {
			*rec = recorded{}
			err := sc.call()
			if !errors.Is(err, ErrInvalidArgument) || IsRetryable(err) || !strings.Contains(err.Error(), sc.field) {
				t.Fatalf("want non-retryable %s naming %s, got %v", ErrorReasonInvalidArgument, sc.field, err)
			}
			if rec.method != "" {
				t.Fatalf("request %s %s was sent", rec.method, rec.path)
			}
		})
	}
}
