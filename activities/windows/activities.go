// Package windows holds the activities of maintenance windows and the
// savepoints they and their schedules take: finding the jobs in scope
// (DiscoverJobs), stopping them with a savepoint (StopWithSavepoint, or
// SuspendJob through the Flink Kubernetes Operator) and proving it
// (VerifySavepoint), the gate (ProbeEndpoints), the restart (RestartJob,
// ResumeJob, CancelJob, AwaitHealthy), scheduled savepoints (TakeSavepoint,
// RecordSavepointRun) and the documents runs leave (WriteDocument).
package windows

import (
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
)

// Activities are the window family's activities; the port it acts on most
// comes first.
type Activities struct {
	Flink      core.FlinkClients
	Storage    core.Storage
	Inventory  core.InventorySource
	Kubernetes core.KubernetesHealth
	// Operator suspends and resumes Flink Kubernetes Operator jobs; nil
	// when no Kubernetes inventory is configured.
	Operator core.OperatorControl
	// Metrics receives the outcome of scheduled savepoints; nil disables
	// them.
	Metrics core.GovernanceMetrics
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// PollInterval between looks at Flink in long activities; zero is 1s.
	PollInterval time.Duration
	// OperationPollMin is the shortest wait between looks at one savepoint
	// operation; zero is a fifth of PollInterval.
	OperationPollMin time.Duration
	// FailoverWait is how long a stop waits for a Flink cluster that does
	// not answer (a JobManager failover); zero is 3 minutes.
	FailoverWait time.Duration
}

func (a *Activities) catalog() core.Catalog {
	return core.Catalog{Inventory: a.Inventory, Storage: a.Storage, Now: a.Now}
}

func (a *Activities) jobs() core.Jobs {
	return core.Jobs{Inventory: a.Inventory, Flink: a.Flink, Storage: a.Storage, Now: a.Now,
		PollInterval: a.PollInterval, OperationPollMin: a.OperationPollMin, FailoverWait: a.FailoverWait}
}

func (a *Activities) operator() core.OperatorJobs {
	return core.OperatorJobs{Operator: a.Operator, PollInterval: a.PollInterval}
}

func (a *Activities) documents() core.Documents { return core.Documents{Storage: a.Storage} }
