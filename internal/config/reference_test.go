package config

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/token"
	"io"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/duration"
	"github.com/flinkmaint/flinkmaint/internal/temporalconn"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/gendoc"
)

// The configuration reference, docs/configuration.md, is generated from
// the configuration types: every key from the YAML tags, its meaning from
// the field's doc comment, its default from Default(), and the environment
// variable and flag that set it from keySources, each proven here to set
// that key. The test fails when the file is not what the code says;
// `make docs` (FLINKMAINT_UPDATE_DOCS=1) writes it.

const (
	modulePath    = gendoc.Module
	referenceFile = "docs/configuration.md"
)

// keySource is how a key is set besides the YAML file.
type keySource struct {
	Env  string
	Flag string
	// Sample is a valid value to set it to.
	Sample string
}

// keySources lists every key an environment variable or a flag sets.
var keySources = map[string]keySource{
	"temporal.address":              {Env: temporalconn.EnvAddress, Flag: "temporal-address", Sample: "temporal.example:7233"},
	"temporal.namespace":            {Env: temporalconn.EnvNamespace, Flag: "namespace", Sample: "maint"},
	"temporal.apiKey":               {Env: temporalconn.EnvAPIKey, Sample: "key-sample"},
	"temporal.tls.enabled":          {Env: temporalconn.EnvTLS, Sample: "true"},
	"temporal.tls.certFile":         {Env: temporalconn.EnvTLSCert, Sample: "/etc/tls/client.crt"},
	"temporal.tls.keyFile":          {Env: temporalconn.EnvTLSKey, Sample: "/etc/tls/client.key"},
	"temporal.tls.caFile":           {Env: temporalconn.EnvTLSCA, Sample: "/etc/tls/ca.crt"},
	"temporal.tls.serverName":       {Env: temporalconn.EnvTLSServerName, Sample: "temporal.example"},
	"temporal.uiURL":                {Env: temporalconn.EnvUIURL, Sample: "http://ui.example:8080"},
	"worker.taskQueue":              {Env: EnvTaskQueue, Flag: "task-queue", Sample: "maint-queue"},
	"worker.shutdownTimeout":        {Flag: "shutdown-timeout", Sample: "47s"},
	"worker.temporalConnectTimeout": {Flag: "temporal-connect-timeout", Sample: "13s"},
	"http.listen":                   {Env: EnvHTTPListen, Flag: "http-listen", Sample: "127.0.0.1:9191"},
	"log.level":                     {Env: EnvLogLevel, Flag: "log-level", Sample: "debug"},
	"log.format":                    {Env: EnvLogFormat, Flag: "log-format", Sample: "console"},
	"inventory.staticFile":          {Flag: "inventory", Sample: "/etc/flinkmaint/inventory.yaml"},
}

// refKey is one row of the reference.
type refKey struct {
	Key, Type, Default, Env, Flag, Meaning string
}

// refSection is one top-level key and its rows.
type refSection struct {
	Key, Doc string
	Rows     []refKey
}

var (
	durationType   = reflect.TypeOf(Duration(0))
	stdDurationTyp = reflect.TypeOf(time.Duration(0))
)

// isGroup says whether a field's keys are listed one by one: a struct, a
// pointer to one, or a list of them.
func isGroup(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct && t != durationType
}

// defaultText renders a default value; "" when it is the zero value.
func defaultText(v reflect.Value) string {
	if !v.IsValid() || v.IsZero() {
		return ""
	}
	switch x := v.Interface().(type) {
	case Duration:
		return duration.Format(x.D())
	case time.Duration:
		return duration.Format(x)
	}
	return fmt.Sprint(v.Interface())
}

