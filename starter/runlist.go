package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/flinkmaint/flinkmaint/workflows"
)

// runStatuses are the --status values of a list and the execution status
// each selects.
var runStatuses = map[string]string{
	"running": "Running", "completed": "Completed", "failed": "Failed", "canceled": "Canceled",
	"terminated": "Terminated", "timed-out": "TimedOut", "continued-as-new": "ContinuedAsNew",
}

// listFilter is what `<kind> list` selects.
type listFilter struct {
	tenants []string
	status  string
	pending bool
	limit   int
}

// query is the visibility query of runs of one kind the filter selects;
// problems are usage errors naming the flag.
func (f listFilter) query(kind string) (string, error) {
	q := []string{fmt.Sprintf("FlinkmaintKind = '%s'", kind)}
	for _, t := range f.tenants {
		if t == "" || strings.ContainsAny(t, "'\"\\") {
			return "", usageErrorf("--tenant=%q is not a tenant name", t)
		}
	}
	if len(f.tenants) > 0 {
		q = append(q, fmt.Sprintf("FlinkmaintTenants IN ('%s')", strings.Join(f.tenants, "', '")))
	}
	if f.status != "" {
		s, ok := runStatuses[f.status]
		if !ok {
			return "", usageErrorf("--status=%q is not valid: use running, completed, failed, canceled, terminated, timed-out or continued-as-new", f.status)
		}
		q = append(q, fmt.Sprintf("ExecutionStatus = '%s'", s))
	}
	if f.pending {
		q = append(q, "FlinkmaintPausedForDecision = true")
	}
	if f.limit < 1 || f.limit > 10000 {
		return "", usageErrorf("--limit=%d is not valid: use 1..10000", f.limit)
	}
	return strings.Join(q, " AND "), nil
}

// runRow is one run of a list.
type runRow struct {
	Name       string   `json:"name"`
	WorkflowID string   `json:"workflowId"`
	Status     string   `json:"status"`
	Phase      string   `json:"phase,omitempty"`
	Tenants    []string `json:"tenants,omitempty"`
	Pending    bool     `json:"pendingDecision"`
	Started    string   `json:"started"`
}

