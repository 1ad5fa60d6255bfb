package storage

import "testing"

func TestParentOf(t *testing.T) {
	for in, want := range map[string]string{
		"hdfs://nn:8020/a/b/_metadata": "hdfs://nn:8020/a/b",
		"hdfs://nn:8020/a":             "hdfs://nn:8020/",
		"hdfs://nn:8020":               "hdfs://nn:8020",
		"file:///tmp/x/y":              "file:///tmp/x",
		"/plain/path":                  "/plain",
	} {
		if got := ParentOf(in); got != want {
			t.Errorf("ParentOf(%q) = %q, want %q", in, got, want)
		}
	}
}
