package docs_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Every kind of decision a run can wait for, and every wait only a person
// ends, has a runbook: docs/runbooks/<kind>.md, listed in
// docs/runbooks/README.md. The kinds are read from the workflows' source
// (workflows/*.go, test files aside) with go/parser:
//
//  1. every string constant whose name is Decision followed by an upper
//     case letter (DecisionNetworkChange, DecisionUnmatchedState, ...):
//     the kinds of the PendingDecision a window or an upgrade waits on;
//  2. every string, written out or as a constant, given as the Decision
//     field of a notify.Event or the Kind field of a PendingDecision
//     literal, or as the kind (second argument) of a decide call: the
//     kind people see in notifications and status, also when it is
//     written in place (a governance run's "approval");
//  3. the waits that are not decisions but stop a run until a person
//     acts, named by their constants in personWaits.
//
// A runbook whose name is no kind any more (a kind renamed or removed) fails
// too, unless it is one of taskRunbooks.

// runbookDir is where the runbooks are, from the module root.
const runbookDir = "docs/runbooks"

// personWaits are the constants, in package workflows, whose values name
// waits a person ends that are not decisions: a window an operator paused,
// and a run waiting for the tenant lock another run holds.
var personWaits = []string{"SignalPause", "GovernancePhaseWaitingForLock"}

// taskRunbooks are runbooks for a task, not for a decision kind.
var taskRunbooks = map[string]bool{"restore-from-trash.md": true}

var decisionConstRe = regexp.MustCompile(`^Decision[A-Z]`)

// kindSource is a kind, where it was found (for messages) and by which
// rule (1 or 2).
type kindSource struct {
	kind, where string
	rule        int
}

// parseWorkflows parses the non-test Go files of workflows/.
func parseWorkflows(t *testing.T) (*token.FileSet, []*ast.File) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(repoRoot, "workflows", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatal("no Go file under workflows/")
	}
	return fset, files
}

// stringConsts maps every package-level string constant with a literal
// value to that value.
func stringConsts(files []*ast.File) map[string]string {
	out := map[string]string{}
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					if v, ok := stringValue(vs.Values[i], nil); ok {
						out[name.Name] = v
					}
				}
			}
		}
	}
	return out
}

// stringValue is e's value when it is a string literal or names one of
// consts.
func stringValue(e ast.Expr, consts map[string]string) (string, bool) {
	switch v := e.(type) {
	case *ast.BasicLit:
		if v.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(v.Value)
		return s, err == nil
	case *ast.Ident:
		s, ok := consts[v.Name]
		return s, ok
	case *ast.ParenExpr:
		return stringValue(v.X, consts)
	}
	return "", false
}

// typeName is the name of a composite literal's type: Name or pkg.Name.
func typeName(e ast.Expr) string {
	switch v := e.(type) {
	case *ast.Ident:
		return v.Name
	case *ast.SelectorExpr:
		if x, ok := v.X.(*ast.Ident); ok {
			return x.Name + "." + v.Sel.Name
		}
	case *ast.StarExpr:
		return typeName(v.X)
	}
	return ""
}

// kindFields are the composite literal fields that carry a decision kind.
var kindFields = map[string]string{"PendingDecision": "Kind", "notify.Event": "Decision"}

// decisionKinds returns the kinds of rules 1 and 2 found in files, each
// with where it was found; a value that is no string literal nor a known
// constant (a parameter passing a kind on) is no kind itself.
func decisionKinds(fset *token.FileSet, files []*ast.File) []kindSource {
	consts := stringConsts(files)
	var out []kindSource
	add := func(rule int, kind string, n ast.Node, what string) {
		p := fset.Position(n.Pos())
		out = append(out, kindSource{kind: kind, rule: rule,
			where: fmt.Sprintf("%s:%d (%s)", path.Join("workflows", filepath.Base(p.Filename)), p.Line, what)})
	}
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				for _, name := range s.(*ast.ValueSpec).Names {
					if v, ok := consts[name.Name]; ok && decisionConstRe.MatchString(name.Name) {
						add(1, v, name, name.Name)
					}
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch v := n.(type) {
			case *ast.CompositeLit:
				field, ok := kindFields[typeName(v.Type)]
				if !ok {
					return true
				}
				for _, el := range v.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					if k, ok := kv.Key.(*ast.Ident); ok && k.Name == field {
						if s, ok := stringValue(kv.Value, consts); ok {
							add(2, s, kv, typeName(v.Type)+"."+field)
						}
					}
				}
			case *ast.CallExpr:
				if sel, ok := v.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "decide" && len(v.Args) >= 2 {
					if s, ok := stringValue(v.Args[1], consts); ok {
						add(2, s, v, "decide")
					}
				}
			}
			return true
		})
	}
	return out
}

