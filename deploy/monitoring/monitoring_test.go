// Package monitoring holds the tests of deploy/monitoring: the Grafana
// dashboard, the PrometheusRule (each alert described in docs/monitoring.md,
// where its runbook_url points) and their kustomization. The tests here need
// no server; monitoring_realpeers_test.go runs promtool and a real worker.
package monitoring

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/flinkmaint/flinkmaint/internal/metrics"
)

const (
	dashboardFile = "grafana-dashboard.json"
	ruleFile      = "prometheusrule.yaml"
	kustomizeFile = "kustomization.yaml"
	// runbookPage is the page that describes every alert, each in a
	// section named after it (path from the module root).
	runbookPage = "docs/monitoring.md"
	// runbookBaseURL starts every runbook_url: the project's public home,
	// the one string a chart replaces with its runbookBaseURL value.
	runbookBaseURL = "https://github.com/flinkmaint/flinkmaint/blob/main/"
	// runbookDir holds the runbook of each decision kind (<kind>.md).
	runbookDir = "docs/runbooks"
)

// repoRoot is the module root: go test runs in deploy/monitoring.
var repoRoot = filepath.Join("..", "..")

// ---- the files ----

type promRule struct {
	Record      string            `yaml:"record"`
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type ruleGroup struct {
	Name  string     `yaml:"name"`
	Rules []promRule `yaml:"rules"`
}

type prometheusRule struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		Groups []ruleGroup `yaml:"groups"`
	} `yaml:"spec"`
}

func loadRules(t testing.TB) prometheusRule {
	t.Helper()
	data, err := os.ReadFile(ruleFile)
	if err != nil {
		t.Fatal(err)
	}
	var pr prometheusRule
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&pr); err != nil {
		t.Fatalf("%s: %v", ruleFile, err)
	}
	return pr
}

type dashTarget struct {
	RefID      string          `json:"refId"`
	Expr       string          `json:"expr"`
	Datasource json.RawMessage `json:"datasource"`
}

