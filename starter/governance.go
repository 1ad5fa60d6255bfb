package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/workflows"
)

func newGovernanceCommand(g *globals) *cobra.Command {
	cmd := newGroupCommand("governance", "Reference-safe cleanup of checkpoints, savepoints and HA state")
	cmd.AddCommand(
		governanceStartCommand(g, "plan", "Plan a cleanup (dry run) and print what it would reclaim"),
		governanceStartCommand(g, "run", "Start a governance run: plan-and-approve (default) or auto"),
		governanceDecisionCommand(g, "approve", "Approve the plan a governance run waits on"),
		governanceDecisionCommand(g, "reject", "Reject the plan a governance run waits on; nothing is touched"),
		withWatch(g, governanceStatusCommand(g), func(a []string) string { return governanceID(a[0]) }),
		runListCommand(g, workflows.KindGovernance, "governance runs (a window's cleanup too)", "governance-"),
		governanceReportCommand(g),
		governanceRestoreCommand(g),
		newScheduleCommand(g),
	)
	return cmd
}

// govFlags are the settings of a governance run as flags.
type govFlags struct {
	name, reason, mode, action, reportDir       string
	tenants, clusters, include, exclude, pins   []string
	grace, retiredTTL, savepointMaxAge, haTTL   time.Duration
	maxCheckpointTimeout                        time.Duration
	orphanTTL                                   time.Duration
	approvalTimeout, executeTimeout, purgeAfter time.Duration
	shardItems, executeParallelism, gatherParts int
	keepSavepoints                              int
	operatorSnapshots                           string
	deleteLatestRetired, ignoreDrills           bool
	overrideFreeze                              bool
	warning, critical                           float64
}

// bind adds the flags of a governance run; executes adds those that only
// a run that can execute takes (a plan executes nothing).
func (f *govFlags) bind(cmd *cobra.Command, executes bool) {
	fl := cmd.Flags()
	fl.StringSliceVar(&f.tenants, "tenant", nil, "tenants in scope (repeatable; default all)")
	fl.StringSliceVar(&f.clusters, "cluster", nil, "clusters in scope (repeatable; default all)")
	fl.StringSliceVar(&f.include, "include-job", nil, "job name globs in scope")
	fl.StringSliceVar(&f.exclude, "exclude-job", nil, "job name globs out of scope")
	fl.StringVar(&f.reason, "reason", "", "why this run (recorded in the report)")
	fl.StringVar(&f.action, "action", workflows.CleanupActionTrash, "trash (recoverable) or delete")
	durationFlag(fl, &f.grace, "grace", 0, "protect anything younger (default 1h)")
	durationFlag(fl, &f.retiredTTL, "retired-job-ttl", 0, "keep a retired job's checkpoints this long (default 168h)")
	durationFlag(fl, &f.maxCheckpointTimeout, "max-checkpoint-timeout", 0,
		"the longest checkpoint timeout any job writing into the roots may have, outside the inventory too; a job dir written more recently keeps what no _metadata names yet (default 10m)")
	fl.IntVar(&f.keepSavepoints, "keep-savepoints", 0, "newest savepoints kept per job (default 2)")
	durationFlag(fl, &f.savepointMaxAge, "savepoint-max-age", 0, "keep savepoints younger than this (default 168h)")
	durationFlag(fl, &f.haTTL, "ha-ttl", 0, "keep HA dirs of retired clusters this long (default 168h)")
	durationFlag(fl, &f.orphanTTL, "orphan-ttl", 0, "keep leftover Kubernetes objects (orphan TaskManagers, idle JobManagers, HA ConfigMaps of gone clusters) this long (default 24h)")
	fl.StringSliceVar(&f.pins, "pin", nil, "savepoint directories never deleted (repeatable)")
	fl.StringVar(&f.operatorSnapshots, "operator-snapshots", "", "a savepoint a completed FlinkStateSnapshot names: delete (default) removes the resource with it, keep keeps the savepoint")
	fl.BoolVar(&f.deleteLatestRetired, "delete-latest-retired-checkpoint", false, "also delete a retired job's latest checkpoint when no newer savepoint exists")
	fl.BoolVar(&f.ignoreDrills, "ignore-drills", false, "let retention delete the newest savepoint of a job that passed a restore drill (default: kept)")
	fl.IntVar(&f.shardItems, "shard-items", 0, "items per plan shard; each shard is executed as its own activity, on any worker (default 10000)")
	fl.IntVar(&f.gatherParts, "gather-parts", 0, "parts the scope is listed in at once across the workers before planning; 1 lists it in the plan activity (default 4)")
	fl.StringVar(&f.reportDir, "report-dir", "", "where reports go (default next to the plan)")
	fl.Float64Var(&f.warning, "warning-percent", 0, "quota warning watermark (default 80)")
	fl.Float64Var(&f.critical, "critical-percent", 0, "quota critical watermark (default 90)")
	if executes {
		fl.BoolVar(&f.overrideFreeze, "override-freeze", false, "execute even inside a freeze of the worker's calendar (needs --reason; recorded in the report)")
		durationFlag(fl, &f.purgeAfter, "purge-trash-after", 0, "after executing, purge trash runs unchanged this long (0: keep)")
		durationFlag(fl, &f.executeTimeout, "execute-timeout", 0, "bound on one executor attempt, of one plan shard (default 2h)")
		fl.IntVar(&f.executeParallelism, "execute-parallelism", 0, "plan shards executed at once across the workers (default 4)")
		fl.StringVar(&f.mode, "mode", workflows.ModePlanAndApprove, "plan-and-approve or auto")
		durationFlag(fl, &f.approvalTimeout, "approval-timeout", 0, "how long plan-and-approve waits for a decision (default 24h)")
		fl.StringVar(&f.name, "name", "", "run name; the workflow ID is governance-<name> (default generated)")
	}
}

