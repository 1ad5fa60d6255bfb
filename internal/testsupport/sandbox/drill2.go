package sandbox

import (
	"context"
	"sync"
	"testing"
	"time"
)

// drill2File is the description run.sh drill2-up writes.
const drill2File = "drill-2.json"

// drill2Mu: run.sh starts or reuses the one drill-2 cluster; tests of one
// process ask in turn.
var drill2Mu sync.Mutex

// RequireDrill2Cluster starts or reuses the sandbox's Flink 2.3 session
// cluster that no tenant owns (run.sh drill2-up), the drill cluster of
// version 2.3 beside cluster-c: drills never run on an inventory cluster,
// so rehearsing a 2.3 job needs a second 2.3 cluster. It stays up for the
// next test; `down` stops it. A cluster that cannot be had fails the test.
func RequireDrill2Cluster(t testing.TB) FlinkCluster {
	t.Helper()
	RequirePeers(t) // the storage JVM: HDFS and ZooKeeper
	drill2Mu.Lock()
	defer drill2Mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := runSandboxCommand(ctx, "drill2-up"); err != nil {
		t.Fatalf("the Flink 2.3 drill cluster is required: %v\n%s", err, out)
	}
	c, err := loadSingleCluster(drill2File)
	if err != nil {
		t.Fatalf("the Flink 2.3 drill cluster is required: %v", err)
	}
	return c.FlinkCluster
}
