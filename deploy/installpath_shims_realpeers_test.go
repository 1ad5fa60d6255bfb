//go:build realpeers

package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// The install path's commands (docs/install.md, docs/first-window-own-cluster.md)
// call hdfs, kubectl and helm. Here they are this test binary, run again
// with shimEnv naming the tool:
//   - hdfs dfs: Hadoop's FsShell on the sandbox's NameNode, as its superuser;
//   - kubectl: the few verbs the pages use, on the sandbox's kube-apiserver,
//     with exec run here: the sandbox has no kubelet, so a pod's container
//     runs as a process with the pod's environment and volumes (see runPod);
//   - helm: bin/helm, but `helm test` runs the test pod's command the same
//     way, and install and upgrade get one more values file that stands for
//     the cluster DNS the sandbox lacks (the REST addresses of its Flink
//     clusters).
const (
	shimEnv = "FLINKMAINT_INSTALL_PATH_SHIM"
	// Where the shims find what they need.
	shimRepoEnv          = "FLINKMAINT_SHIM_REPO"
	shimHelmEnv          = "FLINKMAINT_SHIM_HELM"
	shimNetworkValuesEnv = "FLINKMAINT_SHIM_NETWORK_VALUES"
	shimPodsEnv          = "FLINKMAINT_SHIM_PODS"
	shimPodPathEnv       = "FLINKMAINT_SHIM_POD_PATH"
)

func TestMain(m *testing.M) {
	if tool := os.Getenv(shimEnv); tool != "" {
		os.Exit(runShim(tool, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func runShim(tool string, args []string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var err error
	code := 0
	switch tool {
	case "hdfs":
		err = hdfsShim(ctx, args)
	case "kubectl":
		code, err = kubectlShim(ctx, args)
	case "helm":
		code, err = helmShim(ctx, args)
	default:
		err = fmt.Errorf("no stand-in for %s", tool)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s (sandbox stand-in): %v\n", tool, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func hdfsShim(ctx context.Context, args []string) error {
	if len(args) < 2 || args[0] != "dfs" {
		return fmt.Errorf("only `hdfs dfs <command>` is known, not %q", strings.Join(args, " "))
	}
	if err := os.Chdir(os.Getenv(shimRepoEnv)); err != nil {
		return err
	}
	peers, err := sandbox.LoadPeers()
	if err != nil {
		return err
	}
	out, err := peers.HadoopShell(ctx, args[1:]...)
	fmt.Print(out)
	return err
}

// kubectlArgs are a kubectl command line: its namespace, its other flags,
// its words, and after "--" the command exec runs.
type kubectlArgs struct {
	namespace string
	flags     map[string][]string
	words     []string
	command   []string
}

func parseKubectl(args []string) (kubectlArgs, error) {
	k := kubectlArgs{namespace: "default", flags: map[string][]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			k.command = args[i+1:]
			return k, nil
		case a == "-n" || a == "--namespace":
			if i+1 == len(args) {
				return k, fmt.Errorf("%s without a value", a)
			}
			k.namespace = args[i+1]
			i++
		case strings.HasPrefix(a, "--namespace="):
			k.namespace = strings.TrimPrefix(a, "--namespace=")
		case a == "-f":
			if i+1 == len(args) {
				return k, errors.New("-f without a value")
			}
			k.flags["-f"] = append(k.flags["-f"], args[i+1])
			i++
		case a == "-i" || a == "--stdin" || a == "-t" || a == "--tty" || a == "-it":
			k.flags["-i"] = append(k.flags["-i"], "")
		case strings.HasPrefix(a, "--") && strings.Contains(a, "="):
			name, value, _ := strings.Cut(a, "=")
			k.flags[name] = append(k.flags[name], value)
		case strings.HasPrefix(a, "-"):
			return k, fmt.Errorf("flag %s is not one the install path uses", a)
		default:
			k.words = append(k.words, a)
		}
	}
	return k, nil
}

func kubectlShim(ctx context.Context, args []string) (int, error) {
	k, err := parseKubectl(args)
	if err != nil {
		return 2, err
	}
	cfg, cs, err := adminClient()
	if err != nil {
		return 1, err
	}
	w := strings.Join(k.words, " ")
	switch {
	case w == "apply" && len(k.flags["-f"]) == 1 && k.flags["-f"][0] == "-":
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return 1, err
		}
		return 0, kubectlApply(ctx, cs, dyn, k.namespace, os.Stdin)
	case len(k.words) == 3 && w == "create namespace "+k.words[2]:
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: k.words[2]}}, metav1.CreateOptions{}); err != nil {
			return 1, err
		}
		fmt.Printf("namespace/%s created\n", k.words[2])
		return 0, nil
	case len(k.words) == 4 && w == "create secret generic "+k.words[3]:
		data := map[string][]byte{}
		for _, f := range k.flags["--from-file"] {
			key, path, ok := strings.Cut(f, "=")
			if !ok {
				key, path = filepath.Base(f), f
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return 1, fmt.Errorf("--from-file=%s: %w", f, err)
			}
			data[key] = b
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: k.words[3], Namespace: k.namespace}, Data: data}
		if _, err := cs.CoreV1().Secrets(k.namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return 1, err
		}
		fmt.Printf("secret/%s created\n", k.words[3])
		return 0, nil
	case len(k.words) == 2 && k.words[0] == "exec" && strings.HasPrefix(k.words[1], "deploy/") && len(k.command) > 0:
		d, err := cs.AppsV1().Deployments(k.namespace).Get(ctx, strings.TrimPrefix(k.words[1], "deploy/"), metav1.GetOptions{})
		if err != nil {
			return 1, err
		}
		p, err := preparePod(ctx, cs, k.namespace, d.Spec.Template.Spec, os.Getenv(shimPodsEnv))
		if err != nil {
			return 1, err
		}
		return p.run(k.command, os.Stdin, os.Stdout, os.Stderr)
	}
	return 2, fmt.Errorf("`kubectl %s` is not a command the install path uses", strings.Join(args, " "))
}

