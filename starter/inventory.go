package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flinkmaint/flinkmaint/activities/doctor"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// newInventoryCommand shows the fleet as the worker discovers it: the
// first thing to look at in a new cluster, before any window. It reads
// only; every discovery error is printed and makes the exit code 1.
func newInventoryCommand(g *globals) *cobra.Command {
	var in doctor.DescribeInventoryInput
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "inventory",
		Short: "The tenants, clusters and jobs the worker discovers, with state dirs, restore points and discovery errors; reads only",
		Long: `Shows the fleet as the worker sees it: each tenant and its root, each Flink
cluster with its REST endpoint, its checkpoint, savepoint and HA dirs and the
Flink version it answers with, and each job the cluster lists with its state,
its restart recipe (none: a window skips it), its latest checkpoint and
savepoint and what it was started from. Jobs the inventory knows that no
cluster runs are listed too. What cannot be seen (a cluster that does not
answer, an inventory that cannot be read) is printed, and the exit code is 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 {
				return usageErrorf("--timeout=%s is not valid: use a positive duration such as 2m", timeout)
			}
			var view doctor.InventoryView
			if err := runOnWorker(cmd, g, timeout, workflows.InventoryViewID(nonce()), workflows.InventoryViewWorkflowType,
				workflows.KindInventory, in, &view); err != nil {
				return err
			}
			var err error
			if g.output == outputJSON {
				err = printJSON(cmd.OutOrStdout(), view)
			} else {
				err = renderInventory(cmd.OutOrStdout(), view)
			}
			if err != nil {
				return err
			}
			if view.Problems() > 0 {
				return silentExit{code: exitFailure}
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&in.Tenants, "tenant", nil, "only these tenants (repeat or comma-separate)")
	cmd.Flags().StringSliceVar(&in.Clusters, "cluster", nil, "only these cluster ids (repeat or comma-separate)")
	durationFlag(cmd.Flags(), &timeout, "timeout", 2*time.Minute, "how long to wait for the worker's answer")
	return cmd
}

// renderInventory prints the view as a reader scans it: tenants, then per
// cluster its dirs and a table of its jobs, then what could not be seen.
func renderInventory(w io.Writer, v doctor.InventoryView) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "%d tenant(s), %d cluster(s)\n", len(v.Tenants), len(v.Clusters))
	for _, t := range v.Tenants {
		where := ""
		if t.Namespace != "" {
			where = "  namespace " + t.Namespace
			if t.KubeCluster != "" {
				where += " in " + t.KubeCluster
			}
		}
		fmt.Fprintf(b, "tenant %s  root %s%s\n", t.Name, t.Root, where)
	}
	for _, c := range v.Clusters {
		fmt.Fprintf(b, "\ncluster %s (tenant %s, %s, %s", c.ClusterID, c.Tenant, c.Mode, c.Source)
		if c.FlinkVersion != "" {
			fmt.Fprintf(b, ", Flink %s", c.FlinkVersion)
		}
		fmt.Fprintf(b, ")  %s\n", c.RESTURL)
		for _, d := range []struct{ name, dir string }{{"checkpoints", c.CheckpointDir}, {"savepoints", c.SavepointDir}, {"HA", c.HAStorageDir}} {
			if d.dir == "" {
				d.dir = "(not configured)"
			}
			fmt.Fprintf(b, "  %-12s %s\n", d.name, d.dir)
		}
		if c.Error != "" {
			fmt.Fprintf(b, "  ERROR %s\n", c.Error)
		}
		if len(c.Jobs) == 0 {
			fmt.Fprintf(b, "  no jobs\n")
			continue
		}
		tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  JOB\tID\tSTATE\tRESTART\tLATEST CHECKPOINT\tLATEST SAVEPOINT")
		for _, j := range c.Jobs {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", j.Name, orDash(j.ID), orDash(j.State), orDash(string(j.Restart)),
				orDash(j.LatestCheckpoint), orDash(j.LatestSavepoint))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, j := range c.Jobs {
			if j.RestoredFrom != "" {
				fmt.Fprintf(b, "  %s started from %s\n", j.Name, j.RestoredFrom)
			}
			if j.Note != "" {
				fmt.Fprintf(b, "  %s: %s\n", j.Name, j.Note)
			}
			if j.Error != "" {
				fmt.Fprintf(b, "  ERROR %s: %s\n", j.Name, j.Error)
			}
		}
	}
	if len(v.Retired) > 0 {
		fmt.Fprintf(b, "\nretired clusters: %s\n", strings.Join(v.Retired, ", "))
	}
	for _, e := range v.Errors {
		fmt.Fprintf(b, "\nERROR %s\n", e)
	}
	if n := v.Problems(); n > 0 {
		fmt.Fprintf(b, "\n%d problem(s): the worker cannot see all of the fleet\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
