package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/activities"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
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
	GovPhasePlanning         = "planning"
	GovPhaseAwaitingApproval = "awaiting-approval"
	GovPhaseExecuting        = "executing"
	GovPhasePurging          = "purging"
	GovPhaseCompleted        = "completed"
	GovPhasePlanned          = "planned"  // plan mode finished
	GovPhaseRejected         = "rejected" // an operator rejected the plan
	GovPhaseExpired          = "expired"  // nobody decided before the deadline
	GovPhaseFailed           = "failed"
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
	KeepSavepoints                int      `json:"keepSavepoints,omitempty"`
	SavepointMaxAge               Duration `json:"savepointMaxAge,omitempty"`
	HATTL                         Duration `json:"haTTL,omitempty"`
	// OrphanTTL keeps leftover Kubernetes objects (TaskManagers of gone
	// JobManagers, idle JobManagers, HA ConfigMaps of gone clusters)
	// younger than this.
	OrphanTTL        Duration `json:"orphanTTL,omitempty"`
	PinnedSavepoints []string `json:"pinnedSavepoints,omitempty"`
	Action           string   `json:"action,omitempty"`
	// OperatorSnapshots is what happens to a savepoint no rule keeps that
	// a completed FlinkStateSnapshot names: delete (default) deletes the
	// resource with it, keep keeps the savepoint.
	OperatorSnapshots string `json:"operatorSnapshots,omitempty"`
}

func (p GovernancePolicy) activityPolicy() activities.CleanupPolicy {
	return activities.CleanupPolicy{
		Grace: p.Grace.D(), RetiredJobTTL: p.RetiredJobTTL.D(), DeleteLatestRetiredCheckpoint: p.DeleteLatestRetiredCheckpoint,
		KeepSavepoints: p.KeepSavepoints, SavepointMaxAge: p.SavepointMaxAge.D(), HATTL: p.HATTL.D(), OrphanTTL: p.OrphanTTL.D(),
		PinnedSavepoints: p.PinnedSavepoints, Action: cleanup.Action(p.Action), OperatorSnapshots: cleanup.OperatorSnapshots(p.OperatorSnapshots),
	}
}

// GovernanceInput starts a governance run. Every behavioural setting is
// here, so history records it.
type GovernanceInput struct {
	// RunID names the plan, trash and audit directories; default derived
	// from the workflow ID (schedules give each run its own).
	RunID  string           `json:"runId,omitempty"`
	Reason string           `json:"reason,omitempty"`
	Scope  activities.Scope `json:"scope"`
	Mode   string           `json:"mode"`
	Policy GovernancePolicy `json:"policy"`
	// ApprovalTimeout is how long plan-and-approve waits; then the run
	// ends as expired and nothing is touched. Default 24h.
	ApprovalTimeout Duration `json:"approvalTimeout,omitempty"`
	// ExecuteTimeout bounds one attempt of the executor. Default 2h.
	ExecuteTimeout Duration `json:"executeTimeout,omitempty"`
	// PurgeTrashAfter, when set, purges trash runs unchanged for this long
	// after executing.
	PurgeTrashAfter Duration `json:"purgeTrashAfter,omitempty"`
	// ReportDir overrides where report.json and report.md go (default:
	// next to the plan).
	ReportDir       string  `json:"reportDir,omitempty"`
	WarningPercent  float64 `json:"warningPercent,omitempty"`
	CriticalPercent float64 `json:"criticalPercent,omitempty"`
}

// ApplyDefaults fills zero values.
func (in *GovernanceInput) ApplyDefaults() {
	setStr(&in.Mode, ModePlan)
	setStr(&in.Policy.Action, CleanupActionTrash)
	setDur(&in.ApprovalTimeout, 24*time.Hour)
	setDur(&in.ExecuteTimeout, 2*time.Hour)
	setFloat(&in.WarningPercent, 80)
	setFloat(&in.CriticalPercent, 90)
}