// adminClient is the user's: $KUBECONFIG's.
func adminClient() (*rest.Config, kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return nil, nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	return cfg, cs, err
}

// kubectlApply is `kubectl apply -f -`: every document of r applied
// server-side in namespace ns (when the kind is namespaced).
func kubectlApply(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, ns string, r io.Reader) error {
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClient(cs.Discovery().RESTClient())))
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("stdin: %w", err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return err
		}
		res := dyn.Resource(m.Resource)
		var ri dynamic.ResourceInterface = res
		if m.Scope.Name() == "namespace" {
			if u.GetNamespace() == "" {
				u.SetNamespace(ns)
			}
			ri = res.Namespace(u.GetNamespace())
		}
		body, err := json.Marshal(u.Object)
		if err != nil {
			return err
		}
		force := true
		if _, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "kubectl", Force: &force}); err != nil {
			return fmt.Errorf("%s/%s: %w", strings.ToLower(gvk.Kind), u.GetName(), err)
		}
		fmt.Printf("%s/%s serverside-applied\n", strings.ToLower(gvk.Kind), u.GetName())
	}
}

func helmShim(ctx context.Context, args []string) (int, error) {
	helm := os.Getenv(shimHelmEnv)
	if len(args) > 0 && args[0] == "test" {
		return helmTest(ctx, helm, args[1:])
	}
	if len(args) > 0 && (args[0] == "install" || args[0] == "upgrade") {
		values := os.Getenv(shimNetworkValuesEnv)
		fmt.Fprintf(os.Stderr, "helm (sandbox stand-in): adding -f %s, the sandbox's stand-in for cluster DNS\n", values)
		args = append(args, "-f", values)
	}
	cmd := exec.CommandContext(ctx, helm, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	return exitCode(cmd.Run())
}

// helmTest is `helm test RELEASE -n NS [--logs]`: the release's test pods
// (its helm.sh/hook: test manifests) run here, each passing when its
// command exits 0.
func helmTest(ctx context.Context, helm string, args []string) (int, error) {
	var release, ns string
	logs := false
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-n" || a == "--namespace":
			if i+1 < len(args) {
				ns = args[i+1]
				i++
			}
		case a == "--logs":
			logs = true
		case strings.HasPrefix(a, "-"):
			return 2, fmt.Errorf("helm test flag %s is not one the install path uses", a)
		default:
			release = a
		}
	}
	out, err := exec.CommandContext(ctx, helm, "get", "hooks", release, "--namespace", ns).Output()
	if err != nil {
		return 1, fmt.Errorf("helm get hooks %s: %w", release, err)
	}
	_, cs, err := adminClient()
	if err != nil {
		return 1, err
	}
	ran := 0
	for _, doc := range strings.Split("\n"+string(out), "\n---") {
		var pod corev1.Pod
		if err := sigsyaml.Unmarshal([]byte(doc), &pod); err != nil || pod.Kind != "Pod" || !strings.Contains(pod.Annotations["helm.sh/hook"], "test") {
			continue
		}
		p, err := preparePod(ctx, cs, ns, pod.Spec, os.Getenv(shimPodsEnv))
		if err != nil {
			return 1, err
		}
		var buf bytes.Buffer
		code, err := p.run(nil, nil, &buf, &buf)
		if err != nil {
			return 1, err
		}
		phase := "Succeeded"
		if code != 0 {
			phase = "Failed"
		}
		fmt.Printf("TEST SUITE:     %s\nLast Started:   %s\nPhase:          %s\n", pod.Name, time.Now().Format(time.ANSIC), phase)
		if logs {
			fmt.Printf("\nPOD LOGS: %s\n%s", pod.Name, buf.String())
		}
		if code != 0 {
			return 1, fmt.Errorf("pod %s failed (exit %d)", pod.Name, code)
		}
		ran++
	}
	if ran == 0 {
		return 1, fmt.Errorf("release %s has no test pod", release)
	}
	return 0, nil
}

