// Package capacity holds the activities that measure what tenants store
// against their HDFS quotas: CheckQuota (the restart gate's projection),
// SampleQuota and LoadQuotaSamples (the quota watch and its forecast) and
// TenantUsage (who fills a tenant's quota, by job and kind).
package capacity

import (
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
)

// Activities are the capacity family's activities; the port it acts on most
// comes first.
type Activities struct {
	Storage core.Storage
	// Cleanup locates the trash, which usage counts apart.
	Cleanup   core.CleanupSettings
	Inventory core.InventorySource
	// Flink reads each cluster's jobs and their history, to project a
	// restart and to attribute usage to logical jobs.
	Flink core.FlinkClients
	// Metrics receives the samples; nil disables them.
	Metrics core.GovernanceMetrics
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (a *Activities) jobs() core.Jobs {
	return core.Jobs{Inventory: a.Inventory, Flink: a.Flink, Storage: a.Storage, Now: a.Now}
}

func (a *Activities) lineage() core.Lineage {
	return core.Lineage{Flink: a.Flink, Storage: a.Storage, Now: a.Now}
}

func (a *Activities) documents() core.Documents { return core.Documents{Storage: a.Storage} }
