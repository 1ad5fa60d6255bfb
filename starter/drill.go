package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/drills"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// newDrillCommand groups restore drills: proofs that the snapshots a team
// would restore from do restore.
func newDrillCommand(g *globals) *cobra.Command {
	cmd := newGroupCommand("drill", "Restore drills: prove on storage, and by a real restore on a drill cluster, that snapshots restore")
	sched := newScheduleGroup(g, "Run restore drills on a Temporal Schedule", func() scheduleAction { return &drillFlags{} })
	cmd.AddCommand(drillStartCommand(g), withWatch(g, drillStatusCommand(g), func(a []string) string { return drillID(a[0]) }), runListCommand(g, workflows.KindDrill, "restore drills", "drill-"), drillReportCommand(g), sched)
	return cmd
}

// drillFlags select the snapshots and the depth of a drill; they build a
// one-off run and a schedule's action alike.
type drillFlags struct {
	scope       core.Scope
	run         string
	job         string
	snapshot    string
	sample      int
	tier        int
	concurrency int
	soak        time.Duration
	running     time.Duration
	checkpoint  time.Duration
}

func (f *drillFlags) bind(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVar(&f.scope.Tenants, "tenant", nil, "tenants in scope (repeatable; default all)")
	fl.StringSliceVar(&f.scope.Clusters, "cluster", nil, "clusters in scope (repeatable; default all)")
	fl.StringSliceVar(&f.scope.IncludeJobs, "include-job", nil, "job name globs in scope")
	fl.StringSliceVar(&f.scope.ExcludeJobs, "exclude-job", nil, "job name globs out of scope")
	fl.StringVar(&f.run, "run", "", "drill the savepoints this window or savepoint schedule run took (its workflow id)")
	fl.StringVar(&f.job, "job", "", "with --snapshot: the inventory job (cluster/name) the snapshot belongs to")
	fl.StringVar(&f.snapshot, "snapshot", "", "drill this one checkpoint or savepoint directory")
	fl.IntVar(&f.sample, "sample", 0, "drill a random N snapshots per tenant (0: all)")
	fl.IntVar(&f.tier, "tier", 2, "1: storage proof only; 2: also a real restore on the drill cluster")
	fl.IntVar(&f.concurrency, "concurrency", 2, "snapshots drilled at once (1..64)")
	durationFlag(fl, &f.soak, "soak", 30*time.Second, "a drill job must run this long without a restart")
	durationFlag(fl, &f.running, "running-timeout", 5*time.Minute, "a drill job must be RUNNING within this")
	durationFlag(fl, &f.checkpoint, "checkpoint-timeout", 5*time.Minute, "a drill job must complete a checkpoint within this of running")
}

func (*drillFlags) workflowTypes() []string { return []string{workflows.RestoreDrillWorkflowType} }

// build is the RestoreDrill input the flags describe; the selection mode
// follows from --run or --snapshot, the latest checkpoints otherwise.
func (f *drillFlags) build(schedule string) (string, interface{}, string, error) {
	in := workflows.RestoreDrillInput{Schedule: schedule, Scope: f.scope, Tier: f.tier, Concurrency: f.concurrency,
		Soak: workflows.Duration(f.soak), RunningTimeout: workflows.Duration(f.running), CheckpointTimeout: workflows.Duration(f.checkpoint),
		Selection: drills.DrillSelection{SamplePerTenant: f.sample}}
	switch {
	case f.run != "" && f.snapshot != "":
		return "", nil, "", usageErrorf("--run and --snapshot are exclusive: drill a run's savepoints, or one snapshot")
	case f.run != "":
		in.Selection.Mode, in.Selection.RunID = drills.DrillRunSavepoints, f.run
	case f.snapshot != "":
		if err := checkJobFlag(f.job, true); err != nil {
			return "", nil, "", err
		}
		in.Selection.Mode, in.Selection.Job, in.Selection.Snapshot = drills.DrillSnapshot, f.job, f.snapshot
	case f.job != "":
		return "", nil, "", usageErrorf("--job names the job of --snapshot; give --snapshot too, or use --include-job to select jobs")
	}
	in.ApplyDefaults()
	if err := in.Validate(); err != nil {
		return "", nil, "", usageErrorf("invalid drill (flags --tier, --concurrency, --soak, --running-timeout, --checkpoint-timeout, --sample, --include-job, --exclude-job): %v", err)
	}
	return workflows.RestoreDrillWorkflowType, in, workflows.KindDrill, nil
}

// drillID accepts a drill name or a full workflow ID (scheduled runs have
// IDs of their own).
func drillID(arg string) string {
	if strings.HasPrefix(arg, "drill-") || strings.HasPrefix(arg, "flinkmaint-") {
		return arg
	}
	return workflows.RestoreDrillWorkflowID(arg)
}

