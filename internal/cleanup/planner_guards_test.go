package cleanup

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// The planner's guards on its evidence, each proven by a case that plans
// differently without it.

// TestPlanRefusesContradictoryEvidence: a savepoint named with two job
// ids, or a job lineage without its logical job, is no evidence to act
// on: the plan is refused, naming it.
func TestPlanRefusesContradictoryEvidence(t *testing.T) {
	f := newFixture()
	sp := f.savepoint("aaaaaa", "000000000001", true, old)
	f.savepointJobIDs = map[string]string{sp: jobA, sp + "/_metadata": jobB}
	if _, err := f.build(Spellings{}); !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "two job ids") {
		t.Errorf("a savepoint with two job ids: %v; want invalid input", err)
	}
	f.savepointJobIDs = map[string]string{sp: jobA, sp + "/_metadata": jobA}
	if _, err := f.build(Spellings{}); err != nil {
		t.Errorf("one job id given twice: %v; want a plan", err)
	}
	f.savepointJobIDs, f.jobLineage = nil, map[string]string{jobA: ""}
	if _, err := f.build(Spellings{}); !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "job lineage") {
		t.Errorf("a job lineage without its logical job: %v; want invalid input", err)
	}
}

// TestPlanAcceptsACheckpointTimeoutEqualToTheBounds: grace and
// maxCheckpointTimeout must be at least each live job's timeout; equal is
// enough.
func TestPlanAcceptsACheckpointTimeoutEqualToTheBounds(t *testing.T) {
	f := newFixture()
	f.pol.Grace, f.pol.MaxCheckpointTimeout = time.Hour, time.Hour
	f.liveJob(LiveJob{JobID: jobA, CheckpointTimeout: time.Hour})
	if _, err := f.build(Spellings{}); err != nil {
		t.Fatalf("timeout equal to grace and maxCheckpointTimeout: %v; want a plan", err)
	}
}

// TestAnUnparseableMetadataKeepsRetiredCheckpointsWhateverElseIsUnparseable:
// an unparseable checkpoint _metadata may reference any retired job's
// files, so their checkpoints stay; unparseable savepoints listed beside
// it (read in any order) do not lift that.
func TestAnUnparseableMetadataKeepsRetiredCheckpointsWhateverElseIsUnparseable(t *testing.T) {
	f := newFixture()
	f.job(jobA, old)
	f.chk(jobA, 1, true, old.Add(-time.Hour))
	latest := f.chk(jobA, 2, true, old)
	f.pol.DeleteLatestRetiredCheckpoint = true
	f.job(jobB, old)
	bad := f.chk(jobB, 7, true, old)
	f.l.Metadata[bad+"/_metadata"] = MetadataResult{Error: "truncated"}
	for i := range 12 {
		sp := f.savepoint("cccccc", fmt.Sprintf("%012d", i), true, old)
		f.l.Metadata[sp+"/_metadata"] = MetadataResult{Error: "truncated"}
	}
	p := f.plan(t)
	if k, ok := keptFor(p, latest); !ok || k.Reason != KeepUnparseableInScope {
		t.Fatalf("%s kept %+v (planned %v); want %s", latest, k, planned(p), KeepUnparseableInScope)
	}
}

// TestOnlyAParsedSavepointIsANewerSavepoint: a retired job's latest
// checkpoint goes when a newer savepoint of the same job can restore it;
// one whose _metadata cannot be parsed cannot, and the checkpoint stays.
// The newest of several savepoints counts, whatever order they are listed
// in.
func TestOnlyAParsedSavepointIsANewerSavepoint(t *testing.T) {
	for _, evidence := range []string{"job id", "lineage"} {
		t.Run(evidence, func(t *testing.T) {
			setup := func() (*fixture, string, string) {
				f := newFixture()
				f.job(jobA, old)
				latest := f.chk(jobA, 2, true, old)
				// Listed newest first: the older one comes last.
				newer := f.savepoint("aaaaaa", "000000000009", true, old.Add(time.Hour))
				older := f.savepoint("aaaaaa", "000000000001", true, old.Add(-time.Hour))
				if evidence == "job id" {
					f.savepointJobIDs = map[string]string{newer: jobA, older: jobA}
				} else {
					f.jobLineage = map[string]string{jobA: "t/c/aaaaaa"}
				}
				return f, latest, newer
			}
			f, latest, _ := setup()
			if p := f.plan(t); plannedAt(p, latest) != RuleRetiredJob {
				k, _ := keptFor(p, latest)
				t.Errorf("%s with a newer parsed savepoint: kept %+v; want %s", latest, k, RuleRetiredJob)
			}
			f, latest, newer := setup()
			f.l.Metadata[newer+"/_metadata"] = MetadataResult{Error: "truncated"}
			if p := f.plan(t); plannedAt(p, latest) != "" {
				t.Errorf("%s planned %s though the only newer savepoint %s cannot be parsed", latest, plannedAt(p, latest), newer)
			} else if k, _ := keptFor(p, latest); k.Reason != KeepLatestRetired {
				t.Errorf("%s kept %+v; want %s", latest, k, KeepLatestRetired)
			}
		})
	}
}

