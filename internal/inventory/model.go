// Package inventory is the model of what flinkmaint maintains: tenants,
// Flink clusters and their jobs, where their state lives and how each job
// is brought back from a savepoint. It is pure data, shared by the adapters
// that discover it (Kubernetes, static file), the activities and the
// workflows. The model itself uses only the standard library; static.go
// loads the static inventory file.
package inventory

import "strings"

// Source says where a cluster was discovered.
type Source string

const (
	SourceNativeKubernetes Source = "kubernetes-native" // Flink's native Kubernetes integration
	SourceOperator         Source = "flink-operator"    // Flink Kubernetes Operator resources
	SourceStatic           Source = "static"            // the static inventory file
)

// DeploymentMode is how the cluster runs its jobs.
type DeploymentMode string

const (
	ModeSession     DeploymentMode = "session"     // long-running cluster, jobs submitted to it
	ModeApplication DeploymentMode = "application" // one cluster per application
	ModeSessionJob  DeploymentMode = "session-job" // Operator FlinkSessionJob on a session cluster
)

// Tenant is one team: one Kubernetes namespace (empty for static clusters)
// and one HDFS root holding its state under a namespace quota.
type Tenant struct {
	Name      string `json:"name" yaml:"name"`
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	// KubeCluster names the Kubernetes cluster of the namespace when the
	// inventory spans several; empty with one.
	KubeCluster string `json:"kubeCluster,omitempty" yaml:"kubeCluster,omitempty"`
	// Root is the tenant's quota'd directory, e.g. hdfs://nn:8020/user/app/team-a.
	Root string `json:"root" yaml:"root"`
}

// ObjectRef names a Kubernetes object.
type ObjectRef struct {
	APIVersion string `json:"apiVersion" yaml:"apiVersion"`
	Kind       string `json:"kind" yaml:"kind"`
	Namespace  string `json:"namespace" yaml:"namespace"`
	Name       string `json:"name" yaml:"name"`
	// KubeCluster names the Kubernetes cluster the object lives in when the
	// inventory spans several; empty with one.
	KubeCluster string `json:"kubeCluster,omitempty" yaml:"kubeCluster,omitempty"`
}

// NamespaceKey is the namespace qualified by its Kubernetes cluster.
func (r ObjectRef) NamespaceKey() string { return NamespaceKey(r.KubeCluster, r.Namespace) }

// NamespaceKey names a namespace across Kubernetes clusters:
// "<kube-cluster>/<namespace>", or the namespace alone when the inventory
// has one unnamed cluster. Namespace names hold no '/'.
func NamespaceKey(kubeCluster, namespace string) string {
	if kubeCluster == "" {
		return namespace
	}
	return kubeCluster + "/" + namespace
}

// SplitNamespaceKey undoes NamespaceKey.
func SplitNamespaceKey(key string) (kubeCluster, namespace string) {
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[:i], key[i+1:]
	}
	return "", key
}

// Cluster is one Flink cluster (one JobManager / REST endpoint).
type Cluster struct {
	Tenant    string `json:"tenant" yaml:"tenant"`
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	// KubeCluster names the Kubernetes cluster it runs in when the
	// inventory spans several; empty with one, and for static clusters.
	KubeCluster string         `json:"kubeCluster,omitempty" yaml:"kubeCluster,omitempty"`
	ClusterID   string         `json:"clusterId" yaml:"clusterId"`
	Source      Source         `json:"source" yaml:"source"`
	Mode        DeploymentMode `json:"mode" yaml:"mode"`
	RESTURL     string         `json:"restUrl" yaml:"restUrl"`
	// Storage locations from the cluster's Flink configuration, as URIs.
	CheckpointDir string `json:"checkpointDir,omitempty" yaml:"checkpointDir,omitempty"`
	SavepointDir  string `json:"savepointDir,omitempty" yaml:"savepointDir,omitempty"`
	HAStorageDir  string `json:"haStorageDir,omitempty" yaml:"haStorageDir,omitempty"`
	FlinkVersion  string `json:"flinkVersion,omitempty" yaml:"flinkVersion,omitempty"`
	// Resource is the Kubernetes object that owns the cluster (JobManager
	// Deployment or FlinkDeployment); nil for static clusters.
	Resource *ObjectRef `json:"resource,omitempty" yaml:"resource,omitempty"`
	// Jobs are the jobs this inventory knows how to restart, by name.
	Jobs []JobSpec `json:"jobs,omitempty" yaml:"jobs,omitempty"`
	// REST is how the worker reaches RESTURL when that takes more than the
	// fleet default (flink.rest): the cluster's own CA, client certificate
	// or credentials. Worker-side only: never recorded with the inventory
	// in a workflow's history.
	REST *RESTSecurity `json:"-" yaml:"rest,omitempty"`
}

