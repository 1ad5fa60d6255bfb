package cleanup

import (
	"path"
	"slices"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
)

// LiveJob is a job that exists in the inventory (any non-terminal state,
// including SUSPENDED and RESTARTING: its state may still be needed).
type LiveJob struct {
	JobID string `json:"jobId"`
	// RestorePath is what the job was started from (savepoint or retained
	// checkpoint: the directory or its _metadata); empty if none.
	RestorePath string `json:"restorePath,omitempty"`
	// InFlightCheckpoint is the id of a checkpoint in progress, 0 if none.
	InFlightCheckpoint int64 `json:"inFlightCheckpoint,omitempty"`
	// LatestCheckpoint is the directory of the latest completed checkpoint
	// Flink reports (what a failover restores from); empty if none yet.
	LatestCheckpoint string `json:"latestCheckpoint,omitempty"`
	// OldestPending is the trigger time of the oldest checkpoint in
	// progress: files uploaded for it have no _metadata yet. Zero if none.
	OldestPending time.Time `json:"oldestPending,omitempty"`
	// CheckpointTimeout is how long the job lets a checkpoint run; 0 when
	// unknown.
	CheckpointTimeout time.Duration `json:"checkpointTimeout,omitempty"`
	// RestoreUnknown says why what the job restores from cannot be told:
	// a job that failed while restoring names its snapshot only in its
	// exception history, and that could not be read. Its retry may
	// restore from any snapshot, so none is planned while it is listed.
	RestoreUnknown string `json:"restoreUnknown,omitempty"`
}

// LiveCluster is a cluster that exists, with its live jobs.
type LiveCluster struct {
	ClusterID string    `json:"clusterId"`
	Jobs      []LiveJob `json:"jobs,omitempty"`
	// HADir is <high-availability.storageDir>/<cluster-id> as the cluster
	// is configured; empty when it runs without file-system HA.
	HADir string `json:"haDir,omitempty"`
	// HAUnknown says the cluster's HA configuration could not be read:
	// no HA dir can be proven not to be its own.
	HAUnknown bool `json:"haUnknown,omitempty"`
	// Ended are the jobs the cluster lists as ended (globally terminal),
	// with their end times: evidence that what their job dirs got until
	// then was theirs, e.g. the checkpoints Flink removed as a job a
	// window stopped with a savepoint finished. An end is evidence only
	// for the job's dir under the cluster's CheckpointDirs: a fixed job id
	// (application mode with HA) is written by every run of the cluster-id,
	// and another cluster with that id may write it under another root.
	Ended []EndedJob `json:"ended,omitempty"`
	// CheckpointDirs are the checkpoint roots the cluster writes its jobs'
	// <jobId> dirs under (configured in the inventory or read from its
	// JobManager configuration); empty when unknown, and then its ends
	// prove nothing.
	CheckpointDirs []string `json:"checkpointDirs,omitempty"`
}

// EndedJob is a job a cluster lists as ended, and when it ended.
type EndedJob struct {
	ID string    `json:"id"`
	At time.Time `json:"at"`
	// Dirs are the job dirs Flink's checkpoint history of this job names
	// (the parents of its completed checkpoints): where it wrote, even
	// with a checkpoint dir of its own. The end is evidence for these and
	// for <CheckpointDirs>/<ID>.
	Dirs []string `json:"dirs,omitempty"`
}

// Live is the inventory as the planner needs it.
type Live struct {
	Clusters []LiveCluster `json:"clusters"`
	// Metadata holds the _metadata of every live job's restore point and
	// latest checkpoint, keyed by _metadata path, read wherever it lies.
	// An entry with an Error is a live job whose state cannot be told: the
	// plan fails rather than guess.
	Metadata map[string]MetadataResult `json:"metadata,omitempty"`
	// Records are snapshots kept on record for a restore by something
	// other than a running job: the Flink Kubernetes Operator's resources.
	// Their _metadata must be in Metadata too.
	Records []LiveRecord `json:"records,omitempty"`
	// UnknownSources say why a restore source could not be read (an
	// operator record naming a snapshot resource that cannot be
	// resolved): each may name any snapshot, so while one is listed no
	// snapshot is planned or acted on.
	UnknownSources []string `json:"unknownSources,omitempty"`
}

