package inventory

import (
	"fmt"
	"time"
)

// The Flink Kubernetes Operator's control model: what a suspend or resume
// is asked and answers. The kube adapter fills it and the activities read
// it, so it lives here, where both can import it.

// OperatorWait bounds how long a suspend or resume waits for the operator.
type OperatorWait struct {
	// Timeout for the operator to reach the wanted state; default 10m.
	Timeout time.Duration
	// PollInterval between status reads; default 2s.
	PollInterval time.Duration
	// Known (Suspend only) are the savepoint records read before the first
	// suspend attempt (SavepointMarks). With them, a retry that finds the
	// resource already suspended still waits for a savepoint newer than
	// these, instead of accepting an older one the status still shows.
	Known *SavepointMarks
}

// SavepointMarks are the savepoint records of a resource at one moment.
type SavepointMarks struct {
	UpgradeSavepointPath string   `json:"upgradeSavepointPath,omitempty"`
	LastSavepoint        string   `json:"lastSavepoint,omitempty"`
	LastSavepointMillis  int64    `json:"lastSavepointMillis,omitempty"`
	Snapshots            []string `json:"snapshots,omitempty"` // COMPLETED savepoint FlinkStateSnapshot names
}

// OperatorStatus is what the operator reports on a resource.
type OperatorStatus struct {
	SpecState            string // spec.job.state
	UpgradeMode          string // spec.job.upgradeMode
	InitialSavepointPath string // spec.job.initialSavepointPath
	LifecycleState       string // status.lifecycleState
	JobState             string // status.jobStatus.state
	JobID                string
	UpgradeSavepointPath string
	LastSavepoint        string
	LastSavepointMillis  int64
	// JobManagerDeploymentStatus is READY when a JobManager answers;
	// MISSING after a suspend deleted it (FKO's JobManagerDeploymentStatus).
	JobManagerDeploymentStatus string
	// ReconciledUpgradeMode and ReconciledState are job.upgradeMode and
	// job.state of status.reconciliationStatus.lastReconciledSpec: what
	// the operator last acted on.
	ReconciledUpgradeMode string
	ReconciledState       string
	Error                 string // status.error
	ResourceVersion       string
}

func (s OperatorStatus) String() string {
	return fmt.Sprintf("spec.job.state=%q lifecycleState=%q jobStatus.state=%q upgradeSavepointPath=%q lastSavepoint=%q error=%q",
		s.SpecState, s.LifecycleState, s.JobState, s.UpgradeSavepointPath, s.LastSavepoint, truncate(s.Error, 300))
}

// truncate shortens s to n bytes for a message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// SuspendResult is the outcome of Suspend.
type SuspendResult struct {
	Resource      ObjectRef
	SavepointPath string
	// SavepointSource says which status field or snapshot held it.
	SavepointSource string
	JobState        string
	// AlreadySuspended: spec.job.state was suspended before the call.
	AlreadySuspended bool
	// ConflictRetries counts updates rejected for a stale resourceVersion.
	ConflictRetries int
}

// ResumeResult is the outcome of Resume.
type ResumeResult struct {
	Resource      ObjectRef
	SavepointPath string
	JobState      string
	// SetInitialSavepointPath: the operator recorded no upgrade savepoint,
	// so spec.job.initialSavepointPath was set to SavepointPath.
	SetInitialSavepointPath bool
	AlreadyRunning          bool
	ConflictRetries         int
}

// JobSpecChange is what an upgrade changes in a FlinkDeployment's or
// FlinkSessionJob's spec while the job is suspended. Empty fields are left
// as they are; Unset removes flinkConfiguration keys (a change's inverse
// uses it for keys that did not exist).
type JobSpecChange struct {
	// Image is spec.image (FlinkDeployment only).
	Image string `json:"image,omitempty"`
	// JarURI, Args (nil keeps them; empty clears them) and Parallelism are
	// in spec.job.
	JarURI      string   `json:"jarURI,omitempty"`
	Args        []string `json:"args,omitempty"`
	Parallelism int      `json:"parallelism,omitempty"`
	// FlinkConfiguration keys are set in spec.flinkConfiguration.
	FlinkConfiguration map[string]string `json:"flinkConfiguration,omitempty"`
	Unset              []string          `json:"unset,omitempty"`
}

// Validate refuses configuration keys a change may not set or remove
// (ReservedConfigKey): they move state or decide how it is restored.
func (c JobSpecChange) Validate(field string) error {
	if err := validateFlinkConfiguration(field+".flinkConfiguration", c.FlinkConfiguration); err != nil {
		return err
	}
	for _, k := range c.Unset {
		if why := ReservedConfigKey(k); why != "" {
			return &FieldError{Field: field + ".unset", Value: k, Valid: "not removed by an upgrade: " + why}
		}
	}
	return nil
}

// Empty says the change changes nothing.
func (c JobSpecChange) Empty() bool {
	return c.Image == "" && c.JarURI == "" && c.Args == nil && c.Parallelism == 0 && len(c.FlinkConfiguration) == 0 && len(c.Unset) == 0
}