// input builds and checks the workflow input; problems are usage errors
// naming the flag's field.
func (f *govFlags) input() (workflows.GovernanceInput, error) {
	in := workflows.GovernanceInput{
		Reason: f.reason, Mode: f.mode, ReportDir: f.reportDir,
		Scope: core.Scope{Tenants: f.tenants, Clusters: f.clusters, IncludeJobs: f.include, ExcludeJobs: f.exclude},
		Policy: workflows.GovernancePolicy{
			Grace: workflows.Duration(f.grace), RetiredJobTTL: workflows.Duration(f.retiredTTL), KeepSavepoints: f.keepSavepoints,
			MaxCheckpointTimeout: workflows.Duration(f.maxCheckpointTimeout),
			SavepointMaxAge:      workflows.Duration(f.savepointMaxAge), HATTL: workflows.Duration(f.haTTL), PinnedSavepoints: f.pins,
			OrphanTTL: workflows.Duration(f.orphanTTL), IgnoreDrills: f.ignoreDrills,
			Action: f.action, DeleteLatestRetiredCheckpoint: f.deleteLatestRetired, OperatorSnapshots: f.operatorSnapshots,
		},
		ApprovalTimeout: workflows.Duration(f.approvalTimeout), ExecuteTimeout: workflows.Duration(f.executeTimeout),
		PurgeTrashAfter: workflows.Duration(f.purgeAfter), WarningPercent: f.warning, CriticalPercent: f.critical,
		ShardItems: f.shardItems, ExecuteParallelism: f.executeParallelism, GatherParts: f.gatherParts,
	}
	var err error
	if in.OverrideFreeze, err = freezeOverride(f.overrideFreeze, f.reason, "this run may change state"); err != nil {
		return in, err
	}
	in.ApplyDefaults()
	if err := in.Validate(); err != nil {
		return in, usageErrorf("invalid governance settings (flags --mode, --action, --grace, ... map to these fields):\n%v", err)
	}
	return in, nil
}

func governanceStartCommand(g *globals, use, short string) *cobra.Command {
	f := &govFlags{}
	var wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if use == "plan" {
				f.mode = workflows.ModePlan
			} else if f.mode != workflows.ModePlanAndApprove && f.mode != workflows.ModeAuto {
				return usageErrorf("--mode=%q is not valid for run: use %s or %s (use `governance plan` for a dry run)", f.mode, workflows.ModePlanAndApprove, workflows.ModeAuto)
			}
			if timeout <= 0 {
				return usageErrorf("--timeout=%s is not valid: use a positive duration such as 10m", timeout)
			}
			in, err := f.input()
			if err != nil {
				return err
			}
			name := f.name
			if name == "" {
				name = nonce()
			}
			c, err := g.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			run, err := g.startOnce(cmd.Context(), c, "governance run", name, workflows.GovernanceWorkflowID(name), workflows.KindGovernance,
				nil, workflows.GovernanceWorkflowType, in)
			if err != nil {
				return err
			}
			url := g.conn.ExecutionURL(run.GetID(), run.GetRunID())
			if use == "run" && !wait {
				if g.output == outputJSON {
					return printJSON(cmd.OutOrStdout(), map[string]string{"name": name, "workflowId": run.GetID(), "runId": run.GetRunID(), "url": url})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "governance run %s started (%s)\nui  %s\n", name, in.Mode, url)
				if in.Mode == workflows.ModePlanAndApprove {
					fmt.Fprintf(cmd.OutOrStdout(), "review: flinkmaint governance status %s (the plan and its sha256)\napprove: flinkmaint governance approve %s --plan-sha256 SHA --reason TEXT\n", name, name)
				}
				return nil
			}
			ctx, cancel := contextWithTimeout(cmd, timeout)
			defer cancel()
			var rep workflows.GovernanceReport
			if err := run.Get(ctx, &rep); err != nil {
				return workflowFailedError{fmt.Errorf("governance run %s: %w\n  %s", name, err, url)}
			}
			return printReport(g, cmd, &rep)
		},
	}
	f.bind(cmd, use == "run")
	durationFlag(cmd.Flags(), &timeout, "timeout", 30*time.Minute, "how long to wait for the result")
	if use == "run" {
		cmd.Flags().BoolVar(&wait, "wait", false, "wait for the run to finish and print its report")
	}
	return cmd
}

