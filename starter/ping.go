package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/workflows"
)

// pingOutput is what `flinkmaint ping` prints.
type pingOutput struct {
	WorkflowID  string        `json:"workflowId"`
	RunID       string        `json:"runId"`
	Worker      string        `json:"worker"`
	Hostname    string        `json:"hostname"`
	Message     string        `json:"message"`
	RoundTrip   time.Duration `json:"roundTripNanos"`
	RoundTripS  string        `json:"roundTrip"`
	ActivityRTT string        `json:"activityRoundTrip"`
	URL         string        `json:"url"`
}

func newPingCommand(g *globals) *cobra.Command {
	var (
		message string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "ping",
		Short: "Run a trivial workflow through a worker and report the round trip",
		Long: "ping starts the Ping workflow on the task queue, waits for a worker to run its activity, " +
			"and prints which worker answered, the round trip and the execution's link in the Temporal UI.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return usageErrorf("--timeout=%s is not valid: use a positive duration such as 30s", timeout)
			}
			ctx := cmd.Context()
			c, err := g.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()

			id := workflows.PingWorkflowID(nonce())
			started := time.Now()
			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
				ID:                       id,
				TaskQueue:                g.taskQueue,
				WorkflowExecutionTimeout: timeout,
				TypedSearchAttributes:    temporal.NewSearchAttributes(workflows.SearchAttrKind.ValueSet(workflows.KindPing)),
				StaticSummary:            workflows.StartSummary(workflows.PingInput{Message: message}),
			}, workflows.PingWorkflowType, workflows.PingInput{Message: message})
			if err != nil {
				return fmt.Errorf("start ping workflow: %w", err)
			}
			url := g.conn.ExecutionURL(run.GetID(), run.GetRunID())
			var res workflows.PingResult
			if err := run.Get(ctx, &res); err != nil {
				return workflowFailedError{fmt.Errorf("ping %s did not complete within %s (is a worker polling task queue %q?): %w\n  %s",
					id, timeout, g.taskQueue, err, url)}
			}
			rt := time.Since(started)
			out := pingOutput{
				WorkflowID: run.GetID(), RunID: run.GetRunID(), Worker: res.Worker, Hostname: res.Hostname,
				Message: res.Message, RoundTrip: rt, RoundTripS: rt.Round(time.Millisecond).String(),
				ActivityRTT: res.RoundTrip.String(), URL: url,
			}
			if g.output == outputJSON {
				return printJSON(cmd.OutOrStdout(), out)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "pong\t%q\n", out.Message)
			fmt.Fprintf(tw, "worker\t%s\n", out.Worker)
			fmt.Fprintf(tw, "round trip\t%s\n", out.RoundTripS)
			fmt.Fprintf(tw, "workflow\t%s\n", out.WorkflowID)
			fmt.Fprintf(tw, "ui\t%s\n", out.URL)
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&message, "message", "ping", "text the worker echoes back")
	durationFlag(cmd.Flags(), &timeout, "timeout", 30*time.Second, "how long to wait for a worker to answer")
	return cmd
}

func nonce() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b)
}
