//go:build realpeers

// Package deploy's tests install what deploy/ ships as a platform engineer
// would: the Helm chart with each documented values file and the kustomize
// base, rendered by the pinned tools (bin/helm, bin/kustomize, built from
// tools/deploy), applied with a server-side dry run to the sandbox
// kube-apiserver, and the worker run on each rendered configuration.
package deploy

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"
	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/workerproc"
)

// prometheusOperator is the module whose CRDs (example/prometheus-operator-crd)
// the apiserver gets, for the ServiceMonitor and PrometheusRule.
const prometheusOperator = "github.com/prometheus-operator/prometheus-operator@v0.85.0"

type rendering struct {
	name    string
	objects []*unstructured.Unstructured
	// waits: the worker started on this configuration must only wait for
	// the Temporal and HDFS it names, not stop (the defaults).
	waits bool
}

func TestChartAndKustomizeApplyOnTheRealAPIServer(t *testing.T) {
	root, err := sandbox.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	kube := sandbox.RequireKube(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := kube.InstallCRDsFrom(ctx, prometheusOperatorCRDs(t, root)); err != nil {
		t.Fatal(err)
	}
	if err := kube.InstallFlinkCRDs(ctx); err != nil {
		t.Fatal(err)
	}

	chart := filepath.Join(root, "deploy", "helm", "flinkmaint")
	renders := []rendering{{name: "chart with its default values", waits: true,
		objects: render(t, root, "helm", "template", "flinkmaint", chart, "--namespace", chartNamespace)}}
	valueFiles, err := filepath.Glob(filepath.Join(chart, "ci", "*-values.yaml"))
	if err != nil || len(valueFiles) == 0 {
		t.Fatalf("no values files in %s/ci (%v)", chart, err)
	}
	for _, f := range append([]string{""}, valueFiles...) {
		args := []string{"lint", "--strict", chart}
		if f != "" {
			args = append(args, "-f", f)
		}
		if out, err := exec.Command(filepath.Join(root, "bin", "helm"), args...).CombinedOutput(); err != nil {
			t.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, f := range valueFiles {
		renders = append(renders, rendering{name: "chart with ci/" + filepath.Base(f),
			objects: render(t, root, "helm", "template", "flinkmaint", chart, "--namespace", chartNamespace, "-f", f)})
	}
	// The windows RBAC profile, and an inventory that selects its
	// namespaces by label (the chart then grants listing them).
	secure := filepath.Join(chart, "ci", "secure-values.yaml")
	renders = append(renders,
		rendering{name: "chart with ci/secure-values.yaml and rbac.profile windows",
			objects: render(t, root, "helm", "template", "flinkmaint", chart, "--namespace", chartNamespace, "-f", secure,
				"--set", "rbac.profile=windows", "--set-json", "rbac.restoreNamespaces=[]")},
		rendering{name: "chart with ci/secure-values.yaml and a namespace selector",
			objects: render(t, root, "helm", "template", "flinkmaint", chart, "--namespace", chartNamespace, "-f", secure,
				"--set", "config.inventory.kubernetes.namespaces=null", "--set", "config.inventory.kubernetes.namespaceSelector=flinkmaint.io/tenant=true",
				"--set", "rbac.tenantNamespaces={team-a,team-b}")})
	// A second release beside the first, as a staging install would be.
	renders = append(renders, rendering{name: "chart as release flinkmaint-staging with ci/secure-values.yaml",
		objects: render(t, root, "helm", "template", "flinkmaint-staging", chart, "--namespace", chartNamespace, "-f", secure)})
	renders = append(renders,
		rendering{name: "kustomize base", waits: true, objects: render(t, root, "kustomize", "build", filepath.Join(root, "deploy", "kustomize", "base"))},
		rendering{name: "kustomize monitoring", objects: render(t, root, "kustomize", "build", filepath.Join(root, "deploy", "monitoring"))},
		rendering{name: "kustomize staging overlay", objects: render(t, root, "kustomize", "build", filepath.Join(root, "deploy", "kustomize", "staging"))})

	worker := workerproc.Build(t)
	for _, r := range renders {
		t.Run(r.name, func(t *testing.T) {
			applyDryRun(t, ctx, kube, r.objects)
			if dep := findKind(t, r.objects, "Deployment"); dep != nil {
				checkAvailability(t, r.objects, dep)
				cfg := workerConfig(t, r.objects, dep)
				checkConfig(t, worker, kube, cfg)
				if r.waits {
					waitsForWhatIsMissing(t, worker, kube, cfg)
				}
			}
		})
	}

	// A changed configuration changes the pod template, so the Deployment
	// rolls: the worker reads its configuration only at start.
	t.Run("a changed configuration rolls the pods", func(t *testing.T) {
		checksum := func(objs []*unstructured.Unstructured) string {
			dep := findObject(objs, "Deployment", "flinkmaint-worker")
			if dep == nil {
				t.Fatal("no Deployment rendered")
			}
			sum, _, _ := unstructured.NestedString(dep.Object, "spec", "template", "metadata", "annotations", "checksum/config")
			return sum
		}
		same := render(t, root, "helm", "template", "flinkmaint", chart, "--namespace", chartNamespace)
		changed := render(t, root, "helm", "template", "flinkmaint", chart, "--namespace", chartNamespace, "--set", "config.log.level=debug")
		if a, b, c := checksum(renders[0].objects), checksum(same), checksum(changed); a == "" || a != b || a == c {
			t.Errorf("checksum/config %q, again %q, with log.level=debug %q: want one per configuration", a, b, c)
		}
	})

	// Two releases in one cluster, applied for real (not a dry run) each by
	// its own field manager and without forcing: an object both rendered
	// would be a conflict on the second. Their objects are removed again.
	t.Run("two releases apply side by side", func(t *testing.T) {
		ns := "flinkmaint-sidebyside"
		for _, release := range []string{"flinkmaint-sidebyside", "flinkmaint-sidebyside-staging"} {
			objs := render(t, root, "helm", "template", release, chart, "--namespace", ns, "-f", filepath.Join(chart, "ci", "secure-values.yaml"))
			applyObjects(t, ctx, kube, objs, release, false)
		}
	})
}

// prometheusOperatorCRDs downloads the operator's module (Go's module
// cache keeps it) and returns a directory of the two CRDs the monitoring
// objects need.
func prometheusOperatorCRDs(t *testing.T, root string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", prometheusOperator)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v\n%s", prometheusOperator, err, out)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download %s: %v %s", prometheusOperator, err, mod.Error)
	}
	dir := t.TempDir()
	for _, kind := range []string{"servicemonitors", "prometheusrules"} {
		data, err := os.ReadFile(filepath.Join(mod.Dir, "example", "prometheus-operator-crd", "monitoring.coreos.com_"+kind+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		// The file starts with a document separator; one document each.
		data = bytes.TrimPrefix(bytes.TrimLeft(data, "\n"), []byte("---\n"))
		if err := os.WriteFile(filepath.Join(dir, kind+".yaml"), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// applyDryRun creates the namespaces the objects live in (a dry run needs
// them to exist) and applies every object server-side with dryRun=All: the
// apiserver validates each against its schema, CRDs included, and admits it.
func applyDryRun(t *testing.T, ctx context.Context, kube *sandbox.Kube, objs []*unstructured.Unstructured) {
	t.Helper()
	applyObjects(t, ctx, kube, objs, "flinkmaint-deploy-test", true)
}

// applyObjects applies every object server-side as the field manager. A
// dry run forces (it only validates); a real apply does not, so an object
// another manager applied is a conflict, and it is deleted when the test
// ends.
func applyObjects(t *testing.T, ctx context.Context, kube *sandbox.Kube, objs []*unstructured.Unstructured, manager string, dryRun bool) {
	t.Helper()
	dyn, err := kube.Dynamic()
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	for _, o := range objs {
		if ns := o.GetNamespace(); ns != "" {
			if err := kube.CreateNamespace(ctx, ns, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Errorf("%s %s: the apiserver serves no such kind: %v", gvk, o.GetName(), err)
			continue
		}
		opts := metav1.ApplyOptions{FieldManager: manager}
		if dryRun {
			opts.Force, opts.DryRun = true, []string{metav1.DryRunAll}
		}
		res := dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		if _, err := res.Apply(ctx, o.GetName(), o, opts); err != nil {
			t.Errorf("apply %s %s/%s as %s (dry run %t): %v", gvk.Kind, o.GetNamespace(), o.GetName(), manager, dryRun, err)
			continue
		}
		if !dryRun {
			name := o.GetName()
			t.Cleanup(func() {
				if err := res.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("delete %s %s/%s: %v", gvk.Kind, o.GetNamespace(), name, err)
				}
			})
		}
	}
}

// checkAvailability checks what keeps the worker pods available and
// reachable only where they must be: a disruption budget over their labels
// that a drain can always satisfy, even when no pod is ready (a Temporal
// outage); replicas spread over nodes and zones; a NetworkPolicy over them.
func checkAvailability(t *testing.T, objs []*unstructured.Unstructured, o *unstructured.Unstructured) {
	t.Helper()
	var dep appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &dep); err != nil {
		t.Fatal(err)
	}
	pods := labels.Set(dep.Spec.Template.Labels)
	selects := func(sel *metav1.LabelSelector) bool {
		s, err := metav1.LabelSelectorAsSelector(sel)
		return err == nil && !s.Empty() && s.Matches(pods)
	}
	var budgets, policies int
	for _, x := range objs {
		switch x.GetKind() {
		case "PodDisruptionBudget":
			var pdb policyv1.PodDisruptionBudget
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(x.Object, &pdb); err != nil {
				t.Fatal(err)
			}
			if !selects(pdb.Spec.Selector) {
				continue
			}
			budgets++
			if p := ptr.Deref(pdb.Spec.UnhealthyPodEvictionPolicy, "unset"); p != policyv1.AlwaysAllow {
				t.Errorf("PodDisruptionBudget %s: unhealthyPodEvictionPolicy %s; want AlwaysAllow, or a Temporal outage blocks every drain", pdb.Name, p)
			}
			if m := pdb.Spec.MinAvailable; m == nil || m.IntValue() < 1 || dep.Spec.Replicas == nil || int32(m.IntValue()) >= *dep.Spec.Replicas {
				t.Errorf("PodDisruptionBudget %s: minAvailable %v with %v replicas; want at least one and fewer than the replicas", pdb.Name, m, dep.Spec.Replicas)
			}
		case "NetworkPolicy":
			var np networkingv1.NetworkPolicy
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(x.Object, &np); err != nil {
				t.Fatal(err)
			}
			if selects(&np.Spec.PodSelector) {
				policies++
			}
		}
	}
	if budgets != 1 || policies != 1 {
		t.Errorf("%d disruption budgets and %d network policies select the worker pods %v; want one each", budgets, policies, pods)
	}
	keys := map[string]bool{}
	for _, c := range dep.Spec.Template.Spec.TopologySpreadConstraints {
		if selects(c.LabelSelector) {
			keys[c.TopologyKey] = true
		}
	}
	if !keys["kubernetes.io/hostname"] || !keys["topology.kubernetes.io/zone"] {
		t.Errorf("the worker pods spread over %v; want nodes and zones", keys)
	}
}

// findKind finds the one object of a kind, or nil; two fail the test.
func findKind(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	var found *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			if found != nil {
				t.Fatalf("two %ss rendered: %s and %s", kind, found.GetName(), o.GetName())
			}
			found = o
		}
	}
	return found
}

// renderedConfig is the worker's configuration as a pod would see it,
// its mounts moved under a local directory.
type renderedConfig struct {
	path string            // worker.yaml
	env  map[string]string // what the pod's env gives from Secrets
}

// workerConfig finds the worker.yaml the Deployment's pods read and
// checks that every file it names lies in a volume the worker container
// mounts (a required one: a missing Secret must keep the pod from
// starting, not start a worker that cannot read its files). It writes the
// configuration under a local root with a stand-in for each such file.
func workerConfig(t *testing.T, objs []*unstructured.Unstructured, o *unstructured.Unstructured) renderedConfig {
	t.Helper()
	var dep appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &dep); err != nil {
		t.Fatal(err)
	}
	spec := dep.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("Deployment has %d containers, want the worker alone", len(spec.Containers))
	}
	c := spec.Containers[0]
	if len(c.Args) != 2 || c.Args[0] != "--config" {
		t.Fatalf("worker args %v: want --config <file>", c.Args)
	}
	volumes := map[string]int{}
	for i, v := range spec.Volumes {
		volumes[v.Name] = i
	}
	local := t.TempDir()
	var mounts []string
	mountOf := func(path string) (mountPath string, optional bool, ok bool) {
		best := ""
		for _, m := range c.VolumeMounts {
			if (path == m.MountPath || strings.HasPrefix(path, m.MountPath+"/")) && len(m.MountPath) > len(best) {
				best = m.MountPath
				v := spec.Volumes[volumes[m.Name]]
				optional = v.Secret != nil && v.Secret.Optional != nil && *v.Secret.Optional ||
					v.ConfigMap != nil && v.ConfigMap.Optional != nil && *v.ConfigMap.Optional
				if m.SubPath != "" {
					t.Errorf("volume %s is mounted with subPath %s: a changed ConfigMap or Secret would never reach the pod", m.Name, m.SubPath)
				}
			}
		}
		return best, optional, best != ""
	}
	for _, m := range c.VolumeMounts {
		mounts = append(mounts, m.MountPath)
	}
	// The configuration file itself comes from the ConfigMap of the config volume.
	cfgMount, _, ok := mountOf(c.Args[1])
	if !ok {
		t.Fatalf("the worker reads %s, which no volume mounts", c.Args[1])
	}
	var body string
	for _, m := range c.VolumeMounts {
		if m.MountPath != cfgMount {
			continue
		}
		v := spec.Volumes[volumes[m.Name]]
		if v.ConfigMap == nil {
			t.Fatalf("volume %s at %s is not a ConfigMap", m.Name, cfgMount)
		}
		cm := findObject(objs, "ConfigMap", v.ConfigMap.Name)
		if cm == nil {
			t.Fatalf("the Deployment mounts ConfigMap %s, which is not rendered", v.ConfigMap.Name)
		}
		body, _, _ = unstructured.NestedString(cm.Object, "data", filepath.Base(c.Args[1]))
	}
	if body == "" {
		t.Fatalf("ConfigMap at %s has no %s", cfgMount, filepath.Base(c.Args[1]))
	}

	var cfg map[string]any
	if err := sigsyaml.Unmarshal([]byte(body), &cfg); err != nil {
		t.Fatalf("worker.yaml does not parse: %v", err)
	}
	var files []string
	collectPaths(cfg, &files)
	for _, f := range files {
		mp, optional, ok := mountOf(f)
		if !ok {
			t.Errorf("worker.yaml names %s, which no volume of the worker container mounts (mounts: %v)", f, mounts)
			continue
		}
		if optional {
			t.Errorf("worker.yaml names %s in an optional volume at %s: without it the worker would not start", f, mp)
		}
	}
	// Move every mount under the local root, and give each named file
	// a stand-in of its kind.
	// One pass, longest mount first: /tmp must not rewrite a path already
	// moved under the local root.
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	var pairs []string
	for _, m := range mounts {
		pairs = append(pairs, m, filepath.Join(local, m))
	}
	moved := strings.NewReplacer(pairs...)
	body = moved.Replace(body)
	principal, _, _ := unstructured.NestedString(cfg, "storage", "kerberos", "principal")
	for _, f := range files {
		standIn(t, filepath.Join(local, f), principal)
	}
	path := filepath.Join(local, "worker.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			env[e.Name] = "secret-from-" + e.ValueFrom.SecretKeyRef.Name
		case e.ValueFrom == nil && strings.HasPrefix(e.Value, "/"):
			// A file the env names (worker.yaml's TLS files, for the CLI)
			// lies in a mount too, and moves with it.
			if _, _, ok := mountOf(e.Value); !ok {
				t.Errorf("env %s names %s, which no volume of the worker container mounts (mounts: %v)", e.Name, e.Value, mounts)
			}
			env[e.Name] = moved.Replace(e.Value)
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		}
	}
	return renderedConfig{path: path, env: env}
}

