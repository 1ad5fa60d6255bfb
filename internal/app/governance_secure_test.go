//go:build realpeers

package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	gohdfs "github.com/colinmarc/hdfs/v2"
	"github.com/colinmarc/hdfs/v2/hadoopconf"
	krbclient "github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"gopkg.in/yaml.v3"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/doctor"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/metrics"
	"github.com/flinkmaint/flinkmaint/internal/storage"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/faulthook"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/workflows"
)

// Governance on the secure sandbox: a KDC and a kerberized HDFS whose
// nameservice ns1 has two NameNodes. The worker is built from a
// config.Config naming storage.hadoopConfDir and storage.kerberos (the
// keytab of flinkmaint, an HDFS superuser), exactly as the worker binary
// builds it.
//
// The sandbox's Flink clusters write to the plain HDFS, not to ns1. The
// inventory therefore names one real session cluster (so the live-job
// source is asked, and answers: no job of it has state on ns1) under a
// cluster id of this test, with its checkpoint, savepoint and HA dirs on
// ns1, and the garbage is _metadata-less: incomplete checkpoints, retired
// job dirs without a completed checkpoint and the HA dir of a cluster that
// no longer exists.

// secureGovEnv is one test's tree on hdfs://ns1, a worker over it and a
// dev server.
type secureGovEnv struct {
	s     *sandbox.SecureStorage
	tmp   *sandbox.Temporal
	acts  *app.Ports
	gov   *metrics.Governance
	cfg   config.Config
	check *storage.HDFS  // the test's own keytab client, apart from the worker's
	raw   *gohdfs.Client // ages the tree (Chtimes) before the run; each call through rideOut
	plain string         // /flinkmaint-test/secure-gov-<suffix>
	root  string         // hdfs://ns1 + plain
	// tenant's root is root/tenant, with checkpoints/, savepoints/ and ha/.
	tenant    string
	clusterID string
	queue     string
	// hooks hold the worker's activities where a test says.
	hooks *faulthook.Hooks
}

