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

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/checkpoint"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// TestForStJobsGetNativeSavepointsOnRealFlink2 savepoints a ForSt job on a
// real Flink 2.3 cluster through the activities, asking for the default
// (CANONICAL) format as a window, an upgrade and a savepoint schedule do.
// Flink 2.3's ForSt fails a CANONICAL savepoint by failing the job over
// (shown in internal/testsupport/sandbox's TestFlink2ForStOnHDFS); the activities take
// NATIVE instead, say why, and the job never fails over: the scheduled
// savepoint leaves it RUNNING with no exception, the stop finishes it, and
// both _metadata say NATIVE.
func TestForStJobsGetNativeSavepointsOnRealFlink2(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	e := newForStEnv(t, ctx, "forst-native", "/checkpoints", "/savepoints", "/trash", "/plans")
	p, c, hc, fc, root := e.p, e.c, e.hc, e.fc, e.root
	jobID := e.run(t, ctx, flink.RunJarRequest{EntryClass: p.SampleJob.EntryClass, ProgramArgs: []string{
		"--job-name", "forst-native", "--checkpoint-dir", root + "/checkpoints", "--keys", "2000", "--value-bytes", "256", "--rate", "300",
		"--state-backend", "forst", "--forst-local"}})
	peertest.WaitFor(t, ctx, 3*time.Minute, "a completed checkpoint of ForSt job "+jobID, func() (bool, string) {
		st, err := fc.Checkpoints(ctx, jobID)
		if err != nil {
			return false, err.Error()
		}
		return st.Counts.Completed > 0, fmt.Sprintf("completed %d", st.Counts.Completed)
	})
	cc, err := fc.CheckpointConfig(ctx, jobID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ForSt job %s: state backend %q", jobID, cc.StateBackend)

	tenant := "forst-" + e.sfx
	static := inventory.Static{Tenants: []inventory.Tenant{{Name: tenant, Root: root}}, Clusters: []inventory.Cluster{{
		Tenant: tenant, ClusterID: c.ClusterID, Mode: inventory.ModeSession, RESTURL: c.RESTURL,
		CheckpointDir: root + "/checkpoints", SavepointDir: root + "/savepoints"}}}
	acts := forStActivities(t, p, static, root)
	job := core.JobTarget{Key: c.ClusterID + "/forst-native", ClusterID: c.ClusterID, Tenant: tenant, JobName: "forst-native",
		JobID: jobID, RESTURL: c.RESTURL, SavepointDir: root + "/savepoints"}

	var taken windows.TakeSavepointResult
	runRealActivity(t, acts, app.NewFamilies(acts).Windows.TakeSavepoint, windows.TakeSavepointInput{Job: job, TriggerID: strings.Repeat("c", 32), RunID: "forst-scheduled"}, &taken)
	if taken.Format != string(flink.SavepointFormatNative) || !strings.Contains(taken.FormatNote, "ForSt") {
		t.Fatalf("scheduled savepoint %+v; want NATIVE with a note naming ForSt", taken)
	}
	metadataFormat(t, hc, taken.SavepointPath, p.HDFS.URI, "NATIVE")
	if s, err := fc.JobState(ctx, jobID); err != nil || s != flink.JobRunning {
		t.Fatalf("ForSt job after its savepoint: %s, %v; want RUNNING", s, err)
	}
	exc, err := fc.JobExceptions(ctx, jobID, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(exc.History.Entries) != 0 {
		t.Fatalf("ForSt job failed over during its savepoint: %+v", exc.History.Entries)
	}

	var stopped core.StopWithSavepointResult
	runRealActivity(t, acts, app.NewFamilies(acts).Windows.StopWithSavepoint, core.StopWithSavepointInput{Job: job, TriggerID: strings.Repeat("d", 32),
		Format: string(flink.SavepointFormatCanonical), RunID: "forst-window"}, &stopped)
	if stopped.Format != string(flink.SavepointFormatNative) || !strings.Contains(stopped.FormatNote, "CANONICAL asked") {
		t.Fatalf("stop %+v; want NATIVE with a note that CANONICAL was asked", stopped)
	}
	metadataFormat(t, hc, stopped.SavepointPath, p.HDFS.URI, "NATIVE")
	peertest.WaitFor(t, ctx, time.Minute, "ForSt job "+jobID+" FINISHED after its stop", func() (bool, string) {
		s, err := fc.JobState(ctx, jobID)
		return err == nil && s == flink.JobFinished, string(s)
	})
}

// forStEnv is one ForSt test's private tree on the sandbox HDFS and the
// Flink 2.3 cluster it runs the sample job on. Its cleanup ends every job
// it started before it removes the tree: ForSt writes there until its task
// is gone.
type forStEnv struct {
	p           *sandbox.Peers
	c           sandbox.FlinkCluster
	hc          *gohdfs.Client
	fc          *flink.Client
	jarID       string
	sfx         string // random, names the tree, tenant and runs
	plain, root string // /flinkmaint-test/<name>-<sfx>, and as an hdfs:// URI
	jobs        []string
}

func newForStEnv(t *testing.T, ctx context.Context, name string, dirs ...string) *forStEnv {
	t.Helper()
	e := &forStEnv{p: sandbox.RequirePeersLine(t, sandbox.Line2)}
	e.c = e.p.Clusters[0]
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	e.sfx = hex.EncodeToString(b)
	e.plain = "/flinkmaint-test/" + name + "-" + e.sfx
	e.root = e.p.HDFS.URI + e.plain
	var err error
	if e.hc, err = gohdfs.NewClient(gohdfs.ClientOptions{Addresses: []string{e.p.HDFS.NameNode}, User: e.p.HDFS.User}); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if err := e.hc.MkdirAll(e.plain+d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if e.fc, err = flink.New(flink.Options{BaseURL: e.c.RESTURL}); err != nil {
		t.Fatal(err)
	}
	if e.jarID, err = e.fc.UploadJar(ctx, e.p.SampleJob.Jar); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for _, id := range e.jobs {
			_ = e.fc.CancelJob(ctx, id)
			for ctx.Err() == nil {
				if s, err := e.fc.JobState(ctx, id); err != nil || s.IsGloballyTerminal() {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
		_ = e.fc.DeleteJar(ctx, e.jarID)
		if os.Getenv("FLINKMAINT_KEEP_TEST_TREE") == "" {
			_ = e.hc.RemoveAll(e.plain)
		}
		_ = e.hc.Close()
	})
	return e
}

// run submits the uploaded sample jar and returns the job's ID.
func (e *forStEnv) run(t *testing.T, ctx context.Context, req flink.RunJarRequest) string {
	t.Helper()
	res, err := e.fc.RunJar(ctx, e.jarID, req)
	if err != nil {
		t.Fatalf("run %v from %q: %v", req.ProgramArgs, req.SavepointPath, err)
	}
	e.jobs = append(e.jobs, res.JobID)
	return res.JobID
}

func forStActivities(t *testing.T, p *sandbox.Peers, static inventory.Static, base string) *app.Ports {
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
	cfg.Cleanup.TrashRoot, cfg.Cleanup.PlanDir = base+"/trash", base+"/plans"
	if err := cfg.Validate(); err != nil {
		t.Fatalf("worker config: %v", err)
	}
	acts := peertest.NewPorts(t, cfg, "forst-native-test")
	// Its activities run outside a worker, where no window or upgrade
	// of flinkmaint can be in flight.
	acts.Runs = nil
	return acts
}

func runRealActivity(t *testing.T, acts *app.Ports, fn, in, out any) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	app.RegisterActivities(env, acts)
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
