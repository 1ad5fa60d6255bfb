package flink

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	jobA     = "0123456789abcdef0123456789abcdef"
	trigA    = "fedcba9876543210fedcba9876543210"
	prefix   = "/flink/cluster-a"
	jarA     = "5b1e_sample.jar"
	spFailed = `{"status":{"id":"COMPLETED"},"operation":{"failure-cause":{"class":"java.util.concurrent.CompletionException","stack-trace":"java.util.concurrent.CompletionException: org.apache.flink.runtime.checkpoint.CheckpointException: IO-problem detected.\n\tat x.y(Z.java:1)\nCaused by: org.apache.hadoop.ipc.RemoteException(org.apache.hadoop.hdfs.protocol.NSQuotaExceededException): The NameSpace quota (directories and files) of directory /user/app/team-a is exceeded: quota=1 file count=2\n\tat a.b(C.java:2)","serialized-throwable":"rO0AB"}}}`
)

// recorded is what the fake server saw.
type recorded struct {
	method, path, rawQuery, contentType, accept, userAgent, auth string
	body                                                         []byte
}

// fakeFlink answers every request with status/body and records it.
func fakeFlink(t *testing.T, status int, contentType, body string) (*httptest.Server, *recorded) {
	t.Helper()
	rec := &recorded{}
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		mu.Lock()
		*rec = recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), r.Header.Get("Accept"),
			r.Header.Get("User-Agent"), r.Header.Get("Authorization"), data}
		mu.Unlock()
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, rec
}

