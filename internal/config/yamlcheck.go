package config

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/flinkmaint/flinkmaint/internal/duration"
)

// checkYAML walks a parsed config file beside the type it decodes into
// and names every problem at once, each with its key path and line: keys
// that are not known, and values of the wrong shape or type (a list
// where one value goes, "soon" for a duration). yaml.v3's decoder stops
// at the first bad value and names no key.
func checkYAML(n *yaml.Node, t reflect.Type, path string) []error {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		return checkYAML(n.Content[0], t, path)
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return checkYAML(n.Alias, t, path)
	}
	if n.Tag == "!!null" {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	at := func(format string, args ...any) error {
		name := path
		if name == "" {
			name = "the file"
		}
		return fmt.Errorf("%s (line %d): %s", name, n.Line, fmt.Sprintf(format, args...))
	}
	if t == reflect.TypeOf(Duration(0)) {
		if n.Kind != yaml.ScalarNode {
			return []error{at("want a duration such as %s, not a %s", duration.Examples, shape(n))}
		}
		if _, err := duration.Parse(n.Value); err != nil {
			return []error{at("%v", err)}
		}
		return nil
	}
	if reflect.PointerTo(t).Implements(reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()) {
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			return []error{at("%v", err)}
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return []error{at("want keys (%s), not a %s", strings.Join(yamlKeys(t), ", "), shape(n))}
		}
		var errs []error
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f, ok := fieldByKey(t, k.Value)
			if !ok {
				errs = append(errs, fmt.Errorf("%s (line %d): key %q is not a known key here; known: %s (see docs/configuration.md)",
					join(path, k.Value), k.Line, k.Value, strings.Join(yamlKeys(t), ", ")))
				continue
			}
			errs = append(errs, checkYAML(v, f.Type, join(path, k.Value))...)
		}
		return errs
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return []error{at("want a list, not a %s", shape(n))}
		}
		var errs []error
		for i, e := range n.Content {
			errs = append(errs, checkYAML(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))...)
		}
		return errs
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return []error{at("want keys and values, not a %s", shape(n))}
		}
		var errs []error
		for i := 0; i+1 < len(n.Content); i += 2 {
			errs = append(errs, checkYAML(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value))...)
		}
		return errs
	}
	if n.Kind != yaml.ScalarNode {
		return []error{at("want one value (%s), not a %s", typeWord(t), shape(n))}
	}
	if err := n.Decode(reflect.New(t).Interface()); err != nil {
		return []error{at("%q is not %s", n.Value, typeWord(t))}
	}
	return nil
}

// fieldByKey finds the field a YAML key decodes into.
func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); f.IsExported() && name == key && name != "-" {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// yamlKeys lists the keys a struct takes, sorted.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); t.Field(i).IsExported() && name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	sort.Strings(keys)
	return keys
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// shape says what a node is, in the user's words.
func shape(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "set of keys"
	case yaml.SequenceNode:
		return "list"
	}
	return fmt.Sprintf("value (%q)", n.Value)
}

// typeWord names what a scalar field takes.
func typeWord(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a " + t.Kind().String()
}
