// Package governance holds the activities of reference-aware state
// governance: the plan (GatherCleanup, PlanCleanup), its execution
// (VerifyCleanupPlan, ExecuteCleanup, ExecuteCleanupPart, TallyCleanup),
// the trash (PurgeTrash, RestoreTrash) and the savepoint catalog
// (ListSavepoints, AdoptSavepoints). What could still restore from a
// snapshot is found by restoreSources (sources.go).
package governance

import (
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
)

// Activities are the governance family's activities; the port it acts on most
// comes first.
type Activities struct {
	Storage   core.Storage
	Inventory core.InventorySource
	Flink     core.FlinkClients
	// Operator reads the Flink Kubernetes Operator's records and deletes
	// FlinkStateSnapshots; nil when no Kubernetes inventory is configured.
	Operator core.OperatorControl
	// Orphans finds and deletes leftover Flink objects in Kubernetes; nil
	// when no Kubernetes inventory is configured.
	Orphans core.OrphanControl
	// ReadOnlyKubeClusters are the Kubernetes clusters ("" the unnamed
	// one) whose rbacProfile is windows: governance keeps what it would
	// delete there.
	ReadOnlyKubeClusters map[string]bool
	// Runs lists the snapshots flinkmaint's own runs in flight hold; nil
	// means no run can hold one.
	Runs core.RunRecords
	// Cleanup locates plans, trash and audit manifests (worker config).
	Cleanup core.CleanupSettings
	// Drill names the drill cluster, whose jobs are not the fleet's.
	Drill core.DrillSettings
	// Metrics receives governance measurements; nil disables them.
	Metrics core.GovernanceMetrics
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// PollInterval between looks at Flink; zero is 1s.
	PollInterval time.Duration
	// LiveReadWait is how long a live job's state is asked for again while
	// Flink cannot give it yet; zero is 15 seconds.
	LiveReadWait time.Duration
}

func (a *Activities) catalog() core.Catalog {
	return core.Catalog{Inventory: a.Inventory, Storage: a.Storage, Now: a.Now}
}

func (a *Activities) lineage() core.Lineage {
	return core.Lineage{Flink: a.Flink, Storage: a.Storage, Now: a.Now}
}
