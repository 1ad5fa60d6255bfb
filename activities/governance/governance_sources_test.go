package governance

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/internal/acttest"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/storage"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/mdwrite"
)

// sourcesFlink scripts the answers of one job's checkpoint statistics
// and of the cluster's configuration.
type sourcesFlink struct {
	core.FlinkAPI
	stats  flink.CheckpointingStatistics
	state  flink.JobState
	config flink.Config
	// initializing answers this many statistics calls as Flink does for a
	// job whose JobMaster is not up yet.
	initializing int
	// While disabled > 0, checkpoint calls answer as Flink does for its
	// sparse view of a job (checkpointing not enabled), and the job is in
	// disabledState; each look at the job's state counts one down.
	disabled      int
	disabledState flink.JobState
	// detailsUnavailable answers this many looks at the job's state with a
	// transient error first.
	detailsUnavailable int
	// unanswered: this many statistics calls find no JobManager answering.
	unanswered int
	// exceptions and exceptionsErr answer JobExceptions.
	exceptions    flink.JobExceptions
	exceptionsErr error
}

func (f *sourcesFlink) JobExceptions(context.Context, string, int) (flink.JobExceptions, error) {
	return f.exceptions, f.exceptionsErr
}

func (f *sourcesFlink) checkpointingDisabled(op string) error {
	if f.disabled == 0 {
		return nil
	}
	return &flink.Error{Op: op, Reason: flink.ErrorReasonCheckpointingDisabled, StatusCode: 404,
		Message: "RestHandlerException: Checkpointing is not enabled for this job"}
}

func (f *sourcesFlink) ListJobs(context.Context) ([]flink.JobOverview, error) {
	return []flink.JobOverview{{ID: "0123456789abcdef0123456789abcdef", State: flink.JobRunning}}, nil
}

func (f *sourcesFlink) Checkpoints(context.Context, string) (flink.CheckpointingStatistics, error) {
	if f.unanswered > 0 {
		f.unanswered--
		return flink.CheckpointingStatistics{}, &flink.Error{Op: "checkpoint statistics", Reason: flink.ErrorReasonUnavailable, Retryable: true, Message: "connection refused"}
	}
	if err := f.checkpointingDisabled("checkpoint statistics"); err != nil {
		return flink.CheckpointingStatistics{}, err
	}
	if f.initializing > 0 {
		f.initializing--
		return flink.CheckpointingStatistics{}, &flink.Error{Op: "checkpoint statistics", Reason: flink.ErrorReasonServerError, Retryable: true, StatusCode: 500,
			Message: "UnavailableDispatcherOperationException: Unable to get JobMasterGateway for initializing job"}
	}
	return f.stats, nil
}

func (f *sourcesFlink) CheckpointConfig(context.Context, string) (flink.CheckpointConfig, error) {
	if err := f.checkpointingDisabled("checkpoint config"); err != nil {
		return flink.CheckpointConfig{}, err
	}
	return flink.CheckpointConfig{Timeout: 600_000}, nil
}

func (f *sourcesFlink) JobDetails(context.Context, string) (flink.JobDetails, error) {
	if f.detailsUnavailable > 0 {
		f.detailsUnavailable--
		return flink.JobDetails{}, &flink.Error{Op: "job details", Reason: flink.ErrorReasonUnavailable, Retryable: true, Message: "connection refused"}
	}
	if f.disabled > 0 {
		f.disabled--
		return flink.JobDetails{State: f.disabledState}, nil
	}
	return flink.JobDetails{State: f.state}, nil
}

func (f *sourcesFlink) JobManagerConfig(context.Context) (flink.Config, error) { return f.config, nil }

// liveInventoryIn runs liveInventory inside an activity (it heartbeats).
func liveInventoryIn(t *testing.T, a *Activities, inv inventory.Inventory) (cleanup.Live, []string, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	type out struct {
		Live  cleanup.Live
		Notes []string
	}
	env.RegisterActivityWithOptions(func(ctx context.Context) (out, error) {
		live, notes, err := a.sources().liveInventory(ctx, inv)
		return out{live, notes}, err
	}, activity.RegisterOptions{Name: "liveInventory"})
	v, err := env.ExecuteActivity("liveInventory")
	if err != nil {
		return cleanup.Live{}, nil, err
	}
	var o out
	if err := v.Get(&o); err != nil {
		t.Fatal(err)
	}
	return o.Live, o.Notes, nil
}

