package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// newUpgradeCommand groups job upgrades: one job moved to a new version
// from exactly its savepoint, with a health gate and a way back.
func newUpgradeCommand(g *globals) *cobra.Command {
	cmd := newGroupCommand("upgrade", "Upgrade one job to a new version from its savepoint, gated, with a rollback")
	cmd.AddCommand(
		upgradeStartCommand(g),
		upgradeCheckCommand(g),
		withWatch(g, upgradeStatusCommand(g), func(a []string) string { return workflows.JobUpgradeWorkflowID(a[0]) }),
		runListCommand(g, workflows.KindUpgrade, "job upgrades", "upgrade-"),
		upgradeRollbackCommand(g),
		upgradeDecideCommand(g),
	)
	return cmd
}

// loadUpgradeFile reads upgrade.yaml into the workflow input and
// validates it as the workflow will.
func loadUpgradeFile(path string) (workflows.UpgradeInput, error) {
	var in workflows.UpgradeInput
	if err := loadStrictYAML("upgrade", path, &in); err != nil {
		return workflows.UpgradeInput{}, err
	}
	in.ApplyDefaults()
	if err := in.Validate(); err != nil {
		return workflows.UpgradeInput{}, usageErrorf("upgrade file %s:\n%v", path, err)
	}
	return in, nil
}

// upgradeIDArg takes exactly one UPGRADE-ID: the upgradeId of the file.
func upgradeIDArg(cmd *cobra.Command, args []string) error {
	if err := oneArg("UPGRADE-ID")(cmd, args); err != nil {
		return err
	}
	if args[0] == "" || strings.ContainsAny(args[0], "/ \t\n") {
		return usageErrorf("upgrade ID %q is not valid: use the upgradeId of the upgrade file", args[0])
	}
	return nil
}

func upgradeStartCommand(g *globals) *cobra.Command {
	var file, reason string
	var wait, overrideFreeze bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "start -f upgrade.yaml",
		Short: "Start an upgrade of one job from an upgrade file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return usageErrorf("-f upgrade.yaml is required")
			}
			if timeout <= 0 {
				return usageErrorf("--timeout=%s is not valid: use a positive duration such as 1h", timeout)
			}
			in, err := loadUpgradeFile(file)
			if err != nil {
				return err
			}
			if in.OverrideFreeze, err = freezeOverride(overrideFreeze, reason, "this upgrade may run"); err != nil {
				return err
			}
			c, err := g.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			run, err := g.startOnce(cmd.Context(), c, "upgrade", in.UpgradeID, workflows.JobUpgradeWorkflowID(in.UpgradeID), workflows.KindUpgrade,
				map[string]interface{}{"reason": in.Reason, "ticket": in.Ticket, "job": in.Job}, workflows.JobUpgradeWorkflowType, in)
			if err != nil {
				return err
			}
			url := g.conn.ExecutionURL(run.GetID(), run.GetRunID())
			if !wait {
				if g.output == outputJSON {
					return printJSON(cmd.OutOrStdout(), map[string]string{"upgradeId": in.UpgradeID, "workflowId": run.GetID(), "runId": run.GetRunID(), "url": url})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "upgrade %s of %s started (workflow %s)\nui        %s\nstatus    flinkmaint upgrade status %s\nrollback  %s\n",
					in.UpgradeID, in.Job, run.GetID(), url, in.UpgradeID, rollbackCommand(in.UpgradeID))
				return nil
			}
			if g.output != outputJSON {
				fmt.Fprintf(cmd.OutOrStdout(), "upgrade %s of %s started (workflow %s), waiting up to %s\nui        %s\nrollback  %s\n",
					in.UpgradeID, in.Job, run.GetID(), timeout, url, rollbackCommand(in.UpgradeID))
			}
			ctx, cancel := contextWithTimeout(cmd, timeout)
			defer cancel()
			st, runErr := upgradeOutcome(func(out *workflows.UpgradeState) error { return run.Get(ctx, out) })
			if runErr != nil && ctx.Err() != nil && cmd.Context().Err() == nil {
				return workflowFailedError{fmt.Errorf("upgrade %s did not finish within --timeout=%s; it goes on: flinkmaint upgrade status %s\n  %s",
					in.UpgradeID, timeout, in.UpgradeID, url)}
			}
			if st != nil {
				if g.output == outputJSON {
					if err := printJSON(cmd.OutOrStdout(), st); err != nil {
						return err
					}
				} else {
					fmt.Fprintln(cmd.OutOrStdout())
					if err := printUpgradeState(cmd.OutOrStdout(), st); err != nil {
						return err
					}
				}
			}
			if runErr != nil {
				return workflowFailedError{fmt.Errorf("%s\n  %s", upgradeEnding(in.UpgradeID, st, runErr), url)}
			}
			if g.output != outputJSON {
				fmt.Fprintf(cmd.OutOrStdout(), "\nupgrade %s committed: %s runs the new version as job %s\n", in.UpgradeID, st.Job.Key, newVersionJobID(st))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "upgrade file (YAML)")
	cmd.Flags().BoolVar(&overrideFreeze, "override-freeze", false, "run even inside a freeze of the job's tenant (needs --reason; recorded in the manifest)")
	cmd.Flags().StringVar(&reason, "reason", "", "why the freeze is overridden")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the upgrade to end and print its outcome")
	durationFlag(cmd.Flags(), &timeout, "timeout", time.Hour, "how long --wait waits")
	return cmd
}

