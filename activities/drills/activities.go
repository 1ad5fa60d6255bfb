// Package drills holds the activities of restore drills: which snapshots
// to prove (SelectDrillTargets), the proof on storage (ProveSnapshots,
// ProveSnapshotStorage), the drill cluster's isolation (CheckDrillCluster),
// a real restore on it (StartDrillJob, VerifyDrillState, EndDrill) and the
// record beside the snapshots (RecordDrillRun).
package drills

import (
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
)

// Activities are the drill family's activities; the port it acts on most
// comes first.
type Activities struct {
	// Drill locates the drill cluster and root (worker config).
	Drill     core.DrillSettings
	Flink     core.FlinkClients
	Storage   core.Storage
	Inventory core.InventorySource
	// Metrics receives each tenant's drill outcome; nil disables them.
	Metrics core.GovernanceMetrics
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// PollInterval between looks at a drill job; zero is 1s.
	PollInterval time.Duration
}

func (a *Activities) catalog() core.Catalog {
	return core.Catalog{Inventory: a.Inventory, Storage: a.Storage, Now: a.Now}
}

func (a *Activities) jobs() core.Jobs {
	return core.Jobs{Inventory: a.Inventory, Flink: a.Flink, Storage: a.Storage, Now: a.Now, PollInterval: a.PollInterval}
}

func (a *Activities) drillSite() core.DrillSite {
	return core.DrillSite{Drill: a.Drill, Storage: a.Storage}
}
