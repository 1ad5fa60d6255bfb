package flink

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// specFiles maps each supported version to its OpenAPI file in
// ../shared/fixtures/flink-rest.
var specFiles = map[string]string{
	"1.20": "rest_v1_dispatcher-1.20.yml",
	"2.0":  "rest_v1_dispatcher-2.0.yml",
	"2.2":  "rest_v1_dispatcher-2.2.yml",
	"2.4":  "rest_v1_dispatcher-2.4-SNAPSHOT-master.yml",
}

type openAPI struct {
	Paths      map[string]map[string]operation `yaml:"paths"`
	Components struct {
		Schemas map[string]*schema `yaml:"schemas"`
	} `yaml:"components"`
}

type mediaTypes map[string]struct {
	Schema *schema `yaml:"schema"`
}

type operation struct {
	Parameters []struct {
		Name string `yaml:"name"`
		In   string `yaml:"in"`
	} `yaml:"parameters"`
	RequestBody *struct {
		Content mediaTypes `yaml:"content"`
	} `yaml:"requestBody"`
	Responses map[string]struct {
		Content mediaTypes `yaml:"content"`
	} `yaml:"responses"`
}

type schema struct {
	Ref                  string             `yaml:"$ref"`
	Type                 string             `yaml:"type"`
	Properties           map[string]*schema `yaml:"properties"`
	Items                *schema            `yaml:"items"`
	AdditionalProperties *schema            `yaml:"additionalProperties"`
	AllOf                []*schema          `yaml:"allOf"`
	OneOf                []*schema          `yaml:"oneOf"`
	AnyOf                []*schema          `yaml:"anyOf"`
	Discriminator        *struct {
		Mapping map[string]string `yaml:"mapping"`
	} `yaml:"discriminator"`
}

func loadSpecs(t *testing.T) map[string]*openAPI {
	t.Helper()
	shared := sandbox.RequireShared(t)
	specs := map[string]*openAPI{}
	for _, v := range supportedVersions {
		name, ok := specFiles[v]
		if !ok {
			t.Fatalf("supported version %s has no spec file listed in specFiles", v)
		}
		data, err := os.ReadFile(filepath.Join(shared, "fixtures", "flink-rest", name))
		if err != nil {
			t.Fatalf("read spec for %s: %v", v, err)
		}
		var doc openAPI
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("parse spec %s: %v", name, err)
		}
		if len(doc.Paths) == 0 || len(doc.Components.Schemas) == 0 {
			t.Fatalf("spec %s has no paths or schemas", name)
		}
		specs[v] = &doc
	}
	return specs
}

func TestContractEndpointsMatchEverySpec(t *testing.T) {
	specs := loadSpecs(t)
	for _, ep := range allEndpoints {
		for _, v := range supportedVersions {
			t.Run(ep.method+" "+ep.path+" @"+v, func(t *testing.T) {
				doc, file := specs[v], specFiles[v]
				opn, ok := doc.Paths[ep.path][strings.ToLower(ep.method)]
				if !ok {
					t.Fatalf("spec %s has no %s %s", file, ep.method, ep.path)
				}
				for _, q := range ep.query {
					found := false
					for _, p := range opn.Parameters {
						found = found || (p.In == "query" && p.Name == q)
					}
					if !found {
						t.Errorf("spec %s: %s %s has no query parameter %q", file, ep.method, ep.path, q)
					}
				}
				w := walker{t: t, doc: doc, version: v, file: file}
				if ep.request != nil {
					if opn.RequestBody == nil || opn.RequestBody.Content["application/json"].Schema == nil {
						t.Fatalf("spec %s: %s %s has no JSON request body", file, ep.method, ep.path)
					}
					w.walk(reflect.TypeOf(ep.request), opn.RequestBody.Content["application/json"].Schema, "request")
				}
				if ep.response != nil {
					var s *schema
					for code, r := range opn.Responses {
						if strings.HasPrefix(code, "2") && r.Content["application/json"].Schema != nil {
							s = r.Content["application/json"].Schema
						}
					}
					if s == nil {
						t.Fatalf("spec %s: %s %s has no JSON success response", file, ep.method, ep.path)
					}
					w.walk(reflect.TypeOf(ep.response), s, "response")
				}
			})
		}
	}
}

// TestContractCheckpointOperationIsCheckpointInfo walks the operation of a
// checkpoint trigger's status against CheckpointInfo alone: the endpoint's
// schema merges it with the savepoint operations, which spell the failure
// cause failure-cause, so only this pins the camelCase failureCause.
func TestContractCheckpointOperationIsCheckpointInfo(t *testing.T) {
	specs := loadSpecs(t)
	for _, v := range supportedVersions {
		t.Run(v, func(t *testing.T) {
			w := walker{t: t, doc: specs[v], version: v, file: specFiles[v]}
			w.walk(reflect.TypeOf(checkpointOperation{}), &schema{Ref: "#/components/schemas/CheckpointInfo"}, "operation")
		})
	}
}

