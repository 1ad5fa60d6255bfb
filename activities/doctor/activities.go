// Package doctor holds the activities that tell operators whether a
// worker can do its job and what it sees: Ping (a live worker answers),
// Doctor (storage, Kubernetes, Flink and notification sinks, each checked
// the way runs use them) and DescribeInventory (the fleet as the worker
// discovers it).
package doctor

import (
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
)

// Activities are the doctor family's activities; the fields are what they
// check or read.
type Activities struct {
	// Identity names this worker process in results and logs.
	Identity string
	// Worker describes this worker process.
	Worker WorkerInfo
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	Inventory  core.InventorySource
	Flink      core.FlinkClients
	Storage    core.Storage
	Kubernetes core.KubernetesHealth
	// KubeAccess reviews the worker's RBAC; nil when no Kubernetes
	// inventory is configured.
	KubeAccess core.KubernetesAccess
	// Notifier is probed, never sent to; nil when no sink is configured.
	Notifier core.Notifier
	// Cleanup and Drill locate the roots the worker must be able to write.
	Cleanup core.CleanupSettings
	Drill   core.DrillSettings
}
