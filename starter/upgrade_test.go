package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/upgrades"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/workflows"
)

const validUpgrade = `upgradeId: orders-1
reason: new dedup window
job: cluster-a/orders
recipe:
  jar: hdfs://nn:8020/jars/orders-2.jar
manifestDir: hdfs://nn:8020/flinkmaint/upgrades
`

func writeUpgradeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "upgrade.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestUpgradeUsageErrors: bad files, flags and arguments of the upgrade
// commands exit 2 and name what is wrong, before any connection is made.
func TestUpgradeUsageErrors(t *testing.T) {
	noReason := writeUpgradeFile(t, strings.Replace(validUpgrade, "reason: new dedup window\n", "", 1))
	unknown := writeUpgradeFile(t, strings.Replace(validUpgrade, "  jar:", "  entryClas: com.example.Orders\n  jar:", 1))
	canary := writeUpgradeFile(t, validUpgrade+"health:\n  canarySize: 2\n")
	valid := writeUpgradeFile(t, validUpgrade)
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"start without file":      {[]string{"upgrade", "start"}, "-f upgrade.yaml is required"},
		"start missing file":      {[]string{"upgrade", "start", "-f", "/nonexistent/upgrade.yaml"}, "upgrade file"},
		"start without reason":    {[]string{"upgrade", "start", "-f", noReason}, "reason is empty"},
		"start unknown field":     {[]string{"upgrade", "start", "-f", unknown}, `unknown keys (see deploy/examples/upgrade.yaml): recipe.entryClas`},
		"start window field":      {[]string{"upgrade", "start", "-f", canary}, "health.canarySize"},
		"start bad timeout":       {[]string{"upgrade", "start", "-f", valid, "--wait", "--timeout", "0s"}, "--timeout=0s"},
		"start with argument":     {[]string{"upgrade", "start", "-f", valid, "extra"}, "extra"},
		"override without reason": {[]string{"upgrade", "start", "-f", valid, "--override-freeze"}, "--override-freeze needs --reason"},
		"governance override":     {[]string{"governance", "run", "--override-freeze"}, "--override-freeze needs --reason"},
		"drill override":          {[]string{"drill", "start", "--override-freeze"}, "--override-freeze needs --reason"},
		"check without file":      {[]string{"upgrade", "check"}, "-f upgrade.yaml is required"},
		"check bad version":       {[]string{"upgrade", "check", "-f", valid, "--flink-version", "2.3.0"}, `rehearsal.flinkVersion="2.3.0": use major.minor`},
		"check bad timeout":       {[]string{"upgrade", "check", "-f", valid, "--timeout", "0s"}, "--timeout=0s"},
		"start rehearsal version": {[]string{"upgrade", "start", "-f", writeUpgradeFile(t, validUpgrade+"rehearsal:\n  flinkVersion: \"2.3\"\n")}, "use `upgrade check --flink-version`"},
		"status without ID":       {[]string{"upgrade", "status"}, "exactly one UPGRADE-ID"},
		"status two IDs":          {[]string{"upgrade", "status", "a", "b"}, "exactly one UPGRADE-ID"},
		"status bad ID":           {[]string{"upgrade", "status", "a/b"}, `upgrade ID "a/b"`},
		"rollback without ID":     {[]string{"upgrade", "rollback", "--by", "ann", "--reason", "r"}, "exactly one UPGRADE-ID"},
		"rollback without why":    {[]string{"upgrade", "rollback", "orders-1", "--by", "ann"}, "--reason is required and --by must not be empty"},
		"rollback blank by":       {[]string{"upgrade", "rollback", "orders-1", "--by", " ", "--reason", "lag"}, "--reason is required and --by must not be empty"},
		"decide without action":   {[]string{"upgrade", "decide", "orders-1", "--by", "ann", "--reason", "r"}, "--action is required"},
		"decide without reason":   {[]string{"upgrade", "decide", "orders-1", "--action", "rollback", "--by", "ann"}, "--reason is required and --by must not be empty"},
		"decide unknown flag":     {[]string{"upgrade", "decide", "orders-1", "--job", "c/o"}, "--job"},
		"unknown subcommand":      {[]string{"upgrade", "frob"}, "unknown command"},
		"rollback unknown flag":   {[]string{"upgrade", "rollback", "orders-1", "--force"}, "--force"},
		"status extra whitespace": {[]string{"upgrade", "status", "a b"}, `upgrade ID "a b"`},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := runCLI(append(tc.args, "--address", "127.0.0.1:1", "--connect-timeout", "1s"), nil)
			if code != exitUsage {
				t.Fatalf("exit code %d, want %d; stderr: %s", code, exitUsage, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Fatalf("stderr %q does not mention %q", stderr, tc.want)
			}
		})
	}
}

