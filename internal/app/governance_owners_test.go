//go:build realpeers

package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/governance"
	"github.com/flinkmaint/flinkmaint/internal/app"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/peertest"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/sandbox"
)

// TestGovernanceHADirOwnedByConfiguredClusterIDOnRealPeers lists a real,
// live cluster under another name than its high-availability.cluster-id
// (as an inventory of Kubernetes deployment names does). Its HA dir
// matches no inventory name, and with any TTL it used to be planned as a
// retired cluster's; it is kept because the cluster says it is its own.
func TestGovernanceHADirOwnedByConfiguredClusterIDOnRealPeers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var tenantRoot string
	e := newFailClosedEnvWith(t, ctx, func(e *failClosedEnv, s *inventory.Static, _ *config.Config) {
		c := e.peers.Clusters[0]
		tenantRoot = strings.TrimSuffix(c.HAStorageDir, "/ha")
		s.Tenants = []inventory.Tenant{{Name: e.tenant[0], Root: tenantRoot}}
		s.Clusters = []inventory.Cluster{{Tenant: e.tenant[0], ClusterID: "orders-prod-" + e.tenant[0], Mode: inventory.ModeSession,
			RESTURL: c.RESTURL, HAStorageDir: c.HAStorageDir}}
	})
	c := e.peers.Clusters[0]
	liveHA := c.HAStorageDir + "/" + c.ClusterID
	if !e.exists(liveHA) {
		t.Fatalf("the live cluster's HA dir %s does not exist", liveHA)
	}
	_, plan := e.plan(ctx, "ha-owner", core.Scope{Tenants: []string{e.tenant[0]}}, cleanup.Policy{HATTL: time.Nanosecond})
	for _, it := range plan.Delete {
		if strings.HasPrefix(it.Path+"/", liveHA+"/") || strings.HasPrefix(liveHA+"/", it.Path+"/") {
			t.Errorf("%s planned as %s: it is the HA dir of live cluster %s (listed as orders-prod)", it.Path, it.Rule, c.ClusterID)
		}
	}
	var kept *cleanup.Kept
	for i, k := range plan.Keep {
		if k.Path == liveHA {
			kept = &plan.Keep[i]
		}
	}
	if kept == nil || kept.Reason != cleanup.KeepLiveCluster || !strings.Contains(kept.By, "configured") {
		t.Fatalf("%s kept as %+v; want %s by its configured cluster-id", liveHA, kept, cleanup.KeepLiveCluster)
	}
}

// TestGovernanceGraceBelowACheckpointTimeoutOnRealPeers: a live job whose
// checkpoints may run for two hours makes a plan with a one-hour grace
// period fail, naming the job, instead of treating its uploads as garbage;
// and one whose longest checkpoint timeout of the fleet is shorter (the
// default 10m) fails naming that setting.
//
// Its job runs on the sandbox's Flink 2.3 cluster that no tenant owns
// (drill-2, no other scenario's inventory): on a shared cluster, every plan
// of the package's other scenarios would fail the same way beside it.
func TestGovernanceGraceBelowACheckpointTimeoutOnRealPeers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	own := sandbox.RequireDrill2Cluster(t)
	e := newFailClosedEnvWith(t, ctx, func(e *failClosedEnv, static *inventory.Static, _ *config.Config) {
		static.Clusters[0].ClusterID, static.Clusters[0].RESTURL = own.ClusterID, own.RESTURL
	})
	fc := peertest.FlinkClient(t, own.RESTURL)
	jar, err := fc.UploadJar(ctx, own.SampleJobJar)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fc.DeleteJar(context.Background(), jar) })
	e.jar[own.RESTURL] = jar // the 2.3 build
	fc, job := e.start(ctx, own, "slow-checkpoints", e.root+"/a/checkpoints", "", "",
		map[string]string{"execution.checkpointing.timeout": "2h"})
	// Cancelled before the test ends: a plan of the next test must not see it.
	defer e.cancel(ctx, fc, job)
	e.checkpointed(ctx, fc, job, 1)
	var res governance.PlanCleanupResult
	err = e.activity(app.NewFamilies(e.acts).Governance.PlanCleanup, governance.PlanCleanupInput{RunID: "grace-1", Scope: core.Scope{Tenants: []string{e.tenant[0]}},
		Policy: cleanup.Policy{Grace: time.Hour, MaxCheckpointTimeout: 3 * time.Hour}}, &res)
	if err == nil || !strings.Contains(err.Error(), "grace") || !strings.Contains(err.Error(), job) || !strings.Contains(err.Error(), core.ErrTypeInvalidInput) {
		t.Fatalf("plan with grace 1h beside a job with a 2h checkpoint timeout: %v; want InvalidInput naming grace and job %s", err, job)
	}
	err = e.activity(app.NewFamilies(e.acts).Governance.PlanCleanup, governance.PlanCleanupInput{RunID: "grace-max", Scope: core.Scope{Tenants: []string{e.tenant[0]}},
		Policy: cleanup.Policy{Grace: 2 * time.Hour}}, &res)
	if err == nil || !strings.Contains(err.Error(), "maxCheckpointTimeout") || !strings.Contains(err.Error(), job) {
		t.Fatalf("plan with the default longest checkpoint timeout (10m) beside a job with 2h: %v; want InvalidInput naming maxCheckpointTimeout and job %s", err, job)
	}
	if err := e.activity(app.NewFamilies(e.acts).Governance.PlanCleanup, governance.PlanCleanupInput{RunID: "grace-2", Scope: core.Scope{Tenants: []string{e.tenant[0]}},
		Policy: cleanup.Policy{Grace: 2 * time.Hour, MaxCheckpointTimeout: 3 * time.Hour, RetiredJobTTL: 7 * 24 * time.Hour}}, &res); err != nil {
		t.Fatalf("plan with grace 2h: %v", err)
	}
}
