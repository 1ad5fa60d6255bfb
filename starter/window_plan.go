package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/workflows"
)

// Bounds of the look into past windows for typical step times: pages of
// completed runs, newest first.
const (
	historyPageSize = 1000
	historyPages    = 5
)

// maxKeysShown bounds the job keys a wave row lists in the table (JSON
// lists them all).
const maxKeysShown = 8

// windowPlanCommand is the dry run of a window: the file is checked as
// `window start` checks it, then a WindowPlan workflow on a worker (which
// has the inventory, Flink and storage) resolves the scope and lays out
// what the window would do. Nothing is stopped or written.
func windowPlanCommand(g *globals) *cobra.Command {
	var file string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "plan -f window.yaml",
		Short: "Dry run of a window: jobs in scope, skipped jobs, canary and waves, quota projection, expected duration; stops nothing",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return usageErrorf("-f window.yaml is required")
			}
			if timeout <= 0 {
				return usageErrorf("--timeout=%s is not valid: use a positive duration such as 5m", timeout)
			}
			in, err := loadWindowFile(file)
			if err != nil {
				return err
			}
			var plan workflows.WindowPlan
			err = runOnWorker(cmd, g, timeout, workflows.WindowPlanWorkflowID(in.WindowID, nonce()), workflows.WindowPlanWorkflowType,
				workflows.KindWindowPlan, workflows.WindowPlanInput{Window: in}, &plan)
			if msg, refused := refusal(err); refused {
				return usageErrorf("window file %s: %s", file, msg)
			}
			if err != nil {
				return err
			}
			c, err := g.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			plan.Notes = append(plan.Notes, windowNameNote(cmd.Context(), c, in.WindowID)...)
			plan.Notes = append(plan.Notes, measureTypical(cmd.Context(), c, &plan)...)
			if g.output == outputJSON {
				return printJSON(cmd.OutOrStdout(), plan)
			}
			return renderPlan(cmd.OutOrStdout(), &plan)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "window file (YAML)")
	durationFlag(cmd.Flags(), &timeout, "timeout", 5*time.Minute, "how long to wait for the worker's plan")
	return cmd
}

// refusal is the message of a workflow that refused its input as invalid
// (workflows.ErrTypeInvalidInput): invalid usage, exit 2, rather than an
// operation that failed.
func refusal(err error) (string, bool) {
	var appErr *temporal.ApplicationError
	if err != nil && errors.As(err, &appErr) && appErr.Type() == workflows.ErrTypeInvalidInput {
		return appErr.Message(), true
	}
	return "", false
}

// windowNameNote says when the window's name is taken: window start
// refuses a name used once.
func windowNameNote(ctx context.Context, c client.Client, windowID string) []string {
	d, err := c.DescribeWorkflow(ctx, workflows.WindowWorkflowID(windowID), "")
	if err != nil {
		return nil
	}
	return []string{fmt.Sprintf("window %s was already started once (%s): window start refuses a name used before; choose another windowId",
		windowID, strings.ToLower(d.Status.String()))}
}

// measureTypical sets the plan's typical times from the completed
// JobSavepoint and JobRestart runs of its jobs in past windows, as
// Temporal's visibility still lists them, and says what it could not
// measure.
func measureTypical(ctx context.Context, c client.Client, plan *workflows.WindowPlan) []string {
	keys := map[string]bool{}
	for _, j := range plan.Jobs {
		keys[j.Key] = true
	}
	var notes []string
	for _, s := range []struct{ step, wfType, marker string }{
		{workflows.PlanStepSavepoint, workflows.JobSavepointWorkflowType, "/savepoint/"},
		{workflows.PlanStepRestart, workflows.JobRestartWorkflowType, "/restart/"},
	} {
		times, jobs, err := pastStepTimes(ctx, c, s.wfType, s.marker, keys)
		if err != nil {
			notes = append(notes, fmt.Sprintf("typical %s time not measured: listing past %s runs failed: %v", s.step, s.wfType, err))
			continue
		}
		if len(times) == 0 {
			notes = append(notes, fmt.Sprintf("typical %s time not measured: Temporal lists no completed %s of these jobs (closed runs are kept for the namespace's retention period); only bounds are given",
				s.step, s.wfType))
			continue
		}
		plan.Duration.SetTypical(s.step, median(times),
			fmt.Sprintf("median of %d completed %s runs of %d of these %d jobs in past windows", len(times), s.wfType, jobs, len(keys)))
	}
	return notes
}

