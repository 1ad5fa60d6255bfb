//go:build realpeers

package app_test

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/flinksim"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// EnvUIScreenshots names a directory that TestWindowShowsInTemporalUI
// copies its screenshot to, for a person to look at; the test keeps it in
// its temporary directory otherwise.
const EnvUIScreenshots = "FLINKMAINT_UI_SCREENSHOTS"

// TestWindowShowsInTemporalUI runs a window over a few simulated jobs
// (Flink's REST API simulated; Temporal with its Web UI, the worker and
// storage real) until it waits for the network change, then loads the
// window's page in the Temporal Web UI in headless Chromium, as an
// operator would: the page must show the window's summary and, in its
// current details, the phase, the job counts and the command that
// confirms the change. A screenshot of the page is kept.
func TestWindowShowsInTemporalUI(t *testing.T) {
	t.Parallel()
	const jobs = 3
	tmp := sandbox.StartTemporalWith(t, workflows.SearchAttributeDefinitions(), sandbox.TemporalOptions{UI: true})
	browser := sandbox.StartChromium(t, 1400, 2000)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	sim, err := flinksim.Start(flinksim.Options{SavepointDelay: 20 * time.Millisecond, CheckpointDelay: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	root := t.TempDir()
	jar := filepath.Join(root, "job.jar")
	if err := os.WriteFile(jar, []byte("PK\x05\x06"+strings.Repeat("\x00", 18)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "checkpoints"), 0o755); err != nil {
		t.Fatal(err)
	}
	tenantRoot := "file://" + root
	cl := inventory.Cluster{Tenant: "team-ui", ClusterID: "sim-ui", Mode: inventory.ModeSession, RESTURL: sim.AddCluster("sim-ui"),
		CheckpointDir: tenantRoot + "/checkpoints", SavepointDir: tenantRoot + "/savepoints"}
	for j := range jobs {
		name := fmt.Sprintf("ui-job-%d", j)
		sim.AddJob(cl.ClusterID, name, cl.CheckpointDir)
		cl.Jobs = append(cl.Jobs, inventory.JobSpec{Name: name, Restart: inventory.RestartRecipe{
			Kind: inventory.RestartRESTJarRun, Jar: jar, EntryClass: "com.example.Job", ProgramArgs: []string{"--job-name", name}}})
	}
	cfg := config.Default()
	cfg.Storage.WritableRoots = []string{tenantRoot}
	cfg.Inventory.StaticFile = peertest.WriteInventory(t, inventory.Static{Tenants: []inventory.Tenant{{Name: "team-ui", Root: tenantRoot}}, Clusters: []inventory.Cluster{cl}})
	acts := peertest.NewPorts(t, cfg, "window-ui")
	const queue = "window-ui"
	w := worker.New(tmp.Client, queue, worker.Options{})
	app.Register(w, acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	in := workflows.WindowInput{
		WindowID: "ui-" + peertest.RandomHex(4), Reason: "Web UI test",
		Scope: core.Scope{Tenants: []string{"team-ui"}},
		Policy: workflows.WindowPolicy{
			ManifestDir: tenantRoot + "/windows",
			Restart:     workflows.RestartPolicy{Soak: workflows.Duration(time.Millisecond)},
			Cleanup:     workflows.CleanupPolicy{Mode: workflows.CleanupModeSkip},
		},
	}
	wid := workflows.WindowWorkflowID(in.WindowID)
	summary := workflows.StartSummary(in) // what `flinkmaint window start` sets
	if _, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wid, TaskQueue: queue, StaticSummary: summary},
		workflows.MaintenanceWindowWorkflowType, in); err != nil {
		t.Fatal(err)
	}
	peertest.WaitFor(t, ctx, 2*time.Minute, "the window to wait for the network change", func() (bool, string) {
		v, err := tmp.Client.QueryWorkflow(ctx, wid, "", workflows.QueryStatus)
		if err != nil {
			return false, err.Error()
		}
		var st workflows.WindowState
		if err := v.Get(&st); err != nil {
			return false, err.Error()
		}
		return st.Pending != nil && st.Pending.Kind == workflows.DecisionNetworkChange, "phase " + st.Phase
	})

	// Each job's savepoint child says what it does.
	child := workflows.JobSavepointWorkflowID(in.WindowID, "sim-ui/ui-job-0", 1)
	if got, want := workflowSummary(t, ctx, tmp.Client, child), "stop sim-ui/ui-job-0 with savepoint (window "+in.WindowID+")"; got != want {
		t.Errorf("summary of %s: %q, want %q", child, got, want)
	}

	// The window's page opens on its history; its "User Metadata" tab
	// shows the summary, the current details and the children's summaries,
	// the Markdown rendered in same-origin frames. Open the tab as a person
	// would and read what it shows.
	page := tmp.UIURL + "/namespaces/default/workflows/" + url.PathEscape(wid)
	if err := browser.Navigate(ctx, page); err != nil {
		t.Fatal(err)
	}
	const openTab = `(() => {
		if (location.pathname.endsWith('/metadata')) return false;
		for (const a of document.querySelectorAll('a')) {
			if ((a.innerText || '').trim() === 'User Metadata') { a.click(); return true; }
		}
		return false;
	})()`
	const shown = `(() => {
		let text = document.body ? document.body.innerText : '';
		for (const f of document.querySelectorAll('iframe')) {
			try { text += '\n' + f.contentDocument.body.innerText; } catch (e) {}
		}
		return text;
	})()`
	confirm := "flinkmaint window confirm-network-change " + in.WindowID + " --reason TEXT"
	wants := []string{summary, "network-gate", "network-change", confirm, "savepoint\t3\t0\t0\t3\t0\t0", "restart\t3\t3\t0\t0\t0\t0",
		"stop sim-ui/ui-job-2 with savepoint (window " + in.WindowID + ")"}
	var text string
	peertest.WaitFor(t, ctx, 2*time.Minute, "the window's page to show its summary and current details", func() (bool, string) {
		if err := browser.Eval(ctx, openTab, nil); err != nil {
			return false, err.Error()
		}
		if err := browser.Eval(ctx, shown, &text); err != nil {
			return false, err.Error()
		}
		for _, want := range wants {
			if !strings.Contains(text, want) {
				return false, fmt.Sprintf("page lacks %q; it shows:\n%s", want, text)
			}
		}
		return true, ""
	})

	png, err := browser.Screenshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 10_000 {
		t.Fatalf("screenshot is not a PNG of a page: %d bytes starting %q", len(png), png[:min(len(png), 8)])
	}
	shot := filepath.Join(t.TempDir(), "window-"+in.WindowID+".png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of %s: %s (%d bytes)", page, shot, len(png))
	if dir := os.Getenv(EnvUIScreenshots); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(shot)), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Answering the decision ends the wait the page showed.
	if _, err := tmp.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: wid, UpdateName: workflows.UpdateConfirmNetworkChange,
		Args: []interface{}{workflows.ConfirmNetworkChangeRequest{By: "ui-test", Reason: "done"}}, WaitForStage: client.WorkflowUpdateStageCompleted}); err != nil {
		t.Fatal(err)
	}
	var rep workflows.WindowReport
	if err := tmp.Client.GetWorkflow(ctx, wid, "").Get(ctx, &rep); err != nil || rep.Phase != workflows.WindowPhaseCompleted {
		t.Fatalf("window ended %s: %v", rep.Phase, err)
	}
}

// workflowSummary is the static summary a workflow was started with.
func workflowSummary(t *testing.T, ctx context.Context, c client.Client, id string) string {
	t.Helper()
	desc, err := c.DescribeWorkflow(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := desc.GetStaticSummary()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
