package storage

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestCompareFileSystems(t *testing.T) {
	conf := t.TempDir()
	site := `<configuration>
<property><name>dfs.ha.namenodes.ns1</name><value>nn1,nn2</value></property>
<property><name>dfs.namenode.rpc-address.ns1.nn1</name><value>127.0.0.1:9000</value></property>
<property><name>dfs.namenode.rpc-address.ns1.nn2</name><value>127.0.0.2:9000</value></property>
</configuration>`
	if err := os.WriteFile(filepath.Join(conf, "hdfs-site.xml"), []byte(site), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Resolver{DefaultFS: "hdfs://ns1", HDFS: HDFSOptions{HadoopConfDir: conf},
		AuthorityAliases: [][]string{{"127.0.0.1:9000", "flink-nn.corp.invalid:9000"}}}
	for name, tc := range map[string]struct {
		base, other string
		want        Sameness
	}{
		"same authority":               {"hdfs://127.0.0.1:9000", "hdfs://127.0.0.1:9000/x", SameFileSystem},
		"localhost resolves":           {"hdfs://127.0.0.1:9000", "hdfs://localhost:9000", SameFileSystem},
		"nameservice's namenode":       {"hdfs://127.0.0.1:9000", "hdfs://ns1", SameFileSystem},
		"second namenode":              {"hdfs://ns1", "hdfs://127.0.0.2:9000", SameFileSystem},
		"default fs":                   {"hdfs://127.0.0.1:9000", "hdfs:///", SameFileSystem},
		"configured alias":             {"hdfs://127.0.0.1:9000", "hdfs://flink-nn.corp.invalid:9000", SameFileSystem},
		"another port":                 {"hdfs://127.0.0.1:9000", "hdfs://127.0.0.1:9001", DifferentFileSystem},
		"another scheme":               {"hdfs://127.0.0.1:9000", "file:///", DifferentFileSystem},
		"a name that does not resolve": {"hdfs://127.0.0.1:9000", "hdfs://nowhere.invalid:9000", SamenessUnknown},
		"default port spelled out":     {"hdfs://127.0.0.1", "hdfs://127.0.0.1:8020", SameFileSystem},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := r.CompareFileSystems(context.Background(), tc.base, tc.other)
			if err != nil || got != tc.want {
				t.Fatalf("CompareFileSystems(%s, %s) = %v, %v; want %v", tc.base, tc.other, got, err, tc.want)
			}
		})
	}
}
