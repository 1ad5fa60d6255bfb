package main

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/workflows"
)

func governanceRestoreCommand(g *globals) *cobra.Command {
	var in workflows.GovernanceRestoreInput
	var overrideFreeze bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "restore RUN",
		Short: "Put a governance run's trash back where it was (each item checked first; --dry-run to see)",
		Long: `Moves the items a governance run trashed back to their original paths, the
last trashed first. An item whose original path exists again, that lies on
another file system, that the manifest does not name as the run would, or
that is no longer in the trash (purged) is refused and named; the rest goes
back. Run it again to go on after an interruption: what is back already is
left as it is. Needs the tenant lock of the tenants the items go back into
and honours freezes, as an execution does.

RUN is the governance run's name (its trash is <cleanup.trashRoot>/RUN).`,
		Args: oneArg("RUN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			in.RunID, in.By = args[0], operator()
			if timeout <= 0 {
				return usageErrorf("--timeout=%s is not valid: use a positive duration such as 30m", timeout)
			}
			if !in.DryRun && in.Reason == "" {
				return usageErrorf("--reason is required to restore (it is recorded); --dry-run shows what would go back")
			}
			var err error
			if in.OverrideFreeze, err = freezeOverride(overrideFreeze, in.Reason, "trash goes back"); err != nil {
				return err
			}
			if err := in.Validate(); err != nil {
				return usageErrorf("%v", err)
			}
			c, err := g.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			run, err := c.ExecuteWorkflow(cmd.Context(), client.StartWorkflowOptions{
				ID: workflows.GovernanceRestoreWorkflowID(in.RunID), TaskQueue: g.taskQueue,
				WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
				WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
				WorkflowExecutionErrorWhenAlreadyStarted: true,
				TypedSearchAttributes:                    temporal.NewSearchAttributes(workflows.SearchAttrKind.ValueSet(workflows.KindGovernance)),
			}, workflows.GovernanceRestoreWorkflowType, in)
			var started *serviceerror.WorkflowExecutionAlreadyStarted
			if errors.As(err, &started) {
				return fmt.Errorf("a restore of run %s is running already: wait for it (flinkmaint governance restore %s --dry-run shows what is back)", in.RunID, in.RunID)
			}
			if err != nil {
				return fmt.Errorf("start the restore of run %s: %w", in.RunID, err)
			}
			ctx, cancel := contextWithTimeout(cmd, timeout)
			defer cancel()
			var st workflows.GovernanceRestoreState
			if err := run.Get(ctx, &st); err != nil {
				return workflowFailedError{fmt.Errorf("restore of run %s: %w\n  %s", in.RunID, err, g.conn.ExecutionURL(run.GetID(), run.GetRunID()))}
			}
			if g.output == outputJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			return printRestore(cmd, &st)
		},
	}
	cmd.Flags().StringArrayVar(&in.Paths, "path", nil, "only items whose original path (or a parent dir) matches this glob; repeatable")
	cmd.Flags().BoolVar(&in.DryRun, "dry-run", false, "say what would go back and what would be refused; move nothing")
	cmd.Flags().StringVar(&in.Reason, "reason", "", "why (recorded; required unless --dry-run)")
	cmd.Flags().BoolVar(&overrideFreeze, "override-freeze", false, "restore inside a freeze (needs --reason)")
	durationFlag(cmd.Flags(), &timeout, "timeout", time.Hour, "how long to wait for the result")
	return cmd
}

func printRestore(cmd *cobra.Command, st *workflows.GovernanceRestoreState) error {
	w := cmd.OutOrStdout()
	res := st.Result
	if res == nil {
		fmt.Fprintf(w, "restore of run %s: %s\n", st.RunID, st.Phase)
		return nil
	}
	verb := "restored"
	if st.DryRun {
		verb = "would restore"
	}
	fmt.Fprintf(w, "run %s: %s %d items (%d files, %d bytes), %d back already, %d refused\n", st.RunID, verb,
		res.Counts[cleanup.OutcomeRestored]+res.Counts[cleanup.OutcomeStarted]-res.AlreadyBack, res.Files, res.Bytes, res.AlreadyBack, res.Counts[cleanup.OutcomeRefused])
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tKIND\tOUTCOME\tDETAIL")
	for _, it := range res.Items {
		outcome := string(it.Outcome)
		if it.Outcome == cleanup.OutcomeStarted {
			outcome = "would restore"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", it.Path, it.Kind, outcome, it.Detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.Manifest != "" {
		fmt.Fprintf(w, "manifest %s\n", res.Manifest)
	}
	for _, n := range st.Notes {
		fmt.Fprintf(w, "note     %s\n", n)
	}
	return nil
}
