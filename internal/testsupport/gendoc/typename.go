package gendoc

import (
	"reflect"
	"strings"
)

// TypeName says what a key of type t holds, in a reader's words: the
// types in durations read as "duration", lists and maps as "list of
// strings", "map of string to integer".
func TypeName(t reflect.Type, durations ...reflect.Type) string {
	name := func(t reflect.Type) string { return TypeName(t, durations...) }
	for _, d := range durations {
		if t == d {
			return "duration"
		}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return name(t.Elem())
	case reflect.Slice:
		return "list of " + plural(name(t.Elem()))
	case reflect.Map:
		return "map of " + name(t.Key()) + " to " + name(t.Elem())
	case reflect.Struct:
		return "object"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64:
		return "integer"
	case reflect.Float64:
		return "number"
	}
	return t.Kind().String()
}

// plural names several of a type: "strings", "lists of strings".
func plural(name string) string {
	first, rest, _ := strings.Cut(name, " ")
	if rest != "" {
		return first + "s " + rest
	}
	return first + "s"
}

// Code sets s in a table cell as code; an empty cell stays empty.
func Code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + s + "`"
}
