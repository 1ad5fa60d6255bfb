package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// ErrSecureStorageUnavailable is returned (wrapped) when the secure storage JVM (KDC and
// kerberized HA HDFS) is not running and could not be started.
var ErrSecureStorageUnavailable = errors.New("sandbox: secure storage unavailable")

// Principal is a Kerberos principal of the secure sandbox with its keytab file.
type Principal struct {
	Principal string `json:"principal"` // name@REALM
	Keytab    string `json:"keytab"`
}

// SecureStorage describes the running secure storage JVM, as written by
// sandbox/java/run.sh secure-up to var/sandbox/secure.json: a KDC and a kerberized HDFS whose two
// NameNodes serve the nameservice in URI (hdfs://ns1).
type SecureStorage struct {
	Nameservice            string   `json:"nameservice"`
	URI                    string   `json:"uri"`
	NameNodes              []string `json:"namenodes"` // nn1, nn2 (host:port)
	ControlURL             string   `json:"controlUrl"`
	Realm                  string   `json:"realm"`
	KDC                    string   `json:"kdc"`
	Krb5Conf               string   `json:"krb5Conf"`
	HadoopConfDir          string   `json:"hadoopConfDir"`
	ServicePrincipal       string   `json:"servicePrincipal"`
	TicketLifetimeSeconds  int      `json:"ticketLifetimeSeconds"`
	RPCProtection          string   `json:"rpcProtection"`
	DataTransferProtection string   `json:"dataTransferProtection"`
	Principals             struct {
		// Worker is flinkmaint's principal, in the HDFS superuser group.
		Worker Principal `json:"worker"`
		// Flink owns the tenant roots.
		Flink Principal `json:"flink"`
		// Denied authenticates but the client-protocol ACL refuses it.
		Denied Principal `json:"denied"`
		// Service is the NameNodes' and DataNode's principal (hdfs/localhost).
		Service Principal `json:"service"`
	} `json:"principals"`
	Tenants           []Tenant `json:"tenants"`
	JavaClasspathFile string   `json:"javaClasspathFile"`
	LogDir            string   `json:"logDir"`

	jvmOptsFile string
}

// NameNodeState is one NameNode as the control endpoint reports it.
type NameNodeState struct {
	ID      string `json:"id"`
	Address string `json:"address"`
	State   string `json:"state"` // active, standby or stopped
}

// HAState is the control endpoint's answer: the NameNodes and the failovers done so far.
type HAState struct {
	Failovers int             `json:"failovers"`
	NameNodes []NameNodeState `json:"namenodes"`
}

// Active returns the active NameNode, if any.
func (s HAState) Active() (NameNodeState, bool) {
	for _, n := range s.NameNodes {
		if n.State == "active" {
			return n, true
		}
	}
	return NameNodeState{}, false
}

const (
	secureFile         = "secure.json"
	secureLockPath     = "java/secure-start.lock"
	secureFailoverLock = "java/secure-failover.lock"
	secureShellMain    = "io.github.flinkmaint.sandbox.peers.SecureShell"
)

var (
	secureMu      sync.Mutex
	secureTried   bool
	secureFailure error
)

// RequireSecureStorage returns the running secure storage JVM, starting it (once per test
// process) when it is not up. It fails the test when it cannot be had: the tests that use it
// prove Kerberos and NameNode failover against the real thing and never skip.
func RequireSecureStorage(t testing.TB) *SecureStorage {
	t.Helper()
	s, err := LoadSecureStorage()
	if err != nil {
		t.Fatalf("the secure storage peer (KDC + kerberized HA HDFS) is required: %v", err)
	}
	return s
}

// LoadSecureStorage returns the running secure storage JVM, starting it with
// sandbox/java/run.sh secure-up when secure.json is missing or a peer does not answer.
func LoadSecureStorage() (*SecureStorage, error) {
	if s, err := loadSecureHealthy(); err == nil {
		return s, nil
	}
	secureMu.Lock()
	defer secureMu.Unlock()
	if s, err := loadSecureHealthy(); err == nil {
		return s, nil
	}
	if secureTried {
		return nil, secureFailure
	}
	secureTried = true
	secureFailure = startSecure()
	if secureFailure != nil {
		return nil, secureFailure
	}
	s, err := loadSecureHealthy()
	if err != nil {
		secureFailure = fmt.Errorf("%w: started, but still not healthy: %w", ErrSecureStorageUnavailable, err)
		return nil, secureFailure
	}
	return s, nil
}