// RestartKind says how a job is brought back from a savepoint.
type RestartKind string

const (
	// RestartOperatorResume sets the Operator resource back to running; the
	// operator restores from the savepoint it recorded at suspend.
	RestartOperatorResume RestartKind = "operator-resume"
	// RestartRESTJarRun runs the job's jar through the cluster's REST API
	// with savepointPath set.
	RestartRESTJarRun RestartKind = "rest-jar-run"
)

// RestartRecipe is everything needed to start a job again from a savepoint.
type RestartRecipe struct {
	Kind RestartKind `json:"kind" yaml:"kind"`
	// For rest-jar-run: the jar as a path the worker can read (local or
	// hdfs://), its entry class, program arguments and parallelism.
	Jar                   string   `json:"jar,omitempty" yaml:"jar,omitempty"`
	EntryClass            string   `json:"entryClass,omitempty" yaml:"entryClass,omitempty"`
	ProgramArgs           []string `json:"programArgs,omitempty" yaml:"programArgs,omitempty"`
	Parallelism           int      `json:"parallelism,omitempty" yaml:"parallelism,omitempty"`
	AllowNonRestoredState bool     `json:"allowNonRestoredState,omitempty" yaml:"allowNonRestoredState,omitempty"`
	// RestoreMode is NO_CLAIM (default), CLAIM or LEGACY.
	RestoreMode string `json:"restoreMode,omitempty" yaml:"restoreMode,omitempty"`
	// JarID, instead of Jar, names a jar already uploaded to the cluster
	// (GET /jars): it is run as it is and never deleted.
	JarID string `json:"jarId,omitempty" yaml:"jarId,omitempty"`
	// FlinkConfiguration sets job configuration keys at submission (the jar
	// run's flinkConfiguration). Keys that move state or decide how it is
	// restored are refused (ReservedConfigKey): they stay with the cluster
	// and the recipe's own fields.
	FlinkConfiguration map[string]string `json:"flinkConfiguration,omitempty" yaml:"flinkConfiguration,omitempty"`
	// For operator-resume: the FlinkDeployment or FlinkSessionJob.
	Resource *ObjectRef `json:"resource,omitempty" yaml:"resource,omitempty"`
}

// JobSpec is a job the inventory knows by name. A job's ID changes when it
// is restarted from a savepoint; its name and cluster identify it across a
// maintenance window.
type JobSpec struct {
	Name    string        `json:"name" yaml:"name"`
	Restart RestartRecipe `json:"restart" yaml:"restart"`
	// Drill is how a restore drill starts a copy of the job; nil means the
	// job gets the storage proof only, never a real restore.
	Drill *DrillRecipe `json:"drill,omitempty" yaml:"drill,omitempty"`
	// DrainOnStop overrides the window's policy.savepoint.drain for this
	// job: true stops it with drain (MAX_WATERMARK first, every event-time
	// timer fires), false never drains it; unset follows the window.
	DrainOnStop *bool `json:"drainOnStop,omitempty" yaml:"drainOnStop,omitempty"`
}

// DrillRecipe starts a copy of a job on the drill cluster, from one of its
// snapshots, with its side effects switched off. It is its own recipe, not
// the production one: a drill must never write to production sinks, so the
// recipe names the arguments that make the copy harmless (SandboxArgs),
// and they must appear in ProgramArgs.
type DrillRecipe struct {
	// Jar, EntryClass and Parallelism default to the restart recipe's.
	Jar         string   `json:"jar,omitempty" yaml:"jar,omitempty"`
	EntryClass  string   `json:"entryClass,omitempty" yaml:"entryClass,omitempty"`
	ProgramArgs []string `json:"programArgs" yaml:"programArgs"`
	Parallelism int      `json:"parallelism,omitempty" yaml:"parallelism,omitempty"`
	// SandboxArgs are the arguments, in order, that switch the job's sinks
	// to a discarding or sandboxed mode, e.g. ["--sink", "discard"].
	SandboxArgs []string `json:"sandboxArgs" yaml:"sandboxArgs"`
	// Verify optionally runs a program (e.g. a State Processor API job)
	// against the snapshot; the drill passes only if it finishes.
	Verify *DrillVerify `json:"verify,omitempty" yaml:"verify,omitempty"`
	// FlinkConfiguration sets job configuration keys of the copy, as a
	// restart recipe's do; the keys ReservedConfigKey refuses stay with the
	// drill cluster.
	FlinkConfiguration map[string]string `json:"flinkConfiguration,omitempty" yaml:"flinkConfiguration,omitempty"`
	// FlinkVersions are the job's builds for other Flink versions, by
	// major.minor ("2.3"): a migration rehearsal restores the job's
	// snapshot with the build of the version the fleet moves to. Unset
	// fields keep this recipe's; programArgs, when given, must include
	// sandboxArgs too.
	FlinkVersions map[string]DrillBuild `json:"flinkVersions,omitempty" yaml:"flinkVersions,omitempty"`
}

