//go:build realpeers

package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// env is one test's view of the sandbox kube-apiserver as system:masters.
type env struct {
	t    *testing.T
	k    *sandbox.Kube
	cs   kubernetes.Interface
	dyn  dynamic.Interface
	ctx  context.Context
	runs string // unique suffix of this test's namespaces
}

// newEnvOn is newEnv on a control plane a test chose.
func newEnvOn(t *testing.T, k *sandbox.Kube, cs kubernetes.Interface, dyn dynamic.Interface) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return &env{t: t, k: k, cs: cs, dyn: dyn, ctx: ctx, runs: hex.EncodeToString(b)}
}

// newEnv connects to the real apiserver (failing when there is none) and
// makes sure the Flink operator CRDs are installed.
func newEnv(t *testing.T) *env {
	t.Helper()
	k, cs, dyn := sandbox.RequireFlinkKube(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return &env{t: t, k: k, cs: cs, dyn: dyn, ctx: ctx, runs: hex.EncodeToString(b)}
}

// ns creates a namespace unique to this run.
func (e *env) ns(prefix string, labels map[string]string) string {
	e.t.Helper()
	name := prefix + "-" + e.runs
	if err := e.k.CreateNamespace(e.ctx, name, labels); err != nil {
		e.t.Fatal(err)
	}
	return name
}

func (e *env) client(cfg Config, restCfg *rest.Config) *Client {
	e.t.Helper()
	cs, dyn := e.cs, e.dyn
	if restCfg != nil {
		var err error
		if cs, err = kubernetes.NewForConfig(restCfg); err != nil {
			e.t.Fatal(err)
		}
		if dyn, err = dynamic.NewForConfig(restCfg); err != nil {
			e.t.Fatal(err)
		}
	}
	c, err := New(cs, dyn, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) nativeCluster(c sandbox.NativeFlinkCluster) {
	e.t.Helper()
	if err := e.k.CreateNativeFlinkCluster(e.ctx, c); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) annotateJobs(ns, deployment, value string) {
	e.t.Helper()
	d, err := e.cs.AppsV1().Deployments(ns).Get(e.ctx, deployment, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[JobsAnnotation] = value
	if _, err := e.cs.AppsV1().Deployments(ns).Update(e.ctx, d, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) deployment(ns, name string) *appsv1.Deployment {
	e.t.Helper()
	d, err := e.cs.AppsV1().Deployments(ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// flinkDeployment creates a FlinkDeployment shaped as users write them; a
// nil job makes it a session cluster.
func (e *env) flinkDeployment(ns, name string, conf map[string]any, job map[string]any) *unstructured.Unstructured {
	e.t.Helper()
	spec := map[string]any{
		"image":              "flink:1.20",
		"flinkVersion":       "v1_20",
		"serviceAccount":     "flink",
		"flinkConfiguration": conf,
		"jobManager":         map[string]any{"resource": map[string]any{"memory": "2048m", "cpu": int64(1)}},
		"taskManager":        map[string]any{"resource": map[string]any{"memory": "2048m", "cpu": int64(1)}},
	}
	if job != nil {
		spec["job"] = job
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": operatorAPIVersion, "kind": KindFlinkDeployment,
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}}
	out, err := e.dyn.Resource(FlinkDeploymentGVR).Namespace(ns).Create(e.ctx, u, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create FlinkDeployment %s/%s: %v", ns, name, err)
	}
	return out
}

func appJob() map[string]any {
	return map[string]any{
		"jarURI":      "local:///opt/flink/examples/streaming/StateMachineExample.jar",
		"parallelism": int64(2),
		"upgradeMode": "savepoint",
		"state":       "running",
	}
}

// setStatus writes the status subresource as the operator would.
func (e *env) setStatus(ns, name string, status map[string]any) {
	e.t.Helper()
	if err := writeStatus(e.ctx, e.dyn, ns, name, status); err != nil {
		e.t.Fatal(err)
	}
}

func writeStatus(ctx context.Context, dyn dynamic.Interface, ns, name string, status map[string]any) error {
	for {
		u, err := dyn.Resource(FlinkDeploymentGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		u.Object["status"] = status
		_, err = dyn.Resource(FlinkDeploymentGVR).Namespace(ns).UpdateStatus(ctx, u, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		return err
	}
}

// recordMode says where the fake operator records the suspend savepoint.
type recordMode int

const (
	recordUpgradePath  recordMode = iota // status.jobStatus.upgradeSavepointPath (+ lastSavepoint)
	recordSnapshotOnly                   // only a FlinkStateSnapshot resource
)

// fakeOperator plays the Flink Kubernetes Operator's part for one
// FlinkDeployment on the real apiserver: it polls the resource and writes
// status the way FKO 1.15 does on suspend (savepoint, SUSPENDED) and
// resume (RUNNING, restored from the savepoint).
type fakeOperator struct {
	dyn       dynamic.Interface
	ns, name  string
	mode      recordMode
	delay     time.Duration
	savepoint string // the location it records, fixed so tests can compare

	mu       sync.Mutex
	suspends int
	resumes  int
	restored string // the path it restored from on resume
	nonce    int64  // the savepointRedeployNonce it last acted on
}

func (f *fakeOperator) run(ctx context.Context, t *testing.T) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := f.reconcile(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("fake operator: %v", err)
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
}

func (f *fakeOperator) reconcile(ctx context.Context) error {
	u, err := f.dyn.Resource(FlinkDeploymentGVR).Namespace(f.ns).Get(ctx, f.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	st := statusOf(u)
	status, _, _ := unstructured.NestedMap(u.Object, "status")
	if status == nil {
		status = map[string]any{}
	}
	jobStatus, _, _ := unstructured.NestedMap(status, "jobStatus")
	if jobStatus == nil {
		jobStatus = map[string]any{}
	}
	switch {
	case st.SpecState == SpecStateSuspended && st.JobState != JobStateSuspended:
		time.Sleep(f.delay) // stop-with-savepoint takes a while
		now := time.Now().UnixMilli()
		jobStatus["state"] = JobStateSuspended
		status["lifecycleState"] = "SUSPENDED"
		mode, _, _ := unstructured.NestedString(u.Object, "spec", "job", "upgradeMode")
		if mode == UpgradeModeStateless {
			// no savepoint is taken
		} else if f.mode == recordUpgradePath {
			jobStatus["upgradeSavepointPath"] = f.savepoint
			jobStatus["savepointInfo"] = map[string]any{"lastSavepoint": map[string]any{
				"location": f.savepoint, "timeStamp": now, "triggerType": "UPGRADE", "formatType": "CANONICAL",
			}}
		} else {
			if err := f.createSnapshot(ctx); err != nil {
				return err
			}
		}
		status["jobStatus"] = jobStatus
		f.mu.Lock()
		f.suspends++
		f.mu.Unlock()
		return writeStatus(ctx, f.dyn, f.ns, f.name, status)
	case st.SpecState == SpecStateRunning && st.JobState != JobStateRunning:
		time.Sleep(f.delay)
		// FKO restores from the upgrade savepoint it recorded, or from
		// initialSavepointPath when it has none or when a new
		// savepointRedeployNonce asks for a redeploy from it.
		restored := st.UpgradeSavepointPath
		nonce, _, _ := unstructured.NestedInt64(u.Object, "spec", "job", "savepointRedeployNonce")
		f.mu.Lock()
		redeploy := nonce != f.nonce
		f.nonce = nonce
		f.mu.Unlock()
		if restored == "" || redeploy {
			restored = st.InitialSavepointPath
		}
		jobStatus["state"] = JobStateRunning
		jobStatus["jobId"] = strings.Repeat("ab", 16)
		status["lifecycleState"] = "STABLE"
		status["jobStatus"] = jobStatus
		f.mu.Lock()
		f.resumes++
		f.restored = restored
		f.mu.Unlock()
		return writeStatus(ctx, f.dyn, f.ns, f.name, status)
	}
	return nil
}

func (f *fakeOperator) createSnapshot(ctx context.Context) error {
	snap := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": operatorAPIVersion, "kind": "FlinkStateSnapshot",
		"metadata": map[string]any{"name": fmt.Sprintf("%s-upgrade-%d", f.name, time.Now().UnixNano()), "namespace": f.ns},
		"spec": map[string]any{
			"jobReference": map[string]any{"kind": KindFlinkDeployment, "name": f.name},
			"savepoint":    map[string]any{"formatType": "CANONICAL", "disposeOnDelete": false},
		},
	}}
	created, err := f.dyn.Resource(FlinkStateSnapshotGVR).Namespace(f.ns).Create(ctx, snap, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Object["status"] = map[string]any{"state": "COMPLETED", "path": f.savepoint, "resultTimestamp": time.Now().UTC().Format(time.RFC3339)}
	_, err = f.dyn.Resource(FlinkStateSnapshotGVR).Namespace(f.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

func (f *fakeOperator) counts() (suspends, resumes int, restored string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.suspends, f.resumes, f.restored
}
