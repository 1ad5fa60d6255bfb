//go:build realpeers

package notify_test

import (
	"context"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/notify"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// TestAlertmanagerTakesAndResolvesAlerts sends a pending decision to a
// real Alertmanager: it holds one alert per tenant with the command and
// the UI link; the answered decision resolves them.
func TestAlertmanagerTakesAndResolvesAlerts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	am := sandbox.StartAlertmanager(t)
	n, err := notify.New(notify.Config{Sinks: []notify.SinkConfig{{Name: "am", Type: notify.TypeAlertmanager, URL: am.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	ev := notify.Event{Kind: notify.KindDecisionPending, Workflow: "window", Run: "wk49", WorkflowID: "window-wk49", Tenants: []string{"team-a", "team-b"},
		Severity: notify.SeverityWarning, Title: "waits for network-change", Decision: "network-change", RepeatEvery: 30 * time.Minute,
		Commands: []string{"flinkmaint window confirm-network-change wk49"}, At: time.Now(), UIURL: "http://ui:8233/namespaces/default/workflows/window-wk49"}
	// doctor's probe: the real Alertmanager is ready; a port nothing
	// listens on is not.
	dead, err := notify.New(notify.Config{Sinks: []notify.SinkConfig{{Name: "am", Type: notify.TypeAlertmanager, URL: am.URL}, {Name: "gone", Type: notify.TypeAlertmanager, URL: "http://127.0.0.1:1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if out := dead.Probe(ctx); len(out) != 2 || out[0].Error != "" || out[1].Error == "" {
		t.Fatalf("probe: %+v; want the sandbox's Alertmanager ready and port 1 refused", out)
	}
	if out := n.Send(ctx, ev); len(out) != 1 || out[0].Error != "" {
		t.Fatalf("send: %+v", out)
	}
	alerts, err := am.Alerts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tenants := map[string]bool{}
	for _, a := range alerts {
		if a.Labels["alertname"] == "FlinkmaintDecisionPending" && a.Annotations["ui_url"] == ev.UIURL && a.GeneratorURL == ev.UIURL &&
			a.Annotations["command"] == ev.Commands[0] && a.Status.State == "active" {
			tenants[a.Labels["tenant"]] = true
		}
	}
	if !tenants["team-a"] || !tenants["team-b"] {
		t.Fatalf("alertmanager holds %+v; want an active alert per tenant with the command and UI link", alerts)
	}
	ev.Resolved = true
	if out := n.Send(ctx, ev); len(out) != 1 || out[0].Error != "" {
		t.Fatalf("send resolved: %+v", out)
	}
	for {
		alerts, err := am.Alerts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		active := 0
		for _, a := range alerts {
			if a.Labels["alertname"] == "FlinkmaintDecisionPending" && a.Status.State == "active" {
				active++
			}
		}
		if active == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("alerts still active after the decision was answered: %+v", alerts)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
