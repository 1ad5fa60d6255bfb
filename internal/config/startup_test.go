package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStorageValidation(t *testing.T) {
	t.Setenv("HADOOP_CONF_DIR", "")
	t.Setenv("HADOOP_HOME", "")
	for name, tc := range map[string]struct {
		defaultFS string
		writable  []string
		want      []string // "" means valid
	}{
		"defaults":           {"file:///", nil, nil},
		"hdfs host and port": {"hdfs://nn1.corp:8020", []string{"hdfs://nn1.corp:8020/user/app", "/flinkmaint"}, nil},
		// With no Hadoop configuration a portless authority may be an HA
		// nameservice that the client would dial as a host on port 8020.
		"hdfs nameservice, no hadoop configuration": {"hdfs://nameservice1", []string{"hdfs://nameservice1/user/app", "/flinkmaint"},
			[]string{`storage.defaultFS="hdfs://nameservice1" names "nameservice1" without a port, and no Hadoop configuration is found`, "storage.hadoopConfDir", "hdfs://nameservice1:8020",
				`storage.writableRoots[0]="hdfs://nameservice1/user/app"`}},
		"ftp default":        {"ftp://x", nil, []string{`storage.defaultFS="ftp://x"`, `scheme "ftp"`, "file:///", "hdfs://"}},
		"plain default":      {"/data", nil, []string{`storage.defaultFS="/data"`, "file:///", "hdfs://"}},
		"empty default":      {"", nil, []string{`storage.defaultFS=""`, "file:///"}},
		"root of everything": {"file:///", []string{"/tmp/ok", "/"}, []string{`storage.writableRoots[1]="/"`, "every path", "name a tenant or storage directory"}},
		"root on ftp":        {"file:///", []string{"ftp://h/flinkmaint"}, []string{`storage.writableRoots[0]="ftp://h/flinkmaint"`, `scheme "ftp"`, "hdfs://"}},
		"root with dot dot":  {"file:///", []string{"hdfs://nn/a/../b"}, []string{`storage.writableRoots[0]="hdfs://nn/a/../b"`, ".."}},
		"relative root":      {"file:///", []string{"flinkmaint"}, []string{`storage.writableRoots[0]="flinkmaint"`, "absolute path"}},
	} {
		t.Run(name, func(t *testing.T) {
			c := Default()
			c.Storage.DefaultFS = tc.defaultFS
			c.Storage.WritableRoots = tc.writable
			err := c.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want an error containing %q, got none", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %v; want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestCodecSettings(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := file("token", "  0123456789abcdef0123456789abcdef\n")
	for name, tc := range map[string]struct {
		http HTTP
		want []string // nil means valid
	}{
		"defaults":         {Default().HTTP, nil},
		"token file":       {HTTP{Listen: ":9090", CodecTokenFile: good, CodecAllowOrigin: "https://temporal.example.com"}, nil},
		"no browser":       {HTTP{Listen: ":9090", CodecAllowOrigin: ""}, nil},
		"missing token":    {HTTP{Listen: ":9090", CodecTokenFile: filepath.Join(dir, "absent"), CodecAllowOrigin: "http://localhost:8233"}, []string{"http.codecTokenFile=", "absent", "cannot be read"}},
		"empty token":      {HTTP{Listen: ":9090", CodecTokenFile: file("empty", "\n"), CodecAllowOrigin: "http://localhost:8233"}, []string{"http.codecTokenFile=", "empty", "at least 16"}},
		"short token":      {HTTP{Listen: ":9090", CodecTokenFile: file("short", "abc"), CodecAllowOrigin: "http://localhost:8233"}, []string{"http.codecTokenFile=", "3 characters", "at least 16"}},
		"token with space": {HTTP{Listen: ":9090", CodecTokenFile: file("spaced", "0123456789 abcdef0123456789"), CodecAllowOrigin: "http://localhost:8233"}, []string{"http.codecTokenFile=", "one line without spaces"}},
		"any origin":       {HTTP{Listen: ":9090", CodecAllowOrigin: "*"}, []string{`http.codecAllowOrigin="*"`, "scheme://host[:port]"}},
		"origin with path": {HTTP{Listen: ":9090", CodecAllowOrigin: "http://localhost:8233/"}, []string{`http.codecAllowOrigin="http://localhost:8233/"`, "without a path"}},
		"origin no scheme": {HTTP{Listen: ":9090", CodecAllowOrigin: "localhost:8233"}, []string{`http.codecAllowOrigin="localhost:8233"`, "http://localhost:8233"}},
	} {
		t.Run(name, func(t *testing.T) {
			c := Default()
			c.HTTP = tc.http
			err := c.Validate()
			if tc.want == nil {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want an error containing %q, got none", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %v; want it to contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "0123456789") {
				t.Errorf("error repeats the token: %v", err)
			}
		})
	}
	if d := Default().HTTP.CodecAllowOrigin; d != "http://localhost:8233" {
		t.Errorf("default http.codecAllowOrigin %q; want the dev server's Web UI, http://localhost:8233", d)
	}
	tok, err := HTTP{CodecTokenFile: good}.CodecToken()
	if err != nil || tok != "0123456789abcdef0123456789abcdef" {
		t.Errorf("CodecToken() = %q, %v; want the file's token without surrounding space", tok, err)
	}
	if tok, err := (HTTP{}).CodecToken(); tok != "" || err != nil {
		t.Errorf("CodecToken() without a file = %q, %v; want none", tok, err)
	}
}
