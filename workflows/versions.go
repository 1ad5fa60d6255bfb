package workflows

import "go.temporal.io/sdk/workflow"

// VersionChange is one change to the logic of running workflows, guarded
// by workflow.GetVersion so that runs started before it replay the branch
// they took. Its ID is what GetVersion records in every run that passes
// it: never renamed, never reused.
type VersionChange struct {
	// ID is the change id GetVersion is called with.
	ID string
	// Newest is the version new runs record (GetVersion's maxSupported).
	Newest workflow.Version
	// Since is the day the change landed.
	Since string
	// Workflows are the workflow types whose runs pass it.
	Workflows []string
	// What the change did.
	What string
	// Legacy marks an id from before the <workflow>-<what>-<date> rule.
	Legacy bool
}

// RetireRule says when the old branch of a change may be removed: only
// once no run that started before the change can still be open. Check in
// each namespace that
//
//	temporal workflow list --query "ExecutionStatus='Running' AND StartTime < '<Since>'"
//
// lists none of the change's workflow types (windows wait for days at
// their gates, governance runs for their approval, schedules start new
// runs on the new branch); then remove the DefaultVersion branch, keep the
// GetVersion call (its marker stays in newer histories), and drop the
// recorded histories that exercised only the old branch.
const RetireRule = "once no run of its workflow types that started before Since is open"

// VersionLedger lists every change guarded by GetVersion, oldest first.
// The replay test fails when one is missing here, when the code calls
// GetVersion with an id or version this ledger does not name, or when no
// recorded history shows an id at its newest version: a change is not
// done until a run on the new branch is recorded in testdata/histories.
var VersionLedger = []VersionChange{
	{ID: changeManifestBeforeStops, Newest: 1, Since: "2026-11-30", Workflows: []string{MaintenanceWindowWorkflowType},
		What: "preflight waits for a written manifest before savepoint-all"},
	{ID: changeBoundedHistory, Newest: 1, Since: "2026-11-30", Workflows: []string{MaintenanceWindowWorkflowType},
		What: "documents by local activity, one manifest write per batch, continue-as-new inside savepoint-all and the restart"},
	{ID: changeCleanupPhase, Newest: 1, Since: "2026-11-30", Workflows: []string{MaintenanceWindowWorkflowType},
		What: "the post-restart cleanup phase"},
	{ID: changeManifestInterval, Newest: 1, Since: "2026-12-01", Workflows: []string{MaintenanceWindowWorkflowType},
		What: "manifest rewrites between child results spaced by time, not one per batch"},
	{ID: changeFootprintInPreflight, Newest: 1, Since: "2026-12-01", Workflows: []string{MaintenanceWindowWorkflowType},
		What: "each job's checkpoint footprint measured in preflight; a pause when the restart would not fit"},
	{ID: changeStrictWindow, Newest: 1, Since: "2026-12-01", Workflows: []string{MaintenanceWindowWorkflowType},
		What: "scope patterns and the cleanup input checked at start; preflight fails on a scope that selects nothing"},
	{ID: changeCancelEveryEarlierAttempt, Newest: 1, Since: "2026-12-01", Workflows: []string{JobRestartWorkflowType},
		What: "a restart cancels the job of every earlier attempt, not only the previous one"},
	{ID: notifyChange, Newest: 1, Since: "2026-12-01", Legacy: true,
		Workflows: []string{MaintenanceWindowWorkflowType, GovernanceWorkflowType, JobUpgradeWorkflowType, RestoreDrillWorkflowType, QuotaWatchWorkflowType},
		What:      "the people on call are told through the notify sinks"},
	{ID: tenantLockChange, Newest: 1, Since: "2026-12-01", Legacy: true,
		Workflows: []string{MaintenanceWindowWorkflowType, GovernanceWorkflowType, JobUpgradeWorkflowType, GovernanceRestoreWorkflowType},
		What:      "runs that change a tenant's state take the tenant lock"},
	{ID: freezeChange, Newest: 1, Since: "2026-12-01", Legacy: true,
		Workflows: []string{MaintenanceWindowWorkflowType, GovernanceWorkflowType, JobUpgradeWorkflowType, RestoreDrillWorkflowType, ScheduledSavepointsWorkflowType, GovernanceRestoreWorkflowType},
		What:      "runs that change state do not start inside a freeze"},
	{ID: changeGovernanceUsage, Newest: 1, Since: "2026-12-01", Workflows: []string{GovernanceWorkflowType},
		What: "the storage usage of the plan's tenants in the report"},
	{ID: changeShardedPlan, Newest: 1, Since: "2026-12-02", Workflows: []string{GovernanceWorkflowType},
		What: "the listing gathered in parts, the plan written and executed in shards"},
	{ID: changeVerifyWholePlan, Newest: 1, Since: "2026-12-03", Workflows: []string{GovernanceWorkflowType},
		What: "every shard of an approved plan checked before the first one runs"},
	{ID: changeNetworkGateVisibility, Newest: 1, Since: "2026-12-04", Workflows: []string{MaintenanceWindowWorkflowType},
		What: "FlinkmaintPausedForDecision cleared as soon as the network gate is answered, not after the endpoint probe"},
	{ID: changeUpgradeRehearsal, Newest: 1, Since: "2026-12-04", Workflows: []string{JobUpgradeWorkflowType},
		What: "preflight rehearses the new version on a drill cluster (a JobRehearsal child) before the job is stopped"},
}