// TestUpgradeStartUnreachable: a valid file gets as far as the connection.
func TestUpgradeStartUnreachable(t *testing.T) {
	code, _, stderr := runCLI([]string{"upgrade", "start", "-f", writeUpgradeFile(t, validUpgrade), "--address", "127.0.0.1:1", "--connect-timeout", "1s"}, nil)
	if code != exitUnreachable {
		t.Fatalf("exit %d, stderr %q; want %d", code, stderr, exitUnreachable)
	}
}

func TestUpgradeFileErrorsNameTheField(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"missing reason":   {strings.Replace(validUpgrade, "reason: new dedup window\n", "", 1), "reason"},
		"unknown key":      {validUpgrade + "holdAfterComit: 1h\n", `unknown keys (see deploy/examples/upgrade.yaml): holdAfterComit`},
		"unknown nested":   {validUpgrade + "health:\n  soakk: 1m\n", "health.soakk"},
		"bad duration":     {validUpgrade + "health:\n  soak: soon\n", "soon"},
		"negative hold":    {validUpgrade + "holdAfterCommit: -1h\n", "holdAfterCommit"},
		"bad gate policy":  {validUpgrade + "onGateFailure: ignore\n", "onGateFailure"},
		"bad format":       {validUpgrade + "format: ZIP\n", "format"},
		"bad job":          {strings.Replace(validUpgrade, "cluster-a/orders", "orders", 1), `job "orders"`},
		"empty recipe":     {strings.Replace(validUpgrade, "  jar: hdfs://nn:8020/jars/orders-2.jar\n", "  {}\n", 1), "recipe is empty"},
		"no manifest dir":  {strings.Replace(validUpgrade, "manifestDir: hdfs://nn:8020/flinkmaint/upgrades\n", "", 1), "manifestDir"},
		"bad upgrade id":   {strings.Replace(validUpgrade, "orders-1", "orders 1", 1), "upgradeId"},
		"wave size":        {validUpgrade + "health:\n  waveSize: 3\n  failureBudget: 1\n", "health.waveSize, health.failureBudget"},
		"not yaml":         {"upgradeId: [\n", "upgrade file"},
		"wrong value type": {strings.Replace(validUpgrade, "  jar:", "  parallelism: many\n  jar:", 1), "parallelism"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadUpgradeFile(writeUpgradeFile(t, tc.body))
			var ue usageError
			if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want a usage error naming %q", err, tc.want)
			}
		})
	}
}

