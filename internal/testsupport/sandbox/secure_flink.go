package sandbox

import (
	"context"
	"os"
	"path/filepath"
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

// StartSecureFlinkCluster starts a fresh secure Flink cluster (the shared
// peers and the secure storage too, when they are not up) and stops it when
// the test ends. The cluster is one per sandbox: tests of every test binary
// take turns, holding a file lock until they end. A test that also holds
// the NameNode failover lock (SecureStorage.HoldFailovers) takes that one
// first. It fails the test when the cluster cannot be had: a test of Flink
// on kerberized HA HDFS never skips.
func StartSecureFlinkCluster(t testing.TB) (*SecureStorage, *SecureFlinkCluster) {
	t.Helper()
	RequirePeers(t) // the storage JVM: ZooKeeper for the cluster's HA
	s := RequireSecureStorage(t)
	unlock := lockFile(t, secureFlinkLock)
	t.Cleanup(func() {
		defer unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := runSandboxCommand(ctx, "secure-flink-down"); err != nil {
			t.Errorf("stop the secure Flink cluster: %v\n%s", err, out)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), failoverTimeout)
	defer cancel()
	if out, err := runSandboxCommand(ctx, "secure-flink-up"); err != nil {
		t.Fatalf("the secure Flink cluster is required: %v\n%s", err, out)
	}
	c, err := loadSingleCluster(secureFlinkFile)
	if err != nil {
		t.Fatalf("the secure Flink cluster is required: %v", err)
	}
	return s, &SecureFlinkCluster{c}
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
