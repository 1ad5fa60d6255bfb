package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ErrPeersUnavailable is returned (wrapped) when the Java sandbox (HDFS, ZooKeeper and the Flink
// session clusters) is not running and could not be started.
var ErrPeersUnavailable = errors.New("sandbox: java peers unavailable")

// ErrInvalidArgument is returned (wrapped) for a bad argument to a Peers method.
var ErrInvalidArgument = errors.New("sandbox: invalid argument")

// HDFSEndpoint is the sandbox NameNode. User is the HDFS user every sandbox JVM runs as (the
// HDFS superuser); Go clients must connect as it to write under the tenant roots.
type HDFSEndpoint struct {
	URI      string `json:"uri"`      // hdfs://127.0.0.1:PORT
	NameNode string `json:"namenode"` // 127.0.0.1:PORT
	User     string `json:"user"`
}

// Tenant is a team's HDFS root with its namespace quota (files + directories).
type Tenant struct {
	Name           string `json:"name"`
	Root           string `json:"root"`
	NamespaceQuota int64  `json:"namespaceQuota"`
}

// FlinkCluster is one Flink session cluster of the sandbox.
type FlinkCluster struct {
	ClusterID     string `json:"clusterId"`
	Tenant        string `json:"tenant"`
	RESTURL       string `json:"restUrl"`
	CheckpointDir string `json:"checkpointDir"`
	SavepointDir  string `json:"savepointDir"`
	HAStorageDir  string `json:"haStorageDir"`
	FlinkVersion  string `json:"flinkVersion"` // e.g. 1.20.3, 2.3.0
	// SampleJobJar is the sample job built against this cluster's Flink line: a jar built for
	// one line does not run on the other.
	SampleJobJar string `json:"sampleJobJar"`
	// JavaClasspathFile holds this cluster's runtime classpath (its Flink line's jars), for
	// Flink tools such as the Checkpoints loader run against what this line writes.
	JavaClasspathFile string `json:"javaClasspathFile"`
}

// Line is the cluster's Flink line, major.minor of FlinkVersion ("1.20", "2.3").
func (c FlinkCluster) Line() string {
	return flinkLine(c.FlinkVersion)
}

// The sandbox's Flink lines. LineDefault is the one RequirePeers and LoadPeers describe, so
// tests written before a second line existed keep running on the clusters they always had;
// a test runs on another line through RequirePeersLine.
const (
	Line120     = "1.20"
	Line2       = "2.3"
	LineDefault = Line120
)

// Lines lists every Flink line the sandbox runs, for tests that run on each.
func Lines() []string { return []string{Line120, Line2} }

func flinkLine(version string) string {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return version
	}
	return parts[0] + "." + parts[1]
}

// SampleJob is the stateful job jar users upload (see sandbox/java/README.md for its arguments).
type SampleJob struct {
	Jar        string `json:"jar"`
	EntryClass string `json:"entryClass"`
}

// Peers describes the running Java sandbox, as written by sandbox/java/run.sh to
// var/sandbox/peers.json.
type Peers struct {
	HDFS              HDFSEndpoint   `json:"hdfs"`
	ZooKeeper         string         `json:"zookeeper"`
	Tenants           []Tenant       `json:"tenants"`
	Clusters          []FlinkCluster `json:"clusters"`
	SampleJob         SampleJob      `json:"sampleJob"`
	JavaClasspathFile string         `json:"javaClasspathFile"`
	LogDir            string         `json:"logDir"`

	// Line is the Flink line this view describes (Clusters, Tenants and SampleJob are that
	// line's); Cluster and Tenant still find every cluster and tenant of the sandbox.
	Line string `json:"-"`
	// LineClasspathFile is the runtime classpath of this view's Flink line (JavaClasspathFile
	// is the tools' classpath: Hadoop shell, quotas, Flink 1.20).
	LineClasspathFile string `json:"-"`

	allClusters []FlinkCluster
	allTenants  []Tenant
	jvmOptsFile string
}

// JavaError is returned by JavaMain (and the methods built on it) when the JVM exits non-zero.
type JavaError struct {
	MainClass string
	ExitCode  int
	Stderr    string
}

func (e *JavaError) Error() string {
	return fmt.Sprintf("sandbox: java %s exited with code %d: %s", e.MainClass, e.ExitCode, strings.TrimSpace(lastLines(e.Stderr, 20)))
}

const (
	peersFile        = "peers.json"
	runScript        = "sandbox/java/run.sh"
	jvmOptsRelPath   = "sandbox/java/conf/jvm-opts.txt"
	hdfsQuotaMain    = "io.github.flinkmaint.sandbox.peers.HdfsQuota"
	fsShellMain      = "org.apache.hadoop.fs.FsShell"
	startTimeout     = 20 * time.Minute // a cold start downloads and builds with Maven
	healthTimeout    = 5 * time.Second
	logTailLines     = 60
	startLockRelPath = "java/peers-start.lock"
)

