//go:build realpeers

package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/flink"
)

// TestStopWithSavepointFindsTheSavepointOfAForgottenStop reproduces a stop
// retried after Flink forgot its trigger (operation cache expiry,
// JobManager failover) on a real cluster: the job already FINISHED with a
// savepoint, and the retry's trigger is unknown to Flink. The activity
// returns that savepoint instead of failing with a text that says the job
// keeps running; a job cancelled without a savepoint gets the truth.
func TestStopWithSavepointFindsTheSavepointOfAForgottenStop(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e := newFailClosedEnv(t, ctx)
	c := e.peers.Clusters[0]
	target := e.root + "/a/savepoints"
	job := func(name string) (core.JobTarget, *flink.Client) {
		fc, id := e.start(ctx, c, name, e.root+"/a/checkpoints", "", "", nil)
		e.checkpointed(ctx, fc, id, 1)
		return core.JobTarget{Key: c.ClusterID + "/" + name, ClusterID: c.ClusterID, JobID: id, RESTURL: c.RESTURL, SavepointDir: target}, fc
	}

	stopped, fc := job("forgotten-stop")
	tr, err := fc.StopWithSavepoint(ctx, stopped.JobID, flink.StopRequest{TargetDirectory: target, TriggerID: strings.Repeat("1", 32)})
	if err != nil {
		t.Fatal(err)
	}
	want, err := fc.AwaitSavepoint(ctx, stopped.JobID, tr.TriggerID)
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor(ctx, time.Minute, "job finished", func() (bool, string) {
		s, err := fc.JobState(ctx, stopped.JobID)
		return err == nil && s == flink.JobFinished, stringOr(err, string(s))
	})
	var res core.StopWithSavepointResult
	err = e.activity(app.NewFamilies(e.acts).Windows.StopWithSavepoint, core.StopWithSavepointInput{Job: stopped, TriggerID: strings.Repeat("2", 32)}, &res)
	if err != nil {
		t.Fatalf("stop retried with a trigger Flink does not know: %v", err)
	}
	if strings.TrimRight(res.SavepointPath, "/") != strings.TrimRight(want, "/") || res.Recovered == "" {
		t.Fatalf("result %+v; want the savepoint %s the job stopped with, marked recovered", res, want)
	}
	var ver windows.VerifySavepointResult
	if err := e.activity(app.NewFamilies(e.acts).Windows.VerifySavepoint, windows.VerifySavepointInput{Path: res.SavepointPath}, &ver); err != nil {
		t.Fatalf("the recovered savepoint does not verify: %v", err)
	}

	cancelled, fc2 := job("cancelled-no-savepoint")
	e.cancel(ctx, fc2, cancelled.JobID)
	err = e.activity(app.NewFamilies(e.acts).Windows.StopWithSavepoint, core.StopWithSavepointInput{Job: cancelled, TriggerID: strings.Repeat("3", 32)}, &res)
	if err == nil || !strings.Contains(err.Error(), core.ErrTypeJobStoppedWithoutSavepoint) || !strings.Contains(err.Error(), "not running") ||
		strings.Contains(err.Error(), "keeps running") {
		t.Fatalf("stop of a cancelled job: %v; want %s saying it is not running", err, core.ErrTypeJobStoppedWithoutSavepoint)
	}
}
