// Package activities holds every activity of flinkmaint: one Activities
// struct whose methods are retryable, idempotent steps. Adapters reach the
// activities only through the small interfaces in ports.go.
package activities

import (
	"context"
	"errors"
	"os"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/flinkmaint/flinkmaint/internal/freeze"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
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

	Inventory  InventorySource
	Flink      FlinkClients
	Storage    Storage
	Kubernetes KubernetesHealth

	// Cleanup locates plans, trash and audit manifests (worker config).
	Cleanup CleanupSettings
	// Drill locates the drill cluster and root (worker config).
	Drill DrillSettings
	// Metrics receives governance measurements; nil disables them.
	Metrics GovernanceMetrics
	// Operator suspends and resumes Flink Kubernetes Operator jobs; nil
	// when no Kubernetes inventory is configured.
	Operator OperatorControl
	// Orphans finds and deletes leftover Flink objects in Kubernetes for
	// governance cleanup; nil when no Kubernetes inventory is configured.
	Orphans OrphanControl
	// ReadOnlyKubeClusters are the Kubernetes clusters ("" the unnamed
	// one) whose rbacProfile is windows: governance keeps what it would
	// delete there, and doctor checks no delete verb.
	ReadOnlyKubeClusters map[string]bool
	// Runs lists the snapshots flinkmaint's own runs in flight hold; nil
	// means no run can hold one (tests that start no window or upgrade).
	Runs RunRecords
	// Notifier tells the people on call; nil when no sink is configured.
	Notifier Notifier
	// Freezes are the blackout periods (worker config); nil: none.
	Freezes *freeze.Calendar
	// KubeAccess reviews the worker's RBAC for doctor; nil when no
	// Kubernetes inventory is configured.
	KubeAccess KubernetesAccess
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

// discover reads the inventory: an invalid one is final, an unreachable
// source is retried.
func discover(ctx context.Context, src InventorySource) (inventory.Inventory, error) {
	inv, err := src.Discover(ctx)
	if errors.Is(err, inventory.ErrInvalid) {
		return inv, nonRetryable(ErrTypeInventory, "inventory is invalid: %v", err)
	}
	if err != nil {
		return inv, classify("discover inventory", err)
	}
	return inv, nil
}

func timeNow(clock func() time.Time) time.Time {
	if clock != nil {
		return clock()
	}
	return time.Now()
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
	return PingResult{Message: in.Message, Worker: a.Identity, Hostname: host, AnsweredAt: timeNow(a.Now).UTC()}, nil
}
