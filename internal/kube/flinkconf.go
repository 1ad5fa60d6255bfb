package kube

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Flink configuration keys, newest name first (Flink 1.20 renamed the
// state.* keys; both are still read by Flink 1.x).
var (
	checkpointDirKeys = []string{"execution.checkpointing.dir", "state.checkpoints.dir"}
	savepointDirKeys  = []string{"execution.checkpointing.savepoint-dir", "state.savepoints.dir"}
	haStorageDirKeys  = []string{"high-availability.storageDir", "high-availability.storage-dir"}
)

const (
	flinkConfigFile       = "config.yaml"     // Flink >= 1.19
	flinkLegacyConfigFile = "flink-conf.yaml" // older versions
	defaultRESTPort       = 8081
)

// Keys that decide a ForSt job's savepoint format.
var stateBackendKeys = []string{"state.backend.type", "state.backend"}

const operatorSavepointFormatKey = "kubernetes.operator.savepoint.format.type"

// forStSavepointFormat refuses to suspend a resource whose job runs the
// ForSt state backend while the operator would take a CANONICAL savepoint
// (its default): Flink 2.x's ForSt fails the job over on one, so the
// suspend would take no savepoint. Only spec.flinkConfiguration is read; a
// job that sets ForSt in its code is not seen here.
func forStSavepointFormat(u *unstructured.Unstructured) error {
	raw, found, err := unstructured.NestedFieldNoCopy(u.Object, "spec", "flinkConfiguration")
	if err != nil || !found {
		return nil
	}
	conf := flinkConf{}
	if err := flatten("", raw, conf); err != nil {
		return fmt.Errorf("spec.flinkConfiguration: %v", err)
	}
	if !strings.EqualFold(conf.first(stateBackendKeys), "forst") {
		return nil
	}
	if f := strings.TrimSpace(conf[operatorSavepointFormatKey]); !strings.EqualFold(f, "NATIVE") {
		if f == "" {
			f = "unset, so the operator's default CANONICAL"
		}
		return fmt.Errorf("spec.flinkConfiguration sets state.backend.type forst and %s is %s: ForSt takes native savepoints only (a canonical one fails the job over and no savepoint is taken); set %s: NATIVE in spec.flinkConfiguration",
			operatorSavepointFormatKey, f, operatorSavepointFormatKey)
	}
	return nil
}

// flinkConf is a flattened Flink configuration.
type flinkConf map[string]string

func (c flinkConf) first(keys []string) string {
	for _, k := range keys {
		if v := strings.TrimSpace(c[k]); v != "" {
			return v
		}
	}
	return ""
}

// restSSLKey turns on TLS for the REST endpoint (and its clients).
const restSSLKey = "security.ssl.rest.enabled"

// restScheme is https when the cluster serves REST over TLS, else http.
func (c flinkConf) restScheme() (string, error) {
	switch v := strings.TrimSpace(c[restSSLKey]); strings.ToLower(v) {
	case "", "false":
		return "http", nil
	case "true":
		return "https", nil
	default:
		return "", fmt.Errorf("%s %q: want true or false", restSSLKey, v)
	}
}

func (c flinkConf) restPort() (int, error) {
	v := strings.TrimSpace(c["rest.port"])
	if v == "" {
		return defaultRESTPort, nil
	}
	p, err := strconv.Atoi(v)
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("rest.port %q: want a port number 1-65535", v)
	}
	return p, nil
}

// parseFlinkConfigMap reads the data of a flink-config-<id> ConfigMap:
// config.yaml (standard YAML, nested or flattened keys) or the flat
// "key: value" lines of flink-conf.yaml.
func parseFlinkConfigMap(data map[string]string) (flinkConf, error) {
	if body, ok := data[flinkConfigFile]; ok {
		var tree any
		if err := yaml.Unmarshal([]byte(body), &tree); err != nil {
			return nil, fmt.Errorf("%s: %w", flinkConfigFile, err)
		}
		out := flinkConf{}
		if err := flatten("", tree, out); err != nil {
			return nil, fmt.Errorf("%s: %w", flinkConfigFile, err)
		}
		return out, nil
	}
	if body, ok := data[flinkLegacyConfigFile]; ok {
		return parseLegacyFlinkConf(body), nil
	}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return nil, fmt.Errorf("neither %s nor %s among keys [%s]", flinkConfigFile, flinkLegacyConfigFile, strings.Join(keys, ", "))
}

// parseLegacyFlinkConf follows GlobalConfiguration.loadYAMLResource: one
// "key: value" per line, '#' starts a comment, malformed lines are skipped.
func parseLegacyFlinkConf(body string) flinkConf {
	out := flinkConf{}
	for _, line := range strings.Split(body, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if k != "" && v != "" {
			out[k] = v
		}
	}
	return out
}

// flatten turns nested maps into dotted keys, as Flink's YAML parser does,
// so nested and flattened config.yaml / spec.flinkConfiguration read alike.
func flatten(prefix string, node any, out flinkConf) error {
	switch v := node.(type) {
	case nil:
		return nil
	case map[string]any:
		for k, child := range v {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			if err := flatten(key, child, out); err != nil {
				return err
			}
		}
	case map[any]any:
		for k, child := range v {
			key := fmt.Sprint(k)
			if prefix != "" {
				key = prefix + "." + key
			}
			if err := flatten(key, child, out); err != nil {
				return err
			}
		}
	case []any:
		if prefix == "" {
			return fmt.Errorf("want a mapping of options, got a list")
		}
		parts := make([]string, 0, len(v))
		for _, e := range v {
			parts = append(parts, fmt.Sprint(e))
		}
		out[prefix] = strings.Join(parts, ";")
	default:
		if prefix == "" {
			return fmt.Errorf("want a mapping of options, got %T", node)
		}
		out[prefix] = fmt.Sprint(v)
	}
	return nil
}