// Validate returns every problem, each naming the field and what is valid.
func (in *GovernanceInput) Validate() error {
	var errs []error
	bad := func(format string, args ...interface{}) { errs = append(errs, fmt.Errorf(format, args...)) }
	if in.RunID != "" {
		if err := activities.CheckRunID(in.RunID); err != nil {
			bad("runId: %v", err)
		}
	}
	switch in.Mode {
	case ModePlan, ModePlanAndApprove, ModeAuto:
	default:
		bad("mode=%q: use %s (dry run, default), %s or %s", in.Mode, ModePlan, ModePlanAndApprove, ModeAuto)
	}
	p := in.Policy
	if p.Action != CleanupActionTrash && p.Action != CleanupActionDelete {
		bad("policy.action=%q: use %s (default: recoverable) or %s", p.Action, CleanupActionTrash, CleanupActionDelete)
	}
	switch cleanup.OperatorSnapshots(p.OperatorSnapshots) {
	case "", cleanup.OperatorSnapshotsDelete, cleanup.OperatorSnapshotsKeep:
	default:
		bad("policy.operatorSnapshots=%q: use %s (default: delete a FlinkStateSnapshot with the savepoint it names) or %s (keep such savepoints)",
			p.OperatorSnapshots, cleanup.OperatorSnapshotsDelete, cleanup.OperatorSnapshotsKeep)
	}
	if p.KeepSavepoints < 0 {
		bad("policy.keepSavepoints=%d: use 1 or more (0 takes the default 2)", p.KeepSavepoints)
	}
	for _, d := range []struct {
		name string
		v    Duration
	}{
		{"policy.grace", p.Grace}, {"policy.retiredJobTTL", p.RetiredJobTTL}, {"policy.savepointMaxAge", p.SavepointMaxAge},
		{"policy.haTTL", p.HATTL}, {"policy.orphanTTL", p.OrphanTTL}, {"approvalTimeout", in.ApprovalTimeout}, {"executeTimeout", in.ExecuteTimeout},
		{"purgeTrashAfter", in.PurgeTrashAfter},
	} {
		if d.v < 0 {
			bad("%s=%s: use a positive duration such as 1h", d.name, d.v)
		}
	}
	if p.RetiredJobTTL > 0 && p.Grace > 0 && p.RetiredJobTTL < p.Grace {
		bad("policy.retiredJobTTL=%s is shorter than policy.grace=%s: a retired job's in-flight files would lose their protection", p.RetiredJobTTL, p.Grace)
	}
	for i, s := range p.PinnedSavepoints {
		if !strings.HasPrefix(s, "/") && !strings.Contains(s, "://") {
			bad("policy.pinnedSavepoints[%d]=%q: use an absolute path or URI of a savepoint directory", i, s)
		}
	}
	if !(in.WarningPercent > 0 && in.WarningPercent <= in.CriticalPercent && in.CriticalPercent <= 100) {
		bad("warningPercent=%v, criticalPercent=%v: want 0 < warning <= critical <= 100", in.WarningPercent, in.CriticalPercent)
	}
	return errors.Join(errs...)
}

// ApproveRequest approves the plan a governance run waits on.
type ApproveRequest struct {
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
	// PlanSHA256, when set, must equal the plan's hash: the approver
	// approves the plan they reviewed, not a newer one.
	PlanSHA256 string `json:"planSha256,omitempty"`
}

// RejectRequest rejects it; nothing is touched.
type RejectRequest struct {
	By     string `json:"by"`
	Reason string `json:"reason"`
}

// ApprovalRecord is the operator's decision.
type ApprovalRecord struct {
	Approved bool      `json:"approved"`
	By       string    `json:"by"`
	Reason   string    `json:"reason,omitempty"`
	At       time.Time `json:"at"`
}