func TestUpgradeFileDefaultsAndProgramArgs(t *testing.T) {
	in, err := loadUpgradeFile(writeUpgradeFile(t, validUpgrade))
	if err != nil {
		t.Fatal(err)
	}
	if in.Format != workflows.FormatCanonical || in.SavepointTimeout.D() != 15*time.Minute || in.OnGateFailure != workflows.OnGateFailureRollback ||
		in.Health.Soak.D() != 30*time.Second || in.Health.RunningTimeout.D() != 5*time.Minute || in.HoldAfterCommit != 0 {
		t.Fatalf("defaults not applied: %+v", in)
	}
	if in.Recipe.ProgramArgs != nil {
		t.Fatalf("programArgs left out must keep the old ones (nil), got %#v", in.Recipe.ProgramArgs)
	}
	cleared, err := loadUpgradeFile(writeUpgradeFile(t, strings.Replace(validUpgrade, "  jar:", "  programArgs: []\n  jar:", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if cleared.Recipe.ProgramArgs == nil || len(cleared.Recipe.ProgramArgs) != 0 {
		t.Fatalf("programArgs: [] must clear the old ones (empty, not nil), got %#v", cleared.Recipe.ProgramArgs)
	}
}

// TestShippedUpgradeExampleLoads keeps the documented example valid.
func TestShippedUpgradeExampleLoads(t *testing.T) {
	in, err := loadUpgradeFile("../deploy/examples/upgrade.yaml")
	if err != nil {
		t.Fatalf("example upgrade.yaml: %v", err)
	}
	if in.UpgradeID != "orders-2026-12-01" || in.Job != "cluster-a/orders" || in.Recipe.Parallelism != 8 || len(in.Recipe.ProgramArgs) != 4 ||
		in.Health.Soak.D() != 30*time.Second || in.OnGateFailure != workflows.OnGateFailureRollback || in.Mode != workflows.UpgradeModeStop ||
		in.Recipe.FlinkConfiguration["pipeline.object-reuse"] != "true" || len(in.Health.Checks) != 2 || in.Health.Checks[1].Min == nil || *in.Health.Checks[1].Min != 1 {
		t.Fatalf("example upgrade.yaml read wrong: %+v", in)
	}
}

func sampleUpgradeState() workflows.UpgradeState {
	at := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	return workflows.UpgradeState{
		UpgradeID: "orders-1", Phase: workflows.UpgradePhaseStart,
		Job: core.JobTarget{Key: "cluster-a/orders", Tenant: "team-a", JobID: "0000000000000000000000000000aaaa",
			Restart: inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun, Jar: "hdfs://nn/jars/orders-1.jar", EntryClass: "com.example.Orders"}},
		NewRecipe: inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun, Jar: "hdfs://nn/jars/orders-2.jar", EntryClass: "com.example.Orders"},
		Savepoint: "hdfs://nn/sp/savepoint-aaaa-1", StartAttempts: 1, NewJobID: "0000000000000000000000000000bbbb",
		GateError: "Cannot map checkpoint/savepoint state for operator 0123456789abcdef0123456789abcdef to the new program",
		Unmatched: []string{"0123456789abcdef0123456789abcdef"},
		Pending: &workflows.PendingDecision{Kind: workflows.DecisionUnmatchedState, Reason: "the new version cannot restore ...",
			Allowed: []string{workflows.ActionAllowNonRestoredState, workflows.ActionRollback}, Since: at},
		ManifestPath: "hdfs://nn/flinkmaint/upgrades/orders-1/manifest.json", StartedAt: at,
		Notes: []string{"quota overridden by ann: raise pending"},
	}
}

func TestPrintUpgradeCheck(t *testing.T) {
	st := sampleUpgradeState()
	st.Phase, st.Pending, st.Savepoint, st.ManifestPath, st.GateError, st.Unmatched, st.NewJobID, st.StartAttempts = workflows.UpgradePhaseChecked, nil, "", "", "", nil, "", 0
	st.FinishedAt = st.StartedAt.Add(time.Minute)
	st.Rehearsal = &workflows.RehearsalResult{Verdict: catalog.RehearsalIncompatible, FlinkVersion: "2.3.0", Savepoint: "hdfs://nn/sp/savepoint-aaaa-2",
		DrillCluster: "http://drill-2-3:8081", Jar: "hdfs://nn/jars/orders-2.jar",
		Cause: &upgrades.RehearsalCause{Kind: upgrades.CauseUnmatchedOperator, Text: "Flink cannot map the state of operator keyed (0123) to the new program"}}
	var out bytes.Buffer
	if err := printUpgradeState(&out, &st); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"phase      checked", "rehearsal  incompatible on Flink 2.3.0: Flink cannot map the state of operator keyed (0123)",
		"           from hdfs://nn/sp/savepoint-aaaa-2 on http://drill-2-3:8081 with hdfs://nn/jars/orders-2.jar"} {
		if !strings.Contains(text, want) {
			t.Errorf("check does not show %q:\n%s", want, text)
		}
	}
	for _, unwanted := range []string{"manifest", "recorded", "savepoint  -"} {
		if strings.Contains(text, unwanted) {
			t.Errorf("a check shows %q, which only an upgrade has:\n%s", unwanted, text)
		}
	}
}