// pastStepTimes returns how long each completed run of wfType took whose
// workflow ID names one of keys after marker (JobSavepointWorkflowID,
// JobRestartWorkflowID), newest first, and how many of keys it measured.
func pastStepTimes(ctx context.Context, c client.Client, wfType, marker string, keys map[string]bool) ([]time.Duration, int, error) {
	query := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Completed'", wfType)
	var times []time.Duration
	measured := map[string]bool{}
	var token []byte
	for page := 0; page < historyPages; page++ {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: historyPageSize, NextPageToken: token})
		if err != nil {
			return nil, 0, err
		}
		for _, e := range resp.GetExecutions() {
			key, ok := stepJobKey(e.GetExecution().GetWorkflowId(), marker)
			if !ok || !keys[key] || e.GetStartTime() == nil || e.GetCloseTime() == nil {
				continue
			}
			if d := e.GetCloseTime().AsTime().Sub(e.GetStartTime().AsTime()); d > 0 {
				times = append(times, d)
				measured[key] = true
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	return times, len(measured), nil
}

// stepJobKey is the job key (cluster/name) a per-job child's workflow ID
// names after marker, without its attempt suffix.
func stepJobKey(workflowID, marker string) (string, bool) {
	_, rest, ok := strings.Cut(workflowID, marker)
	if !ok {
		return "", false
	}
	if i := strings.LastIndex(rest, "/attempt-"); i >= 0 {
		rest = rest[:i]
	}
	cluster, name, ok := strings.Cut(rest, "/")
	return rest, ok && cluster != "" && name != ""
}

// median of a non-empty list.
func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// renderPlan prints a plan as tables.
func renderPlan(w io.Writer, p *workflows.WindowPlan) error {
	fmt.Fprintf(w, "window %s: plan only, nothing was stopped\n", p.WindowID)
	reason := p.Reason
	if p.Ticket != "" {
		reason += " (" + p.Ticket + ")"
	}
	fmt.Fprintf(w, "reason  %s\nscope   %s\n", reason, scopeText(p))

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "\nJOBS IN SCOPE: %d to stop with a savepoint and restart\n", len(p.Jobs))
	fmt.Fprintln(tw, "TENANT\tCLUSTER\tJOB\tJOB ID\tRESTART\tSAVEPOINT DIR\tWAVE")
	jobs := append([]workflows.PlanJob(nil), p.Jobs...)
	sort.SliceStable(jobs, func(i, j int) bool {
		if jobs[i].Tenant != jobs[j].Tenant {
			return jobs[i].Tenant < jobs[j].Tenant
		}
		return jobs[i].Key < jobs[j].Key
	})
	for _, j := range jobs {
		cluster := j.ClusterID
		if j.KubeCluster != "" {
			cluster = j.KubeCluster + "/" + cluster
		}
		wave := waveName(p, j.Wave)
		if j.DrillCanary {
			wave += ", drill canary"
		}
		if j.Rehearsal != "" {
			wave += ", " + j.Rehearsal
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.Tenant, cluster, j.JobName, j.JobID, j.RestartKind, orDash(j.SavepointDir), wave)
	}
	if len(p.Skipped) > 0 {
		fmt.Fprintf(tw, "\nSKIPPED: %d left running, never stopped\n", len(p.Skipped))
		fmt.Fprintln(tw, "JOB\tJOB ID\tREASON")
		for _, s := range p.Skipped {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Key, s.JobID, s.Reason)
		}
	}

	sp := p.Policy.Savepoint
	fmt.Fprintf(tw, "\nORDER\n")
	step := 0
	next := func(format string, args ...interface{}) {
		step++
		fmt.Fprintf(tw, "%d.\t%s\n", step, fmt.Sprintf(format, args...))
	}
	if r := p.Policy.Rehearse; r.FlinkVersion != "" {
		n := 0
		for _, j := range p.Jobs {
			if strings.HasPrefix(j.Rehearsal, "rehearsed") {
				n++
			}
		}
		next("rehearse: %d of %d job(s) restored from a savepoint taken without stopping them, with their Flink %s build on a drill cluster of that version, %d at once; "+
			"an incompatible job pauses the window before anything stops", n, len(p.Jobs), r.FlinkVersion, r.Concurrency)
	}
	if p.DrillCanary != "" {
		next("drill canary %s: stopped with a savepoint first and restored on the drill cluster; no other job stops before it passes", p.DrillCanary)
	}
	next("savepoint-all: %d job(s), %d at once, in key order (%s format, %s timeout each, on failure: %s)",
		len(p.Jobs)-boolInt(p.DrillCanary != ""), sp.Concurrency, sp.Format, sp.Timeout, sp.OnFailure)
	if p.Policy.Network.Skip {
		next("network gate: skipped (policy.network.skip); endpoints probed")
	} else {
		next("network gate: waits for flinkmaint window confirm-network-change %s; then storage and Flink are probed", p.WindowID)
	}
	if p.Policy.Drill.ProveSavepoints {
		next("prove savepoints: every file each savepoint references is read")
	}
	next("quota gate: the restart's projected files against each tenant's namespace quota")
	for _, wv := range p.Waves {
		keys := wv.Jobs
		more := ""
		if len(keys) > maxKeysShown {
			keys, more = keys[:maxKeysShown], fmt.Sprintf(" and %d more", len(wv.Jobs)-maxKeysShown)
		}
		next("restart %s: %d job(s), %d at once, failure budget %d: %s%s", waveName(p, wv.Wave), len(wv.Jobs), wv.Concurrency, wv.FailureBudget,
			strings.Join(keys, ", "), more)
	}
	next("cleanup: governance run in mode %s over the window's tenants", p.Policy.Cleanup.Mode)
	next("report: %s/%s/report.md", strings.TrimRight(p.Policy.ManifestDir, "/"), p.WindowID)

	fmt.Fprintln(tw, "\nQUOTA: namespace (files + directories) now and after the restarts")
	fmt.Fprintln(tw, "TENANT\tUSED\tQUOTA\tUSE\tLEVEL\tRESTART ADDS\tAFTER\tRESTART\tWHY")
	for _, q := range p.Quota {
		quota := "none"
		if q.NamespaceQuota >= 0 {
			quota = fmt.Sprint(q.NamespaceQuota)
		}
		verdict := "fits"
		if !q.RestartAllowed {
			verdict = "BLOCKED"
		}
		why := q.GateReason
		if q.PreflightPause {
			why = "preflight pauses for a decision: " + q.Reason + "; " + why
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f%%\t%s\t%d\t%d\t%s\t%s\n", q.Tenant, q.NamespaceUsed, quota, q.Percent, q.Level, q.ProjectedFiles, q.ProjectedUsed, verdict, why)
	}

	d := p.Duration
	fmt.Fprintln(tw, "\nEXPECTED DURATION")
	fmt.Fprintln(tw, "PHASE\tUPPER BOUND\tTYPICAL\tBASIS")
	for _, ph := range d.Phases {
		bound, typical := "-", "-"
		if ph.Bound > 0 {
			bound = shortDuration(ph.Bound.D())
		}
		if ph.Until != "" {
			bound = "until " + ph.Until
		}
		basis := ph.Basis
		if ph.Typical > 0 {
			typical = shortDuration(ph.Typical.D())
			basis += fmt.Sprintf("; typical: %d round(s) × %s, %s", ph.Rounds, shortDuration(ph.TypicalEach.D()), ph.TypicalBasis)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", ph.Phase, bound, typical, basis)
	}
	typical := "not measured"
	if d.Typical > 0 {
		typical = shortDuration(d.Typical.D()) + " (savepoint-all and restart)"
	}
	fmt.Fprintf(tw, "total\t%s\t%s\tplus the waits below\n", shortDuration(d.Bound.D()), typical)
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(d.Waits) > 0 {
		fmt.Fprintln(w, "\nnot bounded, waits for people:")
		for _, wt := range d.Waits {
			fmt.Fprintf(w, "  - %s\n", wt)
		}
	}
	fmt.Fprintf(w, "\nhow: %s\n", d.Method)
	if len(p.Notes) > 0 {
		fmt.Fprintln(w, "\nnotes:")
		for _, n := range p.Notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
	return nil
}

// scopeText is the scope in one line.
func scopeText(p *workflows.WindowPlan) string {
	all := func(list []string, what string) string {
		if len(list) == 0 {
			return what + " all"
		}
		return what + " " + strings.Join(list, ", ")
	}
	s := p.Scope
	var tenants []string
	for _, t := range p.Tenants {
		tenants = append(tenants, fmt.Sprintf("%s (%d job(s), %d skipped; clusters %s)", t.Name, t.Jobs, t.Skipped, strings.Join(t.Clusters, ", ")))
	}
	line := all(s.Tenants, "tenants") + "; " + all(s.Clusters, "clusters") + "; " + all(s.IncludeJobs, "include") + "; exclude "
	if len(s.ExcludeJobs) == 0 {
		line += "none"
	} else {
		line += strings.Join(s.ExcludeJobs, ", ")
	}
	return line + "\n        resolves to " + strings.Join(tenants, "; ")
}

func waveName(p *workflows.WindowPlan, wave int) string {
	if wave < len(p.Waves) && p.Waves[wave].Canary {
		return "canary"
	}
	return fmt.Sprintf("wave %d", wave)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// shortDuration prints 1h30m rather than 1h30m0s.
func shortDuration(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
