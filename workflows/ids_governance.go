package workflows

import "strings"

// Workflow type names of state governance.
const (
	GovernanceWorkflowType = "Governance"
	QuotaWatchWorkflowType = "QuotaWatch"
)

// Values of SearchAttrKind for governance.
const (
	KindGovernance = "governance"
	KindQuotaWatch = "quota-watch"
)

// GovernanceWorkflowID is the ID of a governance run started by hand.
func GovernanceWorkflowID(name string) string { return "governance-" + name }

// QuotaWatchWorkflowID is the ID of a long-running quota watch.
func QuotaWatchWorkflowID(name string) string { return "quota-watch-" + name }

// DefaultQuotaWatchName names the watch the CLI reads forecasts from.
const DefaultQuotaWatchName = "default"

// cleanupRunID turns a workflow ID (schedules append a timestamp with
// colons) and run ID into a name the cleanup executor accepts for its
// plan, trash and manifest directories. The run ID suffix keeps a reused
// workflow ID from resuming an older run's manifest.
func cleanupRunID(workflowID, runID string) string {
	var b strings.Builder
	for _, r := range workflowID {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	id := strings.TrimLeft(b.String(), "-._")
	if len(id) > 100 {
		id = id[:100]
	}
	suffix := strings.ReplaceAll(runID, "-", "")
	if len(suffix) > 8 {
		suffix = suffix[:8]
	}
	if id == "" {
		id = "governance"
	}
	if suffix != "" {
		id += "-" + suffix
	}
	return id
}