func TestPrintUpgradeState(t *testing.T) {
	st := sampleUpgradeState()
	var out bytes.Buffer
	if err := printUpgradeState(&out, &st); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"phase      start", "job        cluster-a/orders (tenant team-a)", "old job    0000000000000000000000000000aaaa",
		"new recipe jar hdfs://nn/jars/orders-2.jar", "savepoint  hdfs://nn/sp/savepoint-aaaa-1",
		"new job    0000000000000000000000000000bbbb (start attempts 1)", "gate error Cannot map",
		"unmatched  0123456789abcdef0123456789abcdef", "waiting    unmatched-state since 2026-12-01 06:00:00",
		"allowed: allow-non-restored-state, rollback",
		"answer: flinkmaint upgrade decide orders-1 --action allow-non-restored-state --by NAME --reason TEXT",
		"answer: flinkmaint upgrade decide orders-1 --action rollback --by NAME --reason TEXT",
		"rollback   possible now: flinkmaint upgrade rollback orders-1 --by NAME --reason TEXT",
		"recorded   no", "manifest   hdfs://nn/flinkmaint/upgrades/orders-1/manifest.json", "note       quota overridden by ann",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("status does not show %q:\n%s", want, text)
		}
	}

	st.Pending = nil
	st.Decisions = []workflows.DecisionRecord{{Kind: workflows.UpdateRollback, By: "bob", Reason: "lag grows", At: st.StartedAt}}
	out.Reset()
	if err := printUpgradeState(&out, &st); err != nil {
		t.Fatal(err)
	}
	if text = out.String(); !strings.Contains(text, "rollback   asked by bob: lag grows (not started yet)") || strings.Contains(text, "possible now") {
		t.Errorf("a requested rollback is not shown as such:\n%s", text)
	}

	st.Phase = workflows.UpgradePhaseRolledBack
	st.Rollback = &workflows.UpgradeRollback{By: "bob", Reason: "lag grows", NewVersionSavepoint: "hdfs://nn/sp/savepoint-bbbb-1", Attempts: 1,
		JobID: "0000000000000000000000000000cccc", Healthy: &workflows.JobRestartResult{JobID: "0000000000000000000000000000cccc"}}
	out.Reset()
	if err := printUpgradeState(&out, &st); err != nil {
		t.Fatal(err)
	}
	text = out.String()
	for _, want := range []string{"rollback   by bob: lag grows", "previous version as job 0000000000000000000000000000cccc (attempts 1), healthy",
		"new version's savepoint (kept, not used): hdfs://nn/sp/savepoint-bbbb-1"} {
		if !strings.Contains(text, want) {
			t.Errorf("status does not show %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "possible now") || strings.Contains(text, "answer:") {
		t.Errorf("a rolled-back upgrade offers no rollback or decision:\n%s", text)
	}

	st.SpecChange = &inventory.JobSpecChange{Image: "orders:2", FlinkConfiguration: map[string]string{"b": "2", "a": "1"}}
	st.SpecInverse = &inventory.JobSpecChange{Image: "orders:1", Unset: []string{"a"}, FlinkConfiguration: map[string]string{"b": "1"}}
	out.Reset()
	if err := printUpgradeState(&out, &st); err != nil {
		t.Fatal(err)
	}
	if text = out.String(); !strings.Contains(text, "new spec   image orders:2, a=1, b=2") || !strings.Contains(text, "undone by  image orders:1, b=1, unset a") {
		t.Errorf("an operator job's spec change is not shown:\n%s", text)
	}
}

func TestPrintParallelUpgradeState(t *testing.T) {
	st := sampleUpgradeState()
	st.Pending, st.GateError, st.Unmatched = nil, "", nil
	st.Phase, st.Mode, st.Retired, st.RetiredSavepoint = workflows.UpgradePhaseCommitted, workflows.UpgradeModeParallel, true, "hdfs://nn/sp/savepoint-aaaa-2"
	st.NewRecipe = inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun, JarID: "5c1e_orders.jar", EntryClass: "com.example.Orders",
		FlinkConfiguration: map[string]string{"pipeline.object-reuse": "true"}}
	st.Healthy = &workflows.JobRestartResult{JobID: st.NewJobID, CheckpointID: 4,
		Readings: []windows.MetricReading{{Check: "numRecordsOut (sum over vertices matching \"Sink\") >= 1", Source: "Sink: out", Value: 812}}}
	var out bytes.Buffer
	if err := printUpgradeState(&out, &st); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"mode       parallel", "new recipe jar id 5c1e_orders.jar (uploaded), entry com.example.Orders, pipeline.object-reuse=true",
		`check      numRecordsOut (sum over vertices matching "Sink") >= 1: Sink: out reported 812`,
		"retired    previous version 0000000000000000000000000000aaaa, stopped with savepoint hdfs://nn/sp/savepoint-aaaa-2"} {
		if !strings.Contains(text, want) {
			t.Errorf("status does not show %q:\n%s", want, text)
		}
	}
}