func newTestClient(t *testing.T, baseURL string, mod ...func(*Options)) *Client {
	t.Helper()
	o := Options{BaseURL: baseURL, PollInterval: 5 * time.Millisecond, RequestTimeout: 2 * time.Second}
	for _, m := range mod {
		m(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatalf("New(%+v): %v", o, err)
	}
	return c
}

func jsonEqual(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("request body %q is not JSON: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON %q: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("request body = %s, want %s", got, want)
	}
}

func TestEndpointsRequestShapeAndDecoding(t *testing.T) {
	type scenario struct {
		status              int
		response            string
		call                func(ctx context.Context, c *Client) (any, error)
		method, path, query string
		body                string // JSON the request must carry; "" = no body
		check               func(t *testing.T, got any)
	}
	scenarios := map[string]scenario{
		"cluster overview": {
			response: `{"taskmanagers":1,"slots-total":8,"slots-available":6,"jobs-running":2,"jobs-finished":0,"jobs-cancelled":1,"jobs-failed":0,"flink-version":"1.20.3","flink-commit":"01e3a6d","brand-new":true}`,
			call:     func(ctx context.Context, c *Client) (any, error) { return c.ClusterOverview(ctx) },
			method:   "GET", path: "/overview",
			check: func(t *testing.T, got any) {
				if o := got.(ClusterOverview); o.SlotsTotal != 8 || o.JobsRunning != 2 || o.FlinkVersion != "1.20.3" || o.JobsCancelled != 1 {
					t.Fatalf("overview = %+v", o)
				}
			},
		},
		"dashboard config": {
			response: `{"refresh-interval":3000,"timezone-name":"UTC","timezone-offset":0,"flink-version":"2.0.0","flink-revision":"abc","features":{"web-submit":true,"web-cancel":true,"web-rescale":false,"web-history":false}}`,
			call:     func(ctx context.Context, c *Client) (any, error) { return c.DashboardConfig(ctx) },
			method:   "GET", path: "/config",
			check: func(t *testing.T, got any) {
				if d := got.(DashboardConfig); d.FlinkVersion != "2.0.0" || !d.Features.WebSubmit || d.RefreshInterval != 3000 {
					t.Fatalf("config = %+v", d)
				}
			},
		},
		"jobmanager config": {
			response: `[{"key":"state.savepoints.dir","value":"hdfs:///sp"},{"key":"execution.checkpointing.savepoint-dir","value":"hdfs:///sp2"}]`,
			call:     func(ctx context.Context, c *Client) (any, error) { return c.JobManagerConfig(ctx) },
			method:   "GET", path: "/jobmanager/config",
			check: func(t *testing.T, got any) {
				if v, ok := got.(Config).Get(KeysSavepointDir...); !ok || v != "hdfs:///sp2" {
					t.Fatalf("savepoint dir = %q, %v: want the new key to win", v, ok)
				}
			},
		},
		"jobs overview 1.20 shape": {
			response: `{"jobs":[{"jid":"` + jobA + `","name":"j","start-time":1700000000000,"end-time":-1,"duration":5,"state":"RUNNING","last-modification":1,"tasks":{"running":2,"total":2}}]}`,
			call:     func(ctx context.Context, c *Client) (any, error) { return c.ListJobs(ctx) },
			method:   "GET", path: "/jobs/overview",
			check: func(t *testing.T, got any) {
				j := got.([]JobOverview)
				if len(j) != 1 || j[0].ID != jobA || j[0].State != JobRunning || j[0].Tasks["total"] != 2 || !j[0].Ended().IsZero() || j[0].Started().IsZero() {
					t.Fatalf("jobs = %+v", j)
				}
			},
		},
		"jobs overview 2.x shape with unknown fields": {
			response: `{"jobs":[{"jid":"` + jobA + `","name":"j","start-time":1,"end-time":2,"duration":1,"state":"FINISHED","last-modification":2,"tasks":{"finished":1},"pending-operators":3,"jobType":"STREAMING","schedulerType":"Adaptive","future":{"x":[1]}}]}`,
			call:     func(ctx context.Context, c *Client) (any, error) { return c.ListJobs(ctx) },
			method:   "GET", path: "/jobs/overview",
			check: func(t *testing.T, got any) {
				j := got.([]JobOverview)
				if len(j) != 1 || j[0].PendingOperators != 3 || !j[0].State.IsGloballyTerminal() {
					t.Fatalf("jobs = %+v", j)
				}
			},
		},
		"job details": {
			response: `{"jid":"` + jobA + `","name":"j","isStoppable":false,"state":"RUNNING","job-type":"STREAMING","start-time":1,"end-time":-1,"duration":9,"maxParallelism":-1,"now":10,"timestamps":{"RUNNING":5,"CREATED":1},"vertices":[{"id":"v1","name":"src","maxParallelism":128,"parallelism":2,"status":"RUNNING","start-time":2,"end-time":-1,"duration":8,"tasks":{"RUNNING":2},"metrics":{"read-bytes":0}}],"status-counts":{"RUNNING":1},"plan":{"jid":"x","nodes":[]},"stream-graph":{}}`,
			call:     func(ctx context.Context, c *Client) (any, error) { return c.JobDetails(ctx, jobA) },
			method:   "GET", path: "/jobs/" + jobA,
			check: func(t *testing.T, got any) {
				d := got.(JobDetails)
				if d.JobType != "STREAMING" || len(d.Vertices) != 1 || d.Vertices[0].Parallelism != 2 || d.Timestamps[JobRunning] != 5 {
					t.Fatalf("details = %+v", d)
				}
			},
		},
		"job status": {
			response: `{"status":"SUSPENDED"}`,
			call:     func(ctx context.Context, c *Client) (any, error) { return c.JobState(ctx, jobA) },
			method:   "GET", path: "/jobs/" + jobA + "/status",
			check: func(t *testing.T, got any) {
				if s := got.(JobState); s != JobSuspended || s.IsGloballyTerminal() || !s.IsLocallyTerminal() {
					t.Fatalf("state = %s", s)
				}
			},
		},
		"job exceptions with 1.20 deprecated fields": {
			response: `{"root-exception":"x","timestamp":1,"all-exceptions":[],"truncated":false,"exceptionHistory":{"entries":[{"exceptionName":"java.lang.RuntimeException","stacktrace":"boom","timestamp":7,"taskName":"t","endpoint":"e","taskManagerId":"tm","failureLabels":{"k":"v"},"location":"old","concurrentExceptions":[{"exceptionName":"E2","stacktrace":"s","timestamp":8}]}],"truncated":true}}`,
			call:     func(ctx context.Context, c *Client) (any, error) { return c.JobExceptions(ctx, jobA, 3) },
			method:   "GET", path: "/jobs/" + jobA + "/exceptions", query: "maxExceptions=3",
			check: func(t *testing.T, got any) {
				h := got.(JobExceptions).History
				if !h.Truncated || len(h.Entries) != 1 || h.Entries[0].FailureLabels["k"] != "v" || len(h.Entries[0].ConcurrentExceptions) != 1 {
					t.Fatalf("history = %+v", h)
				}
			},
		},
		"job jobmanager config": {
			response: `[{"key":"high-availability.storageDir","value":"hdfs:///ha"}]`,
			call:     func(ctx context.Context, c *Client) (any, error) { return c.JobConfig(ctx, jobA) },
			method:   "GET", path: "/jobs/" + jobA + "/jobmanager/config",
			check: func(t *testing.T, got any) {
				if v, _ := got.(Config).Get(KeysHAStorageDir...); v != "hdfs:///ha" {
					t.Fatalf("ha dir = %q", v)
				}
			},
		},
		"checkpoint statistics with restored savepoint": {
			response: `{"counts":{"restored":1,"total":3,"in_progress":1,"completed":1,"failed":1},
				"summary":{"state_size":{"min":1,"max":2,"avg":1,"p50":1.5}},
				"latest":{"completed":{"className":"completed","id":5,"status":"COMPLETED","is_savepoint":false,"savepointFormat":null,"trigger_timestamp":100,"latest_ack_timestamp":110,"checkpointed_size":10,"state_size":20,"end_to_end_duration":10,"alignment_buffered":0,"processed_data":0,"persisted_data":0,"num_subtasks":2,"num_acknowledged_subtasks":2,"checkpoint_type":"CHECKPOINT","tasks":{},"external_path":"hdfs://nn/ck/` + jobA + `/chk-5","discarded":false},
				"savepoint":null,
				"failed":{"className":"failed","id":4,"status":"FAILED","failure_timestamp":90,"failure_message":"timeout"},
				"restored":{"id":3,"restore_timestamp":1700000000000,"is_savepoint":true,"external_path":"hdfs://nn/sp/savepoint-abc"}},
				"history":[{"className":"in_progress","id":6,"status":"IN_PROGRESS"},{"className":"completed","id":5,"status":"COMPLETED","external_path":"hdfs://nn/ck/x/chk-5","discarded":true}]}`,
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Checkpoints(ctx, jobA) },
			method: "GET", path: "/jobs/" + jobA + "/checkpoints",
			check: func(t *testing.T, got any) {
				s := got.(CheckpointingStatistics)
				r := s.Latest.Restored
				if r == nil || r.ID != 3 || !r.IsSavepoint || r.ExternalPath != "hdfs://nn/sp/savepoint-abc" || r.RestoreTime().UnixMilli() != 1700000000000 {
					t.Fatalf("restored = %+v", r)
				}
				if s.Latest.Completed == nil || s.Latest.Completed.ExternalPath == "" || s.Latest.Savepoint != nil || s.Latest.Failed.FailureMessage != "timeout" {
					t.Fatalf("latest = %+v", s.Latest)
				}
				if len(s.History) != 2 || s.History[0].ClassName != CheckpointKindInProgress || !s.History[1].Discarded || s.Counts.InProgress != 1 {
					t.Fatalf("history = %+v counts = %+v", s.History, s.Counts)
				}
			},
		},
		"checkpoint statistics of a job never restored": {
			response: `{"counts":{"restored":0,"total":0,"in_progress":0,"completed":0,"failed":0},"latest":{"completed":null,"savepoint":null,"failed":null,"restored":null},"history":[]}`,
			call:     func(ctx context.Context, c *Client) (any, error) { return c.Checkpoints(ctx, jobA) },
			method:   "GET", path: "/jobs/" + jobA + "/checkpoints",
			check: func(t *testing.T, got any) {
				if s := got.(CheckpointingStatistics); s.Latest.Restored != nil || s.Latest.Completed != nil {
					t.Fatalf("latest = %+v", s.Latest)
				}
			},
		},
		"checkpoint config": {
			response: `{"mode":"EXACTLY_ONCE","interval":1000,"timeout":600000,"min_pause":0,"max_concurrent":1,"externalization":{"enabled":true,"delete_on_cancellation":false},"state_backend":"EmbeddedRocksDBStateBackend","checkpoint_storage":"FileSystemCheckpointStorage","unaligned_checkpoints":false,"tolerable_failed_checkpoints":0,"aligned_checkpoint_timeout":0,"checkpoints_after_tasks_finish":true,"state_changelog_enabled":false,"changelog_periodic_materialization_interval":600000,"changelog_storage":"memory"}`,
			call:     func(ctx context.Context, c *Client) (any, error) { return c.CheckpointConfig(ctx, jobA) },
			method:   "GET", path: "/jobs/" + jobA + "/checkpoints/config",
			check: func(t *testing.T, got any) {
				if cc := got.(CheckpointConfig); !cc.Externalization.Enabled || cc.Interval != 1000 || cc.StateBackend == "" {
					t.Fatalf("config = %+v", cc)
				}
			},
		},
		"checkpoint details": {
			response: `{"className":"completed","id":42,"status":"COMPLETED","is_savepoint":true,"savepointFormat":"CANONICAL","checkpoint_type":"SAVEPOINT","external_path":"hdfs://nn/sp/savepoint-1"}`,
			call:     func(ctx context.Context, c *Client) (any, error) { return c.CheckpointDetails(ctx, jobA, 42) },
			method:   "GET", path: "/jobs/" + jobA + "/checkpoints/details/42",
			check: func(t *testing.T, got any) {
				if d := got.(CheckpointStatistics); d.ID != 42 || d.SavepointFormat != "CANONICAL" || d.ExternalPath == "" {
					t.Fatalf("details = %+v", d)
				}
			},
		},
		"trigger savepoint": {
			status:   http.StatusAccepted,
			response: `{"request-id":"` + trigA + `"}`,
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.TriggerSavepoint(ctx, jobA, SavepointRequest{TargetDirectory: "hdfs:///sp", FormatType: SavepointFormatNative, TriggerID: ""})
			},
			method: "POST", path: "/jobs/" + jobA + "/savepoints",
			body: `{"target-directory":"hdfs:///sp","cancel-job":false,"formatType":"NATIVE","triggerId":"*"}`,
			check: func(t *testing.T, got any) {
				if tr := got.(Trigger); tr.TriggerID != trigA || tr.Reattached {
					t.Fatalf("trigger = %+v (the server's request-id wins)", tr)
				}
			},
		},
		"stop with savepoint": {
			status:   http.StatusAccepted,
			response: `{"request-id":"` + trigA + `"}`,
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.StopWithSavepoint(ctx, jobA, StopRequest{TargetDirectory: "hdfs:///sp", Drain: true})
			},
			method: "POST", path: "/jobs/" + jobA + "/stop",
			body: `{"targetDirectory":"hdfs:///sp","drain":true,"triggerId":"*"}`,
		},
		"savepoint status in progress with null operation": {
			response: `{"status":{"id":"IN_PROGRESS"},"operation":null}`,
			call:     func(ctx context.Context, c *Client) (any, error) { return c.SavepointStatus(ctx, jobA, trigA) },
			method:   "GET", path: "/jobs/" + jobA + "/savepoints/" + trigA,
			check: func(t *testing.T, got any) {
				if s := got.(OperationStatus); s.Done() || s.State != OperationInProgress {
					t.Fatalf("status = %+v", s)
				}
			},
		},
		"savepoint status completed": {
			response: `{"status":{"id":"COMPLETED"},"operation":{"location":"hdfs://nn/sp/savepoint-0a-1b"}}`,
			call:     func(ctx context.Context, c *Client) (any, error) { return c.AwaitSavepoint(ctx, jobA, trigA) },
			method:   "GET", path: "/jobs/" + jobA + "/savepoints/" + trigA,
			check: func(t *testing.T, got any) {
				if got.(string) != "hdfs://nn/sp/savepoint-0a-1b" {
					t.Fatalf("location = %v", got)
				}
			},
		},
		"cancel": {
			status: http.StatusAccepted,
			call:   func(ctx context.Context, c *Client) (any, error) { return nil, c.CancelJob(ctx, jobA) },
			method: "PATCH", path: "/jobs/" + jobA, query: "mode=cancel",
		},
		"dispose savepoint": {
			response: `{"request-id":"` + trigA + `"}`,
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.DisposeSavepoint(ctx, "hdfs:///sp/savepoint-1")
			},
			method: "POST", path: "/savepoint-disposal",
			body: `{"savepoint-path":"hdfs:///sp/savepoint-1"}`,
			check: func(t *testing.T, got any) {
				if got.(string) != trigA {
					t.Fatalf("trigger = %v", got)
				}
			},
		},
		"disposal status": {
			response: `{"status":{"id":"COMPLETED"},"operation":{}}`,
			call:     func(ctx context.Context, c *Client) (any, error) { return nil, c.AwaitDisposal(ctx, trigA) },
			method:   "GET", path: "/savepoint-disposal/" + trigA,
		},
		"list jars": {
			response: `{"address":"http://jm:8081","files":[{"id":"` + jarA + `","name":"sample.jar","uploaded":1,"entry":[{"name":"a.Main","description":null}]}]}`,
			call:     func(ctx context.Context, c *Client) (any, error) { return c.ListJars(ctx) },
			method:   "GET", path: "/jars",
			check: func(t *testing.T, got any) {
				if l := got.(JarList); len(l.Files) != 1 || l.Files[0].ID != jarA || l.Files[0].Entry[0].Name != "a.Main" {
					t.Fatalf("jars = %+v", l)
				}
			},
		},
		"run jar restoring a savepoint": {
			response: `{"jobid":"` + jobA + `"}`,
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.RunJar(ctx, jarA, RunJarRequest{EntryClass: "a.Main", ProgramArgs: []string{"--keys", "10", "a b"}, Parallelism: 2,
					SavepointPath: "hdfs:///sp/savepoint-1", AllowNonRestoredState: true, RestoreMode: RestoreNoClaim})
			},
			method: "POST", path: "/jars/" + jarA + "/run",
			body: `{"entryClass":"a.Main","programArgsList":["--keys","10","a b"],"parallelism":2,"allowNonRestoredState":true,"savepointPath":"hdfs:///sp/savepoint-1","claimMode":"NO_CLAIM","restoreMode":"NO_CLAIM"}`,
			check: func(t *testing.T, got any) {
				if r := got.(RunJarResult); r.JobID != jobA || r.Reattached {
					t.Fatalf("run = %+v", r)
				}
			},
		},
		"delete jar": {
			call:   func(ctx context.Context, c *Client) (any, error) { return nil, c.DeleteJar(ctx, jarA) },
			method: "DELETE", path: "/jars/" + jarA,
		},
	}
	for name, sc := range scenarios {
		t.Run(name, func(t *testing.T) {
			status := sc.status
			if status == 0 {
				status = http.StatusOK
			}
			srv, rec := fakeFlink(t, status, "application/json; charset=UTF-8", sc.response)
			c := newTestClient(t, srv.URL+prefix+"/", func(o *Options) { o.UserAgent = "ua-test/1" })
			got, err := sc.call(context.Background(), c)
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if rec.method != sc.method || rec.path != prefix+sc.path || rec.rawQuery != sc.query {
				t.Fatalf("request %s %s?%s, want %s %s?%s", rec.method, rec.path, rec.rawQuery, sc.method, prefix+sc.path, sc.query)
			}
			if rec.userAgent != "ua-test/1" || rec.accept != "application/json" {
				t.Fatalf("headers: User-Agent %q, Accept %q", rec.userAgent, rec.accept)
			}
			if sc.body != "" {
				if rec.contentType != "application/json" {
					t.Fatalf("content type %q", rec.contentType)
				}
				want := sc.body
				if strings.Contains(want, `"triggerId":"*"`) {
					// The generated trigger ID is random: check its shape, then
					// compare the rest.
					var m map[string]any
					_ = json.Unmarshal(rec.body, &m)
					id, _ := m["triggerId"].(string)
					if !hex32.MatchString(id) {
						t.Fatalf("generated triggerId %q is not 32 lowercase hex", id)
					}
					want = strings.Replace(want, `"triggerId":"*"`, `"triggerId":"`+id+`"`, 1)
				}
				jsonEqual(t, rec.body, want)
			} else if len(rec.body) != 0 {
				t.Fatalf("unexpected request body %q", rec.body)
			}
			if sc.check != nil {
				sc.check(t, got)
			}
		})
	}
}

