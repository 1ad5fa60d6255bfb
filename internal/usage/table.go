package usage

import (
	"strconv"
	"strings"
	"time"
)

// The tables below are shared by the CLI and the governance report, so
// both say the same; they are deterministic (workflow code renders them).

// KindHeader names the columns of KindRows.
func KindHeader() []string {
	return []string{"kind", "files", "dirs", "bytes", "growth files", "growth dirs", "growth bytes"}
}

// KindRows is one row per kind, then the total.
func (r Report) KindRows() [][]string {
	rows := make([][]string, 0, len(r.Kinds)+1)
	for _, k := range r.Kinds {
		rows = append(rows, figureRow(string(k.Kind), k.Figures, k.Growth))
	}
	return append(rows, figureRow("total", r.Total.Figures, r.Total.Growth))
}

// OffenderHeader names the columns of OffenderRows.
func OffenderHeader() []string {
	return []string{"job", "files", "dirs", "bytes", "growth files", "growth dirs", "growth bytes"}
}

// OffenderRows is one row per offender, largest first.
func OffenderRows(list []Offender) [][]string {
	rows := make([][]string, 0, len(list))
	for _, o := range list {
		rows = append(rows, figureRow(o.Job, o.Figures, o.Growth))
	}
	return rows
}

// GrowthNote says what the growth columns compare with.
func (r Report) GrowthNote() string {
	if r.Since == nil {
		return "first sample of this tenant: growth is known from the next sample on"
	}
	return "growth since the sample of " + r.Since.UTC().Format(time.RFC3339)
}

// Markdown renders r for the governance report: the kinds, then the top
// offenders by files and by bytes.
func (r Report) Markdown() string {
	var b strings.Builder
	b.WriteString("### " + r.Tenant + " (`" + r.Root + "`)\n\n" + r.GrowthNote() + ".\n\n")
	markdownTable(&b, KindHeader(), r.KindRows())
	for _, top := range []struct {
		by   string
		list []Offender
	}{{"files", r.TopFiles}, {"bytes", r.TopBytes}} {
		if len(top.list) == 0 {
			continue
		}
		b.WriteString("\nTop offenders by " + top.by + ":\n\n")
		markdownTable(&b, OffenderHeader(), OffenderRows(top.list))
	}
	return b.String()
}

func markdownTable(b *strings.Builder, header []string, rows [][]string) {
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|" + strings.Repeat("---|", len(header)) + "\n")
	for _, row := range rows {
		// A | in a job name would end the cell.
		for i := range row {
			row[i] = strings.ReplaceAll(row[i], "|", "/")
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
}

// JobName is how reports print a job: Unattributed as "unattributed".
func JobName(job string) string {
	if job == Unattributed {
		return "unattributed"
	}
	return job
}

func figureRow(name string, f Figures, g *Figures) []string {
	row := []string{name, strconv.FormatInt(f.Files, 10), strconv.FormatInt(f.Dirs, 10), strconv.FormatInt(f.Bytes, 10)}
	return append(row, GrowthCells(g)...)
}

// GrowthCells renders growth as signed files, dirs and bytes; "-" each
// when it is unknown (the first sample), never a zero that was not seen.
func GrowthCells(g *Figures) []string {
	if g == nil {
		return []string{"-", "-", "-"}
	}
	return []string{signed(g.Files), signed(g.Dirs), signed(g.Bytes)}
}

func signed(n int64) string {
	if n > 0 {
		return "+" + strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(n, 10)
}