// UnknownRestore says why some restore source cannot be told, naming the
// first failed job by id whose restore source is unknown, else the first
// unknown source; "" when every source answered.
func (l Live) UnknownRestore() string {
	job := ""
	var why string
	for _, c := range l.Clusters {
		for _, j := range c.Jobs {
			if j.RestoreUnknown != "" && (job == "" || j.JobID < job) {
				job, why = j.JobID, j.RestoreUnknown
			}
		}
	}
	if job != "" {
		return "job " + job + " failed, and what it restores from cannot be told (" + why +
			"): a retry may restore from any snapshot, so none is deleted while its cluster lists it"
	}
	if len(l.UnknownSources) > 0 {
		src := slices.Min(l.UnknownSources)
		return "a restore source cannot be read (" + src + "): it may name any snapshot, so none is deleted until it can"
	}
	return ""
}

// snapshot says the item is a completed checkpoint or savepoint (or a job
// dir that may hold one): what a job may restore from.
func (it Item) snapshot() bool {
	return it.Rule == RuleRetiredJob && (it.Kind == KindCheckpointDir || it.Kind == KindJobDir) || it.Rule == RuleSavepointRetention
}

// LiveRecord is one snapshot on record.
type LiveRecord struct {
	Path string `json:"path"`
	// By names the record, e.g. "FlinkDeployment team-a/orders
	// status.jobStatus.upgradeSavepointPath".
	By string `json:"by"`
	// Snapshot is set when the record is a FlinkStateSnapshot resource.
	Snapshot *SnapshotRef `json:"snapshot,omitempty"`
	// Owner is the FlinkDeployment or FlinkSessionJob whose job the
	// recorded snapshot is of (for a FlinkStateSnapshot, its
	// jobReference), when known.
	Owner *inventory.ObjectRef `json:"owner,omitempty"`
	// Tenant is the tenant whose namespace holds the record; empty when no
	// tenant or several claim that namespace. A FlinkStateSnapshot is
	// deleted with its savepoint only when this is the tenant of the
	// savepoint's root: a run never deletes another tenant's resources.
	Tenant string `json:"tenant,omitempty"`
	// Run is the flinkmaint run (workflow ID) in flight that holds the
	// snapshot; empty for an operator record.
	Run string `json:"run,omitempty"`
	// FailedJob is the full id of a job flinkmaint saw FAILED restoring
	// from the snapshot, recorded after its cluster stopped listing it: a
	// retry restores from the same snapshot.
	FailedJob string `json:"failedJob,omitempty"`
}

// SnapshotRef is a FlinkStateSnapshot resource that names a snapshot.
type SnapshotRef struct {
	Ref inventory.ObjectRef `json:"ref"`
	inventory.SnapshotResource
}

// releasable says the resource records a savepoint taken (state
// COMPLETED) and is not being deleted: the one kind of record governance
// may remove together with the savepoint, when no other rule keeps it.
func (s *SnapshotRef) releasable() bool {
	return s != nil && s.Savepoint && s.State == inventory.SnapshotCompleted && !s.Deleting && s.UID != "" && s.ResourceVersion != ""
}

func (s SnapshotRef) String() string {
	return s.Ref.Kind + " " + s.Ref.Namespace + "/" + s.Ref.Name
}

func (l Live) jobs() map[string]LiveJob {
	m := map[string]LiveJob{}
	for _, c := range l.Clusters {
		for _, j := range c.Jobs {
			m[j.JobID] = j
		}
	}
	return m
}

// ended maps the job dirs that inventory clusters list a job of as ended,
// and none as live, to the latest end listed for that dir: an end listed
// by cluster C is evidence for <C's checkpoint dir>/<job id> and the dirs
// Flink's history of that job names, never for the same id under another
// root. An end of unknown time, or of a
// cluster whose checkpoint dirs are unknown or not spelled on a known file
// system, is no evidence and is left out.
func (l Live) ended(c canon) map[string]time.Time {
	live := l.jobs()
	m := map[string]time.Time{}
	add := func(e EndedJob, dir string) {
		d, err := c.path(dir)
		if err != nil {
			return
		}
		d = strings.TrimRight(d, "/")
		if _, ok := live[e.ID]; !ok && !e.At.IsZero() && path.Base(d) == e.ID && e.At.After(m[d]) {
			m[d] = e.At
		}
	}
	for _, cl := range l.Clusters {
		for _, e := range cl.Ended {
			for _, root := range cl.CheckpointDirs {
				add(e, strings.TrimRight(root, "/")+"/"+e.ID)
			}
			for _, d := range e.Dirs {
				add(e, d)
			}
		}
	}
	return m
}

// endedBy says a job dir last written at newest was written by a job that
// an inventory cluster writing that dir lists as ended by then, give or
// take the clocks' skew (PendingMargin): a write after that end is another
// writer's, such as a run of the same fixed job id started elsewhere. A
// dir of unknown write time proves nothing.
func endedBy(ended map[string]time.Time, jobDir string, newest time.Time) bool {
	at, ok := ended[jobDir]
	return ok && !newest.IsZero() && !newest.After(at.Add(PendingMargin))
}