// runListCommand lists the runs of one kind, newest first, with what each
// waits for: a person's decision shows in the PENDING column.
func runListCommand(g *globals, kind, noun, idPrefix string) *cobra.Command {
	var f listFilter
	cmd := &cobra.Command{
		Use:   "list",
		Short: fmt.Sprintf("List %s, newest first: status, phase, tenants and whether one waits for a decision", noun),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			query, err := f.query(kind)
			if err != nil {
				return err
			}
			c, err := g.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			var rows []runRow
			var token []byte
			for len(rows) < f.limit {
				resp, err := c.ListWorkflow(cmd.Context(), &workflowservice.ListWorkflowExecutionsRequest{
					Query: query, PageSize: int32(min(f.limit-len(rows), 1000)), NextPageToken: token,
				})
				if err != nil {
					return fmt.Errorf("list %s: %w", noun, err)
				}
				for _, e := range resp.GetExecutions() {
					rows = append(rows, listedRun(e.GetExecution().GetWorkflowId(), idPrefix, e.GetStatus(), e.GetSearchAttributes(),
						e.GetStartTime().AsTime().UTC().Format("2006-01-02 15:04:05")))
				}
				if token = resp.GetNextPageToken(); len(token) == 0 {
					break
				}
			}
			if g.output == outputJSON {
				if rows == nil {
					rows = []runRow{}
				}
				return printJSON(cmd.OutOrStdout(), rows)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSTATUS\tPHASE\tPENDING\tTENANTS\tSTARTED (UTC)")
			for _, r := range rows {
				pending := ""
				if r.Pending {
					pending = "decision"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Status, r.Phase, pending, strings.Join(r.Tenants, ","), r.Started)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringSliceVar(&f.tenants, "tenant", nil, "only runs of these tenants (repeatable)")
	cmd.Flags().StringVar(&f.status, "status", "", "only runs in this status: running, completed, failed, canceled, terminated, timed-out")
	cmd.Flags().BoolVar(&f.pending, "pending", false, "only runs waiting for a person's decision")
	cmd.Flags().IntVar(&f.limit, "limit", 100, "at most this many runs")
	return cmd
}

// listedRun reads a listed execution's search attributes into a row.
func listedRun(id, idPrefix string, status enumspb.WorkflowExecutionStatus, sa *commonpb.SearchAttributes, started string) runRow {
	r := runRow{Name: strings.TrimPrefix(id, idPrefix), WorkflowID: id, Started: started, Status: status.String()}
	for flag, s := range runStatuses {
		if s == r.Status {
			r.Status = flag
		}
	}
	fields := sa.GetIndexedFields()
	if p := fields["FlinkmaintPhase"]; p != nil {
		_ = json.Unmarshal(p.GetData(), &r.Phase)
	}
	if p := fields["FlinkmaintTenants"]; p != nil {
		_ = json.Unmarshal(p.GetData(), &r.Tenants)
	}
	if p := fields["FlinkmaintPausedForDecision"]; p != nil {
		_ = json.Unmarshal(p.GetData(), &r.Pending)
	}
	return r
}

// completionTargets say what the NAME of each group's commands is: runs
// of a kind (their IDs less a prefix), or schedules starting some types.
var completionTargets = map[string]struct {
	kind, idPrefix string
	schedules      []string
}{
	"window":              {kind: workflows.KindWindow, idPrefix: "window-"},
	"governance":          {kind: workflows.KindGovernance, idPrefix: "governance-"},
	"drill":               {kind: workflows.KindDrill, idPrefix: "drill-"},
	"upgrade":             {kind: workflows.KindUpgrade, idPrefix: "upgrade-"},
	"governance schedule": {schedules: []string{workflows.GovernanceWorkflowType, workflows.QuotaWatchWorkflowType}},
	"savepoints schedule": {schedules: []string{workflows.ScheduledSavepointsWorkflowType}},
	"drill schedule":      {schedules: []string{workflows.RestoreDrillWorkflowType}},
}

// setCompletions lets the shell complete the run or schedule a command
// names (flinkmaint completion bash|zsh|fish installs it): commands whose
// first argument names an existing one, not those that create it.
func setCompletions(root *cobra.Command, g *globals) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		parent := strings.TrimPrefix(c.Parent().CommandPath(), root.Name()+" ")
		target, ok := completionTargets[parent]
		arg, _, _ := strings.Cut(strings.TrimPrefix(c.Use, c.Name()+" "), " ")
		if !ok || c.ValidArgsFunction != nil || !slices.Contains([]string{"NAME", "WINDOW-ID", "UPGRADE-ID", "RUN"}, arg) ||
			c.Name() == "create" || c.Name() == "run" || c.Name() == "start" {
			return
		}
		c.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 || g.validate() != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
			defer cancel()
			c, err := g.dial(ctx)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
			}
			defer c.Close()
			var names []string
			if target.schedules != nil {
				rows, err := listSchedules(ctx, c)
				if err != nil {
					return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
				}
				for _, r := range rows {
					if slices.Contains(target.schedules, r.Workflow) {
						names = append(names, strings.TrimPrefix(r.Schedule, "flinkmaint-"))
					}
				}
			} else {
				resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
					Query: fmt.Sprintf("FlinkmaintKind = '%s'", target.kind), PageSize: 200})
				if err != nil {
					return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
				}
				for _, e := range resp.GetExecutions() {
					names = append(names, strings.TrimPrefix(e.GetExecution().GetWorkflowId(), target.idPrefix))
				}
			}
			var out []string
			for _, n := range names {
				if strings.HasPrefix(n, toComplete) && !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		}
	}
	for _, c := range root.Commands() {
		walk(c)
	}
}
