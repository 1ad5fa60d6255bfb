package cleanup

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// A sharded plan (version 4) keeps its header, everything but the
// items, in one document and its items in shards of JSON lines beside it,
// so the executor holds one shard at a time and several workers can act on
// different shards at once. The header lists every shard's hash, item
// count and first and last path, so the one hash a user approves (the
// header's) covers every shard, and the checks that span the whole plan
// (no item listed twice, none inside another) can be made shard by shard.
//
// Items are ordered by pathOrder, in which a directory's descendants
// directly follow it: an item inside another is then always next to it or
// to another item inside it, in the same shard or across a boundary.

// ShardedPlanVersion is the first plan version whose items are in shards.
const ShardedPlanVersion = 4

// DefaultShardItems is how many items a shard holds by default.
const DefaultShardItems = 10_000

// PlanShard describes one shard file of a plan.
type PlanShard struct {
	// Name is the shard's file name, in the header's directory.
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	// Items is how many lines the shard holds; First and Last are the
	// paths of its first and last.
	Items int    `json:"items"`
	First string `json:"first"`
	Last  string `json:"last"`
}

// ShardFile is one shard, ready to be written beside the header, and
// its entry in the header.
type ShardFile struct {
	PlanShard
	Content []byte
}

// pathKey orders paths so that a directory's descendants directly follow
// it ("/" sorts before every other byte).
func pathKey(p string) string { return strings.ReplaceAll(p, "/", "\x00") }

func pathOrder(a, b string) int { return strings.Compare(pathKey(a), pathKey(b)) }

// ShardPart is the manifest part of shard i (0-based) of a sharded run.
func ShardPart(i int) string { return fmt.Sprintf("s%05d", i+1) }

// ObjectsPart is the manifest part of a sharded run's Kubernetes objects,
// acted on after every shard of paths.
const ObjectsPart = "objects"

// Shard splits plan into a header and shards of at most size items to
// delete and at most size kept items. The kept items go into shards of
// their own (kept-*.jsonl), which the executor never reads. Each shard is
// handed to write as soon as it is encoded, so only one is held at a time
// (a million kept items are hundreds of MB of JSON lines).
func Shard(plan Plan, size int, write func(ShardFile) error) (Plan, error) {
	if size < 1 {
		return Plan{}, invalidInput("shard size %d: want at least 1", size)
	}
	items := slices.Clone(plan.Delete)
	slices.SortFunc(items, func(a, b Item) int { return pathOrder(a.Path, b.Path) })
	h := plan
	h.Version = ShardedPlanVersion
	h.Delete, h.Keep = nil, nil
	for start := 0; start < len(items); start += size {
		part := items[start:min(start+size, len(items))]
		shard, err := encodeShard(fmt.Sprintf("items-%05d.jsonl", len(h.Shards)+1), part, part[0].Path, part[len(part)-1].Path)
		if err != nil {
			return Plan{}, err
		}
		if err := write(shard); err != nil {
			return Plan{}, err
		}
		h.Shards = append(h.Shards, shard.PlanShard)
	}
	for start := 0; start < len(plan.Keep); start += size {
		part := plan.Keep[start:min(start+size, len(plan.Keep))]
		shard, err := encodeShard(fmt.Sprintf("kept-%05d.jsonl", len(h.KeptShards)+1), part, part[0].Path, part[len(part)-1].Path)
		if err != nil {
			return Plan{}, err
		}
		if err := write(shard); err != nil {
			return Plan{}, err
		}
		h.KeptShards = append(h.KeptShards, shard.PlanShard)
	}
	return h, nil
}

func encodeShard[T any](name string, part []T, first, last string) (ShardFile, error) {
	data, err := encodeLines(part)
	if err != nil {
		return ShardFile{}, err
	}
	sum := sha256.Sum256(data)
	return ShardFile{PlanShard: PlanShard{Name: name, SHA256: hex.EncodeToString(sum[:]), Items: len(part), First: first, Last: last}, Content: data}, nil
}

func encodeLines[T any](items []T) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return nil, fmt.Errorf("cleanup: encode plan shard: %w", err)
		}
	}
	return buf.Bytes(), nil
}

