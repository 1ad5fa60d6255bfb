package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/duration"
)

// The chart's values.schema.json makes Helm refuse a misspelt or mistyped
// value at install, naming it. The chart's own values are written by hand;
// `config`, the worker's worker.yaml, is generated from config.Config, the
// types the worker decodes it into, so the schema knows every key the
// worker does. The test fails when the file is not what the code says;
// `make docs` (FLINKMAINT_UPDATE_DOCS=1) writes it.
func TestChartValuesSchemaIsCurrent(t *testing.T) {
	path := filepath.Join(chartPath(t), "values.schema.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	props, ok := schema["properties"].(map[string]any)
	if !ok {
		t.Fatalf("%s has no properties", path)
	}
	cfg := typeSchema(reflect.TypeOf(config.Config{}))
	cfg["description"] = "worker.yaml, as docs/configuration.md describes it; generated from the worker's configuration types."
	props["config"] = cfg
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(schema); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(data, want.Bytes()) {
		return
	}
	if os.Getenv("FLINKMAINT_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, want.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s is not current: run make docs (FLINKMAINT_UPDATE_DOCS=1 go test -run TestChartValuesSchemaIsCurrent ./deploy)", path)
}

var (
	durationTypes = map[reflect.Type]bool{reflect.TypeOf(config.Duration(0)): true, reflect.TypeOf(time.Duration(0)): true}
	unmarshaler   = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
)

// typeSchema is the JSON schema of the YAML a Go type decodes: the keys
// of its yaml tags and nothing else, the scalar types, durations as internal/duration reads them. Any
// key may be null, as the worker takes a key left empty in YAML
// ("storage:") as unset.
func typeSchema(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	of := func(typ string, more ...any) map[string]any {
		s := map[string]any{"type": []string{typ, "null"}}
		for i := 0; i+1 < len(more); i += 2 {
			s[more[i].(string)] = more[i+1]
		}
		return s
	}
	if durationTypes[t] {
		return of("string", "pattern", duration.Pattern)
	}
	if reflect.PointerTo(t).Implements(unmarshaler) {
		// Its own decoder says what it takes; the worker checks it at start.
		return map[string]any{}
	}
	switch t.Kind() {
	case reflect.Struct:
		props := map[string]any{}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || name == "" || name == "-" {
				continue
			}
			props[name] = typeSchema(f.Type)
		}
		return of("object", "additionalProperties", false, "properties", props)
	case reflect.Slice:
		return of("array", "items", typeSchema(t.Elem()))
	case reflect.Map:
		return of("object", "additionalProperties", typeSchema(t.Elem()))
	case reflect.Bool:
		return of("boolean")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return of("integer")
	case reflect.Float32, reflect.Float64:
		return of("number")
	case reflect.String:
		return of("string")
	}
	return map[string]any{}
}

// A misspelt or mistyped value, the chart's or the worker's, fails helm
// template (and so helm install) with a message naming it.
func TestChartRefusesMisspeltValues(t *testing.T) {
	for name, tc := range map[string]struct {
		set  []string
		want []string
	}{
		"a misspelt top-level value":    {[]string{"--set", "imag.tag=1.0"}, []string{"imag"}},
		"a misspelt nested value":       {[]string{"--set", "image.tagg=1.0"}, []string{"/image", "tagg"}},
		"a misspelt rbac value":         {[]string{"--set", "rbac.tenantNamespace[0]=team-a"}, []string{"/rbac", "tenantNamespace"}},
		"a misspelt worker.yaml key":    {[]string{"--set", "config.temporal.adress=temporal:7233"}, []string{"/config/temporal", "adress"}},
		"a misspelt nested worker key":  {[]string{"--set", "config.inventory.kubernetes.namespace[0]=team-a"}, []string{"/config/inventory/kubernetes", "namespace"}},
		"a wrong type":                  {[]string{"--set", "replicas=two"}, []string{"/replicas", "integer"}},
		"a worker duration that is not": {[]string{"--set", "config.worker.shutdownTimeout=soon"}, []string{"/config/worker/shutdownTimeout"}},
	} {
		t.Run(name, func(t *testing.T) {
			msg := helmTemplateFails(t, "flinkmaint", tc.set...)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("helm's message does not name %q:\n%s", w, msg)
				}
			}
		})
	}
}

// A worker duration in days, which the worker reads, passes the schema.
func TestChartTakesDurationsInDays(t *testing.T) {
	helmTemplate(t, "flinkmaint", "--set", "config.cleanup.failedRestoreHold=14d", "--set", "config.worker.shutdownTimeout=1d12h")
}

// Every value the schema allows is one values.yaml shows (and says what
// it does), config's keys aside: they are docs/configuration.md's.
func TestChartValuesAreAllInValuesYAML(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartPath(t), "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	readYAML(t, filepath.Join(chartPath(t), "values.yaml"), &values)
	var missing []string
	var walk func(path string, s map[string]any, v map[string]any)
	walk = func(path string, s map[string]any, v map[string]any) {
		props, _ := s["properties"].(map[string]any)
		for k, p := range props {
			if path == "" && (k == "config" || k == "global") {
				continue
			}
			x, ok := v[k]
			if !ok {
				missing = append(missing, path+k)
				continue
			}
			if sub, ok := x.(map[string]any); ok {
				walk(path+k+".", p.(map[string]any), sub)
			}
		}
	}
	walk("", schema, values)
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("values.schema.json allows values that values.yaml does not show: %s", strings.Join(missing, ", "))
	}
}
