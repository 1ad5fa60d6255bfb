package inventory

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/flinkmaint/flinkmaint/internal/redact"
)

// ErrInvalid is matched (errors.Is) by every FieldError.
var ErrInvalid = errors.New("inventory: invalid")

// FieldError names a field, the value it holds and what would be valid.
type FieldError struct {
	// Source is the file (or annotation) the value came from; may be empty.
	Source string
	// Field is a path such as clusters[2].restUrl.
	Field string
	Value string
	Valid string
}

func (e *FieldError) Error() string {
	if e.Source != "" {
		return fmt.Sprintf("inventory: %s: invalid %s %q: %s", e.Source, e.Field, e.Value, e.Valid)
	}
	return fmt.Sprintf("inventory: invalid %s %q: %s", e.Field, e.Value, e.Valid)
}

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

// Static is the content of a static inventory file: clusters that run
// outside Kubernetes (standalone or session clusters) and their tenants.
//
//	tenants:
//	  - name: team-a
//	    root: hdfs://nn:8020/user/app/team-a
//	clusters:
//	  - clusterId: cluster-a
//	    tenant: team-a
//	    mode: session
//	    restUrl: https://flink-a.example:8081
//	    checkpointDir: hdfs://nn:8020/user/app/team-a/checkpoints
//	    savepointDir: hdfs://nn:8020/user/app/team-a/savepoints
//	    haStorageDir: hdfs://nn:8020/user/app/team-a/ha
//	    rest:                      # optional; overrides the worker's flink.rest
//	      tls:
//	        caFile: /etc/flinkmaint/flink-a/ca.crt
//	        certFile: /etc/flinkmaint/flink-a/tls.crt
//	        keyFile: /etc/flinkmaint/flink-a/tls.key
//	    jobs:
//	      - name: orders
//	        restart:
//	          kind: rest-jar-run
//	          jar: hdfs://nn:8020/jars/orders.jar
//	          entryClass: com.example.Orders
//	          programArgs: ["--topic", "orders"]
//	          parallelism: 4
type Static struct {
	Tenants  []Tenant  `yaml:"tenants"`
	Clusters []Cluster `yaml:"clusters"`
	// RetiredClusters are the ids (high-availability.cluster-id) of clusters
	// that are gone for good; see Inventory.RetiredClusters.
	RetiredClusters []string `yaml:"retiredClusters"`
}

// maxStaticFileBytes bounds what LoadStatic reads; a real file is a few KiB
// per cluster, so anything larger is a mistake (or not an inventory file).
const maxStaticFileBytes = 16 << 20

// LoadStatic reads and validates a static inventory file. Every cluster
// gets Source static; unknown keys are errors so typos do not go unnoticed.
// The file is read on every call, so an edit takes effect at once; it is
// parsed again only when its bytes changed (static_memo.go).
func LoadStatic(path string) (Static, error) {
	f, err := os.Open(path)
	if err != nil {
		return Static{}, fmt.Errorf("inventory: static file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxStaticFileBytes+1))
	if err != nil {
		return Static{}, fmt.Errorf("inventory: read static file %s: %w", path, err)
	}
	if len(data) > maxStaticFileBytes {
		return Static{}, &FieldError{Source: path, Field: "file size", Value: strconv.Itoa(len(data)), Valid: fmt.Sprintf("at most %d bytes", maxStaticFileBytes)}
	}
	return parseStaticOnce(data, path)
}

// ParseStatic parses and validates static inventory YAML; source names it
// in errors.
func ParseStatic(data []byte, source string) (Static, error) {
	var s Static
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return Static{}, &FieldError{Source: source, Field: "document", Value: "", Valid: "a YAML mapping with tenants and clusters"}
		}
		return Static{}, fmt.Errorf("inventory: parse static file %s: %w", source, errors.Join(ErrInvalid, err))
	}
	for i := range s.Clusters {
		if s.Clusters[i].Source != "" && s.Clusters[i].Source != SourceStatic {
			return Static{}, &FieldError{Source: source, Field: fmt.Sprintf("clusters[%d].source", i), Value: string(s.Clusters[i].Source), Valid: "empty or " + string(SourceStatic)}
		}
		s.Clusters[i].Source = SourceStatic
	}
	if err := s.Validate(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) && fe.Source == "" {
			fe.Source = source
		}
		return Static{}, err
	}
	return s, nil
}

