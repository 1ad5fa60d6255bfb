// Package config loads and validates the worker's configuration: defaults,
// then a YAML file, then environment variables, then command-line flags.
// Validation reports every problem at once, each naming the field, the value
// and what would be valid.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/colinmarc/hdfs/v2/hadoopconf"

	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/duration"
	"github.com/flinkmaint/flinkmaint/internal/freeze"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/kube"
	"github.com/flinkmaint/flinkmaint/internal/logging"
	"github.com/flinkmaint/flinkmaint/internal/notify"
	"github.com/flinkmaint/flinkmaint/internal/storage"
	"github.com/flinkmaint/flinkmaint/internal/temporalconn"

	"github.com/flinkmaint/flinkmaint/internal/redact"
)

// Environment variables of the worker (Temporal's are in temporalconn).
const (
	EnvConfigFile = "FLINKMAINT_CONFIG"
	EnvTaskQueue  = "FLINKMAINT_TASK_QUEUE"
	EnvHTTPListen = "FLINKMAINT_HTTP_LISTEN"
	EnvLogLevel   = "FLINKMAINT_LOG_LEVEL"
	EnvLogFormat  = "FLINKMAINT_LOG_FORMAT"
)

// DefaultTaskQueue is the queue the worker polls and the CLI starts on.
const DefaultTaskQueue = "flinkmaint"

// Config is the worker configuration. Behavioural settings of maintenance
// runs do not live here: they travel in workflow input so history records them.
type Config struct {
	Temporal  temporalconn.Options `yaml:"temporal"`
	Worker    Worker               `yaml:"worker"`
	HTTP      HTTP                 `yaml:"http"`
	Log       Log                  `yaml:"log"`
	Storage   Storage              `yaml:"storage"`
	Inventory Inventory            `yaml:"inventory"`
	Flink     Flink                `yaml:"flink"`
	Cleanup   Cleanup              `yaml:"cleanup"`
	Drill     Drill                `yaml:"drill"`
	Notify    Notify               `yaml:"notify"`
	// Freezes are blackout periods in which no window or upgrade starts
	// and scheduled governance, savepoints and drills skip their run,
	// unless a person overrides the freeze with a reason.
	Freezes []freeze.Period `yaml:"freezes"`

	// File is the configuration file Load read, "" when none: not a key.
	File string `yaml:"-"`
}

// Notify is where the people on call are told about pending decisions,
// phases, endings and quota (internal/notify).
type Notify struct {
	// UIBaseURL is the Temporal Web UI, for links to a run's page.
	UIBaseURL string `yaml:"uiBaseUrl"`
	// Timeout of one delivery attempt; default 10s.
	Timeout Duration `yaml:"timeout"`
	// Sinks are where events go: webhooks, Slack, Alertmanager.
	Sinks []notify.SinkConfig `yaml:"sinks"`
}

// Config is the notifier's configuration.
func (n Notify) Config() notify.Config {
	return notify.Config{UIBaseURL: n.UIBaseURL, Timeout: n.Timeout.D(), Sinks: n.Sinks}
}

func (n Notify) validate() []error {
	errs := n.Config().Validate()
	if n.Timeout < 0 || n.Timeout.D() > time.Minute {
		errs = append(errs, fmt.Errorf("notify.timeout=%s: use 1s..1m (0 means 10s)", n.Timeout.D()))
	}
	return errs
}

// Drill locates where restore drills restore. The storage proof (tier 1)
// needs neither field; a real restore (tier 2) needs both: set both or
// neither.
type Drill struct {
	// ClusterRESTURL is the session cluster drill jobs run on. It must not
	// be a cluster of the inventory: a drill never takes production slots.
	ClusterRESTURL string `yaml:"clusterRestUrl"`
	// Root receives the drill jobs' checkpoints,
	// <root>/<run>/<cluster>/<job>-<n>, each removed when its drill ends. It must lie under storage.writableRoots
	// and outside every tenant's tree (checked when a drill starts).
	Root string `yaml:"root"`
	// Clusters are more drill session clusters, each running the Flink
	// version it names: a compatibility rehearsal restores a job's
	// snapshot on a drill cluster of the version the job moves to (`upgrade
	// check --flink-version 2.3`, a window's policy.rehearse). Like
	// clusterRestUrl, none may be an inventory cluster; they need root.
	Clusters []DrillCluster `yaml:"clusters"`
	// REST is how the worker reaches clusterRestUrl: the keys of
	// flink.rest (tls, basicAuth, tokenFile, headers), each overriding the
	// fleet default, as an inventory cluster's own settings do.
	REST *inventory.RESTSecurity `yaml:"rest,omitempty"`
}

// DrillCluster is a drill session cluster of one Flink version.
type DrillCluster struct {
	// FlinkVersion is the cluster's Flink version as major.minor, e.g.
	// "2.3"; a rehearsal checks the cluster reports it before it uses it.
	FlinkVersion string `yaml:"flinkVersion"`
	// RESTURL is its REST endpoint.
	RESTURL string `yaml:"restUrl"`
	// REST is how the worker reaches it, as drill.rest.
	REST *inventory.RESTSecurity `yaml:"rest,omitempty"`
}

// RESTSettings are the drill clusters' own REST settings, by REST URL.
func (d Drill) RESTSettings() map[string]*inventory.RESTSecurity {
	out := map[string]*inventory.RESTSecurity{}
	if d.ClusterRESTURL != "" && d.REST != nil {
		out[d.ClusterRESTURL] = d.REST
	}
	for _, c := range d.Clusters {
		if c.REST != nil {
			out[c.RESTURL] = c.REST
		}
	}
	return out
}