func newSecureGovEnv(t *testing.T, ctx context.Context) *secureGovEnv {
	t.Helper()
	s := sandbox.RequireSecureStorage(t)
	if _, err := s.RestartStopped(ctx); err != nil {
		t.Fatalf("two NameNodes are needed: %v", err)
	}
	suffix := peertest.RandomHex(4)
	e := &secureGovEnv{s: s, plain: "/flinkmaint-test/secure-gov-" + suffix, tenant: "sec-" + suffix,
		clusterID: "ns1-session-" + suffix, queue: "governance-secure-" + suffix}
	e.root = s.URI + e.plain
	e.raw = secureRawClient(t, s, s.Principals.Worker)
	for _, d := range []string{"/tenant/checkpoints", "/tenant/savepoints", "/tenant/ha", "/trash", "/plans"} {
		e.rideOut(t, "create test tree", func() error { return e.raw.MkdirAll(e.plain+d, 0o755) })
	}
	t.Cleanup(func() { _ = e.raw.Close() })

	// A real cluster on ns1 that runs no job of another test: the jobs of
	// the shared clusters write to the plain HDFS, which this worker's
	// Kerberos login cannot read, and a governance run fails closed on a
	// live job whose state it cannot resolve.
	_, c := sandbox.StartSecureFlinkCluster(t)
	static := inventory.Static{
		Tenants: []inventory.Tenant{{Name: e.tenant, Root: e.root + "/tenant"}},
		Clusters: []inventory.Cluster{{Tenant: e.tenant, ClusterID: e.clusterID, Mode: inventory.ModeSession, RESTURL: c.RESTURL,
			CheckpointDir: e.root + "/tenant/checkpoints", SavepointDir: e.root + "/tenant/savepoints", HAStorageDir: e.root + "/tenant/ha"}},
	}
	data, err := yaml.Marshal(static)
	if err != nil {
		t.Fatal(err)
	}
	invPath := filepath.Join(t.TempDir(), "inventory.yaml")
	if err := os.WriteFile(invPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Storage.HadoopConfDir = s.HadoopConfDir
	cfg.Storage.Kerberos = &config.Kerberos{Krb5Conf: s.Krb5Conf, Principal: s.Principals.Worker.Principal, Keytab: s.Principals.Worker.Keytab}
	cfg.Storage.WritableRoots = []string{e.root}
	cfg.Inventory.StaticFile = invPath
	cfg.Cleanup.TrashRoot, cfg.Cleanup.PlanDir = e.root+"/trash", e.root+"/plans"
	if err := cfg.Validate(); err != nil {
		t.Fatalf("worker config: %v", err)
	}
	e.cfg = cfg
	acts := peertest.NewPorts(t, cfg, "governance-secure")
	e.gov, err = metrics.NewGovernance(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	acts.Metrics = e.gov
	e.acts = acts

	guard, err := storage.NewGuard(s.URI + path.Dir(e.plain))
	if err != nil {
		t.Fatal(err)
	}
	e.check, err = storage.NewHDFS(ctx, storage.HDFSOptions{URI: s.URI, HadoopConfDir: s.HadoopConfDir, Guard: guard,
		Kerberos: &storage.KerberosOptions{Krb5Conf: s.Krb5Conf, Principal: s.Principals.Worker.Principal, Keytab: s.Principals.Worker.Keytab}})
	if err != nil {
		t.Fatalf("test client of %s: %v", s.URI, err)
	}
	t.Cleanup(func() {
		if os.Getenv("FLINKMAINT_KEEP_TEST_TREE") == "" {
			if err := e.check.RemoveAll(context.Background(), e.root); err != nil {
				t.Logf("remove %s: %v", e.root, err)
			}
		}
		_ = e.check.Close()
	})

	e.tmp = sandbox.StartTemporal(t, workflows.SearchAttributeDefinitions())
	e.hooks = faulthook.New(t)
	w := worker.New(e.tmp.Client, e.queue, worker.Options{Interceptors: []interceptor.WorkerInterceptor{faulthook.Interceptor(e.hooks.Dir())}})
	app.Register(w, acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return e
}

// secureRawClient is a colinmarc/hdfs client of the secure HDFS logged in
// from as's keytab, for what the storage port does not offer (Chtimes).
func secureRawClient(t *testing.T, s *sandbox.SecureStorage, as sandbox.Principal) *gohdfs.Client {
	t.Helper()
	conf, err := hadoopconf.Load(s.HadoopConfDir)
	if err != nil {
		t.Fatal(err)
	}
	opts := gohdfs.ClientOptionsFromConf(conf)
	opts.Addresses = s.NameNodes
	kcfg, err := krbconfig.Load(s.Krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	kt, err := keytab.Load(as.Keytab)
	if err != nil {
		t.Fatal(err)
	}
	name, realm, _ := strings.Cut(as.Principal, "@")
	kc := krbclient.NewWithKeytab(name, realm, kt, kcfg, krbclient.DisablePAFXFAST(true))
	if err := kc.Login(); err != nil {
		t.Fatalf("login %s: %v", as.Principal, err)
	}
	opts.KerberosClient = kc
	opts.KerberosServicePrincipleName = strings.Split(s.ServicePrincipal, "@")[0]
	c, err := gohdfs.NewClient(opts)
	if err != nil {
		t.Fatalf("raw client of %s as %s: %v", s.URI, as.Principal, err)
	}
	return c
}

// put writes files (relative name → size) under the plain dir with the
// test's own client and ages the whole dir to when, children first
// (creating a child touches its parent).
func (e *secureGovEnv) put(t *testing.T, dir string, files map[string]int, when time.Time) {
	t.Helper()
	ctx := context.Background()
	for name, size := range files {
		p := e.s.URI + dir + "/" + name
		if err := e.check.MkdirAll(ctx, storage.ParentOf(p)); err != nil {
			t.Fatal(err)
		}
		if err := e.check.WriteFile(ctx, p, make([]byte, size)); err != nil {
			t.Fatalf("write %s: %v", p, err)
		}
	}
	var all []string
	e.rideOut(t, "walk "+dir, func() error {
		all = all[:0]
		return e.raw.Walk(dir, func(p string, _ os.FileInfo, err error) error {
			if err == nil {
				all = append(all, p)
			}
			return err
		})
	})
	sort.Sort(sort.Reverse(sort.StringSlice(all)))
	for _, p := range all {
		e.rideOut(t, "age "+p, func() error { return e.raw.Chtimes(p, when, when) })
	}
}

// rideOut runs a call of the raw client until no NameNode failover is in
// the way: the library gives up at once while both NameNodes say standby,
// which the failover tests beside this one cause at any moment (the
// worker's own client rides it out; see storage's unavailable errors).
func (e *secureGovEnv) rideOut(t *testing.T, what string, call func() error) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := call()
		if err == nil {
			return
		}
		if msg := err.Error(); time.Now().After(deadline) ||
			!(strings.Contains(msg, "no available namenodes") || strings.Contains(msg, "StandbyException")) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (e *secureGovEnv) exists(t *testing.T, plainPath string) bool {
	t.Helper()
	_, err := e.check.Stat(context.Background(), e.s.URI+plainPath)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("stat %s: %v", plainPath, err)
	}
	return err == nil
}

// tree lists every path under plainDir (itself excluded), relative to it,
// but for what flinkmaint records beside a tenant's state (.flinkmaint/).
func (e *secureGovEnv) tree(t *testing.T, plainDir string) []string {
	t.Helper()
	var out []string
	base := e.s.URI + plainDir
	if err := e.check.Walk(context.Background(), base, func(fi storage.FileInfo) error {
		rel := strings.TrimPrefix(strings.TrimPrefix(fi.Path, base), "/")
		if rel != "" && rel != ".flinkmaint" && !strings.HasPrefix(rel, ".flinkmaint/") {
			out = append(out, rel)
		}
		return nil
	}); err != nil {
		t.Fatalf("walk %s: %v", plainDir, err)
	}
	sort.Strings(out)
	return out
}

func (e *secureGovEnv) start(t *testing.T, ctx context.Context, in workflows.GovernanceInput) client.WorkflowRun {
	t.Helper()
	wf, err := e.tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.GovernanceWorkflowID(in.RunID), TaskQueue: e.queue},
		workflows.GovernanceWorkflowType, in)
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

// trashedOnce checks the audit manifest of runID line by line (every
// segment, not only each item's final state): each garbage item has
// exactly one "trashed" record, its last, and nothing but garbage is
// recorded. Strict, each item has one "started" and then one "trashed"
// record: no item failed on the way or was tried twice. Otherwise, tries
// that failed (a write whose outcome a dying NameNode left unknown) may
// come before, each "started" and maybe "failed". It returns the number of
// lines.
func (e *secureGovEnv) trashedOnce(t *testing.T, ctx context.Context, runID string, garbage map[string]bool, strict bool) int {
	t.Helper()
	dir := e.root + "/trash/_audit/" + runID
	var segs []string
	if err := e.check.List(ctx, dir, 0, func(batch []storage.FileInfo) error {
		for _, fi := range batch {
			if strings.HasSuffix(fi.Name, ".jsonl") {
				segs = append(segs, fi.Name)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sort.Strings(segs)
	seen := map[string][]cleanup.Outcome{}
	lines := 0
	for _, name := range segs {
		data, err := e.check.ReadFile(ctx, dir+"/"+name, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if line == "" {
				continue // a segment opened when the NameNode died, nothing written to it yet
			}
			var r cleanup.Record
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("%s: %q: %v", name, line, err)
			}
			if !garbage[r.Path] {
				t.Errorf("manifest records %s (%s), which is not garbage", r.Path, r.Outcome)
			}
			if r.Outcome == cleanup.OutcomeTrashed && r.TrashPath != e.root+"/trash/"+runID+strings.TrimPrefix(r.Path, e.s.URI) {
				t.Errorf("%s trashed to %s", r.Path, r.TrashPath)
			}
			seen[r.Path] = append(seen[r.Path], r.Outcome)
			lines++
		}
	}
	for g := range garbage {
		got := seen[g]
		switch {
		case strict && (len(got) != 2 || got[0] != cleanup.OutcomeStarted || got[1] != cleanup.OutcomeTrashed):
			t.Errorf("%s has manifest records %v; want [started trashed]", g, got)
		case len(got) < 2 || got[0] != cleanup.OutcomeStarted || got[len(got)-1] != cleanup.OutcomeTrashed:
			t.Errorf("%s has manifest records %v; want started first and trashed last", g, got)
		default:
			for _, o := range got[1 : len(got)-1] {
				if o != cleanup.OutcomeStarted && o != cleanup.OutcomeFailed {
					t.Errorf("%s has manifest records %v; want only started or failed before trashed", g, got)
				}
			}
		}
	}
	if recs, err := cleanup.ReadManifest(ctx, e.check, e.root+"/trash/_audit", runID); err != nil || len(recs) != len(garbage) {
		t.Errorf("ReadManifest: %d items, %v; want %d", len(recs), err, len(garbage))
	}
	return lines
}

// TestGovernanceOnSecureHAHDFS plans and executes (trash) a governance run
// on the kerberized HA HDFS through a real dev server, with a worker
// logged in by keytab: exactly the garbage is planned, nothing moves
// before approval, then exactly it is in the trash and once in the audit
// manifest, and everything else of the tenant is where it was. A quota
// watch over the same tenant reports what hdfs dfs -count -q does.
func TestGovernanceOnSecureHAHDFS(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e := newSecureGovEnv(t, ctx)
	longAgo := time.Now().Add(-30 * 24 * time.Hour)
	ck := e.plain + "/tenant/checkpoints"
	ha := e.plain + "/tenant/ha"

	// Garbage.
	jobA := ck + "/" + peertest.RandomHex(16) // not live, but written to within the grace
	e.put(t, jobA+"/chk-5", map[string]int{"6f1d2c3b-0001": 300}, longAgo)
	e.put(t, jobA+"/chk-6", map[string]int{"6f1d2c3b-0002": 0}, longAgo)
	retired := ck + "/" + peertest.RandomHex(16)
	e.put(t, retired, map[string]int{"chk-7/6f1d2c3b-0003": 50, "shared/s1": 70, "taskowned/t1": 30}, longAgo)
	goneHA := ha + "/gone-" + peertest.RandomHex(4)
	e.put(t, goneHA, map[string]int{"blob/job_" + peertest.RandomHex(16) + "/blob_p-1": 40, "submittedJobGraph" + peertest.RandomHex(6): 20}, longAgo)
	// Kept: the young files of job A, a retired job within its TTL and the
	// HA dir of the inventory's cluster. Job A's dir was last written 20
	// minutes ago, past the longest checkpoint timeout the fleet allows
	// (10m): no job can still be uploading its incomplete checkpoints.
	twentyMinutesAgo := time.Now().Add(-20 * time.Minute)
	e.put(t, jobA+"/shared", map[string]int{"young": 10}, twentyMinutesAgo)
	e.rideOut(t, "age "+jobA, func() error { return e.raw.Chtimes(jobA, twentyMinutesAgo, twentyMinutesAgo) })
	young := ck + "/" + peertest.RandomHex(16)
	e.put(t, young, map[string]int{"chk-1/6f1d2c3b-0004": 10}, time.Now())
	liveHA := ha + "/" + e.clusterID
	e.put(t, liveHA, map[string]int{"submittedJobGraph" + peertest.RandomHex(6): 20}, longAgo)

	garbage := map[string]bool{}
	for _, p := range []string{jobA + "/chk-5", jobA + "/chk-6", retired, goneHA} {
		garbage[e.s.URI+p] = true
	}
	tenantBefore := e.tree(t, e.plain+"/tenant")

	in := workflows.GovernanceInput{RunID: "secure-" + e.tenant, Reason: "governance on kerberized HA HDFS", Mode: workflows.ModePlanAndApprove,
		Scope: core.Scope{Tenants: []string{e.tenant}}, ApprovalTimeout: workflows.Duration(10 * time.Minute)}
	wf := e.start(t, ctx, in)
	st := waitGovernance(t, ctx, e.tmp.Client, wf.GetID(), func(st workflows.GovernanceState) bool {
		return st.Phase == workflows.GovernancePhaseAwaitingApproval
	})
	plan := st.Plan
	planned := map[string]bool{}
	for _, it := range plan.Sample {
		planned[it.Path] = true
	}
	if int(plan.Items) != len(garbage) || len(planned) != len(garbage) {
		t.Fatalf("plan has %d items %v; want exactly the garbage %v (notes %v)", plan.Items, planned, garbage, plan.Notes)
	}
	for g := range garbage {
		if !planned[g] {
			t.Fatalf("garbage %s not planned; plan %v", g, planned)
		}
	}
	if got := e.tree(t, e.plain+"/tenant"); strings.Join(got, "\n") != strings.Join(tenantBefore, "\n") {
		t.Fatalf("the tenant tree changed before approval:\n%v\nwas\n%v", got, tenantBefore)
	}
	h, err := e.tmp.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: wf.GetID(), UpdateName: workflows.UpdateApprove,
		Args:         []interface{}{workflows.ApproveRequest{By: "secure-e2e", Reason: "garbage only", PlanSHA256: plan.PlanSHA256}},
		WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var rep workflows.GovernanceReport
	if err := wf.Get(ctx, &rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("report: outcome %s reclaimed %d files %d bytes", rep.Outcome, rep.ReclaimedFiles, rep.ReclaimedBytes)
	if rep.Outcome != workflows.GovernancePhaseCompleted || rep.Execution == nil || rep.Execution.Items != int64(len(garbage)) || rep.ReclaimedFiles != 7 {
		t.Fatalf("report %+v execution %+v; want completed, %d items, 7 files", rep, rep.Execution, len(garbage))
	}

	// Exactly the garbage moved, into the trash, once.
	for g := range garbage {
		p := strings.TrimPrefix(g, e.s.URI)
		if e.exists(t, p) {
			t.Errorf("%s still in place", p)
		}
		if !e.exists(t, e.plain+"/trash/"+in.RunID+p) {
			t.Errorf("%s not in trash", p)
		}
	}
	var want []string
	for _, p := range tenantBefore {
		if !garbage[e.s.URI+e.plain+"/tenant/"+p] && !underGarbage(e.s.URI+e.plain+"/tenant/"+p, garbage) {
			want = append(want, p)
		}
	}
	if got := e.tree(t, e.plain+"/tenant"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("tenant tree after the run:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	e.trashedOnce(t, ctx, in.RunID, garbage, true)
	md, err := e.check.ReadFile(ctx, strings.TrimSuffix(rep.PlanPath, "plan.json")+"report.md", 1<<20)
	if err != nil || !strings.Contains(string(md), "**completed**") || !strings.Contains(string(md), "Approved by secure-e2e") {
		t.Errorf("report.md on ns1: %v\n%s", err, md)
	}

	testSecureQuotaWatch(t, ctx, e)
	testSecureDoctor(t, ctx, e)
}

// testSecureDoctor runs the worker side of `flinkmaint doctor` on the
// worker over ns1: every root readable and writable (probe files leave
// nothing behind), Kerberos authenticated, the inventory's cluster
// answering. A worker whose keytab does not hold its principal's key
// fails the Kerberos check and names the fix.
func testSecureDoctor(t *testing.T, ctx context.Context, e *secureGovEnv) {
	before := e.tree(t, e.plain)
	wf, err := e.tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.WorkerDoctorID(e.tenant), TaskQueue: e.queue},
		workflows.WorkerDoctorWorkflowType, doctor.DoctorInput{})
	if err != nil {
		t.Fatal(err)
	}
	var res doctor.DoctorResult
	if err := wf.Get(ctx, &res); err != nil {
		t.Fatalf("doctor: %v", err)
	}
	got := map[string]doctor.DoctorCheck{}
	for _, c := range res.Checks {
		got[c.Check] = c
		if c.Result != doctor.CheckOK {
			t.Errorf("doctor on the secure HDFS: %+v; want ok", c)
		}
	}
	for check, detail := range map[string]string{
		"storage writable root " + e.root:         "readable and writable",
		"storage trash root " + e.root + "/trash": "readable and writable",
		"storage plan dir " + e.root + "/plans":   "readable and writable",
		"kerberos":                                "authenticated as " + e.s.Principals.Worker.Principal,
		"inventory":                               "1 tenants, 1 Flink clusters",
		"flink clusters":                          "all 1 answer",
	} {
		if !strings.Contains(got[check].Detail, detail) {
			t.Errorf("doctor %q: %+v; want %q (all: %+v)", check, got[check], detail, res.Checks)
		}
	}
	if after := e.tree(t, e.plain); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("doctor left something behind:\n%s\nwas\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}

	wrong := e.cfg
	k := *wrong.Storage.Kerberos
	k.Keytab = e.s.Principals.Denied.Keytab // holds another principal's key
	wrong.Storage.Kerberos = &k
	acts := peertest.NewPorts(t, wrong, "doctor-wrong-keytab")
	res, err = app.NewFamilies(acts).Doctor.Doctor(ctx, doctor.DoctorInput{})
	if err != nil {
		t.Fatal(err)
	}
	var kerberos doctor.DoctorCheck
	failedRoots := 0
	for _, c := range res.Checks {
		if c.Check == "kerberos" {
			kerberos = c
		}
		if strings.HasPrefix(c.Check, "storage ") && c.Result == doctor.CheckFail && strings.Contains(c.Fix, "keytab") {
			failedRoots++
		}
	}
	if kerberos.Result != doctor.CheckFail || !strings.Contains(kerberos.Fix, "klist -kt") || failedRoots != 3 {
		t.Fatalf("doctor with a keytab of another principal: kerberos %+v, %d roots failed naming the keytab (all %+v); want fail and 3", kerberos, failedRoots, res.Checks)
	}
}

func underGarbage(p string, garbage map[string]bool) bool {
	for g := range garbage {
		if strings.HasPrefix(p, g+"/") {
			return true
		}
	}
	return false
}

// testSecureQuotaWatch sets a namespace quota on the tenant's root, runs a
// one-sample quota watch (samples kept on ns1) and compares its figures with
// hdfs dfs -count -q as the Java client of the same HADOOP_CONF_DIR prints
// them.
func testSecureQuotaWatch(t *testing.T, ctx context.Context, e *secureGovEnv) {
	tenantRoot := e.plain + "/tenant"
	if _, err := e.s.DFSAdmin(ctx, e.s.Principals.Service, "-setQuota", "5000", tenantRoot); err != nil {
		t.Fatalf("dfsadmin -setQuota: %v", err)
	}
	in := workflows.QuotaWatchInput{Scope: core.Scope{Tenants: []string{e.tenant}}, Iterations: 1, SamplesPath: e.root + "/plans/quota-samples.json"}
	wf, err := e.tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "quota-" + e.tenant, TaskQueue: e.queue}, workflows.QuotaWatchWorkflowType, in)
	if err != nil {
		t.Fatal(err)
	}
	var st workflows.QuotaWatchState
	if err := wf.Get(ctx, &st); err != nil {
		t.Fatalf("quota watch: %v", err)
	}
	if len(st.Tenants) != 1 || st.Tenants[0].Tenant != e.tenant {
		t.Fatalf("quota watch sampled %+v", st.Tenants)
	}
	got := st.Tenants[0].Latest
	out, err := e.s.HadoopShell(ctx, e.s.Principals.Worker, "-count", "-q", tenantRoot)
	if err != nil {
		t.Fatalf("hdfs dfs -count -q: %v", err)
	}
	// QUOTA REM_QUOTA SPACE_QUOTA REM_SPACE_QUOTA DIR_COUNT FILE_COUNT CONTENT_SIZE PATHNAME
	f := strings.Fields(out)
	if len(f) != 8 {
		t.Fatalf("-count -q printed %q; want 8 columns", out)
	}
	num := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("column %q of %q: %v", s, out, err)
		}
		return n
	}
	if got.NamespaceQuota != num(f[0]) || got.NamespaceUsed != num(f[4])+num(f[5]) || got.NamespaceQuota-got.NamespaceUsed != num(f[1]) {
		t.Fatalf("quota watch %+v; hdfs dfs -count -q %q", got, strings.TrimSpace(out))
	}
	if data, err := e.check.ReadFile(ctx, in.SamplesPath, 1<<20); err != nil || !strings.Contains(string(data), e.tenant) {
		t.Errorf("samples on ns1: %v %s", err, data)
	}
	t.Logf("quota watch %d/%d (%.1f%%) == hdfs dfs -count -q %q", got.NamespaceUsed, got.NamespaceQuota, got.Percent, strings.TrimSpace(out))
}

// TestGovernanceFailoverDuringExecutionOnSecureHAHDFS fails the NameNodes
// of ns1 over (the active one becomes standby, the other active) while the
// worker moves a few hundred planned items to trash, and again half-way:
// a fault hook holds the execution at its 100th and its 300th item until
// the failover is done.
// The run completes; the audit manifest has every item exactly once as
// trashed, each tried once; every planned path is in the trash and nothing
// else moved.
func TestGovernanceFailoverDuringExecutionOnSecureHAHDFS(t *testing.T) {
	t.Parallel()
	testFailoverDuringExecution(t, false)
}

// TestGovernanceActiveNameNodeDiesDuringExecutionOnSecureHAHDFS stops the
// active NameNode of ns1 while the worker moves items (held at its 100th
// by a fault hook; the other NameNode takes over; calls in flight are cut) and finishes the run on the other one. A
// move whose outcome a cut left unknown, if the cut hits one, fails and is
// resumed by the next attempt; every item is still trashed exactly once,
// every planned path is in the trash and nothing else moved.
func TestGovernanceActiveNameNodeDiesDuringExecutionOnSecureHAHDFS(t *testing.T) {
	t.Parallel()
	testFailoverDuringExecution(t, true)
}

func testFailoverDuringExecution(t *testing.T, stopActive bool) {
	sandbox.RequireSecureStorage(t).HoldFailovers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	e := newSecureGovEnv(t, ctx)
	if stopActive {
		t.Cleanup(func() {
			if _, err := e.s.RestartStopped(context.Background()); err != nil {
				t.Errorf("restart the stopped NameNode: %v", err)
			}
		})
	}
	// The execution holds at its 100th item (the first manifest batch of
	// 256 under way) and, for a second failover, at its 300th (the first
	// batch recorded, the second under way).
	const items = 400
	longAgo := time.Now().Add(-30 * 24 * time.Hour)
	ck := e.plain + "/tenant/checkpoints"
	garbage := map[string]bool{}
	seedStart := time.Now()
	for i := range items {
		dir := fmt.Sprintf("%s/%032x", ck, i+1)
		e.put(t, dir, map[string]int{"chk-1/6f1d2c3b-0001": i % 2}, longAgo)
		garbage[e.s.URI+dir] = true
	}
	// Kept: a retired job within its TTL.
	young := ck + "/" + peertest.RandomHex(16)
	e.put(t, young, map[string]int{"chk-1/6f1d2c3b-0002": 10}, time.Now())
	t.Logf("seeded %d items in %v", items, time.Since(seedStart).Round(time.Millisecond))

	holdsAt := []int{100, 300}
	if stopActive {
		holdsAt = holdsAt[:1] // the run goes on with one NameNode
	}
	for i, at := range holdsAt {
		e.hooks.Arm(faulthook.Hold{Name: fmt.Sprintf("failover-%d", i+1), Activity: "ExecuteCleanupPart", At: faulthook.Heartbeat, Hit: at})
	}
	in := workflows.GovernanceInput{RunID: "failover-" + e.tenant, Reason: "failover during execution", Mode: workflows.ModeAuto,
		Scope: core.Scope{Tenants: []string{e.tenant}}}
	wf := e.start(t, ctx, in)
	var rep workflows.GovernanceReport
	ended := make(chan error, 1)
	go func() { ended <- wf.Get(ctx, &rep) }()

	audit := e.root + "/trash/_audit"
	var failovers []string
	for i, at := range holdsAt {
		name := fmt.Sprintf("failover-%d", i+1)
		e.hooks.WaitHeld(ctx, name, func() string {
			select {
			case err := <-ended:
				return fmt.Sprintf("the run ended (%v) after %d failovers (%v)", err, len(failovers), failovers)
			default:
				return ""
			}
		})
		failover, what := e.s.Failover, "failover"
		if stopActive {
			failover, what = e.s.FailoverStop, "active NameNode stopped"
		}
		st, err := failover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := st.Active()
		recs, err := cleanup.ReadManifest(ctx, e.check, audit, in.RunID)
		if err != nil {
			t.Fatal(err)
		}
		trashed := 0
		for _, r := range recs {
			if r.Outcome == cleanup.OutcomeTrashed {
				trashed++
			}
		}
		if trashed >= items {
			t.Fatalf("the manifest records all %d items trashed while the execution was held at item %d: the case was not reached", items, at)
		}
		failovers = append(failovers, fmt.Sprintf("%s at item %d (%d recorded trashed), now %s active", what, at, trashed, a.ID))
		e.hooks.Release(name)
	}
	if err := <-ended; err != nil {
		t.Fatalf("governance run: %v (failovers: %v)", err, failovers)
	}
	t.Log(strings.Join(failovers, "; "))
	if rep.Outcome != workflows.GovernancePhaseCompleted || rep.Execution == nil || rep.Execution.Items != items {
		t.Fatalf("report outcome %s execution %+v", rep.Outcome, rep.Execution)
	}
	lines := e.trashedOnce(t, ctx, in.RunID, garbage, !stopActive)
	t.Logf("manifest: %d lines for %d items", lines, items)
	for g := range garbage {
		p := strings.TrimPrefix(g, e.s.URI)
		if e.exists(t, p) {
			t.Errorf("%s still in place", p)
		}
	}
	// The trash holds exactly the planned job dirs; the tenant only the
	// young one.
	trashed := e.tree(t, e.plain+"/trash/"+in.RunID+ck)
	var dirs []string
	for _, p := range trashed {
		if !strings.Contains(p, "/") {
			dirs = append(dirs, p)
		}
	}
	if len(dirs) != items {
		t.Errorf("trash holds %d job dirs; want %d", len(dirs), items)
	}
	for _, d := range dirs {
		if !garbage[e.s.URI+ck+"/"+d] {
			t.Errorf("trash holds %s, which was not planned", d)
		}
	}
	if got := e.tree(t, ck); strings.Join(got, ",") != strings.Join([]string{path.Base(young), path.Base(young) + "/chk-1", path.Base(young) + "/chk-1/6f1d2c3b-0002"}, ",") {
		t.Errorf("checkpoints left: %v; want only %s", got, young)
	}
}

// TestQuotaWatchOutlivesTicketOnSecureHAHDFS keeps a quota watch sampling
// ns1 through the worker for longer than the KDC's ticket lifetime, and
// fails the NameNodes over before every sample but the first (a fault hook
// holds the sample until the failover is done), so that each sample
// connects anew: past the first lifetime only tickets the keytab login
// renewed are accepted. Every sample succeeds and is saved on ns1.
func TestQuotaWatchOutlivesTicketOnSecureHAHDFS(t *testing.T) {
	t.Parallel()
	sandbox.RequireSecureStorage(t).HoldFailovers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e := newSecureGovEnv(t, ctx)
	lifetime := time.Duration(e.s.TicketLifetimeSeconds) * time.Second
	if lifetime <= 0 || lifetime > 5*time.Minute {
		t.Fatalf("ticket lifetime %v: the secure sandbox must run with short tickets (FLINKMAINT_SECURE_TICKET_LIFETIME)", lifetime)
	}
	const samples = 4 // at 0, 1/2, 1 and 3/2 lifetimes
	for i := 2; i <= samples; i++ {
		e.hooks.Arm(faulthook.Hold{Name: fmt.Sprintf("sample-%d", i), Activity: "SampleQuota", At: faulthook.Start, Hit: i})
	}
	in := workflows.QuotaWatchInput{Scope: core.Scope{Tenants: []string{e.tenant}}, Iterations: samples,
		Interval: workflows.Duration(lifetime / 2), SamplesPath: e.root + "/plans/quota-samples.json"}
	start := time.Now()
	wf, err := e.tmp.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "quota-ticket-" + e.tenant, TaskQueue: e.queue},
		workflows.QuotaWatchWorkflowType, in)
	if err != nil {
		t.Fatal(err)
	}
	var st workflows.QuotaWatchState
	var failovers []string
	for i := 2; i <= samples; i++ {
		name := fmt.Sprintf("sample-%d", i)
		e.hooks.WaitHeld(ctx, name, peertest.WorkflowEnded(ctx, e.tmp.Client, wf.GetID()))
		hs, err := e.s.Failover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := hs.Active()
		failovers = append(failovers, fmt.Sprintf("before sample %d at %v: %s active", i, time.Since(start).Round(time.Second), a.ID))
		e.hooks.Release(name)
	}
	if err := wf.Get(ctx, &st); err != nil {
		t.Fatalf("quota watch after %v (%v): %v", time.Since(start).Round(time.Second), failovers, err)
	}
	took := time.Since(start)
	if st.SamplesTaken != samples || len(st.Tenants) != 1 || len(st.Tenants[0].Samples) != samples || st.LastError != "" {
		t.Fatalf("quota watch took %d samples %+v (last error %q); want %d", st.SamplesTaken, st.Tenants, st.LastError, samples)
	}
	if took <= lifetime || len(failovers) != samples-1 {
		t.Fatalf("the watch took %v with failovers %v; want longer than the %v tickets and %d failovers", took, failovers, lifetime, samples-1)
	}
	data, err := e.check.ReadFile(ctx, in.SamplesPath, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var doc capacity.QuotaSamplesDoc
	if err := json.Unmarshal(data, &doc); err != nil || len(doc.Tenants) != 1 || len(doc.Tenants[0].Samples) != samples {
		t.Fatalf("samples on ns1: %v %s", err, data)
	}
	t.Logf("%d samples over %v with %v tickets; failovers %s", samples, took.Round(time.Second), lifetime, strings.Join(failovers, "; "))
}
