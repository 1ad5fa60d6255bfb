package drills

import (
	"fmt"
	"strings"

	"github.com/flinkmaint/flinkmaint/activities/core"
)

// Drill selections: which snapshot of each job a drill proves.
const (
	// DrillLatestCheckpoint is the latest retained checkpoint of every live
	// job in scope.
	DrillLatestCheckpoint = "latest-checkpoint"
	// DrillRunSavepoints are the savepoints one window or savepoint
	// schedule run took, as the savepoint catalog records them.
	DrillRunSavepoints = "run"
	// DrillSnapshot is one named snapshot of one inventory job.
	DrillSnapshot = "snapshot"
)

// DrillSelection says what a drill run proves.
type DrillSelection struct {
	// Mode is one of DrillLatestCheckpoint (default), DrillRunSavepoints or
	// DrillSnapshot.
	Mode string `json:"mode,omitempty"`
	// RunID is the window or schedule run (mode run).
	RunID string `json:"runId,omitempty"`
	// Job (cluster/name) and Snapshot name one snapshot (mode snapshot).
	Job      string `json:"job,omitempty"`
	Snapshot string `json:"snapshot,omitempty"`
	// SamplePerTenant drills a random N of each tenant's selection; 0
	// drills every one.
	SamplePerTenant int `json:"samplePerTenant,omitempty"`
}

// SelectDrillTargetsInput selects the snapshots of one drill run.
type SelectDrillTargetsInput struct {
	Scope     core.Scope
	Selection DrillSelection
	// Restore says tier 2 runs: the worker's drill cluster and root must
	// be configured and safe.
	Restore bool
	// RunID names the drill run; drill dirs are <root>/<RunID>/<job>.
	RunID string
}

// SelectDrillTargetsResult lists the snapshots, the tenants in scope and
// the jobs in scope that have nothing to drill.
type SelectDrillTargetsResult struct {
	Targets []core.DrillTarget
	Tenants []string
	Skipped []core.SkippedJob
}

// ProveSnapshotInput names a snapshot directory.
type ProveSnapshotInput struct {
	Snapshot string
}

// StorageProblem is one file a snapshot needs that storage cannot give.
type StorageProblem struct {
	Path string `json:"path"`
	// Problem is "missing" or "short".
	Problem string `json:"problem"`
	// Need is the bytes the handles read (size, or offset+length of a
	// segment); Have is the file's size.
	Need int64 `json:"need,omitempty"`
	Have int64 `json:"have,omitempty"`
	// Operator names the operator (id, and uid or name when recorded) and
	// Subtask the subtask whose state refers to the file (-1: unknown).
	Operator string `json:"operator,omitempty"`
	Subtask  int    `json:"subtask"`
}

// StorageProof is tier 1: the snapshot's _metadata parses and every file
// it references exists with the bytes its handles read.
type StorageProof struct {
	CheckpointID int64 `json:"checkpointId,omitempty"`
	Version      int   `json:"version,omitempty"`
	// Files and Bytes count the referenced files found, _metadata included.
	Files int64 `json:"files"`
	Bytes int64 `json:"bytes"`
	// Unreadable says why the _metadata itself fails (missing, corrupt,
	// unknown version); Problems list the files that fail.
	Unreadable string           `json:"unreadable,omitempty"`
	Problems   []StorageProblem `json:"problems,omitempty"`
}

// Passed says the snapshot's storage is whole.
func (p StorageProof) Passed() bool { return p.Unreadable == "" && len(p.Problems) == 0 }

// Describe says what tier 1 found, the first few files in full, each with
// the operator and subtask that need it.
func (p StorageProof) Describe() string {
	if p.Unreadable != "" {
		return p.Unreadable
	}
	const show = 5
	var parts []string
	for i, pr := range p.Problems {
		if i == show {
			parts = append(parts, fmt.Sprintf("and %d more", len(p.Problems)-show))
			break
		}
		s := fmt.Sprintf("%s is %s", pr.Path, pr.Problem)
		if pr.Problem == "short" {
			s += fmt.Sprintf(" (%d bytes, handles read %d)", pr.Have, pr.Need)
		}
		s += ", needed by operator " + pr.Operator
		if pr.Subtask >= 0 {
			s += fmt.Sprintf(" subtask %d", pr.Subtask)
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("%d referenced files missing or short: %s", len(p.Problems), strings.Join(parts, "; "))
}

// ProveSnapshotsInput names the snapshots one activity proves (tier 1),
// e.g. a batch of a window's savepoints.
type ProveSnapshotsInput struct {
	Snapshots []string
}

// SnapshotVerdict is tier 1's finding on one snapshot, small enough to
// keep for thousands of jobs.
type SnapshotVerdict struct {
	Snapshot string `json:"snapshot"`
	Files    int64  `json:"files"`
	Bytes    int64  `json:"bytes"`
	// Failure says what fails (StorageProof.Describe); empty: passed.
	Failure string `json:"failure,omitempty"`
}

// StartDrillJobInput starts the drill copy of a job. JobID is chosen by
// the workflow, so a retry finds the job it already submitted.
type StartDrillJobInput struct {
	Target core.DrillTarget
	JobID  string
}

// StartDrillJobResult is the drill job.
type StartDrillJobResult struct {
	JobID      string
	Reattached bool
}

// VerifyDrillStateInput runs the recipe's verification program against
// the snapshot on the drill cluster, as job JobID.
type VerifyDrillStateInput struct {
	Target core.DrillTarget
	JobID  string
}

// VerifyDrillStateResult is the verification job.
type VerifyDrillStateResult struct {
	JobID string
	State string
}

// EndDrillInput cancels a drill's jobs and removes its checkpoint dir.
type EndDrillInput struct {
	DrillCluster string
	JobIDs       []string
	DrillDir     string
	// Snapshot is checked afterwards: gone means its job subsumed it
	// during the drill.
	Snapshot string
}

// EndDrillResult says what the drill left behind: nothing, once it
// returns.
type EndDrillResult struct {
	// Cancelled are the drill jobs that were still running.
	Cancelled []string `json:"cancelled,omitempty"`
	// Removed is the drill dir, when it existed.
	Removed string `json:"removed,omitempty"`
	// SnapshotGone says the drilled snapshot no longer exists.
	SnapshotGone bool `json:"snapshotGone,omitempty"`
}

// DrillRecordInput is one drilled snapshot's outcome to record.
type DrillRecordInput struct {
	Target  core.DrillTarget
	Tier    int
	Outcome string // catalog.DrillPassed, DrillFailed or DrillInconclusive
	Error   string
}

// RecordDrillRunInput records a drill run's outcomes beside each snapshot
// and in the metrics.
type RecordDrillRunInput struct {
	RunID   string
	Tenants []string
	Results []DrillRecordInput
}
