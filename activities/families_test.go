package activities_test

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/flinkmaint/flinkmaint"

// families are the activities packages, one per workflow family.
var families = []string{"windows", "governance", "drills", "upgrades", "capacity", "oncall", "doctor"}

// maxMethods bounds the methods, helpers included, of one family's
// Activities type: past it, a concern of its own hides in the family.
const maxMethods = 30

// TestFamiliesListed keeps the list above complete: every package under
// activities/ is a family, core or test support.
func TestFamiliesListed(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != "core" && e.Name() != "internal" && !slices.Contains(families, e.Name()) {
			t.Errorf("activities/%s is neither core nor a listed family", e.Name())
		}
	}
}

// TestFamiliesImportNoOtherFamily proves what a family depends on: core
// and the domain packages, never another family, also not through a
// package it imports (internal/app, for one, imports them all). Test
// files count: a family's tests must not lean on another family either.
func TestFamiliesImportNoOtherFamily(t *testing.T) {
	ctx := build.Default
	ctx.BuildTags = []string{"realpeers", "faulthooks"}
	for _, fam := range append([]string{"core", "internal/acttest"}, families...) {
		self := module + "/activities/" + fam
		p, err := ctx.ImportDir(fam, 0)
		if err != nil {
			t.Fatal(err)
		}
		direct := append(append(append([]string{}, p.Imports...), p.TestImports...), p.XTestImports...)
		via := map[string]string{} // package -> the direct import it comes through
		for _, imp := range direct {
			deps(t, &ctx, imp, imp, via)
		}
		for dep, through := range via {
			f, ok := strings.CutPrefix(dep, module+"/activities/")
			if !ok || dep == self || f == "core" || strings.HasPrefix(f, "internal/") {
				continue
			}
			if through == dep {
				t.Errorf("activities/%s imports %s: a family imports only core and domain packages", fam, dep)
			} else {
				t.Errorf("activities/%s imports %s through %s: a family imports only core and domain packages", fam, dep, through)
			}
		}
	}
}

// deps adds path and the module's packages it imports (not their tests)
// to seen, each noted with the import it was reached through.
func deps(t *testing.T, ctx *build.Context, path, through string, seen map[string]string) {
	rel, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		return
	}
	if _, done := seen[path]; done {
		return
	}
	seen[path] = through
	p, err := ctx.ImportDir(filepath.Join("..", rel), 0)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, imp := range p.Imports {
		deps(t, ctx, imp, through, seen)
	}
}

// TestFamilyMethodCounts keeps each family's Activities type small: its
// registered activities plus the helpers it keeps on itself.
func TestFamilyMethodCounts(t *testing.T) {
	for _, fam := range families {
		n := 0
		fset := token.NewFileSet()
		files, err := filepath.Glob(filepath.Join(fam, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && receiverIs(fd.Recv.List[0].Type, "Activities") {
					n++
				}
			}
		}
		t.Logf("%s: %d methods", fam, n)
		if n == 0 || n > maxMethods {
			t.Errorf("activities/%s: %d methods on Activities; want 1 to %d (give a concern of its own a type)", fam, n, maxMethods)
		}
	}
}

func receiverIs(e ast.Expr, name string) bool {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