func (l Live) clusterIDs() map[string]bool {
	m := map[string]bool{}
	for _, c := range l.Clusters {
		m[c.ClusterID] = true
	}
	return m
}

// References is what one _metadata references, in this package's own
// terms (see referencesFromMetadata): fully qualified paths.
type References struct {
	// Metadata is the _metadata file; Dir the checkpoint or savepoint dir.
	Metadata     string `json:"metadata"`
	Dir          string `json:"dir"`
	CheckpointID int64  `json:"checkpointId"`
	// Files are the referenced files, sorted.
	Files []string `json:"files"`
	// ManagedDirs are file-merging directories declared in use; everything
	// below them counts as referenced.
	ManagedDirs []string `json:"managedDirs,omitempty"`
	// Relocatable says every file the _metadata names is named relative
	// to its own dir (and lies in it): a job can restore from the snapshot
	// wherever the dir lies, a trash path included. False when any file is
	// named by absolute path or lies elsewhere, and when it was not told.
	Relocatable bool `json:"relocatable,omitempty"`
}

// MetadataResult is a parsed _metadata or why it could not be parsed.
type MetadataResult struct {
	Refs  *References `json:"refs,omitempty"`
	Error string      `json:"error,omitempty"`
}

// StateFile is one file under a job's shared/ or taskowned/.
type StateFile struct {
	Path    string    `json:"path"`
	JobDir  string    `json:"jobDir"`
	Kind    ItemKind  `json:"kind"` // KindSharedFile or KindTaskOwnedFile
	Size    int64     `json:"size"`
	ModTime time.Time `json:"modTime"`
}

// Listing is everything Gather read from storage.
type Listing struct {
	Roots  []layout.Root `json:"roots"`
	Report layout.Report `json:"report"`
	// StateFiles are all files under shared/ and taskowned/ of every job dir.
	StateFiles []StateFile `json:"stateFiles"`
	// Metadata is keyed by the _metadata path of every completed
	// checkpoint and savepoint.
	Metadata map[string]MetadataResult `json:"metadata"`
	// PinMarkers are savepoint dirs holding a _flinkmaint_pin file.
	PinMarkers []string `json:"pinMarkers,omitempty"`
	// StartedAt is when the listing began (the earliest part's start):
	// anything modified before it, less the clocks' skew, was there to be
	// listed. Zero when unknown (a listing of an earlier release).
	StartedAt time.Time `json:"startedAt,omitzero"`
}

// Input is everything BuildPlan needs. Now is an input: the planner never
// reads the clock.
type Input struct {
	Now     time.Time          `json:"now"`
	Listing Listing            `json:"listing"`
	Live    Live               `json:"live"`
	Tenants []inventory.Tenant `json:"tenants,omitempty"`
	Policy  Policy             `json:"policy"`
	// Objects are the Kubernetes leftovers detection reported in the
	// namespaces in scope; each is planned for deletion or kept.
	Objects []Object `json:"objects,omitempty"`
	// ReadOnlyKubeClusters are the Kubernetes clusters ("" the unnamed
	// one) where the worker may read objects but not delete them
	// (rbacProfile windows): there the leftovers, and the savepoints whose
	// FlinkStateSnapshot resources would be deleted with them, are kept.
	ReadOnlyKubeClusters map[string]bool `json:"readOnlyKubeClusters,omitempty"`
	// Spellings are the names of the listed file system; paths under
	// another name that lie under a scanned root fail the plan.
	Spellings Spellings `json:"spellings,omitempty"`
	// RetiredClusters are cluster ids the inventory declares gone: an HA
	// dir of one is not kept as owner-unknown.
	RetiredClusters []string `json:"retiredClusters,omitempty"`
	// References are _metadata read from reference roots outside the scope
	// (read-only): what they reference is kept, nothing in them is planned.
	References map[string]MetadataResult `json:"references,omitempty"`
	// ReferenceRoots are the reference roots on the listed file system:
	// the executor reads again what completed in them since planning.
	ReferenceRoots []layout.Root `json:"referenceRoots,omitempty"`
	// Lineage gives, per savepoint dir, the logical job it is proven to
	// belong to (tenant/cluster/job: see Owners): savepoint retention counts
	// per logical job. A completed savepoint without lineage is kept
	// (lineage-unknown).
	Lineage map[string]string `json:"lineage,omitempty"`
	// SavepointJobIDs gives, per savepoint dir, the full job id that took
	// it, where evidence proves it (flinkmaint's own record, or Flink's
	// checkpoint history naming that path).
	SavepointJobIDs map[string]string `json:"savepointJobIds,omitempty"`
	// JobLineage gives, per full job id, the logical job it is proven to be
	// a run of (a cluster's job list, or flinkmaint's own record of a
	// savepoint it took of that job).
	JobLineage map[string]string `json:"jobLineage,omitempty"`
	// Drilled are the savepoint dirs whose latest restore drill restored a
	// copy of the job and passed: the newest of each logical job is kept
	// beyond retention (unless Policy.IgnoreDrills), so every job keeps
	// a savepoint proven to restore.
	Drilled []string `json:"drilled,omitempty"`
}

