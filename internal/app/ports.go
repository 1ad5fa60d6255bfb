package app

import (
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/doctor"
	"github.com/flinkmaint/flinkmaint/internal/freeze"
)

// Ports are the ports and settings every activities family is built from
// (NewFamilies): NewPorts makes them from the worker's configuration,
// tests from fakes or real peers. Each family takes only the fields it
// uses.
type Ports struct {
	// Identity names this worker process in results and logs.
	Identity string
	// Now is the clock; nil means time.Now. Tests set a fixed clock.
	Now func() time.Time
	// PollInterval between looks at Flink in long activities; zero is 1s.
	PollInterval time.Duration
	// OperationPollMin is the shortest wait between looks at one savepoint
	// operation; zero is a fifth of PollInterval.
	OperationPollMin time.Duration
	// FailoverWait is how long a stop waits for a Flink cluster that does
	// not answer (a JobManager failover); zero is 3 minutes.
	FailoverWait time.Duration
	// LiveReadWait is how long a live job's state is asked for again while
	// Flink cannot give it yet; zero is 15 seconds.
	LiveReadWait time.Duration

	Inventory  core.InventorySource
	Flink      core.FlinkClients
	Storage    core.Storage
	Kubernetes core.KubernetesHealth

	// Cleanup locates plans, trash and audit manifests (worker config).
	Cleanup core.CleanupSettings
	// Drill locates the drill cluster and root (worker config).
	Drill core.DrillSettings
	// Metrics receives governance measurements; nil disables them.
	Metrics core.GovernanceMetrics
	// Operator suspends and resumes Flink Kubernetes Operator jobs; nil
	// when no Kubernetes inventory is configured.
	Operator core.OperatorControl
	// Orphans finds and deletes leftover Flink objects in Kubernetes for
	// governance cleanup; nil when no Kubernetes inventory is configured.
	Orphans core.OrphanControl
	// ReadOnlyKubeClusters are the Kubernetes clusters ("" the unnamed
	// one) whose rbacProfile is windows: governance keeps what it would
	// delete there, and doctor checks no delete verb.
	ReadOnlyKubeClusters map[string]bool
	// Runs lists the snapshots flinkmaint's own runs in flight hold; nil
	// means no run can hold one (tests that start no window or upgrade).
	Runs core.RunRecords
	// Notifier tells the people on call; nil when no sink is configured.
	Notifier core.Notifier
	// Freezes are the blackout periods (worker config); nil: none.
	Freezes *freeze.Calendar
	// KubeAccess reviews the worker's RBAC for doctor; nil when no
	// Kubernetes inventory is configured.
	KubeAccess core.KubernetesAccess
	// Worker describes this worker process for doctor.
	Worker doctor.WorkerInfo
}