func TestUploadJarSendsMultipartJarfile(t *testing.T) {
	srv, rec := fakeFlink(t, http.StatusOK, "application/json", `{"filename":"/tmp/flink-web-1/flink-web-upload/`+jarA+`","status":"success"}`)
	c := newTestClient(t, srv.URL+prefix)
	jar := filepath.Join(t.TempDir(), "sample.jar")
	if err := os.WriteFile(jar, []byte("PK\x03\x04 fake jar"), 0o644); err != nil {
		t.Fatal(err)
	}
	id, err := c.UploadJar(context.Background(), jar)
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	if id != jarA || rec.method != "POST" || rec.path != prefix+"/jars/upload" {
		t.Fatalf("id %q, request %s %s", id, rec.method, rec.path)
	}
	mt, params, err := mime.ParseMediaType(rec.contentType)
	if err != nil || mt != "multipart/form-data" {
		t.Fatalf("content type %q: %v", rec.contentType, err)
	}
	part, err := multipart.NewReader(strings.NewReader(string(rec.body)), params["boundary"]).NextPart()
	if err != nil {
		t.Fatalf("multipart: %v", err)
	}
	data, _ := io.ReadAll(part)
	if part.FormName() != "jarfile" || part.FileName() != "sample.jar" || part.Header.Get("Content-Type") != "application/x-java-archive" || string(data) != "PK\x03\x04 fake jar" {
		t.Fatalf("part %q file %q type %q data %q", part.FormName(), part.FileName(), part.Header.Get("Content-Type"), data)
	}
}

