package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/duration"
	"github.com/flinkmaint/flinkmaint/internal/temporalconn"
)

// The connection the CLI uses comes from, later ones winning: defaults, a
// profile of the CLI's config file, the environment, the global flags.
// This file is the one place that resolves it.

// Environment of the CLI's connection besides temporalconn's.
const (
	// EnvProfile selects a profile of the config file, as --profile does.
	EnvProfile = "FLINKMAINT_PROFILE"
	// The temporal CLI's names of the TLS files. The names of Temporal's
	// env config (temporalconn.EnvTLSCert, ...), which the worker reads,
	// are read too; set both of one pair and they must agree.
	envTLSCert = "TEMPORAL_TLS_CERT"
	envTLSKey  = "TEMPORAL_TLS_KEY"
	envTLSCA   = "TEMPORAL_TLS_CA"
)

// defaultConnectTimeout is --connect-timeout's default.
const defaultConnectTimeout = 10 * time.Second

// cliProfile is a named profile of $XDG_CONFIG_HOME/flinkmaint/config.yaml:
// the connection settings of one Temporal deployment.
type cliProfile struct {
	Address        string `yaml:"address"`
	Namespace      string `yaml:"namespace"`
	TaskQueue      string `yaml:"taskQueue"`
	TLS            *bool  `yaml:"tls"`
	TLSCert        string `yaml:"tlsCert"`
	TLSKey         string `yaml:"tlsKey"`
	TLSCA          string `yaml:"tlsCA"`
	TLSServerName  string `yaml:"tlsServerName"`
	APIKeyFile     string `yaml:"apiKeyFile"`
	UIURL          string `yaml:"uiURL"`
	ConnectTimeout string `yaml:"connectTimeout"`
}

// cliConfigPath is the CLI's config file: $XDG_CONFIG_HOME/flinkmaint/
// config.yaml, else ~/.config/flinkmaint/config.yaml; "" when neither
// variable is set.
func cliConfigPath(getenv func(string) string) string {
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "flinkmaint", "config.yaml")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "flinkmaint", "config.yaml")
	}
	return ""
}

