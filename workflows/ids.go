// Package workflows holds flinkmaint's workflow definitions: deterministic
// orchestration only. It imports the SDK, activities' types and the standard
// library's pure packages, never adapters, clocks or I/O.
package workflows

// DefaultTaskQueue is the queue workers poll unless configured otherwise.
const DefaultTaskQueue = "flinkmaint"

// Workflow type names as recorded in history. They are public API: renaming
// a Go function must never rename one of these.
const (
	PingWorkflowType = "Ping"
)

// ScheduleID is the ID of a flinkmaint Temporal Schedule (governance,
// quota watching, savepoints); one name space for all of them.
func ScheduleID(name string) string { return "flinkmaint-" + name }

// PingWorkflowID returns the ID of a ping run; nonce makes it unique.
func PingWorkflowID(nonce string) string {
	return "ping/" + nonce
}
