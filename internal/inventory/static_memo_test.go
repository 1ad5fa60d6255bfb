package inventory

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fill sets every field reachable from v to a value derived from seed:
// slices of two, maps of one, pointers to filled values.
func fill(t *testing.T, v reflect.Value, seed string) {
	t.Helper()
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				t.Fatalf("%s.%s is unexported: cloneStatic cannot copy it", v.Type(), v.Type().Field(i).Name)
			}
			fill(t, v.Field(i), fmt.Sprintf("%s.%d", seed, i))
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(t, s.Index(i), fmt.Sprintf("%s[%d]", seed, i))
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, k, seed+"k")
		fill(t, e, seed+"v")
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), seed)
		v.Set(p)
	case reflect.String:
		v.SetString(seed)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(len(seed)))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(len(seed)))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(len(seed)))
	default:
		t.Fatalf("fill: %s of kind %s: teach fill and cloneStatic about it", v.Type(), v.Kind())
	}
}

// Every field of a static inventory is copied, and nothing the copy holds
// is shared: a caller that edits its inventory in place (filters a slice,
// sets a map entry) cannot change what the next caller is handed.
func TestCloneStaticSharesNothing(t *testing.T) {
	var orig, want Static
	fill(t, reflect.ValueOf(&orig).Elem(), "a")
	fill(t, reflect.ValueOf(&want).Elem(), "a")
	c := cloneStatic(orig)
	if !reflect.DeepEqual(c, orig) {
		t.Fatalf("the copy differs:\n%+v\n%+v", c, orig)
	}
	// Overwrite every slice element, map and pointee the copy holds.
	var scribble func(v reflect.Value)
	scribble = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				scribble(v.Field(i))
			}
		case reflect.Slice:
			for i := range v.Len() {
				scribble(v.Index(i))
			}
		case reflect.Map:
			for _, k := range v.MapKeys() {
				v.SetMapIndex(k, reflect.Zero(v.Type().Elem()))
			}
			v.SetMapIndex(reflect.ValueOf("added"), reflect.Zero(v.Type().Elem()))
		case reflect.Pointer:
			scribble(v.Elem())
		case reflect.String:
			v.SetString("scribbled")
		}
	}
	scribble(reflect.ValueOf(&c).Elem())
	if !reflect.DeepEqual(orig, want) {
		t.Fatal("changing the copy changed the original")
	}
}

// LoadStatic parses a file again when its bytes change, and hands each
// caller a copy of its own.
func TestLoadStaticSeesEditsAndSharesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inventory.yaml")
	if err := os.WriteFile(path, []byte(validStatic), 0o600); err != nil {
		t.Fatal(err)
	}
	first, err := LoadStatic(path)
	if err != nil {
		t.Fatal(err)
	}
	first.Clusters[0].Jobs[0].Restart.ProgramArgs[0] = "--changed"
	first.Clusters = first.Clusters[:1]
	again, err := LoadStatic(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Clusters) != 2 || again.Clusters[0].Jobs[0].Restart.ProgramArgs[0] != "--topic" {
		t.Fatalf("a caller's edit reached the next load: %+v", again.Clusters)
	}
	fresh, err := ParseStatic([]byte(validStatic), path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, fresh) {
		t.Fatalf("a repeated load differs from a parse:\n%+v\n%+v", again, fresh)
	}

	edited := strings.Replace(validStatic, "http://127.0.0.1:8081", "http://127.0.0.1:9081", 1)
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	after, err := LoadStatic(path)
	if err != nil {
		t.Fatal(err)
	}
	if after.Clusters[0].RESTURL != "http://127.0.0.1:9081" {
		t.Fatalf("the edit was not seen: %s", after.Clusters[0].RESTURL)
	}
	broken := strings.Replace(validStatic, "mode: session", "mode: sessoin", 1)
	if err := os.WriteFile(path, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadStatic(path); err == nil {
		t.Fatal("a broken file loaded: the last good parse was handed out instead of the error")
	}
}

// BenchmarkLoadStaticFleet loads a 5,000-job file as a window's activities
// do, once per job.
func BenchmarkLoadStaticFleet(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("tenants:\n  - name: t\n    root: /r\nclusters:\n  - clusterId: c\n    tenant: t\n    mode: session\n    restUrl: http://127.0.0.1:8081\n    jobs:\n")
	for j := range 5000 {
		fmt.Fprintf(&sb, "      - name: job-%05d\n        restart:\n          kind: rest-jar-run\n          jar: /opt/job.jar\n          entryClass: com.example.Job\n          programArgs: [\"--job-name\", \"job-%05d\"]\n", j, j)
	}
	path := filepath.Join(b.TempDir(), "inventory.yaml")
	if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadStatic(path); err != nil {
			b.Fatal(err)
		}
	}
}
