package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/duration"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/gendoc"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// The window-file reference, docs/window-file.md, is generated from the
// types a window file decodes into (workflows.WindowInput, by their JSON
// names): every key, its type, its default (WindowPolicy.ApplyDefaults,
// and for the cleanup rules cleanup.Policy.ApplyDefaults) and its meaning
// from the field's doc comment. The test fails when the file is not what
// the code says; `make docs` (FLINKMAINT_UPDATE_DOCS=1) writes it.
// deploy/examples/window.yaml must hold every key the reference lists.

const windowReferenceFile = "docs/window-file.md"

// windowDocSources are the packages whose types a window file holds.
var windowDocSources = []string{gendoc.Module + "/workflows", gendoc.Module + "/activities/core", gendoc.Module + "/activities/windows",
	gendoc.Module + "/activities/governance", gendoc.Module + "/activities/capacity", gendoc.Module + "/internal/cleanup"}

// mirrors maps a type that carries another package's settings in
// workflow input to that type: a field it leaves undocumented takes the
// doc of the mirrored field of the same JSON name.
var mirrors = map[reflect.Type]reflect.Type{
	reflect.TypeOf(workflows.GovernancePolicy{}): reflect.TypeOf(cleanup.Policy{}),
}

// windowKey is one row of the reference.
type windowKey struct {
	Key, Type, Default, Meaning string
	// Section is the key whose table the row is in.
	Section string
}

// windowSection is a table of the reference: a group of keys.
type windowSection struct {
	Key, Doc string
	Rows     []windowKey
}

var windowDurationType = reflect.TypeOf(workflows.Duration(0))

// windowDefaults are the values a window takes for what its file leaves
// out, by key: the window's own defaults, then the cleanup planner's.
func windowDefaults() map[string]string {
	in := workflows.WindowInput{}
	in.Policy.ApplyDefaults()
	out := map[string]string{}
	var collect func(v reflect.Value, prefix string)
	collect = func(v reflect.Value, prefix string) {
		for _, f := range orderedJSONFields(v.Type()) {
			fv := v.FieldByIndex(f.index)
			key := prefix + f.name
			if fv.Kind() == reflect.Struct && fv.Type() != windowDurationType {
				collect(fv, key+".")
				continue
			}
			if text := valueText(fv); text != "" {
				out[key] = text
			}
		}
	}
	collect(reflect.ValueOf(in), "")
	planner := reflect.ValueOf(cleanup.Policy{}.ApplyDefaults())
	for _, f := range orderedJSONFields(planner.Type()) {
		key := "policy.cleanup.policy." + f.name
		if text := valueText(planner.FieldByIndex(f.index)); out[key] == "" && text != "" {
			out[key] = text
		}
	}
	return out
}

// valueText renders a value; "" when it is the zero value.
func valueText(v reflect.Value) string {
	if !v.IsValid() || v.IsZero() {
		return ""
	}
	switch x := v.Interface().(type) {
	case workflows.Duration:
		return duration.Format(x.D())
	case time.Duration:
		return duration.Format(x)
	}
	return fmt.Sprint(v.Interface())
}

// jsonField is a field of a struct by its JSON name.
type jsonField struct {
	name  string
	index []int
	field reflect.StructField
	owner reflect.Type
}

// orderedJSONFields lists the JSON fields of t in source order, those of
// embedded structs in place.
func orderedJSONFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || (!f.IsExported() && !f.Anonymous):
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			for _, e := range orderedJSONFields(f.Type) {
				e.index = append([]int{i}, e.index...)
				out = append(out, e)
			}
		default:
			if name == "" {
				name = f.Name
			}
			out = append(out, jsonField{name: name, index: []int{i}, field: f, owner: t})
		}
	}
	return out
}

// isWindowGroup says whether a key's value is keys of its own (a struct,
// or a list of structs).
func isWindowGroup(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct && t != windowDurationType
}

// sectionOf says which table a key is in: a group at the top level or
// right under policy has its own.
func sectionOf(key string) string {
	parts := strings.Split(strings.ReplaceAll(key, "[]", ""), ".")
	switch {
	case parts[0] == "policy" && len(parts) > 2:
		return "policy." + parts[1]
	case parts[0] == "policy" && len(parts) == 2:
		return "policy"
	case len(parts) > 1:
		return parts[0]
	}
	return ""
}

