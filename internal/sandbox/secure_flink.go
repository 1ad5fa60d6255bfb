package sandbox

import (
	"context"
	"sync"
	"testing"
	"time"
)

// SecureFlinkCluster is the sandbox's Flink 1.20 session cluster on the
// secure storage (sandbox/java/run.sh secure-flink-up): its checkpoints,
// savepoints and HA data live under tenant team-a on the kerberized
// nameservice (hdfs://ns1), and it logs in from the flink principal's
// keytab, as a production JobManager does. HA runs on the sandbox
// ZooKeeper under a fresh cluster-id per start.
type SecureFlinkCluster struct {
	singleCluster
}

const secureFlinkFile = "secure-flink.json"

// secureFlinkMu: the cluster is one per sandbox, so tests in one process
// take turns.
var secureFlinkMu sync.Mutex

// StartSecureFlinkCluster starts a fresh secure Flink cluster (the shared
// peers and the secure storage too, when they are not up) and stops it when
// the test ends. It fails the test when the cluster cannot be had: a test
// of Flink on kerberized HA HDFS never skips.
func StartSecureFlinkCluster(t testing.TB) (*SecureStorage, *SecureFlinkCluster) {
	t.Helper()
	RequirePeers(t) // the storage JVM: ZooKeeper for the cluster's HA
	s := RequireSecureStorage(t)
	secureFlinkMu.Lock()
	t.Cleanup(func() {
		defer secureFlinkMu.Unlock()
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
