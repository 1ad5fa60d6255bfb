package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/usage"
)

// Governance modes.
const (
	// ModePlan only plans (a dry run): nothing is touched. The default.
	ModePlan = "plan"
	// ModePlanAndApprove plans, waits for an operator's approve or reject
	// update until the approval deadline, then executes if approved.
	ModePlanAndApprove = "plan-and-approve"
	// ModeAuto plans and executes without waiting (scheduled governance
	// with a trusted policy).
	ModeAuto = "auto"
)

// Governance phases.
const (
	GovernancePhasePlanning         = "planning"
	GovernancePhaseAwaitingApproval = "awaiting-approval"
	GovernancePhaseExecuting        = "executing"
	GovernancePhaseWaitingForLock   = "waiting-for-lock" // another run holds a tenant (a window, an upgrade)
	GovernancePhasePurging          = "purging"
	GovernancePhaseCompleted        = "completed"
	GovernancePhasePlanned          = "planned"  // plan mode finished
	GovernancePhaseRejected         = "rejected" // an operator rejected the plan
	GovernancePhaseExpired          = "expired"  // nobody decided before the deadline
	GovernancePhaseFailed           = "failed"
	GovernancePhaseFrozen           = "frozen" // a scheduled run skipped inside a freeze
)

// CleanupActions of GovernancePolicy.Action.
const (
	CleanupActionTrash  = "trash"
	CleanupActionDelete = "delete"
)

// GovernancePolicy is the cleanup policy as it travels in workflow input:
// durations written as "1h", zero fields take the planner's defaults
// (grace 1h, retired-job TTL 7d, keep 2 savepoints, savepoint max age 7d,
// HA TTL 7d, orphan TTL 24h, action trash).
type GovernancePolicy struct {
	Grace                         Duration `json:"grace,omitempty"`
	RetiredJobTTL                 Duration `json:"retiredJobTTL,omitempty"`
	DeleteLatestRetiredCheckpoint bool     `json:"deleteLatestRetiredCheckpoint,omitempty"`
	// MaxCheckpointTimeout is the longest checkpoint timeout the fleet
	// allows, jobs outside the inventory included (default 10m): a job dir
	// written more recently keeps what no _metadata names yet.
	MaxCheckpointTimeout Duration `json:"maxCheckpointTimeout,omitempty"`
	KeepSavepoints       int      `json:"keepSavepoints,omitempty"`
	SavepointMaxAge      Duration `json:"savepointMaxAge,omitempty"`
	HATTL                Duration `json:"haTTL,omitempty"`
	// OrphanTTL keeps leftover Kubernetes objects (TaskManagers of gone
	// JobManagers, idle JobManagers, HA ConfigMaps of gone clusters)
	// younger than this.
	OrphanTTL        Duration `json:"orphanTTL,omitempty"`
	PinnedSavepoints []string `json:"pinnedSavepoints,omitempty"`
	// IgnoreDrills lets retention delete the newest savepoint of a job that
	// passed a restore drill; by default it is kept.
	IgnoreDrills bool   `json:"ignoreDrills,omitempty"`
	Action       string `json:"action,omitempty"`
	// OperatorSnapshots is what happens to a savepoint no rule keeps that
	// a completed FlinkStateSnapshot names: delete (default) deletes the
	// resource with it, keep keeps the savepoint.
	OperatorSnapshots string `json:"operatorSnapshots,omitempty"`
}

func (p GovernancePolicy) activityPolicy() governance.CleanupPolicy {
	return governance.CleanupPolicy{
		Grace: p.Grace.D(), RetiredJobTTL: p.RetiredJobTTL.D(), DeleteLatestRetiredCheckpoint: p.DeleteLatestRetiredCheckpoint, MaxCheckpointTimeout: p.MaxCheckpointTimeout.D(),
		KeepSavepoints: p.KeepSavepoints, SavepointMaxAge: p.SavepointMaxAge.D(), HATTL: p.HATTL.D(), OrphanTTL: p.OrphanTTL.D(),
		PinnedSavepoints: p.PinnedSavepoints, IgnoreDrills: p.IgnoreDrills, Action: cleanup.Action(p.Action), OperatorSnapshots: cleanup.OperatorSnapshots(p.OperatorSnapshots),
	}
}

