package cleanup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// shardedFixture plans the usual garbage plus retired job dirs, enough for
// several shards.
func shardedFixture(t *testing.T, retired int) (*localEnv, Plan) {
	t.Helper()
	e := newLocalEnv(t)
	e.garbage()
	for i := range retired {
		e.file(fmt.Sprintf("checkpoints/%032x/chk-1/state", i+1), 3, e.past)
	}
	return e, e.plan(liveWith(LiveJob{JobID: "fedcba9876543210fedcba9876543210"}), Policy{})
}

func readAllShards(t *testing.T, h Plan, files []ShardFile) []Item {
	t.Helper()
	var all []Item
	for i := range h.Shards {
		items, err := ReadShard(h, i, files[i].Content)
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		all = append(all, items...)
	}
	return all
}

// shardAll shards plan and keeps every shard in memory.
func shardAll(plan Plan, size int) (Plan, []ShardFile, error) {
	var files []ShardFile
	h, err := Shard(plan, size, func(f ShardFile) error {
		files = append(files, f)
		return nil
	})
	return h, files, err
}

// Every item of a plan is in exactly one shard, and executing the shards
// as separate parts (as several workers do) removes exactly the plan's
// items, each recorded once in its own part's manifest; a part run again
// does nothing more.
func TestShardedPlanRunsPartByPart(t *testing.T) {
	e, plan := shardedFixture(t, 23)
	h, files, err := shardAll(plan, 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckShardedHeader(h); err != nil {
		t.Fatal(err)
	}
	if want := (len(plan.Delete) + 4) / 5; len(h.Shards) != want || len(h.KeptShards) == 0 {
		t.Fatalf("%d shards, %d kept shards for %d items, %d kept; want %d shards and some kept", len(h.Shards), len(h.KeptShards), len(plan.Delete), len(plan.Keep), want)
	}
	all := readAllShards(t, h, files)
	got := make([]string, 0, len(all))
	for _, it := range all {
		got = append(got, it.Path)
	}
	var want []string
	for _, it := range plan.Delete {
		want = append(want, it.Path)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("shards hold\n%v\nthe plan\n%v", got, want)
	}
	ctx := context.Background()
	for i := range h.Shards {
		items, _ := ReadShard(h, i, files[i].Content)
		for range 2 { // the second run of a part finds it done
			res, err := e.executor("sharded", func(c *ExecutorConfig) { c.Part = ShardPart(i) }).Run(ctx, PartPlan(h, items, false))
			if err != nil || res.Counts[OutcomeTrashed] != len(items) {
				t.Fatalf("part %d: %+v %v", i, res, err)
			}
		}
		recs, err := ReadManifestPart(ctx, e.fs, "file://"+e.trash+"/_audit", "sharded", ShardPart(i))
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != len(items) {
			t.Fatalf("part %d manifest has %d items; want %d", i, len(recs), len(items))
		}
	}
	for _, p := range want {
		if e.exists(p) {
			t.Errorf("%s still exists", p)
		}
	}
	// The run's manifest is every part's.
	if recs, err := ReadManifest(ctx, e.fs, "file://"+e.trash+"/_audit", "sharded"); err != nil || len(recs) != len(want) {
		t.Fatalf("the manifest of the sharded run: %d records, %v; want %d", len(recs), err, len(want))
	}
}

// A shard changed after approval, or a header whose shards would hide an
// item listed twice or one inside another, is refused before anything is
// touched.
func TestShardedPlanRefusesWhatTheHeaderDoesNotVouchFor(t *testing.T) {
	_, plan := shardedFixture(t, 12)
	h, files, err := shardAll(plan, 4)
	if err != nil {
		t.Fatal(err)
	}
	tampered := slices.Clone(files[1].Content)
	tampered[len(tampered)-3] ^= 1
	if _, err := ReadShard(h, 1, tampered); !errors.Is(err, ErrPlanChanged) {
		t.Fatalf("tampered shard: %v; want ErrPlanChanged", err)
	}
	swapped := h
	swapped.Shards = slices.Clone(h.Shards)
	swapped.Shards[1].Name, swapped.Shards[2].Name = swapped.Shards[2].Name, swapped.Shards[1].Name
	swapped.Shards[1], swapped.Shards[2] = swapped.Shards[2], swapped.Shards[1]
	for name, mod := range map[string]func(p *Plan){
		"shards out of order": func(p *Plan) { *p = swapped },
		"item in two shards": func(p *Plan) {
			p.Shards[1].First = p.Shards[0].Last
		},
		"item inside the previous shard's last": func(p *Plan) {
			p.Shards[1].First = p.Shards[0].Last + "/chk-1"
		},
		"items in the header": func(p *Plan) { p.Delete = plan.Delete[:1] },
		"unexpected name":     func(p *Plan) { p.Shards[0].Name = "../x.jsonl" },
	} {
		bad := h
		bad.Shards = slices.Clone(h.Shards)
		mod(&bad)
		if err := CheckShardedHeader(bad); !errors.Is(err, ErrInvalidPlan) {
			t.Errorf("%s: %v; want ErrInvalidPlan", name, err)
		}
	}
	// A shard whose lines are not in path order is refused even when its
	// hash matches a header that says so.
	lines := strings.SplitAfter(string(files[0].Content), "\n")
	lines[0], lines[1] = lines[1], lines[0]
	reordered := h
	reordered.Shards = slices.Clone(h.Shards)
	reordered.Shards[0] = shardOf(strings.Join(lines, ""), h.Shards[0])
	if _, err := ReadShard(reordered, 0, []byte(strings.Join(lines, ""))); !errors.Is(err, ErrInvalidPlan) {
		t.Fatalf("reordered shard: %v; want ErrInvalidPlan", err)
	}
}

func shardOf(content string, s PlanShard) PlanShard {
	sum := sha256.Sum256([]byte(content))
	s.SHA256 = hex.EncodeToString(sum[:])
	return s
}

// With plain sorting, "x", "x-1", "x/y" would put "x-1" between "x" and
// its descendant and hide the nesting; path order does not.
func TestNestingSeenWhateverSitsBetween(t *testing.T) {
	for _, paths := range [][]string{
		{"hdfs://nn/t/x", "hdfs://nn/t/x-1", "hdfs://nn/t/x/y"},
		{"hdfs://nn/t/x/y", "hdfs://nn/t/x.old", "hdfs://nn/t/x"},
	} {
		if err := checkNesting(slices.Clone(paths)); !errors.Is(err, ErrInvalidPlan) {
			t.Errorf("%v: %v; want ErrInvalidPlan", paths, err)
		}
	}
	if err := checkNesting([]string{"hdfs://nn/t/x", "hdfs://nn/t/x-1", "hdfs://nn/t/xy"}); err != nil {
		t.Fatal(err)
	}
}

// listCounter counts the executor's listings of each directory.
type listCounter struct {
	storage.FileSystem
	mu    sync.Mutex
	lists map[string]int
}

func (c *listCounter) List(ctx context.Context, dir string, batch int, fn storage.ListFunc) error {
	c.mu.Lock()
	c.lists[dir]++
	c.mu.Unlock()
	return c.FileSystem.List(ctx, dir, batch, fn)
}

// Walk counts each dir it visits as a listing: a file system's walk lists
// them through its own List.
func (c *listCounter) Walk(ctx context.Context, root string, fn storage.WalkFunc) error {
	return c.FileSystem.Walk(ctx, root, func(fi storage.FileInfo) error {
		if fi.IsDir {
			c.mu.Lock()
			c.lists[fi.Path]++
			c.mu.Unlock()
		}
		return fn(fi)
	})
}

// Re-reading the roots for checkpoints completed since planning costs a
// bounded share of the work: job dirs untouched since well before
// planning are not listed again, and a large root is re-listed once every
// so many items, not before every batch.
func TestExecutorRescansWhatChanged(t *testing.T) {
	e := newLocalEnv(t)
	const items = 300
	for i := range items {
		e.file(fmt.Sprintf("checkpoints/%032x/chk-1/state", i+1), 1, e.past)
	}
	plan := e.plan(Live{}, Policy{})
	if len(plan.Delete) != items {
		t.Fatalf("planned %d items; want %d", len(plan.Delete), items)
	}
	// A job started since planning on an inventory cluster is writing a
	// checkpoint: its dir is new, so it is listed each time. (Were it
	// outside the inventory, every item would be refused: see
	// TestExecutorRefusesForAWriterOutsideTheInventory.)
	young := fmt.Sprintf("%032x", 99999)
	if err := os.MkdirAll(filepath.Join(e.tenant, "checkpoints", young, "chk-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	lc := &listCounter{FileSystem: e.fs, lists: map[string]int{}}
	live := func(context.Context) (Live, error) { return liveWith(LiveJob{JobID: young}), nil }
	res, err := e.executor("rescan", func(c *ExecutorConfig) { c.FS = lc; c.BatchSize = 2; c.Live = live }).Run(context.Background(), plan)
	if err != nil || res.Counts[OutcomeTrashed] != items {
		t.Fatalf("result %+v err %v", res, err)
	}
	root := strings.TrimSuffix(e.uri("checkpoints"), "/")
	batches := items / 2
	rootLists, youngLists, oldLists := lc.lists[root], lc.lists[root+"/"+young], 0
	for dir, n := range lc.lists {
		if strings.HasPrefix(dir, root+"/") && dir != root+"/"+young {
			oldLists += n
		}
	}
	t.Logf("%d batches: root listed %d times, the new job dir %d, the old job dirs and their chk-1 %d", batches, rootLists, youngLists, oldLists)
	// Each item's own walk right before it is moved lists it and its chk-1
	// once; the re-reading of the roots lists none of them.
	if oldLists != 2*items {
		t.Errorf("job dirs untouched since before planning and their chk-1 listed %d times; want %d, by each item's own walk", oldLists, 2*items)
	}
	// 302 entries at first: re-listed once every 4 items (2 batches), more
	// often as the items leave the root.
	if rootLists == 0 || rootLists >= batches || youngLists != rootLists {
		t.Errorf("root listed %d times and the new job dir %d in %d batches; want both fewer than once a batch", rootLists, youngLists, batches)
	}
}

// A checkpoint started since planning in a job dir the plan saw old is
// still read before anything is touched: its dir made the job dir's entry
// new again. An unparseable one stops every item.
func TestExecutorReadsCheckpointsStartedSincePlanning(t *testing.T) {
	e := newLocalEnv(t)
	e.garbage()
	const live = "fedcba9876543210fedcba9876543210"
	plan := e.plan(liveWith(LiveJob{JobID: live}), Policy{})
	chk := filepath.Join(e.tenant, "checkpoints", live, "chk-10")
	if err := os.MkdirAll(chk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(chk, "_metadata"), make([]byte, 5), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := e.executor("late", nil).Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts[OutcomeRefused] != len(plan.Delete) || !strings.Contains(res.Refused[0].Detail, "cannot be parsed") {
		t.Fatalf("result %+v; want every item refused for the unreadable new checkpoint", res)
	}
}
