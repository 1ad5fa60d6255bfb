//go:build realpeers

package kube

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

const workerUser = "system:serviceaccount:flinkmaint:flinkmaint-worker"

// rbacName is the name this run gives a cluster-scoped object of
// deploy/kustomize/rbac: its own, so the shipped names stay free for what
// else installs into the shared apiserver (the Helm chart's release
// flinkmaint makes the same ones), and runs do not share roles.
func rbacName(e *env, name string) string { return name + "-" + e.runs }

// applyRBAC applies deploy/kustomize/rbac (cluster scope, named by
// rbacName) and binds the tenant role in each tenant namespace, as the
// per-tenant overlay does.
func applyRBAC(t *testing.T, e *env, tenantNamespaces ...string) {
	t.Helper()
	root, err := sandbox.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "deploy", "kustomize", "rbac")
	var kust struct {
		Resources []string `json:"resources"`
	}
	readYAML(t, filepath.Join(dir, "kustomization.yaml"), &kust)
	if len(kust.Resources) == 0 {
		t.Fatal("deploy/kustomize/rbac/kustomization.yaml lists no resources")
	}
	for _, file := range kust.Resources {
		path := filepath.Join(dir, file)
		var head metav1.TypeMeta
		readYAML(t, path, &head)
		switch head.Kind {
		case "ClusterRole":
			var cr rbacv1.ClusterRole
			readYAML(t, path, &cr)
			cr.Name = rbacName(e, cr.Name)
			t.Cleanup(func() { _ = e.cs.RbacV1().ClusterRoles().Delete(context.Background(), cr.Name, metav1.DeleteOptions{}) })
			cur, err := e.cs.RbacV1().ClusterRoles().Get(e.ctx, cr.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				_, err = e.cs.RbacV1().ClusterRoles().Create(e.ctx, &cr, metav1.CreateOptions{})
			} else if err == nil {
				cur.Rules = cr.Rules
				_, err = e.cs.RbacV1().ClusterRoles().Update(e.ctx, cur, metav1.UpdateOptions{})
			}
			if err != nil {
				t.Fatalf("apply %s: %v", path, err)
			}
		case "ClusterRoleBinding":
			var crb rbacv1.ClusterRoleBinding
			readYAML(t, path, &crb)
			crb.Name, crb.RoleRef.Name = rbacName(e, crb.Name), rbacName(e, crb.RoleRef.Name)
			t.Cleanup(func() {
				_ = e.cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
			})
			_ = e.cs.RbacV1().ClusterRoleBindings().Delete(e.ctx, crb.Name, metav1.DeleteOptions{})
			if _, err := e.cs.RbacV1().ClusterRoleBindings().Create(e.ctx, &crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("apply %s: %v", path, err)
			}
		default:
			t.Fatalf("%s: unexpected kind %q in the cluster-scope RBAC", path, head.Kind)
		}
	}
	var rb rbacv1.RoleBinding
	readYAML(t, filepath.Join(dir, "tenant", "rolebinding.yaml"), &rb)
	rb.RoleRef.Name = rbacName(e, rb.RoleRef.Name)
	for _, ns := range tenantNamespaces {
		b := rb.DeepCopy()
		b.Namespace = ns
		if _, err := e.cs.RbacV1().RoleBindings(ns).Create(e.ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatalf("bind tenant role in %s: %v", ns, err)
		}
	}
}

// bindRestoreRole binds the optional restore role in ns, as the
// tenant-restore overlay does.
func bindRestoreRole(t *testing.T, e *env, ns string) {
	t.Helper()
	root, err := sandbox.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var rb rbacv1.RoleBinding
	readYAML(t, filepath.Join(root, "deploy", "kustomize", "rbac", "tenant-restore", "rolebinding.yaml"), &rb)
	rb.Namespace, rb.RoleRef.Name = ns, rbacName(e, rb.RoleRef.Name)
	if _, err := e.cs.RbacV1().RoleBindings(ns).Create(e.ctx, &rb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind the restore role in %s: %v", ns, err)
	}
}

