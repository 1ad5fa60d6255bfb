package windows

import (
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
)

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