// ItemKind says what a planned path is.
type ItemKind string

// Item kinds.
const (
	KindJobDir        ItemKind = "job-dir"
	KindCheckpointDir ItemKind = "checkpoint-dir"
	KindSharedFile    ItemKind = "shared-file"
	KindTaskOwnedFile ItemKind = "taskowned-file"
	KindSavepointDir  ItemKind = "savepoint-dir"
	KindHAClusterDir  ItemKind = "ha-cluster-dir"
	KindJobResult     ItemKind = "job-result"
	KindUnknown       ItemKind = "unknown"
)

// Rule names why an item is deleted.
type Rule string

// Rules.
const (
	RuleIncompleteCheckpoint Rule = "incomplete-checkpoint"
	RuleRetiredJob           Rule = "retired-job"
	RuleUnreferencedState    Rule = "unreferenced-state-file"
	RuleSavepointRetention   Rule = "savepoint-retention"
	RuleIncompleteSavepoint  Rule = "incomplete-savepoint"
	RuleRetiredHACluster     Rule = "retired-ha-cluster"
)

// Reason names why an item is kept.
type Reason string

// Keep reasons.
const (
	KeepReferenced          Reason = "referenced"
	KeepWithinGrace         Reason = "within-grace"
	KeepInFlight            Reason = "in-flight-checkpoint"
	KeepPendingUpload       Reason = "pending-checkpoint-upload"
	KeepNewerThanCheckpoint Reason = "newer-than-latest-checkpoint"
	KeepForStWorkingState   Reason = "forst-working-state-of-live-job"
	KeepLiveJob             Reason = "live-job-checkpoint"
	KeepPossiblyLive        Reason = "possibly-live-writer"
	KeepUnknownRestore      Reason = "unknown-restore-source"
	KeepWithinTTL           Reason = "within-ttl"
	KeepLatestRetired       Reason = "latest-checkpoint-of-retired-job"
	KeepRestorePoint        Reason = "restore-point-of-live-job"
	KeepOperatorRecord      Reason = "operator-record"
	KeepHeldByRun           Reason = "held-by-run-in-flight"
	KeepFailedRestore       Reason = "failed-restore-on-record"
	KeepPinned              Reason = "pinned"
	KeepNewestSavepoints    Reason = "newest-k-savepoints"
	KeepLastDrilled         Reason = "newest-drilled-savepoint"
	KeepLineageUnknown      Reason = "lineage-unknown"
	KeepWithinMaxAge        Reason = "within-max-age"
	KeepLiveCluster         Reason = "live-cluster"
	KeepHAOwnerUnknown      Reason = "owner-unknown"
	KeepUnparseable         Reason = "unparseable-metadata"
	KeepUnparseableInScope  Reason = "unparseable-metadata-in-scope"
	KeepUnknownLayout       Reason = "unknown-layout"
	KeepUnknown             Reason = "unknown-entry"
	KeepNotCovered          Reason = "no-rule-applies"
	KeepKubernetesReadOnly  Reason = "kubernetes-read-only"
)

// Item is one path to delete.
type Item struct {
	Path   string   `json:"path"`
	Kind   ItemKind `json:"kind"`
	Rule   Rule     `json:"rule"`
	Tenant string   `json:"tenant,omitempty"`
	JobID  string   `json:"jobId,omitempty"`
	// ClusterID is set for HA cluster dirs.
	ClusterID string `json:"clusterId,omitempty"`
	Files     int64  `json:"files"`
	Dirs      int64  `json:"dirs"`
	Bytes     int64  `json:"bytes"`
	// Newest is the newest modification time in the item at planning; the
	// executor refuses an item that has anything newer.
	Newest time.Time `json:"newest"`
	Detail string    `json:"detail,omitempty"`
	// Snapshots are the FlinkStateSnapshot resources that name this
	// savepoint: they are deleted with it, before it, so that no resource
	// is left pointing at nothing.
	Snapshots []SnapshotRef `json:"snapshots,omitempty"`
	// Relocatable is set for a savepoint whose _metadata names every file
	// relative to its own dir: a job can restore from its trash path.
	Relocatable bool `json:"relocatable,omitempty"`
}