// Cleanup locates what reference-safe cleanup writes: plans, trash and
// audit manifests. Each must lie under storage.writableRoots; the trash
// root must be outside every tenant's quota'd tree, or trashing frees
// nothing. They must exist: the worker warns at start of one that does
// not, and creates none.
type Cleanup struct {
	// TrashRoot receives trashed items as <trashRoot>/<run-id>/<path>.
	TrashRoot string `yaml:"trashRoot"`
	// AuditRoot holds audit manifests; default <trashRoot>/_audit.
	AuditRoot string `yaml:"auditRoot"`
	// PlanDir holds plans and governance reports, <planDir>/<run-id>/.
	PlanDir string `yaml:"planDir"`
	// ReferenceRoots are checkpoint roots of jobs outside every scope;
	// cleanup reads their retained _metadata (never writes there) and
	// keeps what they reference.
	ReferenceRoots []string `yaml:"referenceRoots"`
	// FailedRestoreHold is how long cleanup keeps a snapshot a job was
	// seen FAILED restoring from, counted from the last time flinkmaint saw
	// the job so: a retry restores from it after the cluster forgets the
	// job (jobstore.expiration-time, 1h by default) or shuts down. Unset or
	// 0 is the default, 168h; it cannot be negative.
	FailedRestoreHold Duration `yaml:"failedRestoreHold"`
}

// Storage configures how the worker reaches checkpoint storage.
type Storage struct {
	// DefaultFS serves plain paths: file:/// (default) or an hdfs:// URI.
	DefaultFS string `yaml:"defaultFS"`
	// HDFSUser is the user for simple authentication.
	HDFSUser string `yaml:"hdfsUser"`
	// HadoopConfDir holds core-site.xml/hdfs-site.xml (HA nameservices);
	// empty means $HADOOP_CONF_DIR, then $HADOOP_HOME/conf. Every
	// hdfs:// authority without a port must be a nameservice it defines;
	// with no configuration at all, name the port (hdfs://nn:8020).
	HadoopConfDir string `yaml:"hadoopConfDir"`
	// WritableRoots are the only trees the worker may write, rename or
	// delete in (manifests, reports, trash, tenant roots for cleanup).
	// The worker warns at start of one that does not exist and creates
	// none.
	WritableRoots []string `yaml:"writableRoots"`
	// RPCTimeout bounds each NameNode call, retries on the other
	// NameNode of an HA pair included.
	RPCTimeout Duration `yaml:"rpcTimeout"`
	// HDFSConnections is how many NameNode connections the worker keeps
	// per HDFS cluster, each answering one call at a time; more let a
	// cleanup run act on more items at once (1 to 32).
	HDFSConnections int `yaml:"hdfsConnections"`
	// AuthorityAliases are groups of authorities that each name one file
	// system, e.g. [[nn1.corp:8020, 10.1.2.3:8020, ns1]], for names that
	// DNS and the Hadoop configuration do not tie together.
	AuthorityAliases [][]string `yaml:"authorityAliases"`
	// Kerberos, if set, authenticates to HDFS with a keytab (or a ticket
	// cache), renewing by itself; secrets come from those files, never
	// from this text. With Kerberos leave hdfsUser empty.
	Kerberos *Kerberos `yaml:"kerberos"`
}

// Kerberos selects the worker's Kerberos credentials for HDFS.
type Kerberos struct {
	// Krb5Conf is the krb5.conf path; empty means $KRB5_CONFIG, then
	// /etc/krb5.conf.
	Krb5Conf string `yaml:"krb5Conf"`
	// Principal is user@REALM; required with keytab.
	Principal string `yaml:"principal"`
	// Keytab is the keytab file; the worker logs in from it and renews by
	// itself. Empty means the ticket cache (ccache).
	Keytab string `yaml:"keytab"`
	// CCache is a FILE: ticket cache; empty means $KRB5CCNAME.
	CCache string `yaml:"ccache"`
	// ServicePrincipal is the NameNode's principal (nn/_HOST); empty means
	// dfs.namenode.kerberos.principal from hadoopConfDir.
	ServicePrincipal string `yaml:"servicePrincipal"`
}

// Options returns the storage layer's Kerberos options, nil when unset.
func (k *Kerberos) Options() *storage.KerberosOptions {
	if k == nil {
		return nil
	}
	return &storage.KerberosOptions{Krb5Conf: k.Krb5Conf, Principal: k.Principal, Keytab: k.Keytab, CCache: k.CCache, ServicePrincipal: k.ServicePrincipal}
}

// validate checks the settings and, by storage.CheckKerberos, the files
// they name as the worker's login at start reads them: krb5.conf, the
// keytab and that it holds the principal's key, or the ticket cache. Only
// the KDC's answer is left to the start.
func (k *Kerberos) validate(hdfsUser string) []error {
	if k == nil {
		return nil
	}
	var errs []error
	if hdfsUser != "" {
		errs = append(errs, fmt.Errorf("storage.hdfsUser=%q with storage.kerberos: with Kerberos the principal is the user; remove storage.hdfsUser", hdfsUser))
	}
	if k.Keytab == "" && k.Principal != "" {
		errs = append(errs, fmt.Errorf("storage.kerberos.principal=%q without storage.kerberos.keytab: a principal is logged in from a keytab; set keytab, or remove principal to use the ticket cache", k.Principal))
		return errs
	}
	values := map[string]string{"krb5Conf": k.Krb5Conf, "principal": k.Principal, "keytab": k.Keytab, "ccache": k.CCache}
	for _, e := range storage.CheckKerberos(k.Options()) {
		key := "storage.kerberos." + e.Field
		if v := values[e.Field]; v != "" {
			key += fmt.Sprintf("=%q", v)
		} else {
			key += " is empty"
		}
		errs = append(errs, fmt.Errorf("%s: %v", key, e.Err))
	}
	return errs
}