// governanceID accepts a run name or a full workflow ID (runs started by
// a schedule, and a window's post-restart cleanup, have IDs of their own).
func governanceID(arg string) string {
	if strings.HasPrefix(arg, "governance-") || strings.HasPrefix(arg, "flinkmaint-") {
		return arg
	}
	if strings.HasPrefix(arg, "window-") && strings.HasSuffix(arg, "/cleanup") {
		return arg
	}
	return workflows.GovernanceWorkflowID(arg)
}

func governanceDecisionCommand(g *globals, name, short string) *cobra.Command {
	var reason, planSHA string
	cmd := &cobra.Command{
		Use:   name + " NAME",
		Short: short,
		Args:  oneArg("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var arg interface{}
			update := workflows.UpdateApprove
			if name == "reject" {
				if strings.TrimSpace(reason) == "" {
					return usageErrorf("--reason is required for reject: it is recorded in the report")
				}
				update, arg = workflows.UpdateReject, workflows.RejectRequest{By: operator(), Reason: reason}
			} else {
				if planSHA == "" {
					// A run may plan again (after waiting for the tenant lock):
					// approval binds to the plan the person reviewed.
					return usageErrorf("--plan-sha256 is required: approve exactly the plan you reviewed; `flinkmaint governance status %s` shows it and its sha256", args[0])
				}
				arg = workflows.ApproveRequest{By: operator(), Reason: reason, PlanSHA256: planSHA}
			}
			if name == "reject" {
				if err := g.update(cmd.Context(), governanceID(args[0]), update, arg, nil); err != nil {
					return fmt.Errorf("reject governance run %s: %w", args[0], err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "plan of governance run %s rejected; nothing is touched\n", args[0])
				return nil
			}
			var plan governance.PlanSummary
			if err := g.update(cmd.Context(), governanceID(args[0]), update, arg, &plan); err != nil {
				return fmt.Errorf("approve governance run %s: %w", args[0], err)
			}
			if g.output == outputJSON {
				return printJSON(cmd.OutOrStdout(), plan)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "plan of governance run %s approved: %d items, %d files, %d bytes will be %s\n",
				args[0], plan.Items, plan.Files, plan.Bytes, actionVerb(plan.Action))
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded in the report)")
	if name == "approve" {
		cmd.Flags().StringVar(&planSHA, "plan-sha256", "", "the sha256 of the plan you reviewed, from governance status (required); a plan made since is refused")
	}
	return cmd
}

func actionVerb(action string) string {
	if action == workflows.CleanupActionDelete {
		return "deleted"
	}
	return "moved to trash"
}

func governanceStatusCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status NAME",
		Short: "Show a governance run's phase, plan summary and outcome",
		Args:  oneArg("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var st workflows.GovernanceState
			if err := g.query(cmd.Context(), governanceID(args[0]), workflows.QueryStatus, &st); err != nil {
				return fmt.Errorf("status of governance run %s: %w", args[0], err)
			}
			if g.output == outputJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "run      %s\nmode     %s\nphase    %s\n", st.RunID, st.Mode, st.Phase)
			if st.Phase == workflows.GovernancePhaseAwaitingApproval {
				fmt.Fprintf(w, "waiting  for approve or reject until %s\n", st.ApprovalDeadline.Format(time.RFC3339))
			}
			if st.WaitingFor != "" {
				fmt.Fprintf(w, "waiting  %s\n", st.WaitingFor)
			}
			if p := st.Plan; p != nil {
				fmt.Fprintf(w, "plan     %s\nsha256   %s\nreclaim  %d items, %d files, %d dirs, %d bytes (%s); %d kept\n",
					p.PlanPath, p.PlanSHA256, p.Items, p.Files, p.Dirs, p.Bytes, p.Action, p.KeptItems)
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "\nPATH\tKIND\tRULE\tFILES\tBYTES")
				for _, it := range p.Sample {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\n", it.Path, it.Kind, it.Rule, it.Files, it.Bytes)
				}
				if p.Truncated {
					fmt.Fprintf(tw, "... (%d more; the whole plan is in %s)\n", p.Items-p.Objects-int64(len(p.Sample)), p.PlanPath)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				if len(p.ObjectSample) > 0 {
					fmt.Fprintf(w, "\nkubernetes objects: %d to delete, %d kept\n", p.Objects, p.KeptObjects)
					if err := printObjects(w, p.ObjectSample, p.ObjectSampleTruncated, p.PlanPath); err != nil {
						return err
					}
				}
			}
			if e := st.Execution; e != nil {
				fmt.Fprintf(w, "reclaimed %d items, %d files, %d bytes, %d Kubernetes objects; manifest %s\n", e.Items, e.Files, e.Bytes, e.Objects, e.ManifestDir)
				if len(e.ObjectOutcomes) > 0 {
					if err := printObjects(w, e.ObjectOutcomes, false, ""); err != nil {
						return err
					}
				}
			}
			if pr := st.Purge; pr != nil {
				fmt.Fprintf(w, "purged %d trash runs, %d files, %d bytes; %d younger than the TTL kept\n", len(pr.Purged), pr.Files, pr.Bytes, pr.Kept)
				for _, r := range pr.Refused {
					fmt.Fprintf(w, "not purged %s\n", r)
				}
			}
			for _, n := range st.Notes {
				fmt.Fprintf(w, "note     %s\n", n)
			}
			return nil
		},
	}
}

