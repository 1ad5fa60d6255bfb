package workflows

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/activities/core"
)

// WindowReport is what a window produced, per job and per tenant. It is the
// workflow's result, the report query's answer, and is written as JSON and
// Markdown next to the manifest.
type WindowReport struct {
	WindowID    string                 `json:"windowId"`
	Reason      string                 `json:"reason"`
	Ticket      string                 `json:"ticket,omitempty"`
	Phase       string                 `json:"phase"`
	StartedAt   time.Time              `json:"startedAt"`
	FinishedAt  time.Time              `json:"finishedAt,omitempty"`
	AbortReason string                 `json:"abortReason,omitempty"`
	Network     *NetworkConfirmation   `json:"network,omitempty"`
	Jobs        []JobProgress          `json:"jobs"`
	Skipped     []core.SkippedJob      `json:"skipped,omitempty"`
	QuotaBefore []capacity.TenantQuota `json:"quotaBefore,omitempty"`
	QuotaAfter  []capacity.TenantQuota `json:"quotaAfter,omitempty"`
	// QuotaGate is what the restart gate measured and projected.
	QuotaGate []capacity.TenantQuota `json:"quotaGate,omitempty"`
	// Phases is when each phase began.
	Phases    []PhaseStart     `json:"phases,omitempty"`
	Cleanup   *WindowCleanup   `json:"cleanup,omitempty"`
	Canary    *CanaryDrill     `json:"canary,omitempty"`
	Decisions []DecisionRecord `json:"decisions,omitempty"`
	Notes     []string         `json:"notes,omitempty"`
	Manifest  string           `json:"manifest"`
}

// rehearsalLines are the report's rows of the jobs a rehearsal phase saw.
func rehearsalLines(jobs []JobProgress) string {
	var b strings.Builder
	for _, j := range jobs {
		if j.Rehearsal == "" {
			continue
		}
		verdict := j.Rehearsal
		if j.RehearsalWaived {
			verdict += " (went on knowingly)"
		}
		sp := ""
		if j.RehearsalSavepoint != "" {
			sp = "`" + j.RehearsalSavepoint + "`"
		}
		b.WriteString(fmt.Sprintf("| %s | %s | %s | %s |\n", j.Target.Label(), verdict, sp, mdEscape(j.RehearsalCause)))
	}
	return b.String()
}

func buildReport(in *WindowInput, st *WindowState) *WindowReport {
	return &WindowReport{
		WindowID: in.WindowID, Reason: in.Reason, Ticket: in.Ticket, Phase: st.Phase,
		StartedAt: st.StartedAt, FinishedAt: st.FinishedAt, AbortReason: st.AbortReason, Network: st.Network,
		Jobs: st.Jobs, Skipped: st.Skipped, QuotaBefore: st.QuotaBefore, QuotaAfter: st.QuotaAfter, QuotaGate: st.QuotaGate, Phases: st.PhaseStarts,
		Cleanup: st.Cleanup, Canary: st.Canary, Decisions: st.Decisions, Notes: st.Notes, Manifest: st.ManifestPath,
	}
}

// Encode renders the report as indented JSON and as Markdown.
func (rep *WindowReport) Encode() (jsonDoc, markdown []byte, err error) {
	// encoding/json is deterministic for these types (struct field order,
	// sorted map keys); workflowcheck cannot see through its reflection.
	jsonDoc, err = json.MarshalIndent(rep, "", "  ") //workflowcheck:ignore
	if err != nil {
		return nil, nil, err
	}
	return jsonDoc, []byte(rep.Markdown()), nil
}