// Inventory says where clusters are discovered.
type Inventory struct {
	// StaticFile is a YAML inventory of clusters outside Kubernetes.
	StaticFile string `yaml:"staticFile"`
	// Kubernetes discovers native Flink clusters and Flink Kubernetes
	// Operator resources; nil disables it. Restart recipes of native
	// clusters come from the JobManager Deployment's flinkmaint.io/jobs
	// annotation; a JobManager Deployment owned by a FlinkDeployment is
	// listed once, as the operator's.
	Kubernetes *kube.Config `yaml:"kubernetes"`
	// Kubeconfig is the kubeconfig file; empty means the in-cluster
	// ServiceAccount (or KUBECONFIG).
	Kubeconfig string `yaml:"kubeconfig"`
	// KubernetesClusters spans several Kubernetes clusters, each with its
	// own kubeconfig and namespaces; every tenant, cluster and object it
	// discovers is labelled with the cluster's name (trash paths too:
	// kubernetes://<name>/<namespace>/...). Exclusive with
	// kubernetes/kubeconfig. A tenant name or Flink cluster id found in two
	// Kubernetes clusters fails discovery: name tenants apart with
	// tenants[].name. Grant the RBAC of deploy/kustomize/rbac in each.
	KubernetesClusters []KubernetesCluster `yaml:"kubernetesClusters"`
}

// KubernetesCluster is one Kubernetes cluster of the inventory.
type KubernetesCluster struct {
	// Name labels the cluster in the inventory, plans and reports.
	Name string `yaml:"name"`
	// Kubeconfig is its kubeconfig file; empty means the in-cluster
	// ServiceAccount (only for the cluster the worker runs in, so at most
	// one).
	Kubeconfig string `yaml:"kubeconfig"`
	// Context is the kubeconfig context to use; empty: its current one.
	Context string `yaml:"context"`
	// Kubernetes selects its namespaces and tenants, as
	// inventory.kubernetes does for a single cluster.
	Kubernetes kube.Config `yaml:"kubernetes"`
}

// Flink configures the REST clients.
type Flink struct {
	// RequestTimeout bounds each Flink REST request.
	RequestTimeout Duration `yaml:"requestTimeout"`
	// REST is how the worker reaches every cluster's REST endpoint: TLS
	// (CA bundle, client certificate for Flink's
	// security.ssl.rest.authentication-enabled, server name), credentials
	// of a file and extra headers. A cluster's own settings (clusters[].rest
	// of the static inventory, inventory.kubernetes.restSecurity) override
	// it key by key. tls applies to https:// endpoints only; every file is
	// checked when the configuration is.
	REST inventory.RESTSecurity `yaml:"rest"`
}

// Worker tunes the Temporal worker.
type Worker struct {
	// TaskQueue is the task queue the worker polls; the CLI starts runs
	// on it.
	TaskQueue string `yaml:"taskQueue"`
	// MaxConcurrentActivities is the worker's activity slots; 0: the SDK's
	// default.
	MaxConcurrentActivities int `yaml:"maxConcurrentActivities"`
	// MaxConcurrentWorkflowTasks is the worker's workflow task slots; 0:
	// the SDK's default.
	MaxConcurrentWorkflowTasks int `yaml:"maxConcurrentWorkflowTasks"`
	// ShutdownTimeout is the time running activities get to finish on
	// SIGTERM; keep the pod's termination grace period longer.
	ShutdownTimeout Duration `yaml:"shutdownTimeout"`
	// TemporalConnectTimeout is how long the worker waits for the
	// Temporal frontend at start before it exits with code 3.
	TemporalConnectTimeout Duration `yaml:"temporalConnectTimeout"`
}

// HTTP is the listener for /healthz, /readyz, /metrics and the payload
// codec of the Web UI, /codec/.
type HTTP struct {
	// Listen is the address of /healthz, /readyz, /metrics and /codec/,
	// host:port or :port; empty disables the listener.
	Listen string `yaml:"listen"`
	// CodecTokenFile holds the token /codec/ requests must present as
	// "Authorization: Bearer <token>" (a file, so the token stays out of
	// the configuration): one line of at least 16 characters, read at
	// start, such as the output of `openssl rand -hex 32`. Without it
	// /codec/ is served only on a loopback listener.
	CodecTokenFile string `yaml:"codecTokenFile"`
	// CodecAllowOrigin is the one browser origin allowed to call /codec/
	// (the Web UI's); empty allows none.
	CodecAllowOrigin string `yaml:"codecAllowOrigin"`
}

// DefaultCodecAllowOrigin is the Web UI of the Temporal dev server.
const DefaultCodecAllowOrigin = "http://localhost:8233"

// minCodecTokenLen keeps a guessable token out of http.codecTokenFile.
const minCodecTokenLen = 16

// CodecToken reads the token of http.codecTokenFile, without surrounding
// white space; "" when no file is set. The error names the field and the
// file, never the token.
func (h HTTP) CodecToken() (string, error) {
	if h.CodecTokenFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(h.CodecTokenFile)
	if err != nil {
		return "", fmt.Errorf("http.codecTokenFile=%q cannot be read: %v", h.CodecTokenFile, err)
	}
	tok := strings.TrimSpace(string(b))
	switch {
	case tok == "":
		return "", fmt.Errorf("http.codecTokenFile=%q is empty: write a token of at least %d characters to it, such as the output of `openssl rand -hex 32`", h.CodecTokenFile, minCodecTokenLen)
	case strings.IndexFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return "", fmt.Errorf("http.codecTokenFile=%q: the token must be one line without spaces or control characters, such as the output of `openssl rand -hex 32`", h.CodecTokenFile)
	case len(tok) < minCodecTokenLen:
		return "", fmt.Errorf("http.codecTokenFile=%q holds a token of %d characters: use at least %d, such as the output of `openssl rand -hex 32`", h.CodecTokenFile, len(tok), minCodecTokenLen)
	}
	return tok, nil
}

