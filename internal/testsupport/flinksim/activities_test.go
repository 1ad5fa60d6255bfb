package flinksim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// clients hands out one real Flink client per REST URL, as the worker does.
type clients struct {
	mu sync.Mutex
	m  map[string]*flink.Client
}

func (c *clients) For(_ context.Context, url string) (core.FlinkAPI, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.m[url]; ok {
		return cl, nil
	}
	cl, err := flink.New(flink.Options{BaseURL: url, PollInterval: 10 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]*flink.Client{}
	}
	c.m[url] = cl
	return cl, nil
}

type staticInventory inventory.Inventory

func (s staticInventory) Discover(context.Context) (inventory.Inventory, error) {
	return inventory.Inventory(s), nil
}

func execute[T any](t *testing.T, a *app.Ports, fn any, in any) (T, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	app.RegisterActivities(env, a)
	var out T
	v, err := env.ExecuteActivity(fn, in)
	if err == nil && v.HasValue() {
		err = v.Get(&out)
	}
	return out, err
}

// TestWindowActivities runs the maintenance-window activities, unchanged,
// against simulated clusters: discover, quota, stop with savepoint, verify,
// restart (twice, as a retry would), await health, cancel.
func TestWindowActivities(t *testing.T) {
	f, err := Start(Options{SavepointDelay: 30 * time.Millisecond, CheckpointDelay: 30 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	root := t.TempDir()
	jar := filepath.Join(root, "sample-job.jar")
	if err := os.WriteFile(jar, []byte("jar"), 0o644); err != nil {
		t.Fatal(err)
	}
	tenantRoot := "file://" + filepath.Join(root, "team-a")
	inv := inventory.Inventory{Tenants: []inventory.Tenant{{Name: "team-a", Root: tenantRoot}}}
	oldIDs := map[string]string{}
	for c := range 2 {
		id := fmt.Sprintf("session-%d", c)
		cfg := ClusterConfig{CheckpointDir: tenantRoot + "/checkpoints", SavepointDir: tenantRoot + "/savepoints"}
		url, err := f.AddClusterWith(id, cfg)
		if err != nil {
			t.Fatal(err)
		}
		cl := inventory.Cluster{Tenant: "team-a", ClusterID: id, Source: inventory.SourceStatic, Mode: inventory.ModeSession,
			RESTURL: url, CheckpointDir: cfg.CheckpointDir, SavepointDir: cfg.SavepointDir}
		for n := range 3 {
			name := fmt.Sprintf("job-%d", n)
			jobID := f.AddJob(id, name, "")
			oldIDs[core.JobKey(id, name)] = jobID
			cl.Jobs = append(cl.Jobs, inventory.JobSpec{Name: name, Restart: inventory.RestartRecipe{
				Kind: inventory.RestartRESTJarRun, Jar: jar, EntryClass: "io.github.flinkmaint.sandbox.job.StatefulSampleJob",
				ProgramArgs: []string{"--job-name", name}, Parallelism: 1, RestoreMode: "NO_CLAIM"}})
		}
		inv.Clusters = append(inv.Clusters, cl)
	}
	a := &app.Ports{Identity: "flinksim-test", PollInterval: 10 * time.Millisecond,
		Inventory: staticInventory(inv), Flink: &clients{}, Storage: &storage.Resolver{}}
	win := app.NewFamilies(a).Windows

	found, err := execute[core.DiscoverJobsResult](t, a, win.DiscoverJobs, core.DiscoverJobsInput{})
	if err != nil || len(found.Jobs) != 6 || len(found.Skipped) != 0 {
		t.Fatalf("discover = %d jobs, %d skipped, %v; want 6 and 0", len(found.Jobs), len(found.Skipped), err)
	}
	var urls []string
	for _, c := range found.Clusters {
		urls = append(urls, c.RESTURL)
	}
	if _, err := execute[windows.ProbeEndpointsResult](t, a, win.ProbeEndpoints,
		windows.ProbeEndpointsInput{StorageRoots: []string{tenantRoot}, FlinkURLs: urls}); err != nil {
		t.Fatalf("probe: %v", err)
	}

	// Let every job write a checkpoint, so the quota projection measures one.
	time.Sleep(60 * time.Millisecond)
	var footprints []capacity.RestartFootprintInput
	for _, j := range found.Jobs {
		footprints = append(footprints, capacity.RestartFootprintInput{Key: j.Key, Tenant: j.Tenant,
			CheckpointDir: j.CheckpointDir + "/" + j.JobID})
	}
	for _, info := range append(f.Jobs("session-0"), f.Jobs("session-1")...) {
		if info.LatestCheckpoint == 0 || info.DiskError != "" {
			t.Fatalf("job %+v: want a checkpoint on disk", info)
		}
	}
	quota, err := execute[capacity.CheckQuotaResult](t, a, app.NewFamilies(a).Capacity.CheckQuota, capacity.CheckQuotaInput{
		Tenants: inv.Tenants, WarningPercent: 80, CriticalPercent: 95, Restart: footprints, DefaultRetention: 1})
	if err != nil || len(quota.Tenants) != 1 || quota.Tenants[0].ProjectedFiles == 0 || !quota.Tenants[0].RestartAllowed {
		t.Fatalf("quota = %+v, %v; want a projection that allows the restart", quota, err)
	}

	for i, job := range found.Jobs {
		if job.JobID != oldIDs[job.Key] {
			t.Fatalf("%s: discovered job %s, want %s", job.Key, job.JobID, oldIDs[job.Key])
		}
		trigger := flink.NewTriggerID()
		stop, err := execute[core.StopWithSavepointResult](t, a, win.StopWithSavepoint,
			core.StopWithSavepointInput{Job: job, TriggerID: trigger})
		if err != nil {
			t.Fatalf("%s: stop: %v", job.Key, err)
		}
		// A retried activity re-attaches to the same savepoint.
		retry, err := execute[core.StopWithSavepointResult](t, a, win.StopWithSavepoint,
			core.StopWithSavepointInput{Job: job, TriggerID: trigger})
		if err != nil || !retry.Reattached || retry.SavepointPath != stop.SavepointPath {
			t.Fatalf("%s: retried stop = %+v, %v; want %s again", job.Key, retry, err, stop.SavepointPath)
		}
		verified, err := execute[windows.VerifySavepointResult](t, a, win.VerifySavepoint, windows.VerifySavepointInput{Path: stop.SavepointPath})
		if err != nil || verified.Version != 4 || verified.CheckpointID < 2 || verified.Operators != 2 || verified.Files != 1 {
			t.Fatalf("%s: verify %s = %+v, %v", job.Key, stop.SavepointPath, verified, err)
		}
		newID := flink.NewTriggerID()
		restart := windows.RestartJobInput{Job: job, SavepointPath: stop.SavepointPath, NewJobID: newID}
		if res, err := execute[core.RestartJobResult](t, a, win.RestartJob, restart); err != nil || res.JobID != newID || res.Reattached {
			t.Fatalf("%s: restart = %+v, %v", job.Key, res, err)
		}
		if res, err := execute[core.RestartJobResult](t, a, win.RestartJob, restart); err != nil || res.JobID != newID || !res.Reattached {
			t.Fatalf("%s: retried restart = %+v, %v; want reattached", job.Key, res, err)
		}
		healthy, err := execute[windows.AwaitHealthyResult](t, a, win.AwaitHealthy, windows.AwaitHealthyInput{
			RESTURL: job.RESTURL, JobID: newID, SavepointPath: stop.SavepointPath,
			RunningTimeout: 2 * time.Second, CheckpointTimeout: 2 * time.Second, Soak: 50 * time.Millisecond})
		if err != nil || healthy.RestoredFrom != stop.SavepointPath || healthy.CheckpointID <= verified.CheckpointID {
			t.Fatalf("%s: await healthy = %+v, %v; want restored from %s and a newer checkpoint", job.Key, healthy, err, stop.SavepointPath)
		}
		if i%2 == 0 {
			if _, err := execute[struct{}](t, a, win.CancelJob, core.CancelJobInput{RESTURL: job.RESTURL, JobID: newID}); err != nil {
				t.Fatalf("%s: cancel: %v", job.Key, err)
			}
		}
	}

	// The fleet saw one stop and one savepoint per old job, and each
	// restarted job runs under its old name (or was cancelled).
	for _, cid := range []string{"session-0", "session-1"} {
		for _, info := range f.Jobs(cid) {
			switch {
			case oldIDs[core.JobKey(cid, info.Name)] == info.ID:
				if info.State != "FINISHED" || info.Stops != 1 || len(info.Savepoints) != 1 {
					t.Errorf("old job %+v: want FINISHED after one stop with one savepoint", info)
				}
			case info.RestoredFrom == "" || (info.State != "RUNNING" && info.State != "CANCELED"):
				t.Errorf("restarted job %+v: want RUNNING or CANCELED, restored from a savepoint", info)
			}
		}
	}
	jars, err := newClient(t, found.Jobs[0].RESTURL).ListJars(context.Background())
	if err != nil || len(jars.Files) != 0 {
		t.Errorf("jars left after the restarts: %+v, %v", jars.Files, err)
	}
}