// Markdown renders the report for people. (Sprintf into a Builder, not
// Fprintf: workflowcheck cannot see that the writer is in-memory.)
func (rep *WindowReport) Markdown() string {
	var b strings.Builder
	b.WriteString(fmt.Sprintf("# Maintenance window %s\n\n", rep.WindowID))
	b.WriteString(fmt.Sprintf("- Reason: %s\n", rep.Reason))
	if rep.Ticket != "" {
		b.WriteString(fmt.Sprintf("- Ticket: %s\n", rep.Ticket))
	}
	b.WriteString(fmt.Sprintf("- Outcome: **%s**\n", rep.Phase))
	b.WriteString(fmt.Sprintf("- Started: %s\n", rep.StartedAt.Format(time.RFC3339)))
	if !rep.FinishedAt.IsZero() {
		b.WriteString(fmt.Sprintf("- Finished: %s (%s)\n", rep.FinishedAt.Format(time.RFC3339), rep.FinishedAt.Sub(rep.StartedAt).Round(time.Second)))
	}
	if rep.AbortReason != "" {
		b.WriteString(fmt.Sprintf("- Aborted: %s\n", rep.AbortReason))
	}
	if n := rep.Network; n != nil {
		b.WriteString(fmt.Sprintf("- Network change confirmed by %s at %s (%s)\n", n.By, n.At.Format(time.RFC3339), n.Reason))
	}
	b.WriteString(fmt.Sprintf("- Manifest: `%s`\n", rep.Manifest))
	if len(rep.Phases) > 0 {
		b.WriteString("- Phases: " + phaseDurations(rep) + "\n")
	}
	b.WriteString("\n")

	b.WriteString("## Jobs\n\n| job | old job id | savepoint | restart | new job id | checkpoint after restore | note |\n|---|---|---|---|---|---|---|\n")
	for _, j := range rep.Jobs {
		note := j.SkipReason
		if note == "" {
			note = firstNonEmpty(j.RestartError, j.SavepointError, j.ProofError, j.SavepointRecovered, j.SavepointFormatNote)
		}
		sp := j.SavepointState
		if j.ProofState != "" {
			sp += ", proof " + j.ProofState
		}
		if j.SavepointPath != "" {
			sp += " `" + j.SavepointPath + "`"
		}
		chk := ""
		if j.CheckpointID > 0 {
			chk = fmt.Sprintf("%d", j.CheckpointID)
		}
		b.WriteString(fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s |\n", j.Target.Label(), j.Target.JobID, sp, j.RestartState, j.NewJobID, chk, mdEscape(note)))
	}
	if rehearsed := rehearsalLines(rep.Jobs); rehearsed != "" {
		b.WriteString("\n## Rehearsal\n\n| job | verdict | savepoint | cause or why |\n|---|---|---|---|\n" + rehearsed)
	}
	if c := rep.Canary; c != nil {
		b.WriteString("\n## Canary restore drill\n\n")
		b.WriteString(fmt.Sprintf("- Job %s, savepoint `%s`: **%s** after %d attempt(s) (drill `%s`)\n", c.Key, c.Snapshot, firstNonEmpty(c.Outcome, "not run"), c.Attempts, c.WorkflowID))
		if c.Error != "" {
			b.WriteString("- Error: " + mdEscape(c.Error) + "\n")
		}
		if c.WaivedBy != "" {
			b.WriteString("- Waived by " + c.WaivedBy + "\n")
		}
	}
	if len(rep.Skipped) > 0 {
		b.WriteString("\n## Jobs left alone\n\n")
		for _, s := range rep.Skipped {
			b.WriteString(fmt.Sprintf("- %s (%s): %s\n", s.Key, s.JobID, s.Reason))
		}
	}
	writeQuotaTable(&b, rep)
	if c := rep.Cleanup; c != nil {
		b.WriteString("\n## Post-restart cleanup\n\n")
		b.WriteString(fmt.Sprintf("- Governance run `%s` (%s): %s\n", c.WorkflowID, c.Mode, firstNonEmpty(c.Outcome, "failed")))
		b.WriteString(fmt.Sprintf("- Planned: %d items, %d files; reclaimed: %d files, %d bytes\n", c.PlannedItems, c.PlannedFiles, c.ReclaimedFiles, c.ReclaimedBytes))
		if c.Error != "" {
			b.WriteString("- Error: " + mdEscape(c.Error) + "\n")
		}
		writeRuleTotals(&b, "\n", c.Tenants)
	}
	if len(rep.Decisions) > 0 {
		b.WriteString("\n## Operator actions\n\n")
		for _, d := range rep.Decisions {
			b.WriteString(fmt.Sprintf("- %s %s %s %s by %s: %s\n", d.At.Format(time.RFC3339), d.Kind, d.Action, d.Job, d.By, d.Reason))
		}
	}
	if len(rep.Notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range rep.Notes {
			b.WriteString(fmt.Sprintf("- %s\n", n))
		}
	}
	return b.String()
}

// writeQuotaTable shows each tenant's namespace use before the window, at
// the restart gate (with the projected restart files against the
// headroom) and after it, cleanup included.
func writeQuotaTable(b *strings.Builder, rep *WindowReport) {
	b.WriteString("\n## Quota per tenant\n\n| tenant | quota | before | restart gate | after |\n|---|---|---|---|---|\n")
	after := map[string]capacity.TenantQuota{}
	for _, q := range rep.QuotaAfter {
		after[q.Tenant] = q
	}
	gate := map[string]capacity.TenantQuota{}
	for _, q := range rep.QuotaGate {
		gate[q.Tenant] = q
	}
	for _, q := range rep.QuotaBefore {
		quota := "none"
		if q.NamespaceQuota >= 0 {
			quota = fmt.Sprintf("%d", q.NamespaceQuota)
		}
		gateCell, afterCell := "-", "?"
		if g, ok := gate[q.Tenant]; ok {
			verdict := "fits"
			if !g.RestartAllowed {
				verdict = "does not fit: " + g.GateReason
			}
			gateCell = fmt.Sprintf("%d used + %d projected for the restart, headroom %d: %s", g.NamespaceUsed, g.ProjectedFiles, g.Headroom, verdict)
		}
		if a, ok := after[q.Tenant]; ok {
			afterCell = usedCell(a)
		}
		b.WriteString(fmt.Sprintf("| %s | %s | %s | %s | %s |\n", q.Tenant, quota, usedCell(q), mdEscape(gateCell), afterCell))
	}
}

// phaseDurations is "preflight 2s, savepoint-all 1m4s, ...": each phase
// until the next began, the last until the window finished (or "running").
func phaseDurations(rep *WindowReport) string {
	parts := make([]string, 0, len(rep.Phases))
	for i, p := range rep.Phases {
		switch {
		case i+1 < len(rep.Phases):
			parts = append(parts, fmt.Sprintf("%s %s", p.Phase, rep.Phases[i+1].At.Sub(p.At).Round(time.Second)))
		case p.Phase == WindowPhaseCompleted || p.Phase == WindowPhaseAborted:
			parts = append(parts, p.Phase)
		case !rep.FinishedAt.IsZero():
			parts = append(parts, fmt.Sprintf("%s %s", p.Phase, rep.FinishedAt.Sub(p.At).Round(time.Second)))
		default:
			parts = append(parts, p.Phase+" running")
		}
	}
	return strings.Join(parts, ", ")
}

// PhaseDuration is how long phase took, and whether the window left it.
func (rep *WindowReport) PhaseDuration(phase string) (time.Duration, bool) {
	for i, p := range rep.Phases {
		if p.Phase == phase && i+1 < len(rep.Phases) {
			return rep.Phases[i+1].At.Sub(p.At), true
		}
	}
	return 0, false
}

// usedCell is "2557 (85.3%, warning)".
func usedCell(q capacity.TenantQuota) string {
	if q.NamespaceQuota < 0 {
		return fmt.Sprintf("%d", q.NamespaceUsed)
	}
	return fmt.Sprintf("%d (%.1f%%, %s)", q.NamespaceUsed, q.Percent, q.Level)
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}

// Manifest is the durable record of a window a person can act on without
// Temporal: for every job, where its savepoint is and how to restart it.
type Manifest struct {
	WindowID  string            `json:"windowId"`
	Reason    string            `json:"reason"`
	Ticket    string            `json:"ticket,omitempty"`
	Phase     string            `json:"phase"`
	UpdatedAt time.Time         `json:"updatedAt"`
	Jobs      []ManifestJob     `json:"jobs"`
	Skipped   []core.SkippedJob `json:"skipped,omitempty"`
}

// ManifestJob is one job's line in the manifest.
type ManifestJob struct {
	Key            string `json:"key"`
	Tenant         string `json:"tenant"`
	ClusterID      string `json:"clusterId"`
	KubeCluster    string `json:"kubeCluster,omitempty"`
	RESTURL        string `json:"restUrl"`
	JobName        string `json:"jobName"`
	OldJobID       string `json:"oldJobId"`
	SavepointState string `json:"savepointState"`
	SavepointPath  string `json:"savepointPath,omitempty"`
	// SavepointProof is the storage proof's verdict, when the window ran it.
	SavepointProof string      `json:"savepointProof,omitempty"`
	RestartState   string      `json:"restartState"`
	NewJobID       string      `json:"newJobId,omitempty"`
	Restart        interface{} `json:"restart"`
	Note           string      `json:"note,omitempty"`
	// Seen is what the window last learned of the job when a step on it
	// failed (running, stopped, unanswered, unknown).
	Seen string `json:"seen,omitempty"`
}

func manifestJSON(in *WindowInput, st *WindowState, now time.Time) ([]byte, error) {
	m := Manifest{WindowID: in.WindowID, Reason: in.Reason, Ticket: in.Ticket, Phase: st.Phase, UpdatedAt: now, Skipped: st.Skipped}
	for _, j := range st.Jobs {
		m.Jobs = append(m.Jobs, ManifestJob{
			Key: j.Target.Key, Tenant: j.Target.Tenant, ClusterID: j.Target.ClusterID, KubeCluster: j.Target.KubeCluster, RESTURL: j.Target.RESTURL,
			JobName: j.Target.JobName, OldJobID: j.Target.JobID, SavepointState: j.SavepointState, SavepointPath: j.SavepointPath,
			SavepointProof: j.ProofState, RestartState: j.RestartState, NewJobID: j.NewJobID, Restart: j.Target.Restart,
			Note: firstNonEmpty(j.SkipReason, j.RestartError, j.SavepointError, j.ProofError), Seen: j.Seen,
		})
	}
	return json.MarshalIndent(m, "", "  ") //workflowcheck:ignore (deterministic, see Encode)
}