func TestResponseErrorsAreClassified(t *testing.T) {
	longHTML := "<html><head><title>502 Bad Gateway</title></head><body>" + strings.Repeat("<p>upstream down</p>", 500) + "</body></html>"
	type scenario struct {
		status      int
		contentType string
		body        string
		call        func(ctx context.Context, c *Client) error
		reason      string
		retryable   bool
		contains    string
	}
	details := func(ctx context.Context, c *Client) error { _, err := c.JobDetails(ctx, jobA); return err }
	await := func(ctx context.Context, c *Client) error { _, err := c.AwaitSavepoint(ctx, jobA, trigA); return err }
	scenarios := map[string]scenario{
		"404 job not found": {404, "application/json", `{"errors":["org.apache.flink.runtime.rest.NotFoundException: Job ` + jobA + ` not found\n\tat a.b(C.java:1)"]}`,
			details, ErrorReasonJobNotFound, false, "Job " + jobA + " not found"},
		"404 Flink unknown path (wrong base URL)": {404, "application/json", `{"errors":["Not found: /flink/jobs/x"]}`,
			details, ErrorReasonEndpointNotFound, false, "Not found: /flink/jobs/x"},
		"404 HTML from a proxy": {404, "text/html", "<html><body><h1>404 Not Found</h1><hr>nginx</body></html>",
			details, ErrorReasonEndpointNotFound, false, "404 Not Found nginx"},
		"404 checkpointing disabled": {404, "application/json", `{"errors":["Checkpointing is not enabled for this job (` + jobA + `)."]}`,
			func(ctx context.Context, c *Client) error { _, err := c.CheckpointConfig(ctx, jobA); return err },
			ErrorReasonCheckpointingDisabled, false, "Checkpointing is not enabled"},
		"404 unknown trigger": {404, "application/json", `{"errors":["There is no savepoint operation with triggerId=` + trigA + ` for job ` + jobA + `"]}`,
			func(ctx context.Context, c *Client) error { _, err := c.SavepointStatus(ctx, jobA, trigA); return err },
			ErrorReasonOperationNotFound, false, "no savepoint operation"},
		"400 bad request": {400, "application/json", `{"errors":["Request did not match expected format SavepointTriggerRequestBody."]}`,
			func(ctx context.Context, c *Client) error {
				_, err := c.TriggerSavepoint(ctx, jobA, SavepointRequest{})
				return err
			}, ErrorReasonBadRequest, false, "did not match expected format"},
		"400 missing savepoint directory": {400, "application/json", `{"errors":["Config key [state.savepoints.dir] is not set. Property [target-directory] must be provided."]}`,
			func(ctx context.Context, c *Client) error {
				_, err := c.TriggerSavepoint(ctx, jobA, SavepointRequest{})
				return err
			}, ErrorReasonInvalidTargetDirectory, false, "must be provided"},
		"401 from an auth proxy": {401, "text/plain", "Unauthorized", details, ErrorReasonUnauthorized, false, "Unauthorized"},
		"302 to a login page":    {302, "text/html", "", details, ErrorReasonEndpointNotFound, false, "redirected"},
		"409 cancel of a finished job": {409, "application/json", `{"errors":["Job cancellation failed because the job has already reached another terminal state (FINISHED)."]}`,
			func(ctx context.Context, c *Client) error { return c.CancelJob(ctx, jobA) }, ErrorReasonJobNotRunning, false, "FINISHED"},
		"503 leader election": {503, "application/json", `{"errors":["Service temporarily unavailable due to an ongoing leader election. Please refresh."]}`,
			details, ErrorReasonUnavailable, true, "leader election"},
		"500 internal error with server stack trace": {500, "application/json", `{"errors":["Internal server error.","<Exception on server side:\norg.apache.flink.util.FlinkException: boom\n\tat a.b(C.java:1)\nCaused by: java.io.IOException: disk\n\tat d.e(F.java:2)\n\nEnd of exception on server side>"]}`,
			details, ErrorReasonServerError, true, "root cause: java.io.IOException: disk"},
		"502 long HTML is truncated":                     {502, "text/html", longHTML, details, ErrorReasonUnavailable, true, "bytes truncated"},
		"504 gateway timeout":                            {504, "text/html", "<html>timeout</html>", details, ErrorReasonTimeout, true, "timeout"},
		"200 malformed JSON":                             {200, "application/json", `{"jid": "x", "state": `, details, ErrorReasonMalformedResponse, false, "cannot decode JSON"},
		"200 wrong JSON type":                            {200, "application/json", `{"jid": 12}`, details, ErrorReasonMalformedResponse, false, "cannot decode JSON"},
		"200 HTML login page":                            {200, "text/html", "<html><body>Please log in</body></html>", details, ErrorReasonMalformedResponse, false, "Please log in"},
		"200 empty body":                                 {200, "application/json", "", details, ErrorReasonMalformedResponse, false, "empty response body"},
		"500 empty body":                                 {500, "", "", details, ErrorReasonServerError, true, "empty response body"},
		"savepoint COMPLETED with failure cause (quota)": {200, "application/json", spFailed, await, ErrorReasonStorageQuotaExceeded, false, "NSQuotaExceededException"},
		"savepoint COMPLETED with unclassified failure": {200, "application/json",
			`{"status":{"id":"COMPLETED"},"operation":{"failure-cause":{"class":"org.apache.flink.runtime.checkpoint.CheckpointException","stack-trace":"org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint expired before completing.\n\tat x"}}}`,
			await, ErrorReasonOperationFailed, true, "Checkpoint expired before completing"},
		"savepoint COMPLETED with failure cause of only serialized bytes": {200, "application/json",
			`{"status":{"id":"COMPLETED"},"operation":{"failure-cause":{"serialized-throwable":"rO0AB"}}}`,
			await, ErrorReasonOperationFailed, true, "failure cause without class"},
		"savepoint COMPLETED without location": {200, "application/json", `{"status":{"id":"COMPLETED"}}`,
			await, ErrorReasonMalformedResponse, false, "without location"},
		"unknown operation status": {200, "application/json", `{"status":{"id":"EXPLODED"}}`,
			await, ErrorReasonMalformedResponse, false, "EXPLODED"},
		"disposal of a missing savepoint": {200, "application/json",
			`{"status":{"id":"COMPLETED"},"operation":{"failure-cause":{"class":"java.io.FileNotFoundException","stack-trace":"java.io.FileNotFoundException: Cannot find meta data file '_metadata' in directory 'hdfs:///sp/x'."}}}`,
			func(ctx context.Context, c *Client) error { return c.AwaitDisposal(ctx, trigA) }, ErrorReasonSavepointNotFound, false, "Cannot find meta data file"},
		"run of a missing jar": {400, "application/json", `{"errors":["org.apache.flink.runtime.rest.handler.RestHandlerException: Jar file /tmp/flink-web/x.jar does not exist\n\tat a"]}`,
			func(ctx context.Context, c *Client) error { _, err := c.RunJar(ctx, jarA, RunJarRequest{}); return err },
			ErrorReasonJarNotFound, false, "does not exist"},
	}
	for name, sc := range scenarios {
		t.Run(name, func(t *testing.T) {
			srv, _ := fakeFlink(t, sc.status, sc.contentType, sc.body)
			c := newTestClient(t, srv.URL)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			err := sc.call(ctx, c)
			var fe *Error
			if !errors.As(err, &fe) {
				t.Fatalf("want *Error, got %T %v", err, err)
			}
			if Reason(err) != sc.reason || IsRetryable(err) != sc.retryable {
				t.Fatalf("reason %s retryable %v, want %s %v: %v", Reason(err), IsRetryable(err), sc.reason, sc.retryable, err)
			}
			if !errors.Is(err, reasonSentinel(sc.reason)) {
				t.Fatalf("errors.Is(err, sentinel %s) is false", sc.reason)
			}
			if !strings.Contains(err.Error(), sc.contains) {
				t.Fatalf("message lacks %q: %v", sc.contains, err)
			}
			if len(err.Error()) > 1500 {
				t.Fatalf("message not truncated (%d bytes): %.200s…", len(err.Error()), err)
			}
		})
	}
}

