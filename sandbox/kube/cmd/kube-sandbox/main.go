// Command kube-sandbox runs the test control plane (etcd + kube-apiserver
// from bin/kube, started by controller-runtime's envtest) until SIGTERM or
// SIGINT, and tells tests where it is through var/sandbox/kube.json.
//
//	kube-sandbox serve [--state-dir D]  start, install the Flink operator CRDs, write D/kube.json, wait
//	kube-sandbox check [--state-dir D]  exit 0 when the control plane in D/kube.json is ready
//
// sandbox/kube/run.sh drives it; run it from the repository root.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kube-sandbox serve|check")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "check":
		err = check(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want serve or check", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube-sandbox:", err)
		os.Exit(1)
	}
}

func check(args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	stateDir := fs.String("state-dir", "", "where kube.json is (default var/sandbox)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *stateDir == "" {
		d, err := sandbox.StateDir()
		if err != nil {
			return err
		}
		*stateDir = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	k, err := sandbox.ConnectKubeAt(ctx, *stateDir)
	if err != nil {
		return err
	}
	fmt.Println(k.Config.Host)
	return nil
}

type options struct {
	stateDir string
	assets   string
	// unhealthyAfter is how long /readyz may fail before serve gives up, so a
	// dead etcd does not leave a kube.json that lies.
	unhealthyAfter time.Duration
}

func serve(args []string) error {
	root, err := sandbox.RepoRoot()
	if err != nil {
		return err
	}
	opts := options{}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&opts.stateDir, "state-dir", filepath.Join(root, "var", "sandbox"), "where kube.json, logs and data go")
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin", "kube")
	}
	fs.StringVar(&opts.assets, "assets", assets, "directory holding kube-apiserver and etcd (KUBEBUILDER_ASSETS)")
	fs.DurationVar(&opts.unhealthyAfter, "unhealthy-after", 30*time.Second, "stop when /readyz fails this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(opts.assets, bin)); err != nil {
			return fmt.Errorf("%s missing in %s (run sandbox/kube/build.sh): %w", bin, opts.assets, err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return run(ctx, opts)
}

func run(ctx context.Context, opts options) (retErr error) {
	started := time.Now()
	dataDir := filepath.Join(opts.stateDir, "kube")
	// Each start is a fresh cluster: stale certs would leave envtest without
	// the serving CA, and stale etcd data would leak objects between runs.
	if err := os.RemoveAll(dataDir); err != nil {
		return err
	}
	etcdDir, certDir := filepath.Join(dataDir, "etcd"), filepath.Join(dataDir, "certs")
	for _, d := range []string{etcdDir, certDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	etcdLog, err := os.Create(filepath.Join(opts.stateDir, "kube-etcd.log"))
	if err != nil {
		return err
	}
	defer etcdLog.Close()
	apiLog, err := os.Create(filepath.Join(opts.stateDir, "kube-apiserver.log"))
	if err != nil {
		return err
	}
	defer apiLog.Close()

	clientPort, err := freePort()
	if err != nil {
		return err
	}
	peerPort, err := freePort()
	if err != nil {
		return err
	}
	etcd := &envtest.Etcd{
		DataDir: etcdDir,
		URL:     &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(clientPort))},
		Out:     etcdLog, Err: etcdLog,
	}
	// envtest would pick localhost for the peer URL; keep everything on 127.0.0.1.
	etcd.Configure().Set("listen-peer-urls", "http://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(peerPort)))
	api := &envtest.APIServer{
		CertDir:       certDir,
		SecureServing: envtest.SecureServing{ListenAddr: envtest.ListenAddr{Address: "127.0.0.1"}},
		Out:           apiLog, Err: apiLog,
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    opts.assets,
		ControlPlane:             envtest.ControlPlane{Etcd: etcd, APIServer: api},
		ControlPlaneStartTimeout: 90 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return fmt.Errorf("start control plane (logs: %s, %s): %w", etcdLog.Name(), apiLog.Name(), err)
	}
	endpointFile := filepath.Join(opts.stateDir, sandbox.KubeEndpointFile)
	defer func() {
		// kube.json goes first so no client picks up a control plane that is stopping.
		_ = os.Remove(endpointFile)
		if err := env.Stop(); err != nil {
			retErr = errors.Join(retErr, fmt.Errorf("stop control plane: %w", err))
		}
		if retErr == nil {
			_ = os.RemoveAll(dataDir)
		}
		fmt.Println("control plane stopped")
	}()
	fmt.Printf("control plane up at %s in %s\n", cfg.Host, time.Since(started).Round(time.Millisecond))

	kubeconfigPath := filepath.Join(dataDir, "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, env.KubeConfig, 0o600); err != nil {
		return err
	}
	k := &sandbox.Kube{Config: cfg, Kubeconfig: kubeconfigPath}
	if err := installCRDs(ctx, k); err != nil {
		return err
	}
	ep := sandbox.KubeEndpoint{
		Kubeconfig: kubeconfigPath,
		Host:       strings.TrimSuffix(cfg.Host, "/"),
		PID:        os.Getpid(),
		EtcdURL:    etcd.URL.String(),
	}
	ep.EtcdPID, ep.APIServerPID = childPIDs(opts.assets)
	if err := writeJSON(endpointFile, ep); err != nil {
		return err
	}
	fmt.Printf("ready in %s: %s (etcd pid %d, kube-apiserver pid %d)\n",
		time.Since(started).Round(time.Millisecond), endpointFile, ep.EtcdPID, ep.APIServerPID)
	return watch(ctx, k, opts.unhealthyAfter)
}

func installCRDs(ctx context.Context, k *sandbox.Kube) error {
	dir, err := sandbox.FlinkOperatorCRDDir()
	if err != nil {
		// Neither ../shared nor Maven gave the CRDs: the control plane is
		// still useful; tests that need them install them and say why they
		// cannot.
		fmt.Println("Flink operator CRDs not installed:", err)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := k.InstallCRDsFrom(ctx, dir); err != nil {
		return fmt.Errorf("install Flink operator CRDs from %s: %w", dir, err)
	}
	fmt.Println("installed Flink operator CRDs from", dir)
	return nil
}

// watch blocks until ctx ends, or fails when the apiserver stays unready.
func watch(ctx context.Context, k *sandbox.Kube, unhealthyAfter time.Duration) error {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	var failingSince time.Time
	for {
		select {
		case <-ctx.Done():
			fmt.Println("signal received, stopping")
			return nil
		case <-tick.C:
		}
		if err := k.Ready(ctx); err != nil {
			if ctx.Err() != nil {
				continue
			}
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			fmt.Println("not ready:", err)
			if time.Since(failingSince) > unhealthyAfter {
				return fmt.Errorf("kube-apiserver unready for %s: %w", unhealthyAfter, err)
			}
			continue
		}
		failingSince = time.Time{}
	}
}

// childPIDs finds the etcd and kube-apiserver envtest started, for status
// and RSS reporting; envtest does not expose them.
func childPIDs(assets string) (etcdPID, apiPID int) {
	entries, _ := os.ReadDir("/proc")
	me := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Field 4 is the parent pid; the command name in field 2 may hold spaces.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(me) {
			continue
		}
		exe, _ := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		switch exe {
		case filepath.Join(assets, "etcd"):
			etcdPID = pid
		case filepath.Join(assets, "kube-apiserver"):
			apiPID = pid
		}
	}
	return etcdPID, apiPID
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
