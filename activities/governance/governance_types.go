package governance

import (
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// CleanupPolicy is the cleanup rules as activities take them; zero fields
// take the planner's defaults.
type CleanupPolicy = cleanup.Policy

// PlanCleanupInput asks for a cleanup plan of a scope.
type PlanCleanupInput struct {
	// RunID names the plan and, later, the executor run and its manifest.
	RunID  string
	Scope  core.Scope
	Policy CleanupPolicy
	// ShardItems, when > 0, writes the plan sharded: a header and shards
	// of at most this many items, which ExecuteCleanupPart runs one at a
	// time on any worker. 0 writes one plan.json (the format before
	// sharding).
	ShardItems int
	// Listings, when set, are the parts of the listing GatherCleanup
	// gathered for this run; the plan is made from them instead of
	// listing the roots itself. They must cover the scope's roots as the
	// plan sees them.
	Listings []ListingPart
}

// RuleTotals counts the items one rule selects (or one keep reason keeps).
type RuleTotals struct {
	Rule  string `json:"rule"`
	Items int64  `json:"items"`
	Files int64  `json:"files"`
	Dirs  int64  `json:"dirs"`
	Bytes int64  `json:"bytes"`
}

// TenantPlan is one tenant's share of a plan. Tenant "" collects paths
// under no tenant root. Items counts paths and Kubernetes objects; Objects
// the objects alone (ByRule lists their rules too, with no files).
type TenantPlan struct {
	Tenant string       `json:"tenant"`
	Items  int64        `json:"items"`
	Files  int64        `json:"files"`
	Dirs   int64        `json:"dirs"`
	Bytes  int64        `json:"bytes"`
	ByRule []RuleTotals `json:"byRule,omitempty"`
	Kept   []RuleTotals `json:"kept,omitempty"`
	// Unparseable counts items kept because a _metadata could not be read.
	Unparseable int64 `json:"unparseable,omitempty"`
	// Objects are Kubernetes objects planned for deletion, KeptObjects
	// reported leftovers kept (within TTL, status unknown).
	Objects     int64 `json:"objects,omitempty"`
	KeptObjects int64 `json:"keptObjects,omitempty"`
}

// PlanItemBrief is one planned deletion, for people to read.
type PlanItemBrief struct {
	Path   string `json:"path"`
	Kind   string `json:"kind"`
	Rule   string `json:"rule"`
	Tenant string `json:"tenant,omitempty"`
	Files  int64  `json:"files"`
	Bytes  int64  `json:"bytes"`
}

// MaxPlanSample bounds the items a plan summary lists: the whole plan lives
// on storage, never in workflow history.
const MaxPlanSample = 50

// ObjectBrief is one Kubernetes object of a plan or a run, for people to
// read: planned (Rule) or kept (Kept), and after execution its Outcome.
type ObjectBrief struct {
	// Path is kubernetes://[<kube-cluster>/]<namespace>/<kind>/<name>, as
	// in the manifest.
	Path string `json:"path"`
	Kind string `json:"kind"`
	// KubeCluster is the Kubernetes cluster when the inventory spans
	// several.
	KubeCluster string `json:"kubeCluster,omitempty"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	Tenant      string `json:"tenant,omitempty"`
	ClusterID   string `json:"clusterId,omitempty"`
	Rule        string `json:"rule,omitempty"`
	Kept        string `json:"kept,omitempty"`
	// Age is how long it has been a leftover at planning, e.g. "26h0m0s".
	Age     string `json:"age,omitempty"`
	Owner   string `json:"owner,omitempty"`
	Detail  string `json:"detail,omitempty"`
	Outcome string `json:"outcome,omitempty"`
}

// PlanSummary describes a plan written to storage. It is small whatever the
// plan's size; PlanPath and PlanSHA256 identify the full plan.
type PlanSummary struct {
	RunID      string          `json:"runId"`
	PlanPath   string          `json:"planPath"`
	PlanSHA256 string          `json:"planSha256"`
	CreatedAt  time.Time       `json:"createdAt"`
	Action     string          `json:"action"`
	Roots      []string        `json:"roots"`
	LiveJobs   int             `json:"liveJobs"`
	Items      int64           `json:"items"`
	Files      int64           `json:"files"`
	Dirs       int64           `json:"dirs"`
	Bytes      int64           `json:"bytes"`
	KeptItems  int             `json:"keptItems"`
	Tenants    []TenantPlan    `json:"tenants"`
	Sample     []PlanItemBrief `json:"sample,omitempty"`
	Truncated  bool            `json:"truncated,omitempty"`
	Notes      []string        `json:"notes,omitempty"`
	// Objects are the Kubernetes objects planned for deletion (counted in
	// Items too) and KeptObjects the reported leftovers kept; ObjectSample
	// lists the planned ones first, then the kept ones, up to
	// MaxPlanSample.
	Objects               int64         `json:"objects,omitempty"`
	KeptObjects           int           `json:"keptObjects,omitempty"`
	ObjectSample          []ObjectBrief `json:"objectSample,omitempty"`
	ObjectSampleTruncated bool          `json:"objectSampleTruncated,omitempty"`
	// ScopeTenants are the tenants the plan covers, with their roots.
	ScopeTenants []inventory.Tenant `json:"scopeTenants,omitempty"`
	// Shards is how many shards of items a sharded plan has (0: the plan
	// is one document); its Kubernetes objects are one more part.
	Shards int `json:"shards,omitempty"`
}

// PlanCleanupResult is the summary of the plan written to storage.
type PlanCleanupResult struct {
	Summary PlanSummary
}

// ExecuteCleanupInput carries out a plan written by PlanCleanup. The hash
// makes sure the plan executed is the one that was approved.
type ExecuteCleanupInput struct {
	RunID      string
	PlanPath   string
	PlanSHA256 string
}

// ExecuteCleanupPartInput carries out one part of a sharded plan: shard
// Shard (0-based) of its items, or, with Objects set, its Kubernetes
// objects. Parts act on disjoint items and keep their own manifest
// segments, so they can run at once on several workers.
type ExecuteCleanupPartInput struct {
	RunID      string
	PlanPath   string
	PlanSHA256 string
	Shard      int
	Objects    bool
}

// ExecuteCleanupPartResult counts one part's items by how they ended.
type ExecuteCleanupPartResult struct {
	Part    string `json:"part"`
	Total   int    `json:"total"`
	Removed int    `json:"removed"`
	Refused int    `json:"refused,omitempty"`
	Gone    int    `json:"gone,omitempty"`
	Resumed bool   `json:"resumed,omitempty"`
	// NamenodeCalls is what acting on the part's items asked of the HDFS
	// namenodes (0 for other storage).
	NamenodeCalls uint64 `json:"namenodeCalls,omitempty"`
}

// ExecuteProgress is the heartbeat of ExecuteCleanup and
// ExecuteCleanupPart.
type ExecuteProgress struct {
	RunID string `json:"runId"`
	Part  string `json:"part,omitempty"`
	Done  int    `json:"done"`
	Total int    `json:"total"`
	Last  string `json:"last,omitempty"`
}

// TenantReclaim is what one tenant got back. Items counts paths and
// Kubernetes objects; Objects the objects alone. OutcomeCount counts items
// that ended one way. Both are tallied by cleanup.TallyManifest.
type (
	TenantReclaim = cleanup.TenantReclaim
	OutcomeCount  = cleanup.OutcomeCount
)

// RecordBrief is an item the executor refused or failed, with why.
type RecordBrief struct {
	Path    string `json:"path"`
	Outcome string `json:"outcome"`
	Detail  string `json:"detail,omitempty"`
}

// ExecuteCleanupResult is what a run reclaimed, per tenant.
type ExecuteCleanupResult struct {
	RunID       string          `json:"runId"`
	ManifestDir string          `json:"manifestDir"`
	TrashRoot   string          `json:"trashRoot,omitempty"`
	Total       int             `json:"total"`
	Outcomes    []OutcomeCount  `json:"outcomes"`
	Items       int64           `json:"items"`
	Files       int64           `json:"files"`
	Dirs        int64           `json:"dirs"`
	Bytes       int64           `json:"bytes"`
	Tenants     []TenantReclaim `json:"tenants"`
	Refused     []RecordBrief   `json:"refused,omitempty"`
	// Resumed is true when an earlier attempt had already done part of it.
	Resumed bool `json:"resumed,omitempty"`
	// Objects counts the Kubernetes objects trashed or deleted (also in
	// Items); ObjectOutcomes lists the plan's objects with their outcome,
	// up to MaxPlanSample.
	Objects        int64         `json:"objects,omitempty"`
	ObjectOutcomes []ObjectBrief `json:"objectOutcomes,omitempty"`
	// SnapshotResources says what became of the FlinkStateSnapshot
	// resources deleted with savepoints, up to MaxPlanSample.
	SnapshotResources []string `json:"snapshotResources,omitempty"`
}

// PurgeTrashInput removes trash runs nothing changed in for TTL.
type PurgeTrashInput struct {
	TTL time.Duration
}

// PurgeTrashResult lists what was purged.
type PurgeTrashResult struct {
	Manifest string   `json:"manifest,omitempty"`
	Purged   []string `json:"purged,omitempty"`
	Files    int64    `json:"files"`
	Bytes    int64    `json:"bytes"`
	Kept     int      `json:"kept"`
	// Refused are the runs past the TTL that a restore source needs (a job
	// restored from a trash path), each with who needs it.
	Refused []string `json:"refused,omitempty"`
}