// runbookKinds is every kind that needs a runbook: rules 1 to 3.
func runbookKinds(t *testing.T) map[string][]string {
	t.Helper()
	fset, files := parseWorkflows(t)
	consts := stringConsts(files)
	kinds := map[string][]string{}
	constants := 0
	for _, k := range decisionKinds(fset, files) {
		kinds[k.kind] = append(kinds[k.kind], k.where)
		if k.rule == 1 {
			constants++
		}
	}
	if constants == 0 {
		t.Fatal("found no Decision* constant in workflows/: the rule no longer matches how the code names its decision kinds")
	}
	for _, name := range personWaits {
		v, ok := consts[name]
		if !ok {
			t.Fatalf("constant %s is gone from workflows/: update personWaits to the wait it named", name)
		}
		kinds[v] = append(kinds[v], "workflows ("+name+")")
	}
	return kinds
}

// TestEveryDecisionKindHasARunbook: docs/runbooks/<kind>.md exists for each
// kind, the index links it, and no runbook is left for a kind that is gone.
func TestEveryDecisionKindHasARunbook(t *testing.T) {
	kinds := runbookKinds(t)
	index := filepath.Join(repoRoot, runbookDir, "README.md")
	b, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	from := path.Join(runbookDir, "README.md")
	for _, l := range links(page{name: from, text: string(b)}) {
		if file, _, err := resolve(from, l.target); err == nil {
			listed[file] = true
		}
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	t.Logf("%d kinds: %s", len(names), strings.Join(names, ", "))
	for _, k := range names {
		where := strings.Join(kinds[k], ", ")
		file := path.Join(runbookDir, k+".md")
		if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(file))); err != nil {
			t.Errorf("decision kind %q (%s) has no runbook: write %s and list it in %s", k, where, file, from)
			continue
		}
		if !listed[file] {
			t.Errorf("decision kind %q (%s): %s does not link %s", k, where, from, file)
		}
	}
	entries, err := os.ReadDir(filepath.Join(repoRoot, runbookDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".md") || n == "README.md" || taskRunbooks[n] {
			continue
		}
		if _, ok := kinds[strings.TrimSuffix(n, ".md")]; !ok {
			t.Errorf("%s/%s names no decision kind in workflows/: rename it after the kind it covers, or list it in taskRunbooks if it is a task runbook", runbookDir, n)
		}
	}
	for n := range taskRunbooks {
		if !listed[path.Join(runbookDir, n)] {
			t.Errorf("task runbook %s is not linked from %s", n, from)
		}
	}
}

// TestDecisionKindRule: the rule finds kinds in constants, in literals
// written in place and through decide calls, and not in other fields,
// other calls or parameters.
func TestDecisionKindRule(t *testing.T) {
	src := `package workflows

const (
	DecisionA = "kind-a"
	Decisionless = "not-a-kind"
	otherKind = "kind-c"
	UpdateDecide = "decide"
)

func f(kind string) {
	_ = PendingDecision{Kind: otherKind}
	_ = notify.Event{Decision: "kind-d", Kind: "not-a-kind-either"}
	_ = notify.Event{Decision: kind}
	_ = DecisionRecord{Kind: UpdateDecide}
	r.decide(ctx, "kind-e", "reason")
	r.decide(ctx, kind, "reason")
	r.other(ctx, "not-a-kind-either")
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, k := range decisionKinds(fset, []*ast.File{f}) {
		seen[k.kind] = true
	}
	var got []string
	for k := range seen {
		got = append(got, k)
	}
	sort.Strings(got)
	if want := "kind-a kind-c kind-d kind-e"; strings.Join(got, " ") != want {
		t.Errorf("kinds = %q, want %q", strings.Join(got, " "), want)
	}
}
