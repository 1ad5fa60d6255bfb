package catalog

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFailedRestoreSeen(t *testing.T) {
	const sp = "hdfs://nn:8020/team-a/savepoints/savepoint-aaaaaa-000000000001"
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	seen := func(job string, at time.Time) FailedRestoreRecord {
		return FailedRestoreRecord{Snapshot: sp + "/", JobID: job, Cluster: "c1", Job: LogicalJob{Tenant: "a", Cluster: "c1", Job: "orders"},
			LastSeen: at, Message: "Failed to rollback to checkpoint/savepoint " + sp}
	}
	for name, tc := range map[string]struct {
		sightings []FailedRestoreRecord
		compact   bool // compact before the last sighting
		want      FailedRestoreRecord
	}{
		"first sighting": {sightings: []FailedRestoreRecord{seen("j1", t0)},
			want: FailedRestoreRecord{JobID: "j1", FirstSeen: t0, LastSeen: t0}},
		"the same sighting again": {sightings: []FailedRestoreRecord{seen("j1", t0), seen("j1", t0)},
			want: FailedRestoreRecord{JobID: "j1", FirstSeen: t0, LastSeen: t0}},
		"seen again later": {sightings: []FailedRestoreRecord{seen("j1", t0), seen("j1", t0.Add(time.Hour))},
			want: FailedRestoreRecord{JobID: "j1", FirstSeen: t0, LastSeen: t0.Add(time.Hour)}},
		"a retry that failed again, another job id": {sightings: []FailedRestoreRecord{seen("j1", t0), seen("j2", t0.Add(time.Hour))},
			want: FailedRestoreRecord{JobID: "j2", FirstSeen: t0, LastSeen: t0.Add(time.Hour)}},
		"an older sighting moves nothing back": {sightings: []FailedRestoreRecord{seen("j2", t0.Add(time.Hour)), seen("j1", t0)},
			want: FailedRestoreRecord{JobID: "j2", FirstSeen: t0, LastSeen: t0.Add(time.Hour)}},
		"seen again after compaction": {sightings: []FailedRestoreRecord{seen("j1", t0), seen("j1", t0.Add(time.Hour))}, compact: true,
			want: FailedRestoreRecord{JobID: "j1", FirstSeen: t0, LastSeen: t0.Add(time.Hour)}},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			base := newStore(t)
			s := FailedRestoreStore(base)
			for i, r := range tc.sightings {
				if tc.compact && i == len(tc.sightings)-1 {
					if _, err := s.Compact(ctx, func(context.Context, string) (bool, error) { return true, nil }); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := s.Seen(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			got, rejected, err := s.Claims(ctx)
			if err != nil || len(rejected) != 0 || len(got) != 1 {
				t.Fatalf("claims %+v rejected %+v err %v; want one record", got, rejected, err)
			}
			g := got[0]
			if g.Snapshot != sp || g.JobID != tc.want.JobID || !g.FirstSeen.Equal(tc.want.FirstSeen) || !g.LastSeen.Equal(tc.want.LastSeen) || g.Cluster != "c1" || !g.Job.Valid() {
				t.Fatalf("record %+v; want %s by %s first seen %v, last seen %v", g, sp, tc.want.JobID, tc.want.FirstSeen, tc.want.LastSeen)
			}
		})
	}
}

// TestFailedRestoreSeenIsIdempotent: the same sighting again does not
// write the record again (a plan every few minutes costs no NameNode
// writes while nothing changes).
func TestFailedRestoreSeenIsIdempotent(t *testing.T) {
	ctx := context.Background()
	base := newStore(t)
	s := FailedRestoreStore(base)
	r := FailedRestoreRecord{Snapshot: "hdfs://nn:8020/sp/savepoint-1", JobID: "j1", Cluster: "c1", LastSeen: time.Unix(100, 0).UTC()}
	if _, err := s.Seen(ctx, r); err != nil {
		t.Fatal(err)
	}
	// Flink's line may be a whole stack trace's worth: it is cut, so the
	// record always reads back.
	long := r
	long.Snapshot, long.Message = "hdfs://nn:8020/sp/savepoint-2", strings.Repeat("Failed to rollback ", 1<<13)
	if got, err := s.Seen(ctx, long); err != nil || len(got.Message) > maxFailedRestoreMessage+len("…") {
		t.Fatalf("record of a long message: %d bytes, err %v; want it cut to %d", len(got.Message), err, maxFailedRestoreMessage)
	}
	file := filepath.Join(base.Root, FailedRestoreDir, entryName(r.Snapshot))
	old := time.Unix(1, 0)
	if err := os.Chtimes(file, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Seen(ctx, r); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(file); err != nil || !fi.ModTime().Equal(old) {
		t.Fatalf("record %v rewritten (%v) for the same sighting", fi, err)
	}
}

// TestFailedRestoreSeenOverDamage: a record in the snapshot's file that
// does not decode is replaced by the sighting; one that names another
// snapshot is not someone's sighting to overwrite, and stays to be said.
func TestFailedRestoreSeenOverDamage(t *testing.T) {
	const sp = "hdfs://nn:8020/sp/savepoint-1"
	for name, tc := range map[string]struct {
		content  string
		replaced bool
	}{
		"does not decode":        {content: `{"snapshot": "hdfs://`, replaced: true},
		"names another snapshot": {content: `{"snapshot":"hdfs://nn:8020/sp/savepoint-2","jobId":"j2","cluster":"c1","lastSeen":"2026-01-01T00:00:00Z"}`},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			base := newStore(t)
			s := FailedRestoreStore(base)
			dir := filepath.Join(base.Root, FailedRestoreDir)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, entryName(sp)), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := s.Seen(ctx, FailedRestoreRecord{Snapshot: sp, JobID: "j1", Cluster: "c1", LastSeen: time.Unix(100, 0).UTC()})
			got, rejected, cerr := s.Claims(ctx)
			if cerr != nil {
				t.Fatal(cerr)
			}
			if tc.replaced && (err != nil || len(got) != 1 || got[0].JobID != "j1" || len(rejected) != 0) {
				t.Fatalf("seen: %v; claims %+v rejected %+v; want the damaged record replaced", err, got, rejected)
			}
			if !tc.replaced && (err == nil || len(got) != 0 || len(rejected) != 1) {
				t.Fatalf("seen: %v; claims %+v rejected %+v; want the sighting refused and the record still said", err, got, rejected)
			}
		})
	}
}