// GovernanceInput starts a governance run. Every behavioural setting is
// here, so history records it.
type GovernanceInput struct {
	// RunID names the plan, trash and audit directories; default derived
	// from the workflow ID (schedules give each run its own).
	RunID  string           `json:"runId,omitempty"`
	Reason string           `json:"reason,omitempty"`
	Scope  core.Scope       `json:"scope"`
	Mode   string           `json:"mode"`
	Policy GovernancePolicy `json:"policy"`
	// OverrideFreeze lets the run execute inside a freeze.
	OverrideFreeze *FreezeOverride `json:"overrideFreeze,omitempty"`
	// ApprovalTimeout is how long plan-and-approve waits; then the run
	// ends as expired and nothing is touched. Default 24h.
	ApprovalTimeout Duration `json:"approvalTimeout,omitempty"`
	// ExecuteTimeout bounds one attempt of the executor (of one shard of
	// a sharded plan). Default 2h.
	ExecuteTimeout Duration `json:"executeTimeout,omitempty"`
	// ShardItems is how many items one shard of the plan holds; shards are
	// executed as separate activities, on any worker. Default 10000.
	ShardItems int `json:"shardItems,omitempty"`
	// ExecuteParallelism is how many shards are executed at once (across
	// the workers polling the queue). Default 4.
	ExecuteParallelism int `json:"executeParallelism,omitempty"`
	// GatherParts is how many parts the scope is listed in at once, across
	// the workers, before the plan merges them; 1 lists it within the
	// plan activity. Default 4.
	GatherParts int `json:"gatherParts,omitempty"`
	// PurgeTrashAfter, when set, purges trash runs unchanged for this long
	// after executing.
	PurgeTrashAfter Duration `json:"purgeTrashAfter,omitempty"`
	// ReportDir overrides where report.json and report.md go (default:
	// next to the plan).
	ReportDir       string  `json:"reportDir,omitempty"`
	WarningPercent  float64 `json:"warningPercent,omitempty"`
	CriticalPercent float64 `json:"criticalPercent,omitempty"`
}

// Bounds of a governance run's sharded execution.
const (
	defaultExecuteParallelism = 4
	maxExecuteParallelism     = 64
	defaultGatherParts        = 4
	maxGatherParts            = 64
	// maxShardItems keeps a shard well under what an executor reads at once.
	maxShardItems = 100_000
)

// ApplyDefaults fills zero values.
func (in *GovernanceInput) ApplyDefaults() {
	setStr(&in.Mode, ModePlan)
	setStr(&in.Policy.Action, CleanupActionTrash)
	setDur(&in.ApprovalTimeout, 24*time.Hour)
	setDur(&in.ExecuteTimeout, 2*time.Hour)
	setInt(&in.ShardItems, cleanup.DefaultShardItems)
	setInt(&in.ExecuteParallelism, defaultExecuteParallelism)
	setInt(&in.GatherParts, defaultGatherParts)
	setFloat(&in.WarningPercent, 80)
	setFloat(&in.CriticalPercent, 90)
}

// Validate returns every problem, each naming the field and what is valid.
func (in *GovernanceInput) Validate() error {
	return in.validate(func(field string) string { return field })
}

