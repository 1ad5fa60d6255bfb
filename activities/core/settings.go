package core

import (
	"time"
)

// DrillSettings locates where drills restore (worker config, drill.*).
type DrillSettings struct {
	// ClusterRESTURL is the drill session cluster; empty allows tier 1 only.
	ClusterRESTURL string
	// Root receives the drill jobs' checkpoints, <Root>/<run>/<job>.
	Root string
	// Clusters are drill clusters by Flink version (major.minor), for
	// compatibility rehearsals.
	Clusters []VersionDrillCluster
}

// VersionDrillCluster is a drill cluster of one Flink version.
type VersionDrillCluster struct {
	FlinkVersion string
	RESTURL      string
}

// RestURLs lists every drill cluster.
func (d DrillSettings) RestURLs() []string {
	var out []string
	if d.ClusterRESTURL != "" {
		out = append(out, d.ClusterRESTURL)
	}
	for _, c := range d.Clusters {
		out = append(out, c.RESTURL)
	}
	return out
}

// CleanupSettings are the worker-side locations of cleanup: where plans,
// trash and audit manifests live. They come from the worker's config
// (cleanup section), not from workflow input, because they must lie under
// the worker's writable roots.
type CleanupSettings struct {
	// TrashRoot receives trashed items, outside every tenant's quota'd tree.
	TrashRoot string
	// AuditRoot holds the audit manifests; default <TrashRoot>/_audit.
	AuditRoot string
	// PlanDir holds plans and governance reports, <PlanDir>/<run-id>/.
	PlanDir string
	// ReferenceRoots are checkpoint roots of jobs outside every scope:
	// their retained _metadata are read (never changed) and what they
	// reference is kept.
	ReferenceRoots []string
	// FailedRestoreHold is how long a snapshot a job was seen FAILED
	// restoring from is kept after the last plan that saw it so; zero
	// takes cleanup.DefaultFailedRestoreHold.
	FailedRestoreHold time.Duration
}
