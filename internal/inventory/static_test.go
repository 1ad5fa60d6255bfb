package inventory

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const validStatic = `
tenants:
  - name: team-a
    root: hdfs://127.0.0.1:9000/user/app/team-a
  - name: team-b
    root: /user/app/team-b
clusters:
  - clusterId: cluster-a
    tenant: team-a
    mode: session
    restUrl: http://127.0.0.1:8081
    checkpointDir: hdfs://127.0.0.1:9000/user/app/team-a/checkpoints
    savepointDir: hdfs://127.0.0.1:9000/user/app/team-a/savepoints
    haStorageDir: hdfs://127.0.0.1:9000/user/app/team-a/ha
    flinkVersion: "1.20.3"
    jobs:
      - name: orders
        restart:
          kind: rest-jar-run
          jar: /opt/jobs/sample-job.jar
          entryClass: io.example.Orders
          programArgs: ["--topic", "orders"]
          parallelism: 2
          restoreMode: CLAIM
  - clusterId: cluster-b
    tenant: team-b
    mode: application
    restUrl: https://flink-b.example:8443
`

func TestLoadStaticValid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inventory.yaml")
	if err := os.WriteFile(path, []byte(validStatic), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := LoadStatic(path)
	if err != nil {
		t.Fatalf("LoadStatic: %v", err)
	}
	if len(s.Tenants) != 2 || len(s.Clusters) != 2 {
		t.Fatalf("got %d tenants, %d clusters; want 2, 2", len(s.Tenants), len(s.Clusters))
	}
	a := s.Clusters[0]
	if a.Source != SourceStatic || a.Mode != ModeSession || a.RESTURL != "http://127.0.0.1:8081" ||
		a.HAStorageDir != "hdfs://127.0.0.1:9000/user/app/team-a/ha" || a.FlinkVersion != "1.20.3" {
		t.Fatalf("cluster-a decoded wrong: %+v", a)
	}
	if len(a.Jobs) != 1 {
		t.Fatalf("jobs: %+v", a.Jobs)
	}
	r := a.Jobs[0].Restart
	if r.Kind != RestartRESTJarRun || r.Jar != "/opt/jobs/sample-job.jar" || r.EntryClass != "io.example.Orders" ||
		strings.Join(r.ProgramArgs, " ") != "--topic orders" || r.Parallelism != 2 || r.RestoreMode != "CLAIM" {
		t.Fatalf("restart recipe decoded wrong: %+v", r)
	}
	if s.Clusters[1].Source != SourceStatic || s.Clusters[1].Mode != ModeApplication {
		t.Fatalf("cluster-b: %+v", s.Clusters[1])
	}
}

