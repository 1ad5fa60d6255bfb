package workflows

import (
	"fmt"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/doctor"
	"github.com/flinkmaint/flinkmaint/activities/drills"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
)

// What the Temporal Web UI shows of a flinkmaint run beside its history:
//
//   - a static summary, one line set when the run or child starts
//     (StartSummary for what the CLI starts, the *ChildSummary functions
//     for children), shown in lists, in the parent's history and on the
//     run's "User Metadata" tab;
//   - current details, Markdown a window, governance run, drill or
//     upgrade replaces as it goes (workflow.SetCurrentDetails): its phase,
//     a progress table and, while it waits for an operator, the decision
//     and the exact `flinkmaint` commands that answer it.
//
// Current details add no event to history (the UI reads them through a
// query), so setting them changes no command and no replay. Every function
// here is pure and deterministic: the same state gives the same text, and
// the text stays small however many jobs a run has (the UI cannot decode
// payloads the worker stores compressed). Text is built with
// WriteString(fmt.Sprintf(...)), not Fprintf: workflowcheck cannot see that
// the writer is in memory.

// maxSummaryBytes bounds a static summary; the server refuses a start whose
// summary payload is over 400 bytes (limit.userMetadataSummarySize).
const maxSummaryBytes = 200

// maxDetailItems bounds the jobs, commands or notes a details text lists;
// the status commands list them all.
const maxDetailItems = 10

// maxDetailText bounds one free text (a decision's reason, an error).
const maxDetailText = 1500

// StartSummary is the static summary of a workflow the CLI starts (or a
// schedule starts), from its input; empty for an input it does not know.
func StartSummary(in interface{}) string {
	switch v := in.(type) {
	case WindowInput:
		return clip(fmt.Sprintf("window %s: %s in %s%s", v.WindowID, jobsText(v.Scope), tenantsText(v.Scope), clustersText(v.Scope))+reasonText(v.Reason), maxSummaryBytes)
	case GovernanceInput:
		return governanceSummary(v)
	case RestoreDrillInput:
		return drillSummary(v)
	case UpgradeInput:
		mode := v.Mode
		if mode == "" {
			mode = UpgradeModeStop
		}
		if v.CheckOnly {
			into := ""
			if v.Rehearsal.FlinkVersion != "" {
				into = " on Flink " + v.Rehearsal.FlinkVersion
			}
			return clip(fmt.Sprintf("check of upgrade %s: rehearse the new version of %s%s, nothing stops", v.UpgradeID, v.Job, into)+reasonText(v.Reason), maxSummaryBytes)
		}
		return clip(fmt.Sprintf("upgrade %s: %s to a new version (mode %s)", v.UpgradeID, v.Job, mode)+reasonText(v.Reason), maxSummaryBytes)
	case ScheduledSavepointsInput:
		return clip(fmt.Sprintf("savepoints of %s in %s%s, jobs keep running", jobsText(v.Scope), tenantsText(v.Scope), clustersText(v.Scope))+scheduleText(v.Schedule), maxSummaryBytes)
	case QuotaWatchInput:
		what := "quota check"
		if v.Iterations == 0 {
			what = "quota watch"
		}
		return clip(fmt.Sprintf("%s of %s", what, tenantsText(v.Scope)), maxSummaryBytes)
	case SavepointCatalogInput:
		switch {
		case v.List != nil && v.List.Job != "":
			return clip("list savepoints of "+v.List.Job, maxSummaryBytes)
		case v.List != nil:
			return clip("list savepoints of "+tenantsText(core.Scope{Tenants: v.List.Tenants}), maxSummaryBytes)
		case v.Adopt != nil:
			return clip(fmt.Sprintf("adopt %d savepoint(s) into %s", len(v.Adopt.Paths), v.Adopt.Job), maxSummaryBytes)
		}
	case capacity.TenantUsageInput:
		return clip("storage usage of "+tenantsText(core.Scope{Tenants: v.Tenants}), maxSummaryBytes)
	case PingInput:
		return clip("ping: "+v.Message, maxSummaryBytes)
	case doctor.DoctorInput:
		return "doctor: checks from the worker"
	}
	return ""
}