// pod is a pod's first container made ready to run as a process here, as
// a kubelet would run it: its Secret and ConfigMap volumes written under
// root at their mount paths, every mount path in its command, args,
// environment and ConfigMap files pointing at that copy, and its
// environment resolved from the API server.
type pod struct {
	root    string
	env     []string
	command []string // command and args
}

func preparePod(ctx context.Context, cs kubernetes.Interface, ns string, spec corev1.PodSpec, root string) (pod, error) {
	if len(spec.Containers) == 0 {
		return pod{}, errors.New("the pod has no container")
	}
	c := spec.Containers[0]
	root, err := os.MkdirTemp(root, "pod-")
	if err != nil {
		return pod{}, err
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	type mount struct{ path, local string }
	var mounts []mount
	files := map[string][]byte{} // local path -> content
	var configFiles []string     // ConfigMap files, whose text is rewritten
	for _, vm := range c.VolumeMounts {
		v, ok := volumes[vm.Name]
		if !ok {
			return pod{}, fmt.Errorf("volume mount %s names no volume", vm.Name)
		}
		local := filepath.Join(root, vm.MountPath)
		if err := os.MkdirAll(local, 0o755); err != nil {
			return pod{}, err
		}
		mounts = append(mounts, mount{vm.MountPath, local})
		put := func(data map[string][]byte, items []corev1.KeyToPath, configMap bool) error {
			if len(items) == 0 {
				for k := range data {
					items = append(items, corev1.KeyToPath{Key: k, Path: k})
				}
			}
			for _, it := range items {
				b, ok := data[it.Key]
				if !ok {
					return fmt.Errorf("volume %s: no key %s", vm.Name, it.Key)
				}
				p := filepath.Join(local, it.Path)
				files[p] = b
				if configMap {
					configFiles = append(configFiles, p)
				}
			}
			return nil
		}
		switch {
		case v.ConfigMap != nil:
			cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				return pod{}, fmt.Errorf("volume %s: %w", vm.Name, err)
			}
			data := map[string][]byte{}
			for k, s := range cm.Data {
				data[k] = []byte(s)
			}
			if err := put(data, v.ConfigMap.Items, true); err != nil {
				return pod{}, err
			}
		case v.Secret != nil:
			s, err := cs.CoreV1().Secrets(ns).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
			if err != nil {
				return pod{}, fmt.Errorf("volume %s: %w", vm.Name, err)
			}
			if err := put(s.Data, v.Secret.Items, false); err != nil {
				return pod{}, err
			}
		case v.EmptyDir != nil:
		default:
			return pod{}, fmt.Errorf("volume %s: only configMap, secret and emptyDir volumes run here", vm.Name)
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i].path) > len(mounts[j].path) })
	rewrite := func(s string) string {
		for _, m := range mounts {
			if s == m.path || strings.HasPrefix(s, m.path+"/") {
				return m.local + strings.TrimPrefix(s, m.path)
			}
		}
		return s
	}
	rewriteText := func(s string) string {
		for _, m := range mounts {
			if m.path != "/tmp" {
				s = strings.ReplaceAll(s, m.path+"/", m.local+"/")
			}
		}
		return s
	}
	for _, p := range configFiles {
		files[p] = []byte(rewriteText(string(files[p])))
	}
	for p, b := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return pod{}, err
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			return pod{}, err
		}
	}
	out := pod{root: root}
	for _, e := range c.Env {
		value := rewrite(e.Value)
		if f := e.ValueFrom; f != nil {
			switch {
			case f.FieldRef != nil && f.FieldRef.FieldPath == "metadata.namespace":
				value = ns
			case f.FieldRef != nil && f.FieldRef.FieldPath == "metadata.name":
				value = "emulated-" + filepath.Base(root)
			case f.SecretKeyRef != nil:
				s, err := cs.CoreV1().Secrets(ns).Get(ctx, f.SecretKeyRef.Name, metav1.GetOptions{})
				if err != nil {
					return pod{}, fmt.Errorf("env %s: %w", e.Name, err)
				}
				value = string(s.Data[f.SecretKeyRef.Key])
			case f.ConfigMapKeyRef != nil:
				cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, f.ConfigMapKeyRef.Name, metav1.GetOptions{})
				if err != nil {
					return pod{}, fmt.Errorf("env %s: %w", e.Name, err)
				}
				value = cm.Data[f.ConfigMapKeyRef.Key]
			default:
				return pod{}, fmt.Errorf("env %s: its valueFrom does not run here", e.Name)
			}
		}
		out.env = append(out.env, e.Name+"="+value)
	}
	if len(c.EnvFrom) > 0 {
		return pod{}, errors.New("envFrom does not run here")
	}
	for _, a := range append(append([]string{}, c.Command...), c.Args...) {
		out.command = append(out.command, rewrite(a))
	}
	return out, nil
}

// run runs command (the container's own when nil) with the pod's
// environment, PATH from shimPodPathEnv; an absolute program path is
// looked up by its base name there, as the image would have it.
func (p pod) run(command []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if command == nil {
		command = p.command
	}
	if len(command) == 0 {
		return 1, errors.New("the container has no command")
	}
	path := os.Getenv(shimPodPathEnv)
	prog := command[0]
	if filepath.IsAbs(prog) {
		prog = filepath.Base(prog)
	}
	cmd := exec.Command(prog, command[1:]...)
	cmd.Env = append([]string{"PATH=" + path, "HOME=" + p.root}, p.env...)
	if lp, err := lookPathIn(prog, path); err == nil {
		cmd.Path = lp
	} else {
		return 127, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	return exitCode(cmd.Run())
}

// exitCode is a finished command's exit code; err only when it did not run.
func exitCode(err error) (int, error) {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		return exit.ExitCode(), nil
	}
	return 1, err
}

func lookPathIn(prog, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, prog)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not in the image's PATH %s", prog, path)
}
