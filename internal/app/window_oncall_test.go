//go:build realpeers

package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/notify"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// hookReceiver is a real HTTP endpoint for the webhook sink: it keeps the
// events whose signature verifies and counts the ones that do not.
type hookReceiver struct {
	mu     sync.Mutex
	key    []byte
	events []notify.Event
	forged int
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	if !notify.Verify(h.key, r.Header.Get(notify.HeaderTimestamp), body, r.Header.Get(notify.HeaderSignature)) {
		h.forged++
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var ev notify.Event
	if err := json.Unmarshal(body, &ev); err == nil {
		h.events = append(h.events, ev)
	}
}

func (h *hookReceiver) find(pred func(notify.Event) bool) (notify.Event, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.events {
		if pred(e) {
			return e, true
		}
	}
	return notify.Event{}, false
}

// TestWindowTellsOnCallAndHoldsItsTenantsOnRealPeers runs a window on real
// Flink, HDFS and Temporal that waits for the network confirmation: the
// people on call are told through a signed webhook and a real
// Alertmanager, with the command that answers and the run's Temporal UI
// link. A governance execution started meanwhile on one of the window's
// tenants waits, saying for whom, and runs once the window's jobs are back;
// the answered decision resolves the alert.
func TestWindowTellsOnCallAndHoldsItsTenantsOnRealPeers(t *testing.T) {
	t.Parallel()
	peers := sandbox.RequirePeers(t)
	tmp := sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	am := sandbox.StartAlertmanager(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()

	hook := &hookReceiver{key: []byte("0123456789abcdef0123456789abcdef")}
	hookSrv := httptest.NewServer(hook)
	t.Cleanup(hookSrv.Close)
	keyFile := filepath.Join(t.TempDir(), "hook.key")
	if err := os.WriteFile(keyFile, hook.key, 0o600); err != nil {
		t.Fatal(err)
	}

	suffix := peertest.RandomHex(4)
	testRoot := peers.HDFS.URI + "/flinkmaint-test/oncall-" + suffix
	fl := startFleet(t, ctx, peers, suffix, testRoot, 1, false)
	cfg := config.Default()
	cfg.Storage.HDFSUser = peers.HDFS.User
	cfg.Storage.WritableRoots = []string{testRoot}
	cfg.Inventory.StaticFile = peertest.WriteInventory(t, fl.static)
	cfg.Cleanup.TrashRoot, cfg.Cleanup.PlanDir = testRoot+"/trash", testRoot+"/plans"
	const ui = "http://temporal-ui.test:8233"
	cfg.Notify = config.Notify{UIBaseURL: ui, Sinks: []notify.SinkConfig{
		{Name: "hook", Type: notify.TypeWebhook, URL: hookSrv.URL, SecretFile: keyFile},
		{Name: "am", Type: notify.TypeAlertmanager, URL: am.URL},
	}}
	acts := peertest.NewPorts(t, cfg, "oncall-e2e")
	queue := "oncall-" + suffix
	w := worker.New(tmp.Client, queue, worker.Options{})
	app.Register(w, acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	in := workflows.WindowInput{WindowID: "oncall-" + suffix, Reason: "on-call test",
		Scope: core.Scope{IncludeJobs: []string{"win-" + suffix + "-*"}},
		Policy: workflows.WindowPolicy{ManifestDir: testRoot + "/windows",
			Restart: workflows.RestartPolicy{Concurrency: 2, Soak: workflows.Duration(3 * time.Second),
				RunningTimeout: workflows.Duration(2 * time.Minute), CheckpointTimeout: workflows.Duration(90 * time.Second)},
			Cleanup: workflows.CleanupPolicy{Mode: workflows.CleanupModeSkip}}}
	run, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.WindowWorkflowID(in.WindowID), TaskQueue: queue},
		workflows.MaintenanceWindowWorkflowType, in)
	if err != nil {
		t.Fatal(err)
	}
	st := peertest.WaitForWindow(t, ctx, tmp.Client, run, func(st workflows.WindowState) bool { return st.Phase == workflows.WindowPhaseNetworkGate })
	if !st.TenantLockHeld {
		t.Fatalf("window at the network gate does not hold its tenants: %+v", st)
	}
	tenant := fl.static.Tenants[0].Name
	link := ui + "/namespaces/default/workflows/" + run.GetID()

	// 1. The webhook hears of the decision, signed, with command and link.
	var pending notify.Event
	for ctx.Err() == nil {
		var ok bool
		if pending, ok = hook.find(func(e notify.Event) bool { return e.Kind == notify.KindDecisionPending && !e.Resolved }); ok {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if pending.Decision != workflows.DecisionNetworkChange || pending.UIURL != link || len(pending.Commands) == 0 ||
		!strings.Contains(pending.Commands[0], "flinkmaint window confirm-network-change "+in.WindowID) || hook.forged != 0 {
		t.Fatalf("webhook event %+v (forged %d); want the network-change decision with its command and %s", pending, hook.forged, link)
	}
	// 2. Alertmanager holds an alert per tenant with the same link.
	alertFor := func(tenant string) (sandbox.AlertmanagerAlert, bool) {
		alerts, err := am.Alerts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range alerts {
			if a.Labels["alertname"] == "FlinkmaintDecisionPending" && a.Labels["tenant"] == tenant && a.Status.State == "active" {
				return a, true
			}
		}
		return sandbox.AlertmanagerAlert{}, false
	}
	if a, ok := alertFor(tenant); !ok || a.Annotations["ui_url"] != link || a.Labels["decision"] != workflows.DecisionNetworkChange {
		t.Fatalf("alertmanager alert for %s: %+v (found %v); want the pending decision with %s", tenant, a, ok, link)
	}

	// 3. A cleanup of the held tenant waits for the window.
	// The stopped job's checkpoints, made to look two days old, are what a
	// cleanup takes for a retired job's: exactly what must not go while
	// the window may still need them (the way back when a restore fails).
	hc, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{peers.HDFS.NameNode}, User: peers.HDFS.User})
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	if err := hc.MkdirAll(strings.TrimPrefix(testRoot, peers.HDFS.URI)+"/trash", 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	ckptDir := strings.TrimPrefix(fl.static.Clusters[0].CheckpointDir, peers.HDFS.URI)
	walk := func() []string {
		var entries []string
		err := hc.Walk(ckptDir, func(p string, _ os.FileInfo, err error) error {
			if err != nil || p == ckptDir {
				return err
			}
			entries = append(entries, p)
			return nil
		})
		if err != nil {
			t.Fatalf("walk %s: %v", ckptDir, err)
		}
		return entries
	}
	// Flink discards a stopped job's checkpoints after the stop, in the
	// background: backdate only once the tree has settled, or a late
	// discard makes the dir look written a moment ago.
	backdated := walk()
	for settled := 0; settled < 3; {
		select {
		case <-ctx.Done():
			t.Fatal("the stopped jobs' checkpoint dirs did not settle")
		case <-time.After(time.Second):
		}
		now := walk()
		if strings.Join(now, "\n") == strings.Join(backdated, "\n") {
			settled++
		} else {
			settled = 0
		}
		backdated = now
	}
	if len(backdated) == 0 {
		t.Fatalf("%s is empty after the stop", ckptDir)
	}
	for i := len(backdated) - 1; i >= 0; i-- { // children first: a parent's time is set last
		if err := hc.Chtimes(backdated[i], old, old); err != nil {
			t.Fatal(err)
		}
	}
	gin := workflows.GovernanceInput{RunID: "oncall-" + suffix, Reason: "cleanup during a window", Mode: workflows.ModeAuto,
		Scope: core.Scope{Tenants: []string{tenant}},
		Policy: workflows.GovernancePolicy{Grace: workflows.Duration(10 * time.Minute), RetiredJobTTL: workflows.Duration(time.Hour),
			DeleteLatestRetiredCheckpoint: true}}
	gwf, err := tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.GovernanceWorkflowID(gin.RunID), TaskQueue: queue},
		workflows.GovernanceWorkflowType, gin)
	if err != nil {
		t.Fatal(err)
	}
	gst := waitGovernance(t, ctx, tmp.Client, gwf.GetID(), func(st workflows.GovernanceState) bool {
		return st.Phase == workflows.GovernancePhaseWaitingForLock
	})
	if !strings.Contains(gst.WaitingFor, run.GetID()) || gst.Execution != nil {
		t.Fatalf("governance waits for %q, executed %+v; want it waiting for %s, nothing executed", gst.WaitingFor, gst.Execution, run.GetID())
	}

	// 4. The network change is confirmed: the window restarts its jobs and
	// lets go of its tenants; the cleanup runs after.
	peertest.Update(t, ctx, tmp.Client, run, workflows.UpdateConfirmNetworkChange, workflows.ConfirmNetworkChangeRequest{By: "oncall-test", Reason: "done"})
	var rep workflows.WindowReport
	if err := run.Get(ctx, &rep); err != nil {
		t.Fatal(err)
	}
	for _, j := range rep.Jobs {
		fc := peertest.FlinkClient(t, j.Target.RESTURL)
		id := j.NewJobID
		t.Cleanup(func() { _ = fc.CancelJob(context.Background(), id) })
		if j.RestartState != workflows.StepDone {
			t.Errorf("%s: restart %s: %s", j.Target.Key, j.RestartState, j.RestartError)
		}
	}
	var grep workflows.GovernanceReport
	if err := gwf.Get(ctx, &grep); err != nil {
		t.Fatalf("governance after the window: %v", err)
	}
	waited := false
	for _, n := range grep.Notes {
		waited = waited || strings.Contains(n, "waited for the tenant lock") && strings.Contains(n, run.GetID())
	}
	if grep.Outcome != workflows.GovernancePhaseCompleted || !waited {
		t.Errorf("governance ended %s with notes %v; want it completed after waiting for the window", grep.Outcome, grep.Notes)
	}
	// 5. The answered decision resolves the alert.
	for {
		if _, ok := alertFor(tenant); !ok {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the network-change alert is still active after the confirmation")
		case <-time.After(200 * time.Millisecond):
		}
	}
	if _, ok := hook.find(func(e notify.Event) bool { return e.Kind == notify.KindFinished && e.Run == in.WindowID }); !ok {
		t.Error("the webhook did not hear that the window finished")
	}
}
