package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// The restore's table names the run whose trash held each item: a
// checkpoint's shared files may come back from an earlier run.
func TestPrintRestoreNamesTheRunOfEachItem(t *testing.T) {
	st := &workflows.GovernanceRestoreState{RunID: "r2", DryRun: true, Result: &governance.RestoreTrashResult{RestoreResult: cleanup.RestoreResult{
		RunID: "r2", DryRun: true, Counts: map[cleanup.Outcome]int{cleanup.OutcomeStarted: 2},
		Items: []cleanup.Record{
			{Path: "hdfs://nn/t/checkpoints/j/chk-1", Kind: cleanup.KindCheckpointDir, Outcome: cleanup.OutcomeStarted, Detail: "would be moved back from x"},
			{Path: "hdfs://nn/t/checkpoints/j/shared/a", Kind: cleanup.KindSharedFile, Outcome: cleanup.OutcomeStarted, Run: "r1", Detail: "named by y: would be moved back from z"},
		}}}}
	cmd := &cobra.Command{}
	var out bytes.Buffer
	cmd.SetOut(&out)
	if err := printRestore(cmd, st); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"PATH": "RUN", "/chk-1 ": " r2 ", "/shared/a ": " r1 "}
	for _, line := range strings.Split(out.String(), "\n") {
		for key, run := range want {
			if strings.Contains(line, key) {
				if !strings.Contains(line, run) {
					t.Errorf("line %q; want it to name %q", line, strings.TrimSpace(run))
				}
				delete(want, key)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("table %q has no line for %v", out.String(), want)
	}
}
