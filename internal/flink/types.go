package flink

import "time"

// Struct tags: `json` is the wire name; `flink:"since=X.Y"` marks a field
// that first appears in Flink X.Y, and `flink:"extra"` one that Flink sends
// but its generated OpenAPI spec does not list. The contract test reads them.

// JobState is Flink's JobStatus.
type JobState string

// Job states.
const (
	JobInitializing JobState = "INITIALIZING"
	JobCreated      JobState = "CREATED"
	JobRunning      JobState = "RUNNING"
	JobFailing      JobState = "FAILING"
	JobFailed       JobState = "FAILED"
	JobCancelling   JobState = "CANCELLING"
	JobCanceled     JobState = "CANCELED"
	JobFinished     JobState = "FINISHED"
	JobRestarting   JobState = "RESTARTING"
	JobSuspended    JobState = "SUSPENDED"
	JobReconciling  JobState = "RECONCILING"
)

// IsGloballyTerminal reports FINISHED, CANCELED and FAILED: the job is over
// for good and its checkpoints may be cleaned up per retention policy.
func (s JobState) IsGloballyTerminal() bool {
	return s == JobFinished || s == JobCanceled || s == JobFailed
}

// IsLocallyTerminal reports SUSPENDED: this JobManager stopped the job, but
// it can be recovered (HA), so its state must be kept.
func (s JobState) IsLocallyTerminal() bool { return s == JobSuspended }

// IsTerminal reports a globally or locally terminal state.
func (s JobState) IsTerminal() bool { return s.IsGloballyTerminal() || s.IsLocallyTerminal() }

// IsRunning reports RUNNING.
func (s JobState) IsRunning() bool { return s == JobRunning }

// IsKnown reports whether s is a state Flink documents.
func (s JobState) IsKnown() bool {
	switch s {
	case JobInitializing, JobCreated, JobRunning, JobFailing, JobFailed, JobCancelling,
		JobCanceled, JobFinished, JobRestarting, JobSuspended, JobReconciling:
		return true
	}
	return false
}