type dashPanel struct {
	ID         *int            `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	Datasource json.RawMessage `json:"datasource"`
	GridPos    *struct {
		X, Y, W, H int
	} `json:"gridPos"`
	Targets []dashTarget `json:"targets"`
}

type dashVariable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Definition string          `json:"definition"`
	Multi      bool            `json:"multi"`
	IncludeAll bool            `json:"includeAll"`
	AllValue   string          `json:"allValue"`
}

type dashboard struct {
	UID           string      `json:"uid"`
	Title         string      `json:"title"`
	SchemaVersion int         `json:"schemaVersion"`
	Panels        []dashPanel `json:"panels"`
	Templating    struct {
		List []dashVariable `json:"list"`
	} `json:"templating"`
}

func loadDashboard(t testing.TB) dashboard {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s does not parse: %v", dashboardFile, err)
	}
	return d
}

// variableQuery is the PromQL of a query variable: Grafana stores it as a
// string or as {"query": "..."}.
func (v dashVariable) variableQuery() string {
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var q struct {
		Query string `json:"query"`
	}
	_ = json.Unmarshal(v.Query, &q)
	return q.Query
}

// labelValuesRe matches Grafana's label_values(selector, label).
var labelValuesRe = regexp.MustCompile(`^\s*label_values\(\s*(.+?)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$`)

// query is one PromQL expression of the rules or the dashboard.
type query struct {
	where string // rule or panel that holds it
	expr  string
}

func ruleQueries(pr prometheusRule) []query {
	var qs []query
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			qs = append(qs, query{where: fmt.Sprintf("%s rule %s%s", ruleFile, r.Alert, r.Record), expr: r.Expr})
		}
	}
	return qs
}

// dashboardQueries returns every target's expr and the selector of every
// label_values() variable.
func dashboardQueries(t testing.TB, d dashboard) []query {
	t.Helper()
	var qs []query
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			qs = append(qs, query{where: fmt.Sprintf("%s panel %q target %s", dashboardFile, p.Title, tg.RefID), expr: tg.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValuesRe.FindStringSubmatch(v.variableQuery())
		if m == nil {
			t.Errorf("%s variable %s: query %q is not label_values(selector, label)", dashboardFile, v.Name, v.variableQuery())
			continue
		}
		qs = append(qs, query{where: fmt.Sprintf("%s variable %s", dashboardFile, v.Name), expr: m[1]})
	}
	return qs
}

// grafanaVars are the values the tests give Grafana's variables.
var grafanaVars = strings.NewReplacer(
	"${__rate_interval}", "5m", "$__rate_interval", "5m",
	"${__interval}", "1m", "$__interval", "1m",
	"${__range}", "1d", "$__range", "1d",
	"${tenant}", "team-a", "$tenant", "team-a",
	"${cluster}", ".*", "$cluster", ".*",
	"${namespace}", "flinkmaint", "$namespace", "flinkmaint",
)

// ---- the dashboard ----

func TestDashboardIsAGrafanaDashboard(t *testing.T) {
	d := loadDashboard(t)
	if d.Title != "flinkmaint" || d.UID == "" {
		t.Errorf("title %q, uid %q: want title flinkmaint and a uid", d.Title, d.UID)
	}
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d: want 36 or later (Grafana 9.x+)", d.SchemaVersion)
	}
	vars := map[string]dashVariable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if v, ok := vars["tenant"]; !ok || v.Type != "query" || !v.Multi || !v.IncludeAll {
		t.Errorf("templating variable tenant: %+v, want a multi-value query variable with All", v)
	}
	// cluster and namespace pick the install: All must also match series
	// without the label (no cluster label is common), hence .* for All.
	for _, name := range []string{"cluster", "namespace"} {
		if v, ok := vars[name]; !ok || v.Type != "query" || !v.IncludeAll || v.AllValue != ".*" {
			t.Errorf("templating variable %s: %+v, want a query variable with All as .*", name, v)
		}
	}
	if v, ok := vars["datasource"]; !ok || v.Type != "datasource" {
		t.Errorf("templating variable datasource: %+v, want a data source variable", v)
	}
	if len(d.Panels) == 0 {
		t.Fatal("no panels")
	}
	ids := map[int]string{}
	type cell struct{ x, y int }
	taken := map[cell]string{}
	for _, p := range d.Panels {
		name := fmt.Sprintf("panel %q", p.Title)
		if p.ID == nil || *p.ID <= 0 {
			t.Errorf("%s: no positive id", name)
		} else if other, dup := ids[*p.ID]; dup {
			t.Errorf("%s: id %d already used by %q", name, *p.ID, other)
		} else {
			ids[*p.ID] = p.Title
		}
		if p.Type == "" || p.Title == "" {
			t.Errorf("%s (id %v): type %q, title %q: both are required", name, p.ID, p.Type, p.Title)
		}
		checkDatasource(t, name, p.Datasource)
		if g := p.GridPos; g == nil || g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			t.Errorf("%s: gridPos %+v, want w, h > 0 within the 24 columns", name, g)
		} else {
			overlaps := map[string]bool{}
			for x := g.X; x < g.X+g.W; x++ {
				for y := g.Y; y < g.Y+g.H; y++ {
					if other, ok := taken[cell{x, y}]; ok {
						overlaps[other] = true
					}
					taken[cell{x, y}] = p.Title
				}
			}
			for other := range overlaps {
				t.Errorf("%s overlaps panel %q", name, other)
			}
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no targets", name)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("%s: target refId %q empty or repeated", name, tg.RefID)
			}
			refs[tg.RefID] = true
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("%s target %s: empty expr", name, tg.RefID)
			}
			checkDatasource(t, name+" target "+tg.RefID, tg.Datasource)
		}
	}
}

// checkDatasource wants the dashboard's Prometheus data source variable.
func checkDatasource(t *testing.T, where string, raw json.RawMessage) {
	t.Helper()
	var ds struct{ Type, UID string }
	if err := json.Unmarshal(raw, &ds); err != nil || ds.Type != "prometheus" || ds.UID != "${datasource}" {
		t.Errorf("%s: datasource %s, want {\"type\": \"prometheus\", \"uid\": \"${datasource}\"}", where, raw)
	}
}

// The panels the dashboard exists for, each found by a metric it must
// read (a recording rule of prometheusrule.yaml or a worker metric).
func TestDashboardCoversTheOperatorsQuestions(t *testing.T) {
	d := loadDashboard(t)
	read := map[string]bool{}
	for _, q := range dashboardQueries(t, d) {
		sels, _, err := promqlSelectors(q.expr)
		if err != nil {
			t.Fatalf("%s: %v", q.where, err)
		}
		for _, s := range sels {
			read[s.Name] = true
		}
	}
	for question, metric := range map[string]string{
		"namespace quota used vs quota per tenant":      "flinkmaint:quota_utilisation_percent:latest",
		"forecast days to full":                         "flinkmaint_quota_watch_days_to_full",
		"files reclaimed by governance":                 "flinkmaint_cleanup_reclaimed_files_total",
		"bytes reclaimed by governance":                 "flinkmaint_cleanup_reclaimed_bytes_total",
		"window jobs by phase and outcome":              "temporal_workflow_failed_total",
		"decisions waiting for a person":                "flinkmaint:decision_pending_since_timestamp_seconds:latest",
		"network-change reminders sent":                 "flinkmaint_window_network_reminders_total",
		"governance freshness per tenant":               "flinkmaint:governance_tenant_last_success_timestamp_seconds:max",
		"time since the last successful drill":          "flinkmaint_restore_drill_last_success_timestamp_seconds",
		"scheduled savepoint failures":                  "flinkmaint:scheduled_savepoints_failed:latest",
		"activity failures":                             "temporal_activity_execution_failed_total",
		"workers up (the job the worker alerts select)": "up",
	} {
		if !read[metric] {
			t.Errorf("no panel answers %q: no query reads %s", question, metric)
		}
	}
}

// Every panel and the variables after cluster read only the installs the
// cluster and namespace variables select: a dashboard over two installs
// must not add one's tenants to the other's.
func TestDashboardQueriesSelectTheInstall(t *testing.T) {
	d := loadDashboard(t)
	both := map[string]string{"cluster": "=~$cluster", "namespace": "=~$namespace"}
	check := func(where, expr string, want map[string]string) {
		t.Helper()
		sels, _, err := promqlSelectors(expr)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			return
		}
		if len(sels) == 0 {
			t.Errorf("%s: %q reads no metric", where, expr)
		}
		for _, s := range sels {
			for l, v := range want {
				if s.Matchers[l] != v {
					t.Errorf("%s: %s matches %s by %q, want %s%s", where, s.Name, l, s.Matchers[l], l, v)
				}
			}
		}
	}
	n := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			check(fmt.Sprintf("panel %q target %s", p.Title, tg.RefID), tg.Expr, both)
			n++
		}
	}
	for _, v := range d.Templating.List {
		m := labelValuesRe.FindStringSubmatch(v.variableQuery())
		switch {
		case v.Type != "query":
		case m == nil:
			t.Errorf("variable %s: %q is not label_values(selector, label)", v.Name, v.variableQuery())
		case v.Name == "cluster":
			check("variable cluster", m[1], nil)
		case v.Name == "namespace":
			check("variable namespace", m[1], map[string]string{"cluster": both["cluster"]})
		default:
			check("variable "+v.Name, m[1], both)
		}
	}
	if n == 0 {
		t.Fatal("no panel target")
	}
}

// ---- the PrometheusRule ----

func TestPrometheusRuleIsValidAndDocumented(t *testing.T) {
	pr := loadRules(t)
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" || pr.Metadata.Name == "" {
		t.Fatalf("%s: apiVersion %q, kind %q, name %q: want a named monitoring.coreos.com/v1 PrometheusRule",
			ruleFile, pr.APIVersion, pr.Kind, pr.Metadata.Name)
	}
	page, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(runbookPage)))
	if err != nil {
		t.Fatal(err)
	}
	sections := markdownSections(string(page))
	decisionKinds := runbookKinds(t)
	groups := map[string]bool{}
	alerts := map[string]bool{}
	for _, g := range pr.Spec.Groups {
		if g.Name == "" || groups[g.Name] || len(g.Rules) == 0 {
			t.Errorf("group %q: want a unique name and rules", g.Name)
		}
		groups[g.Name] = true
		for _, r := range g.Rules {
			if (r.Alert == "") == (r.Record == "") || strings.TrimSpace(r.Expr) == "" {
				t.Errorf("group %s: rule %+v: want one of alert or record, and an expr", g.Name, r)
				continue
			}
			if r.Record != "" {
				continue
			}
			if alerts[r.Alert] {
				t.Errorf("alert %s defined twice", r.Alert)
			}
			alerts[r.Alert] = true
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("alert %s: severity %q, want critical or warning", r.Alert, s)
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("alert %s: no %s annotation", r.Alert, a)
				}
			}
			// Every alert has its section in runbookPage, named after it.
			if section, found := sections[headingAnchor(r.Alert)]; !found || !strings.Contains(section, "`"+r.Alert+"`") {
				t.Errorf("alert %s: %s has no section #%s that names it", r.Alert, runbookPage, headingAnchor(r.Alert))
			}
			checkRunbookURL(t, r.Alert, r.Annotations["runbook_url"], decisionKinds)
			// An alert about a tenant names it.
			if strings.Contains(r.Expr, "tenant") && !strings.Contains(r.Annotations["summary"], "$labels.tenant") {
				t.Errorf("alert %s reads per-tenant series but its summary does not name {{ $labels.tenant }}", r.Alert)
			}
		}
	}
	for _, want := range []string{
		"FlinkmaintQuotaWarning", "FlinkmaintQuotaCritical", "FlinkmaintQuotaFullSoon",
		"FlinkmaintWindowAwaitingNetworkConfirmation", "FlinkmaintRestoreDrillStale",
		"FlinkmaintScheduledSavepointsFailed", "FlinkmaintWorkerDown", "FlinkmaintWorkerAbsent",
		"FlinkmaintDecisionUnanswered", "FlinkmaintGovernanceStale",
	} {
		if !alerts[want] {
			t.Errorf("alert %s missing", want)
		}
	}
}

// decisionLabel is the template a runbook_url names a decision's runbook by.
const decisionLabel = "{{ $labels.decision }}"

// checkRunbookURL wants runbookBaseURL followed by a Markdown page of the
// repository and, unless the page is a decision's runbook, the anchor of a
// heading of it whose section names the alert. A URL with decisionLabel
// in it must name an existing runbook for every decision kind.
func checkRunbookURL(t *testing.T, alert, raw string, decisionKinds []string) {
	t.Helper()
	urls := []string{raw}
	if strings.Contains(raw, decisionLabel) {
		urls = nil
		for _, k := range decisionKinds {
			urls = append(urls, strings.ReplaceAll(raw, decisionLabel, k))
		}
	}
	for _, s := range urls {
		rest, ok := strings.CutPrefix(s, runbookBaseURL)
		u, err := url.Parse(s)
		if !ok || err != nil || u.Scheme != "https" || strings.Contains(s, "{{") {
			t.Errorf("alert %s: runbook_url %q (%v): want an absolute URL %s<path>#<anchor>", alert, s, err, runbookBaseURL)
			continue
		}
		file, anchor, _ := strings.Cut(rest, "#")
		data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(file)))
		if err != nil || !strings.HasSuffix(file, ".md") || path.Clean(file) != file || strings.HasPrefix(file, "../") {
			t.Errorf("alert %s: runbook_url %q: %s is no Markdown page of the repository (%v)", alert, s, file, err)
			continue
		}
		if path.Dir(file) == runbookDir && anchor == "" {
			continue // a decision's runbook: the whole page is about it
		}
		if section, found := markdownSections(string(data))[anchor]; !found {
			t.Errorf("alert %s: runbook_url %q: %s has no heading with anchor #%s", alert, s, file, anchor)
		} else if !strings.Contains(section, "`"+alert+"`") {
			t.Errorf("alert %s: runbook_url %q: the section #%s of %s does not describe it (no `%s` in it)", alert, s, anchor, file, alert)
		}
	}
}

// runbookKinds are the kinds the index of runbookDir lists, each with its
// page: the values a decision label can take (go test ./docs/ checks that
// every kind the workflows know is there).
func runbookKinds(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(runbookDir), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, m := range runbookRow.FindAllStringSubmatch(string(data), -1) {
		kinds = append(kinds, m[1])
	}
	if len(kinds) < 10 {
		t.Fatalf("%s/README.md lists %d kinds (%v): its table no longer reads as | `kind` | ...", runbookDir, len(kinds), kinds)
	}
	return kinds
}

// runbookRow is a row of the runbook index's table: | `kind` | ...
var runbookRow = regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\|")

// markdownSections returns, per heading anchor, the text from that heading
// to the next heading of the same or a higher level. Anchors follow
// GitHub's rules (headingAnchor); a repeated heading gets -1, -2, ...
// Lines in fenced code blocks are no headings.
func markdownSections(page string) map[string]string {
	type open struct {
		anchor string
		level  int
		lines  []string
	}
	out := map[string]string{}
	seen := map[string]int{}
	var stack []*open
	closeTo := func(level int) {
		for len(stack) > 0 && stack[len(stack)-1].level >= level {
			o := stack[len(stack)-1]
			out[o.anchor] = strings.Join(o.lines, "\n")
			stack = stack[:len(stack)-1]
		}
	}
	fenced := false
	for _, line := range strings.Split(page, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fenced = !fenced
		}
		if m := atxHeading.FindStringSubmatch(line); m != nil && !fenced {
			level := len(m[1])
			closeTo(level)
			a := headingAnchor(m[2])
			if n := seen[a]; n > 0 {
				seen[a] = n + 1
				a = a + "-" + strconv.Itoa(n)
			} else {
				seen[a] = 1
			}
			stack = append(stack, &open{anchor: a, level: level})
		}
		for _, o := range stack {
			o.lines = append(o.lines, line)
		}
	}
	closeTo(1)
	return out
}

// atxHeading is a markdown heading line: its #s and its text.
var atxHeading = regexp.MustCompile(`^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$`)

// headingAnchor is GitHub's anchor of a heading: its text without code
// and emphasis markers, lower case, every character that is not a letter,
// digit, space, hyphen or underscore removed, each space a hyphen.
func headingAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.NewReplacer("`", "", "*", "").Replace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// ---- the kustomization ----

func TestKustomizationListsTheRuleAndTheDashboard(t *testing.T) {
	data, err := os.ReadFile(kustomizeFile)
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Kind               string   `yaml:"kind"`
		Resources          []string `yaml:"resources"`
		ConfigMapGenerator []struct {
			Name    string   `yaml:"name"`
			Files   []string `yaml:"files"`
			Options struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"options"`
		} `yaml:"configMapGenerator"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	if k.Kind != "Kustomization" || !slices.Contains(k.Resources, ruleFile) {
		t.Errorf("kind %q, resources %v: want a Kustomization listing %s", k.Kind, k.Resources, ruleFile)
	}
	for _, r := range k.Resources {
		if _, err := os.Stat(r); err != nil {
			t.Errorf("resource %s: %v", r, err)
		}
	}
	found := false
	for _, g := range k.ConfigMapGenerator {
		if slices.Contains(g.Files, dashboardFile) {
			found = true
			if g.Options.Labels["grafana_dashboard"] != "1" {
				t.Errorf("configMapGenerator %s: labels %v, want grafana_dashboard: \"1\" for the Grafana sidecar", g.Name, g.Options.Labels)
			}
		}
	}
	if !found {
		t.Errorf("no configMapGenerator holds %s", dashboardFile)
	}
}

// The ServiceMonitor is the one way Prometheus scrapes the worker: no
// manifest under deploy/ asks for a scrape by annotation (a second job
// would double every series), the target's namespace label is kept (the
// dashboard's install), and the job it gets, the Service's name, is the
// one the worker alerts select.
func TestServiceMonitorIsTheOneScrapePath(t *testing.T) {
	data, err := os.ReadFile("servicemonitor.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sm struct {
		Kind string `yaml:"kind"`
		Spec struct {
			JobLabel string `yaml:"jobLabel"`
			Selector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
			Endpoints []struct {
				Port        string `yaml:"port"`
				Path        string `yaml:"path"`
				HonorLabels bool   `yaml:"honorLabels"`
			} `yaml:"endpoints"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(data, &sm); err != nil {
		t.Fatal(err)
	}
	if sm.Kind != "ServiceMonitor" || sm.Spec.JobLabel != "" || len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("servicemonitor.yaml: %+v, want a ServiceMonitor with one endpoint and the Service's name as job", sm)
	}
	if e := sm.Spec.Endpoints[0]; e.Port != "http" || e.Path != "/metrics" || e.HonorLabels {
		t.Errorf("endpoint %+v: want port http, path /metrics, the target's labels kept", e)
	}
	svcData, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "kustomize", "base", "service.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var svc struct {
		Metadata struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
		Spec struct {
			Ports []struct {
				Name string `yaml:"name"`
			} `yaml:"ports"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(svcData, &svc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mustRead(t, ruleFile)), `job="`+svc.Metadata.Name+`"`) {
		t.Errorf("the worker alerts do not select job=%q, the name of the Service the ServiceMonitor scrapes", svc.Metadata.Name)
	}
	found := false
	for _, p := range svc.Spec.Ports {
		found = found || p.Name == sm.Spec.Endpoints[0].Port
	}
	if !found {
		t.Errorf("the Service %s has no port named %s", svc.Metadata.Name, sm.Spec.Endpoints[0].Port)
	}
	err = filepath.WalkDir(filepath.Join(repoRoot, "deploy"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !slices.Contains([]string{".yaml", ".yml", ".tpl", ".json"}, filepath.Ext(p)) {
			return err
		}
		for n, line := range strings.Split(string(mustRead(t, p)), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "#") && strings.Contains(line, "prometheus.io/scrape") {
				t.Errorf("%s:%d asks for a scrape by annotation; the ServiceMonitor already scrapes the worker", p, n+1)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// ---- metric names: every name the files read is one the worker exports ----

// scrapeSeries are the series Prometheus itself adds to every target.
var scrapeSeries = map[string]bool{"up": true}

// targetLabels are the labels Prometheus (and the ServiceMonitor) put on
// every series of a target.
// cluster is not one of them, but many installs add it (external labels,
// relabelling); the dashboard's cluster variable selects by it.
var targetLabels = map[string]bool{"job": true, "instance": true, "pod": true, "namespace": true, "service": true, "endpoint": true, "container": true,
	"cluster": true}

// exportedMetrics are the names (as PromQL sees them) the worker exports
// and their labels; nil labels: not known.
type exportedMetrics map[string]map[string]bool

func (e exportedMetrics) add(name string, labels map[string]bool) {
	if old, ok := e[name]; ok && old != nil {
		for l := range labels {
			old[l] = true
		}
		return
	}
	e[name] = labels
}

// addRegistry adds what reg gathers: names with their labels, histograms
// and summaries with the series names PromQL reads.
func (e exportedMetrics) addRegistry(t testing.TB, reg prometheus.Gatherer) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		labels := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = true
			}
		}
		e.add(mf.GetName(), labels)
		switch mf.GetType().String() {
		case "HISTOGRAM":
			withLE := map[string]bool{"le": true}
			for l := range labels {
				withLE[l] = true
			}
			e.add(mf.GetName()+"_bucket", withLE)
			e.add(mf.GetName()+"_sum", labels)
			e.add(mf.GetName()+"_count", labels)
		case "SUMMARY":
			e.add(mf.GetName()+"_sum", labels)
			e.add(mf.GetName()+"_count", labels)
		}
	}
}

var (
	descNameRe   = regexp.MustCompile(`fqName: "([^"]+)"`)
	descLabelsRe = regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
)

// addDescribed adds every collector a field of v (recursively) holds, so
// vectors without a child yet count too.
func (e exportedMetrics) addDescribed(t testing.TB, v reflect.Value) {
	t.Helper()
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		if c, ok := v.Interface().(prometheus.Collector); ok {
			ch := make(chan *prometheus.Desc, 64)
			go func() { c.Describe(ch); close(ch) }()
			for d := range ch {
				s := d.String()
				m := descNameRe.FindStringSubmatch(s)
				if m == nil {
					t.Fatalf("cannot read the name of %s", s)
				}
				labels := map[string]bool{}
				if lm := descLabelsRe.FindStringSubmatch(s); lm != nil && lm[1] != "" {
					for _, l := range strings.Split(lm[1], ",") {
						labels[strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")")] = true
					}
				}
				e.add(m[1], labels)
			}
			return
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return
	}
	for i := 0; i < v.NumField(); i++ {
		if v.Type().Field(i).IsExported() {
			e.addDescribed(t, v.Field(i))
		}
	}
}

// sdkMetricCall is a metric that flinkmaint's code emits through the
// Temporal SDK's metrics handler (workflow.GetMetricsHandler and the like).
type sdkMetricCall struct {
	kind, name, at string
}

// sdkMetricCalls finds, in the module's non-test Go files, every call
// X.Counter("name"), X.Gauge("name") or X.Timer("name") whose name is a
// string literal or a constant of the same package.
func sdkMetricCalls(t testing.TB) []sdkMetricCall {
	t.Helper()
	var calls []sdkMetricCall
	fset := token.NewFileSet()
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != repoRoot {
				switch d.Name() {
				case "testdata", "vendor", "var", "bin", "node_modules":
					return filepath.SkipDir
				}
				if strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkgConsts := packageStringConsts(t, fset, filepath.Dir(path), f.Name.Name)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "Counter" && sel.Sel.Name != "Gauge" && sel.Sel.Name != "Timer") {
				return true
			}
			at := fset.Position(call.Pos()).String()
			var name string
			switch a := call.Args[0].(type) {
			case *ast.BasicLit:
				if a.Kind == token.STRING {
					name, _ = strconv.Unquote(a.Value)
				}
			case *ast.Ident:
				name = pkgConsts[a.Name]
			}
			if name == "" {
				// Not a metric name this scan can read (or no metric at
				// all): a name the files read and the scan misses fails
				// the check as not exported, never passes it.
				return true
			}
			calls = append(calls, sdkMetricCall{kind: sel.Sel.Name, name: name, at: at})
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return calls
}

var constCache = map[string]map[string]string{}

// packageStringConsts returns the string constants of the package in dir.
func packageStringConsts(t testing.TB, fset *token.FileSet, dir, pkg string) map[string]string {
	key := dir + ":" + pkg
	if c, ok := constCache[key]; ok {
		return c
	}
	consts := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil || f.Name.Name != pkg {
			continue
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							consts[n.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
		}
	}
	constCache[key] = consts
	return consts
}

// workerExports starts the worker's metrics (internal/metrics.New) and
// returns what it registers: every collector it describes, what it gathers,
// and the metrics flinkmaint's code emits through the SDK handler, emitted
// here through that handler so they carry the names its reporter gives them.
func workerExports(t testing.TB) exportedMetrics {
	t.Helper()
	m, err := metrics.New("test", "0123456789ab")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Close() }()
	e := exportedMetrics{}
	e.addDescribed(t, reflect.ValueOf(m))
	calls := sdkMetricCalls(t)
	if len(calls) == 0 {
		t.Fatal("found no metric emitted through the Temporal SDK's handler; the source scan is broken")
	}
	for _, c := range calls {
		switch c.kind {
		case "Counter":
			m.SDK.Counter(c.name).Inc(1)
		case "Gauge":
			m.SDK.Gauge(c.name).Update(1)
		case "Timer":
			m.SDK.Timer(c.name).Record(time.Second)
		}
	}
	// The SDK metrics carry labels the worker's client adds; from here they
	// are not known.
	sdk := exportedMetrics{}
	sdk.addRegistry(t, m.Registry)
	for name, labels := range sdk {
		if _, described := e[name]; !described && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
			labels = nil
		}
		e.add(name, labels)
	}
	return e
}

// outerBy reads the labels of an expression that is an aggregation by
// labels: the labels of what it records.
var outerBy = regexp.MustCompile(`^\s*(?:sum|min|max|avg|count|group)\s+by\s*\(([^)]*)\)`)

// recordedSeries are the series the rule file's recording rules produce,
// with their labels when the rule aggregates by a list of them.
func recordedSeries(pr prometheusRule) exportedMetrics {
	out := exportedMetrics{}
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Record == "" {
				continue
			}
			var labels map[string]bool
			if m := outerBy.FindStringSubmatch(r.Expr); m != nil {
				labels = map[string]bool{}
				for _, l := range strings.Split(m[1], ",") {
					labels[strings.TrimSpace(l)] = true
				}
			}
			out[r.Record] = labels
		}
	}
	return out
}

