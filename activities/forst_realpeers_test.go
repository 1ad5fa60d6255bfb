//go:build realpeers

package activities_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gohdfs "github.com/colinmarc/hdfs/v2"
	"go.temporal.io/sdk/testsuite"
	"gopkg.in/yaml.v3"

	"github.com/flinkmaint/flinkmaint/activities"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/checkpoint"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/sandbox"
)

// TestForStJobsGetNativeSavepointsOnRealFlink2 savepoints a ForSt job on a
// real Flink 2.3 cluster through the activities, asking for the default
// (CANONICAL) format as a window, an upgrade and a savepoint schedule do.
// Flink 2.3's ForSt fails a CANONICAL savepoint by failing the job over
// (shown in internal/sandbox's TestFlink2ForStOnHDFS); the activities take
// NATIVE instead, say why, and the job never fails over: the scheduled
// savepoint leaves it RUNNING with no exception, the stop finishes it, and
// both _metadata say NATIVE.
func TestForStJobsGetNativeSavepointsOnRealFlink2(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	p := sandbox.RequirePeersLine(t, sandbox.Line2)
	c := p.Clusters[0]
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	plain := "/flinkmaint-test/forst-native-" + hex.EncodeToString(b)
	root := p.HDFS.URI + plain
	hc, err := gohdfs.NewClient(gohdfs.ClientOptions{Addresses: []string{p.HDFS.NameNode}, User: p.HDFS.User})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/checkpoints", "/savepoints", "/trash", "/plans"} {
		if err := hc.MkdirAll(plain+d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fc, err := flink.New(flink.Options{BaseURL: c.RESTURL})
	if err != nil {
		t.Fatal(err)
	}
	jarID, err := fc.UploadJar(ctx, p.SampleJob.Jar)
	if err != nil {
		t.Fatal(err)
	}
	run, err := fc.RunJar(ctx, jarID, flink.RunJarRequest{EntryClass: p.SampleJob.EntryClass, ProgramArgs: []string{
		"--job-name", "forst-native", "--checkpoint-dir", root + "/checkpoints", "--keys", "2000", "--value-bytes", "256", "--rate", "300",
		"--state-backend", "forst", "--forst-local"}})
	if err != nil {
		t.Fatal(err)
	}
	// Removed once the job has ended, so nothing writes into a removed tree.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = fc.CancelJob(ctx, run.JobID)
		for ctx.Err() == nil {
			if s, err := fc.JobState(ctx, run.JobID); err != nil || s.IsGloballyTerminal() {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		_ = fc.DeleteJar(ctx, jarID)
		if os.Getenv("FLINKMAINT_KEEP_TEST_TREE") == "" {
			_ = hc.RemoveAll(plain)
		}
		_ = hc.Close()
	})
	waitFor(t, ctx, 3*time.Minute, "a completed checkpoint of ForSt job "+run.JobID, func() (bool, string) {
		st, err := fc.Checkpoints(ctx, run.JobID)
		if err != nil {
			return false, err.Error()
		}
		return st.Counts.Completed > 0, fmt.Sprintf("completed %d", st.Counts.Completed)
	})
	cc, err := fc.CheckpointConfig(ctx, run.JobID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ForSt job %s: state backend %q", run.JobID, cc.StateBackend)

	tenant := "forst-" + hex.EncodeToString(b)
	static := inventory.Static{Tenants: []inventory.Tenant{{Name: tenant, Root: root}}, Clusters: []inventory.Cluster{{
		Tenant: tenant, ClusterID: c.ClusterID, Mode: inventory.ModeSession, RESTURL: c.RESTURL,
		CheckpointDir: root + "/checkpoints", SavepointDir: root + "/savepoints"}}}
	acts := forStActivities(t, p, static, root)
	job := activities.JobTarget{Key: c.ClusterID + "/forst-native", ClusterID: c.ClusterID, Tenant: tenant, JobName: "forst-native",
		JobID: run.JobID, RESTURL: c.RESTURL, SavepointDir: root + "/savepoints"}

	var taken activities.TakeSavepointResult
	runRealActivity(t, acts, acts.TakeSavepoint, activities.TakeSavepointInput{Job: job, TriggerID: strings.Repeat("c", 32), RunID: "forst-scheduled"}, &taken)
	if taken.Format != string(flink.SavepointFormatNative) || !strings.Contains(taken.FormatNote, "ForSt") {
		t.Fatalf("scheduled savepoint %+v; want NATIVE with a note naming ForSt", taken)
	}
	metadataFormat(t, hc, taken.SavepointPath, p.HDFS.URI, "NATIVE")
	if s, err := fc.JobState(ctx, run.JobID); err != nil || s != flink.JobRunning {
		t.Fatalf("ForSt job after its savepoint: %s, %v; want RUNNING", s, err)
	}
	exc, err := fc.JobExceptions(ctx, run.JobID, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(exc.History.Entries) != 0 {
		t.Fatalf("ForSt job failed over during its savepoint: %+v", exc.History.Entries)
	}

	var stopped activities.StopWithSavepointResult
	runRealActivity(t, acts, acts.StopWithSavepoint, activities.StopWithSavepointInput{Job: job, TriggerID: strings.Repeat("d", 32),
		Format: string(flink.SavepointFormatCanonical), RunID: "forst-window"}, &stopped)
	if stopped.Format != string(flink.SavepointFormatNative) || !strings.Contains(stopped.FormatNote, "CANONICAL asked") {
		t.Fatalf("stop %+v; want NATIVE with a note that CANONICAL was asked", stopped)
	}
	metadataFormat(t, hc, stopped.SavepointPath, p.HDFS.URI, "NATIVE")
	waitFor(t, ctx, time.Minute, "ForSt job "+run.JobID+" FINISHED after its stop", func() (bool, string) {
		s, err := fc.JobState(ctx, run.JobID)
		return err == nil && s == flink.JobFinished, string(s)
	})
}

func forStActivities(t *testing.T, p *sandbox.Peers, static inventory.Static, base string) *activities.Activities {
	t.Helper()
	data, err := yaml.Marshal(static)
	if err != nil {
		t.Fatal(err)
	}
	invPath := filepath.Join(t.TempDir(), "inventory.yaml")
	if err := os.WriteFile(invPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Storage.HDFSUser = p.HDFS.User
	cfg.Storage.HadoopConfDir = t.TempDir()
	cfg.Storage.WritableRoots = []string{base}
	cfg.Inventory.StaticFile = invPath
	cfg.Cleanup = config.Cleanup{TrashRoot: base + "/trash", PlanDir: base + "/plans"}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("worker config: %v", err)
	}
	acts, closeAdapters, err := app.NewActivities(cfg, "forst-native-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = closeAdapters() })
	return acts
}

func runRealActivity(t *testing.T, acts *activities.Activities, fn, in, out any) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	v, err := env.ExecuteActivity(fn, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Get(out); err != nil {
		t.Fatal(err)
	}
}

// metadataFormat checks the formatType a savepoint's _metadata records.
func metadataFormat(t *testing.T, hc *gohdfs.Client, savepoint, uri, want string) {
	t.Helper()
	data, err := hc.ReadFile(strings.TrimPrefix(strings.TrimRight(savepoint, "/"), uri) + "/_metadata")
	if err != nil {
		t.Fatal(err)
	}
	md, err := checkpoint.ParseBytes(data, strings.TrimRight(savepoint, "/")+"/_metadata")
	if err != nil {
		t.Fatal(err)
	}
	if md.Properties == nil || md.Properties.FormatType != want {
		t.Fatalf("%s: _metadata properties %+v; want formatType %s", savepoint, md.Properties, want)
	}
}

func waitFor(t *testing.T, ctx context.Context, limit time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	last := ""
	for time.Now().Before(deadline) && ctx.Err() == nil {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("waiting for %s: gave up after %s (last: %s)", what, limit, last)
}
