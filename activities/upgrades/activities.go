// Package upgrades holds the activities of single-job upgrades and their
// rehearsals: the new artifact's check (CheckUpgrade), ending a version
// (EndJob), the recipes of record (RecordRecipe, ForgetRecipe), operator
// spec changes and redeploys (ReadSpecInverse, ChangeOperatorSpec,
// RedeployJob, DiscardJob) and the rehearsal of a restore into a new
// version on the drill cluster (PrepareRehearsal, ExplainRehearsal,
// RecordRehearsal).
package upgrades

import (
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
)

// Activities are the upgrade family's activities; the port it acts on most
// comes first.
type Activities struct {
	Flink core.FlinkClients
	// Operator changes and redeploys Flink Kubernetes Operator jobs; nil
	// when no Kubernetes inventory is configured.
	Operator  core.OperatorControl
	Storage   core.Storage
	Inventory core.InventorySource
	// Drill locates the drill clusters rehearsals run on (worker config).
	Drill core.DrillSettings
	// Metrics counts rehearsals by verdict; nil disables them.
	Metrics core.GovernanceMetrics
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// PollInterval between looks at Flink or the operator; zero is 1s.
	PollInterval time.Duration
	// OperationPollMin is the shortest wait between looks at one savepoint
	// operation; zero is a fifth of PollInterval.
	OperationPollMin time.Duration
	// FailoverWait is how long ending a job waits for a Flink cluster that
	// does not answer; zero is 3 minutes.
	FailoverWait time.Duration
}

func (a *Activities) jobs() core.Jobs {
	return core.Jobs{Inventory: a.Inventory, Flink: a.Flink, Storage: a.Storage, Now: a.Now,
		PollInterval: a.PollInterval, OperationPollMin: a.OperationPollMin, FailoverWait: a.FailoverWait}
}

func (a *Activities) catalog() core.Catalog {
	return core.Catalog{Inventory: a.Inventory, Storage: a.Storage, Now: a.Now}
}

func (a *Activities) drillSite() core.DrillSite {
	return core.DrillSite{Drill: a.Drill, Storage: a.Storage}
}

func (a *Activities) operator() core.OperatorJobs {
	return core.OperatorJobs{Operator: a.Operator, PollInterval: a.PollInterval}
}
