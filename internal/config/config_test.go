package config

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadPrecedence(t *testing.T) {
	file := writeFile(t, `
temporal:
  address: file:7233
  namespace: from-file
worker:
  taskQueue: q-file
  shutdownTimeout: 45s
log:
  level: debug
`)
	cfg, err := Load([]string{"--config", file, "--task-queue", "q-flag"},
		envOf(map[string]string{"TEMPORAL_NAMESPACE": "from-env", EnvLogFormat: "console"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string][2]string{
		"address from file":    {cfg.Temporal.Address, "file:7233"},
		"namespace from env":   {cfg.Temporal.Namespace, "from-env"},
		"task queue from flag": {cfg.Worker.TaskQueue, "q-flag"},
		"level from file":      {cfg.Log.Level, "debug"},
		"format from env":      {cfg.Log.Format, "console"},
		"listen default":       {cfg.HTTP.Listen, ":9090"},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s: got %q, want %q", name, c[0], c[1])
		}
	}
	if cfg.Worker.ShutdownTimeout.D() != 45*time.Second {
		t.Errorf("shutdownTimeout = %s, want 45s", cfg.Worker.ShutdownTimeout.D())
	}
}

// Durations take whole days in the file and in flags, as everywhere.
func TestLoadTakesDays(t *testing.T) {
	file := writeFile(t, "storage:\n  rpcTimeout: 1d\ncleanup:\n  failedRestoreHold: 14d\nflink:\n  requestTimeout: 1d12h\n")
	cfg, err := Load([]string{"--config", file, "--shutdown-timeout", "2d", "--temporal-connect-timeout", "1d30s"}, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	const day = 24 * time.Hour
	for name, c := range map[string][2]time.Duration{
		"storage.rpcTimeout":               {cfg.Storage.RPCTimeout.D(), day},
		"cleanup.failedRestoreHold":        {cfg.Cleanup.FailedRestoreHold.D(), 14 * day},
		"flink.requestTimeout":             {cfg.Flink.RequestTimeout.D(), 36 * time.Hour},
		"--shutdown-timeout":               {cfg.Worker.ShutdownTimeout.D(), 2 * day},
		"--temporal-connect-timeout 1d30s": {cfg.Worker.TemporalConnectTimeout.D(), day + 30*time.Second},
	} {
		if c[0] != c[1] {
			t.Errorf("%s = %s, want %s", name, c[0], c[1])
		}
	}
}

func TestLoadRejects(t *testing.T) {
	for name, tc := range map[string]struct {
		file string
		args []string
		env  map[string]string
		want []string // substrings the one error message must contain
	}{
		"unknown key": {
			file: "temporal:\n  adress: x:1\n",
			want: []string{"adress", "not a known key"},
		},
		"bad duration": {
			file: "worker:\n  shutdownTimeout: soon\n",
			want: []string{`"soon"`, "30s"},
		},
		"negative duration flag": {
			args: []string{"--shutdown-timeout", "-1s"},
			want: []string{"worker.shutdownTimeout=-1s", "positive"},
		},
		"bad log level and format together": {
			args: []string{"--log-level", "loud", "--log-format", "xml"},
			want: []string{`"loud"`, "log.format=\"xml\"", "json"},
		},
		"kerberos keytab without principal, missing file": {
			file: "storage:\n  kerberos:\n    keytab: /nonexistent/worker.keytab\n",
			want: []string{"storage.kerberos.principal is empty", `storage.kerberos.keytab="/nonexistent/worker.keytab": `, "keytab /nonexistent/worker.keytab cannot be read"},
		},
		"kerberos with hdfsUser": {
			file: "storage:\n  hdfsUser: flink\n  kerberos:\n    ccache: /tmp/krb5cc_0\n",
			want: []string{`storage.hdfsUser="flink" with storage.kerberos`, "principal is the user"},
		},
		"kerberos principal without keytab": {
			file: "storage:\n  kerberos:\n    principal: flinkmaint@EXAMPLE.COM\n",
			want: []string{`storage.kerberos.principal="flinkmaint@EXAMPLE.COM" without storage.kerberos.keytab`},
		},
		"empty namespace": {
			file: "temporal:\n  namespace: \"\"\n",
			want: []string{"temporal.namespace is empty"},
		},
		"cert without key": {
			env:  map[string]string{"TEMPORAL_TLS_CLIENT_CERT_PATH": "/nonexistent/cert.pem"},
			want: []string{`temporal.tls.certFile="/nonexistent/cert.pem" and temporal.tls.keyFile=""`, "set both"},
		},
		"address without port": {
			file: "temporal:\n  address: temporal-frontend.temporal.svc\n",
			want: []string{`temporal.address="temporal-frontend.temporal.svc" is not host:port`},
		},
		"bad TLS env bool": {
			env:  map[string]string{"TEMPORAL_TLS": "maybe"},
			want: []string{"TEMPORAL_TLS", `"maybe"`},
		},
		"bad listen": {
			args: []string{"--http-listen", "9090"},
			want: []string{`http.listen="9090"`},
		},
		"missing config file": {
			args: []string{"--config", "/nonexistent/flinkmaint.yaml"},
			want: []string{"/nonexistent/flinkmaint.yaml"},
		},
		"kubernetes namespaces and selector": {
			file: "inventory:\n  kubernetes:\n    namespaces: [a]\n    namespaceSelector: team=x\n",
			want: []string{"inventory.kubernetes", "namespaceSelector"},
		},
		"kubernetes unknown key": {
			file: "inventory:\n  kubernetes:\n    namespace: a\n",
			want: []string{`"namespace"`, "not a known key"},
		},
		"kubernetes clusters and single kubernetes": {
			file: "inventory:\n  kubernetes:\n    namespaces: [a]\n    tenantRootTemplate: /t/{namespace}\n  kubernetesClusters:\n  - name: east\n    kubernetes:\n      namespaces: [a]\n      tenantRootTemplate: /t/{namespace}\n",
			want: []string{"inventory.kubernetesClusters", "inventory.kubernetes/kubeconfig", "use one"},
		},
		"kubernetes clusters without names, twice in-cluster": {
			file: "inventory:\n  kubernetesClusters:\n  - kubernetes:\n      namespaces: [a]\n      tenantRootTemplate: /t/{namespace}\n  - name: West\n    kubernetes:\n      namespaceSelector: team=x\n      tenantRootTemplate: /t/{namespace}\n",
			want: []string{"kubernetesClusters[0].name is empty", `name "West"`, "DNS-1123", "2 clusters have no kubeconfig"},
		},
		"kubernetes cluster listed twice, without namespaces": {
			file: "inventory:\n  kubernetesClusters:\n  - name: east\n    kubeconfig: /nonexistent/east\n    kubernetes:\n      namespaces: [a]\n      tenantRootTemplate: /t/{namespace}\n  - name: east\n    kubernetes:\n      tenantRootTemplate: /t/{namespace}\n",
			want: []string{`kubernetesClusters[1].name="east" is listed twice`, "kubernetesClusters[1].kubernetes", "namespaces or namespaceSelector", `kubeconfig="/nonexistent/east" cannot be read`},
		},
		"drill root outside the writable roots, bad drill url": {
			file: "storage:\n  writableRoots: [hdfs://nn/flinkmaint]\ndrill:\n  clusterRestUrl: drill:8081\n  root: hdfs://nn/other/drills\n",
			want: []string{`drill.clusterRestUrl="drill:8081"`, "REST URL", `drill.root="hdfs://nn/other/drills" is not under any of storage.writableRoots`},
		},
		"drill root without a drill cluster": {
			file: "storage:\n  writableRoots: [hdfs://nn/flinkmaint]\ndrill:\n  root: hdfs://nn/flinkmaint/drills\n",
			want: []string{"set both for real restores, or neither"},
		},
		"drill clusters of a version: bad version, twice, bad URL, the default again": {
			file: "storage:\n  writableRoots: [hdfs://nn/flinkmaint]\ndrill:\n  clusterRestUrl: http://drill:8081\n  root: hdfs://nn/flinkmaint/drills\n  clusters:\n" +
				"  - {flinkVersion: 2.3.0, restUrl: http://d23:8081}\n  - {flinkVersion: \"2.3\", restUrl: d23}\n  - {flinkVersion: \"2.3\", restUrl: http://d23b:8081}\n  - {flinkVersion: \"1.20\", restUrl: http://drill:8081/}\n",
			want: []string{`drill.clusters[0].flinkVersion="2.3.0": use the cluster's Flink version as major.minor`, `drill.clusters[1].restUrl="d23"`,
				`drill.clusters[2].flinkVersion="2.3" is also drill.clusters[1]'s`, `drill.clusters[3].restUrl="http://drill:8081/" is drill.clusterRestUrl`},
		},
		"drill clusters without a root": {
			file: "drill:\n  clusters:\n  - {flinkVersion: \"2.3\", restUrl: http://d23:8081}\n",
			want: []string{"set both for real restores, or neither"},
		},
		"stray argument": {
			args: []string{"run"},
			want: []string{`unexpected argument "run"`},
		},
		"unknown flag": {
			args: []string{"--nope"},
			want: []string{"nope"},
		},
		"bad duration flag": {
			args: []string{"--shutdown-timeout", "1.5d"},
			want: []string{`invalid value "1.5d" for flag -shutdown-timeout`, "days are whole", "7d", "1d12h"},
		},
		"bad duration in the file": {
			file: "storage:\n  rpcTimeout: 2x\ncleanup:\n  failedRestoreHold: [7d]\n",
			want: []string{`storage.rpcTimeout (line 2): "2x" is not a duration`, "such as 30s, 5m, 36h, 7d or 1d12h",
				"cleanup.failedRestoreHold (line 4): want a duration such as 30s, 5m, 36h, 7d or 1d12h, not a list"},
		},
		// Days are read like every unit, and a negative value stays refused.
		"negative days": {
			file: "cleanup:\n  failedRestoreHold: -7d\n",
			args: []string{"--temporal-connect-timeout", "-1d"},
			want: []string{"cleanup.failedRestoreHold=-168h0m0s: use a positive duration", "worker.temporalConnectTimeout=-24h0m0s: use a positive duration"},
		},
		// Every problem of a file at once, each with its key and line: a
		// bad duration does not hide an unknown key, a type error names
		// its key.
		"every problem of a file": {
			file: "worker:\n  shutdownTimeout: soon\n  maxConcurrentActivities: many\ntemporal:\n  adress: x\nstorage:\n  writableRoots: notalist\n" +
				"  kerberos: [a]\nnotify:\n  sinks:\n    - name: s\n      events: {a: b}\nfreezes:\n  - name: f\n    weekly:\n      days: mon\n",
			want: []string{
				`worker.shutdownTimeout (line 2): "soon" is not a duration`,
				`worker.maxConcurrentActivities (line 3): "many" is not an integer`,
				`temporal.adress (line 5): key "adress" is not a known key here; known: address, apiKey, namespace, tls, uiURL`,
				`storage.writableRoots (line 7): want a list, not a value ("notalist")`,
				`storage.kerberos (line 8): want keys (ccache, keytab, krb5Conf, principal, servicePrincipal), not a list`,
				`notify.sinks[0].events (line 12): want a list, not a set of keys`,
				`freezes[0].weekly.days (line 16): want a list`,
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append([]string{"--config", writeFile(t, tc.file)}, args...)
			}
			_, err := Load(args, envOf(tc.env), io.Discard)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestDefaultsAreValid(t *testing.T) {
	cfg, err := Load(nil, envOf(nil), io.Discard)
	if err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if cfg.Temporal.Address != "localhost:7233" || cfg.Worker.TaskQueue != DefaultTaskQueue {
		t.Fatalf("unexpected defaults: %+v", cfg)
	}
}

// TestHadoopConfDirMustDefineTheNameservices: a Hadoop configuration
// directory that does not exist, or does not define the nameservice an
// hdfs:// URI names without a port, stops the worker (exit 2) instead of
// a warning that a host called like the nameservice does not answer.
func TestHadoopConfDirMustDefineTheNameservices(t *testing.T) {
	conf := t.TempDir()
	site := `<configuration>
<property><name>dfs.nameservices</name><value>ns1</value></property>
<property><name>dfs.ha.namenodes.ns1</name><value>nn1,nn2</value></property>
<property><name>dfs.namenode.rpc-address.ns1.nn1</name><value>nn1.corp:8020</value></property>
<property><name>dfs.namenode.rpc-address.ns1.nn2</name><value>nn2.corp:8020</value></property>
</configuration>`
	home := t.TempDir() // a $HADOOP_HOME, whose conf/ defines ns1 too
	for _, d := range []string{conf, filepath.Join(home, "conf")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "hdfs-site.xml"), []byte(site), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for name, tc := range map[string]struct {
		file string
		env  map[string]string // HADOOP_CONF_DIR and HADOOP_HOME; unset when absent
		want []string          // empty: valid
	}{
		"nameservice defined":                     {file: "storage:\n  hadoopConfDir: " + conf + "\n  defaultFS: hdfs://ns1\n  writableRoots: [hdfs://ns1/flink, hdfs://nn3.corp:8020/x]\n"},
		"nameservice defined by $HADOOP_CONF_DIR": {file: "storage:\n  defaultFS: hdfs://ns1\n", env: map[string]string{"HADOOP_CONF_DIR": conf}},
		"nameservice defined under $HADOOP_HOME":  {file: "storage:\n  defaultFS: hdfs://ns1\n", env: map[string]string{"HADOOP_HOME": home}},
		"$HADOOP_CONF_DIR missing": {file: "storage:\n  defaultFS: hdfs://ns1\n", env: map[string]string{"HADOOP_CONF_DIR": "/nonexistent/etc/hadoop"},
			want: []string{`$HADOOP_CONF_DIR="/nonexistent/etc/hadoop" is not a readable directory`}},
		"no configuration, nameservice": {file: "storage:\n  defaultFS: hdfs://ns1\n  writableRoots: [hdfs://ns1/flink, hdfs://nn3.corp:8020/x]\n",
			want: []string{`storage.defaultFS="hdfs://ns1" names "ns1" without a port, and no Hadoop configuration is found`, `storage.writableRoots[0]="hdfs://ns1/flink"`, "hdfs://ns1:8020"}},
		"no configuration, host and port": {file: "storage:\n  defaultFS: hdfs://nn1.corp:8020\n  writableRoots: [hdfs://nn1.corp:8020/flink]\n"},
		"no such directory": {file: "storage:\n  hadoopConfDir: /nonexistent/hadoop/conf\n  defaultFS: hdfs://ns1\n",
			want: []string{`storage.hadoopConfDir="/nonexistent/hadoop/conf" is not a readable directory`}},
		"empty directory, nameservice": {file: "storage:\n  hadoopConfDir: " + t.TempDir() + "\n  defaultFS: hdfs://ns1\n",
			want: []string{`storage.defaultFS="hdfs://ns1" names "ns1" without a port`}},
		"empty directory, host and port": {file: "storage:\n  hadoopConfDir: " + t.TempDir() + "\n  defaultFS: hdfs://nn1.corp:8020\n"},
		"nameservice not defined": {file: "storage:\n  hadoopConfDir: " + conf + "\n  defaultFS: hdfs://nameservice1\n  writableRoots: [hdfs://ns2/flink]\ncleanup:\n  referenceRoots: [hdfs://ns3/ck]\n",
			want: []string{`storage.defaultFS="hdfs://nameservice1" names "nameservice1" without a port`, `storage.writableRoots[0]="hdfs://ns2/flink"`, `cleanup.referenceRoots[0]="hdfs://ns3/ck"`}},
	} {
		t.Run(name, func(t *testing.T) {
			for _, k := range []string{"HADOOP_CONF_DIR", "HADOOP_HOME"} {
				t.Setenv(k, tc.env[k])
			}
			_, err := Load([]string{"--config", writeFile(t, tc.file)}, envOf(nil), io.Discard)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
