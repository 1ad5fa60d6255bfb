package layout

import (
	"strings"
	"testing"
)

const job = "a1b2c3d4e5f60718293a4b5c6d7e8f90"

func TestClassifyCheckpointRootEntry(t *testing.T) {
	tests := map[string]struct {
		name  string
		isDir bool
		want  Kind
		jobID string
	}{
		"job dir":             {job, true, KindCheckpointJobDir, job},
		"upper hex":           {"A1B2C3D4E5F60718293A4B5C6D7E8F90", true, KindUnknown, ""},
		"31 chars":            {job[:31], true, KindUnknown, ""},
		"33 chars":            {job + "0", true, KindUnknown, ""},
		"non hex":             {"g1b2c3d4e5f60718293a4b5c6d7e8f90", true, KindUnknown, ""},
		"file named like job": {job, false, KindUnknown, ""},
		"flat chk":            {"chk-1", true, KindUnknown, ""},
		"flat shared":         {"shared", true, KindUnknown, ""},
		"stray file":          {"_SUCCESS", false, KindUnknown, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := ClassifyCheckpointRootEntry(tc.name, tc.isDir)
			if c.Kind != tc.want || c.JobID != tc.jobID {
				t.Fatalf("got %+v; want %v %q", c, tc.want, tc.jobID)
			}
			if c.Kind == KindUnknown && c.Reason == "" {
				t.Fatal("unknown without a reason")
			}
		})
	}
}

func TestClassifyJobDirEntry(t *testing.T) {
	tests := map[string]struct {
		name  string
		isDir bool
		want  Kind
		id    int64
	}{
		"chk-1":          {"chk-1", true, KindCheckpoint, 1},
		"chk-0":          {"chk-0", true, KindCheckpoint, 0},
		"chk big":        {"chk-123456789", true, KindCheckpoint, 123456789},
		"leading zero":   {"chk-01", true, KindUnknown, 0},
		"negative":       {"chk--1", true, KindUnknown, 0},
		"no digits":      {"chk-", true, KindUnknown, 0},
		"letters":        {"chk-1a", true, KindUnknown, 0},
		"overflow":       {"chk-99999999999999999999", true, KindUnknown, 0},
		"chk file":       {"chk-1", false, KindUnknown, 0},
		"shared":         {"shared", true, KindSharedDir, 0},
		"taskowned":      {"taskowned", true, KindTaskOwnedDir, 0},
		"shared file":    {"shared", false, KindUnknown, 0},
		"Shared case":    {"Shared", true, KindUnknown, 0},
		"stray metadata": {"_metadata", false, KindUnknown, 0},
		"other dir":      {"savepoint-a1b2c3-0123456789ab", true, KindUnknown, 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := ClassifyJobDirEntry(tc.name, tc.isDir)
			if c.Kind != tc.want || c.CheckpointID != tc.id {
				t.Fatalf("got %+v; want %v id %d", c, tc.want, tc.id)
			}
		})
	}
}

func TestClassifySavepointRootEntry(t *testing.T) {
	tests := map[string]struct {
		name   string
		isDir  bool
		want   Kind
		prefix string
	}{
		"savepoint":        {"savepoint-7bd90b-3a2cda6957cb", true, KindSavepoint, "7bd90b"},
		"file":             {"savepoint-7bd90b-3a2cda6957cb", false, KindUnknown, ""},
		"short random":     {"savepoint-7bd90b-3a2cda6957c", true, KindUnknown, ""},
		"long random":      {"savepoint-7bd90b-3a2cda6957cbb", true, KindUnknown, ""},
		"short prefix":     {"savepoint-7bd90-3a2cda6957cb", true, KindUnknown, ""},
		"non-hex random":   {"savepoint-7bd90b-3a2cda6957cz", true, KindUnknown, ""},
		"upper":            {"savepoint-7BD90B-3a2cda6957cb", true, KindUnknown, ""},
		"no dash":          {"savepoint-7bd90b3a2cda6957cb", true, KindUnknown, ""},
		"other":            {"my-savepoints", true, KindUnknown, ""},
		"in-progress temp": {".savepoint-7bd90b-3a2cda6957cb", true, KindUnknown, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := ClassifySavepointRootEntry(tc.name, tc.isDir)
			if c.Kind != tc.want || c.JobIDPrefix != tc.prefix {
				t.Fatalf("got %+v; want %v %q", c, tc.want, tc.prefix)
			}
		})
	}
}

