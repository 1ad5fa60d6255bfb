//go:build realpeers

package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/metrics"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// TestScheduledSavepointsOnRealPeers creates a savepoint schedule, triggers
// it, and checks its run: every running job in scope has a new savepoint
// that verifies and is catalogued as scheduled under its logical job, a
// job out of scope has none, both keep running with the same job id, and
// the metrics say what was taken.
func TestScheduledSavepointsOnRealPeers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	e := newFailClosedEnv(t, ctx)
	gov, err := metrics.NewGovernance(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	e.acts.Metrics = gov
	sfx := peertest.RandomHex(4)
	queue := "scheduled-savepoints-" + sfx
	w := worker.New(tmp.Client, queue, worker.Options{})
	app.Register(w, e.acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	ca := e.peers.Clusters[0]
	ckpts, sps := e.root+"/a/checkpoints", e.root+"/a/savepoints"
	in, out := "sched-orders-"+sfx, "sched-adhoc-"+sfx
	fc, inID := e.start(ctx, ca, in, ckpts, "", "", nil)
	_, outID := e.start(ctx, ca, out, ckpts, "", "", nil)
	e.checkpointed(ctx, fc, inID, 1)
	e.checkpointed(ctx, fc, outID, 1)

	id := workflows.ScheduleID("savepoints-" + sfx)
	input := workflows.ScheduledSavepointsInput{Schedule: "savepoints-" + sfx,
		Scope: core.Scope{Tenants: []string{e.tenant[0]}, IncludeJobs: []string{"sched-*-" + sfx}, ExcludeJobs: []string{out}}}
	h, err := tmp.Client.ScheduleClient().Create(ctx, client.ScheduleOptions{ID: id,
		Spec:   client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: 24 * time.Hour}}},
		Action: &client.ScheduleWorkflowAction{ID: id, Workflow: workflows.ScheduledSavepointsWorkflowType, Args: []interface{}{input}, TaskQueue: queue}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Delete(context.Background()) })
	if err := h.Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
		t.Fatal(err)
	}
	var runID string
	e.waitFor(ctx, time.Minute, "the schedule started a run", func() (bool, string) {
		d, err := h.Describe(ctx)
		if err != nil {
			return false, err.Error()
		}
		if n := len(d.Info.RecentActions); n > 0 && d.Info.RecentActions[n-1].StartWorkflowResult != nil {
			runID = d.Info.RecentActions[n-1].StartWorkflowResult.WorkflowID
		}
		return runID != "", "no run yet"
	})
	var rep workflows.ScheduledSavepointsReport
	if err := tmp.Client.GetWorkflow(ctx, runID, "").Get(ctx, &rep); err != nil {
		t.Fatalf("scheduled run %s: %v", runID, err)
	}
	if rep.Taken != 1 || rep.Failed != 0 || len(rep.Jobs) != 1 || rep.Jobs[0].Key != ca.ClusterID+"/"+in {
		t.Fatalf("report %+v; want one savepoint, of %s", rep, in)
	}
	sp := rep.Jobs[0].SavepointPath
	if !strings.HasPrefix(sp, sps+"/savepoint-") || rep.Jobs[0].Files < 2 {
		t.Fatalf("savepoint %s with %d files; want one under %s with its _metadata and state", sp, rep.Jobs[0].Files, sps)
	}
	var ver windows.VerifySavepointResult
	if err := e.activity(app.NewFamilies(e.acts).Windows.VerifySavepoint, windows.VerifySavepointInput{Path: sp}, &ver); err != nil {
		t.Fatalf("scheduled savepoint does not verify: %v", err)
	}

	// Catalogued under the logical job, by this run.
	fs, root, err := e.acts.Storage.Resolve(ctx, e.root+"/a")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := catalog.Store{FS: fs, Root: root}.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var found []catalog.Entry
	for _, en := range entries {
		if en.Trigger == catalog.TriggerScheduled {
			found = append(found, en)
		}
	}
	want := catalog.LogicalJob{Tenant: e.tenant[0], Cluster: ca.ClusterID, Job: in}
	if len(found) != 1 || found[0].Path != sp || found[0].Job != want || found[0].RunID != runID || found[0].JobID != inID || found[0].Files != ver.Files ||
		found[0].Format != workflows.FormatCanonical {
		t.Fatalf("scheduled catalog entries %+v; want one for %s of %s by run %s", found, sp, want, runID)
	}

	// Both jobs run on, with the same ids: a savepoint stops nothing.
	for name, jobID := range map[string]string{in: inID, out: outID} {
		if d, err := fc.JobDetails(ctx, jobID); err != nil || d.State != flink.JobRunning {
			t.Errorf("%s (%s) is %s after the scheduled savepoint (%v)", name, jobID, d.State, err)
		}
	}
	if got := metricValue(t, gov.SavepointsTaken.WithLabelValues(e.tenant[0])); got != 1 {
		t.Errorf("scheduled_savepoints_taken{tenant=%s} = %v, want 1", e.tenant[0], got)
	}
	if got := metricValue(t, gov.SavepointsFailed.WithLabelValues(e.tenant[0])); got != 0 {
		t.Errorf("scheduled_savepoints_failed{tenant=%s} = %v, want 0", e.tenant[0], got)
	}
}
