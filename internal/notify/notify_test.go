package notify

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
)

// receiver is a real HTTP endpoint that keeps what it was sent and
// answers with the given status.
type receiver struct {
	mu     sync.Mutex
	bodies [][]byte
	heads  []http.Header
	status int
	srv    *httptest.Server
}

func newReceiver(t *testing.T, status int) *receiver {
	r := &receiver{status: status}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.bodies, r.heads = append(r.bodies, b), append(r.heads, req.Header.Clone())
		r.mu.Unlock()
		w.WriteHeader(r.status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func writeFile(t *testing.T, name, content string) string {
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func pending() Event {
	return Event{Kind: KindDecisionPending, Workflow: "window", Run: "wk49", WorkflowID: "window-wk49", Tenants: []string{"team-a", "team-b"},
		Severity: SeverityWarning, Title: "waits for network-change", Text: "all jobs are stopped with savepoints",
		Decision: "network-change", Commands: []string{"flinkmaint window confirm-network-change wk49 --by NAME --reason TEXT"},
		At: time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC), UIURL: "http://ui:8233/namespaces/default/workflows/window-wk49"}
}

func TestWebhookIsSignedAndSlackReadable(t *testing.T) {
	hook, slack := newReceiver(t, 200), newReceiver(t, 200)
	key := "0123456789abcdef0123456789abcdef"
	n, err := New(Config{Sinks: []SinkConfig{
		{Name: "hook", Type: TypeWebhook, URL: hook.srv.URL, SecretFile: writeFile(t, "key", key+"\n")},
		{Name: "chat", Type: TypeSlack, URLFile: writeFile(t, "slack-url", slack.srv.URL+"/services/T0/B0/secret\n")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	out := n.Send(context.Background(), pending())
	if len(out) != 2 || out[0].Error != "" || out[1].Error != "" {
		t.Fatalf("outcomes %+v; want both delivered", out)
	}
	h := hook.heads[0]
	if !Verify([]byte(key), h.Get(HeaderTimestamp), hook.bodies[0], h.Get(HeaderSignature)) {
		t.Errorf("webhook signature %q does not verify with the key", h.Get(HeaderSignature))
	}
	if Verify([]byte(key), h.Get(HeaderTimestamp), append([]byte(" "), hook.bodies[0]...), h.Get(HeaderSignature)) {
		t.Error("a changed body verifies")
	}
	var ev Event
	if err := json.Unmarshal(hook.bodies[0], &ev); err != nil || ev.UIURL == "" || len(ev.Commands) != 1 || ev.Decision != "network-change" {
		t.Errorf("webhook body %s (%v); want the event with its command and UI link", hook.bodies[0], err)
	}
	var msg map[string]string
	if err := json.Unmarshal(slack.bodies[0], &msg); err != nil || !strings.Contains(msg["text"], "`flinkmaint window confirm-network-change wk49") ||
		!strings.Contains(msg["text"], "<http://ui:8233/namespaces/default/workflows/window-wk49|Open in the Temporal UI>") {
		t.Errorf("slack message %s (%v); want the command and the UI link", slack.bodies[0], err)
	}
}

// A dead sink costs its bounded attempts and is reported; the other
// sinks are still told.
func TestADeadSinkDoesNotKeepOthersFromBeingTold(t *testing.T) {
	dead, alive := newReceiver(t, 503), newReceiver(t, 200)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // connection refused
	n, err := New(Config{Sinks: []SinkConfig{
		{Name: "dead", Type: TypeSlack, URL: dead.srv.URL},
		{Name: "gone", Type: TypeSlack, URL: gone.URL + "/hook?token=s3cret"},
		{Name: "alive", Type: TypeSlack, URL: alive.srv.URL},
	}})
	if err != nil {
		t.Fatal(err)
	}
	n.Backoff = time.Millisecond
	out := n.Send(context.Background(), pending())
	if len(out) != 3 || out[0].Attempts != 3 || !strings.Contains(out[0].Error, "503") || out[1].Error == "" || out[2].Error != "" {
		t.Fatalf("outcomes %+v; want dead and gone failed after 3 attempts, alive delivered", out)
	}
	if strings.Contains(out[1].Error, "s3cret") {
		t.Errorf("error %q shows the URL's token", out[1].Error)
	}
	if len(dead.bodies) != 3 || len(alive.bodies) != 1 {
		t.Errorf("dead got %d requests, alive %d; want 3 and 1", len(dead.bodies), len(alive.bodies))
	}
}

func TestSinksFilterByEventAndTenant(t *testing.T) {
	am := SinkConfig{Type: TypeAlertmanager}
	if am.wants(Event{Kind: KindPhase}) || !am.wants(Event{Kind: KindDecisionPending}) {
		t.Error("an alertmanager sink takes conditions, not phase news")
	}
	s := SinkConfig{Type: TypeWebhook, Events: []string{KindFailed}, Tenants: []string{"team-b"}}
	if s.wants(Event{Kind: KindFailed, Tenants: []string{"team-a"}}) || !s.wants(Event{Kind: KindFailed, Tenants: []string{"team-a", "team-b"}}) ||
		s.wants(Event{Kind: KindFinished, Tenants: []string{"team-b"}}) || !s.wants(Event{Kind: KindFailed}) {
		t.Error("events and tenants filter wrong")
	}
	repeat := Event{Kind: KindQuotaWatermark, Reminder: 2}
	if (SinkConfig{Type: TypeSlack}).wants(repeat) || !(SinkConfig{Type: TypeAlertmanager}).wants(repeat) ||
		!(SinkConfig{Type: TypeSlack}).wants(Event{Kind: KindDecisionPending, Reminder: 2}) {
		t.Error("a repeated condition goes to Alertmanager only; reminders of decisions go everywhere")
	}
}

func TestAlertsPerTenantAndResolution(t *testing.T) {
	now := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	ev := pending()
	ev.RepeatEvery = 30 * time.Minute
	as := alerts(ev, now)
	if len(as) != 2 || as[0].Labels["tenant"] != "team-a" || as[1].Labels["tenant"] != "team-b" || as[0].Labels["alertname"] != "FlinkmaintDecisionPending" ||
		as[0].Annotations["ui_url"] != ev.UIURL || as[0].Annotations["command"] != ev.Commands[0] || !as[0].EndsAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("alerts %+v; want one per tenant with the command and UI link, firing for two repeat intervals", as)
	}
	ev.Resolved = true
	if as := alerts(ev, now); !as[0].EndsAt.Equal(now) {
		t.Errorf("resolved alert ends at %s; want now", as[0].EndsAt)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	short := writeFile(t, "short", "abc")
	for name, tc := range map[string]struct {
		cfg  Config
		want string
	}{
		"no name":          {Config{Sinks: []SinkConfig{{Type: TypeSlack, URL: "http://x"}}}, "notify.sinks[0].name"},
		"twice":            {Config{Sinks: []SinkConfig{{Name: "a", Type: TypeSlack, URL: "http://x"}, {Name: "a", Type: TypeSlack, URL: "http://y"}}}, `notify.sinks[1].name="a": used by another sink`},
		"type":             {Config{Sinks: []SinkConfig{{Name: "a", Type: "pager", URL: "http://x"}}}, `notify.sinks[0].type="pager"`},
		"no url":           {Config{Sinks: []SinkConfig{{Name: "a", Type: TypeSlack}}}, "url (or urlFile"},
		"bad url":          {Config{Sinks: []SinkConfig{{Name: "a", Type: TypeSlack, URL: "ftp://u:pw@x"}}}, "use an http(s) URL"},
		"webhook no key":   {Config{Sinks: []SinkConfig{{Name: "a", Type: TypeWebhook, URL: "http://x"}}}, "secretFile is required"},
		"webhook weak key": {Config{Sinks: []SinkConfig{{Name: "a", Type: TypeWebhook, URL: "http://x", SecretFile: short}}}, "holds 3 bytes"},
		"event":            {Config{Sinks: []SinkConfig{{Name: "a", Type: TypeSlack, URL: "http://x", Events: []string{"everything"}}}}, `"everything" is not an event`},
		"ui":               {Config{UIBaseURL: "temporal-ui:8080"}, "notify.uiBaseUrl"},
	} {
		errs := tc.cfg.Validate()
		joined := ""
		for _, e := range errs {
			joined += e.Error() + "\n"
		}
		if !strings.Contains(joined, tc.want) {
			t.Errorf("%s: %q; want %q", name, joined, tc.want)
		}
		if strings.Contains(joined, "pw@") {
			t.Errorf("%s: error shows a password: %s", name, joined)
		}
	}
}

// TestProbeSendsNoNotice: doctor's probe counts any answer but a server
// error, 404 or 410 (a revoked Slack webhook) as alive, reports a refused
// connection without the URL's token, and delivers nothing.
func TestProbeSendsNoNotice(t *testing.T) {
	ok, denied, revoked, broken := newReceiver(t, 200), newReceiver(t, 401), newReceiver(t, 404), newReceiver(t, 502)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	n, err := New(Config{Sinks: []SinkConfig{
		{Name: "ok", Type: TypeSlack, URL: ok.srv.URL},
		{Name: "denied", Type: TypeWebhook, URL: denied.srv.URL, SecretFile: writeFile(t, "key", "0123456789abcdef0123456789abcdef")},
		{Name: "revoked", Type: TypeSlack, URL: revoked.srv.URL},
		{Name: "broken", Type: TypeSlack, URL: broken.srv.URL},
		{Name: "gone", Type: TypeSlack, URL: gone.URL + "/hook?token=s3cret"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	out := n.Probe(context.Background())
	got := map[string]string{}
	for _, o := range out {
		got[o.Sink] = o.Error
	}
	if len(out) != 5 || got["ok"] != "" || got["denied"] != "" || !strings.Contains(got["revoked"], "404") ||
		!strings.Contains(got["broken"], "502") || got["gone"] == "" || strings.Contains(got["gone"], "s3cret") {
		t.Fatalf("probe outcomes %+v", out)
	}
	for _, r := range []*receiver{ok, denied, revoked, broken} {
		if len(r.bodies) != 1 || len(r.bodies[0]) != 0 || r.heads[0].Get(HeaderSignature) != "" {
			t.Errorf("the probe sent %q; want one empty request, unsigned", r.bodies)
		}
	}
}
