package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// quotaRow is one tenant in `flinkmaint quota`.
type quotaRow struct {
	Tenant         string   `json:"tenant"`
	Root           string   `json:"root"`
	NamespaceUsed  int64    `json:"namespaceUsed"`
	NamespaceQuota int64    `json:"namespaceQuota"`
	Headroom       int64    `json:"headroom"`
	SpaceUsed      int64    `json:"spaceUsed"`
	SpaceQuota     int64    `json:"spaceQuota"`
	Percent        float64  `json:"percent"`
	Level          string   `json:"level"`
	Reason         string   `json:"reason,omitempty"`
	RestartFiles   int64    `json:"restartProjectedFiles"`
	RestartAllowed bool     `json:"restartAllowed"`
	GateReason     string   `json:"gateReason,omitempty"`
	DaysToFull     *float64 `json:"daysToFull,omitempty"`
	PerDay         *float64 `json:"growthPerDay,omitempty"`
	Samples        int      `json:"samples"`
}

// newQuotaCommand shows quota use per tenant. The CLI has no HDFS or Flink
// credentials, so it runs a one-sample QuotaWatch through the worker (as
// ping does), with the restart projection on. For the forecast it seeds
// that run with the sample series of the long-running watch
// (quota-watch-<watch>), when one exists: one sample alone has no trend.
func newQuotaCommand(g *globals) *cobra.Command {
	var (
		tenants           []string
		watch             string
		timeout           time.Duration
		warning, critical float64
	)
	cmd := &cobra.Command{
		Use:   "quota",
		Short: "HDFS namespace and space quota per tenant: usage, headroom, restart projection, days to full",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return usageErrorf("--timeout=%s is not valid: use a positive duration such as 2m", timeout)
			}
			in := workflows.QuotaWatchInput{Scope: core.Scope{Tenants: tenants}, Iterations: 1, ProjectRestart: true,
				WarningPercent: warning, CriticalPercent: critical}
			in.ApplyDefaults()
			if err := in.Validate(); err != nil {
				return usageErrorf("--warning-percent/--critical-percent: %v", err)
			}
			c, err := g.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			var notes []string
			if watch != "" {
				seed, err := watchState(cmd.Context(), c, workflows.QuotaWatchWorkflowID(watch))
				switch {
				case err == nil:
					in.State = seed
				case isNotFound(err):
					notes = append(notes, fmt.Sprintf("no quota watch %s has run, so there is no series to forecast from; start it: flinkmaint quota watch start --name %s", workflows.QuotaWatchWorkflowID(watch), watch))
				default:
					notes = append(notes, "quota watch "+watch+" not readable: "+err.Error())
				}
			}
			ctx, cancel := contextWithTimeout(cmd, timeout)
			defer cancel()
			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
				ID: "quota-check/" + nonce(), TaskQueue: g.taskQueue, WorkflowExecutionTimeout: timeout,
				TypedSearchAttributes: temporal.NewSearchAttributes(workflows.SearchAttrKind.ValueSet(workflows.KindQuotaWatch)),
				StaticSummary:         workflows.StartSummary(in),
			}, workflows.QuotaWatchWorkflowType, in)
			if err != nil {
				return fmt.Errorf("start quota check: %w", err)
			}
			var st workflows.QuotaWatchState
			if err := run.Get(ctx, &st); err != nil {
				return workflowFailedError{fmt.Errorf("quota check did not complete within %s (is a worker polling task queue %q?): %w\n  %s",
					timeout, g.taskQueue, err, g.conn.ExecutionURL(run.GetID(), run.GetRunID()))}
			}
			rows := quotaRows(st, tenants)
			if g.output == outputJSON {
				return printJSON(cmd.OutOrStdout(), map[string]interface{}{"tenants": rows, "notes": notes})
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TENANT\tUSED\tQUOTA\tHEADROOM\tUSE\tLEVEL\tRESTART NEEDS\tRESTART\tDAYS TO FULL")
			for _, r := range rows {
				quota, days := "none", "n/a"
				if r.NamespaceQuota >= 0 {
					quota = fmt.Sprint(r.NamespaceQuota)
				}
				switch {
				case r.DaysToFull != nil:
					days = fmt.Sprintf("%.1f (%+.0f/day, %d samples)", *r.DaysToFull, *r.PerDay, r.Samples)
				case r.PerDay != nil:
					days = fmt.Sprintf("never (%+.0f/day)", *r.PerDay)
				}
				restart := "fits"
				if !r.RestartAllowed {
					restart = "BLOCKED: " + r.GateReason
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%.1f%%\t%s\t%d\t%s\t%s\n", r.Tenant, r.NamespaceUsed, quota, r.Headroom, r.Percent, r.Level, r.RestartFiles, restart, days)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, n := range notes {
				fmt.Fprintf(cmd.OutOrStdout(), "note: %s\n", n)
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&tenants, "tenant", nil, "tenants to show (repeatable; default all)")
	cmd.Flags().StringVar(&watch, "watch", workflows.DefaultQuotaWatchName, "quota watch whose samples feed the forecast (empty: none)")
	durationFlag(cmd.Flags(), &timeout, "timeout", 2*time.Minute, "how long to wait for the worker")
	cmd.Flags().Float64Var(&warning, "warning-percent", 0, "warning watermark (default 80)")
	cmd.Flags().Float64Var(&critical, "critical-percent", 0, "critical watermark (default 90)")
	watchCmd := newGroupCommand("watch", "The long-running quota watch whose samples `quota` forecasts days to full from")
	watchCmd.AddCommand(quotaWatchStartCommand(g), quotaWatchStopCommand(g))
	cmd.AddCommand(watchCmd)
	return cmd
}

// quotaWatchStartCommand starts quota-watch-<name>, which samples every
// tenant's quota until stopped (continuing as new as its history grows);
// `quota` seeds its forecast from that series.
func quotaWatchStartCommand(g *globals) *cobra.Command {
	var (
		name, samplesPath string
		tenants           []string
		interval          time.Duration
		warning, critical float64
	)
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Start the quota watch: a sample of every tenant's quota each --interval, until stopped",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := workflows.QuotaWatchInput{Scope: core.Scope{Tenants: tenants}, Interval: workflows.Duration(interval),
				SamplesPath: samplesPath, WarningPercent: warning, CriticalPercent: critical}
			in.ApplyDefaults()
			if err := in.Validate(); err != nil {
				return usageErrorf("invalid quota watch (flags --interval, --warning-percent, --critical-percent, --samples-path): %v", err)
			}
			if name == "" || strings.ContainsAny(name, "/ \t") {
				return usageErrorf("--name=%q: use letters, digits and dashes", name)
			}
			c, err := g.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			id := workflows.QuotaWatchWorkflowID(name)
			run, err := c.ExecuteWorkflow(cmd.Context(), client.StartWorkflowOptions{
				ID: id, TaskQueue: g.taskQueue, WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL, WorkflowExecutionErrorWhenAlreadyStarted: true,
				TypedSearchAttributes: temporal.NewSearchAttributes(workflows.SearchAttrKind.ValueSet(workflows.KindQuotaWatch)),
				StaticSummary:         workflows.StartSummary(in),
			}, workflows.QuotaWatchWorkflowType, in)
			var started *serviceerror.WorkflowExecutionAlreadyStarted
			switch {
			case errors.As(err, &started):
				fmt.Fprintf(cmd.OutOrStdout(), "quota watch %s is already running; `flinkmaint quota watch stop --name %s` stops it\n", id, name)
				return nil
			case err != nil:
				return fmt.Errorf("start quota watch %s: %w", id, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "quota watch %s started: a sample every %s\nui  %s\n", id, in.Interval.D(), g.conn.ExecutionURL(run.GetID(), run.GetRunID()))
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", workflows.DefaultQuotaWatchName, "watch name; quota --watch NAME reads it (quota reads the default one)")
	cmd.Flags().StringSliceVar(&tenants, "tenant", nil, "tenants to watch (repeatable; default all)")
	durationFlag(cmd.Flags(), &interval, "interval", 15*time.Minute, "time between samples")
	cmd.Flags().StringVar(&samplesPath, "samples-path", "", "storage document that also keeps the series, so a new watch continues it")
	cmd.Flags().Float64Var(&warning, "warning-percent", 0, "warning watermark (default 80)")
	cmd.Flags().Float64Var(&critical, "critical-percent", 0, "critical watermark (default 90)")
	return cmd
}

func quotaWatchStopCommand(g *globals) *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "stop",
		Short: "Stop the quota watch (its samples stay readable until its history is removed)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			id := workflows.QuotaWatchWorkflowID(name)
			if err := c.CancelWorkflow(cmd.Context(), id, ""); err != nil {
				if isNotFound(err) {
					return fmt.Errorf("no quota watch %s is running: %w", id, err)
				}
				return fmt.Errorf("stop quota watch %s: %w", id, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "quota watch %s stopped\n", id)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", workflows.DefaultQuotaWatchName, "watch name")
	return cmd
}

func quotaRows(st workflows.QuotaWatchState, only []string) []quotaRow {
	var rows []quotaRow
	for _, t := range st.Tenants {
		if !core.InScope(only, t.Tenant) || t.Latest.Tenant == "" {
			continue
		}
		q := t.Latest
		r := quotaRow{Tenant: t.Tenant, Root: q.Root, NamespaceUsed: q.NamespaceUsed, NamespaceQuota: q.NamespaceQuota, Headroom: q.Headroom,
			SpaceUsed: q.SpaceUsed, SpaceQuota: q.SpaceQuota, Percent: q.Percent, Level: t.Level, Reason: t.AlertReason,
			RestartFiles: q.ProjectedFiles, RestartAllowed: q.RestartAllowed, GateReason: q.GateReason, Samples: len(t.Samples)}
		if f := t.NamespaceForecast; f != nil {
			perDay := f.PerDay
			r.PerDay = &perDay
			if f.Growing {
				days := f.DaysToFull
				r.DaysToFull = &days
			}
		}
		rows = append(rows, r)
	}
	return rows
}

func watchState(ctx context.Context, c client.Client, id string) (*workflows.QuotaWatchState, error) {
	v, err := c.QueryWorkflow(ctx, id, "", workflows.QueryStatus)
	if err != nil {
		return nil, err
	}
	var st workflows.QuotaWatchState
	if err := v.Get(&st); err != nil {
		return nil, err
	}
	return &st, nil
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// contextWithTimeout bounds a command's wait.
func contextWithTimeout(cmd *cobra.Command, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), d)
}