var (
	startMu      sync.Mutex
	startTried   bool
	startFailure error
)

// RequirePeers returns the running Java sandbox, starting it (once per test process) when it is
// not up. It fails the test, with the tail of the start log, when the sandbox cannot be had:
// the tests that use it prove behaviour against real HDFS and Flink and never skip.
// It describes the default Flink line (LineDefault); RequirePeersLine describes another.
func RequirePeers(t testing.TB) *Peers {
	t.Helper()
	return RequirePeersLine(t, LineDefault)
}

// RequirePeersLine is RequirePeers for the clusters of one Flink line (see Lines): Clusters,
// Tenants and SampleJob are that line's.
func RequirePeersLine(t testing.TB, line string) *Peers {
	t.Helper()
	p, err := LoadPeersLine(line)
	if err != nil {
		t.Fatalf("real HDFS/Flink peers are required: %v", err)
	}
	return p
}

// LoadPeers returns the running Java sandbox, starting it with sandbox/java/run.sh up when
// peers.json is missing or a peer does not answer. Only one start is attempted per process;
// a file lock keeps parallel processes from starting it twice. It describes the default
// Flink line (LineDefault).
func LoadPeers() (*Peers, error) {
	return LoadPeersLine(LineDefault)
}

// LoadPeersLine is LoadPeers for the clusters of one Flink line (see Lines).
func LoadPeersLine(line string) (*Peers, error) {
	p, err := loadPeersAll()
	if err != nil {
		return nil, err
	}
	return p.view(line)
}

// view narrows the whole sandbox to one Flink line.
func (p *Peers) view(line string) (*Peers, error) {
	v := *p
	v.Line = line
	v.Clusters, v.Tenants = nil, nil
	tenants := map[string]bool{}
	var versions []string
	for _, c := range p.allClusters {
		versions = append(versions, c.ClusterID+"="+c.FlinkVersion)
		if c.Line() != line {
			continue
		}
		v.Clusters = append(v.Clusters, c)
		tenants[c.Tenant] = true
	}
	if len(v.Clusters) == 0 {
		return nil, fmt.Errorf("%w: no cluster runs Flink line %q (valid: %s; peers.json has %s)",
			ErrInvalidArgument, line, strings.Join(Lines(), ", "), strings.Join(versions, ", "))
	}
	for _, tn := range p.allTenants {
		if tenants[tn.Name] {
			v.Tenants = append(v.Tenants, tn)
		}
	}
	first := v.Clusters[0]
	if first.SampleJobJar != "" {
		v.SampleJob.Jar = first.SampleJobJar
	}
	v.LineClasspathFile = first.JavaClasspathFile
	if v.LineClasspathFile == "" {
		v.LineClasspathFile = p.JavaClasspathFile
	}
	for _, c := range v.Clusters[1:] {
		if c.SampleJobJar != first.SampleJobJar || c.JavaClasspathFile != first.JavaClasspathFile {
			return nil, fmt.Errorf("%w: clusters %s and %s of line %s name different sample jars or classpaths",
				ErrPeersUnavailable, first.ClusterID, c.ClusterID, line)
		}
	}
	return &v, nil
}

// RequireMixedFleet is RequirePeers for every cluster of every Flink line, as a fleet that
// runs several Flink versions at once: Clusters lists them all (default line first), each
// with its own SampleJobJar; SampleJob and Tenants describe the default line.
func RequireMixedFleet(t testing.TB) *Peers {
	t.Helper()
	p, err := loadPeersAll()
	if err == nil {
		var v *Peers
		if v, err = p.view(LineDefault); err == nil {
			v.Line = ""
			v.Clusters = nil
			for _, line := range Lines() {
				for _, c := range p.allClusters {
					if c.Line() == line {
						v.Clusters = append(v.Clusters, c)
					}
				}
			}
			if len(v.Clusters) != len(p.allClusters) {
				err = fmt.Errorf("%w: peers.json has clusters of lines other than %s", ErrPeersUnavailable, strings.Join(Lines(), ", "))
			}
		}
		if err == nil {
			return v
		}
	}
	t.Fatalf("real HDFS/Flink peers of every Flink line are required: %v", err)
	return nil
}

// SampleJar is the sample job jar built for cluster c's Flink line.
func (p *Peers) SampleJar(c FlinkCluster) string {
	if c.SampleJobJar != "" {
		return c.SampleJobJar
	}
	return p.SampleJob.Jar
}

