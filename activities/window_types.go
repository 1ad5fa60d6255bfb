package activities

import (
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

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
	Job           core.JobTarget
	SavepointPath string
	NewJobID      string
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
