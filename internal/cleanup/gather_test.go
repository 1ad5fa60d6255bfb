package cleanup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
	"github.com/flinkmaint/flinkmaint/internal/testsupport/mdwrite"
)

func TestGatherReadsMetadataPinsAndStateFiles(t *testing.T) {
	e := newLocalEnv(t)
	const job = "0123456789abcdef0123456789abcdef"
	// A relative file in chk-2 and a shared one, spelled file:/ as Flink does.
	e.metadata("checkpoints/"+job+"/chk-2", mdwrite.Snapshot{CheckpointID: 2, Exclusive: []mdwrite.File{{Path: "p"}},
		Shared: []mdwrite.File{{Path: "file:" + filepath.Join(e.tenant, "checkpoints", job, "shared", "sub", "s1")}}}.Bytes(), e.past)
	e.file("checkpoints/"+job+"/chk-3/_metadata", 5, e.past) // five zero bytes: not metadata
	e.file("checkpoints/"+job+"/shared/sub/s1", 3, e.past)
	e.file("checkpoints/"+job+"/taskowned/t1", 0, e.past)
	e.file("savepoints/savepoint-012345-0123456789ab/"+PinMarkerName, 0, e.past)

	l, err := Gather(context.Background(), e.fs, e.roots(), GatherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	good := l.Metadata[e.uri("checkpoints/"+job+"/chk-2/_metadata")]
	if want := []string{e.uri("checkpoints/" + job + "/chk-2/p"), e.uri("checkpoints/" + job + "/shared/sub/s1")}; good.Refs == nil || !slices.Equal(good.Refs.Files, want) {
		t.Fatalf("chk-2 references %+v; want %v, each spelled file:///", good, want)
	}
	bad := l.Metadata[e.uri("checkpoints/"+job+"/chk-3/_metadata")]
	if bad.Refs != nil || bad.Error == "" {
		t.Fatalf("chk-3: %+v; want a parse error", bad)
	}
	if len(l.StateFiles) != 2 || l.StateFiles[0].Kind != KindSharedFile || l.StateFiles[1].Kind != KindTaskOwnedFile {
		t.Fatalf("state files %+v", l.StateFiles)
	}
	if len(l.PinMarkers) != 1 {
		t.Fatalf("pin markers %v", l.PinMarkers)
	}
	// The unparseable chk-3 keeps the whole job dir.
	plan, err := BuildPlan(Input{Now: e.past.AddDate(1, 0, 0), Listing: l})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Delete) != 0 {
		t.Fatalf("plan deletes %+v despite unparseable metadata", plan.Delete)
	}

	if _, err := Gather(context.Background(), e.fs, nil, GatherOptions{}); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("no roots: %v", err)
	}
	missing := e.roots()
	missing[0].Path += "-missing"
	if _, err := Gather(context.Background(), e.fs, missing, GatherOptions{}); err == nil {
		t.Fatal("a missing root gathered as empty")
	}
}

// Gathering a tree in parts, on different workers, and merging the parts
// read back from JSON gives exactly the listing one Gather makes, and so
// exactly its plan.
func TestGatherInPartsMergesToTheWhole(t *testing.T) {
	e := newLocalEnv(t)
	e.garbage()
	for i := range 40 {
		job := fmt.Sprintf("%032x", i+100)
		e.file("checkpoints/"+job+"/shared/s-"+job[28:], 4, e.past)
		// Restored from the previous job in CLAIM mode: it names that job's
		// shared file too, which may be gathered in another part.
		prev := fmt.Sprintf("%032x", i+99)
		e.metadata("checkpoints/"+job+"/chk-9", mdwrite.Checkpoint(9, e.uri("checkpoints/"+job+"/shared/s-"+job[28:]),
			e.uri("checkpoints/"+prev+"/shared/s-"+prev[28:])), e.past)
		e.file(fmt.Sprintf("savepoints/savepoint-%s-%012x/%s", job[:6], i, PinMarkerName), 0, e.past)
		e.file(fmt.Sprintf("ha/cluster-%d/completedCheckpoint%012x", i, i), 2, e.past)
	}
	e.file("checkpoints/stray-file", 1, e.past)
	ctx := context.Background()
	whole, err := Gather(ctx, e.fs, e.roots(), GatherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const shards = 3
	var parts []Listing
	for i := range shards {
		l, err := Gather(ctx, e.fs, e.roots(), GatherOptions{Part: GatherPart(i, shards)})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Report.Jobs) == 0 || len(l.Report.Jobs) == len(whole.Report.Jobs) {
			t.Fatalf("part %d holds %d of %d job dirs; want a share", i, len(l.Report.Jobs), len(whole.Report.Jobs))
		}
		data, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		var back Listing
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, back)
	}
	merged, err := MergeListings(e.roots(), parts...)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(whole)
	b, _ := json.Marshal(merged)
	if string(a) != string(b) {
		t.Fatalf("merged listing differs from the whole:\n%s\n%s", a, b)
	}
	live := liveWith(LiveJob{JobID: "fedcba9876543210fedcba9876543210"})
	now := time.Now()
	pw, err := BuildPlan(Input{Now: now, Listing: whole, Live: live, Lineage: byPrefix(whole)})
	if err != nil {
		t.Fatal(err)
	}
	pm, err := BuildPlan(Input{Now: now, Listing: merged, Live: live, Lineage: byPrefix(merged)})
	if err != nil {
		t.Fatal(err)
	}
	a, _ = json.Marshal(pw)
	b, _ = json.Marshal(pm)
	if string(a) != string(b) || len(pw.Delete) == 0 {
		t.Fatalf("plans differ (%d and %d items)", len(pw.Delete), len(pm.Delete))
	}

	// A part gathered over other roots (the inventory changed meanwhile)
	// is refused, and so are two parts that overlap.
	if _, err := MergeListings(e.roots()[:2], parts...); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("parts over other roots: %v", err)
	}
	if _, err := MergeListings(e.roots(), parts[0], parts[0]); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("overlapping parts: %v", err)
	}
	noMeta := parts[1]
	noMeta.Metadata = nil
	if _, err := MergeListings(e.roots(), parts[1], noMeta); !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "is in two") {
		t.Fatalf("parts overlapping in job dirs only: %v", err)
	}
}

