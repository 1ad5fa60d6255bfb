package cleanup

import (
	"time"
)

// Action says what the executor does with an item.
type Action string

const (
	// ActionTrash moves items to a trash root outside the tenant's quota'd
	// tree (default): the namespace quota is freed and the item can be
	// moved back until the trash is purged.
	ActionTrash Action = "trash"
	// ActionDelete deletes items at once.
	ActionDelete Action = "delete"
)

// Policy defaults.
const (
	DefaultGrace           = time.Hour
	DefaultRetiredJobTTL   = 7 * 24 * time.Hour
	DefaultKeepSavepoints  = 2
	DefaultSavepointMaxAge = 7 * 24 * time.Hour
	DefaultHATTL           = 7 * 24 * time.Hour
	DefaultOrphanTTL       = 24 * time.Hour
	// DefaultFailedRestoreHold is how long a snapshot a job was seen FAILED
	// restoring from is kept after it was last seen so (worker config
	// cleanup.failedRestoreHold).
	DefaultFailedRestoreHold = 7 * 24 * time.Hour
	// DefaultMaxCheckpointTimeout is Flink's own default
	// execution.checkpointing.timeout.
	DefaultMaxCheckpointTimeout = 10 * time.Minute
)

// PinMarkerName is the file that pins the savepoint directory holding it.
const PinMarkerName = "_flinkmaint_pin"

// Policy configures the rules. Zero fields take the defaults (ApplyDefaults).
type Policy struct {
	// Grace protects anything younger: incomplete chk-N and savepoints
	// (possibly in flight) and unreferenced state files (possibly uploaded
	// for a checkpoint that has no _metadata yet). Default 1h.
	Grace time.Duration `json:"grace"`
	// RetiredJobTTL is how long the checkpoint dir of a job absent from the
	// inventory is kept after its last modification. Default 7 days.
	RetiredJobTTL time.Duration `json:"retiredJobTTL"`
	// MaxCheckpointTimeout is the longest checkpoint timeout the fleet
	// allows, jobs outside the inventory included: a job dir written more
	// recently than this may belong to a job still uploading a checkpoint,
	// so nothing in it that no _metadata names is deleted. A live job with
	// a longer timeout fails the plan. Default 10m (Flink's default).
	MaxCheckpointTimeout time.Duration `json:"maxCheckpointTimeout,omitempty"`
	// DeleteLatestRetiredCheckpoint also deletes the latest completed
	// checkpoint of a retired job when no newer savepoint of that job
	// exists. Default false: it may be the only way back.
	DeleteLatestRetiredCheckpoint bool `json:"deleteLatestRetiredCheckpoint,omitempty"`
	// KeepSavepoints is how many of the newest completed savepoints per job
	// are kept. Default 2.
	KeepSavepoints int `json:"keepSavepoints"`
	// SavepointMaxAge: savepoints younger than this are kept. Default 7 days.
	SavepointMaxAge time.Duration `json:"savepointMaxAge"`
	// HATTL is how long <ha-root>/<cluster-id> of a cluster absent from the
	// inventory is kept after its last modification. Default 7 days.
	HATTL time.Duration `json:"haTTL"`
	// OrphanTTL is how long a leftover Kubernetes object (TaskManager of a
	// gone JobManager, idle JobManager, HA ConfigMap of a gone cluster) is
	// kept after it was created or last written (an idle JobManager: after
	// its last job ended), whichever is later. Default 24h.
	OrphanTTL time.Duration `json:"orphanTTL,omitempty"`
	// IgnoreDrills lets retention delete the newest savepoint of a job
	// that passed a restore drill. Default false: it is kept, so a job
	// always keeps one savepoint proven to restore.
	IgnoreDrills bool `json:"ignoreDrills,omitempty"`
	// PinnedSavepoints are savepoint directories never deleted, in
	// addition to those holding a _flinkmaint_pin marker.
	PinnedSavepoints []string `json:"pinnedSavepoints,omitempty"`
	// Action is trash (default) or delete.
	Action Action `json:"action"`
	// OperatorSnapshots says what happens to a savepoint that no rule keeps
	// but a COMPLETED FlinkStateSnapshot names: delete (default) removes the
	// resource together with it; keep keeps the savepoint.
	OperatorSnapshots OperatorSnapshots `json:"operatorSnapshots,omitempty"`
}