// Validate checks tenants and clusters of a static inventory.
func (s Static) Validate() error {
	if len(s.Clusters) == 0 {
		return &FieldError{Field: "clusters", Value: "", Valid: "at least one cluster"}
	}
	tenants := make(map[string]bool, len(s.Tenants))
	for i, t := range s.Tenants {
		field := fmt.Sprintf("tenants[%d]", i)
		if err := ValidateName(field+".name", t.Name); err != nil {
			return err
		}
		if tenants[t.Name] {
			return &FieldError{Field: field + ".name", Value: t.Name, Valid: "a tenant name not used by an earlier tenant"}
		}
		tenants[t.Name] = true
		if err := ValidateStorageURI(field+".root", t.Root, true); err != nil {
			return err
		}
	}
	ids := make(map[string]bool, len(s.Clusters))
	for i, c := range s.Clusters {
		field := fmt.Sprintf("clusters[%d]", i)
		if err := ValidateName(field+".clusterId", c.ClusterID); err != nil {
			return err
		}
		if ids[c.ClusterID] {
			return &FieldError{Field: field + ".clusterId", Value: c.ClusterID, Valid: "a cluster id not used by an earlier cluster"}
		}
		ids[c.ClusterID] = true
		if !tenants[c.Tenant] {
			return &FieldError{Field: field + ".tenant", Value: c.Tenant, Valid: "the name of a tenant listed under tenants: " + strings.Join(keys(tenants), ", ")}
		}
		switch c.Mode {
		case ModeSession, ModeApplication:
		default:
			return &FieldError{Field: field + ".mode", Value: string(c.Mode), Valid: "session or application"}
		}
		if err := ValidateRESTURL(field+".restUrl", c.RESTURL); err != nil {
			return err
		}
		if c.REST != nil {
			if errs := c.REST.Validate(field + ".rest"); len(errs) > 0 {
				return errs[0]
			}
			if c.REST.TLS != (RESTTLS{}) && !strings.HasPrefix(c.RESTURL, "https://") {
				return &FieldError{Field: field + ".restUrl", Value: redact.URL(c.RESTURL), Valid: "an https:// URL: " + field + ".rest.tls is set"}
			}
		}
		for _, d := range []struct{ name, value string }{
			{"checkpointDir", c.CheckpointDir}, {"savepointDir", c.SavepointDir}, {"haStorageDir", c.HAStorageDir},
		} {
			if err := ValidateStorageURI(field+"."+d.name, d.value, false); err != nil {
				return err
			}
		}
		if c.Resource != nil {
			return &FieldError{Field: field + ".resource", Value: c.Resource.Kind + "/" + c.Resource.Name, Valid: "empty: static clusters are not Kubernetes objects"}
		}
		if err := ValidateJobs(field+".jobs", c.Jobs); err != nil {
			return err
		}
	}
	for i, id := range s.RetiredClusters {
		field := fmt.Sprintf("retiredClusters[%d]", i)
		if err := ValidateName(field, id); err != nil {
			return err
		}
		if ids[id] {
			return &FieldError{Field: field, Value: id, Valid: "the id of a cluster that is gone, not one listed under clusters"}
		}
	}
	return nil
}

