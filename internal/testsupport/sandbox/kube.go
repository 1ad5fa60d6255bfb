package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Files under StateDir that describe the running control plane.
const (
	// KubeEndpointFile is written by sandbox/kube/cmd/kube-sandbox once the
	// control plane answers, and removed when it stops.
	KubeEndpointFile = "kube.json"
	kubeLockFile     = "kube.lock"
)

// kubeStartTimeout bounds `run.sh up` when bin/kube is already built:
// etcd + kube-apiserver start in a few seconds, CRD install adds a few more.
const kubeStartTimeout = 3 * time.Minute

// ErrKubeUnavailable reports that no healthy sandbox control plane could be
// found or started.
var ErrKubeUnavailable = errors.New("sandbox: kube-apiserver sandbox unavailable")

// ErrInvalidKubeInput is matched (errors.Is) by every KubeInputError.
var ErrInvalidKubeInput = errors.New("sandbox: invalid input")

// KubeInputError names the field and value a Kube helper rejected and what
// would have been valid.
type KubeInputError struct {
	Field string
	Value string
	Valid string
}

func (e *KubeInputError) Error() string {
	return fmt.Sprintf("sandbox: invalid %s %q: %s", e.Field, e.Value, e.Valid)
}

// Is makes errors.Is(err, ErrInvalidKubeInput) hold.
func (e *KubeInputError) Is(target error) bool { return target == ErrInvalidKubeInput }

// KubeEndpoint is the content of var/sandbox/kube.json.
type KubeEndpoint struct {
	Kubeconfig   string `json:"kubeconfig"`
	Host         string `json:"host"`
	PID          int    `json:"pid"`
	EtcdPID      int    `json:"etcdPid,omitempty"`
	APIServerPID int    `json:"apiserverPid,omitempty"`
	EtcdURL      string `json:"etcdUrl,omitempty"`
}

// Kube is a connection to the sandbox kube-apiserver (envtest: etcd +
// kube-apiserver, no controllers, no scheduler, no garbage collector).
type Kube struct {
	// Config authenticates as a system:masters user.
	Config *rest.Config
	// Kubeconfig is the path of an equivalent kubeconfig file.
	Kubeconfig string
}

// RequireKube returns the running sandbox control plane, starting it with
// sandbox/kube/run.sh up when none answers. A control plane that cannot be
// reached or started fails the test: the tests using it prove behaviour
// against a real kube-apiserver and must not skip.
func RequireKube(t testing.TB) *Kube {
	t.Helper()
	k, err := LoadKube()
	if err != nil {
		t.Fatalf("RequireKube: %v", err)
	}
	return k
}

// LoadKube is RequireKube without testing.TB: it reuses the control plane
// described by var/sandbox/kube.json when it answers, and otherwise starts
// one (serialised by a file lock, so parallel test binaries start one only).
func LoadKube() (*Kube, error) { return loadKube("") }

// SecondKube names the second sandbox control plane, for tests of an
// inventory over several Kubernetes clusters.
const SecondKube = "second"

// RequireSecondKube is RequireKube for a second, independent control plane
// (etcd + kube-apiserver under var/sandbox/kube-second), started on first
// use and stopped by sandbox/sandbox.sh down.
func RequireSecondKube(t testing.TB) *Kube {
	t.Helper()
	k, err := loadKube(SecondKube)
	if err != nil {
		t.Fatalf("RequireSecondKube: %v", err)
	}
	return k
}

// kubeInstanceDir is where a control plane keeps kube.json, logs and data:
// var/sandbox for the main one, var/sandbox/kube-<instance> for others.
func kubeInstanceDir(instance string) (string, error) {
	state, err := StateDir()
	if err != nil {
		return "", err
	}
	if instance == "" {
		return state, nil
	}
	return filepath.Join(state, "kube-"+instance), nil
}

func loadKube(instance string) (*Kube, error) {
	ctx, cancel := context.WithTimeout(context.Background(), kubeStartTimeout)
	defer cancel()
	state, err := kubeInstanceDir(instance)
	if err != nil {
		return nil, err
	}
	if k, err := ConnectKubeAt(ctx, state); err == nil {
		return k, nil
	}
	return startKube(ctx, instance)
}

// ConnectKube connects to the control plane described by var/sandbox/kube.json
// and checks that it is ready. It never starts one; the error wraps
// ErrKubeUnavailable when there is none.
func ConnectKube(ctx context.Context) (*Kube, error) {
	state, err := StateDir()
	if err != nil {
		return nil, err
	}
	return ConnectKubeAt(ctx, state)
}