func TestLoadStaticMissingFile(t *testing.T) {
	_, err := LoadStatic(filepath.Join(t.TempDir(), "absent.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("want os.ErrNotExist, got %v", err)
	}
}

func TestParseStaticRejects(t *testing.T) {
	cases := map[string]struct {
		edit      func(string) string
		field     string // FieldError.Field; empty: only ErrInvalid expected
		wantInMsg string
	}{
		"unknown key": {
			edit: func(s string) string {
				return strings.Replace(s, "    restUrl: http://127.0.0.1:8081", "    restURL: http://127.0.0.1:8081", 1)
			},
			wantInMsg: "restURL",
		},
		"empty document": {edit: func(string) string { return "" }, field: "document"},
		"no clusters": {
			edit:  func(string) string { return "tenants: [{name: a, root: /x}]\nclusters: []\n" },
			field: "clusters",
		},
		"unknown tenant": {
			edit:      func(s string) string { return strings.Replace(s, "tenant: team-b", "tenant: team-c", 1) },
			field:     "clusters[1].tenant",
			wantInMsg: "team-a, team-b",
		},
		"retired cluster still listed": {
			edit:      func(s string) string { return s + "retiredClusters: [cluster-a]\n" },
			field:     "retiredClusters[0]",
			wantInMsg: "gone",
		},
		"duplicate cluster": {
			edit:  func(s string) string { return strings.Replace(s, "clusterId: cluster-b", "clusterId: cluster-a", 1) },
			field: "clusters[1].clusterId",
		},
		"bad mode": {
			edit:      func(s string) string { return strings.Replace(s, "mode: application", "mode: per-job", 1) },
			field:     "clusters[1].mode",
			wantInMsg: "session or application",
		},
		"rest url without scheme": {
			edit: func(s string) string {
				return strings.Replace(s, "restUrl: http://127.0.0.1:8081", "restUrl: 127.0.0.1:8081", 1)
			},
			field: "clusters[0].restUrl",
		},
		"rest url with a password": {
			edit: func(s string) string {
				return strings.Replace(s, "restUrl: http://127.0.0.1:8081", "restUrl: http://ops:s3cret@127.0.0.1:8081", 1)
			},
			field:     "clusters[0].restUrl",
			wantInMsg: "ops:xxxxx@",
		},
		"unparseable rest url with a password": {
			edit: func(s string) string {
				return strings.Replace(s, "restUrl: http://127.0.0.1:8081", "restUrl: http://ops:s3cret@[::1", 1)
			},
			field:     "clusters[0].restUrl",
			wantInMsg: "xxxxx@",
		},
		"relative checkpoint dir": {
			edit: func(s string) string {
				return strings.Replace(s, "checkpointDir: hdfs://127.0.0.1:9000/user/app/team-a/checkpoints", "checkpointDir: checkpoints", 1)
			},
			field: "clusters[0].checkpointDir",
		},
		"tenant root missing": {
			edit:  func(s string) string { return strings.Replace(s, "    root: /user/app/team-b\n", "", 1) },
			field: "tenants[1].root",
		},
		"jar missing": {
			edit:  func(s string) string { return strings.Replace(s, "jar: /opt/jobs/sample-job.jar", "jar: \"\"", 1) },
			field: "clusters[0].jobs[0].restart.jar",
		},
		"bad restart kind": {
			edit:  func(s string) string { return strings.Replace(s, "kind: rest-jar-run", "kind: savepoint", 1) },
			field: "clusters[0].jobs[0].restart.kind",
		},
		"bad restore mode": {
			edit:  func(s string) string { return strings.Replace(s, "restoreMode: CLAIM", "restoreMode: claim", 1) },
			field: "clusters[0].jobs[0].restart.restoreMode",
		},
		"negative parallelism": {
			edit:  func(s string) string { return strings.Replace(s, "parallelism: 2", "parallelism: -1", 1) },
			field: "clusters[0].jobs[0].restart.parallelism",
		},
		"operator resume without resource": {
			edit:  func(s string) string { return strings.Replace(s, "kind: rest-jar-run", "kind: operator-resume", 1) },
			field: "clusters[0].jobs[0].restart.resource",
		},
		"foreign source": {
			edit: func(s string) string {
				return strings.Replace(s, "    mode: session\n", "    mode: session\n    source: flink-operator\n", 1)
			},
			field: "clusters[0].source",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseStatic([]byte(tc.edit(validStatic)), "inv.yaml")
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("want ErrInvalid, got %v", err)
			}
			if tc.field != "" {
				var fe *FieldError
				if !errors.As(err, &fe) {
					t.Fatalf("want *FieldError, got %T: %v", err, err)
				}
				if fe.Field != tc.field || fe.Source != "inv.yaml" || fe.Valid == "" {
					t.Fatalf("field %q source %q valid %q; want field %q source inv.yaml: %v", fe.Field, fe.Source, fe.Valid, tc.field, err)
				}
			}
			if tc.wantInMsg != "" && !strings.Contains(err.Error(), tc.wantInMsg) {
				t.Fatalf("error %q does not mention %q", err, tc.wantInMsg)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("error %q shows a password", err)
			}
		})
	}
}

