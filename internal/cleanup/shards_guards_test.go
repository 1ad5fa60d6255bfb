package cleanup

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A header's promises about each shard are checked one by one: each case
// breaks one, the others holding.
func TestShardedHeaderChecksEachShardEntry(t *testing.T) {
	_, plan := shardedFixture(t, 4)
	h, files, err := shardAll(plan, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Shards of one item: first == last, one item, both accepted.
	if err := CheckShardedHeader(h); err != nil {
		t.Fatalf("a header of one-item shards: %v", err)
	}
	if h.Shards[0].Items != 1 || h.Shards[0].First != h.Shards[0].Last {
		t.Fatalf("shard %+v; want one item, first == last", h.Shards[0])
	}
	readAllShards(t, h, files)
	for name, mod := range map[string]func(s *PlanShard){
		"short sha256":   func(s *PlanShard) { s.SHA256 = s.SHA256[:63] },
		"no items":       func(s *PlanShard) { s.Items = 0 },
		"no first":       func(s *PlanShard) { s.First = "" },
		"no last":        func(s *PlanShard) { s.Last = "" },
		"first > last":   func(s *PlanShard) { s.First = s.Last + "z" },
		"negative items": func(s *PlanShard) { s.Items = -1 },
	} {
		bad := h
		bad.Shards = slices.Clone(h.Shards)
		mod(&bad.Shards[0]) // the first: no neighbour's check catches it
		if err := CheckShardedHeader(bad); !errors.Is(err, ErrInvalidPlan) {
			t.Errorf("%s: %v; want ErrInvalidPlan", name, err)
		}
	}
}

// A shard must hold what its header entry says: as many items, from its
// first to its last path. The header is changed here, not the shard, so
// the shard's hash still matches and only these checks tell.
func TestReadShardChecksCountFirstAndLast(t *testing.T) {
	_, plan := shardedFixture(t, 6)
	h, files, err := shardAll(plan, 3)
	if err != nil {
		t.Fatal(err)
	}
	if h.Shards[1].Items != 3 {
		t.Fatalf("shard 2 holds %d items; want 3", h.Shards[1].Items)
	}
	items, err := ReadShard(h, 1, files[1].Content)
	if err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(s *PlanShard){
		"one item more": func(s *PlanShard) { s.Items++ },
		"another first": func(s *PlanShard) { s.First = items[1].Path },
		"another last":  func(s *PlanShard) { s.Last = items[1].Path },
	} {
		bad := h
		bad.Shards = slices.Clone(h.Shards)
		mod(&bad.Shards[1])
		if _, err := ReadShard(bad, 1, files[1].Content); !errors.Is(err, ErrInvalidPlan) || !strings.Contains(err.Error(), "its header says") {
			t.Errorf("%s: %v; want ErrInvalidPlan comparing the shard with its header", name, err)
		}
	}
	// An empty shard, its hash the header's: refused, naming what it holds.
	empty := h
	empty.Shards = slices.Clone(h.Shards)
	sum := sha256.Sum256(nil)
	empty.Shards[1].SHA256 = hex.EncodeToString(sum[:])
	if _, err := ReadShard(empty, 1, nil); !errors.Is(err, ErrInvalidPlan) || !strings.Contains(err.Error(), `holds 0 items from "" to ""`) {
		t.Errorf("an empty shard: %v; want ErrInvalidPlan saying it holds no item", err)
	}
	// A shard whose count differs names its own first and last path.
	miscounted := h
	miscounted.Shards = slices.Clone(h.Shards)
	miscounted.Shards[1].Items++
	if _, err := ReadShard(miscounted, 1, files[1].Content); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("holds 3 items from %q to %q", items[0].Path, items[2].Path)) {
		t.Errorf("a miscounted shard: %v; want it to name its first and last path", err)
	}
	for _, i := range []int{-1, len(h.Shards)} {
		if _, err := ReadShard(h, i, files[0].Content); !errors.Is(err, ErrInvalidPlan) {
			t.Errorf("shard index %d of %d: %v; want ErrInvalidPlan", i, len(h.Shards), err)
		}
	}
}

// Kept items fill their shards exactly, the last one full too.
func TestShardKeepsEveryKeptItem(t *testing.T) {
	_, plan := shardedFixture(t, 2)
	if len(plan.Keep) < 2 {
		t.Fatalf("plan keeps %d items; want some", len(plan.Keep))
	}
	plan.Keep = plan.Keep[:2]
	h, files, err := shardAll(plan, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.KeptShards) != 1 || h.KeptShards[0].Items != 2 {
		t.Fatalf("kept shards %+v; want one of 2 items", h.KeptShards)
	}
	var kept int
	for _, f := range files {
		if strings.HasPrefix(f.Name, "kept-") {
			kept += strings.Count(string(f.Content), "\n")
		}
	}
	if kept != 2 {
		t.Fatalf("kept shards hold %d lines; want 2", kept)
	}
	if _, _, err := shardAll(plan, 0); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("shard size 0: %v; want ErrInvalidInput", err)
	}
}