// loadCLIConfig reads the profiles of the config file at path; a missing
// file has none. Every unknown key is refused, with its path and line.
func loadCLIConfig(path string) (map[string]cliProfile, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config file %s: %v", path, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("config file %s: %v", path, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("config file %s: want the key profiles, a set of named profiles", path)
	}
	var problems []string
	known := yamlTags(reflect.TypeOf(cliProfile{}))
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "profiles" {
			problems = append(problems, fmt.Sprintf("%s (line %d): unknown key; the file holds profiles", k.Value, k.Line))
			continue
		}
		if v.Kind != yaml.MappingNode {
			problems = append(problems, fmt.Sprintf("profiles (line %d): want named profiles, such as profiles: {prod: {address: temporal.prod:7233}}", v.Line))
			continue
		}
		for j := 0; j+1 < len(v.Content); j += 2 {
			name, p := v.Content[j], v.Content[j+1]
			if p.Kind != yaml.MappingNode {
				problems = append(problems, fmt.Sprintf("profiles.%s (line %d): want keys (%s)", name.Value, p.Line, strings.Join(known, ", ")))
				continue
			}
			for m := 0; m+1 < len(p.Content); m += 2 {
				if key := p.Content[m]; !slices.Contains(known, key.Value) {
					problems = append(problems, fmt.Sprintf("profiles.%s.%s (line %d): unknown key; known: %s", name.Value, key.Value, key.Line, strings.Join(known, ", ")))
				}
			}
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("config file %s:\n  - %s", path, strings.Join(problems, "\n  - "))
	}
	var cfg struct {
		Profiles map[string]cliProfile `yaml:"profiles"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("config file %s: %v", path, strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n  "))
	}
	return cfg.Profiles, nil
}

func yamlTags(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// connection is what the CLI connects with, and where each setting came
// from, so a problem names the flag, variable or profile key that set it.
type connection struct {
	opts           temporalconn.Options
	taskQueue      string
	connectTimeout time.Duration
	// from names the source of a setting by its temporalconn key
	// ("address", "tls.certFile") or "taskQueue", "connectTimeout".
	from map[string]string
	// profile is the profile used, read from profileFile; "" for none.
	profile, profileFile string
}

// explain adds where the profile's keys are to an error that names one.
func (c *connection) explain(err error) error {
	if c.profile != "" && strings.Contains(err.Error(), "profiles."+c.profile+".") {
		return fmt.Errorf("%w\n(profile %s of config file %s)", err, c.profile, c.profileFile)
	}
	return err
}

// name names where a setting came from, for temporalconn's Validate.
func (c *connection) name(key string) string {
	if s := c.from[key]; s != "" {
		return s
	}
	return connFlag(key)
}

// flagValues are the global flags as given, and which were.
type flagValues struct {
	conn           temporalconn.Options
	taskQueue      string
	profile        string
	connectTimeout time.Duration
	set            func(name string) bool
}

// resolveConnection resolves the connection: defaults, then the profile
// (--profile, else FLINKMAINT_PROFILE, else a profile named default if the
// file has one), then the environment, then the flags.
func resolveConnection(fl flagValues, getenv func(string) string) (connection, error) {
	c := connection{connectTimeout: defaultConnectTimeout, from: map[string]string{}}
	path := cliConfigPath(getenv)
	name, chosenBy := fl.profile, "--profile"
	if !fl.set("profile") {
		name, chosenBy = getenv(EnvProfile), EnvProfile
	}
	profiles, err := loadCLIConfig(path)
	if err != nil {
		return c, err
	}
	if name == "" && fl.set("profile") {
		return c, fmt.Errorf("--profile is empty: name a profile of %s", displayPath(path))
	}
	if name == "" {
		if _, ok := profiles["default"]; ok {
			name, chosenBy = "default", ""
		}
	}
	if name != "" {
		p, ok := profiles[name]
		if !ok {
			return c, unknownProfile(name, chosenBy, path, profiles)
		}
		if err := c.applyProfile(name, p, path); err != nil {
			return c, err
		}
	}
	if err := c.applyEnv(getenv); err != nil {
		return c, err
	}
	c.applyFlags(fl)
	c.opts.ApplyDefaults()
	if c.taskQueue == "" {
		c.taskQueue = config.DefaultTaskQueue
	}
	return c, nil
}

func displayPath(path string) string {
	if path == "" {
		return "the config file ($XDG_CONFIG_HOME and $HOME are unset, so there is none)"
	}
	return path
}

func unknownProfile(name, chosenBy, path string, profiles map[string]cliProfile) error {
	how := "the profile " + strconv.Quote(name)
	if chosenBy != "" {
		how = fmt.Sprintf("%s=%q", chosenBy, name)
	}
	if len(profiles) == 0 {
		if _, err := os.Stat(path); path == "" || err != nil {
			return fmt.Errorf("%s: %s does not exist; create it with profiles: {%s: {address: host:7233, namespace: ...}}", how, displayPath(path), name)
		}
		return fmt.Errorf("%s: %s holds no profiles", how, path)
	}
	names := make([]string, 0, len(profiles))
	for n := range profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return fmt.Errorf("%s is not a profile of %s; its profiles: %s", how, path, strings.Join(names, ", "))
}

// applyProfile sets what the profile sets.
func (c *connection) applyProfile(name string, p cliProfile, path string) error {
	c.profile, c.profileFile = name, path
	at := func(key string) string { return fmt.Sprintf("profiles.%s.%s", name, key) }
	set := func(dst *string, v, key, yamlKey string) {
		if v != "" {
			*dst, c.from[key] = v, at(yamlKey)
		}
	}
	set(&c.opts.Address, p.Address, "address", "address")
	set(&c.opts.Namespace, p.Namespace, "namespace", "namespace")
	set(&c.taskQueue, p.TaskQueue, "taskQueue", "taskQueue")
	set(&c.opts.TLS.CertFile, p.TLSCert, "tls.certFile", "tlsCert")
	set(&c.opts.TLS.KeyFile, p.TLSKey, "tls.keyFile", "tlsKey")
	set(&c.opts.TLS.CAFile, p.TLSCA, "tls.caFile", "tlsCA")
	set(&c.opts.TLS.ServerName, p.TLSServerName, "tls.serverName", "tlsServerName")
	set(&c.opts.UIURL, p.UIURL, "uiURL", "uiURL")
	if p.TLS != nil {
		c.opts.TLS.Enabled = *p.TLS
	}
	if p.APIKeyFile != "" {
		key, err := os.ReadFile(p.APIKeyFile)
		switch {
		case err != nil:
			return fmt.Errorf("config file %s: %s=%q cannot be read: %v", path, at("apiKeyFile"), p.APIKeyFile, err)
		case strings.TrimSpace(string(key)) == "":
			return fmt.Errorf("config file %s: %s=%q is empty: write the API key to it", path, at("apiKeyFile"), p.APIKeyFile)
		}
		c.opts.APIKey, c.from["apiKey"] = strings.TrimSpace(string(key)), at("apiKeyFile")
	}
	if p.ConnectTimeout != "" {
		d, err := duration.Parse(p.ConnectTimeout)
		if err != nil {
			return fmt.Errorf("config file %s: %s: %v", path, at("connectTimeout"), err)
		}
		c.connectTimeout, c.from["connectTimeout"] = d, at("connectTimeout")
	}
	return nil
}

// applyEnv sets what the environment sets: the temporal CLI's variables,
// and Temporal's env config names of the TLS files, the worker's.
func (c *connection) applyEnv(getenv func(string) string) error {
	set := func(dst *string, key string, names ...string) error {
		var v, from string
		for _, n := range names {
			x := getenv(n)
			if x == "" {
				continue
			}
			if v != "" && x != v {
				return fmt.Errorf("%s=%q and %s=%q name different files: set one of them", from, v, n, x)
			}
			v, from = x, n
		}
		if v != "" {
			*dst, c.from[key] = v, from
		}
		return nil
	}
	for _, s := range []struct {
		dst   *string
		key   string
		names []string
	}{
		{&c.opts.Address, "address", []string{temporalconn.EnvAddress}},
		{&c.opts.Namespace, "namespace", []string{temporalconn.EnvNamespace}},
		{&c.opts.APIKey, "apiKey", []string{temporalconn.EnvAPIKey}},
		{&c.opts.TLS.CertFile, "tls.certFile", []string{envTLSCert, temporalconn.EnvTLSCert}},
		{&c.opts.TLS.KeyFile, "tls.keyFile", []string{envTLSKey, temporalconn.EnvTLSKey}},
		{&c.opts.TLS.CAFile, "tls.caFile", []string{envTLSCA, temporalconn.EnvTLSCA}},
		{&c.opts.TLS.ServerName, "tls.serverName", []string{temporalconn.EnvTLSServerName}},
		{&c.opts.UIURL, "uiURL", []string{temporalconn.EnvUIURL}},
		{&c.taskQueue, "taskQueue", []string{config.EnvTaskQueue}},
	} {
		if err := set(s.dst, s.key, s.names...); err != nil {
			return err
		}
	}
	if v := getenv(temporalconn.EnvTLS); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%s=%q is not valid: use true or false", temporalconn.EnvTLS, v)
		}
		c.opts.TLS.Enabled = b
	}
	return nil
}

// applyFlags sets what the flags given set.
func (c *connection) applyFlags(fl flagValues) {
	pick := func(dst *string, flag, key, v string) {
		if fl.set(flag) {
			*dst, c.from[key] = v, "--"+flag
		}
	}
	pick(&c.opts.Address, "address", "address", fl.conn.Address)
	pick(&c.opts.Namespace, "namespace", "namespace", fl.conn.Namespace)
	pick(&c.opts.TLS.CertFile, "tls-cert", "tls.certFile", fl.conn.TLS.CertFile)
	pick(&c.opts.TLS.KeyFile, "tls-key", "tls.keyFile", fl.conn.TLS.KeyFile)
	pick(&c.opts.TLS.CAFile, "tls-ca", "tls.caFile", fl.conn.TLS.CAFile)
	pick(&c.opts.TLS.ServerName, "tls-server-name", "tls.serverName", fl.conn.TLS.ServerName)
	pick(&c.opts.UIURL, "ui-url", "uiURL", fl.conn.UIURL)
	pick(&c.taskQueue, "task-queue", "taskQueue", fl.taskQueue)
	if fl.set("connect-timeout") {
		c.connectTimeout, c.from["connectTimeout"] = fl.connectTimeout, "--connect-timeout"
	}
}
