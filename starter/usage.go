package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/internal/usage"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// outputCSV is a format only `usage` writes.
const outputCSV = "csv"

// newUsageCommand shows who fills each tenant's quota. The CLI has no
// storage credentials, so a StorageUsage workflow walks the tenant roots
// on a worker.
func newUsageCommand(g *globals) *cobra.Command {
	var (
		tenants []string
		top     int
		output  string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "Files, dirs and bytes per tenant, kind and logical job, their growth since the last sample, and the top offenders",
		Long: "usage walks each tenant root once through a worker and counts every file and directory under one kind: checkpoints, shared, taskowned, " +
			"savepoints, ha, trash, flinkmaint (.flinkmaint/: savepoint catalog, usage samples, plans), structure (the root and the directories leading to " +
			"the configured roots) or unknown; and, where it can be told, under the logical job (tenant/cluster/job) it belongs to. Growth compares with the " +
			"previous sample, which each run replaces (<tenant root>/.flinkmaint/usage/latest.json); the first sample has none. " +
			"table: the kinds and the top offenders per tenant; json: everything, per-job rows included; csv: one row per tenant, job and kind.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// pflag turns --tenant "" into no tenant at all, which would
			// mean every tenant.
			if cmd.Flags().Changed("tenant") && len(tenants) == 0 {
				tenants = []string{""}
			}
			if err := checkUsageFlags(tenants, top, output, timeout); err != nil {
				return err
			}
			var res capacity.TenantUsageResult
			if err := runOnWorker(cmd, g, timeout, workflows.UsageWorkflowID(nonce()), workflows.UsageWorkflowType, workflows.KindUsage,
				capacity.TenantUsageInput{Tenants: tenants, Top: top}, &res); err != nil {
				return err
			}
			switch output {
			case outputJSON:
				return printJSON(cmd.OutOrStdout(), res)
			case outputCSV:
				return writeUsageCSV(cmd.OutOrStdout(), res)
			}
			return writeUsageTable(cmd.OutOrStdout(), res)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&tenants, "tenant", nil, "tenants (repeatable; default all)")
	f.IntVar(&top, "top", usage.DefaultTop, fmt.Sprintf("how many logical jobs to name as top offenders per tenant, 1 to %d", usage.MaxTop))
	// Shadows the global --output, which knows no csv.
	f.StringVarP(&output, "output", "o", outputTable, "output format: table, json or csv")
	durationFlag(f, &timeout, "timeout", 15*time.Minute, "how long to wait for the worker's walk")
	return cmd
}

// checkUsageFlags names the first bad flag, its value and what is valid.
func checkUsageFlags(tenants []string, top int, output string, timeout time.Duration) error {
	switch {
	case output != outputTable && output != outputJSON && output != outputCSV:
		return usageErrorf("--output=%q is not valid: use %s, %s or %s", output, outputTable, outputJSON, outputCSV)
	case top < 1 || top > usage.MaxTop:
		return usageErrorf("--top=%d is not valid: use 1 to %d", top, usage.MaxTop)
	case timeout <= 0:
		return usageErrorf("--timeout=%s is not valid: use a positive duration such as 15m", timeout)
	}
	for _, t := range tenants {
		if strings.TrimSpace(t) == "" {
			return usageErrorf("--tenant=%q is not valid: name a tenant of the inventory", t)
		}
	}
	return nil
}

// writeUsageTable writes per tenant a line per kind, then the top
// offenders by files and by bytes.
func writeUsageTable(w io.Writer, res capacity.TenantUsageResult) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(cells []string) { fmt.Fprintln(tw, strings.Join(cells, "\t")) }
	upper := func(cells []string) []string {
		out := make([]string, len(cells))
		for i, c := range cells {
			out[i] = strings.ToUpper(c)
		}
		return out
	}
	for i, r := range res.Tenants {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "tenant %s (%s), sampled %s; %s\n", r.Tenant, r.Root, r.At.UTC().Format(time.RFC3339), r.GrowthNote())
		row(upper(usage.KindHeader()))
		for _, cells := range r.KindRows() {
			row(cells)
		}
		for _, top := range []struct {
			by   string
			list []usage.Offender
		}{{"files", r.TopFiles}, {"bytes", r.TopBytes}} {
			fmt.Fprintf(tw, "top offenders by %s:\n", top.by)
			if len(top.list) == 0 {
				fmt.Fprintln(tw, "  (no logical job holds anything)")
				continue
			}
			row(upper(usage.OffenderHeader()))
			for _, cells := range usage.OffenderRows(top.list) {
				row(cells)
			}
		}
	}
	for _, n := range res.Notes {
		fmt.Fprintln(tw, "note: "+n)
	}
	return tw.Flush()
}

// usageCSVHeader names the columns of writeUsageCSV. Growth cells are
// empty when growth is unknown (the first sample).
var usageCSVHeader = []string{"tenant", "job", "kind", "files", "dirs", "bytes", "growth_files", "growth_dirs", "growth_bytes"}

// writeUsageCSV writes one row per tenant, logical job and kind.
func writeUsageCSV(w io.Writer, res capacity.TenantUsageResult) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(usageCSVHeader); err != nil {
		return err
	}
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, r := range res.Tenants {
		for _, j := range r.Jobs {
			for _, k := range j.Kinds {
				rec := []string{r.Tenant, usage.JobName(j.Job), string(k.Kind), n(k.Files), n(k.Dirs), n(k.Bytes), "", "", ""}
				if g := k.Growth; g != nil {
					rec[6], rec[7], rec[8] = n(g.Files), n(g.Dirs), n(g.Bytes)
				}
				if err := cw.Write(rec); err != nil {
					return err
				}
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