// waitAuthorized retries op while the authorizer has not seen a new
// binding yet (it answers Forbidden for a moment).
func waitAuthorized(t *testing.T, op func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := op()
		if err == nil {
			return
		}
		if !errors.Is(err, ErrForbidden) || time.Now().After(deadline) {
			t.Fatalf("as worker with the restore role: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := sigsyaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// asWorker impersonates the worker's ServiceAccount with the groups a
// real token of it carries.
func asWorker(e *env) *rest.Config {
	cfg := rest.CopyConfig(e.k.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: workerUser,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:flinkmaint", "system:authenticated"},
	}
	return cfg
}

// TestRBACLeastPrivilege applies the shipped RBAC and runs every call the
// worker makes as its ServiceAccount: allowed in a bound tenant namespace,
// forbidden for Secrets and outside its namespaces.
func TestRBACLeastPrivilege(t *testing.T) {
	e := newEnv(t)
	label := "flinkmaint.io/rbac-" + e.runs
	tenant := e.ns("rbac-tenant", map[string]string{label: "on"})
	outside := e.ns("rbac-outside", nil)
	applyRBAC(t, e, tenant)

	e.nativeCluster(sandbox.NativeFlinkCluster{Namespace: tenant, ClusterID: "native", TaskManagers: 1, HA: true})
	e.nativeCluster(sandbox.NativeFlinkCluster{Namespace: outside, ClusterID: "other", TaskManagers: 1})
	e.flinkDeployment(tenant, "op", nil, appJob())
	e.setStatus(tenant, "op", map[string]any{"lifecycleState": "STABLE", "jobStatus": map[string]any{"state": "RUNNING"}})
	if _, err := e.cs.CoreV1().Secrets(tenant).Create(e.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "hdfs-keytab"}, StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	op := &fakeOperator{dyn: e.dyn, ns: tenant, name: "op", mode: recordUpgradePath, delay: 100 * time.Millisecond,
		savepoint: "hdfs://nn:8020/sp/savepoint-0p0p0p-000000000001"}
	op.run(e.ctx, t)

	workerCfg := asWorker(e)
	worker := e.client(Config{NamespaceSelector: label + "=on", TenantRootTemplate: "/user/app/{namespace}"}, workerCfg)

	// RBAC changes reach the authorizer's cache within moments; wait for it.
	deadline := time.Now().Add(10 * time.Second)
	var inv []string
	for {
		got, err := worker.Discover(e.ctx)
		if err == nil {
			inv = nil
			for _, c := range got.Clusters {
				inv = append(inv, c.Namespace+"/"+c.ClusterID)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Discover as %s: %v", workerUser, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if strings.Join(inv, ",") != tenant+"/native,"+tenant+"/op" {
		t.Fatalf("worker inventory %v", inv)
	}

	sus, err := worker.Suspend(e.ctx, ref(KindFlinkDeployment, tenant, "op"), fastWait)
	if err != nil {
		t.Fatalf("Suspend as worker: %v", err)
	}
	if _, err := worker.Resume(e.ctx, ref(KindFlinkDeployment, tenant, "op"), sus.SavepointPath, fastWait); err != nil {
		t.Fatalf("Resume as worker: %v", err)
	}

	if err := e.cs.AppsV1().Deployments(tenant).Delete(e.ctx, "native", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	orphans, err := worker.FindOrphans(e.ctx, OrphanInput{})
	if err != nil {
		t.Fatalf("FindOrphans as worker: %v", err)
	}
	if len(orphans) == 0 {
		t.Fatal("no orphans found after deleting the JobManager")
	}
	trashed := map[inventory.ObjectRef][]byte{} // the HA ConfigMaps, as governance trashes them
	for _, o := range orphans {
		if o.Ref.Kind == "ConfigMap" {
			snap, err := worker.ReadOrphan(e.ctx, o.Ref)
			if err != nil {
				t.Fatalf("ReadOrphan %s as worker: %v", o.Ref.Name, err)
			}
			trashed[o.Ref] = snap.JSON
		}
		if err := worker.DeleteOrphan(e.ctx, o.Ref, o.UID, o.ResourceVersion); err != nil {
			t.Fatalf("DeleteOrphan %s as worker: %v", o.Ref.Name, err)
		}
	}
	if len(trashed) == 0 {
		t.Fatal("no HA ConfigMap among the orphans")
	}
	// A restore re-creates them only where the restore role is bound.
	for r, data := range trashed {
		if _, err := worker.RecreateObject(e.ctx, r, data, "rbac-run"); !errors.Is(err, ErrForbidden) {
			t.Fatalf("RecreateObject %s without the restore role: %v; want Forbidden", r.Name, err)
		}
	}
	// The access review (flinkmaint doctor) sees the same: the selector's
	// list, every tenant permission, and only restore's two missing.
	if got := accessSummary(t, e, worker); got != "(cluster): ok; "+tenant+": create configmaps, create flinkstatesnapshots.flink.apache.org" {
		t.Fatalf("access review before the restore role: %s", got)
	}
	bindRestoreRole(t, e, tenant)
	for r, data := range trashed {
		waitAuthorized(t, func() error { _, err := worker.RecreateObject(e.ctx, r, data, "rbac-run"); return err })
	}
	if got := accessSummary(t, e, worker); got != "(cluster): ok; "+tenant+": ok" {
		t.Fatalf("access review with the restore role: %s", got)
	}

	// Governance: the operator's records, and a completed savepoint
	// resource deleted with its savepoint.
	snap := &unstructured.Unstructured{Object: map[string]any{"apiVersion": operatorAPIVersion, "kind": KindFlinkStateSnapshot,
		"metadata": map[string]any{"name": "sp", "namespace": tenant},
		"spec":     map[string]any{"savepoint": map[string]any{}, "jobReference": map[string]any{"kind": KindFlinkDeployment, "name": "op"}}}}
	created, err := e.dyn.Resource(FlinkStateSnapshotGVR).Namespace(tenant).Create(e.ctx, snap, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Object["status"] = map[string]any{"state": "COMPLETED", "path": "hdfs://nn:8020/sp/savepoint-0p0p0p-000000000002"}
	if _, err := e.dyn.Resource(FlinkStateSnapshotGVR).Namespace(tenant).UpdateStatus(e.ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := worker.OperatorRecords(e.ctx, []string{tenant}); err != nil {
		t.Fatalf("OperatorRecords as worker: %v", err)
	}
	sr, _, err := worker.ReadSnapshot(e.ctx, ref(KindFlinkStateSnapshot, tenant, "sp"))
	if err != nil {
		t.Fatalf("ReadSnapshot as worker: %v", err)
	}
	_, spJSON, err := worker.ReadSnapshot(e.ctx, ref(KindFlinkStateSnapshot, tenant, "sp"))
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.DeleteSnapshot(e.ctx, ref(KindFlinkStateSnapshot, tenant, "sp"), sr.UID, sr.ResourceVersion); err != nil {
		t.Fatalf("DeleteSnapshot as worker: %v", err)
	}
	if _, err := worker.RecreateObject(e.ctx, ref(KindFlinkStateSnapshot, tenant, "sp"), spJSON, "rbac-run"); err != nil {
		t.Fatalf("RecreateObject of the snapshot resource as worker: %v", err)
	}

	// What it must not do.
	wcs, err := kubernetes.NewForConfig(workerCfg)
	if err != nil {
		t.Fatal(err)
	}
	forbidden := map[string]error{}
	_, forbidden["get secret in tenant"] = wcs.CoreV1().Secrets(tenant).Get(e.ctx, "hdfs-keytab", metav1.GetOptions{})
	_, forbidden["list secrets in tenant"] = wcs.CoreV1().Secrets(tenant).List(e.ctx, metav1.ListOptions{})
	_, forbidden["create pod in tenant"] = wcs.CoreV1().Pods(tenant).Create(e.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	forbidden["create deployment in tenant"] = func() error {
		_, err := worker.RecreateObject(e.ctx, ref("Deployment", tenant, "native"), []byte(`{}`), "rbac-run")
		if errors.Is(err, ErrNotRecreatable) {
			_, err = wcs.AppsV1().Deployments(tenant).Create(e.ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
		}
		return err
	}()
	_, forbidden["list pods outside"] = wcs.CoreV1().Pods(outside).List(e.ctx, metav1.ListOptions{})
	_, forbidden["create config map outside"] = wcs.CoreV1().ConfigMaps(outside).Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	forbidden["delete deployment outside"] = wcs.AppsV1().Deployments(outside).Delete(e.ctx, "other", metav1.DeleteOptions{})
	_, forbidden["list secrets cluster-wide"] = wcs.CoreV1().Secrets("").List(e.ctx, metav1.ListOptions{})
	for what, err := range forbidden {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s as worker: want Forbidden, got %v", what, err)
		}
	}
	outsideWorker := e.client(Config{Namespaces: []string{outside}, TenantRootTemplate: "/t/{namespace}"}, workerCfg)
	if got, want := accessSummary(t, e, outsideWorker), outside+": "+strings.Join(permissionNames(TenantPermissions), ", "); got != want {
		t.Errorf("access review outside the bound namespaces: %s; want %s", got, want)
	}
	// With rbacProfile windows no delete verb is asked for.
	var windowsNeeds []Permission
	for _, p := range TenantPermissions {
		if !p.Deletes {
			windowsNeeds = append(windowsNeeds, p)
		}
	}
	windowsWorker := e.client(Config{Namespaces: []string{outside}, TenantRootTemplate: "/t/{namespace}", RBACProfile: RBACProfileWindows}, workerCfg)
	if got, want := accessSummary(t, e, windowsWorker), outside+": "+strings.Join(permissionNames(windowsNeeds), ", "); got != want {
		t.Errorf("access review of profile windows outside the bound namespaces: %s; want %s", got, want)
	}
	_, err = outsideWorker.Discover(e.ctx)
	if !errors.Is(err, ErrForbidden) || IsRetryable(err) || !strings.Contains(err.Error(), outside) {
		t.Fatalf("Discover outside scope: want non-retryable ErrForbidden naming %s, got %v", outside, err)
	}
}

// accessSummary runs CheckAccess as the client's identity: "ns: ok" or
// "ns: missing, ..." per namespace, "(cluster)" for the cluster scope.
func accessSummary(t *testing.T, e *env, c *Client) string {
	t.Helper()
	res, err := c.CheckAccess(e.ctx)
	if err != nil {
		t.Fatalf("CheckAccess: %v", err)
	}
	var parts []string
	for _, r := range res {
		ns := r.Namespace
		if ns == "" {
			ns = "(cluster)"
		}
		if r.Unknown != "" {
			t.Errorf("%s: the rules review was incomplete (%s); the real RBAC authorizer lists them", ns, r.Unknown)
		}
		missing := "ok"
		if len(r.Missing) > 0 {
			missing = strings.Join(permissionNames(r.Missing), ", ")
		}
		parts = append(parts, ns+": "+missing)
	}
	return strings.Join(parts, "; ")
}

func permissionNames(ps []Permission) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}