// walk lists the keys under t (a struct), prefixed, with defaults from v.
func walk(t *testing.T, docs gendoc.Docs, typ reflect.Type, v reflect.Value, prefix string, rows *[]refKey, missing *[]string) {
	tname := typ.PkgPath() + "." + typ.Name()
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			t.Fatalf("%s.%s has no yaml tag: name its key", tname, f.Name)
		}
		key := prefix + name
		var fv reflect.Value
		if v.IsValid() {
			fv = v.Field(i)
		}
		if prefix == "" && isGroup(f.Type) && f.Type.Kind() != reflect.Slice {
			// A top-level group is a section, described by its type.
			walk(t, docs, f.Type, fv, key+".", rows, missing)
			continue
		}
		doc := docs.Fields[tname][f.Name]
		if strings.TrimSpace(doc) == "" {
			*missing = append(*missing, fmt.Sprintf("%s (%s.%s)", key, tname, f.Name))
		}
		src := keySources[key]
		*rows = append(*rows, refKey{Key: key, Type: gendoc.TypeName(f.Type, durationType, stdDurationTyp), Default: defaultText(fv), Env: src.Env, Flag: src.Flag, Meaning: gendoc.Meaning(doc, f.Name, key)})
		if !isGroup(f.Type) {
			continue
		}
		elem, sub := f.Type, key+"."
		for elem.Kind() == reflect.Pointer || elem.Kind() == reflect.Slice {
			if elem.Kind() == reflect.Slice {
				sub = strings.TrimSuffix(sub, ".") + "[]."
			}
			elem = elem.Elem()
		}
		var ev reflect.Value
		if fv.IsValid() && fv.Kind() == reflect.Struct {
			ev = fv
		}
		walk(t, docs, elem, ev, sub, rows, missing)
	}
}

// reference builds the reference's sections from the code, one per
// top-level key, and lists the keys whose field has no doc comment.
func reference(t *testing.T, root string) (sections []refSection, undocumented []string) {
	t.Helper()
	docs := gendoc.ReadDocs(t, root, modulePath+"/internal/config", modulePath+"/internal/temporalconn",
		modulePath+"/internal/kube", modulePath+"/internal/notify", modulePath+"/internal/freeze", modulePath+"/internal/inventory")
	var rows []refKey
	walk(t, docs, reflect.TypeOf(Config{}), reflect.ValueOf(Default()), "", &rows, &undocumented)
	typ := reflect.TypeOf(Config{})
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		elem := f.Type
		for elem.Kind() == reflect.Pointer || elem.Kind() == reflect.Slice {
			elem = elem.Elem()
		}
		sec := refSection{Key: name, Doc: strings.Join(strings.Fields(docs.Types[elem.PkgPath()+"."+elem.Name()]), " ")}
		for _, r := range rows {
			if r.Key == name || strings.HasPrefix(r.Key, name+".") || strings.HasPrefix(r.Key, name+"[]") {
				sec.Rows = append(sec.Rows, r)
			}
		}
		sections = append(sections, sec)
	}
	return sections, undocumented
}

// renderReference writes docs/configuration.md.
func renderReference(sections []refSection) []byte {
	var b bytes.Buffer
	b.WriteString("# Configuration reference\n\n")
	b.WriteString("<!-- Generated from the configuration types by `make docs`: edit their doc comments, not this file. -->\n\n")
	b.WriteString("The worker reads its configuration from these sources, later ones winning: built-in defaults,\n")
	b.WriteString("the YAML file (`--config` or `FLINKMAINT_CONFIG`), environment variables, flags. A problem in\n")
	b.WriteString("any of them stops the worker with exit code 2 and one message naming every bad key, its value\n")
	b.WriteString("and what would be valid. [Installing and running](install.md) says how to deploy it; this page\n")
	b.WriteString("lists every key. A key ending in `[]` is a list of objects with the keys below it. A duration is\n")
	b.WriteString("Go syntax with optional leading whole days: `30s`, `5m`, `36h`, `7d`, `1d12h`.\n")
	code := gendoc.Code
	for _, s := range sections {
		fmt.Fprintf(&b, "\n## `%s`\n\n", s.Key)
		if s.Doc != "" {
			b.WriteString(s.Doc + "\n\n")
		}
		b.WriteString("| key | type | default | env | flag | meaning |\n|---|---|---|---|---|---|\n")
		for _, r := range s.Rows {
			flagText := ""
			if r.Flag != "" {
				flagText = "`--" + r.Flag + "`"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", r.Key, r.Type, code(r.Default), code(r.Env), flagText, r.Meaning)
		}
	}
	return b.Bytes()
}

// valueAt reads the value of a key (no lists) from cfg.
func valueAt(t *testing.T, cfg Config, key string) string {
	t.Helper()
	v := reflect.ValueOf(cfg)
	for _, part := range strings.Split(key, ".") {
		for v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		found := false
		for i := 0; i < v.NumField(); i++ {
			if name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ","); name == part {
				v, found = v.Field(i), true
				break
			}
		}
		if !found {
			t.Fatalf("key %s: no field %q", key, part)
		}
	}
	return defaultText(v)
}