func drillStartCommand(g *globals) *cobra.Command {
	f := &drillFlags{}
	var name, reason string
	var wait, overrideFreeze bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Start a restore drill now",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return usageErrorf("--timeout=%s is not valid: use a positive duration such as 30m", timeout)
			}
			wfType, in, kind, err := f.build("")
			if err != nil {
				return err
			}
			drill := in.(workflows.RestoreDrillInput)
			if drill.OverrideFreeze, err = freezeOverride(overrideFreeze, reason, "this drill may run jobs on the drill cluster"); err != nil {
				return err
			}
			if name == "" {
				name = nonce()
			}
			c, err := g.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			run, err := g.startOnce(cmd.Context(), c, "drill", name, workflows.RestoreDrillWorkflowID(name), kind, nil, wfType, drill)
			if err != nil {
				return err
			}
			url := g.conn.ExecutionURL(run.GetID(), run.GetRunID())
			if !wait {
				if g.output == outputJSON {
					return printJSON(cmd.OutOrStdout(), map[string]string{"name": name, "workflowId": run.GetID(), "runId": run.GetRunID(), "url": url})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "drill %s started\nui      %s\nstatus  flinkmaint drill status %s\n", name, url, name)
				return nil
			}
			ctx, cancel := contextWithTimeout(cmd, timeout)
			defer cancel()
			rep, err := drillOutcome(run.Get(ctx, nil), func(out *workflows.RestoreDrillReport) error { return run.Get(ctx, out) })
			if rep != nil {
				if perr := printDrill(g, cmd.OutOrStdout(), rep); perr != nil {
					return perr
				}
			}
			if err != nil {
				return workflowFailedError{fmt.Errorf("drill %s: %w\n  %s", name, err, url)}
			}
			return nil
		},
	}
	f.bind(cmd)
	cmd.Flags().StringVar(&name, "name", "", "name of the drill (default: a timestamp)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the drill to finish and print its report")
	durationFlag(cmd.Flags(), &timeout, "timeout", time.Hour, "how long --wait waits")
	cmd.Flags().BoolVar(&overrideFreeze, "override-freeze", false, "run even inside a freeze of its tenants (needs --reason; recorded in the report)")
	cmd.Flags().StringVar(&reason, "reason", "", "why the freeze is overridden")
	return cmd
}

// drillOutcome turns a drill run's end into its report: the result of a
// run that passed, the error's details of one that failed. The error is
// kept for a failed run.
func drillOutcome(runErr error, get func(*workflows.RestoreDrillReport) error) (*workflows.RestoreDrillReport, error) {
	var rep workflows.RestoreDrillReport
	if runErr == nil {
		if err := get(&rep); err != nil {
			return nil, err
		}
		return &rep, nil
	}
	var appErr *temporal.ApplicationError
	if errors.As(runErr, &appErr) && appErr.Type() == workflows.ErrTypeDrillsFailed && appErr.HasDetails() {
		if err := appErr.Details(&rep); err == nil {
			return &rep, runErr
		}
	}
	return nil, runErr
}

func drillStatusCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status NAME",
		Short: "Show a drill's progress and outcomes so far (asks the worker)",
		Args:  oneArg("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var rep workflows.RestoreDrillReport
			if err := g.query(cmd.Context(), drillID(args[0]), workflows.DrillStatusQuery, &rep); err != nil {
				return fmt.Errorf("status of drill %s: %w", args[0], err)
			}
			return printDrill(g, cmd.OutOrStdout(), &rep)
		},
	}
}

func drillReportCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "report NAME",
		Short: "Print a finished drill's report (from Temporal; no worker needed)",
		Args:  oneArg("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			run := c.GetWorkflow(cmd.Context(), drillID(args[0]), "")
			d, err := c.DescribeWorkflow(cmd.Context(), drillID(args[0]), "")
			if err != nil {
				return fmt.Errorf("drill %s: %w", args[0], err)
			}
			if d.Status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				return fmt.Errorf("drill %s is still running: see flinkmaint drill status %s", args[0], args[0])
			}
			rep, err := drillOutcome(run.Get(cmd.Context(), nil), func(out *workflows.RestoreDrillReport) error { return run.Get(cmd.Context(), out) })
			if rep == nil {
				return fmt.Errorf("drill %s has no report: %w", args[0], err)
			}
			return printDrill(g, cmd.OutOrStdout(), rep)
		},
	}
}

// printDrill writes a drill report: a summary, then one row per snapshot.
func printDrill(g *globals, w io.Writer, rep *workflows.RestoreDrillReport) error {
	if g.output == outputJSON {
		return printJSON(w, rep)
	}
	fmt.Fprintf(w, "drill    %s (tier %d)\n", rep.RunID, rep.Tier)
	if rep.Schedule != "" {
		fmt.Fprintf(w, "schedule %s\n", rep.Schedule)
	}
	fmt.Fprintf(w, "outcome  %d passed, %d failed, %d inconclusive", rep.Passed, rep.Failed, rep.Inconclusive)
	if rep.Running > 0 {
		fmt.Fprintf(w, ", %d running", rep.Running)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nJOB\tKIND\tSNAPSHOT\tTIER\tOUTCOME\tDETAIL")
	for _, j := range rep.Jobs {
		outcome, detail := j.Outcome, j.Error
		if outcome == "" {
			outcome = "running"
		}
		if detail == "" {
			detail = j.Note
		}
		if detail == "" && j.Restore != nil && j.Restore.CheckpointID > 0 {
			detail = fmt.Sprintf("restored, checkpoint %d after the restore", j.Restore.CheckpointID)
			if j.Restore.Verified {
				detail += ", state check passed"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", j.Key, j.Kind, j.Snapshot, j.Tier, outcome, detail)
	}
	for _, s := range rep.Skipped {
		fmt.Fprintf(tw, "%s\t-\t-\t-\tskipped\t%s\n", s.Key, s.Reason)
	}
	return tw.Flush()
}
