package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// sslFile is the description run.sh ssl-up writes.
const sslFile = "flink-ssl.json"

// sslMu: run.sh starts or reuses the one TLS cluster; tests of one process
// ask in turn.
var sslMu sync.Mutex

// SSLCluster is the sandbox's Flink 1.20 session cluster whose REST
// endpoint serves TLS only and refuses clients without a certificate its
// truststore trusts (security.ssl.rest.enabled and
// security.ssl.rest.authentication-enabled). Its tenant root is
// /user/app/flink-ssl on the sandbox HDFS.
type SSLCluster struct {
	FlinkCluster
	// TLS holds the PEM files a client needs, and one it must not trust.
	TLS SSLFiles `json:"tls"`
}

// SSLFiles are the TLS cluster's PEM files.
type SSLFiles struct {
	// CAFile is the certificate that signs the endpoint's (a self-signed
	// one: the endpoint's own).
	CAFile string `json:"caFile"`
	// CertFile and KeyFile are a client certificate the endpoint's
	// truststore trusts, and its key.
	CertFile string `json:"certFile"`
	KeyFile  string `json:"keyFile"`
	// OtherCAFile is a CA that signed nothing of the cluster's: trusting it
	// alone fails the handshake.
	OtherCAFile string `json:"otherCaFile"`
}

// RequireSSLCluster starts or reuses the TLS cluster (run.sh ssl-up). It
// stays up for the next test; `down` stops it. A cluster that cannot be had
// fails the test.
func RequireSSLCluster(t testing.TB) SSLCluster {
	t.Helper()
	RequirePeers(t) // the storage JVM: HDFS and ZooKeeper
	sslMu.Lock()
	defer sslMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := runSandboxCommand(ctx, "ssl-up"); err != nil {
		t.Fatalf("the REST TLS Flink cluster is required: %v\n%s", err, out)
	}
	c, err := loadSSLCluster()
	if err != nil {
		t.Fatalf("the REST TLS Flink cluster is required: %v", err)
	}
	return c
}

func loadSSLCluster() (SSLCluster, error) {
	sc, err := loadSingleCluster(sslFile)
	if err != nil {
		return SSLCluster{}, err
	}
	dir, err := StateDir()
	if err != nil {
		return SSLCluster{}, err
	}
	path := filepath.Join(dir, sslFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return SSLCluster{}, fmt.Errorf("%w: %w", ErrPeersUnavailable, err)
	}
	var files struct {
		TLS SSLFiles `json:"tls"`
	}
	if err := json.Unmarshal(data, &files); err != nil {
		return SSLCluster{}, fmt.Errorf("%w: %s: %w", ErrPeersUnavailable, path, err)
	}
	f := files.TLS
	for _, p := range []string{f.CAFile, f.CertFile, f.KeyFile, f.OtherCAFile} {
		if _, err := os.Stat(p); err != nil {
			return SSLCluster{}, fmt.Errorf("%w: %s: tls files caFile, certFile, keyFile and otherCaFile must exist: %w", ErrPeersUnavailable, path, err)
		}
	}
	return SSLCluster{FlinkCluster: sc.FlinkCluster, TLS: f}, nil
}