func governanceSummary(in GovernanceInput) string {
	jobs := ""
	if len(in.Scope.IncludeJobs) > 0 || len(in.Scope.ExcludeJobs) > 0 {
		jobs = ", " + jobsText(in.Scope)
	}
	mode := in.Mode
	if mode == "" {
		mode = ModePlan
	}
	return clip(fmt.Sprintf("governance of %s%s%s (%s)", tenantsText(in.Scope), clustersText(in.Scope), jobs, mode)+reasonText(in.Reason), maxSummaryBytes)
}

func drillSummary(in RestoreDrillInput) string {
	tier := in.Tier
	if tier == 0 {
		tier = 2
	}
	sel := in.Selection
	var what string
	switch sel.Mode {
	case drills.DrillRunSavepoints:
		what = "savepoints of run " + sel.RunID
	case drills.DrillSnapshot:
		what = sel.Job + " from " + lastElement(sel.Snapshot)
	default:
		what = fmt.Sprintf("latest checkpoints of %s in %s%s", jobsText(in.Scope), tenantsText(in.Scope), clustersText(in.Scope))
	}
	if sel.SamplePerTenant > 0 {
		what += fmt.Sprintf(", %d per tenant", sel.SamplePerTenant)
	}
	return clip(fmt.Sprintf("restore drill (tier %d): %s", tier, what)+scheduleText(in.Schedule), maxSummaryBytes)
}

// savepointChildSummary: "stop cluster-a/orders with savepoint (window wk-49)".
func savepointChildSummary(jobKey, of string, attempt int) string {
	return clip(fmt.Sprintf("stop %s with savepoint (%s%s)", jobKey, of, attemptText(attempt)), maxSummaryBytes)
}

// restartChildSummary: "restart cluster-a/orders from savepoint (window
// wk-49, wave 1)"; what says which version for upgrades.
func restartChildSummary(what, jobKey, of string, attempt int) string {
	return clip(fmt.Sprintf("%s %s from savepoint (%s%s)", what, jobKey, of, attemptText(attempt)), maxSummaryBytes)
}

// drillChildSummary: "restore drill of cluster-a/orders savepoint-1a2b (tier 2)".
func drillChildSummary(prefix, jobKey, snapshot string, tier int, of string) string {
	s := fmt.Sprintf("%srestore drill of %s %s (tier %d", prefix, jobKey, lastElement(snapshot), tier)
	if of != "" {
		s += ", " + of
	}
	return clip(s+")", maxSummaryBytes)
}

// waveText names a restart wave the way the window's decisions do.
func waveText(wave int) string {
	if wave == 0 {
		return "canary wave"
	}
	return fmt.Sprintf("wave %d", wave)
}

// ---- windows ----

