//go:build realpeers

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/worker"
	"gopkg.in/yaml.v3"

	"github.com/flinkmaint/flinkmaint/activities/doctor"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// TestWindowPlanOnRealPeers runs `flinkmaint window plan` through a real
// dev server and worker over the sandbox's inventory (its tenants team-a
// and team-b, their HDFS roots and quotas, both Flink clusters), with one
// running sample job per cluster: a valid file prints the jobs and the
// waves; a pattern that matches nothing and an unknown tenant exit 2
// naming them, and so does `window start --wait` on the unknown tenant;
// afterwards every job still runs as the same job, no savepoint was
// taken and no window was started.
func TestWindowPlanOnRealPeers(t *testing.T) {
	peers := sandbox.RequirePeers(t)
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	suffix := randomSuffix()
	static := inventory.Static{}
	for _, tn := range peers.Tenants {
		static.Tenants = append(static.Tenants, inventory.Tenant{Name: tn.Name, Root: peers.HDFS.URI + tn.Root})
	}
	type job struct {
		client       *flink.Client
		key, id, dir string
	}
	var jobs []job
	for _, c := range peers.Clusters {
		name := "plan-" + suffix + "-" + c.ClusterID
		args := []string{"--job-name", name, "--keys", "1000", "--value-bytes", "128", "--rate", "200", "--checkpoint-dir", c.CheckpointDir}
		static.Clusters = append(static.Clusters, inventory.Cluster{Tenant: c.Tenant, ClusterID: c.ClusterID, Mode: inventory.ModeSession,
			RESTURL: c.RESTURL, CheckpointDir: c.CheckpointDir, SavepointDir: c.SavepointDir, HAStorageDir: c.HAStorageDir,
			Jobs: []inventory.JobSpec{{Name: name, Restart: inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun,
				Jar: peers.SampleJob.Jar, EntryClass: peers.SampleJob.EntryClass, ProgramArgs: args}}}})
		fc, err := flink.New(flink.Options{BaseURL: c.RESTURL})
		if err != nil {
			t.Fatal(err)
		}
		jarID, err := fc.UploadJar(ctx, peers.SampleJob.Jar)
		if err != nil {
			t.Fatal(err)
		}
		run, err := fc.RunJar(ctx, jarID, flink.RunJarRequest{EntryClass: peers.SampleJob.EntryClass, ProgramArgs: args})
		_ = fc.DeleteJar(ctx, jarID)
		if err != nil {
			t.Fatal(err)
		}
		j := job{client: fc, key: c.ClusterID + "/" + name, id: run.JobID, dir: strings.TrimPrefix(c.CheckpointDir, peers.HDFS.URI) + "/" + run.JobID}
		jobs = append(jobs, j)
		t.Cleanup(func() {
			_ = j.client.CancelJob(context.Background(), j.id)
			_, _ = peers.HadoopShell(context.Background(), "-rm", "-r", "-f", j.dir)
		})
	}
	// A completed checkpoint each, so the quota projection measures real
	// checkpoint directories.
	for _, j := range jobs {
		for ctx.Err() == nil {
			if st, err := j.client.Checkpoints(ctx, j.id); err == nil && st.Counts.Completed > 0 {
				break
			}
			time.Sleep(time.Second)
		}
	}

	data, err := yaml.Marshal(static)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Storage.HDFSUser = peers.HDFS.User
	cfg.Inventory.StaticFile = filepath.Join(t.TempDir(), "inventory.yaml")
	if err := os.WriteFile(cfg.Inventory.StaticFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	acts := peertest.NewPorts(t, cfg, "window-plan-test")
	const queue = "window-plan"
	w := worker.New(tmp.Client, queue, worker.Options{})
	app.Register(w, acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	env := map[string]string{"TEMPORAL_ADDRESS": tmp.HostPort, "FLINKMAINT_TASK_QUEUE": queue}

	windowFile := func(tenants, include string) string {
		body := fmt.Sprintf(`windowId: plan-%s
reason: rehearse the network change
scope:
  tenants: [%s]
  includeJobs: ["%s"]
  excludeJobs: ["*-backfill"]
policy:
  manifestDir: %s/flinkmaint-test/plan-%s/windows
  savepoint:
    concurrency: 2
  restart:
    canarySize: 1
    concurrency: 2
`, suffix, tenants, include, peers.HDFS.URI, suffix)
		p := filepath.Join(t.TempDir(), "window.yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	valid := windowFile("team-a, team-b", "plan-"+suffix+"-*")

	start := time.Now()
	code, stdout, stderr := runCLI([]string{"window", "plan", "-f", valid}, env)
	if code != exitOK {
		t.Fatalf("plan of a valid file: exit %d\n%s\n%s", code, stderr, stdout)
	}
	t.Logf("window plan took %s:\n%s", time.Since(start).Round(time.Millisecond), stdout)
	norm := strings.Join(strings.Fields(stdout), " ")
	for _, want := range []string{
		"JOBS IN SCOPE: 2 to stop with a savepoint and restart",
		fmt.Sprintf("team-a cluster-a plan-%s-cluster-a %s rest-jar-run %s canary", suffix, jobs[0].id, peers.Clusters[0].SavepointDir),
		fmt.Sprintf("team-b cluster-b plan-%s-cluster-b %s rest-jar-run %s wave 1", suffix, jobs[1].id, peers.Clusters[1].SavepointDir),
		"savepoint-all: 2 job(s), 2 at once",
		"restart canary: 1 job(s), 2 at once, failure budget 0: " + jobs[0].key,
		"restart wave 1: 1 job(s), 2 at once, failure budget 0: " + jobs[1].key,
		"savepoint-all 15m",
		"network-gate until confirmed",
	} {
		if !strings.Contains(norm, want) {
			t.Errorf("plan output lacks %q", want)
		}
	}

	code, stdout, stderr = runCLI([]string{"window", "plan", "-o", "json", "-f", valid}, env)
	if code != exitOK {
		t.Fatalf("json plan: exit %d: %s", code, stderr)
	}
	var plan workflows.WindowPlan
	if err := json.Unmarshal([]byte(stdout), &plan); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if len(plan.Jobs) != 2 || len(plan.Waves) != 2 || len(plan.Quota) != 2 || plan.Quota[0].Tenant != "team-a" ||
		plan.Quota[0].NamespaceQuota != peers.Tenants[0].NamespaceQuota || plan.Quota[0].ProjectedFiles <= 0 ||
		plan.Quota[0].ProjectedUsed != plan.Quota[0].NamespaceUsed+plan.Quota[0].ProjectedFiles || !plan.Quota[0].RestartAllowed {
		t.Fatalf("json plan: jobs %+v waves %+v quota %+v", plan.Jobs, plan.Waves, plan.Quota)
	}

	// The inventory as the worker sees it: each cluster with its dirs and
	// version, each test job running with its recipe and latest checkpoint.
	code, stdout, stderr = runCLI([]string{"inventory", "-o", "json"}, env)
	var view doctor.InventoryView
	if err := json.Unmarshal([]byte(stdout), &view); err != nil {
		t.Fatalf("inventory: exit %d: %v\n%s%s", code, err, stdout, stderr)
	}
	// The clusters are shared with tests running beside this one, whose
	// jobs may fail to answer: the exit code must match the problems the
	// view names, and none may be discovery's, a cluster's or this test's.
	wantCode := exitOK
	if view.Problems() > 0 {
		wantCode = exitFailure
	}
	if code != wantCode || len(view.Errors) > 0 || len(view.Clusters) != len(peers.Clusters) || len(view.Tenants) != len(peers.Tenants) {
		t.Fatalf("inventory: exit %d with %d problems, %d clusters, %d tenants; want the sandbox's %d clusters and no discovery error\n%s", code, view.Problems(), len(view.Clusters), len(view.Tenants), len(peers.Clusters), stdout)
	}
	for i, c := range view.Clusters {
		var mine *doctor.JobView
		for k := range c.Jobs {
			if c.Jobs[k].ID == jobs[i].id {
				mine = &c.Jobs[k]
			}
		}
		if c.ClusterID != peers.Clusters[i].ClusterID || c.HAStorageDir != peers.Clusters[i].HAStorageDir || c.FlinkVersion == "" || c.Error != "" || mine == nil ||
			mine.State != string(flink.JobRunning) || mine.Restart != inventory.RestartRESTJarRun || mine.Note != "" || mine.Error != "" ||
			!strings.HasPrefix(mine.LatestCheckpoint, c.CheckpointDir+"/"+jobs[i].id+"/chk-") {
			t.Errorf("inventory cluster %+v; want %s running with its recipe and a checkpoint under %s", c, jobs[i].id, c.CheckpointDir)
		}
	}
	code, stdout, _ = runCLI([]string{"inventory", "--cluster", peers.Clusters[0].ClusterID, "--cluster", "cluster-nope"}, env)
	if norm := strings.Join(strings.Fields(stdout), " "); code != exitFailure || !strings.Contains(stdout, "cluster "+peers.Clusters[0].ClusterID+" (tenant ") ||
		strings.Contains(stdout, "cluster "+peers.Clusters[1].ClusterID+" (") ||
		!strings.Contains(norm, fmt.Sprintf("plan-%s-cluster-a %s RUNNING rest-jar-run %s/%s/chk-", suffix, jobs[0].id, peers.Clusters[0].CheckpointDir, jobs[0].id)) ||
		!strings.Contains(stdout, `ERROR cluster "cluster-nope" is not in the inventory`) {
		t.Errorf("inventory of one cluster and an unknown one: exit %d; want %d, the one cluster's table and the unknown one named\n%s", code, exitFailure, stdout)
	}

	for name, tc := range map[string]struct {
		file string
		want string
	}{
		"pattern matches nothing": {windowFile("team-a, team-b", "plan-"+suffix+"-nomatch-*"),
			fmt.Sprintf(`scope.includeJobs pattern "plan-%s-nomatch-*" matches no job running on the clusters in scope; they run `, suffix)},
		"unknown tenant": {windowFile("team-a, team-nope", "plan-"+suffix+"-*"),
			`tenant "team-nope" is not in the inventory; its tenants are team-a, team-b`},
	} {
		code, _, stderr := runCLI([]string{"window", "plan", "-f", tc.file}, env)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want %d naming %q", name, code, stderr, exitUsage, tc.want)
		}
		if name == "pattern matches nothing" && !strings.Contains(stderr, "plan-"+suffix+"-cluster-a") {
			t.Errorf("%s: stderr does not list the running jobs: %q", name, stderr)
		}
	}
	// The window itself refuses the unknown tenant in preflight. A window
	// that did not would wait for a decision (its manifest cannot be
	// written here), so the wait is bounded.
	startCtx, cancelStart := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelStart()
	var startOut, startErr bytes.Buffer
	code = run(startCtx, []string{"window", "start", "--wait", "-f", windowFile("team-a, team-nope", "plan-"+suffix+"-*")}, envOf(env), &startOut, &startErr)
	stderr = startErr.String()
	if code != exitUsage || !strings.Contains(stderr, `tenant "team-nope" is not in the inventory`) || !strings.Contains(stderr, "nothing was stopped") {
		t.Errorf("window start on an unknown tenant: exit %d, stderr %q; want %d naming the tenant", code, stderr, exitUsage)
	}

	// Nothing was stopped: the same jobs run, no savepoint was taken.
	for _, j := range jobs {
		d, err := j.client.JobDetails(ctx, j.id)
		if err != nil || d.State != flink.JobRunning {
			t.Errorf("job %s (%s) is %s after the plans (%v); want it still RUNNING", j.key, j.id, d.State, err)
		}
		st, err := j.client.Checkpoints(ctx, j.id)
		if err != nil || st.Latest.Savepoint != nil {
			t.Errorf("job %s: savepoint %+v (%v); want none taken", j.key, st.Latest.Savepoint, err)
		}
	}
	resp, err := tmp.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: "WorkflowType = 'JobSavepoint' OR WorkflowType = 'JobRestart'"})
	if err != nil || len(resp.GetExecutions()) != 0 {
		t.Errorf("per-job children %d (%v); want none", len(resp.GetExecutions()), err)
	}
	if out, err := peers.HadoopShell(ctx, "-test", "-e", "/flinkmaint-test/plan-"+suffix); err == nil {
		t.Errorf("the plan wrote under /flinkmaint-test/plan-%s: %s", suffix, out)
	}
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