func TestClassifyHA(t *testing.T) {
	type row struct {
		fn      func(string, bool) Class
		name    string
		isDir   bool
		want    Kind
		variant string
		jobID   string
	}
	tests := map[string]row{
		"cluster dir":          {ClassifyHARootEntry, "my-cluster", true, KindHACluster, "", ""},
		"job result store":     {ClassifyHARootEntry, "job-result-store", true, KindJobResultStore, "", ""},
		"file in ha root":      {ClassifyHARootEntry, "stray", false, KindUnknown, "", ""},
		"blob":                 {ClassifyHAClusterEntry, "blob", true, KindHABlobDir, "", ""},
		"blob file":            {ClassifyHAClusterEntry, "blob", false, KindUnknown, "", ""},
		"completed checkpoint": {ClassifyHAClusterEntry, "completedCheckpoint0123456789ab", false, KindHACompletedCheckpoint, "", ""},
		"completed short":      {ClassifyHAClusterEntry, "completedCheckpoint0123", false, KindUnknown, "", ""},
		"completed dir":        {ClassifyHAClusterEntry, "completedCheckpoint0123456789ab", true, KindUnknown, "", ""},
		"job graph":            {ClassifyHAClusterEntry, "submittedJobGraph0123456789ab", false, KindHASubmittedJob, "submittedJobGraph", ""},
		"execution plan":       {ClassifyHAClusterEntry, "submittedExecutionPlanfedcba987654", false, KindHASubmittedJob, "submittedExecutionPlan", ""},
		"application":          {ClassifyHAClusterEntry, "submittedApplication0123456789ab", false, KindHASubmittedJob, "submittedApplication", ""},
		"graph bad suffix":     {ClassifyHAClusterEntry, "submittedJobGraph-x", false, KindUnknown, "", ""},
		"other in cluster":     {ClassifyHAClusterEntry, "checkpoints", true, KindUnknown, "", ""},
		"blob job":             {ClassifyBlobEntry, "job_" + job, true, KindHABlobJobDir, "", job},
		"blob no_job":          {ClassifyBlobEntry, "no_job", true, KindHABlobJobDir, "no_job", ""},
		"blob bad job":         {ClassifyBlobEntry, "job_xyz", true, KindUnknown, "", ""},
		"file in blob dir":     {ClassifyBlobEntry, "blob_p-1", false, KindUnknown, "", ""},
		"result clean":         {ClassifyJobResultEntry, job + ".json", false, KindJobResult, "clean", job},
		"result dirty":         {ClassifyJobResultEntry, job + "_DIRTY.json", false, KindJobResult, "dirty", job},
		"result other":         {ClassifyJobResultEntry, "x.json", false, KindUnknown, "", ""},
		"result dir":           {ClassifyJobResultEntry, job + ".json", true, KindUnknown, "", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := tc.fn(tc.name, tc.isDir)
			if c.Kind != tc.want || c.Variant != tc.variant || c.JobID != tc.jobID {
				t.Fatalf("got %+v; want %v %q %q", c, tc.want, tc.variant, tc.jobID)
			}
			if c.Kind == KindUnknown && c.Reason == "" {
				t.Fatal("unknown without a reason")
			}
		})
	}
}

func TestKindString(t *testing.T) {
	if KindCheckpoint.String() != "checkpoint" || Kind(99).String() != "kind(99)" {
		t.Fatal("Kind.String")
	}
}

func TestParseForStWorkingDir(t *testing.T) {
	t.Parallel()
	const id = "fcfb2cd74328d289a0b17a4030f9cfdc"
	good := map[string]ForStWorkingDir{
		"op_AsyncKeyedProcessOperator_" + id + "__1_1__attempt_0": {Operator: "AsyncKeyedProcessOperator", OperatorID: id, Subtask: 1, Parallelism: 1},
		"op_KeyedProcessOperator_" + id + "__3_12__attempt_17":    {Operator: "KeyedProcessOperator", OperatorID: id, Subtask: 3, Parallelism: 12, Attempt: 17},
		"op_My_Window_Operator_" + id + "__2_4__attempt_1":        {Operator: "My_Window_Operator", OperatorID: id, Subtask: 2, Parallelism: 4, Attempt: 1},
	}
	for name, want := range good {
		if got, ok := ParseForStWorkingDir(name); !ok || got != want {
			t.Errorf("ParseForStWorkingDir(%q) = %+v, %v; want %+v", name, got, ok, want)
		}
	}
	for _, name := range []string{
		"", "op_", "shared", "chk-3",
		"op_KeyedProcessOperator_" + id + "__1_1",                 // no attempt
		"op_KeyedProcessOperator_" + id[:31] + "__1_1__attempt_0", // short id
		"op_KeyedProcessOperator_" + strings.ToUpper(id) + "__1_1__attempt_0",
		"op_" + id + "__1_1__attempt_0",                       // no operator name
		"op_KeyedProcessOperator_" + id + "__1__attempt_0",    // no parallelism
		"op_KeyedProcessOperator_" + id + "__01_1__attempt_0", // leading zero
		"op_KeyedProcessOperator_" + id + "__1_1__attempt_x",
		"op_KeyedProcessOperator_" + id + "__1_1__attempt_0__extra",
	} {
		if got, ok := ParseForStWorkingDir(name); ok {
			t.Errorf("ParseForStWorkingDir(%q) = %+v, want no match", name, got)
		}
	}
	// Directly in a job dir (primary dir = checkpoint root): kept and reported, never guessed.
	if c := ClassifyJobDirEntry("op_KeyedProcessOperator_"+id+"__1_1__attempt_0", true); c.Kind != KindUnknown || !strings.Contains(c.Reason, "ForSt working dir") {
		t.Errorf("ForSt dir in a job dir = %+v, want unknown naming the ForSt working dir", c)
	}
}
