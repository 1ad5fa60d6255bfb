package gendoc

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Module is the module path every package of ReadDocs lies under.
const Module = "github.com/flinkmaint/flinkmaint"

// Docs holds doc comments read from Go sources: Types maps
// "pkgpath.Name" to the type's doc, Fields "pkgpath.Name" to the docs of
// its fields by Go name (a field's trailing comment when it has no doc).
type Docs struct {
	Types  map[string]string
	Fields map[string]map[string]string
}

// ReadDocs reads the doc comments of the types of pkgs (import paths
// under Module), whose sources lie under the module's root directory.
func ReadDocs(t testing.TB, root string, pkgs ...string) Docs {
	t.Helper()
	d := Docs{Types: map[string]string{}, Fields: map[string]map[string]string{}}
	for _, pkg := range pkgs {
		dir := filepath.Join(root, strings.TrimPrefix(pkg, Module+"/"))
		for _, f := range ParseGoFiles(t, dir, parser.ParseComments) {
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.TYPE {
					continue
				}
				for _, spec := range gd.Specs {
					ts := spec.(*ast.TypeSpec)
					name := pkg + "." + ts.Name.Name
					doc := ts.Doc
					if doc == nil && len(gd.Specs) == 1 {
						doc = gd.Doc
					}
					d.Types[name] = doc.Text()
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					fields := map[string]string{}
					for _, fld := range st.Fields.List {
						text := fld.Doc.Text()
						if text == "" {
							text = fld.Comment.Text()
						}
						for _, n := range fld.Names {
							fields[n.Name] = text
						}
					}
					d.Fields[name] = fields
				}
			}
		}
	}
	return d
}

// ParseGoFiles parses the package's non-test Go files in dir.
func ParseGoFiles(t testing.TB, dir string, mode parser.Mode) []*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, mode)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

var leadingWordRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*\b`)

// Meaning turns a field's doc comment into one line of a Markdown table
// that names the key's last part instead of the Go field.
func Meaning(doc, field, key string) string {
	line := strings.Join(strings.Fields(doc), " ")
	if w := leadingWordRE.FindString(line); w == field {
		name := key[strings.LastIndexAny(key, ".]")+1:]
		line = "`" + name + "`" + strings.TrimPrefix(line, w)
	}
	return strings.ReplaceAll(line, "|", `\|`)
}