// envConstants returns the values of the Env* constants of a package.
func envConstants(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, p := range gendoc.ParseGoFiles(t, dir, 0) {
		ast.Inspect(p, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range vs.Names {
				if strings.HasPrefix(name.Name, "Env") && i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						out = append(out, strings.Trim(lit.Value, `"`))
					}
				}
			}
			return true
		})
	}
	sort.Strings(out)
	return out
}

func TestConfigurationReferenceIsCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	sections, undocumented := reference(t, root)
	if len(undocumented) > 0 {
		t.Errorf("keys without a doc comment on their field (the reference says what each key means):\n  %s", strings.Join(undocumented, "\n  "))
	}
	keys := map[string]bool{}
	for _, s := range sections {
		for _, r := range s.Rows {
			keys[r.Key] = true
		}
	}

	// Every source listed sets its key.
	for key, src := range keySources {
		if !keys[key] {
			t.Errorf("keySources names %s, which is not a key", key)
			continue
		}
		if src.Env != "" {
			cfg, err := Load(nil, envOf(map[string]string{src.Env: src.Sample}), io.Discard)
			var verr *ValidationError
			if err != nil && !errors.As(err, &verr) {
				t.Errorf("%s=%s: %v", src.Env, src.Sample, err)
			} else if got := valueAt(t, cfg, key); got != src.Sample {
				t.Errorf("%s=%s sets %s to %q; want the value", src.Env, src.Sample, key, got)
			}
		}
		if src.Flag != "" {
			cfg, err := Load([]string{"--" + src.Flag, src.Sample}, envOf(nil), io.Discard)
			var verr *ValidationError
			if err != nil && !errors.As(err, &verr) {
				t.Errorf("--%s %s: %v", src.Flag, src.Sample, err)
			} else if got := valueAt(t, cfg, key); got != src.Sample {
				t.Errorf("--%s %s sets %s to %q; want the value", src.Flag, src.Sample, key, got)
			}
		}
	}

	// Every flag and environment variable of the worker is listed.
	listedFlags, listedEnv := map[string]bool{"config": true}, map[string]bool{EnvConfigFile: true}
	for _, src := range keySources {
		listedFlags[src.Flag], listedEnv[src.Env] = true, true
	}
	var usage bytes.Buffer
	if _, err := Load([]string{"-h"}, envOf(nil), &usage); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	for _, line := range strings.Split(usage.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "  -"); ok {
			name, _, _ := strings.Cut(rest, " ")
			if !listedFlags[name] {
				t.Errorf("flag --%s is not in keySources: say which key it sets", name)
			}
		}
	}
	for _, dir := range []string{".", filepath.Join(root, "internal", "temporalconn")} {
		for _, env := range envConstants(t, dir) {
			if !listedEnv[env] {
				t.Errorf("environment variable %s is not in keySources: say which key it sets", env)
			}
		}
	}

	gendoc.Check(t, filepath.Join(root, referenceFile), renderReference(sections), "the configuration types")
}
