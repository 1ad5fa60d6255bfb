package activities

import (
	"context"
	"os"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/freeze"
)

// Activities is registered once per worker; its fields are the ports.
type Activities struct {
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
	Worker WorkerInfo
}

// WorkerInfo is what doctor reports about the worker and checks it may do.
type WorkerInfo struct {
	// Version is the worker's build version.
	Version string
	// WritableRoots are storage.writableRoots: doctor proves each exists
	// and takes a write.
	WritableRoots []string
	// KerberosPrincipal is who the worker authenticates to HDFS as; empty
	// without Kerberos.
	KerberosPrincipal string
}

// PingInput is the input of Ping.
type PingInput struct {
	Message string
}

// PingResult tells which worker answered and when.
type PingResult struct {
	Message    string
	Worker     string
	Hostname   string
	AnsweredAt time.Time
}

// Ping echoes the message with the worker's identity: it proves a workflow
// reached a live worker and an activity ran there.
func (a *Activities) Ping(ctx context.Context, in PingInput) (PingResult, error) {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	activity.GetLogger(ctx).Info("ping", "message", in.Message)
	return PingResult{Message: in.Message, Worker: a.Identity, Hostname: host, AnsweredAt: core.Now(a.Now).UTC()}, nil
}
