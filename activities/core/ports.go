package core

import (
	"context"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/notify"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// FlinkAPI is the part of the Flink REST client the activities use;
// *flink.Client implements it.
type FlinkAPI interface {
	ClusterOverview(ctx context.Context) (flink.ClusterOverview, error)
	ListJobs(ctx context.Context) ([]flink.JobOverview, error)
	JobDetails(ctx context.Context, jobID string) (flink.JobDetails, error)
	JobExceptions(ctx context.Context, jobID string, maxExceptions int) (flink.JobExceptions, error)
	Checkpoints(ctx context.Context, jobID string) (flink.CheckpointingStatistics, error)
	CheckpointConfig(ctx context.Context, jobID string) (flink.CheckpointConfig, error)
	JobManagerConfig(ctx context.Context) (flink.Config, error)
	TriggerSavepoint(ctx context.Context, jobID string, req flink.SavepointRequest) (flink.Trigger, error)
	StopWithSavepoint(ctx context.Context, jobID string, req flink.StopRequest) (flink.Trigger, error)
	SavepointStatus(ctx context.Context, jobID, triggerID string) (flink.OperationStatus, error)
	UploadJar(ctx context.Context, jarPath string) (string, error)
	UploadJarBytes(ctx context.Context, name string, jar []byte) (string, error)
	RunJar(ctx context.Context, jarID string, req flink.RunJarRequest) (flink.RunJarResult, error)
	DeleteJar(ctx context.Context, jarID string) error
	ListJars(ctx context.Context) (flink.JarList, error)
	CancelJob(ctx context.Context, jobID string) error
	JobMetrics(ctx context.Context, jobID string, names ...string) ([]flink.MetricValue, error)
	VertexMetrics(ctx context.Context, jobID, vertexID string, names ...string) ([]flink.MetricValue, error)
}

var _ FlinkAPI = (*flink.Client)(nil)

// FlinkClients hands out the client of one cluster's REST endpoint, set
// up as the worker's settings for that cluster say (TLS, credentials).
type FlinkClients interface {
	For(ctx context.Context, restURL string) (FlinkAPI, error)
}

// Storage resolves a URI (hdfs://, file://, plain path) to its file system
// and the path within it.
type Storage interface {
	Resolve(ctx context.Context, uri string) (storage.FileSystem, string, error)
	// CompareFileSystems tells whether two scheme://authority prefixes name
	// one file system (storage.authorityAliases, DNS, Hadoop nameservices).
	CompareFileSystems(ctx context.Context, base, other string) (storage.Sameness, error)
}

var _ Storage = (*storage.Resolver)(nil)

// RunRecords lists the snapshots flinkmaint's own runs in flight hold: a
// window's savepoints until the window ends, an upgrade's pre-upgrade and
// rollback savepoints. The worker reads them from Temporal.
type RunRecords interface {
	SnapshotsInUse(ctx context.Context) ([]RunSnapshot, error)
}

// RunSnapshot is one snapshot a run in flight holds.
type RunSnapshot struct {
	// Run is the workflow ID of the run.
	Run string
	// Path is the snapshot's directory (or its _metadata).
	Path string
	// What says what the run holds it for, e.g. "savepoint of job <id>".
	What string
}

// InventorySource discovers tenants, clusters and their restartable jobs.
type InventorySource interface {
	Discover(ctx context.Context) (inventory.Inventory, error)
}

// KubernetesHealth answers whether the Kubernetes API is reachable.
type KubernetesHealth interface {
	Ready(ctx context.Context) error
}

// KubernetesAccess reviews, as the worker's own identity, the RBAC
// permissions it uses in every tenant namespace.
type KubernetesAccess interface {
	CheckAccess(ctx context.Context) ([]AccessGap, error)
}

// AccessGap is what the worker lacks in one namespace ("": the cluster
// scope) of one Kubernetes cluster ("" when the inventory has one).
type AccessGap struct {
	KubeCluster, Namespace string
	// Missing are permissions runs need ("list pods"); MissingOptional
	// only governance restore needs.
	Missing, MissingOptional []string
	// ReadOnly: the cluster's RBAC profile is windows, so no delete verb
	// was asked for.
	ReadOnly bool
	// Unknown says why the rules could not be listed (they were then
	// asked one by one).
	Unknown string
}

// GovernanceMetrics receives what governance activities measure; the
// worker exports it to Prometheus (internal/metrics.Governance). Nil means
// no metrics.
type GovernanceMetrics interface {
	// QuotaSampled records a tenant's utilisation in percent per dimension
	// ("namespace", "space"); a dimension without a quota is not recorded.
	QuotaSampled(tenant, dimension string, percent float64)
	// CleanupPlanned records the latest plan of a tenant.
	CleanupPlanned(tenant string, files, bytes, unparseable int64)
	// CleanupReclaimed adds what a run reclaimed for a tenant.
	CleanupReclaimed(tenant string, files, bytes int64)
	// CleanupRestored adds what a restore put back from the trash for a
	// tenant.
	CleanupRestored(tenant string, files, bytes int64)
	// CleanupObjectsPlanned records the Kubernetes objects the latest plan
	// of a tenant would delete; CleanupObjectsRemoved adds those a run
	// removed.
	CleanupObjectsPlanned(tenant string, objects int64)
	CleanupObjectsRemoved(tenant string, objects int64)
	// UsageSampled records a tenant's stored files and bytes of one kind
	// (internal/usage), UsageNamespaceSampled its files plus directories,
	// which a namespace quota counts. Per tenant and kind only: a series
	// per job would grow with every job name.
	UsageSampled(tenant, kind string, files, bytes int64)
	UsageNamespaceSampled(tenant, kind string, namespace int64)
	// Notified counts one delivery of an event to a sink: delivered or
	// failed after its retries.
	Notified(sink, kind string, delivered bool)
	// Succeeded records the time of the last successful operation
	// (plan, execute, purge, sample).
	Succeeded(operation string, at time.Time)
	// SucceededFor records it for each tenant of the operation's scope, so
	// a tenant no scheduled run covers any more shows as stale.
	SucceededFor(operation string, tenants []string, at time.Time)
	// DecisionNotified records a notice of a decision a run (kind: window,
	// upgrade, governance) waits on: waiting since since, or answered; at
	// is the notice's time, every how often it is repeated unanswered.
	DecisionNotified(kind, decision, run string, since, at time.Time, answered bool, every time.Duration)
	// ScheduledSavepoints records a tenant's outcome of the latest
	// scheduled savepoint run: savepoints taken and jobs that failed.
	ScheduledSavepoints(tenant string, taken, failed int64)
	// RestoreDrills records a tenant's outcome of the latest drill run:
	// snapshots that passed and failed; with no failure and at least one
	// pass, at is the tenant's last successful drill.
	RestoreDrills(tenant string, passed, failed int64, at time.Time)
	// Rehearsed counts one compatibility rehearsal of a tenant's job into
	// a Flink version (major.minor) by its verdict.
	Rehearsed(tenant, flinkVersion, verdict string)
}

// OperatorControl drives Flink Kubernetes Operator resources
// (FlinkDeployment, FlinkSessionJob) through spec.job.state: the methods
// of *kube.Client over the model both share (internal/inventory), routed to
// the right Kubernetes cluster by internal/app (app.KubeOperator), which
// also turns kube's errors into *OperatorError so activities can tell a
// retry from a final failure.
type OperatorControl interface {
	// Suspend sets the job suspended with upgradeMode savepoint and waits
	// for the savepoint the operator records; idempotent.
	Suspend(ctx context.Context, ref inventory.ObjectRef, opts OperatorWait) (OperatorSuspendResult, error)
	// Resume sets the job running so the operator restores it from
	// savepointPath, and waits for RUNNING; idempotent.
	Resume(ctx context.Context, ref inventory.ObjectRef, savepointPath string, opts OperatorWait) (OperatorResumeResult, error)
	// SpecChangeInverse reads, without writing, what undoes change.
	SpecChangeInverse(ctx context.Context, ref inventory.ObjectRef, change inventory.JobSpecChange) (inventory.JobSpecChange, error)
	// ChangeJobSpec applies change to a suspended job's resource.
	ChangeJobSpec(ctx context.Context, ref inventory.ObjectRef, change inventory.JobSpecChange) (inventory.JobSpecChange, error)
	// Redeploy starts a suspended job from savepointPath, whatever
	// savepoint the operator recorded, and waits for RUNNING.
	Redeploy(ctx context.Context, ref inventory.ObjectRef, savepointPath string, opts OperatorWait) (OperatorResumeResult, error)
	// Discard suspends the job without a savepoint and waits until it
	// stopped; it returns the job state the operator reports.
	Discard(ctx context.Context, ref inventory.ObjectRef, opts OperatorWait) (string, error)
	// OperatorStatus reads what the operator reports on the resource.
	OperatorStatus(ctx context.Context, ref inventory.ObjectRef) (OperatorJobStatus, error)
	// SavepointMarks reads the savepoint records of the resource, so a
	// later Suspend can tell the savepoint it causes from older ones.
	SavepointMarks(ctx context.Context, ref inventory.ObjectRef) (OperatorSavepointMarks, error)
	// OperatorRecords lists every snapshot path the operator's resources
	// in the namespaces record (FlinkDeployment, FlinkSessionJob,
	// FlinkStateSnapshot).
	OperatorRecords(ctx context.Context, namespaces []string) ([]inventory.OperatorRecord, error)
	// ReadSnapshot and DeleteSnapshot act on the FlinkStateSnapshot
	// resources governance deletes with their savepoints; errors as
	// cleanup.SnapshotStore describes.
	cleanup.SnapshotStore
}

// OrphanControl finds and deletes leftovers of Flink clusters in Kubernetes
// (TaskManagers of gone JobManagers, idle JobManagers, HA ConfigMaps of
// gone clusters); internal/app.KubeOrphans adapts *kube.Client. Errors
// match cleanup.ErrObjectNotFound, cleanup.ErrObjectChanged (a delete
// precondition failed) or cleanup.ErrObjectsUnavailable (worth a retry).
type OrphanControl interface {
	// FindOrphans reports leftovers in namespaces. jobStates holds, per
	// "<namespace>/<cluster-id>", the states of all jobs of a cluster; a
	// JobManager is reported idle only with an entry whose jobs are all
	// globally terminal. Since is the object's last write; Tenant is left
	// for the caller.
	FindOrphans(ctx context.Context, namespaces []string, jobStates map[string][]string) ([]cleanup.Object, error)
	// ReadOrphan reads one object as JSON with its UID and resourceVersion.
	ReadOrphan(ctx context.Context, ref inventory.ObjectRef) (cleanup.ObjectSnapshot, error)
	// DeleteOrphan deletes ref only if its UID and resourceVersion still
	// match; an object already gone is not an error.
	DeleteOrphan(ctx context.Context, ref inventory.ObjectRef, uid, resourceVersion string) error
	// RecreateObject creates again, from the JSON governance trashed, an
	// HA ConfigMap or a FlinkStateSnapshot it deleted (see
	// cleanup.ObjectRecreator for the errors); changed says what differs
	// from the deleted object.
	RecreateObject(ctx context.Context, ref inventory.ObjectRef, json []byte, runID string) (changed []string, err error)
}

// Notifier delivers events to the configured sinks (internal/notify).
type Notifier interface {
	Send(ctx context.Context, ev notify.Event) []notify.Outcome
	// Probe asks every sink whether it answers, sending no notice.
	Probe(ctx context.Context) []notify.Outcome
	UILink(namespace, workflowID string) string
}