func loadSecureHealthy() (*SecureStorage, error) {
	dir, err := StateDir()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, secureFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSecureStorageUnavailable, err)
	}
	var s SecureStorage
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrSecureStorageUnavailable, path, err)
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrSecureStorageUnavailable, path, err)
	}
	if root, err := RepoRoot(); err == nil {
		s.jvmOptsFile = filepath.Join(root, jvmOptsRelPath)
	}
	ctx, cancel := context.WithTimeout(context.Background(), healthTimeout)
	defer cancel()
	if err := s.checkHealth(ctx); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSecureStorageUnavailable, err)
	}
	return &s, nil
}

func (s *SecureStorage) validate() error {
	switch {
	case s.URI == "" || len(s.NameNodes) != 2:
		return errors.New("uri and two namenodes are required")
	case s.ControlURL == "" || s.KDC == "" || s.Realm == "":
		return errors.New("controlUrl, kdc and realm are required")
	case s.Krb5Conf == "" || s.HadoopConfDir == "" || s.JavaClasspathFile == "":
		return errors.New("krb5Conf, hadoopConfDir and javaClasspathFile are required")
	case s.Principals.Worker.Keytab == "" || s.Principals.Denied.Keytab == "" || s.Principals.Flink.Keytab == "":
		return errors.New("principals.worker, .flink and .denied need keytabs")
	}
	return nil
}

func (s *SecureStorage) checkHealth(ctx context.Context) error {
	var d net.Dialer
	for _, addr := range []string{s.KDC} {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return fmt.Errorf("KDC %s: %w", addr, err)
		}
		_ = conn.Close()
	}
	st, err := s.State(ctx)
	if err != nil {
		return err
	}
	if _, ok := st.Active(); !ok {
		return fmt.Errorf("no NameNode is active: %+v", st.NameNodes)
	}
	return nil
}

// State asks the control endpoint which NameNode is active.
func (s *SecureStorage) State(ctx context.Context) (HAState, error) {
	return s.control(ctx, http.MethodGet, "/state")
}

// Failover makes the active NameNode standby and the other active, as an administrator's
// "hdfs haadmin -failover" does; clients of the old one get StandbyException.
func (s *SecureStorage) Failover(ctx context.Context) (HAState, error) {
	return s.control(ctx, http.MethodPost, "/failover")
}

// FailoverStop shuts the active NameNode down and makes the other active, as when the active
// NameNode's host dies; clients of the old one get connection refused. RestartNameNode brings it
// back as standby.
func (s *SecureStorage) FailoverStop(ctx context.Context) (HAState, error) {
	return s.control(ctx, http.MethodPost, "/failover?mode=stop")
}

// RestartNameNode starts a stopped NameNode ("nn1" or "nn2") again, as standby.
func (s *SecureStorage) RestartNameNode(ctx context.Context, id string) (HAState, error) {
	if id != "nn1" && id != "nn2" {
		return HAState{}, fmt.Errorf("%w: NameNode %q: want nn1 or nn2", ErrInvalidArgument, id)
	}
	return s.control(ctx, http.MethodPost, "/restart?nn="+id)
}