func loadPeersAll() (*Peers, error) {
	if p, err := loadHealthy(); err == nil {
		return p, nil
	}
	startMu.Lock()
	defer startMu.Unlock()
	if p, err := loadHealthy(); err == nil {
		return p, nil
	}
	if startTried {
		return nil, startFailure
	}
	startTried = true
	startFailure = startPeers()
	if startFailure != nil {
		return nil, startFailure
	}
	p, err := loadHealthy()
	if err != nil {
		startFailure = fmt.Errorf("%w: started, but still not healthy: %w", ErrPeersUnavailable, err)
		return nil, startFailure
	}
	return p, nil
}

// Cluster returns the session cluster with the given high-availability.cluster-id, of any
// Flink line.
func (p *Peers) Cluster(id string) (FlinkCluster, bool) {
	all := p.allClusters
	if all == nil {
		all = p.Clusters
	}
	for _, c := range all {
		if c.ClusterID == id {
			return c, true
		}
	}
	return FlinkCluster{}, false
}

// Tenant returns the tenant with the given name, of any Flink line.
func (p *Peers) Tenant(name string) (Tenant, bool) {
	all := p.allTenants
	if all == nil {
		all = p.Tenants
	}
	for _, tn := range all {
		if tn.Name == name {
			return tn, true
		}
	}
	return Tenant{}, false
}

// HadoopShell runs Hadoop's FsShell against the sandbox HDFS ("-ls", "-R", "/user/app", ...)
// and returns its standard output.
func (p *Peers) HadoopShell(ctx context.Context, args ...string) (string, error) {
	if len(args) == 0 {
		return "", fmt.Errorf("%w: HadoopShell needs a command, e.g. -ls /user/app", ErrInvalidArgument)
	}
	return p.JavaMain(ctx, fsShellMain, append([]string{"-fs", p.HDFS.URI}, args...)...)
}

// SetNamespaceQuota sets the namespace quota (files + directories, the directory itself
// included) of an HDFS directory, as "hdfs dfsadmin -setQuota n path" does.
func (p *Peers) SetNamespaceQuota(ctx context.Context, path string, n int64) error {
	if err := checkHDFSPath(path); err != nil {
		return err
	}
	if n < 1 {
		return fmt.Errorf("%w: namespace quota %d for %s must be >= 1 (use ClearNamespaceQuota to remove it)", ErrInvalidArgument, n, path)
	}
	_, err := p.JavaMain(ctx, hdfsQuotaMain, p.HDFS.URI, "set", path, strconv.FormatInt(n, 10))
	return err
}

// ClearNamespaceQuota removes the namespace quota of an HDFS directory.
func (p *Peers) ClearNamespaceQuota(ctx context.Context, path string) error {
	if err := checkHDFSPath(path); err != nil {
		return err
	}
	_, err := p.JavaMain(ctx, hdfsQuotaMain, p.HDFS.URI, "clear", path)
	return err
}