// GovernanceState is a run's progress: the status query returns it.
type GovernanceState struct {
	RunID            string                           `json:"runId"`
	Mode             string                           `json:"mode"`
	Phase            string                           `json:"phase"`
	StartedAt        time.Time                        `json:"startedAt"`
	FinishedAt       time.Time                        `json:"finishedAt,omitempty"`
	Plan             *activities.PlanSummary          `json:"plan,omitempty"`
	ApprovalDeadline time.Time                        `json:"approvalDeadline,omitempty"`
	Approval         *ApprovalRecord                  `json:"approval,omitempty"`
	Execution        *activities.ExecuteCleanupResult `json:"execution,omitempty"`
	Purge            *activities.PurgeTrashResult     `json:"purge,omitempty"`
	QuotaBefore      []activities.TenantQuota         `json:"quotaBefore,omitempty"`
	QuotaAfter       []activities.TenantQuota         `json:"quotaAfter,omitempty"`
	ReportPath       string                           `json:"reportPath,omitempty"`
	Notes            []string                         `json:"notes,omitempty"`
	// Usage is what fills each tenant's quota, per kind, with the top
	// offenders (no per-job rows: `flinkmaint usage` has those).
	Usage []usage.Report `json:"usage,omitempty"`
}

// GovernanceTenantReport is one tenant's outcome.
type GovernanceTenantReport struct {
	Tenant          string  `json:"tenant"`
	PlannedItems    int64   `json:"plannedItems"`
	PlannedFiles    int64   `json:"plannedFiles"`
	PlannedBytes    int64   `json:"plannedBytes"`
	ReclaimedItems  int64   `json:"reclaimedItems"`
	ReclaimedFiles  int64   `json:"reclaimedFiles"`
	ReclaimedDirs   int64   `json:"reclaimedDirs"`
	ReclaimedBytes  int64   `json:"reclaimedBytes"`
	NamespaceQuota  int64   `json:"namespaceQuota"`
	NamespaceBefore int64   `json:"namespaceBefore"`
	NamespaceAfter  int64   `json:"namespaceAfter"`
	PercentBefore   float64 `json:"percentBefore"`
	PercentAfter    float64 `json:"percentAfter"`
	Unparseable     int64   `json:"keptUnparseable,omitempty"`
	// PlannedObjects and RemovedObjects count Kubernetes objects (also in
	// PlannedItems and ReclaimedItems).
	PlannedObjects int64 `json:"plannedObjects,omitempty"`
	RemovedObjects int64 `json:"removedObjects,omitempty"`
}

// GovernanceReport is the run's result and the report query's answer; it
// is written as JSON and Markdown next to the plan.
type GovernanceReport struct {
	RunID          string                           `json:"runId"`
	Mode           string                           `json:"mode"`
	Reason         string                           `json:"reason,omitempty"`
	Outcome        string                           `json:"outcome"`
	StartedAt      time.Time                        `json:"startedAt"`
	FinishedAt     time.Time                        `json:"finishedAt,omitempty"`
	PlanPath       string                           `json:"planPath,omitempty"`
	PlanSHA256     string                           `json:"planSha256,omitempty"`
	Approval       *ApprovalRecord                  `json:"approval,omitempty"`
	ReclaimedFiles int64                            `json:"reclaimedFiles"`
	ReclaimedBytes int64                            `json:"reclaimedBytes"`
	Tenants        []GovernanceTenantReport         `json:"tenants"`
	Execution      *activities.ExecuteCleanupResult `json:"execution,omitempty"`
	Purge          *activities.PurgeTrashResult     `json:"purge,omitempty"`
	Sample         []activities.PlanItemBrief       `json:"plannedSample,omitempty"`
	// Objects are the Kubernetes objects of the plan (planned, then kept),
	// with their outcome once executed.
	Objects []activities.ObjectBrief `json:"kubernetesObjects,omitempty"`
	// Usage is the storage usage of the tenants in scope at planning time.
	Usage []usage.Report `json:"usage,omitempty"`
	Notes []string       `json:"notes,omitempty"`
}