func (h HTTP) validate() []error {
	var errs []error
	if h.Listen != "" {
		if _, _, err := net.SplitHostPort(h.Listen); err != nil {
			errs = append(errs, fmt.Errorf("http.listen=%q: use host:port or :port (empty disables the listener)", h.Listen))
		}
	}
	if _, err := h.CodecToken(); err != nil {
		errs = append(errs, err)
	}
	if o := h.CodecAllowOrigin; o != "" {
		u, err := url.Parse(o)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil:
			errs = append(errs, fmt.Errorf("http.codecAllowOrigin=%q: use the Web UI's origin, scheme://host[:port] such as %s (empty allows no browser)", o, DefaultCodecAllowOrigin))
		case u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(o, "?") || strings.HasSuffix(o, "#"):
			errs = append(errs, fmt.Errorf("http.codecAllowOrigin=%q: use the origin without a path, such as %s://%s", o, u.Scheme, u.Host))
		}
	}
	return errs
}

// Log selects level and format.
type Log struct {
	// Level is trace, debug, info, warn or error.
	Level string `yaml:"level"`
	// Format is json, or console for humans.
	Format string `yaml:"format"`
}

// Default returns the configuration used when nothing is set.
func Default() Config {
	c := Config{
		Worker: Worker{
			TaskQueue:              DefaultTaskQueue,
			ShutdownTimeout:        Duration(30 * time.Second),
			TemporalConnectTimeout: Duration(10 * time.Second),
		},
		HTTP:    HTTP{Listen: ":9090", CodecAllowOrigin: DefaultCodecAllowOrigin},
		Log:     Log{Level: "info", Format: logging.FormatJSON},
		Storage: Storage{DefaultFS: "file:///", RPCTimeout: Duration(time.Minute), HDFSConnections: storage.DefaultConnections},
		Flink:   Flink{RequestTimeout: Duration(30 * time.Second)},
		Cleanup: Cleanup{FailedRestoreHold: Duration(cleanup.DefaultFailedRestoreHold)},
	}
	c.Temporal.ApplyDefaults()
	return c
}

// Duration is a time.Duration written as "30s", "5m" or "7d" in YAML
// (internal/duration).
type Duration time.Duration

// UnmarshalYAML parses a duration and names the bad value; LoadFile's
// checkYAML has already named the key.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: %v", n.Line, &duration.Error{Value: n.Value})
	}
	v, err := duration.Parse(s)
	if err != nil {
		return fmt.Errorf("line %d: %v", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the Go duration syntax.
func (d Duration) MarshalYAML() (interface{}, error) { return time.Duration(d).String(), nil }

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// LoadFile merges a YAML file into c. Unknown keys are errors: a typo must
// not silently fall back to a default.
func (c *Config) LoadFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	// Every unknown key and every value of the wrong type, at once.
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("config file %s: %s", path, cleanYAMLError(err))
	}
	if errs := checkYAML(&doc, reflect.TypeOf(c).Elem(), ""); len(errs) > 0 {
		lines := make([]string, len(errs))
		for i, e := range errs {
			lines[i] = "  - " + e.Error()
		}
		return fmt.Errorf("config file %s:\n%s", path, strings.Join(lines, "\n"))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("config file %s: %s", path, cleanYAMLError(err))
	}
	return nil
}

var unknownFieldRE = regexp.MustCompile(`field (\S+) not found in type \S+`)

// cleanYAMLError rewrites yaml.v3's messages into the user's terms.
func cleanYAMLError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n")
	msg = strings.ReplaceAll(msg, "\n  ", "; ")
	msg = unknownFieldRE.ReplaceAllString(msg, "key \"$1\" is not a known key here (see the configuration reference in docs/configuration.md)")
	return strings.TrimSpace(msg)
}

// ApplyEnv overrides fields from environment variables that are set.
func (c *Config) ApplyEnv(getenv func(string) string) error {
	if err := c.Temporal.ApplyEnv(getenv); err != nil {
		return err
	}
	set := func(dst *string, key string) {
		if v := getenv(key); v != "" {
			*dst = v
		}
	}
	set(&c.Worker.TaskQueue, EnvTaskQueue)
	set(&c.HTTP.Listen, EnvHTTPListen)
	set(&c.Log.Level, EnvLogLevel)
	set(&c.Log.Format, EnvLogFormat)
	return nil
}

// ValidationError lists every problem found, one per line.
type ValidationError struct{ Problems []error }

func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = "  - " + p.Error()
	}
	return "invalid configuration:\n" + strings.Join(lines, "\n")
}