// TestRescanReadsFromTheStartOfTheListing: a plan built two hours after its
// listing began re-reads from a grace before the listing, whatever part
// started first; a listing of an earlier release, with no start, leaves
// the plan's own time.
func TestRescanReadsFromTheStartOfTheListing(t *testing.T) {
	roots := []layout.Root{{Path: ckRoot, Kind: layout.CheckpointRoot}}
	first, second := now.Add(-2*time.Hour), now.Add(-90*time.Minute)
	merged, err := MergeListings(roots, Listing{Roots: roots, StartedAt: second}, Listing{Roots: roots, StartedAt: first})
	if err != nil || !merged.StartedAt.Equal(first) {
		t.Fatalf("merged start %v, %v; want the earliest part's, %v", merged.StartedAt, err, first)
	}
	var buf bytes.Buffer
	if err := WriteListing(&buf, merged); err != nil {
		t.Fatal(err)
	}
	back, err := ReadListing(&buf)
	if err != nil || !back.StartedAt.Equal(first) {
		t.Fatalf("listing start after a round trip: %v, %v", back.StartedAt, err)
	}
	plan, err := BuildPlan(Input{Now: now, Listing: back, Live: Live{Clusters: []LiveCluster{{ClusterID: "c1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := first.Add(-DefaultGrace); !plan.rescanCutoff().Equal(want) {
		t.Fatalf("rescan cutoff %v; want a grace before the listing began, %v", plan.rescanCutoff(), want)
	}
	unknown, err := MergeListings(roots, Listing{Roots: roots, StartedAt: first}, Listing{Roots: roots})
	if err != nil || !unknown.StartedAt.IsZero() {
		t.Fatalf("a part without a start: merged start %v, %v; want unknown", unknown.StartedAt, err)
	}
	plan.ListedAt = time.Time{}
	if want := now.Add(-DefaultGrace); !plan.rescanCutoff().Equal(want) {
		t.Fatalf("rescan cutoff of a plan without a listing start %v; want %v", plan.rescanCutoff(), want)
	}
}

// halfWritten serves the first read of a file cut short, as a reader sees
// a _metadata Flink is still writing, then the file as it is.
type halfWritten struct {
	storage.FileSystem
	reads int
}

func (h *halfWritten) ReadFile(ctx context.Context, p string, max int64) ([]byte, error) {
	data, err := h.FileSystem.ReadFile(ctx, p, max)
	if h.reads++; h.reads == 1 && err == nil {
		return data[:len(data)/2], nil
	}
	return data, err
}

// TestMetadataCaughtMidWriteIsReadAgain: a _metadata read half written
// parses when read again; one that stays the same and does not parse is
// unparseable after a single second look.
func TestMetadataCaughtMidWriteIsReadAgain(t *testing.T) {
	md := mdwrite.Checkpoint(9, "file:/state/shared/s1", "file:/state/shared/s2")
	dir := t.TempDir()
	g, err := storage.NewGuard(dir)
	if err != nil {
		t.Fatal(err)
	}
	local := storage.NewLocal(g)
	p := filepath.Join(dir, "chk-9", "_metadata")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, md, 0o644); err != nil {
		t.Fatal(err)
	}
	fs := &halfWritten{FileSystem: local}
	res, found, err := ReadMetadata(context.Background(), fs, "file://"+p)
	if err != nil || !found || res.Refs == nil || fs.reads != 2 {
		t.Fatalf("half-written, then whole: %+v found %v, %v after %d reads; want references after 2", res, found, err, fs.reads)
	}
	if err := os.WriteFile(p, md[:len(md)/3], 0o644); err != nil {
		t.Fatal(err)
	}
	reads := 0
	counting := &countReads{FileSystem: local, n: &reads}
	res, found, err = ReadMetadata(context.Background(), counting, "file://"+p)
	if err != nil || !found || res.Error == "" || reads != 2 {
		t.Fatalf("truncated for good: %+v found %v, %v after %d reads; want unparseable after 2", res, found, err, reads)
	}
}

type countReads struct {
	storage.FileSystem
	n *int
}

func (c *countReads) ReadFile(ctx context.Context, p string, max int64) ([]byte, error) {
	*c.n++
	return c.FileSystem.ReadFile(ctx, p, max)
}