// collectPaths gathers the absolute paths of a configuration: files and
// directories a pod must have.
func collectPaths(v any, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			collectPaths(x, out)
		}
	case []any:
		for _, x := range v {
			collectPaths(x, out)
		}
	case string:
		if strings.HasPrefix(v, "/") {
			*out = append(*out, v)
		}
	}
}

// standIn writes what a mounted file of that name holds.
func standIn(t *testing.T, path, principal string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	switch base := filepath.Base(path); {
	case base == "conf": // storage.hadoopConfDir
		if err := os.MkdirAll(path, 0o700); err != nil {
			t.Fatal(err)
		}
		write(filepath.Join(path, "core-site.xml"), `<configuration><property><name>fs.defaultFS</name><value>hdfs://nameservice1</value></property></configuration>`)
		write(filepath.Join(path, "hdfs-site.xml"), `<configuration>
<property><name>dfs.nameservices</name><value>nameservice1</value></property>
<property><name>dfs.ha.namenodes.nameservice1</name><value>nn1,nn2</value></property>
<property><name>dfs.namenode.rpc-address.nameservice1.nn1</name><value>nn1.example.com:8020</value></property>
<property><name>dfs.namenode.rpc-address.nameservice1.nn2</name><value>nn2.example.com:8020</value></property>
<property><name>dfs.namenode.kerberos.principal</name><value>nn/_HOST@EXAMPLE.COM</value></property>
</configuration>`)
	case base == "tls.crt" || base == "ca.crt" || base == "tls.key":
		cert, key := selfSigned(t)
		if base == "tls.key" {
			write(path, key)
		} else {
			write(path, cert)
		}
		// The pair must match: write both halves once.
		dir := filepath.Dir(path)
		write(filepath.Join(dir, "tls.crt"), cert)
		write(filepath.Join(dir, "tls.key"), key)
	case base == "krb5.conf":
		write(path, "[libdefaults]\n  default_realm = EXAMPLE.COM\n[realms]\n  EXAMPLE.COM = {\n    kdc = kdc.example.com:88\n  }\n")
	case base == "keytab":
		// The worker checks the keytab holds a key of its principal.
		name, realm, _ := strings.Cut(principal, "@")
		kt := keytab.New()
		if err := kt.AddEntry(name, realm, "stand-in", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
			t.Fatal(err)
		}
		b, err := kt.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		write(path, string(b))
	case strings.HasSuffix(path, "/url"):
		write(path, "https://hooks.slack.example.com/services/T0/B0/x\n")
	default:
		write(path, "stand-in\n")
	}
}