func buildGovernanceReport(in *GovernanceInput, st *GovernanceState) *GovernanceReport {
	rep := &GovernanceReport{RunID: st.RunID, Mode: st.Mode, Reason: in.Reason, Outcome: st.Phase, StartedAt: st.StartedAt,
		FinishedAt: st.FinishedAt, Approval: st.Approval, Execution: st.Execution, Purge: st.Purge, Usage: st.Usage, Notes: st.Notes}
	byTenant := map[string]*GovernanceTenantReport{}
	var order []string
	get := func(name string) *GovernanceTenantReport {
		if t, ok := byTenant[name]; ok {
			return t
		}
		t := &GovernanceTenantReport{Tenant: name}
		byTenant[name] = t
		order = append(order, name)
		return t
	}
	if p := st.Plan; p != nil {
		rep.PlanPath, rep.PlanSHA256, rep.Sample = p.PlanPath, p.PlanSHA256, p.Sample
		for _, tp := range p.Tenants {
			t := get(tp.Tenant)
			t.PlannedItems, t.PlannedFiles, t.PlannedBytes, t.Unparseable = tp.Items, tp.Files, tp.Bytes, tp.Unparseable
			t.PlannedObjects = tp.Objects
		}
		rep.Objects = append(rep.Objects, p.ObjectSample...)
	}
	if e := st.Execution; e != nil {
		rep.ReclaimedFiles, rep.ReclaimedBytes = e.Files, e.Bytes
		for _, tr := range e.Tenants {
			t := get(tr.Tenant)
			t.ReclaimedItems, t.ReclaimedFiles, t.ReclaimedDirs, t.ReclaimedBytes = tr.Items, tr.Files, tr.Dirs, tr.Bytes
			t.RemovedObjects = tr.Objects
		}
		outcome := map[string]activities.ObjectBrief{}
		for _, o := range e.ObjectOutcomes {
			outcome[o.Path] = o
		}
		for i, o := range rep.Objects {
			if x, ok := outcome[o.Path]; ok && o.Kept == "" {
				rep.Objects[i].Outcome, rep.Objects[i].Detail = x.Outcome, x.Detail
			}
		}
	}
	for _, q := range st.QuotaBefore {
		t := get(q.Tenant)
		t.NamespaceQuota, t.NamespaceBefore, t.PercentBefore = q.NamespaceQuota, q.NamespaceUsed, q.Percent
	}
	for _, q := range st.QuotaAfter {
		t := get(q.Tenant)
		t.NamespaceQuota, t.NamespaceAfter, t.PercentAfter = q.NamespaceQuota, q.NamespaceUsed, q.Percent
	}
	sort.Strings(order)
	for _, name := range order {
		rep.Tenants = append(rep.Tenants, *byTenant[name])
	}
	return rep
}

// Encode renders the report as indented JSON and as Markdown.
func (rep *GovernanceReport) Encode() (jsonDoc, markdown []byte, err error) {
	// encoding/json is deterministic for these types (struct field order,
	// sorted map keys); workflowcheck cannot see through its reflection.
	jsonDoc, err = json.MarshalIndent(rep, "", "  ") //workflowcheck:ignore
	if err != nil {
		return nil, nil, err
	}
	return jsonDoc, []byte(rep.Markdown()), nil
}