var (
	namePattern        = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,251}[A-Za-z0-9])?$`)
	schemePattern      = regexp.MustCompile(`^[a-z][a-z0-9+.-]*$`)
	validRestoreModes  = []string{"", "NO_CLAIM", "CLAIM", "LEGACY"}
	maxJobsPerCluster  = 10000
	maxParallelism     = 32768 // Flink's upper bound on max parallelism
	maxProgramArgBytes = 64 << 10
)

// ValidateName checks an identifier (tenant, cluster id, job name): 1-253
// characters of letters, digits, '.', '_' and '-', starting and ending
// alphanumeric.
func ValidateName(field, v string) error {
	if !namePattern.MatchString(v) {
		return &FieldError{Field: field, Value: v, Valid: "1-253 letters, digits, '.', '_' or '-', starting and ending with a letter or digit"}
	}
	return nil
}

// ValidateRESTURL checks a Flink REST endpoint: http or https with a host
// and no query or fragment.
func ValidateRESTURL(field, v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return &FieldError{Field: field, Value: redact.URL(v), Valid: "an http:// or https:// URL with a host, such as http://flink-rest.team-a:8081"}
	}
	if u.User != nil {
		return &FieldError{Field: field, Value: redact.URL(v), Valid: "a URL without user or password: the worker's flink settings hold the credentials"}
	}
	return nil
}

// ValidateStorageURI checks a directory URI such as hdfs://nn:8020/user/x,
// file:///tmp/x or an absolute path /user/x. Empty is accepted unless
// required.
func ValidateStorageURI(field, v string, required bool) error {
	if v == "" {
		if required {
			return &FieldError{Field: field, Value: v, Valid: "a directory URI such as hdfs://nn:8020/user/app/team-a or an absolute path"}
		}
		return nil
	}
	if strings.HasPrefix(v, "/") {
		if strings.ContainsAny(v, "\n\x00") {
			return &FieldError{Field: field, Value: v, Valid: "an absolute path without newlines or NUL"}
		}
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || !schemePattern.MatchString(u.Scheme) || !strings.HasPrefix(u.Path, "/") || u.RawQuery != "" || u.Fragment != "" {
		return &FieldError{Field: field, Value: v, Valid: "a directory URI with a scheme and an absolute path (hdfs://nn:8020/user/app/team-a, file:///data/x) or an absolute path"}
	}
	return nil
}

// ValidateJobs checks job names are unique and each restart recipe is
// complete for its kind.
func ValidateJobs(field string, jobs []JobSpec) error {
	if len(jobs) > maxJobsPerCluster {
		return &FieldError{Field: field, Value: strconv.Itoa(len(jobs)) + " jobs", Valid: fmt.Sprintf("at most %d jobs per cluster", maxJobsPerCluster)}
	}
	seen := make(map[string]bool, len(jobs))
	for i, j := range jobs {
		f := fmt.Sprintf("%s[%d]", field, i)
		if err := ValidateName(f+".name", j.Name); err != nil {
			return err
		}
		if seen[j.Name] {
			return &FieldError{Field: f + ".name", Value: j.Name, Valid: "a job name not used by an earlier job of the cluster"}
		}
		seen[j.Name] = true
		if err := ValidateRecipe(f+".restart", j.Restart); err != nil {
			return err
		}
		if j.Drill != nil {
			if err := ValidateDrillRecipe(f+".drill", *j.Drill, j.Restart); err != nil {
				return err
			}
		}
	}
	return nil
}

// ValidateDrillRecipe checks a drill recipe against the job's restart
// recipe, which lends it jar, entry class and parallelism.
func ValidateDrillRecipe(field string, d DrillRecipe, r RestartRecipe) error {
	jar := d.Jar
	if jar == "" && r.Kind == RestartRESTJarRun {
		jar = r.Jar
	}
	if strings.TrimSpace(jar) == "" {
		return &FieldError{Field: field + ".jar", Value: d.Jar, Valid: "the job jar as a local path or hdfs:// URI (required when the restart recipe has none)"}
	}
	if d.EntryClass != "" && strings.ContainsAny(d.EntryClass, " \t\n/") {
		return &FieldError{Field: field + ".entryClass", Value: d.EntryClass, Valid: "a fully qualified Java class name such as com.example.Job"}
	}
	if d.Parallelism < 0 || d.Parallelism > maxParallelism {
		return &FieldError{Field: field + ".parallelism", Value: strconv.Itoa(d.Parallelism), Valid: fmt.Sprintf("0 (the restart recipe's or the cluster default) to %d", maxParallelism)}
	}
	if len(d.SandboxArgs) == 0 {
		return &FieldError{Field: field + ".sandboxArgs", Value: "", Valid: "the program arguments that switch the job's sinks to a discarding or sandboxed mode, e.g. [\"--sink\", \"discard\"]; a drill never runs the production recipe as it is"}
	}
	if !containsRun(d.ProgramArgs, d.SandboxArgs) {
		return &FieldError{Field: field + ".programArgs", Value: strings.Join(d.ProgramArgs, " "), Valid: "arguments that include sandboxArgs " + strings.Join(d.SandboxArgs, " ") + " in that order"}
	}
	n := 0
	for _, a := range d.ProgramArgs {
		n += len(a)
	}
	if n > maxProgramArgBytes {
		return &FieldError{Field: field + ".programArgs", Value: strconv.Itoa(n) + " bytes", Valid: fmt.Sprintf("at most %d bytes in total", maxProgramArgBytes)}
	}
	if v := d.Verify; v != nil {
		if v.EntryClass == "" || strings.ContainsAny(v.EntryClass, " \t\n/") {
			return &FieldError{Field: field + ".verify.entryClass", Value: v.EntryClass, Valid: "the verification program's fully qualified main class (required)"}
		}
	}
	for _, k := range sortedKeys(d.FlinkConfiguration) {
		if why := ReservedConfigKey(k); why != "" {
			return &FieldError{Field: field + ".flinkConfiguration." + k, Value: d.FlinkConfiguration[k], Valid: "a key other than this one: " + why}
		}
	}
	for _, v := range sortedKeys(d.FlinkVersions) {
		if !IsFlinkMinorVersion(v) {
			return &FieldError{Field: field + ".flinkVersions", Value: v, Valid: "Flink versions as major.minor, such as \"2.3\""}
		}
		built, _ := d.ForFlinkVersion(v)
		built.Verify = nil
		if err := ValidateDrillRecipe(field+".flinkVersions."+v, built, r); err != nil {
			return err
		}
	}
	return nil
}

// IsFlinkMinorVersion says v names a Flink version as major.minor
// ("2.3"), the way drill clusters and builds are keyed.
func IsFlinkMinorVersion(v string) bool { return flinkMinorVersion.MatchString(v) }

var flinkMinorVersion = regexp.MustCompile(`^[1-9][0-9]*\.[0-9]+$`)

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// containsRun says whether want appears in list as a contiguous run.
func containsRun(list, want []string) bool {
	for i := 0; i+len(want) <= len(list); i++ {
		match := true
		for k := range want {
			if list[i+k] != want[k] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// ValidateRecipe checks one restart recipe.
func ValidateRecipe(field string, r RestartRecipe) error {
	if !contains(validRestoreModes, r.RestoreMode) {
		return &FieldError{Field: field + ".restoreMode", Value: r.RestoreMode, Valid: "empty (NO_CLAIM), NO_CLAIM, CLAIM or LEGACY"}
	}
	if r.Parallelism < 0 || r.Parallelism > maxParallelism {
		return &FieldError{Field: field + ".parallelism", Value: strconv.Itoa(r.Parallelism), Valid: fmt.Sprintf("0 (the cluster default) to %d", maxParallelism)}
	}
	switch r.Kind {
	case RestartRESTJarRun:
		if strings.TrimSpace(r.Jar) == "" && strings.TrimSpace(r.JarID) == "" {
			return &FieldError{Field: field + ".jar", Value: r.Jar, Valid: "the job jar as a local path or hdfs:// URI, or jarId: a jar uploaded to the cluster (one is required for rest-jar-run)"}
		}
		if r.Jar != "" && r.JarID != "" {
			return &FieldError{Field: field + ".jarId", Value: r.JarID, Valid: "empty when jar is set (" + r.Jar + "): give the jar or the id of one uploaded to the cluster, not both"}
		}
		if r.JarID != "" && (strings.ContainsAny(r.JarID, "/ \t\n?#") || !strings.HasSuffix(r.JarID, ".jar")) {
			return &FieldError{Field: field + ".jarId", Value: r.JarID, Valid: "an id from the cluster's GET /jars, such as 5c1e..._orders.jar"}
		}
		if err := validateFlinkConfiguration(field+".flinkConfiguration", r.FlinkConfiguration); err != nil {
			return err
		}
		if r.Resource != nil {
			return &FieldError{Field: field + ".resource", Value: r.Resource.Kind + "/" + r.Resource.Name, Valid: "empty for rest-jar-run"}
		}
		if r.EntryClass != "" && strings.ContainsAny(r.EntryClass, " \t\n/") {
			return &FieldError{Field: field + ".entryClass", Value: r.EntryClass, Valid: "a fully qualified Java class name such as com.example.Job"}
		}
		n := 0
		for _, a := range r.ProgramArgs {
			n += len(a)
		}
		if n > maxProgramArgBytes {
			return &FieldError{Field: field + ".programArgs", Value: strconv.Itoa(n) + " bytes", Valid: fmt.Sprintf("at most %d bytes in total", maxProgramArgBytes)}
		}
	case RestartOperatorResume:
		if r.Resource == nil || r.Resource.Name == "" || r.Resource.Namespace == "" {
			return &FieldError{Field: field + ".resource", Value: "", Valid: "the FlinkDeployment or FlinkSessionJob (namespace and name) to resume"}
		}
		if r.Resource.Kind != KindFlinkDeployment && r.Resource.Kind != KindFlinkSessionJob {
			return &FieldError{Field: field + ".resource.kind", Value: r.Resource.Kind, Valid: "FlinkDeployment or FlinkSessionJob"}
		}
		if r.Jar != "" || r.JarID != "" || r.EntryClass != "" || len(r.ProgramArgs) > 0 || len(r.FlinkConfiguration) > 0 {
			return &FieldError{Field: field + ".jar", Value: r.Jar + r.JarID, Valid: "empty for operator-resume: the resource's spec holds jar, entry class, args and flinkConfiguration"}
		}
	default:
		return &FieldError{Field: field + ".kind", Value: string(r.Kind), Valid: string(RestartRESTJarRun) + " or " + string(RestartOperatorResume)}
	}
	return nil
}

// ReservedConfigKey says why a job configuration key may not be set by a
// recipe, or "" when it may. Checkpoint and savepoint directories belong
// to the cluster: a job that writes its state elsewhere has state no
// inventory, retention rule or quota knows of. How a savepoint is
// restored is the recipe's own restoreMode and allowNonRestoredState,
// which only a person's decision turns on; a configuration key must not
// turn it on silently.
func ReservedConfigKey(key string) string {
	switch key {
	case "state.checkpoints.dir", "execution.checkpointing.dir", "state.savepoints.dir", "execution.checkpointing.savepoint-dir",
		"state.backend.forst.primary-dir", "high-availability.storageDir", "high-availability.storage-dir":
		return "it moves the job's state away from the cluster's configured directories, where retention and quota look"
	case "execution.savepoint.path", "execution.state-recovery.path":
		return "the savepoint to restore from is chosen by flinkmaint"
	case "execution.savepoint.ignore-unclaimed-state", "execution.state-recovery.ignore-unclaimed-state":
		return "dropping unmatched state is a person's decision (allowNonRestoredState), never a standing setting"
	case "execution.savepoint-restore-mode", "execution.state-recovery.claim-mode":
		return "use the recipe's restoreMode"
	case "$internal.pipeline.job-id", "pipeline.job-id":
		return "the job id is chosen by flinkmaint, so a retried submission finds its job"
	}
	return ""
}

// validateFlinkConfiguration checks a recipe's configuration overrides.
func validateFlinkConfiguration(field string, conf map[string]string) error {
	for _, k := range sortedKeys(conf) {
		if strings.TrimSpace(k) == "" || strings.ContainsAny(k, " \t\n") {
			return &FieldError{Field: field, Value: k, Valid: "Flink configuration keys such as pipeline.object-reuse"}
		}
		if why := ReservedConfigKey(k); why != "" {
			return &FieldError{Field: field + "." + k, Value: conf[k], Valid: "not set by a recipe: " + why}
		}
	}
	return nil
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out) // stable error text
	return out
}
