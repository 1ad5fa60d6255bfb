package governance

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/internal/acttest"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

const failedJobID = "0123456789abcdef0123456789abcdef"

// failedRestoreCluster lists job orders as FAILED while listed is set, and
// nothing once the cluster has forgotten it.
type failedRestoreCluster struct {
	sourcesFlink
	listed bool
}

func (f *failedRestoreCluster) ListJobs(context.Context) ([]flink.JobOverview, error) {
	if !f.listed {
		return nil, nil
	}
	return []flink.JobOverview{{ID: failedJobID, Name: "orders", State: flink.JobFailed}}, nil
}

// failedRestoreFixture is a tenant with two old savepoints of one job on
// record, the older one what job orders failed to restore from: with
// keepSavepoints 1 the older one goes unless something keeps it.
type failedRestoreFixture struct {
	a        *Activities
	flink    *failedRestoreCluster
	now      time.Time
	tenant   string // local path of the tenant root
	older    string // the savepoint the restore failed on, as a URI
	newer    string
	inv      inventory.Inventory
	recordOf string // local path of the older savepoint's failed-restore record
}

func newFailedRestoreFixture(t *testing.T) *failedRestoreFixture {
	t.Helper()
	dir := t.TempDir()
	tenant, trash, plans := filepath.Join(dir, "tenant"), filepath.Join(dir, "trash"), filepath.Join(dir, "plans")
	for _, d := range []string{trash, plans, filepath.Join(tenant, "checkpoints")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f := &failedRestoreFixture{tenant: tenant, now: time.Now().UTC().Truncate(time.Second)}
	f.older = savepointWithMetadata(t, tenant, "savepoint-012345-0123456789ab")
	f.newer = savepointWithMetadata(t, tenant, "savepoint-012345-0123456789ac")
	for i, sp := range []string{f.older, f.newer} {
		at := f.now.Add(-30*24*time.Hour + time.Duration(i)*time.Hour)
		for _, p := range []string{sp + "/_metadata", sp} {
			if err := os.Chtimes(strings.TrimPrefix(p, "file://"), at, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	guard, err := storage.NewGuard(tenant, trash, plans)
	if err != nil {
		t.Fatal(err)
	}
	orders := catalog.LogicalJob{Tenant: "team-t", Cluster: "c1", Job: "orders"}
	store := catalog.Store{FS: storage.NewLocal(guard), Root: tenant}
	for _, sp := range []string{f.older, f.newer} {
		if err := store.Put(context.Background(), catalog.Entry{Path: sp, Job: orders, JobID: failedJobID, Trigger: catalog.TriggerWindow, RunID: "w1", RecordedAt: f.now}, false); err != nil {
			t.Fatal(err)
		}
	}
	f.inv = inventory.Inventory{
		Tenants: []inventory.Tenant{{Name: "team-t", Root: "file://" + tenant}},
		Clusters: []inventory.Cluster{{Tenant: "team-t", ClusterID: "c1", Mode: inventory.ModeSession, RESTURL: "http://c1",
			CheckpointDir: "file://" + tenant + "/checkpoints", SavepointDir: "file://" + tenant + "/savepoints"}},
	}
	f.flink = &failedRestoreCluster{sourcesFlink: sourcesFlink{exceptions: flink.JobExceptions{History: flink.ExceptionHistory{Entries: []flink.RootException{{
		ExceptionName: "java.lang.IllegalStateException",
		Stacktrace: "java.lang.IllegalStateException: Failed to rollback to checkpoint/savepoint " + f.older +
			". Cannot map checkpoint/savepoint state for operator 0a448493b4782967b150582570326227 to the new program.\n\tat org.apache.flink.runtime.checkpoint.Checkpoints.loadAndValidateCheckpoint(Checkpoints.java:185)"}}}}}}
	f.a = &Activities{Inventory: acttest.Inventory(f.inv), Flink: clientsByURL{"http://c1": f.flink}, Storage: &storage.Resolver{Guard: guard},
		Cleanup: core.CleanupSettings{TrashRoot: "file://" + trash, PlanDir: "file://" + plans}, PollInterval: time.Millisecond, LiveReadWait: 50 * time.Millisecond,
		Now: func() time.Time { return f.now }}
	f.recordOf = filepath.Join(tenant, catalog.FailedRestoreDir, recordName(t, tenant, f.older))
	return f
}

// recordName is the file the record of snapshot has in the records of
// the tenant at root: the only one among them after one sighting.
func recordName(t *testing.T, root, snapshot string) string {
	t.Helper()
	dir := t.TempDir()
	g, err := storage.NewGuard(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := catalog.FailedRestoreStore{FS: storage.NewLocal(g), Root: dir}
	if _, err := s.Seen(context.Background(), catalog.FailedRestoreRecord{Snapshot: snapshot, JobID: "j", Cluster: "c", LastSeen: time.Unix(1, 0)}); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(dir, catalog.FailedRestoreDir))
	if err != nil || len(entries) != 1 {
		t.Fatalf("records %v err %v; want one", entries, err)
	}
	return entries[0].Name()
}

func (f *failedRestoreFixture) records(t *testing.T) []catalog.FailedRestoreRecord {
	t.Helper()
	g, err := storage.NewGuard(f.tenant)
	if err != nil {
		t.Fatal(err)
	}
	recs, rejected, err := catalog.FailedRestoreStore{FS: storage.NewLocal(g), Root: f.tenant}.Claims(context.Background())
	if err != nil || len(rejected) > 0 {
		t.Fatalf("records: rejected %+v err %v", rejected, err)
	}
	return recs
}

// plan runs PlanCleanup (keep 1 savepoint) and returns the plan and its
// notes.
func (f *failedRestoreFixture) plan(t *testing.T, run string) (cleanup.Plan, []string) {
	t.Helper()
	var res PlanCleanupResult
	if err := acttest.Run(t, f.a, f.a.PlanCleanup, PlanCleanupInput{RunID: run, Scope: core.Scope{Tenants: []string{"team-t"}}, Policy: CleanupPolicy{KeepSavepoints: 1}}, &res); err != nil {
		t.Fatal(err)
	}
	fs, p, err := f.a.Storage.Resolve(context.Background(), res.Summary.PlanPath)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := cleanup.ReadPlan(context.Background(), fs, p)
	if err != nil {
		t.Fatal(err)
	}
	return plan, res.Summary.Notes
}

func planFate(p cleanup.Plan, path string) (planned bool, kept *cleanup.Kept) {
	for _, it := range p.Delete {
		if strings.TrimPrefix(it.Path, "file://") == strings.TrimPrefix(path, "file://") {
			planned = true
		}
	}
	for i, k := range p.Keep {
		if strings.TrimPrefix(k.Path, "file://") == strings.TrimPrefix(path, "file://") {
			kept = &p.Keep[i]
		}
	}
	return planned, kept
}

// TestFailedRestoreIsRecordedWhenSeen: a FAILED job's restore source, from
// its exception history or from its statistics' latest restore, is
// recorded in the tenant's records with the job, its cluster, its logical
// job, when it was seen and Flink's line; one under no tenant root is
// not, and said; one that cannot be written is said, and the job still
// keeps it while its cluster lists it.
func TestFailedRestoreIsRecordedWhenSeen(t *testing.T) {
	for name, tc := range map[string]struct {
		fromStatistics bool
		noTenant       bool
		unwritable     bool
		wantMessage    string
		wantNote       string
	}{
		"from the exception history":        {wantMessage: "java.lang.IllegalStateException: Failed to rollback to checkpoint/savepoint "},
		"from the statistics' last restore": {fromStatistics: true, wantMessage: "checkpoint statistics: latest restored savepoint 7 from "},
		"under no tenant root":              {noTenant: true, wantNote: "lies under no tenant root, so it is not recorded"},
		"records that cannot be written":    {unwritable: true, wantNote: "is not recorded in the failed-restore records of tenant team-t"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFailedRestoreFixture(t)
			f.flink.listed = true
			if tc.fromStatistics {
				f.flink.stats = flink.CheckpointingStatistics{Latest: flink.LatestCheckpoints{Restored: &flink.RestoredCheckpoint{ID: 7, IsSavepoint: true, ExternalPath: f.older}}}
			}
			inv := f.inv
			if tc.noTenant {
				inv.Tenants = []inventory.Tenant{{Name: "team-u", Root: "file://" + filepath.Join(filepath.Dir(f.tenant), "elsewhere")}}
			}
			if tc.unwritable {
				// The tenant root is not among the worker's writable roots.
				g, err := storage.NewGuard(filepath.Join(filepath.Dir(f.tenant), "plans"))
				if err != nil {
					t.Fatal(err)
				}
				f.a.Storage = &storage.Resolver{Guard: g}
			}
			live, notes, err := liveInventoryIn(t, f.a, inv)
			if err != nil {
				t.Fatal(err)
			}
			if jobs := live.Clusters[0].Jobs; len(jobs) != 1 || jobs[0].RestorePath != f.older {
				t.Fatalf("live %+v; want the failed job live with restore point %s, recorded or not", live, f.older)
			}
			if len(live.Records) != 0 {
				t.Fatalf("records %+v; want none while the job is listed (it keeps its restore point itself)", live.Records)
			}
			if tc.wantNote != "" {
				if !strings.Contains(strings.Join(notes, "\n"), tc.wantNote) {
					t.Fatalf("notes %q; want %q", notes, tc.wantNote)
				}
				if _, err := os.Stat(f.recordOf); err == nil {
					t.Fatalf("%s written; want no record", f.recordOf)
				}
				return
			}
			recs := f.records(t)
			if len(recs) != 1 {
				t.Fatalf("records %+v; want the one of %s", recs, f.older)
			}
			r := recs[0]
			if r.Snapshot != f.older || r.JobID != failedJobID || r.Cluster != "c1" || r.Job != (catalog.LogicalJob{Tenant: "team-t", Cluster: "c1", Job: "orders"}) ||
				!r.FirstSeen.Equal(f.now) || !r.LastSeen.Equal(f.now) || !strings.HasPrefix(r.Message, tc.wantMessage) || strings.Contains(r.Message, "\n") {
				t.Fatalf("record %+v; want %s by %s on c1 (team-t/c1/orders) seen at %v, message %q…", r, f.older, failedJobID, f.now, tc.wantMessage)
			}
		})
	}
}

// TestFailedRestoreIsRefreshedIdempotently: the same sighting again
// rewrites nothing; a later one moves the last time seen, not the first.
func TestFailedRestoreIsRefreshedIdempotently(t *testing.T) {
	f := newFailedRestoreFixture(t)
	f.flink.listed = true
	if _, _, err := liveInventoryIn(t, f.a, f.inv); err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(f.recordOf)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Unix(1, 0)
	if err := os.Chtimes(f.recordOf, old, old); err != nil {
		t.Fatal(err)
	}
	if _, _, err := liveInventoryIn(t, f.a, f.inv); err != nil {
		t.Fatal(err)
	}
	again, err := os.ReadFile(f.recordOf)
	if fi, serr := os.Stat(f.recordOf); err != nil || serr != nil || !fi.ModTime().Equal(old) || string(again) != string(first) {
		t.Fatalf("the same sighting rewrote the record (%v, %v): %s", err, serr, again)
	}
	seenFirst := f.now
	f.now = f.now.Add(time.Hour)
	if _, _, err := liveInventoryIn(t, f.a, f.inv); err != nil {
		t.Fatal(err)
	}
	if recs := f.records(t); len(recs) != 1 || !recs[0].FirstSeen.Equal(seenFirst) || !recs[0].LastSeen.Equal(f.now) {
		t.Fatalf("records %+v; want first seen %v, last seen %v", recs, seenFirst, f.now)
	}
}

// TestAForgottenFailedRestoreIsKept: once the cluster no longer lists the
// FAILED job, its record keeps the snapshot for cleanup.failedRestoreHold
// after it was last seen, naming the job; after that the other rules judge
// it. A record naming a snapshot outside its tenant's root is no claim; one
// that cannot be read keeps every snapshot, naming it.
func TestAForgottenFailedRestoreIsKept(t *testing.T) {
	for name, tc := range map[string]struct {
		later   time.Duration // from the sighting to the plan
		hold    time.Duration
		prepare func(t *testing.T, f *failedRestoreFixture)
		// keep: the older savepoint kept as a failed restore; unknown:
		// every savepoint kept as an unknown restore source.
		keep, unknown bool
		note          string
	}{
		"forgotten an hour later":              {later: time.Hour, keep: true},
		"forgotten, within a hold set shorter": {later: 47 * time.Hour, hold: 48 * time.Hour, keep: true},
		"past the default hold":                {later: 7*24*time.Hour + time.Minute, note: "cleanup.failedRestoreHold 168h0m0s has passed"},
		"past a hold set shorter":              {later: 3 * time.Hour, hold: 2 * time.Hour, note: "cleanup.failedRestoreHold 2h0m0s has passed"},
		"a record naming another tenant's snapshot": {later: time.Hour, note: "outside the tenant's root", prepare: func(t *testing.T, f *failedRestoreFixture) {
			// The tenant's records are its own to write: one naming a
			// path under another root claims nothing.
			raw, err := os.ReadFile(f.recordOf)
			if err != nil {
				t.Fatal(err)
			}
			var r catalog.FailedRestoreRecord
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
			r.Snapshot = "file://" + filepath.Join(filepath.Dir(f.tenant), "other", "savepoints", "savepoint-012345-0123456789ab")
			writeRecord(t, f, r)
		}},
		"a record that cannot be read": {later: time.Hour, unknown: true, note: "cannot be read", prepare: func(t *testing.T, f *failedRestoreFixture) {
			if err := os.WriteFile(f.recordOf, []byte(`{"snapshot": "file:///`), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		"the snapshot gone": {later: time.Hour, note: "no longer exists", prepare: func(t *testing.T, f *failedRestoreFixture) {
			if err := os.RemoveAll(strings.TrimPrefix(f.older, "file://")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFailedRestoreFixture(t)
			f.a.Cleanup.FailedRestoreHold = tc.hold
			f.flink.listed = true
			seen := f.now
			if _, _, err := liveInventoryIn(t, f.a, f.inv); err != nil {
				t.Fatal(err)
			}
			if tc.prepare != nil {
				tc.prepare(t, f)
			}
			f.flink.listed = false
			f.now = f.now.Add(tc.later)
			p, notes := f.plan(t, "later")
			planned, kept := planFate(p, f.older)
			switch {
			case tc.keep && (planned || kept == nil || kept.Reason != cleanup.KeepFailedRestore || !strings.Contains(kept.By, "failed job "+failedJobID+" on c1") ||
				!strings.Contains(kept.By, "last seen FAILED restoring from it at "+seen.Format(time.RFC3339))):
				t.Fatalf("%s planned %v, kept %+v; want it kept as %s by failed job %s, last seen %v (notes %q)", f.older, planned, kept, cleanup.KeepFailedRestore, failedJobID, seen, notes)
			case tc.unknown && (planned || kept == nil || kept.Reason != cleanup.KeepUnknownRestore || !strings.Contains(kept.By+strings.Join(notes, "\n"), "failed-restore record")):
				t.Fatalf("%s planned %v, kept %+v; want it kept as %s naming the record (notes %q)", f.older, planned, kept, cleanup.KeepUnknownRestore, notes)
			case !tc.keep && !tc.unknown && !planned && tc.note != "no longer exists":
				t.Fatalf("%s kept %+v; want it planned by the other rules (notes %q)", f.older, kept, notes)
			}
			if tc.note != "" && !strings.Contains(strings.Join(notes, "\n"), tc.note) {
				t.Fatalf("notes %q; want %q", notes, tc.note)
			}
			if tc.note == "no longer exists" {
				if recs := f.records(t); len(recs) != 0 {
					t.Fatalf("records %+v; want the record of the gone snapshot dropped by the plan's compaction", recs)
				}
			}
			if planned, kept := planFate(p, f.newer); planned || kept == nil {
				t.Fatalf("%s planned; the newest savepoint is kept whatever the records say (kept %+v)", f.newer, kept)
			}
		})
	}
}

func writeRecord(t *testing.T, f *failedRestoreFixture, r catalog.FailedRestoreRecord) {
	t.Helper()
	if err := os.Remove(f.recordOf); err != nil {
		t.Fatal(err)
	}
	g, err := storage.NewGuard(f.tenant)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (catalog.FailedRestoreStore{FS: storage.NewLocal(g), Root: f.tenant}).Seen(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

// TestSavepointsListShowsAFailedRestore: savepoints list names the job a
// savepoint is held for and until when; a record that cannot be read is
// said.
func TestSavepointsListShowsAFailedRestore(t *testing.T) {
	f := newFailedRestoreFixture(t)
	f.flink.listed = true
	if _, _, err := liveInventoryIn(t, f.a, f.inv); err != nil {
		t.Fatal(err)
	}
	var res ListSavepointsResult
	if err := acttest.Run(t, f.a, f.a.ListSavepoints, ListSavepointsInput{}, &res); err != nil {
		t.Fatal(err)
	}
	var held *FailedRestoreHold
	for _, r := range res.Savepoints {
		switch r.Path {
		case f.older:
			held = r.FailedRestore
		case f.newer:
			if r.FailedRestore != nil {
				t.Fatalf("%s shown held for %+v; want nothing", f.newer, r.FailedRestore)
			}
		}
	}
	if held == nil || held.JobID != failedJobID || !held.HeldUntil.Equal(f.now.Add(7*24*time.Hour)) {
		t.Fatalf("savepoints %+v; want %s held for job %s until %v", res.Savepoints, f.older, failedJobID, f.now.Add(7*24*time.Hour))
	}
	if err := os.WriteFile(filepath.Join(f.tenant, catalog.FailedRestoreDir, "x.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := acttest.Run(t, f.a, f.a.ListSavepoints, ListSavepointsInput{}, &res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "x.json of tenant team-t cannot be read") {
		t.Fatalf("notes %q; want the unreadable record said", res.Notes)
	}
}