func TestTransportErrors(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(slow.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	type scenario struct {
		baseURL   string
		timeout   time.Duration
		ctx       func() (context.Context, context.CancelFunc)
		reason    string
		retryable bool
		is        error
	}
	scenarios := map[string]scenario{
		"connection refused": {closedURL, time.Second, func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			ErrorReasonUnavailable, true, nil},
		"request timeout on a slow server": {slow.URL, 100 * time.Millisecond, func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			ErrorReasonTimeout, true, context.DeadlineExceeded},
		"caller cancels during a slow request": {slow.URL, 5 * time.Second, func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		}, ErrorReasonCanceled, false, context.Canceled},
		"caller deadline passes": {slow.URL, 5 * time.Second, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}, ErrorReasonTimeout, true, context.DeadlineExceeded},
	}
	for name, sc := range scenarios {
		t.Run(name, func(t *testing.T) {
			c := newTestClient(t, sc.baseURL, func(o *Options) { o.RequestTimeout = sc.timeout })
			ctx, cancel := sc.ctx()
			defer cancel()
			start := time.Now()
			_, err := c.ListJobs(ctx)
			if Reason(err) != sc.reason || IsRetryable(err) != sc.retryable {
				t.Fatalf("reason %s retryable %v, want %s %v: %v", Reason(err), IsRetryable(err), sc.reason, sc.retryable, err)
			}
			if sc.is != nil && !errors.Is(err, sc.is) {
				t.Fatalf("errors.Is(%v) false: %v", sc.is, err)
			}
			if time.Since(start) > 3*time.Second {
				t.Fatalf("took %s: cancellation not honoured", time.Since(start))
			}
		})
	}
}