// Validate checks every field and returns a *ValidationError or nil.
func (c *Config) Validate() error {
	errs := c.Temporal.Validate(func(key string) string { return "temporal." + key })
	if c.Worker.TaskQueue == "" {
		errs = append(errs, errors.New("worker.taskQueue is empty: set the task queue name the worker polls"))
	}
	if c.Worker.MaxConcurrentActivities < 0 {
		errs = append(errs, fmt.Errorf("worker.maxConcurrentActivities=%d: use 0 (SDK default) or a positive number", c.Worker.MaxConcurrentActivities))
	}
	if c.Worker.MaxConcurrentWorkflowTasks < 0 {
		errs = append(errs, fmt.Errorf("worker.maxConcurrentWorkflowTasks=%d: use 0 (SDK default) or a positive number", c.Worker.MaxConcurrentWorkflowTasks))
	}
	if c.Worker.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("worker.shutdownTimeout=%s: use a positive duration such as 30s", c.Worker.ShutdownTimeout.D()))
	}
	if c.Worker.TemporalConnectTimeout <= 0 {
		errs = append(errs, fmt.Errorf("worker.temporalConnectTimeout=%s: use a positive duration such as 10s", c.Worker.TemporalConnectTimeout.D()))
	}
	errs = append(errs, c.HTTP.validate()...)
	errs = append(errs, c.Notify.validate()...)
	if _, err := freeze.New(c.Freezes); err != nil {
		errs = append(errs, err)
	}
	if _, err := logging.ParseLevel(c.Log.Level); err != nil {
		errs = append(errs, fmt.Errorf("log.level: %v", err))
	}
	if c.Log.Format != logging.FormatJSON && c.Log.Format != logging.FormatConsole {
		errs = append(errs, fmt.Errorf("log.format=%q: use %q or %q", c.Log.Format, logging.FormatJSON, logging.FormatConsole))
	}
	if c.Storage.RPCTimeout <= 0 {
		errs = append(errs, fmt.Errorf("storage.rpcTimeout=%s: use a positive duration such as 1m", c.Storage.RPCTimeout.D()))
	}
	if n := c.Storage.HDFSConnections; n < 1 || n > storage.MaxConnections {
		errs = append(errs, fmt.Errorf("storage.hdfsConnections=%d: use 1 to %d (default %d)", n, storage.MaxConnections, storage.DefaultConnections))
	}
	if c.Flink.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("flink.requestTimeout=%s: use a positive duration such as 30s", c.Flink.RequestTimeout.D()))
	}
	if err := storage.ValidateAuthorityAliases(c.Storage.AuthorityAliases); err != nil {
		errs = append(errs, fmt.Errorf("storage.authorityAliases: %v", err))
	}
	errs = append(errs, c.Storage.validate()...)
	errs = append(errs, c.Storage.validateHadoopConf(c.Cleanup)...)
	errs = append(errs, c.Storage.Kerberos.validate(c.Storage.HDFSUser)...)
	if k := c.Inventory.Kubernetes; k != nil {
		if err := k.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("inventory.kubernetes: %v", err))
		}
		if k.StaticFile != "" {
			errs = append(errs, fmt.Errorf("inventory.kubernetes.staticFile=%q: set inventory.staticFile instead (it is merged into the Kubernetes inventory)", k.StaticFile))
		}
	}
	if f := c.Inventory.Kubeconfig; f != "" {
		if _, err := os.Stat(f); err != nil {
			errs = append(errs, fmt.Errorf("inventory.kubeconfig=%q cannot be read: %v", f, err))
		}
	}
	errs = append(errs, c.Inventory.validateClusters()...)
	if f := c.Inventory.StaticFile; f != "" {
		if _, err := os.Stat(f); err != nil {
			errs = append(errs, fmt.Errorf("inventory.staticFile=%q cannot be read: %v", f, err))
		}
	}
	errs = append(errs, c.validateREST()...)
	errs = append(errs, c.Cleanup.validate(c.Storage.WritableRoots)...)
	errs = append(errs, c.Drill.validate(c.Storage.WritableRoots)...)
	errs = append(errs, c.Cleanup.validateTrash(c.Drill.Root)...)
	if len(errs) > 0 {
		return &ValidationError{Problems: errs}
	}
	return nil
}

// Schemes of the file systems the worker can reach (storage.Resolver).
var storageSchemes = map[string]bool{"file": true, "hdfs": true}

// validate checks storage.defaultFS and storage.writableRoots by the rules
// the worker applies to them when it builds its file systems
// (storage.ParseURI, storage.NewGuard), so a value they would refuse stops
// the worker here, before it contacts anything.
func (s Storage) validate() []error {
	var errs []error
	if _, err := storage.NewGuardOn(s.DefaultFS); err != nil {
		var se *storage.Error
		if errors.As(err, &se) && se.Cause != nil {
			err = se.Cause
		}
		errs = append(errs, fmt.Errorf("storage.defaultFS=%q: %v", s.DefaultFS, err))
	}
	for i, r := range s.WritableRoots {
		field := fmt.Sprintf("storage.writableRoots[%d]=%q", i, r)
		if !strings.Contains(r, "://") && !strings.HasPrefix(r, "/") {
			errs = append(errs, fmt.Errorf("%s: use an absolute path or a URI such as hdfs://nn:8020/user/app", field))
			continue
		}
		if _, err := storage.NewGuard(r); err != nil {
			var se *storage.Error
			if errors.As(err, &se) && se.Cause != nil {
				err = se.Cause
			}
			errs = append(errs, fmt.Errorf("%s: %v; use a directory such as /flinkmaint or hdfs://nn:8020/user/app", field, err))
			continue
		}
		if u, _ := storage.ParseURI(r); u.Scheme != "" && !storageSchemes[u.Scheme] {
			errs = append(errs, fmt.Errorf("%s: scheme %q is not supported; use a plain /path, file:///path or hdfs://<authority>/path", field, u.Scheme))
		}
	}
	return errs
}

