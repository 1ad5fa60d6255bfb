package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/drills"
)

// Workflow types of restore drills.
const (
	// RestoreDrillWorkflowType proves, for every snapshot selected, that it
	// would restore: tier 1 checks its files on storage, tier 2 restores a
	// copy of the job on the drill cluster.
	RestoreDrillWorkflowType = "RestoreDrill"
	// JobDrillWorkflowType drills one snapshot; a child of RestoreDrill.
	JobDrillWorkflowType = "JobDrill"
)

// Values of SearchAttrKind for drills.
const (
	KindDrill    = "drill"
	KindDrillJob = "drill-job"
)

// DrillStatusQuery returns a running drill's report so far.
const DrillStatusQuery = "drill-status"

// RestoreDrillWorkflowID is the ID of a one-off drill run.
func RestoreDrillWorkflowID(name string) string { return "drill-" + name }

// JobDrillWorkflowID reads in the UI as <run>/<cluster>/<job>/<n>; n tells
// two snapshots of one job apart.
func JobDrillWorkflowID(runID, jobKey string, n int) string {
	return fmt.Sprintf("%s/%s/%d", runID, jobKey, n)
}

// RestoreDrillInput selects the snapshots and how deep the proof goes.
type RestoreDrillInput struct {
	// Schedule names the schedule that starts the runs, if any.
	Schedule string `json:"schedule,omitempty"`
	// OverrideFreeze lets the drill run inside a freeze.
	OverrideFreeze *FreezeOverride       `json:"overrideFreeze,omitempty"`
	Scope          core.Scope            `json:"scope"`
	Selection      drills.DrillSelection `json:"selection"`
	// Tier is 1 (storage proof only) or 2 (also a real restore of every
	// job with a drill recipe; default).
	Tier int `json:"tier,omitempty"`
	// Concurrency bounds the snapshots drilled at once (default 2: each
	// real restore takes slots on the drill cluster).
	Concurrency int `json:"concurrency,omitempty"`
	// RunningTimeout, CheckpointTimeout and Soak say what healthy means for
	// a drill job, as for a window's restart (defaults 5m, 5m, 30s).
	RunningTimeout    Duration `json:"runningTimeout,omitempty"`
	CheckpointTimeout Duration `json:"checkpointTimeout,omitempty"`
	Soak              Duration `json:"soak,omitempty"`
}

// ApplyDefaults fills in unset fields.
func (in *RestoreDrillInput) ApplyDefaults() {
	setInt(&in.Tier, 2)
	setInt(&in.Concurrency, 2)
	setStr(&in.Selection.Mode, drills.DrillLatestCheckpoint)
	if in.RunningTimeout == 0 {
		in.RunningTimeout = Duration(5 * time.Minute)
	}
	if in.CheckpointTimeout == 0 {
		in.CheckpointTimeout = Duration(5 * time.Minute)
	}
	if in.Soak == 0 {
		in.Soak = Duration(30 * time.Second)
	}
}

// Validate names every field that is out of range.
func (in *RestoreDrillInput) Validate() error {
	var problems []string
	if in.Tier != 1 && in.Tier != 2 {
		problems = append(problems, fmt.Sprintf("tier=%d: use 1 (storage proof) or 2 (storage proof and a real restore)", in.Tier))
	}
	if in.Concurrency < 1 || in.Concurrency > 64 {
		problems = append(problems, fmt.Sprintf("concurrency=%d: use 1..64", in.Concurrency))
	}
	for _, f := range []struct {
		name string
		d    Duration
		min  time.Duration
	}{{"runningTimeout", in.RunningTimeout, 10 * time.Second}, {"checkpointTimeout", in.CheckpointTimeout, 10 * time.Second}, {"soak", in.Soak, 0}} {
		if f.d.D() < f.min || f.d.D() > 24*time.Hour {
			problems = append(problems, fmt.Sprintf("%s=%s: use %s..24h", f.name, f.d.D(), f.min))
		}
	}
	sel := in.Selection
	switch sel.Mode {
	case drills.DrillLatestCheckpoint:
	case drills.DrillRunSavepoints:
		if sel.RunID == "" {
			problems = append(problems, "selection run needs runId: the window or savepoint schedule run whose savepoints to drill")
		}
	case drills.DrillSnapshot:
		if !strings.Contains(sel.Job, "/") || sel.Snapshot == "" {
			problems = append(problems, fmt.Sprintf("selection snapshot needs job (cluster/name, got %q) and snapshot (got %q)", sel.Job, sel.Snapshot))
		}
	default:
		problems = append(problems, fmt.Sprintf("selection mode %q: use %s, %s or %s", sel.Mode, drills.DrillLatestCheckpoint, drills.DrillRunSavepoints, drills.DrillSnapshot))
	}
	if sel.SamplePerTenant < 0 {
		problems = append(problems, fmt.Sprintf("samplePerTenant=%d: use 0 (all) or a positive number", sel.SamplePerTenant))
	}
	problems = append(problems, in.Scope.GlobProblems()...)
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// JobDrillInput drills one snapshot.
type JobDrillInput struct {
	RunID  string           `json:"runId"`
	N      int              `json:"n"`
	Target core.DrillTarget `json:"target"`
	Tier   int              `json:"tier"`
	Health RestartPolicy    `json:"health"`
}

// DrillRestore is what tier 2 saw.
type DrillRestore struct {
	JobID          string `json:"jobId,omitempty"`
	RestoredFrom   string `json:"restoredFrom,omitempty"`
	CheckpointID   int64  `json:"checkpointId,omitempty"`
	CheckpointPath string `json:"checkpointPath,omitempty"`
	// Verified says the recipe's verification program finished.
	Verified bool `json:"verified,omitempty"`
}

// JobDrillResult is one snapshot's outcome.
type JobDrillResult struct {
	Key      string `json:"key"`
	Tenant   string `json:"tenant"`
	Snapshot string `json:"snapshot"`
	Kind     string `json:"kind"`
	// Tier is the deepest tier that ran.
	Tier    int                  `json:"tier"`
	Storage *drills.StorageProof `json:"storage,omitempty"`
	Restore *DrillRestore        `json:"restore,omitempty"`
	// Outcome is passed, failed or inconclusive (catalog.Drill*).
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
	// Note says why a tier did not run.
	Note string `json:"note,omitempty"`
	// Cleanup is what the drill removed after itself.
	Cleanup *drills.EndDrillResult `json:"cleanup,omitempty"`
}

// RestoreDrillReport is a drill run's result.
type RestoreDrillReport struct {
	RunID      string            `json:"runId"`
	Schedule   string            `json:"schedule,omitempty"`
	Tier       int               `json:"tier"`
	StartedAt  time.Time         `json:"startedAt"`
	FinishedAt time.Time         `json:"finishedAt,omitempty"`
	Jobs       []JobDrillResult  `json:"jobs"`
	Skipped    []core.SkippedJob `json:"skipped,omitempty"`
	// Frozen says a freeze was in force: the run skipped, or it was
	// overridden.
	Frozen       string   `json:"frozen,omitempty"`
	Tenants      []string `json:"tenants,omitempty"`
	Passed       int      `json:"passed"`
	Failed       int      `json:"failed"`
	Inconclusive int      `json:"inconclusive"`
	// Running counts the snapshots still being drilled.
	Running int `json:"running,omitempty"`
}
