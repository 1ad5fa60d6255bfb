// Package notify delivers flinkmaint's events to the people on call:
// a generic webhook (JSON, HMAC-signed), a Slack-compatible incoming
// webhook and Alertmanager's v2 API. A sink that is down costs a few
// bounded retries and a metric; it never blocks or fails a run.
package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/redact"
)

// Event kinds.
const (
	// KindDecisionPending: a run waits for a person; repeated as a
	// reminder until answered, then sent once more with Resolved set.
	KindDecisionPending = "decision-pending"
	// KindPhase: a run entered a phase.
	KindPhase = "phase"
	// KindFinished and KindFailed: a run ended.
	KindFinished = "finished"
	KindFailed   = "failed"
	// KindQuotaWatermark: a tenant crossed its warning or critical quota
	// watermark (Resolved when it went back below).
	KindQuotaWatermark = "quota-watermark"
	// KindDaysToFull: a tenant's forecast days to a full quota fell below
	// the threshold.
	KindDaysToFull = "days-to-full"
)

// Kinds lists every event kind, for configuration checks.
var Kinds = []string{KindDecisionPending, KindPhase, KindFinished, KindFailed, KindQuotaWatermark, KindDaysToFull}

// Severities.
const (
	SeverityInfo     = "info"
	SeverityWarning  = "warning"
	SeverityCritical = "critical"
)

// Event is one thing a person may need to know.
type Event struct {
	Kind string `json:"kind"`
	// Workflow is the run's kind (window, governance, drill, upgrade,
	// quota-watch), Run its name (window id, ...), WorkflowID its
	// Temporal workflow ID.
	Workflow   string   `json:"workflow"`
	Run        string   `json:"run"`
	WorkflowID string   `json:"workflowId"`
	Tenants    []string `json:"tenants,omitempty"`
	Phase      string   `json:"phase,omitempty"`
	Severity   string   `json:"severity"`
	// Title is one line; Text may be several.
	Title string `json:"title"`
	Text  string `json:"text,omitempty"`
	// Decision is the pending decision's kind; Commands answer it.
	Decision string   `json:"decision,omitempty"`
	Commands []string `json:"commands,omitempty"`
	// Reminder counts the reminders of a pending decision (0: the first
	// notice).
	Reminder int `json:"reminder,omitempty"`
	// Resolved says the condition is over (decision answered, quota back
	// below the watermark).
	Resolved bool `json:"resolved,omitempty"`
	// RepeatEvery is how often the event is repeated while its condition
	// lasts (reminders); an alert stays firing twice that long.
	RepeatEvery time.Duration `json:"repeatEvery,omitempty"`
	At          time.Time     `json:"at"`
	// UIURL is the run's page in the Temporal Web UI.
	UIURL string `json:"uiUrl,omitempty"`
}

// Sink types.
const (
	TypeWebhook      = "webhook"
	TypeSlack        = "slack"
	TypeAlertmanager = "alertmanager"
)

// SinkConfig is one configured destination.
type SinkConfig struct {
	// Name names the sink in logs, metrics and errors.
	Name string `yaml:"name"`
	// Type is webhook, slack or alertmanager.
	Type string `yaml:"type"`
	// URL of the webhook or Alertmanager (its base, e.g.
	// http://alertmanager:9093). URLFile instead reads it from a file:
	// a Slack webhook URL is a secret.
	URL string `yaml:"url"`
	// URLFile is a file holding the URL, instead of url.
	URLFile string `yaml:"urlFile"`
	// SecretFile holds the webhook's HMAC-SHA256 key (required for
	// webhook).
	SecretFile string `yaml:"secretFile"`
	// Events this sink gets; empty means every kind for webhook and
	// slack, and decision-pending, failed, quota-watermark and
	// days-to-full for alertmanager (an alert is a condition, not news).
	Events []string `yaml:"events"`
	// Tenants limits the sink to events about these tenants; empty means
	// all (events of no tenant always pass).
	Tenants []string `yaml:"tenants"`
}

// Config is the notification settings of a worker.
type Config struct {
	// UIBaseURL is the Temporal Web UI, e.g. http://temporal-ui:8080,
	// for links to a run's page; empty leaves links out.
	UIBaseURL string `yaml:"uiBaseUrl"`
	// Timeout of one delivery attempt; default 10s.
	Timeout time.Duration `yaml:"-"`
	Sinks   []SinkConfig  `yaml:"sinks"`
}

