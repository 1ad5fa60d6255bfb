package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// newSavepointsCommand groups the savepoint catalog: which logical job
// each savepoint belongs to, which savepoint retention counts by.
func newSavepointsCommand(g *globals) *cobra.Command {
	cmd := newGroupCommand("savepoints", "The savepoint catalog: savepoints per logical job, and adopting those whose job is unknown")
	cmd.AddCommand(newSavepointsListCommand(g), newSavepointsAdoptCommand(g), newSavepointsScheduleCommand(g))
	return cmd
}

// newSavepointsScheduleCommand runs savepoints that leave jobs running on
// Temporal Schedules; schedules share one name space with governance's.
func newSavepointsScheduleCommand(g *globals) *cobra.Command {
	return newScheduleGroup(g, "Take a savepoint of running jobs on a Temporal Schedule (the jobs keep running)", func() scheduleAction { return &savepointSchedule{} })
}

// savepointSchedule starts ScheduledSavepoints.
type savepointSchedule struct {
	scope       core.Scope
	concurrency int
	format      string
	timeout     time.Duration
}

func (f *savepointSchedule) bind(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVar(&f.scope.Tenants, "tenant", nil, "tenants in scope (repeatable; default all)")
	fl.StringSliceVar(&f.scope.Clusters, "cluster", nil, "clusters in scope (repeatable; default all)")
	fl.StringSliceVar(&f.scope.IncludeJobs, "include-job", nil, "job name globs in scope")
	fl.StringSliceVar(&f.scope.ExcludeJobs, "exclude-job", nil, "job name globs out of scope")
	fl.IntVar(&f.concurrency, "concurrency", 4, "savepoints in flight at once (1..256)")
	fl.StringVar(&f.format, "format", workflows.FormatCanonical, "savepoint format: CANONICAL or NATIVE")
	durationFlag(fl, &f.timeout, "savepoint-timeout", 30*time.Minute, "bound on one savepoint, verification included")
}

func (*savepointSchedule) workflowTypes() []string {
	return []string{workflows.ScheduledSavepointsWorkflowType}
}

func (f *savepointSchedule) build(name string) (string, interface{}, string, error) {
	in := workflows.ScheduledSavepointsInput{Schedule: name, Scope: f.scope, Concurrency: f.concurrency,
		Format: strings.ToUpper(f.format), Timeout: workflows.Duration(f.timeout)}
	if err := in.Validate(); err != nil {
		return "", nil, "", usageErrorf("invalid savepoint schedule (flags --concurrency, --format, --savepoint-timeout): %v", err)
	}
	return workflows.ScheduledSavepointsWorkflowType, in, workflows.KindSavepoints, nil
}

// checkJobFlag validates --job cluster/name.
func checkJobFlag(job string, required bool) error {
	if job == "" && !required {
		return nil
	}
	c, n, ok := strings.Cut(job, "/")
	if !ok || c == "" || n == "" || strings.Contains(n, "/") {
		return usageErrorf("--job=%q is not valid: use <cluster>/<job name>, such as cluster-a/orders", job)
	}
	return nil
}

// runCatalog runs one SavepointCatalog operation through a worker.
func runCatalog(cmd *cobra.Command, g *globals, timeout time.Duration, in workflows.SavepointCatalogInput) (workflows.SavepointCatalogResult, error) {
	var out workflows.SavepointCatalogResult
	if timeout <= 0 {
		return out, usageErrorf("--timeout=%s is not valid: use a positive duration such as 5m", timeout)
	}
	err := runOnWorker(cmd, g, timeout, workflows.SavepointCatalogWorkflowID(nonce()), workflows.SavepointCatalogWorkflowType,
		workflows.KindSavepoints, in, &out)
	return out, err
}