func (s *SecureStorage) control(ctx context.Context, method, path string) (HAState, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.ControlURL+path, nil)
	if err != nil {
		return HAState{}, fmt.Errorf("sandbox: control %s %s: %w", method, path, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return HAState{}, fmt.Errorf("sandbox: control %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return HAState{}, fmt.Errorf("sandbox: control %s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return HAState{}, fmt.Errorf("sandbox: control %s %s: HTTP %d: %s", method, path, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	var st HAState
	if err := json.Unmarshal(body, &st); err != nil {
		return HAState{}, fmt.Errorf("sandbox: control %s %s: %w: %s", method, path, err, body)
	}
	return st, nil
}

// HoldFailovers takes, until t ends, the lock every test that fails the NameNodes over holds, so
// that of test binaries running at once (go test -p) one fails them over at a time: a test that
// stopped the active NameNode is not refused a failover by another's, nor finds it restarted
// under it. Tests that only use the HDFS need not take it; their calls ride failovers out.
func (s *SecureStorage) HoldFailovers(t testing.TB) {
	t.Helper()
	t.Cleanup(lockFile(t, secureFailoverLock))
}

// HadoopShell runs "hdfs dfs ARGS..." against the secure HDFS (through its nameservice, with
// Java's failover) as the given principal, logged in from its keytab, and returns standard
// output.
func (s *SecureStorage) HadoopShell(ctx context.Context, as Principal, args ...string) (string, error) {
	return s.shell(ctx, as, "dfs", args...)
}

// DFSAdmin runs "hdfs dfsadmin ARGS..." (e.g. -setQuota N PATH) as the given principal.
func (s *SecureStorage) DFSAdmin(ctx context.Context, as Principal, args ...string) (string, error) {
	return s.shell(ctx, as, "dfsadmin", args...)
}

func (s *SecureStorage) shell(ctx context.Context, as Principal, tool string, args ...string) (string, error) {
	if len(args) == 0 {
		return "", fmt.Errorf("%w: %s needs a command, e.g. -ls /user/app", ErrInvalidArgument, tool)
	}
	if as.Principal == "" || as.Keytab == "" {
		return "", fmt.Errorf("%w: principal %q with keytab %q: both are required", ErrInvalidArgument, as.Principal, as.Keytab)
	}
	cp, err := os.ReadFile(s.JavaClasspathFile)
	if err != nil {
		return "", fmt.Errorf("sandbox: java classpath: %w", err)
	}
	optsFile := s.jvmOptsFile
	if optsFile == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		optsFile = filepath.Join(root, jvmOptsRelPath)
	}
	javaArgs := []string{"@" + optsFile, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Djava.security.krb5.conf=" + s.Krb5Conf,
		"-cp", strings.TrimSpace(string(cp)), secureShellMain, s.HadoopConfDir, as.Principal, as.Keytab, tool}
	cmd := exec.CommandContext(ctx, javaBinary(), append(javaArgs, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return stdout.String(), fmt.Errorf("sandbox: hdfs %s as %s: %w", tool, as.Principal, ctx.Err())
		}
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return stdout.String(), &JavaError{MainClass: secureShellMain + " " + tool, ExitCode: exitErr.ExitCode(), Stderr: stderr.String()}
		}
		return stdout.String(), fmt.Errorf("sandbox: hdfs %s as %s: %w", tool, as.Principal, err)
	}
	return stdout.String(), nil
}

// startSecure runs run.sh secure-up under an exclusive file lock, so that of several test
// binaries starting at once one starts it and the others find it healthy.
func startSecure() error {
	root, err := RepoRoot()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSecureStorageUnavailable, err)
	}
	state, err := StateDir()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSecureStorageUnavailable, err)
	}
	lockPath := filepath.Join(state, secureLockPath)
	if err := os.MkdirAll(filepath.Dir(lockPath), 0o755); err != nil {
		return fmt.Errorf("%w: %w", ErrSecureStorageUnavailable, err)
	}
	lock, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSecureStorageUnavailable, err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("%w: lock %s: %w", ErrSecureStorageUnavailable, lockPath, err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if _, err := loadSecureHealthy(); err == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, runScript), "secure-up")
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		tail := ""
		if data, err := os.ReadFile(filepath.Join(state, "logs", "secure-storage.log")); err == nil {
			tail = "--- secure-storage.log (last 30 lines) ---\n" + lastLines(string(data), 30)
		}
		return fmt.Errorf("%w: %s secure-up: %w\n--- output (last %d lines) ---\n%s%s",
			ErrSecureStorageUnavailable, runScript, err, logTailLines, lastLines(out.String(), logTailLines), tail)
	}
	return nil
}

// RestartStopped restarts every stopped NameNode (as standby), so that a test finds two
// NameNodes to fail over between whatever an earlier test left behind.
func (s *SecureStorage) RestartStopped(ctx context.Context) (HAState, error) {
	st, err := s.State(ctx)
	if err != nil {
		return st, err
	}
	for _, n := range st.NameNodes {
		if n.State == "stopped" {
			if st, err = s.RestartNameNode(ctx, n.ID); err != nil {
				return st, err
			}
		}
	}
	return st, nil
}
