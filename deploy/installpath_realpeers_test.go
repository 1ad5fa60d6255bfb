//go:build realpeers

package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/kube"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/workerproc"
)

// TestInstallPathAsDocumented follows docs/install.md ("The path, step by
// step") and then docs/first-window-own-cluster.md, running each page's
// shell blocks as written, in order, in one shell session, on a fleet the
// sandbox stands up beforehand: two tenant namespaces, each with a native
// Flink cluster in the kube-apiserver whose REST endpoint is a real
// sandbox cluster (one plain, one with REST SSL and mutual
// authentication), and HDFS roots that Flink's user owns.
//
// What stands in for a real cluster: step 0's values are the sandbox's;
// the user's own PEM file names in step 4 are the TLS cluster's; the job
// picked on the first-window page is the test's; hdfs, kubectl and helm
// are the stand-ins of installpath_shims_realpeers_test.go (no kubelet:
// pods run as processes with the pod's environment and volumes; no
// cluster DNS: a values file with the REST addresses). The worker is
// started from the Deployment the chart installed, as the kubelet would,
// with the ServiceAccount's identity, so the RBAC and HDFS rights are
// exactly what the pages grant: the worker is a non-superuser HDFS user
// with only the documented ACLs.
//
// Then a second release, as a staging install would be, beside the first.
func TestInstallPathAsDocumented(t *testing.T) {
	root, err := sandbox.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	peers := sandbox.RequirePeers(t)
	ssl := sandbox.RequireSSLCluster(t)
	kc, cs, _ := sandbox.RequireFlinkKube(t)
	tmp := sandbox.StartTemporal(t, temporal.SearchAttributes{}) // step 1 creates the namespace and the search attributes
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	for _, tool := range []string{"helm", "temporal"} {
		if _, err := os.Stat(filepath.Join(root, "bin", tool)); err != nil {
			t.Fatalf("bin/%s: %v (make test builds it)", tool, err)
		}
	}

	sfx := peertest.RandomHex(3)
	fmNS, stagingNS := "fmdoc-"+sfx, "fmdoc-"+sfx+"-staging"
	nsPlain, nsTLS := "fmdoc-"+sfx+"-a", "fmdoc-"+sfx+"-tls"
	idPlain, idTLS := "fmdoc-a-"+sfx, "fmdoc-tls-"+sfx
	hdfsBase := "/flinkmaint-test/install-" + sfx
	rootPlain, rootTLS := peers.HDFS.URI+hdfsBase+"/tenants/a", peers.HDFS.URI+hdfsBase+"/tenants/tls"
	const hdfsUser = "fmworker" // not the NameNode's superuser, in no group
	jobName := "fmdoc-" + sfx
	helm := filepath.Join(root, "bin", "helm")
	uninstall := func(release, ns string) {
		_ = exec.Command(helm, "uninstall", release, "--namespace", ns, "--kubeconfig", kc.Kubeconfig, "--wait=false").Run()
	}
	// Releases of an interrupted run would hold the cluster-scoped names.
	if out, err := exec.Command(helm, "list", "--all-namespaces", "--kubeconfig", kc.Kubeconfig, "-o", "json").Output(); err == nil {
		var releases []struct{ Name, Namespace string }
		_ = json.Unmarshal(out, &releases)
		for _, r := range releases {
			if (r.Name == "flinkmaint" || r.Name == "flinkmaint-staging") && strings.HasPrefix(r.Namespace, "fmdoc-") {
				uninstall(r.Name, r.Namespace)
			}
		}
	}
	t.Cleanup(func() {
		uninstall("flinkmaint", fmNS)
		uninstall("flinkmaint-staging", stagingNS)
		for _, ns := range []string{fmNS, stagingNS, nsPlain, nsTLS} {
			_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		}
		_, _ = peers.HadoopShell(context.Background(), "-rm", "-r", "-f", hdfsBase)
	})

	// The fleet before flinkmaint. Each tenant's root holds its state,
	// owned by Flink's user (the NameNode's superuser here).
	for _, r := range []string{rootPlain, rootTLS} {
		if _, err := peers.HadoopShell(ctx, "-mkdir", "-p", r+"/checkpoints", r+"/savepoints"); err != nil {
			t.Fatal(err)
		}
	}
	jobArgs := []string{"--job-name", jobName, "--keys", "2000", "--value-bytes", "256", "--rate", "500", "--checkpoint-dir", rootTLS + "/checkpoints"}
	for _, c := range []struct {
		ns, id, root string
		tls          bool
		jobs         []inventory.JobSpec
	}{
		{ns: nsPlain, id: idPlain, root: rootPlain},
		{ns: nsTLS, id: idTLS, root: rootTLS, tls: true, jobs: []inventory.JobSpec{{Name: jobName, Restart: inventory.RestartRecipe{
			Kind: inventory.RestartRESTJarRun, Jar: ssl.SampleJobJar, EntryClass: peers.SampleJob.EntryClass, ProgramArgs: jobArgs}}}},
	} {
		if err := kc.CreateNamespace(ctx, c.ns, nil); err != nil {
			t.Fatal(err)
		}
		conf := map[string]string{"state.checkpoints.dir": c.root + "/checkpoints", "state.savepoints.dir": c.root + "/savepoints"}
		if c.tls {
			conf["security.ssl.rest.enabled"] = "true"
			conf["security.ssl.rest.authentication-enabled"] = "true"
		}
		if err := kc.CreateNativeFlinkCluster(ctx, sandbox.NativeFlinkCluster{Namespace: c.ns, ClusterID: c.id, TaskManagers: 1, FlinkConfig: conf}); err != nil {
			t.Fatal(err)
		}
		if c.jobs != nil {
			annotation, err := json.Marshal(c.jobs)
			if err != nil {
				t.Fatal(err)
			}
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{kube.JobsAnnotation: string(annotation)}}})
			if _, err := cs.AppsV1().Deployments(c.ns).Patch(ctx, c.id, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	tlsClient, err := flink.New(flink.Options{BaseURL: ssl.RESTURL, RequestTimeout: 30 * time.Second,
		TLS: flink.TLSOptions{CAFile: ssl.TLS.CAFile, CertFile: ssl.TLS.CertFile, KeyFile: ssl.TLS.KeyFile}})
	if err != nil {
		t.Fatal(err)
	}
	jarID, err := tlsClient.UploadJar(ctx, ssl.SampleJobJar)
	if err != nil {
		t.Fatal(err)
	}
	started, err := tlsClient.RunJar(ctx, jarID, flink.RunJarRequest{EntryClass: peers.SampleJob.EntryClass, ProgramArgs: jobArgs})
	_ = tlsClient.DeleteJar(ctx, jarID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancelJobsNamed(tlsClient, jobName) })
	peertest.WaitForCheckpoint(t, ctx, tlsClient, started.JobID)

	// The shell: the tools on PATH, the admin's kubeconfig, a work dir
	// holding the chart where the pages expect it (deploy/helm/flinkmaint).
	work := t.TempDir()
	binDir, podsDir := filepath.Join(work, "bin"), filepath.Join(work, "pods")
	for _, d := range []string{binDir, podsDir, filepath.Join(work, "home"), filepath.Join(work, "run")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "deploy"), filepath.Join(work, "run", "deploy")); err != nil {
		t.Fatal(err)
	}
	buildCLI(t, root, filepath.Join(binDir, "flinkmaint"))
	if err := os.Symlink(filepath.Join(root, "bin", "temporal"), filepath.Join(binDir, "temporal")); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"hdfs", "kubectl", "helm"} {
		script := fmt.Sprintf("#!/bin/sh\n%s=%s exec %q \"$@\"\n", shimEnv, tool, self)
		if err := os.WriteFile(filepath.Join(binDir, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	network := filepath.Join(work, "cluster-dns-values.yaml")
	writeFile(t, network, fmt.Sprintf("config:\n  inventory:\n    kubernetes:\n      restOverrides:\n        %s/%s: %s\n        %s/%s: %s\n",
		nsPlain, idPlain, peers.Clusters[0].RESTURL, nsTLS, idTLS, ssl.RESTURL))
	sh := &docShell{t: t, dir: filepath.Join(work, "run"), state: filepath.Join(work, "state.sh")}
	writeFile(t, sh.state, strings.Join([]string{
		"export PATH=" + binDir + ":/usr/bin:/bin",
		"export HOME=" + filepath.Join(work, "home"),
		"export KUBECONFIG=" + kc.Kubeconfig,
		"export " + shimRepoEnv + "=" + root,
		"export " + shimHelmEnv + "=" + helm,
		"export " + shimNetworkValuesEnv + "=" + network,
		"export " + shimPodsEnv + "=" + podsDir,
		"export " + shimPodPathEnv + "=" + binDir + ":/usr/bin:/bin",
		"",
	}, "\n"))

	steps := docBlocks(t, filepath.Join(root, "docs", "install.md"), "## The path, step by step")
	byMarker := func(marker string) string {
		t.Helper()
		var found []string
		for _, b := range steps {
			if strings.Contains(b, marker) {
				found = append(found, b)
			}
		}
		if len(found) != 1 {
			t.Fatalf("install.md's path has %d blocks with %q; want one", len(found), marker)
		}
		return found[0]
	}
	step0 := byMarker("export FM_NS=")
	want := map[string]string{
		"FM_NS":              fmNS,
		"TEMPORAL_ADDRESS":   tmp.HostPort,
		"TEMPORAL_NAMESPACE": fmNS,
		"FM_HDFS_USER":       hdfsUser,
		"FM_TENANTS":         nsPlain + "=" + rootPlain + " " + nsTLS + "=" + rootTLS,
		"FM_STATE":           peers.HDFS.URI + hdfsBase + "/flinkmaint",
	}
	sh.run("step 0: name your fleet", replaceExports(t, step0, want))
	sh.run("step 1: Temporal", byMarker("temporal operator namespace create"))
	sh.run("step 2: HDFS", byMarker("hdfs dfs -setfacl"))
	sh.run("step 4: NetworkPolicy", byMarker("kind: NetworkPolicy"))
	sh.run("step 4: REST TLS", replaceExports(t, byMarker("create secret generic"),
		map[string]string{"FM_REST_CA": ssl.TLS.CAFile, "FM_REST_CERT": ssl.TLS.CertFile, "FM_REST_KEY": ssl.TLS.KeyFile}))
	install := byMarker("helm install flinkmaint ")
	sh.run("step 5: helm install", install)
	if n := len(steps); n != 8 {
		t.Fatalf("install.md's path has %d shell blocks; this test runs 8 (steps 0, 1, 2, 4, 4 with TLS, 5, 6, 7)", n)
	}

	// Step 4's policy admits the worker's pods to the JobManagers' REST
	// port, and only to them (the sandbox has no network plugin to
	// enforce it: its selectors are checked against the pods).
	workerPods, err := cs.AppsV1().Deployments(fmNS).Get(ctx, "flinkmaint-worker", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{nsPlain, nsTLS} {
		np, err := cs.NetworkingV1().NetworkPolicies(ns).Get(ctx, "allow-flinkmaint-to-flink-rest", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(&np.Spec.PodSelector)})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Labels["component"] != "jobmanager" {
				t.Errorf("%s: the policy selects pod %s (%v), not a JobManager", ns, p.Name, p.Labels)
			}
		}
		if len(pods.Items) == 0 {
			t.Errorf("%s: the policy selects no JobManager pod", ns)
		}
		from := np.Spec.Ingress[0].From[0]
		nsSel, _ := metav1.LabelSelectorAsSelector(from.NamespaceSelector)
		podSel, _ := metav1.LabelSelectorAsSelector(from.PodSelector)
		fmNamespace, err := cs.CoreV1().Namespaces().Get(ctx, fmNS, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !nsSel.Matches(labels.Set(fmNamespace.Labels)) || !podSel.Matches(labels.Set(workerPods.Spec.Template.Labels)) {
			t.Errorf("%s: the policy admits %v from %v, not the worker's pods %v in %s", ns, from.PodSelector, from.NamespaceSelector, workerPods.Spec.Template.Labels, fmNS)
		}
	}

	// The kubelet's part: the worker of the Deployment the chart made.
	worker := startWorkerPod(t, ctx, cs, kc, fmNS, "flinkmaint-worker", podsDir, binDir)
	tc, err := client.Dial(client.Options{HostPort: tmp.HostPort, Namespace: fmNS})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	worker.AwaitPolling(ctx, tc, "flinkmaint")

	doctor := sh.run("step 6: helm test and doctor", byMarker("helm test flinkmaint"))
	for _, bad := range []string{"FAIL", "WARN"} {
		if strings.Contains(doctor, bad) {
			t.Fatalf("doctor reports %s:\n%s", bad, doctor)
		}
	}
	for _, check := range []string{"kubernetes access", "storage", "flink"} {
		if !strings.Contains(doctor, check) {
			t.Errorf("doctor's output lacks the %q check:\n%s", check, doctor)
		}
	}
	inv := sh.run("step 7: inventory", byMarker("flinkmaint inventory"))
	for _, w := range []string{idPlain, idTLS, jobName, "RUNNING", rootTLS + "/savepoints"} {
		if !strings.Contains(inv, w) {
			t.Errorf("inventory lacks %q:\n%s", w, inv)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// The first window: one job, on the TLS cluster.
	first := docBlocks(t, filepath.Join(root, "docs", "first-window-own-cluster.md"), "")
	if len(first) != 4 {
		t.Fatalf("first-window-own-cluster.md has %d shell blocks; this test runs 4 (pick, write, plan and run, report)", len(first))
	}
	sh.run("pick one job", replaceExports(t, first[0], map[string]string{"FM_TENANT": nsTLS, "FM_JOB": jobName}))
	sh.run("write the window file", first[1])
	run := sh.run("plan it, then run it", first[2])
	report := sh.run("read the report", first[3])
	if !strings.Contains(strings.ToLower(run+report), "completed") {
		t.Fatalf("the first window did not complete:\n%s\n%s", run, report)
	}
	restarted := runningJobNamed(t, ctx, tlsClient, jobName)
	if restarted == started.JobID {
		t.Fatalf("job %s still runs as %s: the window did not restart it", jobName, started.JobID)
	}
	stats, err := tlsClient.Checkpoints(ctx, restarted)
	if err != nil {
		t.Fatal(err)
	}
	if r := stats.Latest.Restored; r == nil || !strings.HasPrefix(r.ExternalPath, rootTLS+"/savepoints/") {
		t.Fatalf("the restarted job %s restored from %+v; want a savepoint under %s/savepoints", restarted, stats.Latest.Restored, rootTLS)
	}

	// The ACL step's default ACL reaches what Flink created after it:
	// the worker's user writes and deletes in the restarted job's dir.
	hc, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{peers.HDFS.NameNode}, User: hdfsUser})
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	probe := strings.TrimPrefix(rootTLS, peers.HDFS.URI) + "/checkpoints/" + restarted + "/acl-probe"
	if err := hc.CreateEmptyFile(probe); err != nil {
		t.Fatalf("as %s, create %s in a dir Flink made after the ACLs were set: %v", hdfsUser, probe, err)
	}
	if err := hc.Remove(probe); err != nil {
		t.Fatalf("as %s, remove %s: %v", hdfsUser, probe, err)
	}

	// rbac.profile windows: the chart grants no delete verb and tells the
	// worker so; the restarted worker's doctor checks only what windows
	// use, and stays green.
	sh.run("rbac.profile windows", `helm upgrade flinkmaint deploy/helm/flinkmaint --namespace "$FM_NS" --reuse-values --set rbac.profile=windows`)
	role, err := cs.RbacV1().ClusterRoles().Get(ctx, "flinkmaint-worker-tenant", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range role.Rules {
		for _, v := range r.Verbs {
			if v == "delete" || v == "patch" || v == "create" {
				t.Fatalf("rbac.profile windows: the tenant role grants %s on %v", v, r.Resources)
			}
		}
	}
	worker.Stop()
	worker = startWorkerPod(t, ctx, cs, kc, fmNS, "flinkmaint-worker", podsDir, binDir)
	worker.AwaitPolling(ctx, tc, "flinkmaint")
	windowsDoctor := sh.run("helm test with rbac.profile windows", `helm test flinkmaint --namespace "$FM_NS" --logs`)
	if !strings.Contains(windowsDoctor, "rbacProfile windows (no delete verb)") || strings.Contains(windowsDoctor, "FAIL") {
		t.Fatalf("doctor with rbac.profile windows:\n%s", windowsDoctor)
	}

	// A second release, as a staging install beside the first: the same
	// step 5 with its own namespace and release name.
	staging := strings.Replace(install, "helm install flinkmaint ", "helm install flinkmaint-staging ", 1)
	sh.run("a second release", "export FM_NS="+stagingNS+"\n"+staging)
	for _, name := range []string{"flinkmaint-worker-tenant", "flinkmaint-staging-worker-tenant"} {
		if _, err := cs.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("ClusterRole %s: %v", name, err)
		}
	}
	for _, ns := range []string{nsPlain, nsTLS} {
		rbs, err := cs.RbacV1().RoleBindings(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var roles []string
		for _, rb := range rbs.Items {
			roles = append(roles, rb.RoleRef.Name)
		}
		sort.Strings(roles)
		if strings.Join(roles, ",") != "flinkmaint-staging-worker-tenant,flinkmaint-worker-tenant" {
			t.Errorf("namespace %s binds %v; want each release's tenant role", ns, roles)
		}
	}
}

// docShell runs shell blocks one after the other as one session: each
// block starts from the variables the previous ones exported.
type docShell struct {
	t     *testing.T
	dir   string
	state string
}

func (s *docShell) run(name, block string) string {
	s.t.Helper()
	script := "set -eo pipefail\n. " + s.state + "\n" + block + "\nexport -p > " + s.state + ".next\n"
	cmd := exec.Command("/bin/bash", "-c", script)
	cmd.Dir = s.dir
	cmd.Env = []string{}
	out, err := cmd.CombinedOutput()
	s.t.Logf("%s:\n%s", name, out)
	if err != nil {
		s.t.Fatalf("%s: %v\n--- block ---\n%s\n--- output ---\n%s", name, err, block, out)
	}
	if err := os.Rename(s.state+".next", s.state); err != nil {
		s.t.Fatal(err)
	}
	return string(out)
}

// docBlocks are the ```sh blocks of a page, from the heading on (to the
// next heading of its level), or of the whole page when heading is "".
func docBlocks(t *testing.T, page, heading string) []string {
	t.Helper()
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if heading != "" {
		i := strings.Index(text, "\n"+heading+"\n")
		if i < 0 {
			t.Fatalf("%s has no heading %q", page, heading)
		}
		text = text[i+len(heading)+2:]
		if j := strings.Index(text, "\n"+strings.SplitN(heading, " ", 2)[0]+" "); j >= 0 {
			text = text[:j]
		}
	}
	var blocks []string
	for _, part := range strings.Split(text, "\n```sh\n")[1:] {
		end := strings.Index(part, "\n```\n")
		if end < 0 {
			t.Fatalf("%s: a ```sh block is not closed", page)
		}
		blocks = append(blocks, part[:end])
	}
	return blocks
}

var exportLine = regexp.MustCompile(`^export ([A-Z_]+=\S*)( [A-Z_]+=\S*)*`)

// replaceExports gives the variables a block exports the values of this
// fleet: the block must export exactly the names of values, on lines of
// their own, as a reader would edit them.
func replaceExports(t *testing.T, block string, values map[string]string) string {
	t.Helper()
	seen := map[string]bool{}
	lines := strings.Split(block, "\n")
	for i, line := range lines {
		m := exportLine.FindString(line)
		if m == "" {
			continue
		}
		var parts []string
		for _, kv := range strings.Fields(strings.TrimPrefix(m, "export ")) {
			name, _, _ := strings.Cut(kv, "=")
			v, ok := values[name]
			if !ok {
				t.Fatalf("the block exports %s, which this test does not set:\n%s", name, block)
			}
			seen[name] = true
			parts = append(parts, name+"="+shellQuote(v))
		}
		lines[i] = "export " + strings.Join(parts, " ")
	}
	for name := range values {
		if !seen[name] {
			t.Fatalf("the block no longer exports %s:\n%s", name, block)
		}
	}
	return strings.Join(lines, "\n")
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func buildCLI(t *testing.T, root, out string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, "./starter")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./starter: %v\n%s", err, b)
	}
}

// startWorkerPod runs the worker container of a Deployment as the kubelet
// would (preparePod), with the credentials a pod of its ServiceAccount
// has: a kubeconfig acting as that ServiceAccount. Its listener takes a
// free port: a pod has its own network namespace.
func startWorkerPod(t *testing.T, ctx context.Context, cs kubernetes.Interface, kc *sandbox.Kube, ns, name, podsDir, binDir string) *workerproc.Process {
	t.Helper()
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := preparePod(ctx, cs, ns, d.Spec.Template.Spec, podsDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.command) != 2 || p.command[0] != "--config" {
		t.Fatalf("the worker container runs %v; want --config <file>", p.command)
	}
	sa := d.Spec.Template.Spec.ServiceAccountName
	raw, err := clientcmd.LoadFromFile(kc.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range raw.AuthInfos {
		ai.Impersonate = "system:serviceaccount:" + ns + ":" + sa
		ai.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	}
	kubeconfig := filepath.Join(p.root, "serviceaccount.kubeconfig")
	if err := clientcmd.WriteToFile(*raw, kubeconfig); err != nil {
		t.Fatal(err)
	}
	env := append([]string{"PATH=" + binDir + ":/usr/bin:/bin", "HOME=" + p.root, "KUBECONFIG=" + kubeconfig,
		"FLINKMAINT_HTTP_LISTEN=127.0.0.1:0"}, p.env...)
	w := workerproc.New(t, workerproc.Build(t), p.command[1], filepath.Join(p.root, "worker.log")).WithEnv(env)
	w.Start()
	return w
}

func cancelJobsNamed(c *flink.Client, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	jobs, err := c.ListJobs(ctx)
	if err != nil {
		return
	}
	for _, j := range jobs {
		if j.Name == name && j.State == flink.JobRunning {
			_ = c.CancelJob(ctx, j.ID)
		}
	}
}

func runningJobNamed(t *testing.T, ctx context.Context, c *flink.Client, name string) string {
	t.Helper()
	jobs, err := c.ListJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range jobs {
		if j.Name == name && j.State == flink.JobRunning {
			ids = append(ids, j.ID)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("%d running jobs named %s: %v; want one", len(ids), name, ids)
	}
	return ids[0]
}
