package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SecureFlinkCluster is the sandbox's Flink 1.20 session cluster on the
// secure storage (sandbox/java/run.sh secure-flink-up): its checkpoints,
// savepoints and HA data live under tenant team-a on the kerberized
// nameservice (hdfs://ns1), and it logs in from the flink principal's
// keytab, as a production JobManager does. HA runs on the sandbox
// ZooKeeper under a fresh cluster-id per start. No job of another test runs
// on it: a governance run over it must resolve every live job's paths with
// the worker's Kerberos login, and the shared clusters' jobs write to the
// plain HDFS.
type SecureFlinkCluster struct {
	singleCluster
}

const (
	secureFlinkFile = "secure-flink.json"
	secureFlinkLock = "java/secure-flink-use.lock"
)

// StartSecureFlinkCluster starts the secure Flink cluster, or reuses the
// one an earlier test started on the same storage peers (the shared peers
// and the secure storage are started too, when they are not up). Tests of
// every test binary take turns on it, holding a file lock until they end,
// so no job of another test runs on it: a test waits here until every job
// an earlier one left has ended (each cancels its own), and fails when one
// does not. sandbox/sandbox.sh down stops it. A test that also holds the
// NameNode failover lock (SecureStorage.HoldFailovers) takes that one
// first. It fails the test when the cluster cannot be had: a test of Flink
// on kerberized HA HDFS never skips.
func StartSecureFlinkCluster(t testing.TB) (*SecureStorage, *SecureFlinkCluster) {
	t.Helper()
	RequirePeers(t) // the storage JVM: ZooKeeper for the cluster's HA
	s := RequireSecureStorage(t)
	t.Cleanup(lockFile(t, secureFlinkLock))
	ctx, cancel := context.WithTimeout(context.Background(), failoverTimeout)
	defer cancel()
	if out, err := runSandboxCommand(ctx, "secure-flink-up"); err != nil {
		t.Fatalf("the secure Flink cluster is required: %v\n%s", err, out)
	}
	c, err := loadSingleCluster(secureFlinkFile)
	if err != nil {
		t.Fatalf("the secure Flink cluster is required: %v", err)
	}
	if err := waitNoLiveJob(ctx, c.RESTURL); err != nil {
		t.Fatalf("the secure Flink cluster still runs a job of an earlier test: %v", err)
	}
	return s, &SecureFlinkCluster{c}
}

// waitNoLiveJob waits until every job of the Flink cluster at restURL has
// reached a terminal state.
func waitNoLiveJob(ctx context.Context, restURL string) error {
	terminal := map[string]bool{"FINISHED": true, "CANCELED": true, "FAILED": true}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		var overview struct {
			Jobs []struct {
				ID    string `json:"jid"`
				Name  string `json:"name"`
				State string `json:"state"`
			} `json:"jobs"`
		}
		var live []string
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(restURL, "/")+"/jobs/overview", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&overview)
			_ = resp.Body.Close()
		}
		if err == nil {
			for _, j := range overview.Jobs {
				if !terminal[j.State] {
					live = append(live, fmt.Sprintf("%s (%s) %s", j.ID, j.Name, j.State))
				}
			}
			if len(live) == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("%s: %w", restURL, err)
			}
			return fmt.Errorf("%s runs %v", restURL, live)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// lockFile takes an exclusive lock on the file rel (under the state dir),
// waiting for other test binaries that hold it, and returns its release.
func lockFile(t testing.TB, rel string) func() {
	t.Helper()
	state, err := StateDir()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(state, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		t.Fatalf("lock %s: %v", p, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}
}