// Validate names every problem of the configuration: field, value and
// what would be valid. Secret files are read, so a missing one stops the
// worker at start, not at the first notice.
func (c Config) Validate() []error {
	var errs []error
	if c.UIBaseURL != "" {
		if u, err := url.Parse(c.UIBaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("notify.uiBaseUrl=%q: use the Temporal Web UI's address, such as http://temporal-ui:8080", redact.URL(c.UIBaseURL)))
		}
	}
	names := map[string]bool{}
	for i, s := range c.Sinks {
		field := fmt.Sprintf("notify.sinks[%d]", i)
		if s.Name == "" || strings.ContainsAny(s.Name, " \t\n") {
			errs = append(errs, fmt.Errorf("%s.name=%q: give the sink a name without spaces (it labels metrics and logs)", field, s.Name))
		} else if names[s.Name] {
			errs = append(errs, fmt.Errorf("%s.name=%q: used by another sink; names must be unique", field, s.Name))
		}
		names[s.Name] = true
		switch s.Type {
		case TypeWebhook, TypeSlack, TypeAlertmanager:
		default:
			errs = append(errs, fmt.Errorf("%s.type=%q: use webhook, slack or alertmanager", field, s.Type))
		}
		switch {
		case s.URL != "" && s.URLFile != "":
			errs = append(errs, fmt.Errorf("%s: give url or urlFile, not both", field))
		case s.URL == "" && s.URLFile == "":
			errs = append(errs, fmt.Errorf("%s: url (or urlFile, a file holding it) is required", field))
		default:
			if _, err := s.endpoint(); err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", field, err))
			}
		}
		if s.Type == TypeWebhook {
			if _, err := s.secret(); err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", field, err))
			}
		} else if s.SecretFile != "" {
			errs = append(errs, fmt.Errorf("%s.secretFile: only a webhook signs its requests; leave it out for %s", field, s.Type))
		}
		for _, e := range s.Events {
			if !slices.Contains(Kinds, e) {
				errs = append(errs, fmt.Errorf("%s.events: %q is not an event; use %s", field, e, strings.Join(Kinds, ", ")))
			}
		}
	}
	return errs
}

// endpoint is the sink's URL, read from URLFile when set.
func (s SinkConfig) endpoint() (string, error) {
	raw := s.URL
	if s.URLFile != "" {
		b, err := os.ReadFile(s.URLFile)
		if err != nil {
			return "", fmt.Errorf("urlFile %q cannot be read: %v", s.URLFile, err)
		}
		raw = strings.TrimSpace(string(b))
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		shown := redact.URL(raw)
		if s.URLFile != "" {
			shown = "the URL in " + s.URLFile
		}
		return "", fmt.Errorf("url %q: use an http(s) URL such as https://hooks.example.com/flinkmaint", shown)
	}
	return raw, nil
}

// secret is the webhook's HMAC key from SecretFile.
func (s SinkConfig) secret() ([]byte, error) {
	if s.SecretFile == "" {
		return nil, errors.New("secretFile is required for a webhook: a file holding the HMAC-SHA256 key receivers check the signature with")
	}
	b, err := os.ReadFile(s.SecretFile)
	if err != nil {
		return nil, fmt.Errorf("secretFile %q cannot be read: %v", s.SecretFile, err)
	}
	key := bytes.TrimSpace(b)
	if len(key) < 16 {
		return nil, fmt.Errorf("secretFile %q holds %d bytes: use a key of at least 16, such as the output of `openssl rand -hex 32`", s.SecretFile, len(key))
	}
	return key, nil
}

// wants says whether the sink takes the event.
func (s SinkConfig) wants(ev Event) bool {
	events := s.Events
	if len(events) == 0 && s.Type == TypeAlertmanager {
		events = []string{KindDecisionPending, KindFailed, KindQuotaWatermark, KindDaysToFull}
	}
	if len(events) > 0 && !slices.Contains(events, ev.Kind) {
		return false
	}
	// A condition repeats to keep its alert firing; people are reminded
	// only of what waits for them.
	if ev.Reminder > 0 && ev.Kind != KindDecisionPending && s.Type != TypeAlertmanager {
		return false
	}
	if len(s.Tenants) == 0 || len(ev.Tenants) == 0 {
		return true
	}
	for _, t := range ev.Tenants {
		if slices.Contains(s.Tenants, t) {
			return true
		}
	}
	return false
}

