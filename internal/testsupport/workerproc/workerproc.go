// Package workerproc runs the real worker binary (./worker) as a child
// process for tests and benchmarks that need what only a process gives: a
// SIGKILL that loses everything in memory, several workers on one task
// queue, a resident set of the worker alone.
package workerproc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/flinkmaint/flinkmaint/internal/testsupport/faulthook"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
)

// Build compiles ./worker once per test binary, with the fault hooks of
// the tests' builds (-tags faulthooks; see package faulthook), and returns
// its path.
func Build(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := sandbox.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "flinkmaint-worker-")
		if err != nil {
			buildErr = err
			return
		}
		bin := filepath.Join(dir, "flinkmaint-worker")
		cmd := exec.Command("go", "build", "-tags", "faulthooks", "-o", bin, "./worker")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build -tags faulthooks ./worker: %w\n%s", err, out)
			return
		}
		buildBin = bin
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

var (
	releaseMu   sync.Mutex
	releaseBins = map[string]string{}
)

// BuildRelease compiles ./worker as it was at commit (a release of
// flinkmaint), from a git worktree of this repository, once per test
// binary, and returns its path. The commit must be in the clone's history
// (a shallow clone lacks it: git fetch --unshallow).
func BuildRelease(t testing.TB, commit string) string {
	t.Helper()
	releaseMu.Lock()
	defer releaseMu.Unlock()
	if bin, ok := releaseBins[commit]; ok {
		return bin
	}
	root, err := sandbox.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", root}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").CombinedOutput(); err != nil {
		t.Fatalf("release %s is not in this clone's history (%v %s): clone with full history, or git fetch --unshallow", commit, err, out)
	}
	dir, err := os.MkdirTemp("", "flinkmaint-release-")
	if err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(dir, "src")
	git("worktree", "add", "--detach", tree, commit)
	defer func() {
		git("worktree", "remove", "--force", tree)
	}()
	bin := filepath.Join(dir, "flinkmaint-worker-"+commit[:min(12, len(commit))])
	cmd := exec.Command("go", "build", "-o", bin, "./worker")
	cmd.Dir = tree
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./worker of release %s: %v\n%s", commit, err, out)
	}
	releaseBins[commit] = bin
	return bin
}

// Process is one worker process; Start it again after Kill to restart it.
type Process struct {
	t      testing.TB
	bin    string
	config string
	log    string
	env    []string
	// base replaces the test's environment when set (WithEnv).
	base []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	starts int
}

// New returns a worker that runs bin --config config, appending its output
// to log; it is stopped (SIGTERM, then SIGKILL) when the test ends.
func New(t testing.TB, bin, config, log string) *Process {
	p := &Process{t: t, bin: bin, config: config, log: log}
	t.Cleanup(p.Stop)
	return p
}

// WithHooks gives the process (every start of it) the directory of fault
// hooks h, so a test holds its activities where it says.
func (p *Process) WithHooks(h *faulthook.Hooks) *Process {
	p.env = append(p.env, h.Env())
	return p
}

// WithEnv runs the process with env instead of the test's environment
// (the hooks' variable still added): a pod's environment, say.
func (p *Process) WithEnv(env []string) *Process {
	p.base = append([]string{}, env...)
	return p
}

// Start starts the process.
func (p *Process) Start() {
	p.t.Helper()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	cmd := exec.Command(p.bin, "--config", p.config)
	base := os.Environ()
	if p.base != nil {
		base = p.base
	}
	cmd.Env = append(base, p.env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		p.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = f.Close(); close(exited) }()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.starts++
	p.mu.Unlock()
}

// AwaitPolling waits until the process polls queue for workflow tasks. A
// process that exits first (a config it refuses, a release that cannot
// start) fails the test at once with its log, rather than leaving runs
// waiting for a worker that is gone.
func (p *Process) AwaitPolling(ctx context.Context, c client.Client, queue string) {
	p.t.Helper()
	p.mu.Lock()
	exited, pid := p.exited, 0
	if p.cmd != nil && p.cmd.Process != nil {
		pid = p.cmd.Process.Pid
	}
	p.mu.Unlock()
	suffix := fmt.Sprintf("/%d", pid)
	for {
		resp, err := c.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		if err == nil {
			for _, poller := range resp.GetPollers() {
				if strings.HasSuffix(poller.GetIdentity(), suffix) {
					return
				}
			}
		}
		select {
		case <-exited:
			p.t.Fatalf("worker %s exited before it polled task queue %s:\n%s", p.bin, queue, p.Tail())
		case <-ctx.Done():
			p.t.Fatalf("worker %s did not poll task queue %s (%v; last describe error %v):\n%s", p.bin, queue, ctx.Err(), err, p.Tail())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// PID is the running process's pid, 0 before the first start.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Starts is how many times the process was started.
func (p *Process) Starts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts
}

// Kill ends the process with SIGKILL, as a crashed host or an OOM kill:
// nothing in memory survives, no activity is handed back. It returns once
// the process is gone.
func (p *Process) Kill() {
	p.signalAndWait(syscall.SIGKILL, time.Minute)
}

// Stop asks the process to stop (SIGTERM) and kills it if it is still
// there after 30 s.
func (p *Process) Stop() {
	if !p.signalAndWait(syscall.SIGTERM, 30*time.Second) {
		p.Kill()
	}
}

func (p *Process) signalAndWait(sig syscall.Signal, wait time.Duration) bool {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return true
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
		return true
	case <-time.After(wait):
		return false
	}
}

// Identity is the Temporal identity the worker gives itself
// (worker/main.go): activities it ran name it as their last worker.
func (p *Process) Identity() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	return fmt.Sprintf("flinkmaint-worker@%s/%d", host, p.PID())
}

// PeakRSS is the running process's peak resident set in bytes (VmHWM).
func (p *Process) PeakRSS() (int64, error) {
	pid := p.PID()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err != nil {
				return 0, fmt.Errorf("VmHWM %q: %w", v, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmHWM", pid)
}

// Tail is the last 8000 bytes of the log, for failure messages.
func (p *Process) Tail() string {
	data, _ := os.ReadFile(p.log)
	if len(data) > 8000 {
		data = data[len(data)-8000:]
	}
	return string(data)
}