func selfSigned(t *testing.T) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "flinkmaint-worker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}))
}

// workerEnv is the pod's environment on this machine: the sandbox's
// kubeconfig stands for the in-cluster ServiceAccount.
func workerEnv(kube *sandbox.Kube, cfg renderedConfig) []string {
	env := append(os.Environ(), "KUBECONFIG="+kube.Kubeconfig)
	for k, v := range cfg.env {
		env = append(env, k+"="+v)
	}
	return env
}

// checkConfig runs the worker's own check of the configuration.
func checkConfig(t *testing.T, worker string, kube *sandbox.Kube, cfg renderedConfig) {
	t.Helper()
	cmd := exec.Command(worker, "--check-config", "--config", cfg.path)
	cmd.Env = workerEnv(kube, cfg)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "configuration valid") {
		body, _ := os.ReadFile(cfg.path)
		t.Fatalf("flinkmaint-worker --check-config: %v\n%s\nworker.yaml:\n%s", err, out, body)
	}
}

// waitsForWhatIsMissing starts the worker on the configuration, whose
// Temporal and HDFS do not exist here: it must answer /healthz (a liveness
// probe keeps it) and say on /readyz what it waits for, not exit.
func waitsForWhatIsMissing(t *testing.T, worker string, kube *sandbox.Kube, cfg renderedConfig) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(worker, "--config", cfg.path, "--http-listen", addr, "--log-format", "console")
	cmd.Env = workerEnv(kube, cfg)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	get := func(path string) (int, string, error) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the worker exited (%v) instead of waiting:\n%s", err, logs.String())
		default:
		}
		hc, _, herr := get("/healthz")
		rc, ready, rerr := get("/readyz")
		if herr == nil && rerr == nil && hc == http.StatusOK && rc == http.StatusServiceUnavailable &&
			strings.Contains(ready, "Temporal") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute /healthz %d (%v), /readyz %d %q (%v); want 200 and 503 naming Temporal\n%s",
				hc, herr, rc, ready, errors.Join(rerr), logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