// DrillBuild is a job's build for another Flink version.
type DrillBuild struct {
	Jar         string   `json:"jar,omitempty" yaml:"jar,omitempty"`
	EntryClass  string   `json:"entryClass,omitempty" yaml:"entryClass,omitempty"`
	ProgramArgs []string `json:"programArgs,omitempty" yaml:"programArgs,omitempty"`
	Parallelism int      `json:"parallelism,omitempty" yaml:"parallelism,omitempty"`
}

// ForFlinkVersion returns the recipe with the build for version applied;
// false when it names none.
func (d DrillRecipe) ForFlinkVersion(version string) (DrillRecipe, bool) {
	b, ok := d.FlinkVersions[version]
	if !ok {
		return d, false
	}
	out := d
	out.FlinkVersions = nil
	if b.Jar != "" {
		out.Jar = b.Jar
	}
	if b.EntryClass != "" {
		out.EntryClass = b.EntryClass
	}
	if b.ProgramArgs != nil {
		out.ProgramArgs = append([]string{}, b.ProgramArgs...)
	}
	if b.Parallelism != 0 {
		out.Parallelism = b.Parallelism
	}
	return out, true
}

// DrillVerify is a batch program run on the drill cluster whose success
// (the job FINISHED) decides a state assertion. "{snapshot}" in an
// argument is replaced by the snapshot's path.
type DrillVerify struct {
	Jar         string   `json:"jar,omitempty" yaml:"jar,omitempty"`
	EntryClass  string   `json:"entryClass" yaml:"entryClass"`
	ProgramArgs []string `json:"programArgs,omitempty" yaml:"programArgs,omitempty"`
}

// SnapshotPlaceholder in a verify argument stands for the snapshot path.
const SnapshotPlaceholder = "{snapshot}"

// Kinds of the Flink Kubernetes Operator's resources.
const (
	KindFlinkDeployment    = "FlinkDeployment"
	KindFlinkSessionJob    = "FlinkSessionJob"
	KindFlinkStateSnapshot = "FlinkStateSnapshot"
)

// OperatorRecord is a snapshot path the Flink Kubernetes Operator keeps in
// one of its resources: a savepoint or checkpoint it may restore from
// (resume, resubmitting a failed job, blue/green) or that a user
// registered with it.
type OperatorRecord struct {
	Resource ObjectRef `json:"resource"`
	// Field names where the path is written, e.g.
	// "status.jobStatus.upgradeSavepointPath".
	Field string `json:"field"`
	Path  string `json:"path"`
	// Snapshot is set when the record is a FlinkStateSnapshot: what the
	// resource says of itself, so that governance can remove the resource
	// together with the savepoint it names.
	Snapshot *SnapshotResource `json:"snapshot,omitempty"`
	// Unknown says why the snapshot the field names cannot be told (a
	// reference to a FlinkStateSnapshot that does not exist or has no
	// path yet); Path is empty then.
	Unknown string `json:"unknown,omitempty"`
}

// SnapshotResource is a FlinkStateSnapshot as governance judges it.
type SnapshotResource struct {
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion"`
	// State is status.state: COMPLETED, IN_PROGRESS, TRIGGER_PENDING,
	// FAILED or ABANDONED (FlinkStateSnapshotStatus.State).
	State string `json:"state,omitempty"`
	// Savepoint says spec.savepoint is set; otherwise it records a
	// checkpoint.
	Savepoint bool `json:"savepoint"`
	// DisposeOnDelete is spec.savepoint.disposeOnDelete, true when absent
	// (SavepointSpec's default): the operator disposes of the savepoint
	// when the resource is deleted.
	DisposeOnDelete bool `json:"disposeOnDelete,omitempty"`
	// Deleting says the resource has a deletionTimestamp.
	Deleting bool `json:"deleting,omitempty"`
	// Path is status.path.
	Path string `json:"path,omitempty"`
	// JobKind and JobName are spec.jobReference: the FlinkDeployment or
	// FlinkSessionJob (in the same namespace) the snapshot was taken of.
	JobKind string `json:"jobKind,omitempty"`
	JobName string `json:"jobName,omitempty"`
}

// SnapshotCompleted is the FlinkStateSnapshot state of a snapshot taken.
const SnapshotCompleted = "COMPLETED"

// Inventory is the result of discovery.
type Inventory struct {
	Tenants  []Tenant  `json:"tenants"`
	Clusters []Cluster `json:"clusters"`
	// RetiredClusters are cluster ids declared gone for good: their HA dirs
	// may be cleaned up even while some live cluster's HA configuration
	// cannot be read.
	RetiredClusters []string `json:"retiredClusters,omitempty"`
}