// roundTrip sends err through Temporal's failure encoding, as the client
// sees a workflow's error.
func roundTrip(err error) error {
	fc := temporal.GetDefaultFailureConverter()
	return fc.FailureToError(fc.ErrorToFailure(err))
}

func TestUpgradeOutcome(t *testing.T) {
	st := sampleUpgradeState()
	st.Phase, st.Pending = workflows.UpgradePhaseRolledBack, nil
	st.Rollback = &workflows.UpgradeRollback{By: "flinkmaint (onGateFailure: rollback)", Reason: "the new version did not become healthy", JobID: "cccc",
		Healthy: &workflows.JobRestartResult{JobID: "dddd"}}
	rolled := roundTrip(temporal.NewNonRetryableApplicationError("upgrade of cluster-a/orders rolled back", workflows.ErrTypeUpgradeRolledBack, nil, st))
	got, err := upgradeOutcome(func(*workflows.UpgradeState) error { return rolled })
	if err == nil || got == nil || got.Phase != workflows.UpgradePhaseRolledBack || got.Rollback == nil || got.Rollback.JobID != "cccc" {
		t.Fatalf("rolled back: state %+v, error %v; want the details' state and the error", got, err)
	}
	if msg := upgradeEnding("orders-1", got, err); !strings.Contains(msg, "rolled back: the new version did not become healthy") || !strings.Contains(msg, "runs as job dddd") {
		t.Fatalf("ending %q does not give the reason and the previous version's job", msg)
	}

	failed := roundTrip(temporal.NewNonRetryableApplicationError("stop with savepoint of cluster-a/orders failed: timeout", workflows.ErrTypeUpgradeFailed, nil))
	got, err = upgradeOutcome(func(*workflows.UpgradeState) error { return failed })
	if got != nil || err == nil {
		t.Fatalf("failed without details: state %+v, error %v; want no state and the error", got, err)
	}
	if msg := upgradeEnding("orders-1", nil, err); msg != "upgrade orders-1 failed: stop with savepoint of cluster-a/orders failed: timeout" {
		t.Fatalf("ending %q", msg)
	}

	other := roundTrip(temporal.NewApplicationError("boom", "Other", st))
	if got, err = upgradeOutcome(func(*workflows.UpgradeState) error { return other }); got != nil || err == nil {
		t.Fatalf("an error of another type: state %+v, error %v; want no state", got, err)
	}

	got, err = upgradeOutcome(func(out *workflows.UpgradeState) error {
		*out = workflows.UpgradeState{UpgradeID: "orders-1", Phase: workflows.UpgradePhaseCommitted}
		return nil
	})
	if err != nil || got == nil || got.Phase != workflows.UpgradePhaseCommitted {
		t.Fatalf("committed: state %+v, error %v", got, err)
	}
}