// OperatorSnapshots is the policy for savepoints FlinkStateSnapshot
// resources name.
type OperatorSnapshots string

const (
	OperatorSnapshotsDelete OperatorSnapshots = "delete"
	OperatorSnapshotsKeep   OperatorSnapshots = "keep"
)

// ApplyDefaults returns p with zero fields set to the defaults.
func (p Policy) ApplyDefaults() Policy {
	if p.Grace == 0 {
		p.Grace = DefaultGrace
	}
	if p.RetiredJobTTL == 0 {
		p.RetiredJobTTL = DefaultRetiredJobTTL
	}
	if p.KeepSavepoints == 0 {
		p.KeepSavepoints = DefaultKeepSavepoints
	}
	if p.SavepointMaxAge == 0 {
		p.SavepointMaxAge = DefaultSavepointMaxAge
	}
	if p.HATTL == 0 {
		p.HATTL = DefaultHATTL
	}
	if p.OrphanTTL == 0 {
		p.OrphanTTL = DefaultOrphanTTL
	}
	if p.MaxCheckpointTimeout == 0 {
		p.MaxCheckpointTimeout = DefaultMaxCheckpointTimeout
	}
	if p.Action == "" {
		p.Action = ActionTrash
	}
	if p.OperatorSnapshots == "" {
		p.OperatorSnapshots = OperatorSnapshotsDelete
	}
	return p
}

// Validate checks a policy after ApplyDefaults.
func (p Policy) Validate() error {
	switch {
	case p.Grace < 0:
		return invalidInput("policy grace %v is negative; want a positive duration (default %v)", p.Grace, DefaultGrace)
	case p.RetiredJobTTL < 0:
		return invalidInput("policy retiredJobTTL %v is negative; want a positive duration (default %v)", p.RetiredJobTTL, DefaultRetiredJobTTL)
	case p.RetiredJobTTL > 0 && p.RetiredJobTTL < p.Grace:
		return invalidInput("policy retiredJobTTL %v is shorter than grace %v; a retired job's in-flight files would lose their protection", p.RetiredJobTTL, p.Grace)
	case p.MaxCheckpointTimeout < 0:
		return invalidInput("policy maxCheckpointTimeout %v is negative; want the longest checkpoint timeout the fleet allows (default %v)", p.MaxCheckpointTimeout, DefaultMaxCheckpointTimeout)
	case p.RetiredJobTTL > 0 && p.RetiredJobTTL < p.MaxCheckpointTimeout:
		return invalidInput("policy retiredJobTTL %v is shorter than maxCheckpointTimeout %v; a job outside the inventory still checkpointing would lose its checkpoints", p.RetiredJobTTL, p.MaxCheckpointTimeout)
	case p.KeepSavepoints < 0:
		return invalidInput("policy keepSavepoints %d is negative; want >= 1 (default %d)", p.KeepSavepoints, DefaultKeepSavepoints)
	case p.SavepointMaxAge < 0:
		return invalidInput("policy savepointMaxAge %v is negative; want a positive duration (default %v)", p.SavepointMaxAge, DefaultSavepointMaxAge)
	case p.HATTL < 0:
		return invalidInput("policy haTTL %v is negative; want a positive duration (default %v)", p.HATTL, DefaultHATTL)
	case p.OrphanTTL < 0:
		return invalidInput("policy orphanTTL %v is negative; want a positive duration such as 24h (0 takes the default %v)", p.OrphanTTL, DefaultOrphanTTL)
	}
	switch p.Action {
	case ActionTrash, ActionDelete, "":
	default:
		return invalidInput("policy action %q is not valid; want %q or %q", p.Action, ActionTrash, ActionDelete)
	}
	switch p.OperatorSnapshots {
	case OperatorSnapshotsDelete, OperatorSnapshotsKeep, "":
	default:
		return invalidInput("policy operatorSnapshots %q is not valid; want %q (remove a FlinkStateSnapshot with its savepoint) or %q (keep savepoints such a resource names)",
			p.OperatorSnapshots, OperatorSnapshotsDelete, OperatorSnapshotsKeep)
	}
	for _, s := range p.PinnedSavepoints {
		if _, err := normPath(s, ""); err != nil {
			return invalidInput("policy pinnedSavepoints entry %q: %v", s, err)
		}
	}
	return nil
}