func newSavepointsListCommand(g *globals) *cobra.Command {
	var (
		tenants []string
		job     string
		unknown bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List completed savepoints with their logical job (or lineage-unknown), oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkJobFlag(job, false); err != nil {
				return err
			}
			if unknown && job != "" {
				return usageErrorf("--unknown and --job=%q exclude each other: a savepoint of a known job is not lineage-unknown", job)
			}
			out, err := runCatalog(cmd, g, timeout, workflows.SavepointCatalogInput{List: &governance.ListSavepointsInput{Tenants: tenants, Job: job, Unknown: unknown}})
			if err != nil {
				return err
			}
			res := out.List
			if res == nil {
				res = &governance.ListSavepointsResult{}
			}
			if g.output == outputJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "WRITTEN\tJOB\tTRIGGER\tRUN\tFORMAT\tDRILL\tREHEARSAL\tFAILED-RESTORE\tFILES\tBYTES\tPATH")
			for _, r := range res.Savepoints {
				j, trig := r.Job, r.Trigger
				if j == "" {
					j, trig = "lineage-unknown", "-"
				}
				drill := "-"
				if d := r.Drill; d != nil {
					drill = fmt.Sprintf("%s (tier %d, %s)", d.Outcome, d.Tier, d.At.UTC().Format("2006-01-02"))
				}
				rehearsal := "-"
				if h := r.Rehearsal; h != nil {
					rehearsal = fmt.Sprintf("%s (Flink %s, %s)", h.Verdict, orDash(h.FlinkVersion), h.At.UTC().Format("2006-01-02"))
				}
				failed := "-"
				if f := r.FailedRestore; f != nil {
					failed = fmt.Sprintf("job %s on %s, held until %s", f.JobID, f.Cluster, f.HeldUntil.UTC().Format(time.RFC3339))
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", r.Written.UTC().Format(time.RFC3339), j, trig,
					orDash(r.RunID), orDash(r.Format), drill, rehearsal, failed, r.Files, r.Bytes, r.Path)
			}
			for _, n := range res.Notes {
				fmt.Fprintln(tw, "note: "+n)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringSliceVar(&tenants, "tenant", nil, "tenants (repeatable; default all)")
	cmd.Flags().StringVar(&job, "job", "", "only the savepoints of this logical job, <cluster>/<job name>")
	cmd.Flags().BoolVar(&unknown, "unknown", false, "only the savepoints no evidence ties to a logical job (governance keeps them until adopted)")
	durationFlag(cmd.Flags(), &timeout, "timeout", 5*time.Minute, "how long to wait for the worker")
	return cmd
}

func newSavepointsAdoptCommand(g *globals) *cobra.Command {
	var (
		job     string
		force   bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "adopt --job CLUSTER/NAME PATH...",
		Short: "Assign savepoints to a logical job, bringing them under its retention",
		Long: "adopt catalogues completed savepoints (each must have a parseable _metadata under the root of the cluster's tenant) " +
			"under the logical job, so governance counts them with the job's other savepoints instead of keeping them as lineage-unknown. " +
			"A savepoint catalogued for another job is refused unless --force is given; nothing is written unless every path passes.",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("savepoints adopt needs at least one savepoint PATH")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkJobFlag(job, true); err != nil {
				return err
			}
			out, err := runCatalog(cmd, g, timeout, workflows.SavepointCatalogInput{Adopt: &governance.AdoptSavepointsInput{Job: job, Paths: args, Force: force}})
			if err != nil {
				return err
			}
			res := out.Adopt
			if res == nil {
				res = &governance.AdoptSavepointsResult{}
			}
			if g.output == outputJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			for _, r := range res.Adopted {
				fmt.Fprintf(cmd.OutOrStdout(), "adopted %s as %s (%d files, %d bytes)\n", r.Path, r.Job, r.Files, r.Bytes)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&job, "job", "", "the logical job, <cluster>/<job name> (required)")
	cmd.Flags().BoolVar(&force, "force", false, "reassign savepoints already catalogued for another job")
	durationFlag(cmd.Flags(), &timeout, "timeout", 5*time.Minute, "how long to wait for the worker")
	return cmd
}

// orDash shows an unknown value in a table.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