// Markdown renders the report for people.
func (rep *GovernanceReport) Markdown() string {
	var b strings.Builder
	b.WriteString(fmt.Sprintf("# Governance run %s\n\n", rep.RunID))
	b.WriteString(fmt.Sprintf("- Mode: %s\n- Outcome: **%s**\n", rep.Mode, rep.Outcome))
	if rep.Reason != "" {
		b.WriteString(fmt.Sprintf("- Reason: %s\n", rep.Reason))
	}
	b.WriteString(fmt.Sprintf("- Started: %s\n", rep.StartedAt.Format(time.RFC3339)))
	if !rep.FinishedAt.IsZero() {
		b.WriteString(fmt.Sprintf("- Finished: %s\n", rep.FinishedAt.Format(time.RFC3339)))
	}
	if rep.PlanPath != "" {
		b.WriteString(fmt.Sprintf("- Plan: `%s` (sha256 %s)\n", rep.PlanPath, rep.PlanSHA256))
	}
	if a := rep.Approval; a != nil {
		verb := "Rejected"
		if a.Approved {
			verb = "Approved"
		}
		b.WriteString(fmt.Sprintf("- %s by %s at %s %s\n", verb, a.By, a.At.Format(time.RFC3339), a.Reason))
	}
	if e := rep.Execution; e != nil {
		b.WriteString(fmt.Sprintf("- Reclaimed: %d items, %d files, %d dirs, %d bytes; audit manifest `%s`\n", e.Items, e.Files, e.Dirs, e.Bytes, e.ManifestDir))
		if e.TrashRoot != "" {
			b.WriteString(fmt.Sprintf("- Recoverable from trash `%s/%s` until purged\n", e.TrashRoot, e.RunID))
		}
	}
	b.WriteString("\n## Tenants\n\n| tenant | planned files | planned bytes | reclaimed files | reclaimed bytes | namespace before | namespace after | quota | kept (unparseable) | Kubernetes objects planned / removed |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, t := range rep.Tenants {
		name := t.Tenant
		if name == "" {
			name = "(no tenant)"
		}
		b.WriteString(fmt.Sprintf("| %s | %d | %d | %d | %d | %d (%.1f%%) | %d (%.1f%%) | %d | %d | %d / %d |\n", name, t.PlannedFiles, t.PlannedBytes,
			t.ReclaimedFiles, t.ReclaimedBytes, t.NamespaceBefore, t.PercentBefore, t.NamespaceAfter, t.PercentAfter, t.NamespaceQuota, t.Unparseable,
			t.PlannedObjects, t.RemovedObjects))
	}
	if len(rep.Usage) > 0 {
		b.WriteString("\n## Storage usage\n")
		for _, u := range rep.Usage {
			b.WriteString("\n" + u.Markdown())
		}
	}
	if len(rep.Objects) > 0 {
		b.WriteString("\n## Kubernetes objects\n\n| object | kind | cluster | rule or kept | age | owner | outcome |\n|---|---|---|---|---|---|---|\n")
		for _, o := range rep.Objects {
			decision := "delete: " + o.Rule
			if o.Kept != "" {
				decision = "keep: " + o.Kept
			}
			outcome := o.Outcome
			if outcome == "" && o.Kept == "" {
				outcome = "planned"
			}
			if o.Detail != "" {
				// A | in a detail would end the table cell.
				outcome = strings.TrimSpace(outcome + " (" + strings.ReplaceAll(o.Detail, "|", "/") + ")")
			}
			b.WriteString(fmt.Sprintf("| `%s/%s` | %s | %s | %s | %s | %s | %s |\n", inventory.NamespaceKey(o.KubeCluster, o.Namespace), o.Name, o.Kind, o.ClusterID, decision, o.Age,
				o.Owner, outcome))
		}
	}
	if len(rep.Sample) > 0 {
		b.WriteString("\n## Planned items (first ones)\n\n| path | kind | rule | files | bytes |\n|---|---|---|---|---|\n")
		for _, it := range rep.Sample {
			b.WriteString(fmt.Sprintf("| `%s` | %s | %s | %d | %d |\n", it.Path, it.Kind, it.Rule, it.Files, it.Bytes))
		}
	}
	if e := rep.Execution; e != nil && len(e.Refused) > 0 {
		b.WriteString("\n## Refused or failed at execution\n\n")
		for _, r := range e.Refused {
			b.WriteString(fmt.Sprintf("- `%s` %s: %s\n", r.Path, r.Outcome, r.Detail))
		}
	}
	if len(rep.Notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range rep.Notes {
			b.WriteString("- " + n + "\n")
		}
	}
	return b.String()
}