// Kept is one path kept, with the reason.
type Kept struct {
	Path   string   `json:"path"`
	Kind   ItemKind `json:"kind"`
	Reason Reason   `json:"reason"`
	Tenant string   `json:"tenant,omitempty"`
	JobID  string   `json:"jobId,omitempty"`
	// By names what keeps it: the referencing _metadata, the live job,
	// the pin, the parse error.
	By    string `json:"by,omitempty"`
	Files int64  `json:"files"`
	Dirs  int64  `json:"dirs"`
	Bytes int64  `json:"bytes"`
}

// Totals counts items.
type Totals struct {
	Items int64 `json:"items"`
	Files int64 `json:"files"`
	Dirs  int64 `json:"dirs"`
	Bytes int64 `json:"bytes"`
}

// Namespace is what the items cost against a namespace quota.
func (t Totals) Namespace() int64 { return t.Files + t.Dirs }

func (t *Totals) add(files, dirs, bytes int64) {
	t.Items++
	t.Files += files
	t.Dirs += dirs
	t.Bytes += bytes
}

// TenantSummary is the per-tenant view of a plan. Tenant "" collects paths
// under no configured tenant root.
type TenantSummary struct {
	Tenant    string            `json:"tenant"`
	Reclaim   Totals            `json:"reclaim"`
	ByRule    map[Rule]Totals   `json:"byRule"`
	KeptItems map[Reason]Totals `json:"kept"`
	// Objects counts Kubernetes objects, apart from the paths above; nil
	// when the tenant has none.
	Objects *ObjectTotals `json:"objects,omitempty"`
}

// PlanVersion is the current plan format. Version 2 added Kubernetes
// objects, version 3 the FlinkStateSnapshot resources deleted with a
// savepoint: an executor that reads only an older version refuses such a
// plan rather than silently leaving them out. Version 4
// (ShardedPlanVersion) is a version 3 plan whose items are in shards; see
// Shard. BuildPlan makes version 3, Shard turns it into 4.
const PlanVersion = 3

// oldestPlanVersion is the oldest plan format the executor still runs (a
// plan made before an upgrade may wait for approval across it).
const oldestPlanVersion = 1

// Plan is the result of BuildPlan: deterministic (sorted by path) and
// JSON-serialisable.
type Plan struct {
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"createdAt"`
	// ListedAt is when the listing the plan was made from began; the
	// executor re-reads what changed since then (less the grace). Zero in
	// plans of earlier releases: CreatedAt stands in.
	ListedAt time.Time     `json:"listedAt,omitzero"`
	Policy   Policy        `json:"policy"`
	Roots    []layout.Root `json:"roots"`
	Delete   []Item        `json:"delete"`
	Keep     []Kept        `json:"keep"`
	// SeenMetadata are all _metadata files known at planning; the executor
	// parses any completed after that before acting.
	SeenMetadata []string `json:"seenMetadata"`
	// LiveJobs and LiveClusters are the inventory the plan was made with.
	LiveJobs     []string        `json:"liveJobs"`
	LiveClusters []string        `json:"liveClusters"`
	Summary      []TenantSummary `json:"summary"`
	// Objects are the Kubernetes objects to delete and KeepObjects the
	// reported leftovers kept, both sorted by path.
	Objects     []ObjectItem `json:"objects,omitempty"`
	KeepObjects []KeptObject `json:"keepObjects,omitempty"`
	// Spellings are the names of the file system the plan was made with;
	// the executor reads new references with them.
	Spellings Spellings `json:"spellings,omitempty"`
	// RetiredClusters are the clusters the inventory declared gone.
	RetiredClusters []string `json:"retiredClusters,omitempty"`
	// ReferenceRoots are checkpoint roots of jobs outside every scope on
	// the plan's file system: nothing in them is planned, and before each
	// batch the executor reads the _metadata completed in them since
	// planning, as in the plan's own roots (a job outside the inventory
	// may restore from a planned checkpoint in CLAIM mode meanwhile).
	ReferenceRoots []layout.Root `json:"referenceRoots,omitempty"`
	// Shards and KeptShards hold a sharded plan's Delete and Keep.
	Shards     []PlanShard `json:"shards,omitempty"`
	KeptShards []PlanShard `json:"keptShards,omitempty"`
}