// TestFailedRestoreClaims: a record that does not decode, lacks what it
// must hold, or sits in a file that is not its snapshot's is rejected and
// said, never silently dropped; the others still count.
func TestFailedRestoreClaims(t *testing.T) {
	ctx := context.Background()
	base := newStore(t)
	s := FailedRestoreStore(base)
	good := FailedRestoreRecord{Snapshot: "hdfs://nn:8020/sp/savepoint-1", JobID: "j1", Cluster: "c1", LastSeen: time.Unix(100, 0).UTC()}
	if _, err := s.Seen(ctx, good); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base.Root, FailedRestoreDir)
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("corrupt.json", `{"snapshot": "hdfs://nn:8020/sp/sav`)
	write("elsewhere.json", `{"snapshot":"hdfs://nn:8020/sp/savepoint-2","jobId":"j2","cluster":"c1","lastSeen":"2026-01-01T00:00:00Z"}`)
	write(entryName("hdfs://nn:8020/sp/savepoint-3"), `{"snapshot":"hdfs://nn:8020/sp/savepoint-3"}`)
	got, rejected, err := s.Claims(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Snapshot != good.Snapshot {
		t.Fatalf("claims %+v; want only %s", got, good.Snapshot)
	}
	reasons := map[string]string{}
	for _, r := range rejected {
		reasons[filepath.Base(r.File)] = r.Reason
	}
	for file, want := range map[string]string{"corrupt.json": "invalid", "elsewhere.json": "whose record would be", entryName("hdfs://nn:8020/sp/savepoint-3"): "all are required"} {
		if !strings.Contains(reasons[file], want) {
			t.Errorf("%s rejected as %q; want %q (rejected: %+v)", file, reasons[file], want, rejected)
		}
	}
	// Compaction keeps what it cannot read where it is, to be reported.
	if _, err := s.Compact(ctx, func(context.Context, string) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	if _, rejected, err = s.Claims(ctx); err != nil || len(rejected) != 3 {
		t.Fatalf("after compaction rejected %+v err %v; want the three still said", rejected, err)
	}
	// A corrupt index is said too.
	write(IndexName, "{")
	if _, rejected, err = s.Claims(ctx); err != nil || !strings.Contains(rejected[len(rejected)-1].File+rejected[0].File, IndexName) {
		t.Fatalf("corrupt index: rejected %+v err %v; want it said", rejected, err)
	}
}

// TestFailedRestoreCompactDropsGoneSnapshots: a snapshot that no longer
// exists drops its record.
func TestFailedRestoreCompactDropsGoneSnapshots(t *testing.T) {
	ctx := context.Background()
	base := newStore(t)
	s := FailedRestoreStore(base)
	for _, p := range []string{"hdfs://nn:8020/sp/savepoint-1", "hdfs://nn:8020/sp/savepoint-gone"} {
		if _, err := s.Seen(ctx, FailedRestoreRecord{Snapshot: p, JobID: "j1", Cluster: "c1", LastSeen: time.Unix(100, 0).UTC()}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := s.Compact(ctx, func(_ context.Context, p string) (bool, error) { return !strings.HasSuffix(p, "gone"), nil })
	if err != nil || res.Dropped != 1 || res.Kept != 1 {
		t.Fatalf("compact %+v err %v; want one dropped, one kept", res, err)
	}
	got, _, err := s.Claims(ctx)
	if err != nil || len(got) != 1 || got[0].Snapshot != "hdfs://nn:8020/sp/savepoint-1" {
		t.Fatalf("claims %+v err %v; want savepoint-1 only", got, err)
	}
}
