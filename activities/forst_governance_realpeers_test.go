//go:build realpeers

package activities_test

import (
	"context"
	"encoding/json"
	"os"
	"path"
	"sort"
	"strings"
	"testing"
	"time"

	gohdfs "github.com/colinmarc/hdfs/v2"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// TestForStJobThroughGovernanceAutoOnRealFlink2 runs a governance run in
// auto mode (plan and execute, no approval) over the tenant of a live
// Flink 2.3 ForSt job whose working files live on HDFS in its shared/ dir
// (primary dir at its default). The working files are aged a quarter year,
// past every grace period and TTL, and a retired job's dir beside it is
// garbage. The run trashes the garbage and plans nothing under the live
// job's dir; the job keeps running and checkpointing, and once cancelled it
// restores from its latest checkpoint.
func TestForStJobThroughGovernanceAutoOnRealFlink2(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e := newForStEnv(t, ctx, "forst-gov", "/tenant/checkpoints", "/tenant/savepoints", "/trash", "/plans")
	p, c, hc, fc, sfx, plain, root := e.p, e.c, e.hc, e.fc, e.sfx, e.plain, e.root
	ckpt := root + "/tenant/checkpoints"
	args := []string{"--job-name", "forst-gov", "--checkpoint-dir", ckpt, "--keys", "2000", "--value-bytes", "256", "--rate", "300",
		"--state-backend", "forst"}
	jobID := e.run(t, ctx, flink.RunJarRequest{EntryClass: p.SampleJob.EntryClass, ProgramArgs: args})
	completed := func(id string) int64 {
		st, err := fc.Checkpoints(ctx, id)
		if err != nil {
			return -1
		}
		return st.Counts.Completed
	}
	peertest.WaitFor(t, ctx, 3*time.Minute, "5 completed checkpoints of ForSt job "+jobID, func() (bool, string) {
		n := completed(jobID)
		return n >= 5, "completed " + jsonString(n)
	})

	// Age the ForSt working files (op_* dirs in shared/) a quarter year.
	jobDir := plain + "/tenant/checkpoints/" + jobID
	longAgo := time.Now().Add(-90 * 24 * time.Hour)
	var working []string
	entries, err := hc.ReadDir(jobDir + "/shared")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := layout.ParseForStWorkingDir(e.Name()); ok && e.IsDir() {
			working = append(working, jobDir+"/shared/"+e.Name())
		}
	}
	if len(working) == 0 {
		t.Fatalf("no ForSt working dir in %s/shared", jobDir)
	}
	aged := ageTree(t, hc, working, longAgo)
	// Garbage: a retired job's dir, a month old.
	retired := plain + "/tenant/checkpoints/" + strings.Repeat("ab", 16)
	for _, f := range []string{"chk-7/_metadata-partial", "shared/s1", "taskowned/t1"} {
		if err := hc.MkdirAll(path.Dir(retired+"/"+f), 0o755); err != nil {
			t.Fatal(err)
		}
		w, err := hc.Create(retired + "/" + f)
		if err == nil {
			_, _ = w.Write(make([]byte, 64))
			err = w.Close()
		}
		if err != nil && !strings.Contains(err.Error(), "replication in progress") {
			t.Fatal(err)
		}
	}
	ageTree(t, hc, []string{retired}, time.Now().Add(-30*24*time.Hour))
	before := completed(jobID)
	t.Logf("ForSt job %s: %d working dirs, %d files aged to %s; %d checkpoints so far", jobID, len(working), aged, longAgo.Format(time.DateOnly), before)

	tenant := "forst-gov-" + sfx
	static := inventory.Static{Tenants: []inventory.Tenant{{Name: tenant, Root: root + "/tenant"}}, Clusters: []inventory.Cluster{{
		Tenant: tenant, ClusterID: c.ClusterID, Mode: inventory.ModeSession, RESTURL: c.RESTURL,
		CheckpointDir: ckpt, SavepointDir: root + "/tenant/savepoints"}}}
	acts := forStActivities(t, p, static, root)
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	queue := "forst-gov-" + sfx
	w := worker.New(tmp.Client, queue, worker.Options{})
	app.Register(w, acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	in := workflows.GovernanceInput{RunID: "forst-" + sfx, Reason: "ForSt beside garbage", Mode: workflows.ModeAuto,
		Scope: core.Scope{Tenants: []string{tenant}}}
	wf, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.GovernanceWorkflowID(in.RunID), TaskQueue: queue},
		workflows.GovernanceWorkflowType, in)
	if err != nil {
		t.Fatal(err)
	}
	var rep workflows.GovernanceReport
	if err := wf.Get(ctx, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Outcome != workflows.GovernancePhaseCompleted || rep.Execution == nil {
		t.Fatalf("governance run %s: execution %+v", rep.Outcome, rep.Execution)
	}

	// The plan: the retired dir is garbage; nothing of the live job.
	fs, pp, err := acts.Storage.Resolve(ctx, rep.PlanPath)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := cleanup.ReadPlan(ctx, fs, pp)
	if err != nil {
		t.Fatal(err)
	}
	var planned []string
	for _, it := range plan.Delete {
		path := strings.TrimPrefix(it.Path, p.HDFS.URI)
		planned = append(planned, path)
		if path == jobDir || strings.HasPrefix(path, jobDir+"/") {
			t.Errorf("live ForSt job %s: planned %s (%s: %s)", jobID, path, it.Rule, it.Detail)
		}
	}
	sort.Strings(planned)
	if len(planned) != 1 || planned[0] != retired {
		t.Errorf("planned %v; want only the retired job's dir %s", planned, retired)
	}
	keptForSt := 0
	for _, k := range plan.Keep {
		if k.Reason == cleanup.KeepForStWorkingState {
			keptForSt++
		}
	}
	// Working files a retained checkpoint references are kept as referenced; the others by the
	// ForSt rule (proven file by file in internal/cleanup's TestRealForStWorkingFilesNeverPlannedWhileLive).
	t.Logf("plan: %d deletions, %d kept, %d of them as %s", len(plan.Delete), len(plan.Keep), keptForSt, cleanup.KeepForStWorkingState)
	if _, err := hc.Stat(retired); !os.IsNotExist(err) {
		t.Errorf("retired dir %s after the run: %v; want it in trash", retired, err)
	}
	for _, d := range working {
		if _, err := hc.Stat(d); err != nil {
			t.Errorf("ForSt working dir %s after the run: %v", d, err)
		}
	}

	// The job keeps running and checkpointing.
	peertest.WaitFor(t, ctx, 3*time.Minute, "2 more checkpoints of ForSt job "+jobID+" after the run", func() (bool, string) {
		n := completed(jobID)
		return n >= before+2, "completed " + jsonString(n)
	})
	if s, err := fc.JobState(ctx, jobID); err != nil || s != flink.JobRunning {
		t.Fatalf("ForSt job after governance: %s, %v", s, err)
	}
	// A failover may come from Flink itself (2.3.0 ForSt may fail a snapshot when a working
	// file vanishes under its listing, cf. FLINK-37437), never from a file the run moved.
	exc, err := fc.JobExceptions(ctx, jobID, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range exc.History.Entries {
		t.Logf("ForSt job %s failed over: %s", jobID, firstLine(x.Stacktrace))
		for _, moved := range planned {
			if strings.Contains(x.Stacktrace, moved) {
				t.Fatalf("ForSt job %s failed over on a path the run moved (%s): %s", jobID, moved, x.Stacktrace)
			}
		}
	}

	// Cancelled, it restores from its latest checkpoint.
	if err := fc.CancelJob(ctx, jobID); err != nil {
		t.Fatal(err)
	}
	peertest.WaitFor(t, ctx, time.Minute, "ForSt job "+jobID+" CANCELED", func() (bool, string) {
		s, err := fc.JobState(ctx, jobID)
		return err == nil && s == flink.JobCanceled, string(s)
	})
	stats, err := fc.Checkpoints(ctx, jobID)
	if err != nil || stats.Latest.Completed == nil {
		t.Fatalf("checkpoints of %s: %+v %v", jobID, stats, err)
	}
	latest := strings.TrimRight(stats.Latest.Completed.ExternalPath, "/")
	restoredID := e.run(t, ctx, flink.RunJarRequest{EntryClass: p.SampleJob.EntryClass, ProgramArgs: args, SavepointPath: latest})
	peertest.WaitFor(t, ctx, 3*time.Minute, "a checkpoint of the restored job "+restoredID, func() (bool, string) {
		st, err := fc.Checkpoints(ctx, restoredID)
		if err != nil {
			return false, err.Error()
		}
		s, _ := fc.JobState(ctx, restoredID)
		if s.IsGloballyTerminal() {
			t.Fatalf("job restored from %s ended %s", latest, s)
		}
		ok := st.Latest.Restored != nil && strings.TrimRight(st.Latest.Restored.ExternalPath, "/") == latest && st.Counts.Completed > 0
		return ok, string(s) + ", completed " + jsonString(st.Counts.Completed)
	})
}

// ageTree sets the times of every file and dir under roots, children first
// (creating a child touches its parent), and returns how many files.
func ageTree(t *testing.T, hc *gohdfs.Client, roots []string, when time.Time) int {
	t.Helper()
	var all []string
	files := 0
	for _, r := range roots {
		err := hc.Walk(r, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				// A live ForSt instance deletes files as it compacts.
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			all = append(all, p)
			if !fi.IsDir() {
				files++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(all)))
	for _, p := range all {
		if err := hc.Chtimes(p, when, when); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	return files
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
