package checkpoint

import (
	"errors"
	"testing"

	"github.com/flinkmaint/flinkmaint/internal/testsupport/mdwrite"
)

func TestNormalizePath(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"hdfs host:port":               {"hdfs://namenode:8020/flink/cp/job/shared/x", "hdfs://namenode:8020/flink/cp/job/shared/x"},
		"hdfs upper-case authority":    {"HDFS://NameNode:8020/a", "hdfs://namenode:8020/a"},
		"hdfs nameservice":             {"hdfs://ns1/a/b", "hdfs://ns1/a/b"},
		"hdfs no authority, one slash": {"hdfs:/flink/cp/x", "hdfs:///flink/cp/x"},
		"hdfs no authority, 3 slashes": {"hdfs:///flink/cp/x", "hdfs:///flink/cp/x"},
		"file one slash":               {"file:/tmp/cp/x", "file:///tmp/cp/x"},
		"file three slashes":           {"file:///tmp/cp/x", "file:///tmp/cp/x"},
		"plain absolute":               {"/data/cp/x", "/data/cp/x"},
		"double slashes":               {"hdfs://nn:8020//a//b///c", "hdfs://nn:8020/a/b/c"},
		"trailing slash":               {"hdfs://nn:8020/a/b/", "hdfs://nn:8020/a/b"},
		"dot segments":                 {"/a/./b/../c", "/a/c"},
		"authority only":               {"hdfs://nn:8020", "hdfs://nn:8020/"},
		"root":                         {"/", "/"},
		"s3 with entropy-free key":     {"s3a://bucket/cp/x", "s3a://bucket/cp/x"},
		"case kept in path":            {"hdfs://nn/Flink/CP", "hdfs://nn/Flink/CP"},
		"colon later in a plain path":  {"/a/b:c", "/a/b:c"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := NormalizePath(tc.in)
			if err != nil || got != tc.want {
				t.Fatalf("NormalizePath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
			again, err := NormalizePath(got)
			if err != nil || again != got {
				t.Errorf("not idempotent: %q -> %q, %v", got, again, err)
			}
		})
	}
	for name, loc := range map[string]string{
		"checkpoint directory": "hdfs://nn:8020/cp/job/chk-7",
		"renamed file":         "/tmp/sp/metadata.bak",
		"root":                 "hdfs://nn:8020/",
	} {
		t.Run("invalid location/"+name, func(t *testing.T) {
			if _, err := ParseBytes(oneSubtask(4, mdwrite.Subtask{}), loc); !errors.Is(err, ErrInvalidPath) {
				t.Errorf("ParseBytes at %q: err = %v, want ErrInvalidPath", loc, err)
			}
		})
	}
	invalid := map[string]string{
		"empty":            "",
		"relative":         "chk-1/x",
		"scheme, no path":  "hdfs:x",
		"drive-letter-ish": "C:/x",
		"dot relative":     "./x",
	}
	for name, in := range invalid {
		t.Run("invalid/"+name, func(t *testing.T) {
			if got, err := NormalizePath(in); !errors.Is(err, ErrInvalidPath) {
				t.Errorf("NormalizePath(%q) = %q, %v; want ErrInvalidPath", in, got, err)
			}
		})
	}
}

func TestRelativeResolution(t *testing.T) {
	cases := map[string]struct{ location, rel, want string }{
		"hdfs checkpoint":        {"hdfs://nn:8020/cp/job/chk-7/_metadata", "uuid", "hdfs://nn:8020/cp/job/chk-7/uuid"},
		"hdfs without authority": {"hdfs:/cp/job/chk-7/_metadata", "uuid", "hdfs:///cp/job/chk-7/uuid"},
		"file one slash":         {"file:/tmp/sp/savepoint-1/_metadata", "uuid", "file:///tmp/sp/savepoint-1/uuid"},
		"file three slashes":     {"file:///tmp/sp/savepoint-1/_metadata", "uuid", "file:///tmp/sp/savepoint-1/uuid"},
		"plain path":             {"/tmp/sp/savepoint-1/_metadata", "uuid", "/tmp/sp/savepoint-1/uuid"},
		"metadata at fs root":    {"hdfs://nn/_metadata", "uuid", "hdfs://nn/uuid"},
		"relative sub-directory": {"/sp/s1/_metadata", "sub/uuid", "/sp/s1/sub/uuid"},
		"messy location":         {"hdfs://NN:8020//cp//chk-7/_metadata", "uuid", "hdfs://nn:8020/cp/chk-7/uuid"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, dir, err := metadataDir(tc.location)
			if err != nil {
				t.Fatal(err)
			}
			got, err := resolveRelative(dir, tc.rel)
			if err != nil || got != tc.want {
				t.Fatalf("resolve(%q, %q) = %q, %v; want %q", dir, tc.rel, got, err, tc.want)
			}
			// The same answer through the parser.
			md, err := ParseBytes(oneSubtask(4, mdwrite.Subtask{ManagedKeyed: mdwrite.KeyGroups(7, 0, nil, mdwrite.RelativeStream(tc.rel, 3), "")}), tc.location)
			if err != nil || len(md.Files) != 1 || md.Files[0].Path != tc.want {
				t.Fatalf("parsed files %+v, %v; want %q", md, err, tc.want)
			}
		})
	}
}