func TestLiveInventoryReadsWhatALiveJobNeeds(t *testing.T) {
	dir := t.TempDir()
	latest := "file://" + filepath.Join(dir, "job", "chk-5")
	if err := os.MkdirAll(strings.TrimPrefix(latest, "file://"), 0o755); err != nil {
		t.Fatal(err)
	}
	md := mdwrite.Checkpoint(5, "file://"+filepath.Join(dir, "job", "shared", "s1"))
	if err := os.WriteFile(strings.TrimPrefix(latest, "file://")+"/_metadata", md, 0o644); err != nil {
		t.Fatal(err)
	}
	gone := "file://" + filepath.Join(dir, "savepoint-012345-gone")
	inv := inventory.Inventory{Clusters: []inventory.Cluster{{ClusterID: "c1", RESTURL: "http://c1"}}}
	completed := func(id int64, path string) *flink.CheckpointStatistics {
		return &flink.CheckpointStatistics{ID: id, Status: "COMPLETED", ExternalPath: path}
	}
	// readOnceRunning: the job is read, its latest checkpoint known, once
	// Flink can say what it needs.
	readOnceRunning := func(t *testing.T, a *Activities) {
		live, _, err := liveInventoryIn(t, a, inv)
		if err != nil || live.Clusters[0].Jobs[0].LatestCheckpoint != latest {
			t.Fatalf("live %+v err %v; want the job read once it runs", live, err)
		}
	}
	cases := map[string]struct {
		stats         flink.CheckpointingStatistics
		state         flink.JobState
		initializing  int
		disabled      int
		disabledState flink.JobState
		// detailsUnavailable: see sourcesFlink.
		detailsUnavailable int
		check              func(t *testing.T, a *Activities)
	}{
		// Flink's sparse view of a job that initializes or restarts says
		// checkpointing is not enabled; a plan made then must wait for the
		// job's real settings, not fail on them.
		"job initializing shows no checkpointing, then checkpointed": {
			stats:         flink.CheckpointingStatistics{Latest: flink.LatestCheckpoints{Completed: completed(5, latest)}},
			state:         flink.JobRunning,
			disabled:      3,
			disabledState: flink.JobInitializing,
			check:         readOnceRunning,
		},
		"job initializing shows no checkpointing, its state not read at first": {
			stats:              flink.CheckpointingStatistics{Latest: flink.LatestCheckpoints{Completed: completed(5, latest)}},
			state:              flink.JobRunning,
			disabled:           2,
			disabledState:      flink.JobInitializing,
			detailsUnavailable: 2,
			check:              readOnceRunning,
		},
		// A job that does not come up within the wait is not read as
		// having nothing to keep: the read fails, to be retried.
		"job initializing for longer than the wait": {
			disabled:      1 << 30,
			disabledState: flink.JobInitializing,
			check: func(t *testing.T, a *Activities) {
				a.LiveReadWait = 50 * time.Millisecond
				live, _, err := liveInventoryIn(t, a, inv)
				var appErr *temporal.ApplicationError
				if err == nil || (errors.As(err, &appErr) && appErr.NonRetryable()) || !strings.Contains(err.Error(), "INITIALIZING") {
					t.Fatalf("live %+v err %v; want a retryable error naming the initializing job", live, err)
				}
			},
		},
		"job ended while it showed no checkpointing": {
			disabled:      1 << 30,
			disabledState: flink.JobCanceled,
			check: func(t *testing.T, a *Activities) {
				live, _, err := liveInventoryIn(t, a, inv)
				if err != nil || len(live.Clusters[0].Jobs) != 0 {
					t.Fatalf("live %+v err %v; want the ended job left out", live, err)
				}
			},
		},
		// What a running job without checkpointing restored from is not
		// known: the plan fails, naming why.
		"running job without checkpointing": {
			disabled:      1 << 30,
			disabledState: flink.JobRunning,
			check: func(t *testing.T, a *Activities) {
				_, _, err := liveInventoryIn(t, a, inv)
				var appErr *temporal.ApplicationError
				if !errors.As(err, &appErr) || !appErr.NonRetryable() || !strings.Contains(err.Error(), "Checkpointing is not enabled") {
					t.Fatalf("err %v; want a non-retryable error saying checkpointing is not enabled", err)
				}
			},
		},
		"job still initializing, then checkpointed": {
			stats:        flink.CheckpointingStatistics{Latest: flink.LatestCheckpoints{Completed: completed(5, latest)}},
			state:        flink.JobRunning,
			initializing: 3,
			check:        readOnceRunning,
		},
		"latest checkpoint read, restore point gone but superseded": {
			stats: flink.CheckpointingStatistics{Latest: flink.LatestCheckpoints{Completed: completed(5, latest),
				Restored: &flink.RestoredCheckpoint{ID: 3, ExternalPath: gone}},
				History: []flink.CheckpointStatistics{{ID: 6, Status: "IN_PROGRESS", TriggerTimestamp: 1_700_000_000_000}}},
			state: flink.JobRunning,
			check: func(t *testing.T, a *Activities) {
				live, notes, err := liveInventoryIn(t, a, inv)
				if err != nil {
					t.Fatal(err)
				}
				j := live.Clusters[0].Jobs[0]
				if j.LatestCheckpoint != latest || j.RestorePath != "" || j.InFlightCheckpoint != 6 || !j.OldestPending.Equal(time.UnixMilli(1_700_000_000_000)) ||
					j.CheckpointTimeout != 10*time.Minute {
					t.Fatalf("live job %+v", j)
				}
				if m := live.Metadata[latest+"/_metadata"]; m.Refs == nil {
					t.Fatalf("latest checkpoint's metadata not read: %+v (have %v)", m, live.Metadata)
				}
				if len(notes) != 1 || !strings.Contains(notes[0], "no longer exists") {
					t.Fatalf("notes %v; want the gone restore point reported", notes)
				}
				if live.Clusters[0].HADir != "hdfs://nn/ha/orders" || live.Clusters[0].HAUnknown {
					t.Fatalf("HA dir %q unknown %v", live.Clusters[0].HADir, live.Clusters[0].HAUnknown)
				}
			},
		},
		"restore point gone and nothing since: unknown": {
			stats: flink.CheckpointingStatistics{Latest: flink.LatestCheckpoints{Restored: &flink.RestoredCheckpoint{ID: 3, ExternalPath: gone}}},
			state: flink.JobRunning,
			check: func(t *testing.T, a *Activities) {
				live, _, err := liveInventoryIn(t, a, inv)
				if err != nil {
					t.Fatal(err)
				}
				if m := live.Metadata[gone+"/_metadata"]; m.Error == "" {
					t.Fatalf("gone restore point recorded as %+v; want an error the planner refuses", m)
				}
			},
		},
		"checkpoint kept in JobManager memory": {
			stats: flink.CheckpointingStatistics{Latest: flink.LatestCheckpoints{Completed: completed(2, "<checkpoint-not-externalized>")}},
			state: flink.JobRunning,
			check: func(t *testing.T, a *Activities) {
				live, _, err := liveInventoryIn(t, a, inv)
				if err != nil || live.Clusters[0].Jobs[0].LatestCheckpoint != "" || len(live.Metadata) != 0 {
					t.Fatalf("live %+v err %v; want a job without a checkpoint on storage", live, err)
				}
			},
		},
		"latest checkpoint missing, job ended meanwhile": {
			stats: flink.CheckpointingStatistics{Latest: flink.LatestCheckpoints{Completed: completed(9, "file://"+filepath.Join(dir, "job", "chk-9"))}},
			state: flink.JobCanceled,
			check: func(t *testing.T, a *Activities) {
				live, _, err := liveInventoryIn(t, a, inv)
				if err != nil || len(live.Clusters[0].Jobs) != 0 {
					t.Fatalf("live %+v err %v; want the ended job left out", live, err)
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ff := &sourcesFlink{stats: tc.stats, state: tc.state, initializing: tc.initializing, disabled: tc.disabled, disabledState: tc.disabledState, detailsUnavailable: tc.detailsUnavailable, config: flink.Config{
				{Key: "high-availability.type", Value: "zookeeper"}, {Key: "high-availability.storageDir", Value: "hdfs://nn/ha/"},
				{Key: "high-availability.cluster-id", Value: "/orders"}}}
			a := &Activities{Flink: acttest.OneClient{C: ff}, Storage: &storage.Resolver{}, PollInterval: time.Millisecond}
			tc.check(t, a)
		})
	}
}

// TestLiveInventoryReadsTheDrillCluster: a drill in flight restores a
// snapshot of the fleet on a cluster outside the inventory; its job is
// read as a live job, so what it restores from is kept like any live
// job's restore point. A drill cluster that does not answer fails the read.
func TestLiveInventoryReadsTheDrillCluster(t *testing.T) {
	dir := t.TempDir()
	drilled := savepointWithMetadata(t, dir, "savepoint-012345-0123456789ab")
	drill := &sourcesFlink{state: flink.JobRunning, stats: flink.CheckpointingStatistics{Latest: flink.LatestCheckpoints{
		Restored: &flink.RestoredCheckpoint{ID: 1, IsSavepoint: true, ExternalPath: drilled}}}}
	inv := inventory.Inventory{Clusters: []inventory.Cluster{{ClusterID: "c1", RESTURL: "http://c1"}}}
	a := &Activities{Flink: clientsByURL{"http://c1": &emptyCluster{}, "http://drill:8081": drill}, Storage: &storage.Resolver{}, PollInterval: time.Millisecond,
		Drill: core.DrillSettings{ClusterRESTURL: "http://drill:8081", Root: "file://" + filepath.Join(dir, "drills")}}
	live, _, err := liveInventoryIn(t, a, inv)
	if err != nil {
		t.Fatal(err)
	}
	var restores []string
	for _, c := range live.Clusters {
		for _, j := range c.Jobs {
			if c.ClusterID == DrillClusterID {
				restores = append(restores, j.RestorePath)
			}
		}
	}
	if len(restores) != 1 || restores[0] != drilled || live.Metadata[drilled+"/_metadata"].Refs == nil {
		t.Fatalf("drill cluster's jobs restore from %v (metadata %+v); want %s", restores, live.Metadata, drilled)
	}
	a.Flink = clientsByURL{"http://c1": &emptyCluster{}, "http://drill:8081": &downCluster{}}
	if _, _, err := liveInventoryIn(t, a, inv); err == nil || !strings.Contains(err.Error(), "drill cluster") {
		t.Fatalf("drill cluster down: %v; want the read to fail naming it", err)
	}
}

// emptyCluster runs no job; downCluster does not answer.
type emptyCluster struct{ sourcesFlink }

func (emptyCluster) ListJobs(context.Context) ([]flink.JobOverview, error) { return nil, nil }

type downCluster struct{ core.FlinkAPI }

func (downCluster) ListJobs(context.Context) ([]flink.JobOverview, error) {
	return nil, &flink.Error{Op: "list jobs", Reason: flink.ErrorReasonUnavailable, Retryable: true, Message: "connection refused"}
}

// failedCluster lists one FAILED job, whose restore point is the given
// snapshot.
type failedCluster struct{ sourcesFlink }

func (f *failedCluster) ListJobs(context.Context) ([]flink.JobOverview, error) {
	return []flink.JobOverview{{ID: "0123456789abcdef0123456789abcdef", State: flink.JobFailed}}, nil
}

// TestLiveInventoryKeepsAFailedRestore: a job restored from a snapshot
// that then failed is retried from that snapshot, so while its cluster
// lists it, it counts as live with that restore point.
func TestLiveInventoryKeepsAFailedRestore(t *testing.T) {
	dir := t.TempDir()
	sp := savepointWithMetadata(t, dir, "savepoint-012345-0123456789ab")
	ff := &failedCluster{sourcesFlink{stats: flink.CheckpointingStatistics{Latest: flink.LatestCheckpoints{
		Restored: &flink.RestoredCheckpoint{ID: 1, IsSavepoint: true, ExternalPath: sp}}}}}
	a := &Activities{Flink: acttest.OneClient{C: ff}, Storage: &storage.Resolver{}, PollInterval: time.Millisecond}
	live, notes, err := liveInventoryIn(t, a, inventory.Inventory{Clusters: []inventory.Cluster{{ClusterID: "c1", RESTURL: "http://c1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(live.Clusters[0].Jobs) != 1 || live.Clusters[0].Jobs[0].RestorePath != sp || live.Metadata[sp+"/_metadata"].Refs == nil {
		t.Fatalf("live %+v; want the failed job live with restore point %s", live, sp)
	}
	if len(notes) == 0 || !strings.Contains(strings.Join(notes, "\n"), "failed job") {
		t.Fatalf("notes %q; want the failed job said", notes)
	}

	// Flink not answering, or not ready, at first is asked again, not read
	// as "nothing to keep"; not answering at all fails the read.
	ff.initializing, ff.unanswered = 2, 2
	live, _, err = liveInventoryIn(t, a, inventory.Inventory{Clusters: []inventory.Cluster{{ClusterID: "c1", RESTURL: "http://c1"}}})
	if err != nil || len(live.Clusters[0].Jobs) != 1 || live.Clusters[0].Jobs[0].RestorePath != sp {
		t.Fatalf("live %+v err %v; want the failed job read once Flink answers", live, err)
	}
	ff.unanswered = 1 << 30
	a.LiveReadWait = 50 * time.Millisecond
	if _, _, err := liveInventoryIn(t, a, inventory.Inventory{Clusters: []inventory.Cluster{{ClusterID: "c1", RESTURL: "http://c1"}}}); err == nil {
		t.Fatal("Flink never answered about the failed job, and the read went on without it")
	}
	// A JobManager that recovered only the job's result fails internally
	// on its statistics for as long as it lists it: said, not waited for.
	ff.unanswered, ff.initializing = 0, 1<<30
	live, notes, err = liveInventoryIn(t, a, inventory.Inventory{Clusters: []inventory.Cluster{{ClusterID: "c1", RESTURL: "http://c1"}}})
	if err != nil || len(live.Clusters[0].Jobs) != 0 || !strings.Contains(strings.Join(notes, "\n"), "not readable") {
		t.Fatalf("live %+v notes %q err %v; want the failed job said and nothing kept for it", live, notes, err)
	}
}

// TestLiveInventoryKeepsWhatAFailedRestoreFailedOn: a job that failed
// while restoring has no restore point in its statistics; Flink names the
// snapshot in its exception history, and a retry restores from it. A
// history that cannot be read leaves the restore source unknown, said for
// the planner to keep every snapshot; one that names no restore (the job
// failed after it started) keeps nothing for it.
func TestLiveInventoryKeepsWhatAFailedRestoreFailedOn(t *testing.T) {
	dir := t.TempDir()
	sp := savepointWithMetadata(t, dir, "savepoint-012345-0123456789ab")
	inv := inventory.Inventory{Clusters: []inventory.Cluster{{ClusterID: "c1", RESTURL: "http://c1"}}}
	for name, tc := range map[string]struct {
		stacktrace    string
		exceptionsErr error
		restore       string
		unknown       bool
	}{
		"state that cannot be mapped": {stacktrace: "java.lang.IllegalStateException: Failed to rollback to checkpoint/savepoint " + sp +
			". Cannot map checkpoint/savepoint state for operator 0a448493b4782967b150582570326227 to the new program, because the operator is not available in the new program.",
			restore: sp},
		"a changed max parallelism, the _metadata named": {stacktrace: "java.lang.IllegalStateException: Failed to rollback to checkpoint/savepoint " + sp + "/_metadata" +
			". The max parallelism changed from 128 to 256.\n\tat org.apache.flink...", restore: sp},
		"a failure after the start":     {stacktrace: "java.lang.RuntimeException: boom"},
		"a history that cannot be read": {exceptionsErr: &flink.Error{Op: "exceptions", StatusCode: 500, Message: "internal"}, unknown: true},
	} {
		t.Run(name, func(t *testing.T) {
			ff := &failedCluster{sourcesFlink{exceptionsErr: tc.exceptionsErr, exceptions: flink.JobExceptions{History: flink.ExceptionHistory{
				Entries: []flink.RootException{{ExceptionName: "x", Stacktrace: tc.stacktrace}}}}}}
			a := &Activities{Flink: acttest.OneClient{C: ff}, Storage: &storage.Resolver{}, PollInterval: time.Millisecond, LiveReadWait: 50 * time.Millisecond}
			live, notes, err := liveInventoryIn(t, a, inv)
			if err != nil {
				t.Fatal(err)
			}
			jobs := live.Clusters[0].Jobs
			switch {
			case tc.restore != "" && (len(jobs) != 1 || jobs[0].RestorePath != tc.restore || live.Metadata[tc.restore+"/_metadata"].Refs == nil):
				t.Fatalf("live %+v notes %q; want the failed job live with restore point %s", live, notes, tc.restore)
			case tc.unknown && (len(jobs) != 1 || jobs[0].RestoreUnknown == "" || jobs[0].RestorePath != ""):
				t.Fatalf("live %+v notes %q; want the failed job's restore source unknown", live, notes)
			case tc.restore == "" && !tc.unknown && len(jobs) != 0:
				t.Fatalf("live %+v; want nothing kept for a job that failed after it started", live)
			}
		})
	}
}

// fakeRuns answers what flinkmaint's runs in flight hold.
type fakeRuns struct {
	held []core.RunSnapshot
	err  error
}

func (f fakeRuns) SnapshotsInUse(context.Context) ([]core.RunSnapshot, error) { return f.held, f.err }

// TestLiveInventoryReadsRunsInFlight: a savepoint a window or upgrade in
// flight holds is a record, with what it names read as a live job's is; a
// run that cannot be asked fails the read, so nothing is deleted on a
// guess.
func TestLiveInventoryReadsRunsInFlight(t *testing.T) {
	dir := t.TempDir()
	sp := savepointWithMetadata(t, dir, "savepoint-012345-0123456789ab")
	gone := "file://" + filepath.Join(dir, "savepoints", "savepoint-012345-ffffffffffff")
	inv := inventory.Inventory{Clusters: []inventory.Cluster{{ClusterID: "c1", RESTURL: "http://c1"}}}
	a := &Activities{Flink: clientsByURL{"http://c1": &emptyCluster{}}, Storage: &storage.Resolver{}, PollInterval: time.Millisecond,
		Runs: fakeRuns{held: []core.RunSnapshot{
			{Run: "window-w1", Path: sp + "/", What: "window savepoint of job a"},
			{Run: "upgrade-u1", Path: gone, What: "pre-upgrade savepoint of job b"},
		}}}
	live, notes, err := liveInventoryIn(t, a, inv)
	if err != nil {
		t.Fatal(err)
	}
	if len(live.Records) != 1 || live.Records[0].Path != sp || live.Records[0].Run != "window-w1" || !strings.Contains(live.Records[0].By, "window-w1") {
		t.Fatalf("records %+v; want %s held by window-w1", live.Records, sp)
	}
	if live.Metadata[sp+"/_metadata"].Refs == nil {
		t.Fatalf("metadata %+v; want what %s names read", live.Metadata, sp)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "upgrade-u1") || !strings.Contains(strings.Join(notes, "\n"), "does not exist") {
		t.Fatalf("notes %q; want the missing pre-upgrade savepoint said", notes)
	}
	a.Runs = fakeRuns{err: errors.New("context deadline exceeded")}
	_, _, err = liveInventoryIn(t, a, inv)
	if err == nil || !strings.Contains(err.Error(), "runs in flight") {
		t.Fatalf("runs not answering: %v; want the read to fail naming them", err)
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.NonRetryable() {
		t.Fatalf("runs not answering is final (%v); want it retried", err)
	}
}

// savepointWithMetadata writes a savepoint's _metadata, naming one state
// file in its dir, under dir/savepoints/name and returns the savepoint's
// URI.
func savepointWithMetadata(t *testing.T, dir, name string) string {
	t.Helper()
	sp := filepath.Join(dir, "savepoints", name)
	if err := os.MkdirAll(sp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sp+"/_metadata", mdwrite.Savepoint("state"), 0o644); err != nil {
		t.Fatal(err)
	}
	return "file://" + sp
}
