package core

import (
	"time"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// ResumeJobInput resumes an operator-managed job from SavepointPath, the
// savepoint SuspendJob returned. Timeout bounds the wait for RUNNING.
type ResumeJobInput struct {
	Job           JobTarget
	SavepointPath string
	Timeout       time.Duration
}

// CancelJobInput names a job to cancel.
type CancelJobInput struct {
	RESTURL string
	JobID   string
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

// RestartJobResult is the restarted job.
type RestartJobResult struct {
	JobID      string
	Reattached bool
}