var javaClassName = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*(\.[A-Za-z_$][A-Za-z0-9_$]*)*$`)

// JavaMain runs mainClass on the sandbox classpath (Flink, Hadoop client and minicluster, the
// sandbox's own mains) with the JVM options Flink and Hadoop need on Java 17, as the sandbox
// HDFS user. It returns standard output; a non-zero exit is a *JavaError carrying stderr.
func (p *Peers) JavaMain(ctx context.Context, mainClass string, args ...string) (string, error) {
	if p.JavaClasspathFile == "" {
		return "", fmt.Errorf("%w: Peers.JavaClasspathFile is empty (load Peers with LoadPeers)", ErrInvalidArgument)
	}
	return p.javaMain(ctx, p.JavaClasspathFile, mainClass, args...)
}

// LineJavaMain is JavaMain on the runtime classpath of this view's Flink line (Flink and the
// Hadoop client, no minicluster and none of the sandbox's tools), e.g. to load with Flink 2.x
// classes a _metadata file that Flink 2.x wrote.
func (p *Peers) LineJavaMain(ctx context.Context, mainClass string, args ...string) (string, error) {
	if p.LineClasspathFile == "" {
		return "", fmt.Errorf("%w: Peers.LineClasspathFile is empty (load Peers with LoadPeersLine)", ErrInvalidArgument)
	}
	return p.javaMain(ctx, p.LineClasspathFile, mainClass, args...)
}

func (p *Peers) javaMain(ctx context.Context, classpathFile, mainClass string, args ...string) (string, error) {
	if !javaClassName.MatchString(mainClass) {
		return "", fmt.Errorf("%w: main class %q is not a fully qualified Java class name", ErrInvalidArgument, mainClass)
	}
	cp, err := os.ReadFile(classpathFile)
	if err != nil {
		return "", fmt.Errorf("sandbox: java classpath: %w", err)
	}
	optsFile := p.jvmOptsFile
	if optsFile == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		optsFile = filepath.Join(root, jvmOptsRelPath)
	}
	javaArgs := []string{"@" + optsFile, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-cp", strings.TrimSpace(string(cp)), mainClass}
	cmd := exec.CommandContext(ctx, javaBinary(), append(javaArgs, args...)...)
	cmd.Env = append(os.Environ(), "HADOOP_USER_NAME="+p.HDFS.User)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return stdout.String(), fmt.Errorf("sandbox: java %s: %w", mainClass, ctx.Err())
		}
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return stdout.String(), &JavaError{MainClass: mainClass, ExitCode: exitErr.ExitCode(), Stderr: stderr.String()}
		}
		return stdout.String(), fmt.Errorf("sandbox: java %s: %w", mainClass, err)
	}
	return stdout.String(), nil
}

func javaBinary() string {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		return filepath.Join(home, "bin", "java")
	}
	return "java"
}

func checkHDFSPath(path string) error {
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("%w: HDFS path %q must be absolute (start with /), not a URI or relative path", ErrInvalidArgument, path)
	}
	return nil
}

// loadHealthy reads peers.json and checks that the NameNode and every REST endpoint answer.
func loadHealthy() (*Peers, error) {
	dir, err := StateDir()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, peersFile))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPeersUnavailable, err)
	}
	var p Peers
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrPeersUnavailable, filepath.Join(dir, peersFile), err)
	}
	if err := p.validate(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrPeersUnavailable, filepath.Join(dir, peersFile), err)
	}
	if root, err := RepoRoot(); err == nil {
		p.jvmOptsFile = filepath.Join(root, jvmOptsRelPath)
	}
	p.allClusters, p.allTenants = p.Clusters, p.Tenants
	ctx, cancel := context.WithTimeout(context.Background(), healthTimeout)
	defer cancel()
	if err := p.checkHealth(ctx); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPeersUnavailable, err)
	}
	return &p, nil
}

func (p *Peers) validate() error {
	switch {
	case p.HDFS.NameNode == "" || p.HDFS.URI == "" || p.HDFS.User == "":
		return errors.New("hdfs.uri, hdfs.namenode and hdfs.user are required")
	case len(p.Clusters) == 0:
		return errors.New("no clusters")
	case p.SampleJob.Jar == "" || p.SampleJob.EntryClass == "":
		return errors.New("sampleJob.jar and sampleJob.entryClass are required")
	case p.JavaClasspathFile == "":
		return errors.New("javaClasspathFile is required")
	}
	for _, c := range p.Clusters {
		if c.ClusterID == "" || c.RESTURL == "" {
			return fmt.Errorf("cluster %+v: clusterId and restUrl are required", c)
		}
	}
	return nil
}

func (p *Peers) checkHealth(ctx context.Context) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", p.HDFS.NameNode)
	if err != nil {
		return fmt.Errorf("HDFS NameNode %s: %w", p.HDFS.NameNode, err)
	}
	_ = conn.Close()
	for _, c := range p.Clusters {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.RESTURL+"/overview", nil)
		if err != nil {
			return fmt.Errorf("cluster %s: %w", c.ClusterID, err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("cluster %s REST %s: %w", c.ClusterID, c.RESTURL, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("cluster %s REST %s/overview: HTTP %d", c.ClusterID, c.RESTURL, resp.StatusCode)
		}
	}
	return nil
}

// startPeers runs run.sh up under an exclusive file lock, so that of several test binaries
// starting at once one starts the sandbox and the others find it healthy.
func startPeers() error {
	root, err := RepoRoot()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPeersUnavailable, err)
	}
	state, err := StateDir()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPeersUnavailable, err)
	}
	lockPath := filepath.Join(state, startLockRelPath)
	if err := os.MkdirAll(filepath.Dir(lockPath), 0o755); err != nil {
		return fmt.Errorf("%w: %w", ErrPeersUnavailable, err)
	}
	lock, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPeersUnavailable, err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("%w: lock %s: %w", ErrPeersUnavailable, lockPath, err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if _, err := loadHealthy(); err == nil {
		return nil
	}

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, runScript), "up")
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: %s up: %w\n--- output (last %d lines) ---\n%s%s",
			ErrPeersUnavailable, runScript, err, logTailLines, lastLines(out.String(), logTailLines), peerLogTails(state))
	}
	return nil
}

// peerLogTails returns the end of each sandbox JVM log, for a failed start's error.
func peerLogTails(state string) string {
	var b strings.Builder
	for _, name := range []string{"storage", "cluster-a", "cluster-b", "cluster-c", "maven-build"} {
		data, err := os.ReadFile(filepath.Join(state, "logs", name+".log"))
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "--- %s.log (last 20 lines) ---\n%s", name, lastLines(string(data), 20))
	}
	return b.String()
}

func lastLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.Join(lines, "")
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	return out
}
