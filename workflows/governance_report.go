package workflows

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/usage"
)

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
	// ByRule is what the plan deletes, per rule; Kept what it keeps, per
	// reason.
	ByRule []governance.RuleTotals `json:"byRule,omitempty"`
	Kept   []governance.RuleTotals `json:"kept,omitempty"`
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
	Execution      *governance.ExecuteCleanupResult `json:"execution,omitempty"`
	Purge          *governance.PurgeTrashResult     `json:"purge,omitempty"`
	Sample         []governance.PlanItemBrief       `json:"plannedSample,omitempty"`
	// Objects are the Kubernetes objects of the plan (planned, then kept),
	// with their outcome once executed.
	Objects []governance.ObjectBrief `json:"kubernetesObjects,omitempty"`
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
			t.ByRule, t.Kept = tp.ByRule, tp.Kept
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
		outcome := map[string]governance.ObjectBrief{}
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
			b.WriteString(fmt.Sprintf("- Recoverable from trash `%s/%s` until purged: `flinkmaint governance restore %s --dry-run` shows what goes back. "+
				"A trashed savepoint restores from its trash path as it is; a checkpoint restores only once put back (`--path`): "+
				"its shared state is named by absolute path. Each item's way back is in the audit manifest (`restore`).\n", e.TrashRoot, e.RunID, e.RunID))
		}
	}
	b.WriteString("\n## Tenants\n\n| tenant | planned files | planned bytes | reclaimed files | reclaimed bytes | namespace before | namespace after | quota | kept (unparseable) | Kubernetes objects planned / removed |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, t := range rep.Tenants {
		b.WriteString(fmt.Sprintf("| %s | %d | %d | %d | %d | %d (%.1f%%) | %d (%.1f%%) | %d | %d | %d / %d |\n", orNoTenant(t.Tenant), t.PlannedFiles, t.PlannedBytes,
			t.ReclaimedFiles, t.ReclaimedBytes, t.NamespaceBefore, t.PercentBefore, t.NamespaceAfter, t.PercentAfter, t.NamespaceQuota, t.Unparseable,
			t.PlannedObjects, t.RemovedObjects))
	}
	writeRuleTotals(&b, "\n## Planned by rule, kept by reason\n\n", rep.Tenants)
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

// writeRuleTotals writes, under heading, what each tenant's plan deletes
// per rule and keeps per reason; nothing when no plan was made.
func writeRuleTotals(b *strings.Builder, heading string, tenants []GovernanceTenantReport) {
	var rows []string
	for _, t := range tenants {
		for _, r := range t.ByRule {
			rows = append(rows, fmt.Sprintf("| %s | delete: %s | %d | %d | %d | %d |\n", orNoTenant(t.Tenant), r.Rule, r.Items, r.Files, r.Dirs, r.Bytes))
		}
		for _, r := range t.Kept {
			rows = append(rows, fmt.Sprintf("| %s | keep: %s | %d | %d | %d | %d |\n", orNoTenant(t.Tenant), r.Rule, r.Items, r.Files, r.Dirs, r.Bytes))
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString(heading + "| tenant | rule or reason | items | files | dirs | bytes |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		b.WriteString(r)
	}
}

func orNoTenant(name string) string {
	if name == "" {
		return "(no tenant)"
	}
	return name
}