// ConnectKubeAt is ConnectKube for the control plane whose kube.json is
// in state.
func ConnectKubeAt(ctx context.Context, state string) (*Kube, error) {
	ep, err := ReadKubeEndpoint(filepath.Join(state, KubeEndpointFile))
	if err != nil {
		return nil, err
	}
	if !kubeProcessAlive(ep.PID) {
		return nil, fmt.Errorf("%w: kube-sandbox pid %d from %s is not running", ErrKubeUnavailable, ep.PID, KubeEndpointFile)
	}
	k, err := kubeFromKubeconfig(ep.Kubeconfig)
	if err != nil {
		return nil, err
	}
	if err := k.Ready(ctx); err != nil {
		return nil, err
	}
	return k, nil
}

// ReadKubeEndpoint parses a kube.json file.
func ReadKubeEndpoint(path string) (KubeEndpoint, error) {
	var ep KubeEndpoint
	data, err := os.ReadFile(path)
	if err != nil {
		return ep, fmt.Errorf("%w: %w", ErrKubeUnavailable, err)
	}
	if err := json.Unmarshal(data, &ep); err != nil {
		return ep, fmt.Errorf("%w: parse %s: %w", ErrKubeUnavailable, path, err)
	}
	if ep.Kubeconfig == "" || ep.Host == "" || ep.PID <= 0 {
		return ep, fmt.Errorf("%w: %s lacks kubeconfig, host or pid", ErrKubeUnavailable, path)
	}
	return ep, nil
}

// Ready checks the apiserver's /readyz, which covers etcd and the CRD
// machinery, not just that the port is open.
func (k *Kube) Ready(ctx context.Context) error {
	cs, err := k.Clientset()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		return fmt.Errorf("%w: %s/readyz: %w", ErrKubeUnavailable, strings.TrimSuffix(k.Config.Host, "/"), err)
	}
	return nil
}

// Clientset returns a typed client for the sandbox.
func (k *Kube) Clientset() (kubernetes.Interface, error) {
	cs, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		return nil, fmt.Errorf("sandbox: kubernetes client for %s: %w", k.Config.Host, err)
	}
	return cs, nil
}

// Dynamic returns a dynamic client, for custom resources such as
// FlinkDeployment.
func (k *Kube) Dynamic() (dynamic.Interface, error) {
	dc, err := dynamic.NewForConfig(k.Config)
	if err != nil {
		return nil, fmt.Errorf("sandbox: dynamic client for %s: %w", k.Config.Host, err)
	}
	return dc, nil
}

func kubeFromKubeconfig(path string) (*Kube, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("%w: kubeconfig %s: %w", ErrKubeUnavailable, path, err)
	}
	// The sandbox serves tests only; client-side throttling just slows them.
	cfg.QPS, cfg.Burst = 1000, 2000
	return &Kube{Config: cfg, Kubeconfig: path}, nil
}

func startKube(ctx context.Context, instance string) (*Kube, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	state, err := kubeInstanceDir(instance)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(state, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	unlock, err := kubeFlock(ctx, filepath.Join(state, kubeLockFile))
	if err != nil {
		return nil, err
	}
	defer unlock()

	// Another test binary may have started it while we waited for the lock.
	if k, err := ConnectKubeAt(ctx, state); err == nil {
		return k, nil
	}
	// Building them takes ~14 minutes, longer than a test should wait; say
	// how to do it instead of timing out half way through.
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(root, "bin", "kube", bin)); err != nil {
			return nil, fmt.Errorf("%w: bin/kube/%s is not built; run sandbox/kube/build.sh once (compiles kube-apiserver and etcd, ~14 minutes on 2 cores): %w",
				ErrKubeUnavailable, bin, err)
		}
	}
	script := filepath.Join(root, "sandbox", "kube", "run.sh")
	cmd := exec.CommandContext(ctx, script, "up")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "KUBE_SANDBOX_INSTANCE="+instance)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%w: %s up: %w\n%s", ErrKubeUnavailable, script, err, out)
	}
	k, err := ConnectKubeAt(ctx, state)
	if err != nil {
		return nil, fmt.Errorf("after %s up: %w\n%s", script, err, out)
	}
	return k, nil
}

// lockFile takes an exclusive flock, polling so ctx can cancel the wait.
func kubeFlock(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("sandbox: lock %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("sandbox: lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("sandbox: waiting for lock %s: %w", path, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func kubeProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	// A killed process whose parent has not reaped it still answers kill 0;
	// in containers PID 1 often never reaps. Its state letter is Z.
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no procfs: trust kill 0
	}
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}