// validateHadoopConf checks storage.hadoopConfDir: a directory with the
// cluster's client configuration, which defines every nameservice an
// hdfs:// URI of the configuration names without a port. Without it the
// HDFS client would take the nameservice for a host on port 8020 and the
// worker would wait on a NameNode that does not exist.
//
// With no configuration at all (hadoopConfDir, $HADOOP_CONF_DIR and
// $HADOOP_HOME/conf unset) an authority without a port cannot be told
// apart from an HA nameservice, so it must name its port.
func (s Storage) validateHadoopConf(c Cleanup) []error {
	dir, from := s.HadoopConfDir, "storage.hadoopConfDir"
	if dir == "" {
		dir, from = hadoopConfFromEnvironment()
	}
	if dir == "" {
		return s.portlessWithoutHadoopConf(c)
	}
	// A directory without site files is a deliberate empty configuration;
	// one that cannot be read is a mount that is missing.
	if entries, err := os.ReadDir(dir); err != nil {
		return []error{fmt.Errorf("%s=%q is not a readable directory (%v): point it at the HDFS cluster's client configuration, core-site.xml and hdfs-site.xml (mount it into the pod)", from, dir, err)}
	} else {
		for _, e := range entries {
			if name := e.Name(); name == "core-site.xml" || name == "hdfs-site.xml" {
				if f, err := os.Open(filepath.Join(dir, name)); err != nil {
					return []error{fmt.Errorf("%s=%q: %s cannot be read: %v", from, dir, name, err)}
				} else {
					f.Close()
				}
			}
		}
	}
	conf, err := hadoopconf.Load(dir)
	if err != nil {
		return []error{fmt.Errorf("%s=%q: %v", from, dir, err)}
	}
	var errs []error
	check := func(field, uri string) {
		u, ok := portlessHDFS(uri)
		if !ok {
			return
		}
		if conf["dfs.ha.namenodes."+u.Authority] == "" && conf["dfs.namenode.rpc-address."+u.Authority] == "" {
			errs = append(errs, fmt.Errorf("%s=%q names %q without a port, and %s=%q defines no such nameservice (dfs.ha.namenodes.%s): use the nameservice its hdfs-site.xml defines, or host:port of one NameNode",
				field, uri, u.Authority, from, dir, u.Authority))
		}
	}
	s.eachHDFSURI(c, check)
	return errs
}

// eachHDFSURI calls f with every storage URI of the configuration that can
// name an HDFS cluster, and its key path.
func (s Storage) eachHDFSURI(c Cleanup, f func(field, uri string)) {
	f("storage.defaultFS", s.DefaultFS)
	for i, r := range s.WritableRoots {
		f(fmt.Sprintf("storage.writableRoots[%d]", i), r)
	}
	for i, r := range c.ReferenceRoots {
		f(fmt.Sprintf("cleanup.referenceRoots[%d]", i), r)
	}
}

// portlessHDFS parses uri and says whether it is hdfs:// with an
// authority but no port: a nameservice, or a host on port 8020.
func portlessHDFS(uri string) (storage.URI, bool) {
	u, err := storage.ParseURI(uri)
	if err != nil || u.Scheme != "hdfs" || u.Authority == "" {
		return u, false
	}
	if _, port, err := net.SplitHostPort(u.Authority); err == nil && port != "" {
		return u, false
	}
	return u, true
}

// hadoopConfFromEnvironment is where the HDFS client looks when
// storage.hadoopConfDir is unset: $HADOOP_CONF_DIR, then
// $HADOOP_HOME/conf; "" when neither is set.
func hadoopConfFromEnvironment() (dir, from string) {
	if d := os.Getenv("HADOOP_CONF_DIR"); d != "" {
		return d, "$HADOOP_CONF_DIR"
	}
	if h := os.Getenv("HADOOP_HOME"); h != "" {
		return filepath.Join(h, "conf"), "$HADOOP_HOME/conf"
	}
	return "", ""
}

// portlessWithoutHadoopConf refuses every hdfs:// authority without a
// port when no Hadoop configuration exists: the client would dial it as
// a host on port 8020, and an HA nameservice would wait on a NameNode that
// does not exist.
func (s Storage) portlessWithoutHadoopConf(c Cleanup) []error {
	var errs []error
	s.eachHDFSURI(c, func(field, uri string) {
		u, ok := portlessHDFS(uri)
		if !ok {
			return
		}
		errs = append(errs, fmt.Errorf("%s=%q names %q without a port, and no Hadoop configuration is found (storage.hadoopConfDir, $HADOOP_CONF_DIR and $HADOOP_HOME are unset): for an HA nameservice set storage.hadoopConfDir to its client configuration (core-site.xml, hdfs-site.xml); for one NameNode write hdfs://%s:8020",
			field, uri, u.Authority, u.Authority))
	})
	return errs
}

func (c Cleanup) validate(writable []string) []error {
	var errs []error
	for _, f := range []struct{ name, v string }{{"cleanup.trashRoot", c.TrashRoot}, {"cleanup.auditRoot", c.AuditRoot}, {"cleanup.planDir", c.PlanDir}} {
		if f.v == "" {
			continue
		}
		if !strings.Contains(f.v, "://") && !strings.HasPrefix(f.v, "/") {
			errs = append(errs, fmt.Errorf("%s=%q: use an absolute path or a URI such as hdfs://nn:8020/flinkmaint/trash", f.name, f.v))
			continue
		}
		if strings.Contains("/"+f.v+"/", "/../") {
			errs = append(errs, fmt.Errorf("%s=%q: must not contain \"..\"", f.name, f.v))
			continue
		}
		if !underAny(f.v, writable) {
			errs = append(errs, fmt.Errorf("%s=%q is not under any of storage.writableRoots %v: the worker could not write there; add a writable root that contains it", f.name, f.v, writable))
		}
	}
	for i, r := range c.ReferenceRoots {
		if !strings.Contains(r, "://") && !strings.HasPrefix(r, "/") || strings.Contains("/"+r+"/", "/../") {
			errs = append(errs, fmt.Errorf("cleanup.referenceRoots[%d]=%q: use an absolute path or a URI such as hdfs://nn:8020/flink/checkpoints, without \"..\"", i, r))
		}
	}
	if c.FailedRestoreHold < 0 {
		errs = append(errs, fmt.Errorf("cleanup.failedRestoreHold=%s: use a positive duration such as 168h (the default, also taken when unset or 0); a snapshot a failed job may be retried from would go as soon as its cluster forgets the job", c.FailedRestoreHold.D()))
	}
	if c.AuditRoot != "" && c.TrashRoot == "" {
		errs = append(errs, fmt.Errorf("cleanup.auditRoot=%q is set but cleanup.trashRoot is empty: set cleanup.trashRoot too (trash is the default action)", c.AuditRoot))
	}
	return errs
}