// CheckShardedHeader checks what a sharded plan's header promises about
// its shards as a whole: well-formed shard names and hashes, and shards in
// path order with no item listed twice or lying inside another across a
// shard boundary.
func CheckShardedHeader(h Plan) error {
	if h.Version != ShardedPlanVersion {
		return invalidPlan("version %d is not a sharded plan (version %d)", h.Version, ShardedPlanVersion)
	}
	if len(h.Delete) > 0 || len(h.Keep) > 0 {
		return invalidPlan("a sharded plan's header lists %d items and %d kept items itself; they belong in its shards", len(h.Delete), len(h.Keep))
	}
	for i, s := range h.Shards {
		if want := fmt.Sprintf("items-%05d.jsonl", i+1); s.Name != want {
			return invalidPlan("shard %d is named %q; want %q", i+1, s.Name, want)
		}
		if len(s.SHA256) != 64 || s.Items < 1 || s.First == "" || s.Last == "" || pathOrder(s.First, s.Last) > 0 {
			return invalidPlan("shard %s: sha256 %q, %d items, first %q, last %q: want a sha256, at least one item and first <= last", s.Name, s.SHA256, s.Items, s.First, s.Last)
		}
		if i > 0 {
			if err := checkAdjacent(h.Shards[i-1].Last, s.First); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReadShard decodes and checks shard i of header h from its content: the
// hash, count, first and last path the header names, and the order and
// nesting of its items.
func ReadShard(h Plan, i int, data []byte) ([]Item, error) {
	if i < 0 || i >= len(h.Shards) {
		return nil, invalidPlan("shard %d: the plan has %d shards", i+1, len(h.Shards))
	}
	s := h.Shards[i]
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != s.SHA256 {
		return nil, &Error{Op: "read plan shard", Path: s.Name, Kind: ErrPlanChanged, Err: fmt.Errorf("sha256 %s, the approved plan's header says %s", got, s.SHA256)}
	}
	items := make([]Item, 0, s.Items)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var it Item
		if err := json.Unmarshal(sc.Bytes(), &it); err != nil {
			return nil, invalidPlan("shard %s line %d: %v", s.Name, len(items)+1, err)
		}
		if len(items) > 0 {
			if err := checkAdjacent(items[len(items)-1].Path, it.Path); err != nil {
				return nil, err
			}
		}
		items = append(items, it)
	}
	if err := sc.Err(); err != nil {
		return nil, invalidPlan("shard %s: %v", s.Name, err)
	}
	if len(items) != s.Items || items[0].Path != s.First || items[len(items)-1].Path != s.Last {
		return nil, invalidPlan("shard %s holds %d items from %q to %q; its header says %d from %q to %q", s.Name, len(items), first(items), last(items), s.Items, s.First, s.Last)
	}
	return items, nil
}

func first(items []Item) string {
	if len(items) == 0 {
		return ""
	}
	return items[0].Path
}

func last(items []Item) string {
	if len(items) == 0 {
		return ""
	}
	return items[len(items)-1].Path
}

// checkAdjacent checks two neighbouring items in path order.
func checkAdjacent(prev, next string) error {
	switch c := pathOrder(prev, next); {
	case c == 0:
		return invalidPlan("item %s listed twice", next)
	case c > 0:
		return invalidPlan("items out of order: %s before %s", prev, next)
	case under(next, prev):
		return invalidPlan("item %s lies inside item %s", next, prev)
	}
	return nil
}

// checkNesting checks that no path is listed twice or lies inside
// another. It sorts paths.
func checkNesting(paths []string) error {
	slices.SortFunc(paths, pathOrder)
	for i := 1; i < len(paths); i++ {
		if err := checkAdjacent(paths[i-1], paths[i]); err != nil {
			return err
		}
	}
	return nil
}

// PartPlan is the plan one part of a sharded run executes: the header's
// settings with the given items, and the header's Kubernetes objects only
// when objects is set.
func PartPlan(h Plan, items []Item, objects bool) Plan {
	p := h
	p.Version = PlanVersion
	p.Shards, p.KeptShards = nil, nil
	p.Delete = items
	if !objects {
		p.Objects = nil
	}
	return p
}

// ShardPath is where shard s of the plan whose header is at planPath
// lies: beside it (CheckShardedHeader checks the name).
func ShardPath(planPath string, s PlanShard) string {
	return planPath[:strings.LastIndex(planPath, "/")+1] + s.Name
}

// ReadPlan reads the plan at path on fsys whole: a sharded plan's header
// with its items and kept items read back from its shards (each checked
// against the header) into Delete and Keep. It is for tools and reports;
// the executor reads one shard at a time.
func ReadPlan(ctx context.Context, fsys storage.FileSystem, path string) (Plan, error) {
	data, err := fsys.ReadFile(ctx, path, 1<<30)
	if err != nil {
		return Plan{}, classify("read plan", path, err)
	}
	var p Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return Plan{}, invalidPlan("%s does not decode: %v", path, err)
	}
	if p.Version != ShardedPlanVersion {
		return p, nil
	}
	if err := CheckShardedHeader(p); err != nil {
		return Plan{}, err
	}
	for i, s := range p.Shards {
		data, err := fsys.ReadFile(ctx, ShardPath(path, s), 1<<30)
		if err != nil {
			return Plan{}, classify("read plan shard", ShardPath(path, s), err)
		}
		items, err := ReadShard(p, i, data)
		if err != nil {
			return Plan{}, err
		}
		p.Delete = append(p.Delete, items...)
	}
	for _, s := range p.KeptShards {
		data, err := fsys.ReadFile(ctx, ShardPath(path, s), 1<<30)
		if err != nil {
			return Plan{}, classify("read plan shard", ShardPath(path, s), err)
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != s.SHA256 {
			return Plan{}, &Error{Op: "read plan shard", Path: ShardPath(path, s), Kind: ErrPlanChanged, Err: errors.New("sha256 differs from the header's")}
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			var k Kept
			if err := json.Unmarshal(sc.Bytes(), &k); err != nil {
				return Plan{}, invalidPlan("shard %s: %v", s.Name, err)
			}
			p.Keep = append(p.Keep, k)
		}
	}
	return p, nil
}
