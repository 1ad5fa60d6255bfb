package activities

import (
	"fmt"
	"path"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// Scope selects what a maintenance window or governance run covers. Empty
// lists mean "all". Job patterns are path.Match globs on the job name.
type Scope struct {
	// Tenants are the tenants in scope; empty: every tenant.
	Tenants []string `json:"tenants,omitempty" yaml:"tenants,omitempty"`
	// Clusters are the Flink clusters (cluster ids) in scope; empty: every
	// cluster of those tenants.
	Clusters []string `json:"clusters,omitempty" yaml:"clusters,omitempty"`
	// IncludeJobs are globs on job names; when set, only matching jobs are
	// in scope.
	IncludeJobs []string `json:"includeJobs,omitempty" yaml:"includeJobs,omitempty"`
	// ExcludeJobs are globs on job names taken out of scope, even when
	// includeJobs matches them.
	ExcludeJobs []string `json:"excludeJobs,omitempty" yaml:"excludeJobs,omitempty"`
}

// GlobProblems names every job pattern of the scope that is not a valid
// path.Match glob.
func (s Scope) GlobProblems() []string {
	var out []string
	for _, p := range append(append([]string{}, s.IncludeJobs...), s.ExcludeJobs...) {
		if _, err := path.Match(p, ""); err != nil {
			out = append(out, fmt.Sprintf("scope job pattern %q is not a valid glob: %v", p, err))
		}
	}
	return out
}

// JobTarget is one running job a window stops and restarts. Key
// (cluster/job-name) identifies it across the window; the Flink job ID
// changes when it is restarted.
type JobTarget struct {
	Key       string `json:"key"`
	Tenant    string `json:"tenant"`
	ClusterID string `json:"clusterId"`
	// KubeCluster is the Kubernetes cluster the job runs in when the
	// inventory spans several.
	KubeCluster   string                  `json:"kubeCluster,omitempty"`
	RESTURL       string                  `json:"restUrl"`
	JobName       string                  `json:"jobName"`
	JobID         string                  `json:"jobId"`
	CheckpointDir string                  `json:"checkpointDir,omitempty"`
	SavepointDir  string                  `json:"savepointDir,omitempty"`
	Restart       inventory.RestartRecipe `json:"restart"`
	// Drillable says the inventory has a drill recipe for the job, so a
	// window can drill its savepoint as the canary.
	Drillable bool `json:"drillable,omitempty"`
	// DrillBuilds are the Flink versions (major.minor) the drill recipe
	// has a build of the job for, for a migration rehearsal.
	DrillBuilds []string `json:"drillBuilds,omitempty"`
	// DrainOnStop is the inventory's per-job drain setting, if any.
	DrainOnStop *bool `json:"drainOnStop,omitempty"`
}

// Label is the job's key, prefixed by its Kubernetes cluster when the
// inventory spans several.
func (t JobTarget) Label() string {
	if t.KubeCluster == "" {
		return t.Key
	}
	return t.KubeCluster + "/" + t.Key
}

// SkippedJob is a job in scope that the window leaves alone, and why.
type SkippedJob struct {
	Key    string `json:"key"`
	JobID  string `json:"jobId"`
	Reason string `json:"reason"`
}

// DiscoverJobsInput selects the jobs.
type DiscoverJobsInput struct {
	Scope Scope
	// SavepointOnly selects running jobs without a restart recipe too: a
	// savepoint that does not stop the job needs none.
	SavepointOnly bool `json:",omitempty"`
}

// DiscoverJobsResult lists the tenants in scope, the jobs to maintain and
// the jobs left alone.
type DiscoverJobsResult struct {
	Tenants  []inventory.Tenant
	Clusters []inventory.Cluster
	Jobs     []JobTarget
	Skipped  []SkippedJob
	// Unresolved names every entry of the scope that selects nothing (see
	// unresolvedScope), each with what the inventory has instead. A window
	// refuses such a scope; other callers may ignore it.
	Unresolved []string `json:",omitempty"`
}

// TenantQuota is one tenant root's usage, watermark and, when asked, the
// projected cost of restarting its jobs.
type TenantQuota struct {
	Tenant         string  `json:"tenant"`
	Root           string  `json:"root"`
	NamespaceUsed  int64   `json:"namespaceUsed"`
	NamespaceQuota int64   `json:"namespaceQuota"` // -1: none
	SpaceUsed      int64   `json:"spaceUsed"`
	SpaceQuota     int64   `json:"spaceQuota"` // -1: none
	Percent        float64 `json:"percent"`
	Level          string  `json:"level"` // ok, warning, critical
	Reason         string  `json:"reason,omitempty"`
	// Restart projection, when requested.
	ProjectedFiles int64  `json:"projectedFiles,omitempty"`
	Headroom       int64  `json:"headroom"`
	RestartAllowed bool   `json:"restartAllowed"`
	GateReason     string `json:"gateReason,omitempty"`
}

// CheckQuotaInput asks for the quota of tenants and, when Restart lists
// jobs, whether their restart fits.
type CheckQuotaInput struct {
	Tenants          []inventory.Tenant
	WarningPercent   float64
	CriticalPercent  float64
	Restart          []RestartFootprintInput
	SafetyMargin     float64
	DefaultRetention int
}

// RestartFootprintInput is a job whose restart is projected: its old job's
// checkpoint dir is measured, unless Measured says what an earlier
// measurement found; its savepoint's file count is known.
type RestartFootprintInput struct {
	Key            string
	Tenant         string
	CheckpointDir  string // <checkpoint root>/<old job id>
	NumRetained    int
	SavepointFiles int64
	// Measured is the footprint measured while the job ran. A job stopped
	// with a savepoint has FINISHED, and Flink discards a finished job's
	// checkpoints: measured after the stop, its dir tells nothing.
	Measured *Footprint `json:",omitempty"`
}

// Footprint is what one checkpoint of a job costs in namespace: on
// average (FilesPerCheckpoint), and when it is a full one
// (FullCheckpointFiles), as the first after a NO_CLAIM restore is.
type Footprint struct {
	Key                 string
	FilesPerCheckpoint  int64
	FullCheckpointFiles int64
}

// CheckQuotaResult has one entry per tenant, in input order, and the
// footprint of every job in CheckQuotaInput.Restart, in input order.
type CheckQuotaResult struct {
	Tenants    []TenantQuota
	Footprints []Footprint `json:",omitempty"`
}

// StopWithSavepointInput stops one job. TriggerID is chosen by the workflow
// so a retried activity re-attaches to the same Flink operation.
type StopWithSavepointInput struct {
	Job       JobTarget
	TriggerID string
	// TargetDir overrides the job's savepoint dir.
	TargetDir string
	Format    string // CANONICAL or NATIVE
	// Drain stops the job with drain: sources end, MAX_WATERMARK fires
	// every event-time timer, then the savepoint is taken.
	Drain bool `json:",omitempty"`
	// RunID names the window, recorded in the savepoint catalog.
	RunID string `json:",omitempty"`
}

// StopWithSavepointResult is where the savepoint landed.
type StopWithSavepointResult struct {
	SavepointPath string
	Reattached    bool
	// Recovered says how the savepoint was found when Flink no longer knew
	// the stop operation (its cache expired, its JobManager failed over)
	// but the job had finished with it; empty when Flink reported it.
	Recovered string `json:",omitempty"`
	// Format is the savepoint's format, CANONICAL or NATIVE; FormatNote
	// says why it is not the one asked for (a ForSt job takes NATIVE only).
	Format     string `json:",omitempty"`
	FormatNote string `json:",omitempty"`
}

// VerifySavepointInput names a savepoint to check.
type VerifySavepointInput struct {
	Path string
}

// VerifySavepointResult says what the savepoint holds.
type VerifySavepointResult struct {
	CheckpointID int64
	Version      int
	Files        int64 // files the _metadata references, plus _metadata itself
	Bytes        int64
	Operators    int
}

// WriteDocumentInput writes a small document (manifest, report) durably.
type WriteDocumentInput struct {
	Path    string
	Content []byte
}

// WriteDocumentResult echoes where it was written.
type WriteDocumentResult struct {
	Path  string
	Bytes int
}

// ProbeEndpointsInput lists what must answer before a window goes on.
type ProbeEndpointsInput struct {
	StorageRoots []string
	FlinkURLs    []string
	Kubernetes   bool
}

// ProbeEndpointsResult reports what answered.
type ProbeEndpointsResult struct {
	Checked []string
}

// RestartJobInput restores one job from its savepoint. NewJobID is chosen
// by the workflow, so a retried activity finds the job it already submitted.
type RestartJobInput struct {
	Job           JobTarget
	SavepointPath string
	NewJobID      string
}

// RestartJobResult is the restarted job.
type RestartJobResult struct {
	JobID      string
	Reattached bool
}

// AwaitHealthyInput sets what healthy means for a restarted job.
type AwaitHealthyInput struct {
	RESTURL           string
	JobID             string
	SavepointPath     string
	RunningTimeout    time.Duration
	CheckpointTimeout time.Duration
	Soak              time.Duration
	// CheckpointDir, when set, is where the job's checkpoints must land (a
	// drill's own dir); a checkpoint elsewhere fails the job.
	CheckpointDir string `json:",omitempty"`
	// Checks are read at the end of the soak; each must pass.
	Checks []MetricCheck `json:",omitempty"`
}

// AwaitHealthyResult is the proof of health.
type AwaitHealthyResult struct {
	RestoredFrom   string
	CheckpointID   int64
	CheckpointPath string
	RunningAt      time.Time
	CheckpointAt   time.Time
	Readings       []MetricReading `json:",omitempty"`
}
