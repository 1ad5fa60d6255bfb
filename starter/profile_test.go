package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cliHome writes $XDG_CONFIG_HOME/flinkmaint/config.yaml (unless body is
// "") and returns the environment pointing at it.
func cliHome(t *testing.T, body string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	if body != "" {
		if err := os.MkdirAll(filepath.Join(dir, "flinkmaint"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "flinkmaint", "config.yaml"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return map[string]string{"XDG_CONFIG_HOME": dir}
}

// flagsOf are global flags as given on a command line.
func flagsOf(t *testing.T, given map[string]string) flagValues {
	t.Helper()
	fl := flagValues{set: func(name string) bool { _, ok := given[name]; return ok }, connectTimeout: defaultConnectTimeout}
	fl.conn.Address, fl.conn.Namespace, fl.conn.TLS.CertFile = given["address"], given["namespace"], given["tls-cert"]
	fl.taskQueue, fl.profile = given["task-queue"], given["profile"]
	if v, ok := given["connect-timeout"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		fl.connectTimeout = d
	}
	return fl
}

const twoProfiles = `profiles:
  default:
    address: default.example:7233
    namespace: default-ns
  prod:
    address: prod.example:7233
    namespace: prod-ns
    taskQueue: prod-queue
    tlsCert: /prod/client.crt
    tlsKey: /prod/client.key
    tlsCA: /prod/ca.crt
    tlsServerName: temporal.prod
    uiURL: https://ui.prod
    connectTimeout: 1m
`

// Flags win over the environment, the environment over the profile, the
// profile over the defaults, setting by setting.
func TestConnectionPrecedence(t *testing.T) {
	env := cliHome(t, twoProfiles)
	get := func(extra map[string]string) func(string) string {
		return func(k string) string {
			if v, ok := extra[k]; ok {
				return v
			}
			return env[k]
		}
	}
	for name, tc := range map[string]struct {
		flags map[string]string
		env   map[string]string
		want  map[string]string // setting → value
	}{
		"no profile selected: the default profile": {nil, nil,
			map[string]string{"address": "default.example:7233", "namespace": "default-ns", "taskQueue": "flinkmaint", "cert": "", "timeout": "10s"}},
		"profile by flag": {map[string]string{"profile": "prod"}, nil,
			map[string]string{"address": "prod.example:7233", "namespace": "prod-ns", "taskQueue": "prod-queue", "cert": "/prod/client.crt",
				"key": "/prod/client.key", "ca": "/prod/ca.crt", "server": "temporal.prod", "ui": "https://ui.prod", "timeout": "1m0s"}},
		"profile by environment": {nil, map[string]string{EnvProfile: "prod"},
			map[string]string{"address": "prod.example:7233", "namespace": "prod-ns"}},
		"flag over environment for the profile": {map[string]string{"profile": "default"}, map[string]string{EnvProfile: "prod"},
			map[string]string{"address": "default.example:7233"}},
		"environment over profile": {map[string]string{"profile": "prod"},
			map[string]string{"TEMPORAL_ADDRESS": "env.example:7233", "TEMPORAL_TLS_CERT": "/env/c.crt", "FLINKMAINT_TASK_QUEUE": "env-queue"},
			map[string]string{"address": "env.example:7233", "namespace": "prod-ns", "cert": "/env/c.crt", "taskQueue": "env-queue"}},
		"worker's TLS names too": {map[string]string{"profile": "prod"}, map[string]string{"TEMPORAL_TLS_CLIENT_CERT_PATH": "/env/w.crt", "TEMPORAL_TLS_SERVER_CA_CERT_PATH": "/env/ca.crt"},
			map[string]string{"cert": "/env/w.crt", "ca": "/env/ca.crt", "key": "/prod/client.key"}},
		"flags over environment and profile": {map[string]string{"profile": "prod", "address": "flag.example:7233", "tls-cert": "/flag/c.crt", "task-queue": "flag-queue", "connect-timeout": "3s"},
			map[string]string{"TEMPORAL_ADDRESS": "env.example:7233", "TEMPORAL_TLS_CERT": "/env/c.crt", "FLINKMAINT_TASK_QUEUE": "env-queue"},
			map[string]string{"address": "flag.example:7233", "namespace": "prod-ns", "cert": "/flag/c.crt", "taskQueue": "flag-queue", "timeout": "3s"}},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := resolveConnection(flagsOf(t, tc.flags), get(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{"address": c.opts.Address, "namespace": c.opts.Namespace, "taskQueue": c.taskQueue, "cert": c.opts.TLS.CertFile,
				"key": c.opts.TLS.KeyFile, "ca": c.opts.TLS.CAFile, "server": c.opts.TLS.ServerName, "ui": c.opts.UIURL, "timeout": c.connectTimeout.String()}
			for k, want := range tc.want {
				if got[k] != want {
					t.Errorf("%s = %q, want %q", k, got[k], want)
				}
			}
		})
	}
}

// Without a config file, and with none named, the CLI runs on defaults
// and the environment, as before profiles.
func TestNoConfigFileIsFine(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"no file":             cliHome(t, ""),
		"no XDG, no HOME":     {},
		"HOME without a file": {"HOME": t.TempDir()},
	} {
		c, err := resolveConnection(flagsOf(t, nil), func(k string) string { return env[k] })
		if err != nil || c.opts.Address != "localhost:7233" || c.opts.Namespace != "default" || c.taskQueue != "flinkmaint" {
			t.Errorf("%s: %+v, %v; want the defaults", name, c.opts, err)
		}
	}
	home := t.TempDir()
	if p := cliConfigPath(func(k string) string { return map[string]string{"HOME": home}[k] }); p != filepath.Join(home, ".config", "flinkmaint", "config.yaml") {
		t.Errorf("config path without XDG_CONFIG_HOME = %s", p)
	}
}

// An API key comes from TEMPORAL_API_KEY or a profile's apiKeyFile (never
// a flag); the environment wins.
func TestAPIKeyFromProfileFile(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("  key-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := cliHome(t, "profiles:\n  cloud:\n    address: ns.acct.tmprl.cloud:7233\n    apiKeyFile: "+keyFile+"\n")
	c, err := resolveConnection(flagsOf(t, map[string]string{"profile": "cloud"}), func(k string) string { return env[k] })
	if err != nil || c.opts.APIKey != "key-from-file" {
		t.Fatalf("api key %q, %v; want the file's", c.opts.APIKey, err)
	}
	env["TEMPORAL_API_KEY"] = "key-from-env"
	c, err = resolveConnection(flagsOf(t, map[string]string{"profile": "cloud"}), func(k string) string { return env[k] })
	if err != nil || c.opts.APIKey != "key-from-env" {
		t.Fatalf("api key %q, %v; want the environment's", c.opts.APIKey, err)
	}
}

// Every problem of the profile or the file is a usage error naming where
// it is and what would be valid.
func TestProfileErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		file string // "" = no file
		args []string
		env  map[string]string
		want []string
	}{
		"unknown key": {"profiles:\n  prod:\n    adress: x:7233\n    namespace: n\n", []string{"--profile", "prod", "ping"}, nil,
			[]string{"config.yaml", "profiles.prod.adress (line 3): unknown key", "known: address, apiKeyFile, connectTimeout, namespace, taskQueue, tls, tlsCA, tlsCert, tlsKey, tlsServerName, uiURL"}},
		"unknown key beside profiles, no profile chosen": {"profile:\n  prod: {}\n", []string{"ping"}, nil,
			[]string{"config.yaml", "profile (line 1): unknown key; the file holds profiles"}},
		"unknown profile": {twoProfiles, []string{"--profile", "staging", "ping"}, nil,
			[]string{`--profile="staging" is not a profile of`, "config.yaml", "its profiles: default, prod"}},
		"unknown profile from the environment": {twoProfiles, []string{"ping"}, map[string]string{EnvProfile: "staging"},
			[]string{`FLINKMAINT_PROFILE="staging" is not a profile of`}},
		"profile without a file": {"", []string{"--profile", "prod", "ping"}, nil,
			[]string{`--profile="prod"`, "config.yaml does not exist", "profiles: {prod:"}},
		"empty profile name": {twoProfiles, []string{"--profile", "", "ping"}, nil, []string{"--profile is empty"}},
		"not YAML":           {"profiles: [\n", []string{"ping"}, nil, []string{"config.yaml", "yaml"}},
		"a value of the wrong type": {"profiles:\n  prod:\n    tls: perhaps\n", []string{"--profile", "prod", "ping"}, nil,
			[]string{"config.yaml", "line 3", "perhaps"}},
		"bad duration": {"profiles:\n  prod:\n    connectTimeout: soon\n", []string{"--profile", "prod", "ping"}, nil,
			[]string{"config.yaml: profiles.prod.connectTimeout: ", `"soon" is not a duration`, "7d"}},
		"file the profile names cannot be read": {"profiles:\n  prod:\n    tlsCA: /nonexistent/ca.crt\n", []string{"--profile", "prod", "ping"}, nil,
			[]string{`profiles.prod.tlsCA="/nonexistent/ca.crt" cannot be read`, "(profile prod of config file ", "config.yaml)"}},
		"API key file cannot be read": {"profiles:\n  prod:\n    apiKeyFile: /nonexistent/key\n", []string{"--profile", "prod", "ping"}, nil,
			[]string{"config.yaml: ", `profiles.prod.apiKeyFile="/nonexistent/key" cannot be read`}},
		"both TLS names, different files": {"", []string{"ping"}, map[string]string{"TEMPORAL_TLS_CERT": "/a.crt", "TEMPORAL_TLS_CLIENT_CERT_PATH": "/b.crt"},
			[]string{`TEMPORAL_TLS_CERT="/a.crt" and TEMPORAL_TLS_CLIENT_CERT_PATH="/b.crt" name different files`}},
		"environment's file named by its variable": {"", []string{"ping"}, map[string]string{"TEMPORAL_TLS_CA": "/nonexistent/ca.pem"},
			[]string{`TEMPORAL_TLS_CA="/nonexistent/ca.pem" cannot be read`}},
	} {
		t.Run(name, func(t *testing.T) {
			env := cliHome(t, tc.file)
			for k, v := range tc.env {
				env[k] = v
			}
			code, _, stderr := runCLI(tc.args, env)
			if code != exitUsage {
				t.Fatalf("exit %d, stderr %q; want %d", code, stderr, exitUsage)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not say %q", stderr, w)
				}
			}
		})
	}
}

// A command connects where the profile says, and a flag overrides it: the
// error of the unreachable frontend names the address used.
func TestCommandsConnectWithTheProfile(t *testing.T) {
	env := cliHome(t, "profiles:\n  lab:\n    address: 127.0.0.1:1\n    connectTimeout: 1s\n")
	code, _, stderr := runCLI([]string{"--profile", "lab", "ping"}, env)
	if code != exitUnreachable || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Errorf("exit %d, stderr %q; want %d naming the profile's address", code, stderr, exitUnreachable)
	}
	code, _, stderr = runCLI([]string{"--profile", "lab", "--address", "127.0.0.1:2", "ping"}, env)
	if code != exitUnreachable || !strings.Contains(stderr, "127.0.0.1:2") {
		t.Errorf("exit %d, stderr %q; want %d naming the flag's address", code, stderr, exitUnreachable)
	}
}