// checkReferencedMetrics checks every selector of the rules and the
// dashboard against exported: the name must be exported and the labels it
// matches must be the metric's; a label an expression groups or matches by
// (by, on, ...) must be one of the labels its metrics have. Names for which
// skip is true are left out.
func checkReferencedMetrics(t *testing.T, exported exportedMetrics, skip func(name string) bool) (checked, skipped []string) {
	t.Helper()
	pr := loadRules(t)
	recorded := recordedSeries(pr)
	seen := map[string]bool{}
	for _, q := range append(ruleQueries(pr), dashboardQueries(t, loadDashboard(t))...) {
		sels, grouping, err := promqlSelectors(grafanaVars.Replace(q.expr))
		if err != nil {
			t.Errorf("%s: %v", q.where, err)
			continue
		}
		if len(sels) == 0 {
			t.Errorf("%s: %q reads no metric", q.where, q.expr)
		}
		// The labels of every metric the expression reads; nil when one
		// of them has labels not known here.
		inExpr := map[string]bool{}
		for _, s := range sels {
			var labels map[string]bool
			known := true
			switch {
			case scrapeSeries[s.Name]:
			case hasKey(recorded, s.Name):
				labels = recorded[s.Name]
				known = labels != nil
			case skip != nil && skip(s.Name):
				if !seen[s.Name] {
					skipped = append(skipped, s.Name)
				}
				known = false
			default:
				var ok bool
				labels, ok = exported[s.Name]
				if !ok {
					t.Errorf("%s reads %s, which the worker does not export (internal/metrics, the SDK handler)", q.where, s.Name)
					known = false
					break
				}
				if !seen[s.Name] {
					checked = append(checked, s.Name)
				}
				known = labels != nil
			}
			seen[s.Name] = true
			if !known {
				inExpr = nil
				continue
			}
			for _, l := range s.Labels {
				if labels != nil && !labels[l] && !targetLabels[l] {
					t.Errorf("%s selects %s by label %q; its labels are %v", q.where, s.Name, l, sortedKeys(labels))
				}
			}
			if inExpr != nil {
				for l := range labels {
					inExpr[l] = true
				}
			}
		}
		if inExpr == nil {
			continue
		}
		for _, l := range grouping {
			if !inExpr[l] && !targetLabels[l] {
				t.Errorf("%s groups or matches by label %q, which none of its metrics has (%v)", q.where, l, sortedKeys(inExpr))
			}
		}
	}
	return checked, skipped
}

