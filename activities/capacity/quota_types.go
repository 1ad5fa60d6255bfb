package capacity

import (
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// SampleQuotaInput samples the tenants of a scope (or the given tenants).
type SampleQuotaInput struct {
	Scope           core.Scope
	Tenants         []inventory.Tenant
	WarningPercent  float64
	CriticalPercent float64
	// ProjectRestart also projects the restart of the running jobs in scope
	// against each tenant's headroom.
	ProjectRestart bool
	SafetyMargin   float64
}

// SampleQuotaResult is one sample per tenant, taken at At.
type SampleQuotaResult struct {
	At      time.Time     `json:"at"`
	Tenants []TenantQuota `json:"tenants"`
}

// LoadQuotaSamplesInput names a samples document written by a quota watch.
type LoadQuotaSamplesInput struct {
	Path string
}

// QuotaSample is one point of a tenant's usage series.
type QuotaSample struct {
	At        time.Time `json:"at"`
	Namespace int64     `json:"namespace"`
	Space     int64     `json:"space"`
}

// TenantSeries is a tenant's samples, oldest first.
type TenantSeries struct {
	Tenant  string        `json:"tenant"`
	Samples []QuotaSample `json:"samples"`
}

// QuotaSamplesDoc is the samples document a quota watch keeps on storage.
type QuotaSamplesDoc struct {
	Tenants []TenantSeries `json:"tenants"`
}

// LoadQuotaSamplesResult is the document; Found is false if it does not
// exist yet.
type LoadQuotaSamplesResult struct {
	Doc   QuotaSamplesDoc
	Found bool
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