// millis converts Flink's epoch milliseconds; zero or negative (Flink uses
// -1 for "not yet") gives the zero time.
func millis(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// ClusterOverview is GET /overview.
type ClusterOverview struct {
	TaskManagers        int    `json:"taskmanagers"`
	SlotsTotal          int    `json:"slots-total"`
	SlotsAvailable      int    `json:"slots-available"`
	SlotsFreeAndBlocked int    `json:"slots-free-and-blocked"`
	TaskManagersBlocked int    `json:"taskmanagers-blocked"`
	JobsRunning         int    `json:"jobs-running"`
	JobsFinished        int    `json:"jobs-finished"`
	JobsCancelled       int    `json:"jobs-cancelled"`
	JobsFailed          int    `json:"jobs-failed"`
	FlinkVersion        string `json:"flink-version"`
	FlinkCommit         string `json:"flink-commit"`
}

// DashboardConfig is GET /config.
type DashboardConfig struct {
	FlinkVersion    string            `json:"flink-version"`
	FlinkRevision   string            `json:"flink-revision"`
	RefreshInterval int64             `json:"refresh-interval"`
	TimezoneName    string            `json:"timezone-name"`
	TimezoneOffset  int64             `json:"timezone-offset"`
	Features        DashboardFeatures `json:"features"`
}

// DashboardFeatures are the web UI feature flags.
type DashboardFeatures struct {
	WebSubmit  bool `json:"web-submit"`
	WebCancel  bool `json:"web-cancel"`
	WebRescale bool `json:"web-rescale"`
	WebHistory bool `json:"web-history"`
}

// ConfigEntry is one key/value of /jobmanager/config and
// /jobs/{jobid}/jobmanager/config.
type ConfigEntry struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Config is an effective configuration.
type Config []ConfigEntry

// Get returns the value of the first key present, so callers can pass a
// key and its deprecated aliases.
func (c Config) Get(keys ...string) (string, bool) {
	for _, k := range keys {
		for _, e := range c {
			if e.Key == k {
				return e.Value, true
			}
		}
	}
	return "", false
}

// Well-known configuration keys, newest name first.
var (
	KeysCheckpointDir = []string{"execution.checkpointing.dir", "state.checkpoints.dir"}
	KeysSavepointDir  = []string{"execution.checkpointing.savepoint-dir", "state.savepoints.dir"}
	KeysNumRetained   = []string{"execution.checkpointing.num-retained", "state.checkpoints.num-retained"}
	KeysHAStorageDir  = []string{"high-availability.storageDir"}
	KeysHAClusterID   = []string{"high-availability.cluster-id", "kubernetes.cluster-id"}
)

type jobsOverviewResponse struct {
	Jobs []JobOverview `json:"jobs"`
}

// JobOverview is one entry of GET /jobs/overview.
type JobOverview struct {
	ID               string         `json:"jid"`
	Name             string         `json:"name"`
	State            JobState       `json:"state"`
	StartTime        int64          `json:"start-time"`
	EndTime          int64          `json:"end-time"`
	Duration         int64          `json:"duration"`
	LastModification int64          `json:"last-modification"`
	Tasks            map[string]int `json:"tasks"`
	PendingOperators int            `json:"pending-operators" flink:"since=2.0"`
}

// Started returns the start time.
func (j JobOverview) Started() time.Time { return millis(j.StartTime) }

// Ended returns the end time, zero while the job runs.
func (j JobOverview) Ended() time.Time { return millis(j.EndTime) }

type jobStatusResponse struct {
	Status JobState `json:"status"`
}

// JobDetails is GET /jobs/{jobid}.
type JobDetails struct {
	ID               string             `json:"jid"`
	Name             string             `json:"name"`
	IsStoppable      bool               `json:"isStoppable"`
	State            JobState           `json:"state"`
	JobType          string             `json:"job-type"`
	StartTime        int64              `json:"start-time"`
	EndTime          int64              `json:"end-time"`
	Duration         int64              `json:"duration"`
	MaxParallelism   int64              `json:"maxParallelism"`
	Now              int64              `json:"now"`
	Timestamps       map[JobState]int64 `json:"timestamps"`
	Vertices         []JobVertex        `json:"vertices"`
	StatusCounts     map[string]int     `json:"status-counts"`
	PendingOperators int                `json:"pending-operators" flink:"since=2.0"`
}

// JobVertex is one vertex of JobDetails.
type JobVertex struct {
	ID             string         `json:"id"`
	Name           string         `json:"name"`
	MaxParallelism int            `json:"maxParallelism"`
	Parallelism    int            `json:"parallelism"`
	Status         string         `json:"status"`
	StartTime      int64          `json:"start-time"`
	EndTime        int64          `json:"end-time"`
	Duration       int64          `json:"duration"`
	Tasks          map[string]int `json:"tasks"`
}

// JobExceptions is GET /jobs/{jobid}/exceptions (history part only; the
// deprecated 1.20 top-level fields are ignored).
type JobExceptions struct {
	History ExceptionHistory `json:"exceptionHistory"`
}

// ExceptionHistory lists the most recent root exceptions.
type ExceptionHistory struct {
	Entries   []RootException `json:"entries"`
	Truncated bool            `json:"truncated"`
}

// RootException is a failure that caused a restart, with the exceptions
// that happened at the same time.
type RootException struct {
	ExceptionName        string            `json:"exceptionName"`
	Stacktrace           string            `json:"stacktrace"`
	Timestamp            int64             `json:"timestamp"`
	TaskName             string            `json:"taskName"`
	Endpoint             string            `json:"endpoint"`
	TaskManagerID        string            `json:"taskManagerId"`
	FailureLabels        map[string]string `json:"failureLabels"`
	ConcurrentExceptions []ExceptionInfo   `json:"concurrentExceptions"`
}

// ExceptionInfo is one concurrent exception.
type ExceptionInfo struct {
	ExceptionName string            `json:"exceptionName"`
	Stacktrace    string            `json:"stacktrace"`
	Timestamp     int64             `json:"timestamp"`
	TaskName      string            `json:"taskName"`
	Endpoint      string            `json:"endpoint"`
	TaskManagerID string            `json:"taskManagerId"`
	FailureLabels map[string]string `json:"failureLabels"`
}

// CheckpointingStatistics is GET /jobs/{jobid}/checkpoints.
type CheckpointingStatistics struct {
	Counts  CheckpointCounts       `json:"counts"`
	Latest  LatestCheckpoints      `json:"latest"`
	History []CheckpointStatistics `json:"history"`
}

// CheckpointCounts are the checkpoint counters since the job (re)started.
type CheckpointCounts struct {
	Restored   int64 `json:"restored"`
	Total      int64 `json:"total"`
	InProgress int64 `json:"in_progress"`
	Completed  int64 `json:"completed"`
	Failed     int64 `json:"failed"`
}

// LatestCheckpoints holds the newest checkpoint of each kind; nil when none.
type LatestCheckpoints struct {
	Completed *CheckpointStatistics `json:"completed"`
	Savepoint *CheckpointStatistics `json:"savepoint"`
	Failed    *CheckpointStatistics `json:"failed"`
	Restored  *RestoredCheckpoint   `json:"restored"`
}

// RestoredCheckpoint tells what the job was restored from, if anything.
type RestoredCheckpoint struct {
	ID               int64  `json:"id"`
	RestoreTimestamp int64  `json:"restore_timestamp"`
	IsSavepoint      bool   `json:"is_savepoint"`
	ExternalPath     string `json:"external_path"`
}

// RestoreTime returns when the restore happened.
func (r RestoredCheckpoint) RestoreTime() time.Time { return millis(r.RestoreTimestamp) }

// Checkpoint statistics kinds (the className discriminator).
const (
	CheckpointKindCompleted  = "completed"
	CheckpointKindFailed     = "failed"
	CheckpointKindInProgress = "in_progress"
)

// CheckpointStatistics is one checkpoint or savepoint. Flink sends one of
// three shapes (className completed, failed, in_progress); the fields of all
// three are merged here and the absent ones stay zero.
type CheckpointStatistics struct {
	ClassName               string `json:"className"`
	ID                      int64  `json:"id"`
	Status                  string `json:"status"`
	IsSavepoint             bool   `json:"is_savepoint"`
	SavepointFormat         string `json:"savepointFormat"`
	CheckpointType          string `json:"checkpoint_type"`
	TriggerTimestamp        int64  `json:"trigger_timestamp"`
	LatestAckTimestamp      int64  `json:"latest_ack_timestamp"`
	CheckpointedSize        int64  `json:"checkpointed_size"`
	StateSize               int64  `json:"state_size"`
	EndToEndDuration        int64  `json:"end_to_end_duration"`
	AlignmentBuffered       int64  `json:"alignment_buffered"`
	ProcessedData           int64  `json:"processed_data"`
	PersistedData           int64  `json:"persisted_data"`
	NumSubtasks             int    `json:"num_subtasks"`
	NumAcknowledgedSubtasks int    `json:"num_acknowledged_subtasks"`
	// Completed checkpoints only.
	ExternalPath string `json:"external_path"`
	Discarded    bool   `json:"discarded"`
	// Failed checkpoints only.
	FailureTimestamp int64  `json:"failure_timestamp"`
	FailureMessage   string `json:"failure_message"`
}

// Triggered returns the trigger time.
func (c CheckpointStatistics) Triggered() time.Time { return millis(c.TriggerTimestamp) }

// CheckpointConfig is GET /jobs/{jobid}/checkpoints/config.
type CheckpointConfig struct {
	Mode                                     string                `json:"mode"`
	Interval                                 int64                 `json:"interval"`
	Timeout                                  int64                 `json:"timeout"`
	MinPause                                 int64                 `json:"min_pause"`
	MaxConcurrent                            int64                 `json:"max_concurrent"`
	Externalization                          ExternalizationConfig `json:"externalization"`
	StateBackend                             string                `json:"state_backend"`
	CheckpointStorage                        string                `json:"checkpoint_storage"`
	UnalignedCheckpoints                     bool                  `json:"unaligned_checkpoints"`
	TolerableFailedCheckpoints               int                   `json:"tolerable_failed_checkpoints"`
	AlignedCheckpointTimeout                 int64                 `json:"aligned_checkpoint_timeout"`
	CheckpointsAfterTasksFinish              bool                  `json:"checkpoints_after_tasks_finish"`
	StateChangelogEnabled                    bool                  `json:"state_changelog_enabled"`
	ChangelogPeriodicMaterializationInterval int64                 `json:"changelog_periodic_materialization_interval"`
	ChangelogStorage                         string                `json:"changelog_storage"`
}

// ExternalizationConfig tells whether checkpoints outlive the job.
type ExternalizationConfig struct {
	Enabled              bool `json:"enabled"`
	DeleteOnCancellation bool `json:"delete_on_cancellation"`
}

// SavepointFormat is the savepoint binary format.
type SavepointFormat string

// Savepoint formats.
const (
	SavepointFormatCanonical SavepointFormat = "CANONICAL"
	SavepointFormatNative    SavepointFormat = "NATIVE"
)

type savepointTriggerBody struct {
	TargetDirectory string          `json:"target-directory,omitempty"`
	CancelJob       bool            `json:"cancel-job"`
	FormatType      SavepointFormat `json:"formatType,omitempty"`
	TriggerID       string          `json:"triggerId,omitempty"`
}

type stopWithSavepointBody struct {
	TargetDirectory string          `json:"targetDirectory,omitempty"`
	Drain           bool            `json:"drain"`
	FormatType      SavepointFormat `json:"formatType,omitempty"`
	TriggerID       string          `json:"triggerId,omitempty"`
}

type savepointDisposalBody struct {
	SavepointPath string `json:"savepoint-path"`
}

type triggerResponse struct {
	RequestID string `json:"request-id"`
}

// asyncOperationResult is the status of savepoint, stop and disposal.
type asyncOperationResult struct {
	Status struct {
		ID string `json:"id"`
	} `json:"status"`
	Operation *asyncOperation `json:"operation"`
}

type asyncOperation struct {
	Location     string        `json:"location"`
	FailureCause *FailureCause `json:"failure-cause"`
}

// FailureCause is Flink's serialized exception.
type FailureCause struct {
	Class      string `json:"class" flink:"extra"`
	StackTrace string `json:"stack-trace" flink:"extra"`
	// SerializedThrowable is the Java-serialized exception, base64.
	SerializedThrowable string `json:"serialized-throwable"`
}

// Operation states of asynchronous operations.
const (
	OperationInProgress = "IN_PROGRESS"
	OperationCompleted  = "COMPLETED"
)

// RestoreMode decides who owns the restored snapshot's files.
type RestoreMode string

// Restore modes.
const (
	RestoreClaim   RestoreMode = "CLAIM"
	RestoreNoClaim RestoreMode = "NO_CLAIM"
	// RestoreLegacy is deprecated in Flink; the new job silently depends on
	// the old snapshot's shared files.
	RestoreLegacy RestoreMode = "LEGACY"
)

type jarRunBody struct {
	EntryClass            string            `json:"entryClass,omitempty"`
	ProgramArgsList       []string          `json:"programArgsList,omitempty"`
	Parallelism           int               `json:"parallelism,omitempty"`
	JobID                 string            `json:"jobId,omitempty"`
	AllowNonRestoredState bool              `json:"allowNonRestoredState,omitempty"`
	SavepointPath         string            `json:"savepointPath,omitempty"`
	ClaimMode             RestoreMode       `json:"claimMode,omitempty"`
	RestoreMode           RestoreMode       `json:"restoreMode,omitempty"`
	FlinkConfiguration    map[string]string `json:"flinkConfiguration,omitempty"`
}

type jarRunResponse struct {
	JobID string `json:"jobid"`
}

type jarUploadResponse struct {
	Filename string `json:"filename"`
	Status   string `json:"status"`
}

// JarList is GET /jars.
type JarList struct {
	Address string    `json:"address"`
	Files   []JarFile `json:"files"`
}

// JarFile is one uploaded jar.
type JarFile struct {
	ID       string     `json:"id"`
	Name     string     `json:"name"`
	Uploaded int64      `json:"uploaded"`
	Entry    []JarEntry `json:"entry"`
}

// JarEntry is an entry class found in a jar.
type JarEntry struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}