// validateTrash keeps the trash apart from what is not trash: a purge
// removes every entry of the trash root whose name does not start with
// "_", so a reference root or the drill root that overlaps it would be
// purged (or would hold the trash), and so would an audit root or plan dir
// inside it anywhere but under such an entry.
func (c Cleanup) validateTrash(drillRoot string) []error {
	if c.TrashRoot == "" {
		return nil
	}
	var errs []error
	apart := func(field, v, what string) {
		if v != "" && (underAny(v, []string{c.TrashRoot}) || underAny(c.TrashRoot, []string{v})) {
			errs = append(errs, fmt.Errorf("%s=%q overlaps cleanup.trashRoot=%q: a purge would remove %s; use a directory outside the trash, and a trash outside it", field, v, c.TrashRoot, what))
		}
	}
	for i, r := range c.ReferenceRoots {
		apart(fmt.Sprintf("cleanup.referenceRoots[%d]", i), r, "the checkpoints of jobs outside every scope")
	}
	apart("drill.root", drillRoot, "the state of drills in flight")
	for _, f := range []struct{ name, v string }{{"cleanup.auditRoot", c.AuditRoot}, {"cleanup.planDir", c.PlanDir}} {
		if f.v == "" || !underAny(f.v, []string{c.TrashRoot}) {
			continue
		}
		rel := strings.TrimPrefix(strings.TrimRight(trashRelative(f.v, c.TrashRoot), "/"), "/")
		if rel == "" || !strings.HasPrefix(rel, "_") {
			errs = append(errs, fmt.Errorf("%s=%q is inside cleanup.trashRoot=%q where a purge would remove it; use a directory outside the trash, or one under an entry whose name starts with _ such as %s/_audit",
				f.name, f.v, c.TrashRoot, strings.TrimRight(c.TrashRoot, "/")))
		}
	}
	return errs
}

// trashRelative is p relative to the trash root it lies under (compared
// as underAny does: by path alone when either is a plain path).
func trashRelative(p, trash string) string {
	if !strings.Contains(p, "://") || !strings.Contains(trash, "://") {
		p, trash = pathOf(p), pathOf(trash)
	}
	return strings.TrimPrefix(p, strings.TrimRight(trash, "/"))
}

// pathOf is s without scheme and authority.
func pathOf(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		rest := s[i+3:]
		if j := strings.Index(rest, "/"); j >= 0 {
			return rest[j:]
		}
		return "/"
	}
	return s
}

func (d Drill) validate(writable []string) []error {
	var errs []error
	if d.ClusterRESTURL != "" {
		if u, err := url.Parse(d.ClusterRESTURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("drill.clusterRestUrl=%q: use the drill session cluster's REST URL, such as http://flink-drill:8081", redact.URL(d.ClusterRESTURL)))
		}
	}
	if d.Root != "" {
		switch {
		case !strings.Contains(d.Root, "://") && !strings.HasPrefix(d.Root, "/"):
			errs = append(errs, fmt.Errorf("drill.root=%q: use an absolute path or a URI such as hdfs://nn:8020/flinkmaint/drills", d.Root))
		case strings.Contains("/"+d.Root+"/", "/../"):
			errs = append(errs, fmt.Errorf("drill.root=%q: must not contain \"..\"", d.Root))
		case !underAny(d.Root, writable):
			errs = append(errs, fmt.Errorf("drill.root=%q is not under any of storage.writableRoots %v: the worker could not remove the drills' checkpoints; add a writable root that contains it", d.Root, writable))
		}
	}
	if (d.ClusterRESTURL == "" && len(d.Clusters) == 0) != (d.Root == "") {
		errs = append(errs, fmt.Errorf("drill.clusterRestUrl=%q and drill.root=%q: set both for real restores, or neither (storage proofs only)", d.ClusterRESTURL, d.Root))
	}
	seen := map[string]int{}
	for i, c := range d.Clusters {
		field := fmt.Sprintf("drill.clusters[%d]", i)
		if !inventory.IsFlinkMinorVersion(c.FlinkVersion) {
			errs = append(errs, fmt.Errorf("%s.flinkVersion=%q: use the cluster's Flink version as major.minor, such as \"2.3\"", field, c.FlinkVersion))
		} else if j, dup := seen[c.FlinkVersion]; dup {
			errs = append(errs, fmt.Errorf("%s.flinkVersion=%q is also drill.clusters[%d]'s: give each Flink version one drill cluster", field, c.FlinkVersion, j))
		} else {
			seen[c.FlinkVersion] = i
		}
		if u, err := url.Parse(c.RESTURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s.restUrl=%q: use the drill session cluster's REST URL, such as http://flink-drill-2-3:8081", field, redact.URL(c.RESTURL)))
		} else if strings.TrimRight(c.RESTURL, "/") == strings.TrimRight(d.ClusterRESTURL, "/") {
			errs = append(errs, fmt.Errorf("%s.restUrl=%q is drill.clusterRestUrl: list a cluster once", field, redact.URL(c.RESTURL)))
		}
	}
	return errs
}

