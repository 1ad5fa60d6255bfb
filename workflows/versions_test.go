package workflows

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.temporal.io/sdk/workflow"
)

// versionCall is one workflow.GetVersion call in the package's code.
type versionCall struct {
	id     string
	newest workflow.Version
	at     string
}

// versionCalls reads every GetVersion call of the package's non-test files,
// resolving the change id constant each names.
func versionCalls(t *testing.T) []versionCall {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	consts := map[string]string{}
	var parsed []*ast.File
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, af)
		ast.Inspect(af, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							consts[name.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
			return true
		})
	}
	var calls []versionCall
	for _, af := range parsed {
		ast.Inspect(af, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "GetVersion" || len(call.Args) != 4 {
				return true
			}
			at := fset.Position(call.Pos()).String()
			c := versionCall{at: at}
			switch a := call.Args[1].(type) {
			case *ast.Ident:
				v, ok := consts[a.Name]
				if !ok {
					t.Errorf("%s: GetVersion's change id %s is not a string constant of the package", at, a.Name)
				}
				c.id = v
			default:
				t.Errorf("%s: GetVersion's change id is not a named constant: name it and list it in VersionLedger", at)
			}
			lit, ok := call.Args[3].(*ast.BasicLit)
			if !ok {
				t.Errorf("%s: GetVersion's newest version is not a literal", at)
				return true
			}
			v, _ := strconv.Atoi(lit.Value)
			c.newest = workflow.Version(v)
			calls = append(calls, c)
			return true
		})
	}
	return calls
}

var changeIDRule = regexp.MustCompile(`^[a-z]+(-[a-z0-9]+)+-\d{4}-\d{2}-\d{2}$`)

// Every GetVersion call names a change in the ledger at its newest
// version, every ledger entry is called, and new ids follow the
// <workflow>-<what>-<date> rule with the date they landed.
func TestVersionLedgerMatchesTheCode(t *testing.T) {
	ledger := map[string]VersionChange{}
	for _, c := range VersionLedger {
		if _, dup := ledger[c.ID]; dup {
			t.Errorf("change %s is in the ledger twice", c.ID)
		}
		ledger[c.ID] = c
		if !c.Legacy && (!changeIDRule.MatchString(c.ID) || !strings.HasSuffix(c.ID, c.Since)) {
			t.Errorf("change id %q: want <workflow>-<what>-<date>, ending in its date %s", c.ID, c.Since)
		}
		if c.What == "" || len(c.Workflows) == 0 || c.Newest < 1 {
			t.Errorf("ledger entry %s says not what it changed, where, or its version: %+v", c.ID, c)
		}
	}
	called := map[string]bool{}
	for _, call := range versionCalls(t) {
		c, ok := ledger[call.id]
		switch {
		case !ok:
			t.Errorf("%s: GetVersion(%q) is not in VersionLedger (workflows/versions.go)", call.at, call.id)
		case c.Newest != call.newest:
			t.Errorf("%s: GetVersion(%q) supports up to %d; the ledger says %d", call.at, call.id, call.newest, c.Newest)
		}
		called[call.id] = true
	}
	for id := range ledger {
		if !called[id] {
			t.Errorf("ledger entry %s: no GetVersion call uses it", id)
		}
	}
}