// Outcome is one sink's delivery of one event.
type Outcome struct {
	Sink     string `json:"sink"`
	Attempts int    `json:"attempts"`
	Error    string `json:"error,omitempty"`
}

// Notifier delivers events to the configured sinks.
type Notifier struct {
	cfg    Config
	client *http.Client
	// Attempts per sink (default 3) and the pause after the first failed
	// one, doubled after each (default 1s).
	Attempts int
	Backoff  time.Duration
	now      func() time.Time
}

// New checks cfg and returns its notifier.
func New(cfg Config) (*Notifier, error) {
	if errs := cfg.Validate(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	return &Notifier{cfg: cfg, client: &http.Client{Timeout: cfg.Timeout}, Attempts: 3, Backoff: time.Second, now: time.Now}, nil
}

// UILink is the run's page in the Temporal Web UI, or "".
func (n *Notifier) UILink(namespace, workflowID string) string {
	if n == nil || n.cfg.UIBaseURL == "" || workflowID == "" {
		return ""
	}
	return strings.TrimRight(n.cfg.UIBaseURL, "/") + "/namespaces/" + url.PathEscape(namespace) + "/workflows/" + url.PathEscape(workflowID)
}

// Send delivers ev to every sink that wants it, each with bounded
// retries, and says how each went. It never returns early for a failing
// sink: one dead receiver does not keep the others from being told.
func (n *Notifier) Send(ctx context.Context, ev Event) []Outcome {
	if n == nil {
		return nil
	}
	var out []Outcome
	for _, s := range n.cfg.Sinks {
		if !s.wants(ev) {
			continue
		}
		o := Outcome{Sink: s.Name}
		wait := n.Backoff
		for o.Attempts < max(n.Attempts, 1) {
			o.Attempts++
			err := n.deliver(ctx, s, ev)
			if err == nil {
				o.Error = ""
				break
			}
			o.Error = err.Error()
			if o.Attempts >= n.Attempts || ctx.Err() != nil {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
			wait *= 2
		}
		out = append(out, o)
	}
	return out
}

// Probe asks every sink, once each, whether it answers, without sending a
// notice: Alertmanager's readiness endpoint must say 200; a webhook or
// Slack URL is asked with HEAD and any answer but a server error, 404 or
// 410 (a URL that names nothing, e.g. a revoked Slack webhook) counts.
func (n *Notifier) Probe(ctx context.Context) []Outcome {
	if n == nil {
		return nil
	}
	var out []Outcome
	for _, s := range n.cfg.Sinks {
		o := Outcome{Sink: s.Name, Attempts: 1}
		if err := n.probe(ctx, s); err != nil {
			o.Error = err.Error()
		}
		out = append(out, o)
	}
	return out
}

func (n *Notifier) probe(ctx context.Context, s SinkConfig) error {
	endpoint, err := s.endpoint()
	if err != nil {
		return err
	}
	method := http.MethodHead
	if s.Type == TypeAlertmanager {
		method, endpoint = http.MethodGet, strings.TrimRight(endpoint, "/")+"/-/ready"
	}
	resp, err := n.send(ctx, s, method, endpoint, nil, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	bad := resp.StatusCode >= 500 || resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone
	if s.Type == TypeAlertmanager {
		bad = resp.StatusCode != http.StatusOK
	}
	if bad {
		return fmt.Errorf("%s sink %s answered %s", s.Type, s.Name, resp.Status)
	}
	return nil
}

func (n *Notifier) deliver(ctx context.Context, s SinkConfig, ev Event) error {
	endpoint, err := s.endpoint()
	if err != nil {
		return err
	}
	var body []byte
	header := http.Header{"Content-Type": {"application/json"}}
	switch s.Type {
	case TypeWebhook:
		if body, err = json.Marshal(ev); err != nil {
			return err
		}
		key, err := s.secret()
		if err != nil {
			return err
		}
		ts := strconv.FormatInt(n.now().Unix(), 10)
		header.Set(HeaderTimestamp, ts)
		header.Set(HeaderSignature, Sign(key, ts, body))
	case TypeSlack:
		if body, err = json.Marshal(map[string]string{"text": slackText(ev)}); err != nil {
			return err
		}
	case TypeAlertmanager:
		endpoint = strings.TrimRight(endpoint, "/") + "/api/v2/alerts"
		if body, err = json.Marshal(alerts(ev, n.now())); err != nil {
			return err
		}
	}
	resp, err := n.send(ctx, s, http.MethodPost, endpoint, header, bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s sink %s answered %s: %s", s.Type, s.Name, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// send makes one request to sink s. Its errors name the sink, not the
// URL: the URL may carry a token (Slack).
func (n *Notifier) send(ctx context.Context, s SinkConfig, method, endpoint string, header http.Header, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, endpoint, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v", s.Type, s.Name, err)
	}
	if header != nil {
		req.Header = header
	}
	req.Header.Set("User-Agent", "flinkmaint-notify")
	resp, err := n.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%s sink %s: %v", s.Type, s.Name, err)
	}
	return resp, nil
}

// Webhook signature headers. The signature is
// "sha256=" + hex(HMAC-SHA256(key, timestamp + "." + body)): a receiver
// recomputes it and refuses old timestamps, so a captured request cannot
// be replayed later.
const (
	HeaderTimestamp = "X-Flinkmaint-Timestamp"
	HeaderSignature = "X-Flinkmaint-Signature"
)

// Sign is a webhook request's signature.
func Sign(key []byte, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(timestamp))
	m.Write([]byte("."))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks a webhook request's signature in constant time.
func Verify(key []byte, timestamp string, body []byte, signature string) bool {
	return hmac.Equal([]byte(Sign(key, timestamp, body)), []byte(signature))
}

// slackText is the event as one Slack message (mrkdwn).
func slackText(ev Event) string {
	var b strings.Builder
	icon := map[string]string{SeverityCritical: ":rotating_light:", SeverityWarning: ":warning:"}[ev.Severity]
	if ev.Resolved {
		icon = ":white_check_mark:"
	}
	if icon != "" {
		b.WriteString(icon + " ")
	}
	fmt.Fprintf(&b, "*flinkmaint %s %s*: %s", ev.Workflow, ev.Run, ev.Title)
	if ev.Reminder > 0 {
		fmt.Fprintf(&b, " (reminder %d)", ev.Reminder)
	}
	if ev.Text != "" {
		b.WriteString("\n" + ev.Text)
	}
	for _, c := range ev.Commands {
		b.WriteString("\n`" + c + "`")
	}
	if ev.UIURL != "" {
		fmt.Fprintf(&b, "\n<%s|Open in the Temporal UI>", ev.UIURL)
	}
	return b.String()
}

// Alert is one alert of Alertmanager's v2 API (POST /api/v2/alerts).
type Alert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt,omitempty"`
	EndsAt       time.Time         `json:"endsAt,omitempty"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// alerts is the event as Alertmanager alerts, one per tenant so teams
// route them by tenant. A firing alert ends on its own twice its repeat
// interval (an hour when it is not repeated) after its last notice, so a
// run that died does not page forever; a resolved one ends now.
func alerts(ev Event, now time.Time) []Alert {
	name := map[string]string{KindDecisionPending: "FlinkmaintDecisionPending", KindFailed: "FlinkmaintRunFailed",
		KindFinished: "FlinkmaintRunFinished", KindPhase: "FlinkmaintPhase", KindQuotaWatermark: "FlinkmaintQuotaWatermark",
		KindDaysToFull: "FlinkmaintQuotaDaysToFull"}[ev.Kind]
	ann := map[string]string{"summary": ev.Title}
	if ev.Text != "" {
		ann["description"] = ev.Text
	}
	if len(ev.Commands) > 0 {
		ann["command"] = strings.Join(ev.Commands, "\n")
	}
	if ev.UIURL != "" {
		ann["ui_url"] = ev.UIURL
	}
	tenants := ev.Tenants
	if len(tenants) == 0 {
		tenants = []string{""}
	}
	var out []Alert
	for _, t := range tenants {
		labels := map[string]string{"alertname": name, "kind": ev.Workflow, "run": ev.Run, "workflow_id": ev.WorkflowID, "severity": ev.Severity}
		if t != "" {
			labels["tenant"] = t
		}
		if ev.Decision != "" {
			labels["decision"] = ev.Decision
		}
		a := Alert{Labels: labels, Annotations: ann, StartsAt: ev.At, GeneratorURL: ev.UIURL}
		if ev.Resolved {
			a.EndsAt = now
		} else if ev.RepeatEvery > 0 {
			a.EndsAt = now.Add(2 * ev.RepeatEvery)
		} else {
			a.EndsAt = now.Add(time.Hour)
		}
		out = append(out, a)
	}
	return out
}