func hasKey(m exportedMetrics, k string) bool {
	_, ok := m[k]
	return ok
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Every metric the rules and the dashboard read is one the worker
// registers. The Temporal SDK's own metrics (temporal_*) appear only once a
// worker polls a server: monitoring_realpeers_test.go checks those.
func TestReferencedMetricsAreExportedByTheWorker(t *testing.T) {
	checked, skipped := checkReferencedMetrics(t, workerExports(t), func(name string) bool {
		return strings.HasPrefix(name, "temporal_")
	})
	if len(checked) == 0 {
		t.Fatal("checked no metric name")
	}
	t.Logf("checked %d names; the SDK's own, checked with a real worker under -tags realpeers: %v", len(checked), skipped)
}

// ---- the PromQL selector reader ----

// selector is a metric name an expression reads and the labels it matches;
// Matchers holds, per label, its operator and value as written (=~$tenant).
type selector struct {
	Name     string
	Labels   []string
	Matchers map[string]string
}

var (
	// binary and modifier keywords; never metric names.
	promqlKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"inf": true, "nan": true, "atan2": true}
	// keywords followed by a parenthesised label list.
	promqlLabelLists = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
	promqlAggregates = map[string]bool{"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true,
		"stdvar": true, "count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true}
)

// promqlSelectors reads the metric names (and matched labels) of a PromQL
// expression: every identifier that is not a function, aggregation,
// keyword or label list; and the labels of its label lists (by, without,
// on, ignoring, group_left, group_right). It refuses what it cannot read
// ({__name__=...}, unsubstituted variables), so a name is never missed
// silently.
func promqlSelectors(expr string) (out []selector, grouping []string, err error) {
	s := []rune(expr)
	i := 0
	skipSpace := func() {
		for i < len(s) && strings.ContainsRune(" \t\r\n", s[i]) {
			i++
		}
	}
	skipString := func() error {
		q := s[i]
		for i++; i < len(s); i++ {
			if s[i] == '\\' && q != '`' {
				i++
				continue
			}
			if s[i] == q {
				i++
				return nil
			}
		}
		return fmt.Errorf("unterminated string in %q", expr)
	}
	skipTo := func(close rune) error {
		for ; i < len(s); i++ {
			if s[i] == close {
				i++
				return nil
			}
		}
		return fmt.Errorf("no %q in %q", close, expr)
	}
	ident := func() string {
		j := i
		for i < len(s) && (s[i] == '_' || s[i] == ':' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= '0' && s[i] <= '9') {
			i++
		}
		return string(s[j:i])
	}
	matchers := func() ([]string, map[string]string, error) { // at '{'
		var labels []string
		values := map[string]string{}
		i++
		for {
			skipSpace()
			if i >= len(s) {
				return nil, nil, fmt.Errorf("unterminated {} in %q", expr)
			}
			switch {
			case s[i] == '}':
				i++
				return labels, values, nil
			case s[i] == ',':
				i++
			default:
				l := ident()
				if l == "" {
					return nil, nil, fmt.Errorf("unexpected %q in the matchers of %q", s[i], expr)
				}
				if l == "__name__" {
					return nil, nil, fmt.Errorf("%q selects by __name__; name the metric instead", expr)
				}
				skipSpace()
				j := i
				for i < len(s) && strings.ContainsRune("=!~", s[i]) {
					i++
				}
				op := string(s[j:i])
				skipSpace()
				if op == "" || i >= len(s) || !strings.ContainsRune("\"'`", s[i]) {
					return nil, nil, fmt.Errorf("label %s without an operator and a quoted value in %q", l, expr)
				}
				j = i
				if err := skipString(); err != nil {
					return nil, nil, err
				}
				labels = append(labels, l)
				values[l] = op + string(s[j+1:i-1])
			}
		}
	}
	for {
		skipSpace()
		if i >= len(s) {
			return out, grouping, nil
		}
		c := s[i]
		switch {
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			if err := skipString(); err != nil {
				return nil, nil, err
			}
		case c == '[':
			if err := skipTo(']'); err != nil {
				return nil, nil, err
			}
		case c == '{':
			return nil, nil, fmt.Errorf("selector without a metric name in %q", expr)
		case c == '$':
			return nil, nil, fmt.Errorf("unsubstituted variable in %q", expr)
		case c >= '0' && c <= '9' || c == '.':
			for i < len(s) && (s[i] == '.' || s[i] == '_' || s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z') {
				i++
			}
		case c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			name := ident()
			skipSpace()
			next := rune(0)
			if i < len(s) {
				next = s[i]
			}
			lower := strings.ToLower(name)
			switch {
			case promqlLabelLists[lower]:
				if next == '(' {
					j := i
					if err := skipTo(')'); err != nil {
						return nil, nil, err
					}
					for _, l := range strings.Split(string(s[j+1:i-1]), ",") {
						if l = strings.TrimSpace(l); l != "" {
							grouping = append(grouping, l)
						}
					}
				}
			case promqlKeywords[lower]:
			case next == '(':
			case promqlAggregates[lower] && (strings.HasPrefix(string(s[i:]), "by") || strings.HasPrefix(string(s[i:]), "without")):
			default:
				sel := selector{Name: name}
				if next == '{' {
					labels, values, err := matchers()
					if err != nil {
						return nil, nil, err
					}
					sel.Labels, sel.Matchers = labels, values
				}
				out = append(out, sel)
			}
		default:
			i++
		}
	}
}

func TestPromQLSelectors(t *testing.T) {
	for name, tc := range map[string]struct {
		expr string
		want string // name[labels] ...
	}{
		"aggregation with by before the body": {
			`sum by (tenant) (increase(a_total{tenant=~"x|y"}[5m]))`, `a_total[tenant] grouping[tenant]`},
		"aggregation with by after the body": {
			`max(b) by (tenant) > 7 * 86400`, `b[] grouping[tenant]`},
		"vector matching and modifiers": {
			`topk by (t) (1, a * 0 + on (job, instance) group_left () b{operation="sample"}) and on (t) c offset 1h unless d bool`,
			`a[] b[operation] c[] d[] grouping[t job instance t]`},
		"functions, numbers, durations and strings": {
			`time() - max_over_time(x_seconds{l="a{b}"}[14d:1h]) > 1.5e3 or vector(0)`, `x_seconds[l]`},
		"absent around a comparison": {
			`absent(up{job="w"} == 1)`, `up[job]`},
		"recording rule names": {
			`flinkmaint:q:latest{dimension="namespace", tenant=~".*"} >= 80`, `flinkmaint:q:latest[dimension tenant]`},
		"comments": {
			"# not_a_metric\nsum(a)", `a[]`},
	} {
		t.Run(name, func(t *testing.T) {
			sels, grouping, err := promqlSelectors(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range sels {
				got = append(got, s.Name+"["+strings.Join(s.Labels, " ")+"]")
			}
			if len(grouping) > 0 {
				got = append(got, "grouping["+strings.Join(grouping, " ")+"]")
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("%s: got %q, want %q", tc.expr, strings.Join(got, " "), tc.want)
			}
		})
	}
	sels, _, err := promqlSelectors(`a{cluster=~"$cluster", job = "w", l!~'x'} + b`)
	if err != nil || len(sels) != 2 || !reflect.DeepEqual(sels[0].Matchers, map[string]string{"cluster": "=~$cluster", "job": "=w", "l": "!~x"}) || sels[1].Matchers != nil {
		t.Errorf("matchers: %+v, %v", sels, err)
	}
	for _, bad := range []string{`{__name__="a"}`, `rate(a[$__rate_interval])x{`, `sum(a{b="c)`, `count($x)`, `a{b}`, `a{b=c}`} {
		if _, _, err := promqlSelectors(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