func TestAwaitSavepointSurvivesTransientErrorsAndHonoursContext(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case n == 1:
			w.WriteHeader(503)
			_, _ = io.WriteString(w, `{"errors":["Service temporarily unavailable due to an ongoing leader election. Please refresh."]}`)
		case n < 4:
			_, _ = io.WriteString(w, `{"status":{"id":"IN_PROGRESS"}}`)
		default:
			_, _ = io.WriteString(w, `{"status":{"id":"COMPLETED"},"operation":{"location":"hdfs:///sp/savepoint-1"}}`)
		}
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv.URL)
	loc, err := c.AwaitSavepoint(context.Background(), jobA, trigA)
	if err != nil || loc != "hdfs:///sp/savepoint-1" || calls != 4 {
		t.Fatalf("await = %q, %v after %d polls", loc, err, calls)
	}

	inProgress, _ := fakeFlink(t, 200, "application/json", `{"status":{"id":"IN_PROGRESS"}}`)
	c = newTestClient(t, inProgress.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = c.AwaitSavepoint(ctx, jobA, trigA)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("await past deadline: %v", err)
	}
}

// triggerServer is a stateful fake of Flink's savepoint trigger cache.
type triggerServer struct {
	mu       sync.Mutex
	known    map[string]bool
	posts    int
	postMode string // "ok", "drop" (register, then kill the connection), "conflict", "500"
}

