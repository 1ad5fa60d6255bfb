//go:build realpeers

package monitoring

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"gopkg.in/yaml.v3"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/logging"
	"github.com/flinkmaint/flinkmaint/internal/metrics"
	"github.com/flinkmaint/flinkmaint/internal/temporalconn"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// promtool returns bin/promtool, which scripts/promtool.sh builds (make
// test runs it first).
func promtool(t *testing.T) string {
	t.Helper()
	root, err := sandbox.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "bin", "promtool")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("promtool not found at %s (%v): run scripts/promtool.sh", p, err)
	}
	return p
}

func runPromtool(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// writeRuleGroups writes the PrometheusRule's spec.groups, as they are, to
// dir/rules.yaml: the file format promtool reads.
func writeRuleGroups(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(ruleFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	groups := mappingValue(doc.Content[0], "spec", "groups")
	if groups == nil {
		t.Fatalf("%s has no spec.groups", ruleFile)
	}
	out, err := yaml.Marshal(map[string]*yaml.Node{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func mappingValue(n *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
			}
		}
		n = next
	}
	return n
}

func TestPromtoolChecksTheRules(t *testing.T) {
	dir := t.TempDir()
	writeRuleGroups(t, dir)
	out := runPromtool(t, dir, "check", "rules", "rules.yaml")
	if !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool check rules:\n%s", out)
	}
	t.Log(strings.TrimSpace(out))
}

// The unit tests of tests/*.yaml: alerts fire on given series and stay
// quiet below their thresholds.
func TestPromtoolRuleUnitTests(t *testing.T) {
	dir := t.TempDir()
	writeRuleGroups(t, dir)
	files, err := filepath.Glob(filepath.Join("tests", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no tests/*.yaml (%v)", err)
	}
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, filepath.Base(f))
	}
	out := runPromtool(t, dir, append([]string{"test", "rules"}, names...)...)
	t.Log(strings.TrimSpace(out))
}

// Every expr of the dashboard (and its variable's selector) is PromQL that
// Prometheus accepts once Grafana has put its variables in: each becomes a
// recording rule that promtool checks.
func TestDashboardQueriesArePromQL(t *testing.T) {
	d := loadDashboard(t)
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	for i, q := range dashboardQueries(t, d) {
		expr := grafanaVars.Replace(q.expr)
		if strings.Contains(expr, "$") {
			t.Errorf("%s: variable left in %q", q.where, expr)
		}
		rules = append(rules, rule{Record: fmt.Sprintf("dashboard:query_%d:check", i), Expr: expr})
	}
	out, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dashboard.yaml"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	res := runPromtool(t, dir, "check", "rules", "dashboard.yaml")
	if !strings.Contains(res, fmt.Sprintf("SUCCESS: %d rules found", len(rules))) {
		t.Fatalf("promtool check rules of %d dashboard queries:\n%s", len(rules), res)
	}
	t.Logf("%d dashboard queries: %s", len(rules), strings.TrimSpace(res))
}

// probeInput says how the probe workflow ends.
type probeInput struct{ Mode string }

// probeWorkflow ends as asked: after an activity that fails its first
// attempt, with an error, or when cancelled.
func probeWorkflow(ctx workflow.Context, in probeInput) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 100 * time.Millisecond, MaximumAttempts: 2},
	})
	switch in.Mode {
	case "fail":
		return errors.New("probe fails as asked")
	case "wait":
		return workflow.Await(ctx, func() bool { return false })
	}
	return workflow.ExecuteActivity(ctx, "MonitoringProbeFlaky").Get(ctx, nil)
}

func flakyActivity(ctx context.Context) error {
	if activity.GetInfo(ctx).Attempt == 1 {
		return errors.New("first attempt fails as asked")
	}
	return nil
}

// The Temporal SDK's own metrics exist only once a worker talks to a
// server: a real worker, with the metrics of internal/metrics as the
// flinkmaint-worker wires them, runs the production QuotaWatch workflow
// (its SampleQuota stubbed) and workflows that complete, fail and are
// cancelled after a failed activity attempt. Every name the rules and the
// dashboard read must then be in what the worker's registry gathers.
func TestReferencedMetricsAreExportedByARealWorker(t *testing.T) {
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	m, err := metrics.New("test", "0123456789ab")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Close() }()
	c, err := client.Dial(client.Options{
		HostPort: tmp.HostPort, Namespace: "default", MetricsHandler: m.SDK, DataConverter: temporalconn.DataConverter(),
		// The probe's failures are on purpose; the assertions report the rest.
		Logger: logging.NewTemporalLogger(zerolog.Nop()),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	queue := fmt.Sprintf("monitoring-%d", time.Now().UnixNano())
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(workflows.QuotaWatchWorkflow, workflow.RegisterOptions{Name: workflows.QuotaWatchWorkflowType})
	w.RegisterWorkflowWithOptions(probeWorkflow, workflow.RegisterOptions{Name: "MonitoringProbe"})
	w.RegisterActivityWithOptions(flakyActivity, activity.RegisterOptions{Name: "MonitoringProbeFlaky"})
	var samples atomic.Int64
	w.RegisterActivityWithOptions(func(ctx context.Context, in capacity.SampleQuotaInput) (capacity.SampleQuotaResult, error) {
		// One more file a day: a forecast far beyond alertDaysToFull, so
		// the watch raises no alert (and sends no notification).
		n := samples.Add(1)
		used := 100 + n
		return capacity.SampleQuotaResult{At: time.Now().UTC().Add(time.Duration(n) * 24 * time.Hour), Tenants: []capacity.TenantQuota{{
			Tenant: "team-a", Root: "/tenants/team-a", NamespaceUsed: used, NamespaceQuota: 1000, SpaceQuota: -1,
			Percent: float64(used) / 10, Level: "ok", Headroom: 1000 - used, RestartAllowed: true,
		}}}, nil
	}, activity.RegisterOptions{Name: activityName(t, (*capacity.Activities).SampleQuota)})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := func(id, workflowType string, arg any) client.WorkflowRun {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id + "-" + queue, TaskQueue: queue}, workflowType, arg)
		if err != nil {
			t.Fatalf("start %s: %v", id, err)
		}
		return run
	}
	watch := start("quota-watch", workflows.QuotaWatchWorkflowType, workflows.QuotaWatchInput{
		Scope: core.Scope{Tenants: []string{"team-a"}}, Interval: workflows.Duration(time.Second), Iterations: 3,
	})
	if err := watch.Get(ctx, nil); err != nil {
		t.Fatalf("quota watch: %v", err)
	}
	if err := start("probe-complete", "MonitoringProbe", probeInput{}).Get(ctx, nil); err != nil {
		t.Fatalf("probe that completes: %v", err)
	}
	if err := start("probe-fail", "MonitoringProbe", probeInput{Mode: "fail"}).Get(ctx, nil); err == nil {
		t.Fatal("probe that fails completed")
	}
	waiting := start("probe-cancel", "MonitoringProbe", probeInput{Mode: "wait"})
	if err := c.CancelWorkflow(ctx, waiting.GetID(), waiting.GetRunID()); err != nil {
		t.Fatal(err)
	}
	var canceled *temporal.CanceledError
	if err := waiting.Get(ctx, nil); !errors.As(err, &canceled) {
		t.Fatalf("probe that waits: %v, want cancelled", err)
	}

	// A workflow's end is counted after its result reaches the client;
	// wait until the registry has the counters of all three ends.
	var exported exportedMetrics
	deadline := time.Now().Add(30 * time.Second)
	for {
		exported = exportedMetrics{}
		exported.addDescribed(t, reflect.ValueOf(m))
		exported.addRegistry(t, m.Registry)
		missing := 0
		for _, name := range []string{"temporal_workflow_completed_total", "temporal_workflow_failed_total", "temporal_workflow_canceled_total",
			"temporal_activity_execution_failed_total", "flinkmaint_quota_watch_days_to_full"} {
			if _, ok := exported[name]; !ok {
				missing++
			}
		}
		if missing == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Metrics of code this worker did not run (the window's reminders)
	// come from the source scan.
	for name, labels := range workerExports(t) {
		if _, ok := exported[name]; !ok {
			exported.add(name, labels)
		}
	}
	checked, _ := checkReferencedMetrics(t, exported, nil)
	t.Logf("checked %d names against a real worker's registry: %v", len(checked), checked)
}

// activityName is the name the SDK registers a method of *Activities under.
func activityName(t *testing.T, fn any) string {
	t.Helper()
	name := functionName(fn)
	if i := strings.LastIndex(name, "."); i >= 0 {
		name = name[i+1:]
	}
	name = strings.TrimSuffix(name, "-fm")
	if name == "" {
		t.Fatalf("no name for %T", fn)
	}
	return name
}

func functionName(fn any) string {
	f := runtime.FuncForPC(reflect.ValueOf(fn).Pointer())
	if f == nil {
		return ""
	}
	return f.Name()
}