// upgradeCheckCommand rehearses an upgrade file's new version without
// changing anything: a savepoint of the running job restored into the new
// version on a drill cluster, gated like the real start.
func upgradeCheckCommand(g *globals) *cobra.Command {
	var file, flinkVersion, savepoint string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "check -f upgrade.yaml",
		Short: "Rehearse an upgrade on a drill cluster: will the job's state restore into the new version? Nothing is stopped",
		Long: `Takes a savepoint of the running job without stopping it (or uses --savepoint) and starts the
new version from it on a drill cluster of the job's Flink version (--flink-version: of another one,
e.g. 2.3 for a job built for Flink 2.3 that runs on 1.20 today), with allowNonRestoredState off and
the drill recipe's sandboxArgs in force. It passes when the copy runs, restored from exactly that
savepoint, completes a checkpoint and does not restart during the soak, and the recipe's state
check finishes. The copy and its drill dir are removed afterwards. Exit 0: compatible; otherwise the
verdict and Flink's cause are printed and the exit code is 4.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return usageErrorf("-f upgrade.yaml is required")
			}
			if timeout <= 0 {
				return usageErrorf("--timeout=%s is not valid: use a positive duration such as 30m", timeout)
			}
			var in workflows.UpgradeInput
			if err := loadStrictYAML("upgrade", file, &in); err != nil {
				return err
			}
			in.CheckOnly = true
			if flinkVersion != "" {
				in.Rehearsal.FlinkVersion = flinkVersion
			}
			if savepoint != "" {
				in.Rehearsal.Savepoint = savepoint
			}
			in.ApplyDefaults()
			if err := in.Validate(); err != nil {
				return usageErrorf("upgrade file %s:\n%v", file, err)
			}
			c, err := g.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			wid := workflows.UpgradeCheckWorkflowID(in.UpgradeID)
			run, err := c.ExecuteWorkflow(cmd.Context(), client.StartWorkflowOptions{
				ID: wid, TaskQueue: g.taskQueue,
				// A check may be repeated, one at a time.
				WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
				WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
				WorkflowExecutionErrorWhenAlreadyStarted: true,
				TypedSearchAttributes:                    temporal.NewSearchAttributes(workflows.SearchAttrKind.ValueSet(workflows.KindUpgradeCheck)),
				Memo:                                     map[string]interface{}{"reason": in.Reason, "ticket": in.Ticket, "job": in.Job},
				StaticSummary:                            workflows.StartSummary(in),
			}, workflows.JobUpgradeWorkflowType, in)
			if err != nil {
				var started *serviceerror.WorkflowExecutionAlreadyStarted
				if errors.As(err, &started) {
					return fmt.Errorf("a check of upgrade %q runs already (workflow %s): wait for it, or see it in the UI", in.UpgradeID, wid)
				}
				return fmt.Errorf("start check of upgrade %s: %w", in.UpgradeID, err)
			}
			url := g.conn.ExecutionURL(run.GetID(), run.GetRunID())
			if g.output != outputJSON {
				fmt.Fprintf(cmd.OutOrStdout(), "check of upgrade %s of %s started (workflow %s), waiting up to %s\nui        %s\n", in.UpgradeID, in.Job, wid, timeout, url)
			}
			ctx, cancel := contextWithTimeout(cmd, timeout)
			defer cancel()
			var st workflows.UpgradeState
			runErr := run.Get(ctx, &st)
			var appErr *temporal.ApplicationError
			if errors.As(runErr, &appErr) && appErr.HasDetails() {
				_ = appErr.Details(&st)
			}
			if runErr != nil && ctx.Err() != nil && cmd.Context().Err() == nil {
				return workflowFailedError{fmt.Errorf("the check of upgrade %s did not finish within --timeout=%s; it goes on: %s", in.UpgradeID, timeout, url)}
			}
			if g.output == outputJSON {
				if err := printJSON(cmd.OutOrStdout(), st); err != nil {
					return err
				}
			} else if st.UpgradeID != "" {
				fmt.Fprintln(cmd.OutOrStdout())
				if err := printUpgradeState(cmd.OutOrStdout(), &st); err != nil {
					return err
				}
			}
			if runErr != nil {
				msg := runErr.Error()
				if appErr != nil {
					msg = appErr.Message()
				}
				return workflowFailedError{fmt.Errorf("%s\n  %s", msg, url)}
			}
			if g.output != outputJSON {
				fmt.Fprintf(cmd.OutOrStdout(), "\ncheck of upgrade %s: %s\n", in.UpgradeID, st.Rehearsal.Text())
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "upgrade file (YAML), as for upgrade start")
	cmd.Flags().StringVar(&flinkVersion, "flink-version", "", "rehearse on a drill cluster of this Flink version (major.minor, e.g. 2.3); default: the job's cluster's")
	cmd.Flags().StringVar(&savepoint, "savepoint", "", "rehearse this savepoint instead of taking one")
	durationFlag(cmd.Flags(), &timeout, "timeout", 30*time.Minute, "how long to wait for the verdict")
	return cmd
}

// upgradeOutcome reads an upgrade's end: the result of a committed run,
// the error's details of one rolled back or failed (when they hold the
// state). The error is kept for a run that did not commit.
func upgradeOutcome(get func(*workflows.UpgradeState) error) (*workflows.UpgradeState, error) {
	var st workflows.UpgradeState
	runErr := get(&st)
	if runErr == nil {
		return &st, nil
	}
	var appErr *temporal.ApplicationError
	if errors.As(runErr, &appErr) && (appErr.Type() == workflows.ErrTypeUpgradeRolledBack || appErr.Type() == workflows.ErrTypeUpgradeFailed) && appErr.HasDetails() {
		var d workflows.UpgradeState
		if err := appErr.Details(&d); err == nil {
			return &d, runErr
		}
	}
	return nil, runErr
}

// upgradeEnding says how an upgrade that did not commit ended: rolled
// back (reason, and the previous version's job), or failed.
func upgradeEnding(id string, st *workflows.UpgradeState, runErr error) string {
	msg := runErr.Error()
	var appErr *temporal.ApplicationError
	if errors.As(runErr, &appErr) {
		msg = appErr.Message()
		if appErr.Type() == workflows.ErrTypeUpgradeRolledBack && st != nil && st.Rollback != nil {
			return fmt.Sprintf("upgrade %s rolled back: %s (by %s); the previous version runs as job %s",
				id, st.Rollback.Reason, st.Rollback.By, rollbackJobID(st.Rollback))
		}
	}
	return fmt.Sprintf("upgrade %s failed: %s", id, msg)
}

// newVersionJobID is the job the new version runs as.
func newVersionJobID(st *workflows.UpgradeState) string {
	if st.Healthy != nil && st.Healthy.JobID != "" {
		return st.Healthy.JobID
	}
	return st.NewJobID
}

// rollbackJobID is the job the previous version runs as after a rollback.
func rollbackJobID(rb *workflows.UpgradeRollback) string {
	if rb.Healthy != nil && rb.Healthy.JobID != "" {
		return rb.Healthy.JobID
	}
	return rb.JobID
}

func rollbackCommand(id string) string {
	return fmt.Sprintf("flinkmaint upgrade rollback %s --by NAME --reason TEXT", id)
}

func upgradeStatusCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status UPGRADE-ID",
		Short: "Show an upgrade's phase, versions, savepoint, pending decision and rollback (also after it ended)",
		Args:  upgradeIDArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, ending, err := upgradeStatus(cmd.Context(), g, args[0])
			if err != nil {
				return err
			}
			if g.output == outputJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			if err := printUpgradeState(cmd.OutOrStdout(), st); err != nil {
				return err
			}
			if ending != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "outcome    %s\n", ending)
			}
			return nil
		},
	}
}

// upgradeStatus asks the worker for a running upgrade's state; a closed
// one's state comes from Temporal (the result, or the details of the
// error it ended with), else from a worker replaying it. ending says how
// a closed upgrade that did not commit ended.
func upgradeStatus(ctx context.Context, g *globals, id string) (*workflows.UpgradeState, string, error) {
	c, err := g.dial(ctx)
	if err != nil {
		return nil, "", err
	}
	defer c.Close()
	wid := workflows.JobUpgradeWorkflowID(id)
	d, err := c.DescribeWorkflow(ctx, wid, "")
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return nil, "", fmt.Errorf("no upgrade %s (workflow %s not found)", id, wid)
		}
		return nil, "", fmt.Errorf("status of upgrade %s: %w", id, err)
	}
	query := func(ctx context.Context) (*workflows.UpgradeState, error) {
		v, err := c.QueryWorkflow(ctx, wid, "", workflows.QueryUpgradeStatus)
		if err != nil {
			return nil, err
		}
		var st workflows.UpgradeState
		if err := v.Get(&st); err != nil {
			return nil, err
		}
		return &st, nil
	}
	if d.Status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		st, err := query(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("status of upgrade %s: %w", id, err)
		}
		return st, "", nil
	}
	run := c.GetWorkflow(ctx, wid, "")
	st, runErr := upgradeOutcome(func(out *workflows.UpgradeState) error { return run.Get(ctx, out) })
	ending := ""
	if runErr != nil {
		ending = upgradeEnding(id, st, runErr)
	}
	if st != nil {
		return st, ending, nil
	}
	// Ended without its state in Temporal (failed before the job was
	// stopped, terminated): a worker can still answer by replaying it.
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, qerr := query(qctx)
	if qerr != nil {
		return nil, "", fmt.Errorf("%s\n  (upgrade %s ended %s without its state in Temporal, and no worker answered the status query: %v)",
			ending, id, strings.ToLower(d.Status.String()), qerr)
	}
	return st, ending, nil
}

// printUpgradeState writes an upgrade's state for people.
func printUpgradeState(w io.Writer, st *workflows.UpgradeState) error {
	ew := &errWriter{w: w}
	p := ew.printf
	p("upgrade    %s\nphase      %s\n", st.UpgradeID, st.Phase)
	if st.Mode == workflows.UpgradeModeParallel {
		p("mode       parallel (the new version starts beside the running one)\n")
	}
	if st.Job.Key != "" {
		p("job        %s", st.Job.Label())
		if st.Job.Tenant != "" {
			p(" (tenant %s)", st.Job.Tenant)
		}
		p("\nold job    %s\nold recipe %s\n", orDash(st.Job.JobID), recipeText(st.Job.Restart))
	}
	switch {
	case st.SpecChange != nil:
		p("new spec   %s\n", specChangeText(*st.SpecChange))
		if st.SpecInverse != nil {
			p("undone by  %s\n", specChangeText(*st.SpecInverse))
		}
	case st.NewRecipe.Kind != "":
		p("new recipe %s\n", recipeText(st.NewRecipe))
	}
	if st.WaitingFor != "" {
		p("lock       %s\n", st.WaitingFor)
	}
	if r := st.Rehearsal; r != nil {
		p("rehearsal  %s\n", r.Text())
		if r.Savepoint != "" {
			p("           from %s on %s", r.Savepoint, orDash(r.DrillCluster))
			if r.Jar != "" {
				p(" with %s", r.Jar)
			}
			p("\n")
		}
		if r.FormatNote != "" {
			p("           %s\n", r.FormatNote)
		}
	}
	checked := st.Phase == workflows.UpgradePhaseChecked // a check stops nothing: no savepoint of its own, no record, no manifest
	if !checked {
		p("savepoint  %s\n", orDash(st.Savepoint))
	}
	if st.NewJobID != "" || st.StartAttempts > 0 {
		p("new job    %s (start attempts %d)", orDash(newVersionJobID(st)), st.StartAttempts)
		if st.Healthy != nil {
			p(", healthy: checkpoint %d after the restore", st.Healthy.CheckpointID)
		}
		p("\n")
		if st.Healthy != nil {
			for _, r := range st.Healthy.Readings {
				p("check      %s: %s reported %g\n", r.Check, r.Source, r.Value)
			}
		}
	}
	if st.Retired {
		p("retired    previous version %s, stopped with savepoint %s\n", st.Job.JobID, orDash(st.RetiredSavepoint))
	}
	if st.GateError != "" {
		p("gate error %s\n", st.GateError)
	}
	if len(st.Unmatched) > 0 {
		p("unmatched  %s (operators whose state the new version cannot map)\n", strings.Join(st.Unmatched, ", "))
	}
	if rb := st.Rollback; rb != nil {
		p("rollback   by %s: %s\n", rb.By, rb.Reason)
		if id := rollbackJobID(rb); id != "" {
			p("           previous version as job %s (attempts %d)", id, rb.Attempts)
			if rb.Healthy != nil {
				p(", healthy")
			}
			p("\n")
		}
		if rb.NewVersionSavepoint != "" {
			p("           new version's savepoint (kept, not used): %s\n", rb.NewVersionSavepoint)
		}
		if rb.Error != "" {
			p("           error: %s\n", rb.Error)
		}
	}
	if pd := st.Pending; pd != nil {
		p("waiting    %s since %s\n           %s\n           allowed: %s\n", pd.Kind, pd.Since.Format("2006-01-02 15:04:05"), pd.Reason, strings.Join(pd.Allowed, ", "))
		for _, a := range pd.Allowed {
			p("           answer: flinkmaint upgrade decide %s --action %s --by NAME --reason TEXT\n", st.UpgradeID, a)
		}
	}
	if requested := rollbackRequested(st); requested != nil && st.Rollback == nil {
		p("rollback   asked by %s: %s (not started yet)\n", requested.By, requested.Reason)
	} else if st.Rollback == nil && (st.Phase == workflows.UpgradePhaseStart || st.Phase == workflows.UpgradePhaseHold) {
		p("rollback   possible now: %s\n", rollbackCommand(st.UpgradeID))
	}
	if !checked {
		p("recorded   %s (the new recipe as the job's recipe of record)\n", yesNo(st.RecipeRecorded))
		p("manifest   %s\n", orDash(st.ManifestPath))
	}
	for _, d := range st.Decisions {
		what := d.Kind
		if d.Action != "" {
			what += " " + d.Action
		}
		p("decision   %s %s by %s", d.At.Format("2006-01-02 15:04:05"), what, d.By)
		if d.Reason != "" {
			p(": %s", d.Reason)
		}
		p("\n")
	}
	for _, n := range st.Notes {
		p("note       %s\n", n)
	}
	if !st.StartedAt.IsZero() {
		p("started    %s\n", st.StartedAt.Format("2006-01-02 15:04:05"))
	}
	if !st.FinishedAt.IsZero() {
		p("finished   %s\n", st.FinishedAt.Format("2006-01-02 15:04:05"))
	}
	return ew.err
}

// rollbackRequested is the rollback an operator asked for, if any; the
// state shows it in its decisions before the rollback starts.
func rollbackRequested(st *workflows.UpgradeState) *workflows.DecisionRecord {
	for i := range st.Decisions {
		if st.Decisions[i].Kind == workflows.UpdateRollback {
			return &st.Decisions[i]
		}
	}
	return nil
}

// errWriter keeps the first write error of a series of prints.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...interface{}) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

func recipeText(r inventory.RestartRecipe) string {
	var parts []string
	if r.Jar != "" {
		parts = append(parts, "jar "+r.Jar)
	}
	if r.JarID != "" {
		parts = append(parts, "jar id "+r.JarID+" (uploaded)")
	}
	if r.EntryClass != "" {
		parts = append(parts, "entry "+r.EntryClass)
	}
	if len(r.ProgramArgs) > 0 {
		parts = append(parts, fmt.Sprintf("args %q", r.ProgramArgs))
	}
	if r.Parallelism > 0 {
		parts = append(parts, fmt.Sprintf("parallelism %d", r.Parallelism))
	}
	parts = append(parts, configText(r.FlinkConfiguration, nil)...)
	if r.AllowNonRestoredState {
		parts = append(parts, "allowNonRestoredState")
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func upgradeRollbackCommand(g *globals) *cobra.Command {
	var by, reason string
	cmd := &cobra.Command{
		Use:   "rollback UPGRADE-ID --reason TEXT [--by NAME]",
		Short: "Go back to the previous version while the new one starts or is held after commit",
		Args:  upgradeIDArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(by) == "" || strings.TrimSpace(reason) == "" {
				return usageErrorf("--reason is required and --by must not be empty: both are recorded in the upgrade's manifest")
			}
			st, err := sendUpgradeUpdate(cmd.Context(), g, args[0], workflows.UpdateRollback, workflows.RollbackRequest{By: by, Reason: reason})
			if err != nil {
				return err
			}
			if g.output == outputJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "rollback accepted by upgrade %s (phase %s)\nfollow    flinkmaint upgrade status %s\n", args[0], st.Phase, args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&by, "by", operator(), "who asks (recorded; default FLINKMAINT_OPERATOR, else the login name)")
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded; required)")
	return cmd
}

func upgradeDecideCommand(g *globals) *cobra.Command {
	var action, by, reason string
	cmd := &cobra.Command{
		Use:   "decide UPGRADE-ID --action ACTION --reason TEXT [--by NAME]",
		Short: "Answer the decision an upgrade waits for (upgrade status shows the allowed actions)",
		Args:  upgradeIDArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if action == "" {
				return usageErrorf("--action is required: one of the actions `flinkmaint upgrade status %s` lists as allowed (such as rollback, allow-non-restored-state, retry, resume or abort)", args[0])
			}
			if strings.TrimSpace(by) == "" || strings.TrimSpace(reason) == "" {
				return usageErrorf("--reason is required and --by must not be empty: both are recorded in the upgrade's manifest")
			}
			st, err := sendUpgradeUpdate(cmd.Context(), g, args[0], workflows.UpdateDecide, workflows.DecideRequest{Action: action, By: by, Reason: reason})
			if err != nil {
				return err
			}
			if g.output == outputJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s accepted by upgrade %s (phase %s)\nfollow    flinkmaint upgrade status %s\n", action, args[0], st.Phase, args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&action, "action", "", "one of the allowed actions of the pending decision (required)")
	cmd.Flags().StringVar(&by, "by", operator(), "who decides (recorded; default FLINKMAINT_OPERATOR, else the login name)")
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded; required)")
	return cmd
}

// sendUpgradeUpdate sends an update to a running upgrade and returns the
// state it answers with. The upgrade's refusal (wrong phase, action not
// allowed now) is returned as such, with a hint when a pending decision
// is the way to say the same.
func sendUpgradeUpdate(ctx context.Context, g *globals, id, name string, arg interface{}) (*workflows.UpgradeState, error) {
	c, err := g.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	wid := workflows.JobUpgradeWorkflowID(id)
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: wid, UpdateName: name, Args: []interface{}{arg},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		var st workflows.UpgradeState
		if err = h.Get(ctx, &st); err == nil {
			return &st, nil
		}
	}
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil, fmt.Errorf("%s: upgrade %s is not running (ended, or never started): see flinkmaint upgrade status %s: %w", name, id, id, err)
	}
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		return nil, fmt.Errorf("%s on upgrade %s: %w", name, id, err)
	}
	msg := fmt.Sprintf("%s refused by upgrade %s: %s", name, id, appErr.Message())
	if name == workflows.UpdateRollback {
		// A decision that allows rollback takes it through decide.
		if v, qerr := c.QueryWorkflow(ctx, wid, "", workflows.QueryUpgradeStatus); qerr == nil {
			var st workflows.UpgradeState
			if v.Get(&st) == nil && st.Pending != nil {
				for _, a := range st.Pending.Allowed {
					if a == workflows.ActionRollback {
						msg += fmt.Sprintf("\n  the upgrade waits for a %s decision that allows rollback: flinkmaint upgrade decide %s --action rollback --by NAME --reason TEXT",
							st.Pending.Kind, id)
					}
				}
			}
		}
	}
	return nil, errors.New(msg)
}

// specChangeText is an operator job's spec change on one line.
func specChangeText(c inventory.JobSpecChange) string {
	var parts []string
	if c.Image != "" {
		parts = append(parts, "image "+c.Image)
	}
	if c.JarURI != "" {
		parts = append(parts, "jarURI "+c.JarURI)
	}
	if c.Args != nil {
		parts = append(parts, fmt.Sprintf("args %q", c.Args))
	}
	if c.Parallelism != 0 {
		parts = append(parts, fmt.Sprintf("parallelism %d", c.Parallelism))
	}
	parts = append(parts, configText(c.FlinkConfiguration, c.Unset)...)
	if len(parts) == 0 {
		return "(nothing)"
	}
	return strings.Join(parts, ", ")
}

// configText shows configuration keys set, in key order, and removed.
func configText(set map[string]string, unset []string) []string {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+set[k])
	}
	for _, k := range unset {
		parts = append(parts, "unset "+k)
	}
	return parts
}
