package main

import (
	"bytes"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
)

// withWatch gives a status command --watch: it shows the status again
// every --interval, each time it changed, until the run ends (then once
// more) or the command is interrupted.
func withWatch(g *globals, cmd *cobra.Command, workflowID func(args []string) string) *cobra.Command {
	var (
		watch    bool
		interval time.Duration
	)
	show := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
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
			select {
			case <-cmd.Context().Done():
				return nil
			case <-time.After(interval):
			}
		}
	}
	cmd.Flags().BoolVar(&watch, "watch", false, "show the status again each time it changes, until the run ends (Ctrl-C stops watching, not the run)")
	durationFlag(cmd.Flags(), &interval, "interval", 5*time.Second, "how often --watch asks")
	return cmd
}