// printObjects lists Kubernetes objects of a plan or run as a table.
func printObjects(w io.Writer, objects []governance.ObjectBrief, truncated bool, planPath string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OBJECT\tKIND\tCLUSTER\tRULE/KEPT\tAGE\tOWNER\tOUTCOME")
	for _, o := range objects {
		decision := "delete: " + o.Rule
		if o.Kept != "" {
			decision = "keep: " + o.Kept
		}
		outcome := o.Outcome
		if outcome == "" {
			outcome = o.Detail
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%s\t%s\t%s\n", inventory.NamespaceKey(o.KubeCluster, o.Namespace), o.Name, o.Kind, o.ClusterID, decision, o.Age, o.Owner, outcome)
	}
	if truncated {
		fmt.Fprintf(tw, "... (more; the whole plan is in %s)\n", planPath)
	}
	return tw.Flush()
}

func governanceReportCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "report NAME",
		Short: "Print a governance run's report (per tenant: planned, reclaimed, quota before/after)",
		Args:  oneArg("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var rep workflows.GovernanceReport
			if err := g.query(cmd.Context(), governanceID(args[0]), workflows.QueryReport, &rep); err != nil {
				return fmt.Errorf("report of governance run %s: %w", args[0], err)
			}
			return printReport(g, cmd, &rep)
		},
	}
}

// Workflows a schedule can start.
const (
	scheduleGovernance = "governance"
	scheduleQuotaWatch = "quota-watch"
)

func newScheduleCommand(g *globals) *cobra.Command {
	return newScheduleGroup(g, "Run governance or quota watching on Temporal Schedules", func() scheduleAction { return &governanceSchedule{} })
}

// governanceSchedule starts governance or quota watching.
type governanceSchedule struct {
	gov         govFlags
	workflow    string
	samplesPath string
}

func (f *governanceSchedule) bind(cmd *cobra.Command) {
	f.gov.bind(cmd, true)
	cmd.Flags().StringVar(&f.workflow, "workflow", scheduleGovernance, "what to run: governance or quota-watch")
	cmd.Flags().StringVar(&f.samplesPath, "samples-path", "", "quota-watch: storage document that keeps the sample series across runs (needed for forecasts)")
}

func (*governanceSchedule) workflowTypes() []string {
	return []string{workflows.GovernanceWorkflowType, workflows.QuotaWatchWorkflowType}
}

func (f *governanceSchedule) build(string) (string, interface{}, string, error) {
	switch f.workflow {
	case scheduleGovernance:
		if f.gov.mode == workflows.ModePlanAndApprove && f.gov.approvalTimeout == 0 {
			// A scheduled run waiting a day would overlap the next one.
			f.gov.approvalTimeout = 12 * time.Hour
		}
		in, err := f.gov.input()
		if err != nil {
			return "", nil, "", err
		}
		return workflows.GovernanceWorkflowType, in, workflows.KindGovernance, nil
	case scheduleQuotaWatch:
		in := workflows.QuotaWatchInput{Scope: core.Scope{Tenants: f.gov.tenants}, Iterations: 1, SamplesPath: f.samplesPath,
			WarningPercent: f.gov.warning, CriticalPercent: f.gov.critical}
		in.ApplyDefaults()
		if err := in.Validate(); err != nil {
			return "", nil, "", usageErrorf("invalid quota watch settings:\n%v", err)
		}
		return workflows.QuotaWatchWorkflowType, in, workflows.KindQuotaWatch, nil
	}
	return "", nil, "", usageErrorf("--workflow=%q is not valid: use %s or %s", f.workflow, scheduleGovernance, scheduleQuotaWatch)
}