// windowReference lists every key of the window file, and the keys whose
// field has no doc comment.
func windowReference(t *testing.T, root string) (sections []windowSection, undocumented []string) {
	t.Helper()
	docs := gendoc.ReadDocs(t, root, windowDocSources...)
	defaults := windowDefaults()
	byKey := map[string]*windowSection{"": {Key: ""}}
	order := []string{""}
	typeDoc := func(t reflect.Type) string {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		return strings.Join(strings.Fields(docs.Types[t.PkgPath()+"."+t.Name()]), " ")
	}
	var walk func(typ reflect.Type, prefix string)
	walk = func(typ reflect.Type, prefix string) {
		for _, f := range orderedJSONFields(typ) {
			key := prefix + f.name
			if _, internal := windowFileInternalKeys[key]; internal {
				continue
			}
			ownerName := f.owner.PkgPath() + "." + f.owner.Name()
			doc := docs.Fields[ownerName][f.field.Name]
			if strings.TrimSpace(doc) == "" {
				if m, ok := mirrors[f.owner]; ok {
					for _, mf := range orderedJSONFields(m) {
						if mf.name == f.name {
							doc = docs.Fields[m.PkgPath()+"."+m.Name()][mf.field.Name]
						}
					}
				}
			}
			if strings.TrimSpace(doc) == "" && isWindowGroup(f.field.Type) {
				doc = typeDoc(f.field.Type)
			}
			// A trailing "// default 4" says no more than the default column.
			if d := strings.ToLower(gendoc.Meaning(doc, f.field.Name, key)); d == "" || strings.HasPrefix(d, "default") {
				undocumented = append(undocumented, fmt.Sprintf("%s (%s.%s)", key, ownerName, f.field.Name))
			}
			sec := sectionOf(key)
			if isWindowGroup(f.field.Type) && (sectionOf(key+".x") == key) {
				byKey[key] = &windowSection{Key: key, Doc: typeDoc(f.field.Type)}
				order = append(order, key)
			} else {
				byKey[sec].Rows = append(byKey[sec].Rows, windowKey{Key: key, Type: gendoc.TypeName(f.field.Type, windowDurationType),
					Default: defaults[key], Meaning: gendoc.Meaning(doc, f.field.Name, key), Section: sec})
			}
			if !isWindowGroup(f.field.Type) {
				continue
			}
			elem, sub := f.field.Type, key+"."
			for elem.Kind() == reflect.Pointer || elem.Kind() == reflect.Slice {
				if elem.Kind() == reflect.Slice {
					sub = strings.TrimSuffix(sub, ".") + "[]."
				}
				elem = elem.Elem()
			}
			walk(elem, sub)
		}
	}
	walk(reflect.TypeOf(workflows.WindowInput{}), "")
	for _, k := range order {
		sections = append(sections, *byKey[k])
	}
	return sections, undocumented
}

// renderWindowReference writes docs/window-file.md.
func renderWindowReference(sections []windowSection) []byte {
	var b bytes.Buffer
	b.WriteString("# Window file reference\n\n")
	b.WriteString("<!-- Generated from the window file's types by `make docs`: edit their doc comments, not this file. -->\n\n")
	b.WriteString("A window file is the YAML that `flinkmaint window plan -f` and `window start -f` read: what a\n")
	b.WriteString("[maintenance window](windows.md) stops, and how it behaves. This page lists every key; the\n")
	b.WriteString("commented example [`deploy/examples/window.yaml`](../deploy/examples/window.yaml) holds them all. Only\n")
	b.WriteString("`windowId`, `reason` and `policy.manifestDir` are required; a key left out takes the default shown (no\n")
	b.WriteString("default: empty, zero or off). An unknown key, or a value of the wrong type, is refused with its path.\n")
	b.WriteString("A duration is Go syntax with optional leading whole days: `30s`, `5m`, `36h`, `7d`, `1d12h`. A key\n")
	b.WriteString("ending in `[]` is a list of objects with the keys below it.\n")
	code := gendoc.Code
	for _, s := range sections {
		if s.Key == "" {
			b.WriteString("\n## Top level\n\n")
		} else {
			fmt.Fprintf(&b, "\n## `%s`\n\n", s.Key)
		}
		if s.Doc != "" {
			b.WriteString(s.Doc + "\n\n")
		}
		b.WriteString("| key | type | default | meaning |\n|---|---|---|---|\n")
		for _, r := range s.Rows {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.Key, r.Type, code(r.Default), r.Meaning)
		}
	}
	keys := make([]string, 0, len(windowFileInternalKeys))
	for k := range windowFileInternalKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteString("\n## Not in the file\n\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "- `%s`: %s\n", k, windowFileInternalKeys[k])
	}
	return b.Bytes()
}

func TestWindowFileReferenceIsCurrent(t *testing.T) {
	root := filepath.Join("..")
	sections, undocumented := windowReference(t, root)
	if len(undocumented) > 0 {
		t.Errorf("window-file keys without a doc comment on their field (the reference says what each key means):\n  %s", strings.Join(undocumented, "\n  "))
	}
	gendoc.Check(t, filepath.Join(root, windowReferenceFile), renderWindowReference(sections), "the window file's types")
}

// yamlKeyPaths lists the key paths of a YAML document, list elements'
// keys as path[].key.
func yamlKeyPaths(n *yaml.Node, prefix string, out map[string]bool) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			yamlKeyPaths(c, prefix, out)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := prefix + n.Content[i].Value
			out[key] = true
			yamlKeyPaths(n.Content[i+1], key+".", out)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			yamlKeyPaths(c, strings.TrimSuffix(prefix, ".")+"[].", out)
		}
	}
}

// The example window file holds every key of the reference, so it shows
// every setting where operators copy from; it also loads (main_test.go).
func TestExampleWindowFileHoldsEveryKey(t *testing.T) {
	const example = "../deploy/examples/window.yaml"
	data, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	yamlKeyPaths(&doc, "", have)
	sections, _ := windowReference(t, "..")
	var missing []string
	for _, s := range sections {
		if s.Key != "" && !have[s.Key] {
			missing = append(missing, s.Key)
		}
		for _, r := range s.Rows {
			if !have[r.Key] {
				missing = append(missing, r.Key)
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("%s lacks keys of the window file; add each with a comment:\n  %s", example, strings.Join(missing, "\n  "))
	}
	for k := range windowFileInternalKeys {
		if have[k] {
			t.Errorf("%s holds %s, which a window file may not", example, k)
		}
	}
}
