package main

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/internal/usage"
)

func TestUsageFlagErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"bad output":       {[]string{"usage", "-o", "xml"}, `--output="xml" is not valid: use table, json or csv`},
		"top zero":         {[]string{"usage", "--top", "0"}, "--top=0 is not valid: use 1 to 1000"},
		"top too large":    {[]string{"usage", "--top", "1001"}, "--top=1001 is not valid: use 1 to 1000"},
		"top not a number": {[]string{"usage", "--top", "ten"}, `"ten"`},
		"empty tenant":     {[]string{"usage", "--tenant", ""}, `--tenant="" is not valid`},
		"bad timeout":      {[]string{"usage", "--timeout", "0s"}, "--timeout=0s is not valid"},
		"argument":         {[]string{"usage", "team-a"}, "team-a"},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := runCLI(tc.args, nil)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d naming %q", code, stderr, exitUsage, tc.want)
			}
		})
	}
	// csv is usage's alone: other commands keep refusing it.
	if code, _, stderr := runCLI([]string{"quota", "-o", "csv"}, nil); code != exitUsage || !strings.Contains(stderr, `--output="csv"`) {
		t.Fatalf("quota -o csv: exit %d, %q; want a usage error", code, stderr)
	}
}

// usageResult has one tenant sampled before (growth known) and one sampled
// for the first time.
func usageResult() capacity.TenantUsageResult {
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := &usage.Figures{Files: 2, Dirs: -1, Bytes: 300}
	orders := usage.JobUsage{Job: "a/c/orders", Figures: usage.Figures{Files: 7, Dirs: 3, Bytes: 900}, Growth: g,
		Kinds: []usage.KindUsage{{Kind: usage.KindCheckpoints, Figures: usage.Figures{Files: 2, Dirs: 2, Bytes: 100}, Growth: g},
			{Kind: usage.KindShared, Figures: usage.Figures{Files: 5, Dirs: 1, Bytes: 800}, Growth: &usage.Figures{}}}}
	return capacity.TenantUsageResult{Tenants: []usage.Report{
		{Tenant: "a", Root: "hdfs://nn/a", Since: &since,
			Kinds:    []usage.KindUsage{{Kind: usage.KindCheckpoints, Figures: usage.Figures{Files: 2, Dirs: 3, Bytes: 100}, Growth: g}},
			Jobs:     []usage.JobUsage{orders, {Job: usage.Unattributed, Figures: usage.Figures{Dirs: 1}, Growth: &usage.Figures{}, Kinds: []usage.KindUsage{{Kind: usage.KindStructure, Figures: usage.Figures{Dirs: 1}, Growth: &usage.Figures{}}}}},
			TopFiles: []usage.Offender{{Job: "a/c/orders", Figures: orders.Figures, Growth: g}}},
		{Tenant: "b", Root: "hdfs://nn/b",
			Kinds: []usage.KindUsage{{Kind: usage.KindUnknown, Figures: usage.Figures{Files: 1, Bytes: 4}}},
			Jobs:  []usage.JobUsage{{Job: usage.Unattributed, Figures: usage.Figures{Files: 1, Bytes: 4}, Kinds: []usage.KindUsage{{Kind: usage.KindUnknown, Figures: usage.Figures{Files: 1, Bytes: 4}}}}}},
	}, Notes: []string{"jobs of cluster c not readable"}}
}

func TestUsageCSV(t *testing.T) {
	var out bytes.Buffer
	if err := writeUsageCSV(&out, usageResult()); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"tenant", "job", "kind", "files", "dirs", "bytes", "growth_files", "growth_dirs", "growth_bytes"},
		{"a", "a/c/orders", "checkpoints", "2", "2", "100", "2", "-1", "300"},
		{"a", "a/c/orders", "shared", "5", "1", "800", "0", "0", "0"},
		{"a", "unattributed", "structure", "0", "1", "0", "0", "0", "0"},
		{"b", "unattributed", "unknown", "1", "0", "4", "", "", ""}, // first sample: growth unknown, not zero
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), len(want), out.String())
	}
	for i := range want {
		if strings.Join(rows[i], ",") != strings.Join(want[i], ",") {
			t.Errorf("row %d: %v; want %v", i, rows[i], want[i])
		}
	}
}

func TestUsageTable(t *testing.T) {
	var out bytes.Buffer
	if err := writeUsageTable(&out, usageResult()); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"tenant a (hdfs://nn/a)", "growth since the sample of 2026-01-01T00:00:00Z", "top offenders by files:",
		"top offenders by bytes:\n  (no logical job holds anything)", "tenant b (hdfs://nn/b)", "first sample of this tenant",
		"note: jobs of cluster c not readable",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	// Rows by their cells: growth signed, and "-" where unknown, never 0.
	rows := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		rows[strings.Join(strings.Fields(line), " ")] = true
	}
	for _, want := range []string{
		"KIND FILES DIRS BYTES GROWTH FILES GROWTH DIRS GROWTH BYTES",
		"checkpoints 2 3 100 +2 -1 +300",
		"a/c/orders 7 3 900 +2 -1 +300",
		"unknown 1 0 4 - - -",
	} {
		if !rows[want] {
			t.Errorf("table lacks the row %q:\n%s", want, text)
		}
	}
}