// windowDetails is a window's current details: phase, job counts per
// step, waves, canary, network change, cleanup and the pending decision
// with the commands that answer it.
func windowDetails(in *WindowInput, st *WindowState) string {
	var b strings.Builder
	id := in.WindowID
	b.WriteString(fmt.Sprintf("**Window** `%s` · **phase** `%s`", id, st.Phase))
	if !st.FinishedAt.IsZero() {
		b.WriteString(fmt.Sprintf(" · finished %s", timeText(st.FinishedAt)))
	}
	b.WriteString("\n\n")
	if st.Paused {
		b.WriteString(fmt.Sprintf("**Paused** by %s: no new step starts until it is resumed.\n\n```sh\nflinkmaint window resume %s\n```\n\n", mdText(st.PausedBy), id))
	}

	sp, rs := stepCounts(st.Jobs, func(j *JobProgress) string { return j.SavepointState }), stepCounts(st.Jobs, func(j *JobProgress) string { return j.RestartState })
	b.WriteString("| jobs | total | pending | running | done | skipped | failed |\n|---|--:|--:|--:|--:|--:|--:|\n")
	b.WriteString(fmt.Sprintf("| savepoint | %d | %d | %d | %d | %d | %d |\n", len(st.Jobs), sp.pending, sp.running, sp.done, sp.skipped, sp.failed))
	b.WriteString(fmt.Sprintf("| restart | %d | %d | %d | %d | %d | %d |\n\n", len(st.Jobs), rs.pending, rs.running, rs.done, rs.skipped, rs.failed))
	if n := len(st.Skipped); n > 0 {
		b.WriteString(fmt.Sprintf("%d job(s) in scope left alone (no restart recipe, not running, ...): `flinkmaint window status %s` says why.\n\n", n, id))
	}
	if in.Policy.Drill.ProveSavepoints {
		var proven, failed, waived, todo int
		for i := range st.Jobs {
			j := &st.Jobs[i]
			switch {
			case j.SavepointState != StepDone:
			case j.ProofState == StepDone:
				proven++
			case j.ProofState == StepFailed:
				failed++
			case j.ProofState == ProofWaived:
				waived++
			default:
				todo++
			}
		}
		b.WriteString(fmt.Sprintf("**Storage proof** of the savepoints: %d passed, %d failed, %d waived, %d to prove.\n\n", proven, failed, waived, todo))
	}
	if waves := windowWaves(st); waves > 0 {
		var jobs, done, failed, running int
		for i := range st.Jobs {
			j := &st.Jobs[i]
			if j.RestartWave != st.Wave || j.SavepointState != StepDone || j.RestartState == StepSkipped {
				continue
			}
			jobs++
			switch j.RestartState {
			case StepDone:
				done++
			case StepFailed:
				failed++
			case StepRunning:
				running++
			}
		}
		b.WriteString(fmt.Sprintf("**Restart waves**: %d (wave 0 is the canary wave). ", waves))
		if st.Phase == WindowPhaseRestart {
			b.WriteString(fmt.Sprintf("Now %s: %d job(s), %d healthy, %d restarting, %d failed.", waveText(st.Wave), jobs, done, running, failed))
		}
		b.WriteString("\n\n")
	}
	if c := st.Canary; c != nil {
		outcome := c.Outcome
		if outcome == "" {
			outcome = "not run yet"
		}
		b.WriteString(fmt.Sprintf("**Canary drill** of `%s`: %s", c.Key, outcome))
		if c.Attempts > 0 {
			b.WriteString(fmt.Sprintf(" (attempt %d)", c.Attempts))
		}
		if c.WaivedBy != "" {
			b.WriteString(fmt.Sprintf(", waived by %s", mdText(c.WaivedBy)))
		}
		b.WriteString(".\n\n")
	}
	if n := st.Network; n != nil {
		how := "confirmed by " + mdText(n.By)
		if n.Auto {
			how = "confirmed automatically (" + mdText(n.Reason) + ")"
		}
		b.WriteString(fmt.Sprintf("**Network change** %s at %s, after %d reminder(s).\n\n", how, timeText(n.At), n.Reminders))
	}
	if c := st.Cleanup; c != nil {
		b.WriteString(fmt.Sprintf("**Cleanup**: governance `%s` (%s)", c.WorkflowID, c.Mode))
		switch {
		case c.Error != "":
			b.WriteString(fmt.Sprintf(" failed: %s", mdText(clip(c.Error, maxDetailText))))
		case c.Outcome != "":
			b.WriteString(fmt.Sprintf(" %s: %d item(s) planned, %d file(s) and %s reclaimed", c.Outcome, c.PlannedItems, c.ReclaimedFiles, bytesText(c.ReclaimedBytes)))
		case c.Mode == ModePlanAndApprove:
			name := governanceCommandName(c.WorkflowID)
			b.WriteString(fmt.Sprintf(": its plan waits for approval (that run's details show it and its sha256):\n\n```sh\nflinkmaint governance status %s\nflinkmaint governance approve %s --plan-sha256 SHA --reason TEXT\n```\n", name, name))
		}
		b.WriteString("\n\n")
	}
	if p := st.Pending; p != nil {
		b.WriteString(decisionText(p, WindowCommands(id, p)))
		b.WriteString("The CLI records who answers from `FLINKMAINT_OPERATOR`, else the login name.\n\n")
	} else if st.AbortReason != "" {
		b.WriteString(fmt.Sprintf("**Abort**: %s\n\n", mdText(clip(st.AbortReason, maxDetailText))))
	}
	if st.ManifestPath != "" {
		b.WriteString(fmt.Sprintf("Manifest: `%s`", st.ManifestPath))
		if st.ReportPath != "" {
			b.WriteString(fmt.Sprintf(" · report: `%s`", st.ReportPath))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// windowWaves is the number of restart waves once they are known.
func windowWaves(st *WindowState) int {
	if st.Waves > 0 {
		return st.Waves
	}
	switch st.Phase {
	case WindowPhaseRestart, WindowPhaseCleanup, WindowPhaseReport, WindowPhaseCompleted:
	default:
		return 0
	}
	waves := 0
	for i := range st.Jobs {
		if j := &st.Jobs[i]; j.SavepointState == StepDone && j.RestartState != StepSkipped {
			waves = max(waves, j.RestartWave+1)
		}
	}
	return waves
}

// WindowCommands are the CLI commands that answer a window's decision
// (the Web UI's details, notifications and `flinkmaint window status`).
func WindowCommands(id string, p *PendingDecision) []string {
	if p.Kind == DecisionNetworkChange {
		return []string{
			fmt.Sprintf("flinkmaint window confirm-network-change %s --reason TEXT", id),
			fmt.Sprintf("flinkmaint window abort %s --reason TEXT", id),
		}
	}
	var cmds []string
	for _, a := range p.Allowed {
		if a != ActionRetryJob && a != ActionSkipJob {
			cmds = append(cmds, fmt.Sprintf("flinkmaint window decide %s --action %s --reason TEXT", id, shellWord(a)))
			continue
		}
		for i, j := range p.Jobs {
			if i == maxDetailItems {
				break
			}
			cmds = append(cmds, fmt.Sprintf("flinkmaint window decide %s --action %s --job %s --reason TEXT", id, a, shellWord(j)))
		}
	}
	if len(p.Jobs) > maxDetailItems {
		cmds = append(cmds, fmt.Sprintf("flinkmaint window status %s   # lists all %d jobs", id, len(p.Jobs)))
	}
	return cmds
}

// upgradeCommands are the CLI commands that answer an upgrade's decision.
func upgradeCommands(id string, p *PendingDecision) []string {
	var cmds []string
	for _, a := range p.Allowed {
		cmds = append(cmds, fmt.Sprintf("flinkmaint upgrade decide %s --action %s --reason TEXT", id, shellWord(a)))
	}
	return cmds
}

// decisionText renders a pending decision: kind, since, reason (its
// first line, then a list item per further line, one per job), the jobs
// it is about and the commands.
func decisionText(p *PendingDecision, cmds []string) string {
	var b strings.Builder
	head, lines := reasonLines(p.Reason)
	b.WriteString(fmt.Sprintf("### Waiting for a decision: `%s`\n\nSince %s. %s\n\n", p.Kind, timeText(p.Since), mdText(clip(head, maxDetailText))))
	for i, l := range lines {
		if i > maxDetailItems {
			b.WriteString(fmt.Sprintf("- and %d more lines\n", len(lines)-i))
			break
		}
		b.WriteString("- " + mdText(clip(strings.TrimPrefix(l, "- "), maxDetailText)) + "\n")
	}
	if len(lines) > 0 {
		b.WriteString("\n")
	}
	if len(p.Jobs) > 0 {
		b.WriteString("Jobs: ")
		for i, j := range p.Jobs {
			if i == maxDetailItems {
				b.WriteString(fmt.Sprintf(" and %d more", len(p.Jobs)-i))
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(fmt.Sprintf("`%s`", j))
		}
		b.WriteString("\n\n")
	}
	b.WriteString("Answer with one of:\n\n```sh\n")
	for _, c := range cmds {
		b.WriteString(c + "\n")
	}
	b.WriteString("```\n\n")
	return b.String()
}

// reasonLines splits a decision's reason into its first line and the
// lines after it (a decision about failed jobs gives one per job).
func reasonLines(reason string) (string, []string) {
	lines := strings.Split(reason, "\n")
	return lines[0], lines[1:]
}

type stepCount struct{ pending, running, done, skipped, failed int }

func stepCounts(jobs []JobProgress, state func(*JobProgress) string) stepCount {
	var c stepCount
	for i := range jobs {
		switch state(&jobs[i]) {
		case StepRunning:
			c.running++
		case StepDone:
			c.done++
		case StepSkipped:
			c.skipped++
		case StepFailed:
			c.failed++
		default:
			c.pending++
		}
	}
	return c
}

// ---- governance ----

// governanceDetails is a governance run's current details: phase, the
// plan's and the execution's figures and, while the plan waits for
// approval, the commands that approve or reject it. workflowID is the
// run's own, which the commands name.
func governanceDetails(workflowID string, st *GovernanceState) string {
	var b strings.Builder
	b.WriteString(fmt.Sprintf("**Governance** `%s` (%s) · **phase** `%s`", st.RunID, st.Mode, st.Phase))
	if !st.FinishedAt.IsZero() {
		b.WriteString(fmt.Sprintf(" · finished %s", timeText(st.FinishedAt)))
	}
	b.WriteString("\n\n")
	if p := st.Plan; p != nil {
		b.WriteString("| cleanup | items | files | dirs | bytes |\n|---|--:|--:|--:|--:|\n")
		b.WriteString(fmt.Sprintf("| planned (%s) | %d | %d | %d | %s |\n", p.Action, p.Items, p.Files, p.Dirs, bytesText(p.Bytes)))
		if e := st.Execution; e != nil {
			b.WriteString(fmt.Sprintf("| applied | %d | %d | %d | %s |\n", e.Items, e.Files, e.Dirs, bytesText(e.Bytes)))
		}
		b.WriteString(fmt.Sprintf("| kept | %d | | | |\n\n", p.KeptItems))
		if len(p.ScopeTenants) > 0 {
			names := make([]string, len(p.ScopeTenants))
			for i, t := range p.ScopeTenants {
				names[i] = t.Name
			}
			b.WriteString(fmt.Sprintf("Tenants: %s; %d live job(s) read for references.\n\n", mdText(listText(names)), p.LiveJobs))
		}
		if p.Objects > 0 || p.KeptObjects > 0 {
			b.WriteString(fmt.Sprintf("Kubernetes objects: %d to delete, %d kept.\n\n", p.Objects, p.KeptObjects))
		}
		b.WriteString(fmt.Sprintf("Plan: `%s` (sha256 `%s`)\n\n", p.PlanPath, p.PlanSHA256))
	} else if st.FinishedAt.IsZero() {
		b.WriteString("Planning: listing the tenants' trees and reading every retained `_metadata`.\n\n")
	}
	if a := st.Approval; a != nil {
		verdict := "rejected"
		if a.Approved {
			verdict = "approved"
		}
		b.WriteString(fmt.Sprintf("**Plan %s** by %s at %s", verdict, mdText(a.By), timeText(a.At)))
		if a.Reason != "" {
			b.WriteString(fmt.Sprintf(": %s", mdText(clip(a.Reason, maxDetailText))))
		}
		b.WriteString("\n\n")
	}
	if st.WaitingFor != "" {
		b.WriteString("### Waiting for the tenant lock\n\n" + mdText(clip(st.WaitingFor, maxDetailText)) + "\n\n")
	}
	if st.Phase == GovernancePhaseAwaitingApproval && st.Approval == nil && st.Plan != nil {
		name := governanceCommandName(workflowID)
		b.WriteString(fmt.Sprintf("### Waiting for approval\n\nUntil %s; then the run ends and nothing is touched. Approve the plan above (%s), or reject it:\n\n",
			timeText(st.ApprovalDeadline), actionText(st.Plan.Action)))
		b.WriteString("```sh\n" + strings.Join(governanceApprovalCommands(workflowID, st.Plan), "\n") + "\n```\n\n")
		b.WriteString(fmt.Sprintf("Review it first: `flinkmaint governance status %s`.\n\n", name))
	}
	b.WriteString(notesText(st.Notes))
	return b.String()
}

// governanceApprovalCommands answer a plan that waits for approval.
func governanceApprovalCommands(workflowID string, plan *governance.PlanSummary) []string {
	name := governanceCommandName(workflowID)
	return []string{fmt.Sprintf("flinkmaint governance approve %s --plan-sha256 %s --reason TEXT", name, plan.PlanSHA256),
		fmt.Sprintf("flinkmaint governance reject %s --reason TEXT", name)}
}

// governanceCommandName is how the CLI names a governance run: the name a
// run started by hand was given, else its whole workflow ID (schedules'
// and windows' runs), which the CLI takes as it is.
func governanceCommandName(workflowID string) string {
	name := strings.TrimPrefix(workflowID, "governance-")
	if name == workflowID || name == "" || strings.HasPrefix(name, "governance-") || strings.HasPrefix(name, "flinkmaint-") ||
		strings.HasPrefix(name, "window-") {
		return shellWord(workflowID)
	}
	return shellWord(name)
}

func actionText(action string) string {
	if action == CleanupActionDelete {
		return "its items are deleted"
	}
	return "its items move to trash"
}

// ---- drills ----

// drillDetails is a restore drill's current details: how many snapshots
// are proven, failed or still being drilled, and the failures.
func drillDetails(rep *RestoreDrillReport) string {
	var b strings.Builder
	phase := "drilling"
	var passed, failed, inconclusive, pending int
	for _, j := range rep.Jobs {
		switch j.Outcome {
		case catalog.DrillPassed:
			passed++
		case catalog.DrillFailed:
			failed++
		case catalog.DrillInconclusive:
			inconclusive++
		default:
			pending++
		}
	}
	switch {
	case !rep.FinishedAt.IsZero():
		phase = "finished"
	case rep.Jobs == nil:
		phase = "selecting snapshots"
	case pending == 0:
		phase = "recording outcomes"
	}
	b.WriteString(fmt.Sprintf("**Restore drill** `%s` (tier %d) · **phase** `%s`", rep.RunID, rep.Tier, phase))
	if !rep.FinishedAt.IsZero() {
		b.WriteString(fmt.Sprintf(" · finished %s", timeText(rep.FinishedAt)))
	}
	b.WriteString("\n\n")
	running := min(rep.Running, pending)
	b.WriteString("| snapshots | total | waiting | drilling | proven | failed | inconclusive |\n|---|--:|--:|--:|--:|--:|--:|\n")
	b.WriteString(fmt.Sprintf("| | %d | %d | %d | %d | %d | %d |\n\n", len(rep.Jobs), pending-running, running, passed, failed, inconclusive))
	if len(rep.Tenants) > 0 {
		b.WriteString(fmt.Sprintf("Tenants: %s.", mdText(listText(rep.Tenants))))
		if n := len(rep.Skipped); n > 0 {
			b.WriteString(fmt.Sprintf(" %d job(s) without a snapshot to drill.", n))
		}
		b.WriteString("\n\n")
	}
	shown := 0
	for _, j := range rep.Jobs {
		if j.Outcome != catalog.DrillFailed && j.Outcome != catalog.DrillInconclusive {
			continue
		}
		if shown == 0 {
			b.WriteString("| job | snapshot | outcome | why |\n|---|---|---|---|\n")
		}
		if shown++; shown > maxDetailItems {
			b.WriteString(fmt.Sprintf("\n%d more: `flinkmaint drill status %s`\n", failed+inconclusive-maxDetailItems, rep.RunID))
			break
		}
		b.WriteString(fmt.Sprintf("| `%s` | `%s` | %s | %s |\n", j.Key, lastElement(j.Snapshot), j.Outcome, mdText(clip(j.Error, 300))))
	}
	return b.String()
}

// ---- upgrades ----

// upgradeDetails is an upgrade's current details: phase, the old and new
// job, the savepoint between them, the rollback and, while it waits for
// an operator, the decision and the commands that answer it.
func upgradeDetails(in *UpgradeInput, st *UpgradeState) string {
	var b strings.Builder
	id := in.UpgradeID
	what := "**Upgrade**"
	if in.CheckOnly {
		what = "**Check** of upgrade"
	}
	b.WriteString(fmt.Sprintf("%s `%s` of `%s` (mode %s) · **phase** `%s`", what, id, in.Job, st.Mode, st.Phase))
	if !st.FinishedAt.IsZero() {
		b.WriteString(fmt.Sprintf(" · finished %s", timeText(st.FinishedAt)))
	}
	b.WriteString("\n\n| | |\n|---|---|\n")
	row := func(k, v string) {
		if v != "" {
			b.WriteString(fmt.Sprintf("| %s | %s |\n", k, v))
		}
	}
	row("old job", code(st.Job.JobID))
	if r := st.Rehearsal; r != nil {
		row("rehearsal", cellText(clip(r.Text(), 400)))
	}
	row("savepoint", code(st.Savepoint))
	newJob := code(st.NewJobID)
	if st.StartAttempts > 1 {
		newJob += fmt.Sprintf(" (start attempt %d)", st.StartAttempts)
	}
	row("new job", newJob)
	switch {
	case st.Healthy != nil:
		row("health", fmt.Sprintf("healthy: checkpoint %d after the restore", st.Healthy.CheckpointID))
	case st.GateError != "":
		row("health", "gate failed: "+cellText(clip(st.GateError, 300)))
	}
	if len(st.Unmatched) > 0 {
		row("unmatched state", cellText(strings.Join(st.Unmatched, ", ")))
	}
	if st.Retired {
		row("previous version", "ended with savepoint "+code(st.RetiredSavepoint))
	}
	if st.Phase == UpgradePhaseCommitted || st.RecipeRecorded {
		row("recipe of record", yesNoText(st.RecipeRecorded))
	}
	if rb := st.Rollback; rb != nil {
		v := "by " + cellText(rb.By) + ": " + cellText(clip(rb.Reason, 300))
		if rb.JobID != "" {
			v += "; previous version as job " + code(rb.JobID)
		}
		if rb.Error != "" {
			v += "; " + cellText(clip(rb.Error, 300))
		}
		row("rollback", v)
	}
	b.WriteString("\n")
	if st.WaitingFor != "" {
		b.WriteString("### Waiting for the tenant lock\n\n" + mdText(clip(st.WaitingFor, maxDetailText)) + "\n\n")
	}
	if p := st.Pending; p != nil {
		b.WriteString(decisionText(p, upgradeCommands(id, p)))
	} else if (st.Phase == UpgradePhaseStart || st.Phase == UpgradePhaseHold) && st.Rollback == nil {
		b.WriteString(fmt.Sprintf("To go back to the previous version:\n\n```sh\nflinkmaint upgrade rollback %s --reason TEXT\n```\n\n", id))
	}
	b.WriteString(notesText(st.Notes))
	return b.String()
}

// ---- text helpers ----

// jobsText says which jobs a scope selects.
func jobsText(s core.Scope) string {
	t := "all jobs"
	if len(s.IncludeJobs) > 0 {
		t = "jobs " + listText(s.IncludeJobs)
	}
	if len(s.ExcludeJobs) > 0 {
		t += " except " + listText(s.ExcludeJobs)
	}
	return t
}

func tenantsText(s core.Scope) string {
	if len(s.Tenants) == 0 {
		return "every tenant"
	}
	return listText(s.Tenants)
}

func clustersText(s core.Scope) string {
	if len(s.Clusters) == 0 {
		return ""
	}
	return " on " + listText(s.Clusters)
}

// listText joins up to four names and counts the rest.
func listText(names []string) string {
	const shown = 4
	if len(names) <= shown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:shown], ", "), len(names)-shown)
}

func reasonText(reason string) string {
	reason = strings.Join(strings.Fields(reason), " ")
	if reason == "" {
		return ""
	}
	return " — " + reason
}

func scheduleText(schedule string) string {
	if schedule == "" {
		return ""
	}
	return " (schedule " + schedule + ")"
}

func attemptText(attempt int) string {
	if attempt <= 1 {
		return ""
	}
	return fmt.Sprintf(", attempt %d", attempt)
}

// lastElement is the last element of a path or URI: a snapshot's name.
func lastElement(p string) string {
	p = strings.TrimRight(p, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 && i < len(p)-1 {
		return p[i+1:]
	}
	return p
}

// clip shortens s to at most n bytes on a character boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + mark
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// bytesText is a byte count in binary units.
func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func yesNoText(b bool) string {
	if b {
		return "yes"
	}
	return "not yet"
}

// mdText makes free text (a reason, an error, a name) plain Markdown text
// on one line: no markup, links or HTML of its own.
func mdText(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_[]<>|#~", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// cellText is free text for a table cell.
func cellText(s string) string { return mdText(s) }

// code shows an identifier or path as code; empty stays empty.
func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(s, "`", "'") + "`"
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// notesText lists the newest notes.
func notesText(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Notes:\n\n")
	start := max(0, len(notes)-maxDetailItems)
	if start > 0 {
		b.WriteString(fmt.Sprintf("- (%d earlier)\n", start))
	}
	for _, n := range notes[start:] {
		b.WriteString(fmt.Sprintf("- %s\n", mdText(clip(n, 300))))
	}
	b.WriteString("\n")
	return b.String()
}