// underAny reports whether p is a root or lies below one. A plain path is
// compared with the path part of a URI root (the default file system).
func underAny(p string, roots []string) bool {
	for _, r := range roots {
		a, b := strings.TrimRight(p, "/"), strings.TrimRight(r, "/")
		if !strings.Contains(p, "://") || !strings.Contains(r, "://") {
			a, b = strings.TrimRight(pathOf(p), "/"), strings.TrimRight(pathOf(r), "/")
		}
		if a == b || strings.HasPrefix(a, b+"/") {
			return true
		}
	}
	return false
}

// validateClusters checks inventory.kubernetesClusters.
func (inv Inventory) validateClusters() []error {
	if len(inv.KubernetesClusters) == 0 {
		return nil
	}
	var errs []error
	if inv.Kubernetes != nil || inv.Kubeconfig != "" {
		errs = append(errs, fmt.Errorf("inventory.kubernetesClusters is set together with inventory.kubernetes/kubeconfig: use one; list a single cluster under kubernetesClusters too"))
	}
	names := map[string]bool{}
	inCluster := 0
	for i, kc := range inv.KubernetesClusters {
		field := fmt.Sprintf("inventory.kubernetesClusters[%d]", i)
		switch {
		case kc.Name == "":
			errs = append(errs, fmt.Errorf("%s.name is empty: name each Kubernetes cluster (a DNS label such as east), it labels every row", field))
		case names[kc.Name]:
			errs = append(errs, fmt.Errorf("%s.name=%q is listed twice: give each Kubernetes cluster its own name", field, kc.Name))
		}
		names[kc.Name] = true
		k := kc.Kubernetes
		k.Name = kc.Name
		if err := k.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s.kubernetes: %v", field, err))
		}
		if k.StaticFile != "" || (len(k.Namespaces) == 0 && k.NamespaceSelector == "") {
			errs = append(errs, fmt.Errorf("%s.kubernetes: set namespaces or namespaceSelector (and inventory.staticFile, not kubernetes.staticFile, for clusters outside Kubernetes)", field))
		}
		if kc.Kubeconfig == "" {
			inCluster++
		} else if _, err := os.Stat(kc.Kubeconfig); err != nil {
			errs = append(errs, fmt.Errorf("%s.kubeconfig=%q cannot be read: %v", field, kc.Kubeconfig, err))
		}
	}
	if inCluster > 1 {
		errs = append(errs, fmt.Errorf("inventory.kubernetesClusters: %d clusters have no kubeconfig; only the cluster the worker runs in may use its ServiceAccount", inCluster))
	}
	return errs
}

// validateREST checks flink.rest and every cluster's own REST settings the
// configuration reaches (the static inventory's clusters[].rest,
// inventory.kubernetes[Clusters].restSecurity), files included: a CA
// bundle, key pair, token or password the worker could not use stops it
// here, not at the first window.
func (c *Config) validateREST() []error {
	errs := fieldErrors(append(c.Flink.REST.Validate("flink.rest"), c.Flink.REST.CheckFiles("flink.rest")...))
	drill := map[string]*inventory.RESTSecurity{"drill.rest": c.Drill.REST}
	for i := range c.Drill.Clusters {
		drill[fmt.Sprintf("drill.clusters[%d].rest", i)] = c.Drill.Clusters[i].REST
	}
	for _, field := range sortedKeys(drill) {
		if r := drill[field]; r != nil {
			errs = append(errs, fieldErrors(append(r.Validate(field), r.CheckFiles(field)...))...)
		}
	}
	if c.Drill.REST != nil && c.Drill.ClusterRESTURL == "" {
		errs = append(errs, fmt.Errorf("drill.rest is set but drill.clusterRestUrl is empty: set the drill cluster's URL, or drop drill.rest"))
	}
	kubes := map[string]*kube.Config{}
	if c.Inventory.Kubernetes != nil {
		kubes["inventory.kubernetes"] = c.Inventory.Kubernetes
	}
	for i := range c.Inventory.KubernetesClusters {
		kubes[fmt.Sprintf("inventory.kubernetesClusters[%d].kubernetes", i)] = &c.Inventory.KubernetesClusters[i].Kubernetes
	}
	for _, field := range sortedKeys(kubes) {
		k := kubes[field]
		for _, key := range sortedKeys(k.RESTSecurity) {
			// kube.Config.Validate checks the rest of each entry.
			errs = append(errs, fieldErrors(k.RESTSecurity[key].CheckFiles(field+".restSecurity["+key+"]"))...)
		}
	}
	if f := c.Inventory.StaticFile; f != "" {
		if _, err := os.Stat(f); err == nil {
			st, err := inventory.LoadStatic(f)
			if err != nil {
				errs = append(errs, fmt.Errorf("inventory.staticFile=%q: %v", f, err))
			}
			for i, cl := range st.Clusters {
				if cl.REST != nil {
					errs = append(errs, fieldErrors(cl.REST.CheckFiles(fmt.Sprintf("inventory.staticFile %s: clusters[%d].rest", f, i)))...)
				}
			}
		}
	}
	return errs
}

// fieldErrors words inventory field errors as the configuration's others.
func fieldErrors(errs []error) []error {
	out := make([]error, len(errs))
	for i, err := range errs {
		var fe *inventory.FieldError
		if errors.As(err, &fe) {
			err = fmt.Errorf("%s=%q: want %s", fe.Field, fe.Value, fe.Valid)
		}
		out[i] = err
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