// validate checks the input, naming each field through name: a window
// names the fields of its post-restart cleanup run as window.yaml spells
// them. A field whose name maps to "" is one the caller checks itself.
func (in *GovernanceInput) validate(name func(field string) string) error {
	var errs []error
	bad := func(field, format string, args ...interface{}) {
		if n := name(field); n != "" {
			errs = append(errs, errors.New(n+fmt.Sprintf(format, args...)))
		}
	}
	if in.RunID != "" {
		if err := governance.CheckRunID(in.RunID); err != nil {
			bad("runId", ": %v", err)
		}
	}
	if err := in.OverrideFreeze.validate("overrideFreeze"); err != nil {
		bad("overrideFreeze", ": %v", err)
	}
	switch in.Mode {
	case ModePlan, ModePlanAndApprove, ModeAuto:
	default:
		bad("mode", "=%q: use %s (dry run, default), %s or %s", in.Mode, ModePlan, ModePlanAndApprove, ModeAuto)
	}
	p := in.Policy
	if p.Action != CleanupActionTrash && p.Action != CleanupActionDelete {
		bad("policy.action", "=%q: use %s (default: recoverable) or %s", p.Action, CleanupActionTrash, CleanupActionDelete)
	}
	switch cleanup.OperatorSnapshots(p.OperatorSnapshots) {
	case "", cleanup.OperatorSnapshotsDelete, cleanup.OperatorSnapshotsKeep:
	default:
		bad("policy.operatorSnapshots", "=%q: use %s (default: delete a FlinkStateSnapshot with the savepoint it names) or %s (keep such savepoints)",
			p.OperatorSnapshots, cleanup.OperatorSnapshotsDelete, cleanup.OperatorSnapshotsKeep)
	}
	if in.ShardItems < 1 || in.ShardItems > maxShardItems {
		bad("shardItems", "=%d: use 1 to %d (0 takes the default %d)", in.ShardItems, maxShardItems, cleanup.DefaultShardItems)
	}
	if in.GatherParts < 1 || in.GatherParts > maxGatherParts {
		bad("gatherParts", "=%d: use 1 to %d (0 takes the default %d)", in.GatherParts, maxGatherParts, defaultGatherParts)
	}
	if in.ExecuteParallelism < 1 || in.ExecuteParallelism > maxExecuteParallelism {
		bad("executeParallelism", "=%d: use 1 to %d (0 takes the default %d)", in.ExecuteParallelism, maxExecuteParallelism, defaultExecuteParallelism)
	}
	if p.KeepSavepoints < 0 {
		bad("policy.keepSavepoints", "=%d: use 1 or more (0 takes the default 2)", p.KeepSavepoints)
	}
	for _, d := range []struct {
		name string
		v    Duration
	}{
		{"policy.grace", p.Grace}, {"policy.retiredJobTTL", p.RetiredJobTTL}, {"policy.savepointMaxAge", p.SavepointMaxAge},
		{"policy.haTTL", p.HATTL}, {"policy.orphanTTL", p.OrphanTTL}, {"policy.maxCheckpointTimeout", p.MaxCheckpointTimeout}, {"approvalTimeout", in.ApprovalTimeout}, {"executeTimeout", in.ExecuteTimeout},
		{"purgeTrashAfter", in.PurgeTrashAfter},
	} {
		if d.v < 0 {
			bad(d.name, "=%s: use a positive duration such as 1h", d.v)
		}
	}
	if p.RetiredJobTTL > 0 && p.Grace > 0 && p.RetiredJobTTL < p.Grace {
		bad("policy.retiredJobTTL", "=%s is shorter than %s=%s: a retired job's in-flight files would lose their protection", p.RetiredJobTTL, name("policy.grace"), p.Grace)
	}
	if p.RetiredJobTTL > 0 && p.MaxCheckpointTimeout > 0 && p.RetiredJobTTL < p.MaxCheckpointTimeout {
		bad("policy.retiredJobTTL", "=%s is shorter than %s=%s: a job outside the inventory still checkpointing would lose its checkpoints", p.RetiredJobTTL, name("policy.maxCheckpointTimeout"), p.MaxCheckpointTimeout)
	}
	for i, s := range p.PinnedSavepoints {
		if !strings.HasPrefix(s, "/") && !strings.Contains(s, "://") {
			bad(fmt.Sprintf("policy.pinnedSavepoints[%d]", i), "=%q: use an absolute path or URI of a savepoint directory", s)
		}
	}
	if !(in.WarningPercent > 0 && in.WarningPercent <= in.CriticalPercent && in.CriticalPercent <= 100) {
		bad("warningPercent", "=%v, %s=%v: want 0 < warning <= critical <= 100", in.WarningPercent, name("criticalPercent"), in.CriticalPercent)
	}
	return errors.Join(errs...)
}

// GovernanceState is a run's progress: the status query returns it.
type GovernanceState struct {
	RunID      string                  `json:"runId"`
	Mode       string                  `json:"mode"`
	Phase      string                  `json:"phase"`
	StartedAt  time.Time               `json:"startedAt"`
	FinishedAt time.Time               `json:"finishedAt,omitempty"`
	Plan       *governance.PlanSummary `json:"plan,omitempty"`
	// ShardsExecuted counts the plan's shards done so far.
	ShardsExecuted   int                              `json:"shardsExecuted,omitempty"`
	ApprovalDeadline time.Time                        `json:"approvalDeadline,omitempty"`
	Approval         *ApprovalRecord                  `json:"approval,omitempty"`
	Execution        *governance.ExecuteCleanupResult `json:"execution,omitempty"`
	// WaitingFor names the runs holding a tenant this run waits for.
	WaitingFor  string                       `json:"waitingFor,omitempty"`
	Purge       *governance.PurgeTrashResult `json:"purge,omitempty"`
	QuotaBefore []capacity.TenantQuota       `json:"quotaBefore,omitempty"`
	QuotaAfter  []capacity.TenantQuota       `json:"quotaAfter,omitempty"`
	ReportPath  string                       `json:"reportPath,omitempty"`
	Notes       []string                     `json:"notes,omitempty"`
	// Usage is what fills each tenant's quota, per kind, with the top
	// offenders (no per-job rows: `flinkmaint usage` has those).
	Usage []usage.Report `json:"usage,omitempty"`
}