func (s *triggerServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodGet {
		id := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		if !s.known[id] {
			w.WriteHeader(404)
			_, _ = io.WriteString(w, `{"errors":["There is no savepoint operation with triggerId=`+id+` for job `+jobA+`"]}`)
			return
		}
		_, _ = io.WriteString(w, `{"status":{"id":"IN_PROGRESS"}}`)
		return
	}
	s.posts++
	var body struct {
		TriggerID string `json:"triggerId"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	switch s.postMode {
	case "drop":
		s.known[body.TriggerID] = true
		conn, _, _ := w.(http.Hijacker).Hijack()
		_ = conn.Close()
	case "conflict":
		s.known[body.TriggerID] = true
		w.WriteHeader(409)
		_, _ = io.WriteString(w, `{"errors":["A stop-with-savepoint is already in progress."]}`)
	case "500":
		w.WriteHeader(500)
		_, _ = io.WriteString(w, `{"errors":["Internal server error."]}`)
	default:
		s.known[body.TriggerID] = true
		w.WriteHeader(202)
		_, _ = io.WriteString(w, `{"request-id":"`+body.TriggerID+`"}`)
	}
}

func TestTriggerIsIdempotentUnderRetries(t *testing.T) {
	type scenario struct {
		preKnown       bool
		postMode       string
		wantReattached bool
		wantPosts      int
		wantReason     string
	}
	scenarios := map[string]scenario{
		"fresh trigger ID posts once":                  {false, "ok", false, 1, ""},
		"known trigger ID re-attaches without posting": {true, "ok", true, 0, ""},
		"lost response re-attaches by polling":         {false, "drop", true, 1, ""},
		"conflict re-attaches to the same operation":   {false, "conflict", true, 1, ""},
		"server error without operation is returned":   {false, "500", false, 1, ErrorReasonServerError},
	}
	for name, sc := range scenarios {
		for _, stop := range []bool{false, true} {
			t.Run(name+map[bool]string{false: " (savepoint)", true: " (stop)"}[stop], func(t *testing.T) {
				fs := &triggerServer{known: map[string]bool{}, postMode: sc.postMode}
				if sc.preKnown {
					fs.known[trigA] = true
				}
				srv := httptest.NewServer(fs)
				t.Cleanup(srv.Close)
				c := newTestClient(t, srv.URL)
				var tr Trigger
				var err error
				if stop {
					tr, err = c.StopWithSavepoint(context.Background(), jobA, StopRequest{TriggerID: trigA})
				} else {
					tr, err = c.TriggerSavepoint(context.Background(), jobA, SavepointRequest{TriggerID: trigA})
				}
				if sc.wantReason != "" {
					if Reason(err) != sc.wantReason {
						t.Fatalf("want %s, got %v", sc.wantReason, err)
					}
				} else if err != nil {
					t.Fatalf("trigger: %v", err)
				}
				if fs.posts != sc.wantPosts || tr.Reattached != sc.wantReattached || (err == nil && tr.TriggerID != trigA) {
					t.Fatalf("posts %d reattached %v trigger %s; want posts %d reattached %v", fs.posts, tr.Reattached, tr.TriggerID, sc.wantPosts, sc.wantReattached)
				}
			})
		}
	}
}

func TestInvalidArgumentsNeverReachTheServer(t *testing.T) {
	srv, rec := fakeFlink(t, 200, "application/json", `{}`)
	c := newTestClient(t, srv.URL)
	ctx := context.Background()
	scenarios := map[string]func() error{
		"job ID too short":   func() error { _, err := c.JobDetails(ctx, "abc"); return err },
		"job ID uppercase":   func() error { _, err := c.JobState(ctx, strings.ToUpper(jobA)); return err },
		"job ID path escape": func() error { _, err := c.Checkpoints(ctx, "../../cluster"); return err },
		"trigger ID invalid": func() error {
			_, err := c.TriggerSavepoint(ctx, jobA, SavepointRequest{TriggerID: "not-hex"})
			return err
		},
		"format invalid": func() error {
			_, err := c.StopWithSavepoint(ctx, jobA, StopRequest{FormatType: "ZIP"})
			return err
		},
		"relative savepoint dir": func() error {
			_, err := c.TriggerSavepoint(ctx, jobA, SavepointRequest{TargetDirectory: "relative/savepoints"})
			return err
		},
		"relative stop dir": func() error {
			_, err := c.StopWithSavepoint(ctx, jobA, StopRequest{TargetDirectory: "savepoints"})
			return err
		},
		"negative checkpoint ID": func() error { _, err := c.CheckpointDetails(ctx, jobA, -1); return err },
		"restore mode invalid": func() error {
			_, err := c.RunJar(ctx, jarA, RunJarRequest{SavepointPath: "x", RestoreMode: "STEAL"})
			return err
		},
		"restore mode without savepoint": func() error {
			_, err := c.RunJar(ctx, jarA, RunJarRequest{RestoreMode: RestoreClaim})
			return err
		},
		"negative parallelism": func() error { _, err := c.RunJar(ctx, jarA, RunJarRequest{Parallelism: -2}); return err },
		"jar ID with slash":    func() error { return c.DeleteJar(ctx, "a/b.jar") },
		"upload not a jar":     func() error { _, err := c.UploadJar(ctx, "/tmp/x.zip"); return err },
		"upload missing file":  func() error { _, err := c.UploadJar(ctx, "/nonexistent/x.jar"); return err },
		"dispose empty path":   func() error { _, err := c.DisposeSavepoint(ctx, ""); return err },
	}
	for name, call := range scenarios {
		t.Run(name, func(t *testing.T) {
			*rec = recorded{}
			err := call()
			if !(errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrInvalidTargetDirectory)) || IsRetryable(err) {
				t.Fatalf("want non-retryable %s, got %v", ErrorReasonInvalidArgument, err)
			}
			if rec.method != "" {
				t.Fatalf("request %s %s was sent", rec.method, rec.path)
			}
		})
	}
}

func TestJobStateSemantics(t *testing.T) {
	type want struct{ global, local, running, known bool }
	scenarios := map[JobState]want{
		JobFinished:     {true, false, false, true},
		JobCanceled:     {true, false, false, true},
		JobFailed:       {true, false, false, true},
		JobSuspended:    {false, true, false, true},
		JobRunning:      {false, false, true, true},
		JobRestarting:   {false, false, false, true},
		JobCancelling:   {false, false, false, true},
		JobInitializing: {false, false, false, true},
		"SOMETHING_NEW": {false, false, false, false},
	}
	for s, w := range scenarios {
		got := want{s.IsGloballyTerminal(), s.IsLocallyTerminal(), s.IsRunning(), s.IsKnown()}
		if got != w {
			t.Errorf("%s: got %+v, want %+v", s, got, w)
		}
		if s.IsTerminal() != (w.global || w.local) {
			t.Errorf("%s: IsTerminal = %v", s, s.IsTerminal())
		}
	}
}

func TestIsRetryableAndReasonOnForeignErrors(t *testing.T) {
	scenarios := map[string]struct {
		err       error
		retryable bool
	}{
		"nil":               {nil, false},
		"plain error":       {errors.New("x"), true},
		"context canceled":  {context.Canceled, false},
		"wrapped flink err": {errors.Join(errors.New("ctx"), NewError("op", ErrorReasonJobNotFound, "m", nil)), false},
	}
	for name, sc := range scenarios {
		if IsRetryable(sc.err) != sc.retryable {
			t.Errorf("%s: IsRetryable = %v", name, !sc.retryable)
		}
	}
	if Reason(errors.New("x")) != "" {
		t.Error("Reason of a foreign error must be empty")
	}
}

func TestFailedOperationOnEndedJobIsJobNotRunning(t *testing.T) {
	notStreaming := `{"status":{"id":"COMPLETED"},"operation":{"failure-cause":{"class":"java.util.concurrent.CompletionException","stack-trace":"java.util.concurrent.CompletionException: java.lang.IllegalStateException: Job ` + jobA + ` is not a streaming job.\n\tat x"}}}`
	scenarios := map[string]struct {
		state     JobState
		reason    string
		retryable bool
	}{
		"job finished":  {JobFinished, ErrorReasonJobNotRunning, false},
		"job suspended": {JobSuspended, ErrorReasonJobNotRunning, false},
		"job running":   {JobRunning, ErrorReasonOperationFailed, true},
	}
	for name, sc := range scenarios {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if strings.HasSuffix(r.URL.Path, "/status") {
					_, _ = io.WriteString(w, `{"status":"`+string(sc.state)+`"}`)
					return
				}
				_, _ = io.WriteString(w, notStreaming)
			}))
			t.Cleanup(srv.Close)
			_, err := newTestClient(t, srv.URL).AwaitSavepoint(context.Background(), jobA, trigA)
			if Reason(err) != sc.reason || IsRetryable(err) != sc.retryable || !strings.Contains(err.Error(), "is not a streaming job") {
				t.Fatalf("want %s (retryable %v), got %v", sc.reason, sc.retryable, err)
			}
		})
	}
}
