package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// FailoverCluster is the sandbox's killable Flink 1.20 session cluster
// (sandbox/java/run.sh failover-up): no other test uses it, so a test may
// crash its JobManager. It has a tenant root of its own (team-failover) on
// the sandbox HDFS and a fresh HA cluster-id per start, on the sandbox
// ZooKeeper, so a restart recovers its jobs as a crashed JobManager does.
type FailoverCluster struct {
	singleCluster
}

// singleCluster is a Flink 1.20 session cluster run.sh starts on its own
// (failover, secure-flink), as its JSON file describes it.
type singleCluster struct {
	FlinkCluster
	// PID is the cluster's JVM (JobManager and TaskManager in one).
	PID int `json:"pid"`
	// Log is the JVM's log file.
	Log string `json:"log"`
}

const (
	failoverFile = "failover.json"
	// A restart waits out ZooKeeper's expiry of the dead JobManager's session
	// (run.sh REST_WAIT_SECONDS bounds the wait for REST).
	failoverTimeout = 6 * time.Minute
)

// failoverMu: the failover cluster is one per sandbox, so tests in one
// process take turns.
var failoverMu sync.Mutex

// StartFailoverCluster starts a fresh failover cluster (the shared peers
// too, when they are not up) and stops it when the test ends. It fails the
// test when the cluster cannot be had: a test that needs a real failover
// never skips.
func StartFailoverCluster(t testing.TB) *FailoverCluster {
	t.Helper()
	RequirePeers(t) // the storage JVM: HDFS and ZooKeeper
	failoverMu.Lock()
	c := &FailoverCluster{}
	t.Cleanup(func() {
		defer failoverMu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := runSandboxCommand(ctx, "failover-down"); err != nil {
			t.Errorf("stop the failover cluster: %v\n%s", err, out)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), failoverTimeout)
	defer cancel()
	if out, err := runSandboxCommand(ctx, "failover-up"); err != nil {
		t.Fatalf("the failover Flink cluster is required: %v\n%s", err, out)
	}
	if err := c.load(); err != nil {
		t.Fatalf("the failover Flink cluster is required: %v", err)
	}
	return c
}

// Kill ends the cluster's JVM with SIGKILL, as a crashed JobManager host:
// no shutdown hook runs, its HA data stays in ZooKeeper and on HDFS.
func (c *FailoverCluster) Kill(ctx context.Context) error {
	if out, err := runSandboxCommand(ctx, "failover-kill"); err != nil {
		return fmt.Errorf("kill failover cluster %s (pid %d): %w\n%s", c.ClusterID, c.PID, err, out)
	}
	return nil
}

// Restart starts the killed cluster again with the same HA cluster-id on
// the same REST port, and returns once REST answers (after ZooKeeper has
// expired the dead JobManager's session); its jobs then recover from HA.
func (c *FailoverCluster) Restart(ctx context.Context) error {
	before := c.FlinkCluster
	if out, err := runSandboxCommand(ctx, "failover-restart"); err != nil {
		return fmt.Errorf("restart failover cluster %s: %w\n%s", c.ClusterID, err, out)
	}
	if err := c.load(); err != nil {
		return err
	}
	if c.RESTURL != before.RESTURL || c.ClusterID != before.ClusterID {
		return fmt.Errorf("failover cluster restarted as %s at %s, was %s at %s", c.ClusterID, c.RESTURL, before.ClusterID, before.RESTURL)
	}
	return nil
}

func (c *FailoverCluster) load() error {
	next, err := loadSingleCluster(failoverFile)
	if err != nil {
		return err
	}
	c.singleCluster = next
	return nil
}

// loadSingleCluster reads the JSON file run.sh wrote for a cluster it
// started on its own.
func loadSingleCluster(file string) (singleCluster, error) {
	dir, err := StateDir()
	if err != nil {
		return singleCluster{}, err
	}
	path := filepath.Join(dir, file)
	data, err := os.ReadFile(path)
	if err != nil {
		return singleCluster{}, fmt.Errorf("%w: %w", ErrPeersUnavailable, err)
	}
	var c singleCluster
	if err := json.Unmarshal(data, &c); err != nil {
		return singleCluster{}, fmt.Errorf("%w: %s: %w", ErrPeersUnavailable, path, err)
	}
	if c.ClusterID == "" || c.RESTURL == "" || c.PID <= 0 {
		return singleCluster{}, fmt.Errorf("%w: %s: clusterId, restUrl and pid are required, got %q, %q, %d", ErrPeersUnavailable, path, c.ClusterID, c.RESTURL, c.PID)
	}
	return c, nil
}

// runSandboxCommand runs sandbox/java/run.sh COMMAND and returns the tail
// of its output.
func runSandboxCommand(ctx context.Context, command string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, runScript), command)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return lastLines(out.String(), logTailLines), err
}