// TestAnUnparseableSavepointTakesNoRetentionSlot: retention keeps the
// newest N savepoints that can restore; a newer one whose _metadata
// cannot be parsed is kept for itself and pushes no restorable one out.
func TestAnUnparseableSavepointTakesNoRetentionSlot(t *testing.T) {
	f := newFixture()
	f.pol.KeepSavepoints, f.pol.SavepointMaxAge = 1, time.Hour
	good := f.savepoint("aaaaaa", "000000000001", true, old)
	older := f.savepoint("aaaaaa", "000000000000", true, old.Add(-time.Hour))
	bad := f.savepoint("aaaaaa", "000000000002", true, old.Add(time.Hour))
	f.l.Metadata[bad+"/_metadata"] = MetadataResult{Error: "truncated"}
	p := f.plan(t)
	if k, ok := keptFor(p, good); !ok || k.Reason != KeepNewestSavepoints {
		t.Errorf("%s kept %+v (planned %v); want %s", good, k, planned(p), KeepNewestSavepoints)
	}
	if k, _ := keptFor(p, bad); k.Reason != KeepUnparseable {
		t.Errorf("%s kept %+v; want %s", bad, k, KeepUnparseable)
	}
	// Retention would let it go; the unparseable _metadata, which may
	// name anything, keeps it.
	if k, _ := keptFor(p, older); k.Reason != KeepUnparseableInScope {
		t.Errorf("%s kept %+v (planned %q); want %s", older, k, planned(p)[older], KeepUnparseableInScope)
	}
}

// TestItemsBelongToTheInnermostTenant: nested tenant roots, given outer
// first, attribute an item to the inner one; a plain root attributes the
// hdfs:// paths under it, and a root spelled with an alias of the file
// system the paths spelled canonically. (A savepoint proves something of a
// job dir only in the same tenant, so attribution is evidence.)
func TestItemsBelongToTheInnermostTenant(t *testing.T) {
	f := newFixture()
	f.ha("gone", old)
	sp := f.savepoint("aaaaaa", "000000000001", false, old)
	p, err := BuildPlan(Input{Now: now, Listing: f.l, Live: Live{Clusters: []LiveCluster{{ClusterID: "c1"}}}, Lineage: byPrefix(f.l),
		Spellings: Spellings{Base: nn, Aliases: []string{"hdfs://nn.example:8020"}},
		Tenants:   []inventory.Tenant{{Name: "outer", Root: "/t"}, {Name: "inner", Root: "hdfs://nn.example:8020/t/savepoints"}}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, it := range p.Delete {
		got[it.Path] = it.Tenant
	}
	if got[sp] != "inner" || got[haRoot+"/gone"] != "outer" {
		t.Fatalf("tenants %v; want %s in inner and the HA dir in outer", got, sp)
	}
}

// plannedAt is the rule of the planned item that is path or holds it.
func plannedAt(p Plan, path string) Rule {
	for _, it := range p.Delete {
		if it.Path == path || strings.HasPrefix(path, it.Path+"/") {
			return it.Rule
		}
	}
	return ""
}

// TestALiveJobsFileNewerThanItsLastCompletedCheckpointStays: a live job's
// shared file written after its newest completed checkpoint may be an
// upload for the next one; a checkpoint that never completed, however
// recent, does not move that line.
func TestALiveJobsFileNewerThanItsLastCompletedCheckpointStays(t *testing.T) {
	f := newFixture()
	f.pol.Grace = 10 * time.Minute
	base := now.Add(-3 * time.Hour)
	f.liveJob(LiveJob{JobID: jobA})
	f.job(jobA, base.Add(2*time.Hour))
	f.chk(jobA, 5, true, base)
	f.chk(jobA, 6, false, base.Add(2*time.Hour))
	upload := f.state(jobA, "shared", "upload", 10, base.Add(time.Hour))
	p := f.plan(t)
	if k, ok := keptFor(p, upload); !ok || k.Reason != KeepNewerThanCheckpoint {
		t.Fatalf("%s kept %+v (planned %v); want %s", upload, k, planned(p), KeepNewerThanCheckpoint)
	}
}
