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
		Short: "Put a governance run's trash back where it was, whole snapshots at a time (--dry-run to see)",
		Long: `Moves the items a governance run trashed back to their original paths.
--path selects items by their original path: an item it matches, one under
a dir it matches, and one holding what it matches (a chk-N of a job dir
trashed whole). A checkpoint or savepoint comes back with
everything its _metadata names that governance trashed, as separate items
of this run or of an earlier run (shared files; another job's files after
a restore in CLAIM mode); the dry run lists all of it, each with its run.

A snapshot goes back whole or not at all: when a file it names is in no
run's trash and not at home, or an item it needs cannot go back,
nothing of it moves and the refusal names why. An item is refused when it
lies on another file system, the manifest does not name it as its run
would, it is no longer in the trash (purged), or a running job may write
into the job dir it goes into (a live job of the inventory, or a file
written there in the last hour): nothing goes into a dir a running job
uses. Dirs go back before what lies in them; a job, checkpoint or
savepoint dir that exists again (an earlier restore, or a stopped run of
the same job id, made it) takes the item entry by entry, never over an
existing file.

Run it again to go on after an interruption: what is back already is left
as it is. Needs the tenant lock of the tenants the items go back into and
honours freezes, as an execution does.

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
	cmd.Flags().StringArrayVar(&in.Paths, "path", nil, "only items whose original path, a parent dir of it or a path inside it matches this glob, with what their _metadata name; repeatable")
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
	fmt.Fprintln(tw, "PATH\tKIND\tRUN\tOUTCOME\tDETAIL")
	for _, it := range res.Items {
		outcome := string(it.Outcome)
		if it.Outcome == cleanup.OutcomeStarted {
			outcome = "would restore"
		}
		run := it.Run
		if run == "" {
			run = st.RunID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", it.Path, it.Kind, run, outcome, it.Detail)
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
