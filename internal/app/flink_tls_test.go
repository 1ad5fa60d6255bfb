//go:build realpeers

package app_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// TestFlinkRESTMutualTLSDiscovery reaches a real Flink cluster whose REST
// endpoint serves TLS only and refuses clients without a certificate its
// truststore trusts (security.ssl.rest.enabled and
// security.ssl.rest.authentication-enabled). A client without a
// certificate is refused; the worker's discovery, with the cluster's CA
// from the static inventory and the client certificate of the fleet
// default (flink.rest, merged key by key), finds its running job; a
// configuration that trusts the wrong CA fails discovery with an error
// naming the cluster, its URL and that CA file, and not retried. A window
// on such a cluster, configured as docs/install.md says, runs in
// TestInstallPathAsDocumented (deploy).
func TestFlinkRESTMutualTLSDiscovery(t *testing.T) {
	t.Parallel()
	peers := sandbox.RequirePeers(t)
	ssl := sandbox.RequireSSLCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// Without a client certificate the endpoint refuses: the cluster is
	// what production's security.ssl.rest.* makes.
	bare, err := flink.New(flink.Options{BaseURL: ssl.RESTURL, TLS: flink.TLSOptions{CAFile: ssl.TLS.CAFile}, RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bare.ListJobs(ctx); flink.Reason(err) != flink.ErrorReasonTLS || !strings.Contains(err.Error(), "refused the handshake") {
		t.Fatalf("a client without a certificate: want %s saying the endpoint refused the handshake, got %v", flink.ErrorReasonTLS, err)
	}
	fc, err := flink.New(flink.Options{BaseURL: ssl.RESTURL, RequestTimeout: 30 * time.Second,
		TLS: flink.TLSOptions{CAFile: ssl.TLS.CAFile, CertFile: ssl.TLS.CertFile, KeyFile: ssl.TLS.KeyFile}})
	if err != nil {
		t.Fatal(err)
	}

	suffix := peertest.RandomHex(4)
	testRoot := peers.HDFS.URI + "/flinkmaint-test/tls-" + suffix
	tenantRoot := testRoot + "/" + ssl.ClusterID
	hc, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{peers.HDFS.NameNode}, User: peers.HDFS.User})
	if err != nil {
		t.Fatal(err)
	}
	err = hc.MkdirAll(strings.TrimPrefix(tenantRoot, peers.HDFS.URI)+"/checkpoints", 0o755)
	hc.Close()
	if err != nil {
		t.Fatal(err)
	}
	name := "tls-" + suffix
	cl := inventory.Cluster{Tenant: "tls-" + suffix, ClusterID: ssl.ClusterID, Mode: inventory.ModeSession, RESTURL: ssl.RESTURL,
		CheckpointDir: tenantRoot + "/checkpoints", SavepointDir: tenantRoot + "/savepoints", HAStorageDir: ssl.HAStorageDir,
		REST: &inventory.RESTSecurity{TLS: inventory.RESTTLS{CAFile: ssl.TLS.CAFile}}}
	args := []string{"--job-name", name, "--keys", "2000", "--value-bytes", "256", "--rate", "500", "--checkpoint-dir", cl.CheckpointDir}
	cl.Jobs = []inventory.JobSpec{{Name: name, Restart: inventory.RestartRecipe{
		Kind: inventory.RestartRESTJarRun, Jar: ssl.SampleJobJar, EntryClass: peers.SampleJob.EntryClass, ProgramArgs: args}}}
	static := inventory.Static{Tenants: []inventory.Tenant{{Name: cl.Tenant, Root: tenantRoot}}, Clusters: []inventory.Cluster{cl}}

	// The job, submitted through REST (jar upload and run) over mutual TLS.
	jarID, err := fc.UploadJar(ctx, ssl.SampleJobJar)
	if err != nil {
		t.Fatal(err)
	}
	started, err := fc.RunJar(ctx, jarID, flink.RunJarRequest{EntryClass: peers.SampleJob.EntryClass, ProgramArgs: args})
	if err != nil {
		t.Fatal(err)
	}
	_ = fc.DeleteJar(ctx, jarID)
	t.Cleanup(func() { _ = fc.CancelJob(context.Background(), started.JobID) })
	peertest.WaitForCheckpoint(t, ctx, fc, started.JobID)

	cfg := config.Default()
	cfg.Storage.HDFSUser = peers.HDFS.User
	cfg.Storage.WritableRoots = []string{testRoot}
	cfg.Inventory.StaticFile = peertest.WriteInventory(t, static)
	cfg.Cleanup.TrashRoot, cfg.Cleanup.PlanDir = testRoot+"/trash", testRoot+"/plans"
	cfg.Flink.REST = inventory.RESTSecurity{TLS: inventory.RESTTLS{CertFile: ssl.TLS.CertFile, KeyFile: ssl.TLS.KeyFile}}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the TLS configuration is refused: %v", err)
	}
	discover := func(cfg config.Config, label string) (core.DiscoverJobsResult, error) {
		acts := peertest.NewPorts(t, cfg, label)
		var s testsuite.WorkflowTestSuite
		env := s.NewTestActivityEnvironment()
		app.RegisterActivities(env, acts)
		var res core.DiscoverJobsResult
		v, err := env.ExecuteActivity(app.NewFamilies(acts).Windows.DiscoverJobs, core.DiscoverJobsInput{Scope: core.Scope{IncludeJobs: []string{name}}})
		if err == nil {
			err = v.Get(&res)
		}
		return res, err
	}
	found, err := discover(cfg, "tls-right-ca")
	if err != nil {
		t.Fatalf("discovery over mutual TLS: %v", err)
	}
	if len(found.Jobs) != 1 || found.Jobs[0].JobID != started.JobID {
		t.Fatalf("discovery over mutual TLS found %+v; want job %s", found.Jobs, started.JobID)
	}

	// The same cluster, trusted with a CA that did not sign its certificate.
	wrong := static
	wrong.Clusters = []inventory.Cluster{cl}
	wrong.Clusters[0].REST = &inventory.RESTSecurity{TLS: inventory.RESTTLS{CAFile: ssl.TLS.OtherCAFile}}
	cfg.Inventory.StaticFile = peertest.WriteInventory(t, wrong)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("a readable CA file is refused: %v", err)
	}
	_, err = discover(cfg, "tls-wrong-ca")
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || !appErr.NonRetryable() || appErr.Type() != flink.ErrorReasonTLS {
		t.Fatalf("discovery trusting the wrong CA: want a non-retryable %s, got %v", flink.ErrorReasonTLS, err)
	}
	for _, want := range []string{"cluster " + ssl.ClusterID + " at " + ssl.RESTURL, "CA file " + ssl.TLS.OtherCAFile} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("discovery error lacks %q:\n%v", want, err)
		}
	}
}
