package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// Workflow type names of the maintenance window and its children.
const (
	MaintenanceWindowWorkflowType = "MaintenanceWindow"
	JobSavepointWorkflowType      = "JobSavepoint"
	JobRestartWorkflowType        = "JobRestart"
)

// Values of SearchAttrKind for windows.
const (
	KindWindow = "window"
	KindJob    = "window-job"
)

// WindowWorkflowID is the ID of a window: one running window per name.
func WindowWorkflowID(windowID string) string { return "window-" + windowID }

// JobSavepointWorkflowID reads in the UI as window/savepoint/cluster/job;
// retries of the same job get an attempt suffix.
func JobSavepointWorkflowID(windowID, jobKey string, attempt int) string {
	return withAttempt(WindowWorkflowID(windowID)+"/savepoint/"+jobKey, attempt)
}

// JobRestartWorkflowID reads in the UI as window/restart/cluster/job.
func JobRestartWorkflowID(windowID, jobKey string, attempt int) string {
	return withAttempt(WindowWorkflowID(windowID)+"/restart/"+jobKey, attempt)
}

func withAttempt(id string, attempt int) string {
	if attempt <= 1 {
		return id
	}
	return id + "/attempt-" + strconv.Itoa(attempt)
}

// flinkID derives a 32-hex-digit ID (Flink's format for trigger and job
// IDs) from the window, job and purpose. Deterministic, so a retried
// activity sends the same ID and Flink re-attaches instead of acting twice.
func flinkID(windowID, jobKey, purpose string, attempt int) string {
	sum := sha256.Sum256([]byte(windowID + "\x00" + jobKey + "\x00" + purpose + "\x00" + strconv.Itoa(attempt)))
	return hex.EncodeToString(sum[:16])
}

// WindowCleanupWorkflowID is the post-restart Governance child of a window.
func WindowCleanupWorkflowID(windowID string) string {
	return WindowWorkflowID(windowID) + "/cleanup"
}

// WindowCanaryDrillWorkflowID is the restore drill of a window's canary.
func WindowCanaryDrillWorkflowID(windowID string, attempt int) string {
	return withAttempt(WindowWorkflowID(windowID)+"/canary-drill", attempt)
}

// windowDrillRunID names a window's canary drills in the drill records and
// the drill root.
func windowDrillRunID(windowID string) string { return WindowWorkflowID(windowID) + "-canary" }
