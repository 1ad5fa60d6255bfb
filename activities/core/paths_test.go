package core

import (
	"testing"
)

func TestSamePathTreatsFlinksLocalFormAsEqual(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"hdfs://nn:8020/sp/savepoint-1", "hdfs://nn:8020/sp/savepoint-1/", true},
		{"file:/data/sp/savepoint-1", "file:///data/sp/savepoint-1", true},
		{"file:///data/sp/savepoint-1/", "file:/data/sp/savepoint-1", true},
		{"hdfs://nn/sp/savepoint-1", "hdfs://nn:8020/sp/savepoint-1", false},
		{"/data/sp/savepoint-1", "file:/data/sp/savepoint-1", false},
		{"file:/data/sp/savepoint-1", "file:/data/sp/savepoint-2", false},
	} {
		if got := SamePath(c.a, c.b); got != c.same {
			t.Errorf("samePath(%q, %q) = %v; want %v", c.a, c.b, got, c.same)
		}
	}
}