func TestValidateJobsDuplicate(t *testing.T) {
	jobs := []JobSpec{
		{Name: "a", Restart: RestartRecipe{Kind: RestartRESTJarRun, Jar: "/j.jar"}},
		{Name: "a", Restart: RestartRecipe{Kind: RestartRESTJarRun, Jar: "/j.jar"}},
	}
	err := ValidateJobs("jobs", jobs)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "jobs[1].name" {
		t.Fatalf("want duplicate name error on jobs[1].name, got %v", err)
	}
	ok := []JobSpec{{Name: "fd", Restart: RestartRecipe{Kind: RestartOperatorResume,
		Resource: &ObjectRef{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkDeployment", Namespace: "ns", Name: "fd"}}}}
	if err := ValidateJobs("jobs", ok); err != nil {
		t.Fatalf("operator-resume with resource rejected: %v", err)
	}
}

// The sandbox's own peers.json describes its standalone clusters with the
// same fields; keep the static format able to describe them.
func TestStaticDescribesSandboxShape(t *testing.T) {
	doc := `
tenants: [{name: team-a, root: /user/app/team-a}]
clusters:
  - {clusterId: cluster-a, tenant: team-a, mode: session, restUrl: "http://127.0.0.1:42951",
     checkpointDir: "hdfs://127.0.0.1:39077/user/app/team-a/checkpoints",
     savepointDir: "hdfs://127.0.0.1:39077/user/app/team-a/savepoints",
     haStorageDir: "hdfs://127.0.0.1:39077/user/app/team-a/ha", flinkVersion: "1.20.3"}
`
	if _, err := ParseStatic([]byte(doc), "sandbox"); err != nil {
		t.Fatal(err)
	}
}

// TestValidateDrillRecipe: a drill recipe must name the arguments that
// switch the job's sinks off, and use them; it borrows jar, entry class
// and parallelism from the restart recipe.
func TestValidateDrillRecipe(t *testing.T) {
	restart := RestartRecipe{Kind: RestartRESTJarRun, Jar: "/jars/j.jar"}
	ok := DrillRecipe{ProgramArgs: []string{"--rate", "10", "--sink", "discard"}, SandboxArgs: []string{"--sink", "discard"}}
	if err := ValidateDrillRecipe("jobs[0].drill", ok, restart); err != nil {
		t.Fatalf("valid recipe: %v", err)
	}
	cases := map[string]struct {
		d       DrillRecipe
		r       RestartRecipe
		field   string
		wantMsg string
	}{
		"no sandbox args": {DrillRecipe{ProgramArgs: []string{"--rate", "10"}}, restart, "jobs[0].drill.sandboxArgs", "never runs the production recipe"},
		"sandbox args unused": {DrillRecipe{ProgramArgs: []string{"--sink", "kafka"}, SandboxArgs: []string{"--sink", "discard"}}, restart,
			"jobs[0].drill.programArgs", "--sink discard"},
		"sandbox args out of order": {DrillRecipe{ProgramArgs: []string{"discard", "--sink"}, SandboxArgs: []string{"--sink", "discard"}}, restart,
			"jobs[0].drill.programArgs", "in that order"},
		"no jar anywhere": {ok, RestartRecipe{Kind: RestartOperatorResume}, "jobs[0].drill.jar", "required"},
		"verify without class": {DrillRecipe{ProgramArgs: ok.ProgramArgs, SandboxArgs: ok.SandboxArgs, Verify: &DrillVerify{}}, restart,
			"jobs[0].drill.verify.entryClass", "main class"},
		"a configuration key that moves state": {DrillRecipe{ProgramArgs: ok.ProgramArgs, SandboxArgs: ok.SandboxArgs,
			FlinkConfiguration: map[string]string{"state.checkpoints.dir": "hdfs://nn/x"}}, restart, "jobs[0].drill.flinkConfiguration.state.checkpoints.dir", "moves the job's state"},
		"a build for a version that is no major.minor": {DrillRecipe{ProgramArgs: ok.ProgramArgs, SandboxArgs: ok.SandboxArgs,
			FlinkVersions: map[string]DrillBuild{"2.3.0": {Jar: "/jars/j2.jar"}}}, restart, "jobs[0].drill.flinkVersions", "major.minor"},
		"a build whose arguments keep the sinks": {DrillRecipe{ProgramArgs: ok.ProgramArgs, SandboxArgs: ok.SandboxArgs,
			FlinkVersions: map[string]DrillBuild{"2.3": {Jar: "/jars/j2.jar", ProgramArgs: []string{"--sink", "kafka"}}}}, restart, "jobs[0].drill.flinkVersions.2.3.programArgs", "--sink discard"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			err := ValidateDrillRecipe("jobs[0].drill", c.d, c.r)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(err.Error(), c.wantMsg) {
				t.Fatalf("validate: %v; want field %s saying %q", err, c.field, c.wantMsg)
			}
		})
	}
	withBuild := ok
	withBuild.FlinkVersions = map[string]DrillBuild{"2.3": {Jar: "/jars/j2.jar", Parallelism: 2}}
	if err := ValidateDrillRecipe("jobs[0].drill", withBuild, restart); err != nil {
		t.Fatalf("a recipe with a 2.3 build: %v", err)
	}
	if b, found := withBuild.ForFlinkVersion("2.3"); !found || b.Jar != "/jars/j2.jar" || b.Parallelism != 2 || strings.Join(b.ProgramArgs, " ") != "--rate 10 --sink discard" || b.FlinkVersions != nil {
		t.Errorf("2.3 build %+v (%v); want its jar and parallelism over the recipe's arguments", b, found)
	}
	if _, found := withBuild.ForFlinkVersion("2.2"); found {
		t.Error("a build for 2.2 found; the recipe has none")
	}
	// The static file and the jobs annotation validate it too.
	bad := strings.Replace(validStatic, "          restoreMode: CLAIM\n", "          restoreMode: CLAIM\n        drill:\n          programArgs: [--x]\n          sandboxArgs: [--sink, discard]\n", 1)
	if _, err := ParseStatic([]byte(bad), "inv.yaml"); err == nil || !strings.Contains(err.Error(), "drill.programArgs") {
		t.Fatalf("static file with a drill recipe that keeps the sinks: %v; want it refused", err)
	}
}

func TestValidateRecipeJarIDAndConfiguration(t *testing.T) {
	base := RestartRecipe{Kind: RestartRESTJarRun, EntryClass: "com.example.Job"}
	for name, tc := range map[string]struct {
		mut   func(*RestartRecipe)
		field string // "" is valid
	}{
		"jar id alone":        {func(r *RestartRecipe) { r.JarID = "5c1e_orders.jar" }, ""},
		"jar and jar id":      {func(r *RestartRecipe) { r.Jar, r.JarID = "/jars/a.jar", "5c1e_orders.jar" }, "restart.jarId"},
		"neither":             {func(r *RestartRecipe) {}, "restart.jar"},
		"jar id with a slash": {func(r *RestartRecipe) { r.JarID = "../x.jar" }, "restart.jarId"},
		"plain configuration": {func(r *RestartRecipe) {
			r.Jar, r.FlinkConfiguration = "/j.jar", map[string]string{"pipeline.object-reuse": "true"}
		}, ""},
		"checkpoint dir": {func(r *RestartRecipe) {
			r.Jar, r.FlinkConfiguration = "/j.jar", map[string]string{"execution.checkpointing.dir": "hdfs://x/y"}
		}, "restart.flinkConfiguration.execution.checkpointing.dir"},
		"drop unclaimed state": {func(r *RestartRecipe) {
			r.Jar, r.FlinkConfiguration = "/j.jar", map[string]string{"execution.savepoint.ignore-unclaimed-state": "true"}
		}, "restart.flinkConfiguration.execution.savepoint.ignore-unclaimed-state"},
		"restore path": {func(r *RestartRecipe) {
			r.Jar, r.FlinkConfiguration = "/j.jar", map[string]string{"execution.state-recovery.path": "x"}
		}, "restart.flinkConfiguration.execution.state-recovery.path"},
		"operator with a jarId": {func(r *RestartRecipe) {
			*r = RestartRecipe{Kind: RestartOperatorResume, JarID: "a.jar", Resource: &ObjectRef{Kind: KindFlinkDeployment, Namespace: "n", Name: "x"}}
		}, "restart.jar"},
	} {
		r := base
		tc.mut(&r)
		err := ValidateRecipe("restart", r)
		var fe *FieldError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v; want valid", name, err)
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
			t.Errorf("%s: %v; want an error on %s", name, err, tc.field)
		}
	}
}
