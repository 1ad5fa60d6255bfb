package upgrades

import (
	"strings"
	"testing"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// flinkUnmatched is the chain Flink 1.20.3's REST API answered a jar run
// with when the sample job's keyed operator got a new uid.
const flinkUnmatched = `org.apache.flink.runtime.rest.handler.RestHandlerException: Could not execute application.
Caused by: org.apache.flink.client.program.ProgramInvocationException: The main method caused an error: Failed to execute job 'exp-uid'.
Caused by: org.apache.flink.runtime.client.JobInitializationException: Could not start the JobMaster.
Caused by: java.util.concurrent.CompletionException: java.lang.IllegalStateException: Failed to rollback to checkpoint/savepoint hdfs://127.0.0.1:41367/user/app/team-a/savepoints/savepoint-c97e84-5ac9c56804d0. Cannot map checkpoint/savepoint state for operator fcfb2cd74328d289a0b17a4030f9cfdc to the new program, because the operator is not available in the new program. If you want to allow to skip this, you can set the --allowNonRestoredState option on the CLI.
Caused by: java.lang.IllegalStateException: Failed to rollback to checkpoint/savepoint hdfs://127.0.0.1:41367/user/app/team-a/savepoints/savepoint-c97e84-5ac9c56804d0. Cannot map checkpoint/savepoint state for operator fcfb2cd74328d289a0b17a4030f9cfdc to the new program, because the operator is not available in the new program.`

func TestClassifyRestoreFailureNamesFlinksCause(t *testing.T) {
	for name, tc := range map[string]struct {
		text, kind, want string
		inconclusive     bool
	}{
		"unmatched operator, named once": {flinkUnmatched, CauseUnmatchedOperator, "operator fcfb2cd74328d289a0b17a4030f9cfdc to the new program", false},
		"missing class": {"java.lang.RuntimeException: Could not restore keyed state backend\nCaused by: java.lang.ClassNotFoundException: com.example.OrderState",
			CauseMissingClass, "lacks class com.example.OrderState (ClassNotFoundException)", false},
		"changed max parallelism": {"java.lang.IllegalStateException: The maximum parallelism (128) with which the latest checkpoint of the execution job vertex keyed has been taken and the current maximum parallelism (256) changed. This is currently not supported.",
			CauseMaxParallelism, "the max parallelism changed: java.lang.IllegalStateException: The maximum parallelism (128)", false},
		"incompatible serializer": {"java.lang.Exception: Exception while creating StreamOperatorStateContext.\nCaused by: org.apache.flink.util.StateMigrationException: The new state serializer (PojoSerializer) must not be incompatible with the old state serializer (KryoSerializer).",
			CauseSerializer, "serializer is incompatible with what the snapshot holds: org.apache.flink.util.StateMigrationException: The new state serializer", false},
		"another restore failure": {"java.lang.Exception: Exception while creating StreamOperatorStateContext.\nCaused by: org.apache.flink.util.FlinkException: Could not restore keyed state backend for KeyedProcessOperator_fcfb (1/1) from any of the 1 provided restore options.",
			CauseRestoreFailed, "the state did not restore: java.lang.Exception: Exception while creating StreamOperatorStateContext.", false},
		"a copy told to checkpoint elsewhere": {"job 5761 checkpointed to hdfs://nn/prod/b/checkpoints/5761/chk-42, outside hdfs://nn/drills/u/cluster-c/c-1 where it was told to",
			CauseOutsideDrillDir, "the copy checkpointed to hdfs://nn/prod/b/checkpoints/5761/chk-42, outside", true},
		"no slots on the drill cluster": {"job not RUNNING within 5m0s (state CREATED)\norg.apache.flink.runtime.jobmanager.scheduler.NoResourceAvailableException: Could not acquire the minimum required resources.",
			CauseNoSlots, "had no free slots", true},
		"a copy that failed after its restore": {"job restarted during the soak: java.lang.NullPointerException\n\tat com.example.Orders.map", CauseNotHealthy,
			"the copy did not pass the gate: job restarted during the soak: java.lang.NullPointerException", false},
	} {
		c := ClassifyRestoreFailure(tc.text)
		if c.Kind != tc.kind || !strings.Contains(c.Text, tc.want) || c.Inconclusive() != tc.inconclusive {
			t.Errorf("%s: %+v (inconclusive %v); want kind %s saying %q", name, c, c.Inconclusive(), tc.kind, tc.want)
		}
	}
	if c := ClassifyRestoreFailure(flinkUnmatched); len(c.Operators) != 1 {
		t.Errorf("operators %v; want the one operator once, however often the chain repeats it", c.Operators)
	}
	long := ClassifyRestoreFailure("Could not restore " + strings.Repeat("x", 2000))
	if len(long.Text) > 500 {
		t.Errorf("a cause of %d bytes; want it cut for a status line", len(long.Text))
	}
}

func TestWithSandboxArgsLeavesOnlyTheSandboxsSink(t *testing.T) {
	sandbox := []string{"--sink", "discard"}
	for _, tc := range []struct{ args, want string }{
		{"--topic orders --sink kafka --rate 5", "--topic orders --rate 5 --sink discard"},
		{"--sink=kafka --topic orders", "--topic orders --sink discard"},
		{"--sink kafka --sink print", "--sink discard"},
		{"--topic orders", "--topic orders --sink discard"},
		{"--topic orders --sink", "--topic orders --sink discard"},
		{"", "--sink discard"},
	} {
		got := strings.Join(WithSandboxArgs(strings.Fields(tc.args), sandbox), " ")
		if got != tc.want {
			t.Errorf("%q: %q; want %q", tc.args, got, tc.want)
		}
	}
	if got := strings.Join(WithSandboxArgs([]string{"--out", "a", "b", "--x"}, []string{"--out", "/dev/null", "null"}), " "); got != "--x --out /dev/null null" {
		t.Errorf("an option with two values: %q", got)
	}
}

func TestRehearsalRecipe(t *testing.T) {
	spec := inventory.JobSpec{Name: "orders",
		Restart: inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun, Jar: "/jars/v1.jar", EntryClass: "com.example.Orders", ProgramArgs: []string{"--topic", "orders", "--sink", "kafka"}, Parallelism: 4},
		Drill: &inventory.DrillRecipe{ProgramArgs: []string{"--topic", "orders", "--sink", "discard", "--rate", "10"}, SandboxArgs: []string{"--sink", "discard"},
			Verify:        &inventory.DrillVerify{EntryClass: "com.example.Check"},
			FlinkVersions: map[string]inventory.DrillBuild{"2.3": {Jar: "/jars/v1-flink2.jar"}}}}

	next := spec.Restart
	next.Jar = "/jars/v2.jar"
	r, why := RehearsalRecipe(spec, &next, "1.20", nil)
	if why != "" || r.Jar != "/jars/v2.jar" || r.EntryClass != "com.example.Orders" || r.Parallelism != 4 ||
		strings.Join(r.ProgramArgs, " ") != "--topic orders --sink discard --rate 10" || r.Verify.Jar != "/jars/v2.jar" {
		t.Errorf("a new jar, same arguments: %+v (%s); want the new jar with the drill recipe's own arguments", r, why)
	}
	// New arguments are never run as they are: they may name production
	// sinks and paths. A person gives the copy's.
	next.ProgramArgs = []string{"--topic", "orders-v2", "--sink", "kafka", "--checkpoint-dir", "hdfs://nn/prod/orders"}
	next.FlinkConfiguration = map[string]string{"pipeline.max-parallelism": "256"}
	if _, why := RehearsalRecipe(spec, &next, "1.20", nil); !strings.Contains(why, "give rehearsal.programArgs") || !strings.Contains(why, "--sink discard") {
		t.Errorf("new arguments without the copy's: %q; want not rehearsed, asking for rehearsal.programArgs", why)
	}
	r, why = RehearsalRecipe(spec, &next, "1.20", []string{"--topic", "orders-v2", "--sink", "print"})
	if why != "" || strings.Join(r.ProgramArgs, " ") != "--topic orders-v2 --sink discard" || r.FlinkConfiguration["pipeline.max-parallelism"] != "256" {
		t.Errorf("the copy's arguments given: %q conf %v (%s); want them sandboxed, the new configuration kept", r.ProgramArgs, r.FlinkConfiguration, why)
	}
	r, why = RehearsalRecipe(spec, nil, "2.3", nil)
	if why != "" || r.Jar != "/jars/v1-flink2.jar" || strings.Join(r.ProgramArgs, " ") != "--topic orders --sink discard --rate 10" || r.Verify.Jar != "/jars/v1-flink2.jar" {
		t.Errorf("migration to 2.3: %+v (%s); want the 2.3 build", r, why)
	}
	for _, tc := range []struct {
		next    *inventory.RestartRecipe
		version string
		want    string
	}{
		{nil, "2.2", "has no build for Flink 2.2"},
		{&inventory.RestartRecipe{Kind: inventory.RestartRESTJarRun, JarID: "abc_orders.jar"}, "1.20", "names jar id abc_orders.jar"},
		{&inventory.RestartRecipe{Kind: inventory.RestartOperatorResume}, "1.20", "only a new jar run through Flink's REST API"},
	} {
		if _, why := RehearsalRecipe(spec, tc.next, tc.version, nil); !strings.Contains(why, tc.want) {
			t.Errorf("%+v into %s: %q; want %q", tc.next, tc.version, why, tc.want)
		}
	}
}

func TestMinorVersion(t *testing.T) {
	for in, want := range map[string]string{"2.3.0": "2.3", "1.20.3": "1.20", "2.3": "2.3", "1.20-SNAPSHOT": "1.20", "2": "", "": "", "v2.3.0": "", "2.3x": ""} {
		if got := minorVersion(in); got != want {
			t.Errorf("minorVersion(%q) = %q; want %q", in, got, want)
		}
	}
}
