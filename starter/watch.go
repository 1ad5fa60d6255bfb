package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/flinkmaint/flinkmaint/workflows"
)

// withWatch gives a status command --watch: it shows the status again
// every --interval, each time it changed, until the run ends (then once
// more) or the command is interrupted; with --until-decision also when the
// run, or one of the runs deciding for it (a window's cleanup), waits for
// a person.
func withWatch(g *globals, cmd *cobra.Command, workflowID func(args []string) string, deciders ...func(args []string) string) *cobra.Command {
	var (
		watch, untilDecision bool
		interval             time.Duration
	)
	show := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if untilDecision && !watch {
			return usageErrorf("--until-decision goes with --watch")
		}
		if !watch {
			return show(cmd, args)
		}
		if interval < time.Second {
			return usageErrorf("--interval=%s is not valid: use 1s or more", interval)
		}
		c, err := g.dial(cmd.Context())
		if err != nil {
			return err
		}
		defer c.Close()
		out := cmd.OutOrStdout()
		defer cmd.SetOut(out)
		var last string
		for {
			// The run's status first: a status shown after it ended is its last.
			d, err := c.DescribeWorkflow(cmd.Context(), workflowID(args), "")
			if err != nil {
				return fmt.Errorf("watch %s: %w", workflowID(args), err)
			}
			running := d.Status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
			var buf bytes.Buffer
			cmd.SetOut(&buf)
			err = show(cmd, args)
			cmd.SetOut(out)
			if err != nil {
				return err
			}
			if now := buf.String(); now != last {
				if g.output != outputJSON {
					fmt.Fprintf(out, "── %s ──\n", time.Now().UTC().Format("15:04:05Z"))
				}
				fmt.Fprint(out, now)
				last = now
			}
			if !running {
				if g.output != outputJSON {
					fmt.Fprintf(out, "── the run has ended: %s ──\n", d.Status)
				}
				return nil
			}
			if untilDecision {
				waiting, err := waitsForDecision(cmd.Context(), c, d, args, deciders)
				if err != nil {
					return err
				}
				if waiting != "" {
					if g.output != outputJSON {
						fmt.Fprintf(out, "── %s waits for a decision ──\n", waiting)
					}
					return nil
				}
			}
			select {
			case <-cmd.Context().Done():
				return nil
			case <-time.After(interval):
			}
		}
	}
	cmd.Flags().BoolVar(&watch, "watch", false, "show the status again each time it changes, until the run ends (Ctrl-C stops watching, not the run)")
	cmd.Flags().BoolVar(&untilDecision, "until-decision", false, "with --watch: stop watching as soon as the run waits for a person (exit 0)")
	durationFlag(cmd.Flags(), &interval, "interval", 5*time.Second, "how often --watch asks")
	return cmd
}

// waitsForDecision names the run that waits for a person: the watched one
// (d) or a decider of it that exists; "" when none does.
func waitsForDecision(ctx context.Context, c client.Client, d *client.WorkflowExecutionDescription, args []string, deciders []func([]string) string) (string, error) {
	if paused, _ := d.TypedSearchAttributes.GetBool(workflows.SearchAttrPausedForDecision); paused {
		return d.WorkflowExecution.ID, nil
	}
	for _, id := range deciders {
		dd, err := c.DescribeWorkflow(ctx, id(args), "")
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			continue // not started yet
		}
		if err != nil {
			return "", fmt.Errorf("watch %s: %w", id(args), err)
		}
		if paused, _ := dd.TypedSearchAttributes.GetBool(workflows.SearchAttrPausedForDecision); paused && dd.Status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return dd.WorkflowExecution.ID, nil
		}
	}
	return "", nil
}