// TestContractWalkerReportsMismatches proves the walker fails on fields the
// spec lacks, on wrong since tags and on type mismatches, so the contract
// test cannot pass vacuously.
func TestContractWalkerReportsMismatches(t *testing.T) {
	specs := loadSpecs(t)
	type bogusJob struct {
		ID      string `json:"jid"`
		Wrong   string `json:"no-such-field"`
		Pending int    `json:"pending-operators" flink:"since=2.4"`
		Name    int    `json:"name"`
	}
	type bogus struct {
		Jobs []bogusJob `json:"jobs"`
	}
	rec := &recorder{}
	w := walker{t: rec, doc: specs["2.0"], version: "2.0", file: specFiles["2.0"]}
	w.walk(reflect.TypeOf(bogus{}), &schema{Ref: "#/components/schemas/MultipleJobsDetails"}, "response")
	all := strings.Join(rec.errs, "\n")
	for _, want := range []string{`"no-such-field"`, "since=2.4", `response (MultipleJobsDetails).jobs[] (JobDetails).name`} {
		if !strings.Contains(all, want) {
			t.Errorf("walker errors do not mention %s:\n%s", want, all)
		}
	}
	if len(rec.errs) != 3 {
		t.Errorf("want 3 errors, got %d:\n%s", len(rec.errs), all)
	}
}

type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

type recorder struct{ errs []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

type walker struct {
	t       reporter
	doc     *openAPI
	version string
	file    string
}

// resolve follows $ref and merges allOf/oneOf/anyOf members and
// discriminator mapping targets into one schema view.
func (w walker) resolve(s *schema, seen map[string]bool) (*schema, string) {
	name := ""
	for s != nil && s.Ref != "" {
		name = strings.TrimPrefix(s.Ref, "#/components/schemas/")
		if seen[name] {
			return &schema{}, name
		}
		seen[name] = true
		next, ok := w.doc.Components.Schemas[name]
		if !ok {
			w.t.Errorf("spec %s: dangling $ref %s", w.file, s.Ref)
			return &schema{}, name
		}
		s = next
	}
	if s == nil {
		return &schema{}, name
	}
	parts := append(append(append([]*schema{}, s.AllOf...), s.OneOf...), s.AnyOf...)
	if s.Discriminator != nil {
		for _, ref := range s.Discriminator.Mapping {
			parts = append(parts, &schema{Ref: ref})
		}
	}
	if len(parts) == 0 {
		return s, name
	}
	merged := *s
	merged.Properties = map[string]*schema{}
	for k, v := range s.Properties {
		merged.Properties[k] = v
	}
	for _, p := range parts {
		r, _ := w.resolve(p, seen)
		for k, v := range r.Properties {
			merged.Properties[k] = v
		}
		if merged.Type == "" {
			merged.Type = r.Type
		}
	}
	return &merged, name
}

func versionLess(a, b string) bool {
	pa, pb := strings.SplitN(a+".0", ".", 3), strings.SplitN(b+".0", ".", 3)
	for i := 0; i < 2; i++ {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x < y
		}
	}
	return false
}

func (w walker) walk(gt reflect.Type, s *schema, where string) {
	w.t.Helper()
	for gt.Kind() == reflect.Pointer {
		gt = gt.Elem()
	}
	rs, name := w.resolve(s, map[string]bool{})
	label := where
	if name != "" {
		label += " (" + name + ")"
	}
	switch gt.Kind() {
	case reflect.Struct:
		if rs.Type != "" && rs.Type != "object" {
			w.t.Errorf("spec %s: %s is %s in the spec, Go has struct %s", w.file, label, rs.Type, gt)
			return
		}
		for i := 0; i < gt.NumField(); i++ {
			f := gt.Field(i)
			jsonName, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || jsonName == "-" || jsonName == "" {
				continue
			}
			tag := f.Tag.Get("flink")
			if tag == "extra" {
				continue
			}
			prop, ok := rs.Properties[jsonName]
			if since, has := strings.CutPrefix(tag, "since="); has && versionLess(w.version, since) {
				if ok {
					w.t.Errorf("spec %s: field %q of %s is tagged since=%s but already exists in %s", w.file, jsonName, label, since, w.version)
				}
				continue
			}
			if !ok {
				w.t.Errorf("spec %s: field %q (Go %s.%s) is not in schema %s", w.file, jsonName, gt.Name(), f.Name, label)
				continue
			}
			w.walk(f.Type, prop, label+"."+jsonName)
		}
	case reflect.Slice, reflect.Array:
		if rs.Type != "array" || rs.Items == nil {
			w.t.Errorf("spec %s: %s is %q in the spec, Go has %s", w.file, label, rs.Type, gt)
			return
		}
		w.walk(gt.Elem(), rs.Items, label+"[]")
	case reflect.Map:
		if rs.Type != "object" {
			w.t.Errorf("spec %s: %s is %q in the spec, Go has map %s", w.file, label, rs.Type, gt)
			return
		}
		if rs.AdditionalProperties != nil {
			w.walk(gt.Elem(), rs.AdditionalProperties, label+"{}")
		}
	case reflect.String:
		if rs.Type != "string" {
			w.t.Errorf("spec %s: %s is %q in the spec, Go has string", w.file, label, rs.Type)
		}
	case reflect.Bool:
		if rs.Type != "boolean" {
			w.t.Errorf("spec %s: %s is %q in the spec, Go has bool", w.file, label, rs.Type)
		}
	case reflect.Int, reflect.Int32, reflect.Int64:
		if rs.Type != "integer" {
			w.t.Errorf("spec %s: %s is %q in the spec, Go has %s", w.file, label, rs.Type, gt)
		}
	default:
		w.t.Errorf("%s: Go type %s has no contract mapping", label, gt)
	}
}
