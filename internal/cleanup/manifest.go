package cleanup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// Outcome is what happened to an item.
type Outcome string

// Outcomes. Trashed, Deleted, Refused and Gone are final: a resumed run
// does not touch the item again. Started is written before acting, Failed
// after an error; both are retried by the next run.
const (
	OutcomeStarted Outcome = "started"
	OutcomeTrashed Outcome = "trashed"
	OutcomeDeleted Outcome = "deleted"
	OutcomeRefused Outcome = "refused"
	OutcomeGone    Outcome = "gone"
	OutcomeFailed  Outcome = "failed"
	OutcomePurged  Outcome = "purged"
)

func (o Outcome) final() bool {
	switch o {
	case OutcomeTrashed, OutcomeDeleted, OutcomeRefused, OutcomeGone, OutcomePurged:
		return true
	}
	return false
}

// Record is one line of the audit manifest.
type Record struct {
	Path      string    `json:"path"`
	Kind      ItemKind  `json:"kind,omitempty"`
	Rule      Rule      `json:"rule,omitempty"`
	Files     int64     `json:"files"`
	Dirs      int64     `json:"dirs"`
	Bytes     int64     `json:"bytes"`
	Outcome   Outcome   `json:"outcome"`
	Time      time.Time `json:"time"`
	TrashPath string    `json:"trashPath,omitempty"`
	Detail    string    `json:"detail,omitempty"`
	Retryable bool      `json:"retryable,omitempty"`
	// UID and ResourceVersion identify a Kubernetes object item.
	UID             string `json:"uid,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Resources says what became of the FlinkStateSnapshot resources
	// deleted with a savepoint.
	Resources []string `json:"resources,omitempty"`
	// Restore says, for a trashed item, how it comes back.
	Restore string `json:"restore,omitempty"`
	// Run is, in a restore's result, the run whose trash held the item
	// when that is not the run restored: an earlier run trashed a file
	// the restored snapshot names.
	Run string `json:"run,omitempty"`
}

const manifestPrefix = "manifest-"

// manifest is the audit log of one run, or of one part of a sharded run:
// append-only segments manifest-000001.jsonl, manifest-000002.jsonl, ...
// (a part's are manifest-<part>-000001.jsonl, ...). The storage port
// creates files but never appends or overwrites, so each batch writes a new
// segment; a crash can at worst leave the last line of a segment cut.
// Parts of one run act on disjoint items, so they can be written by
// several workers at once.
type manifest struct {
	fs   storage.FileSystem
	dir  string
	part string
	next int
}

var partPattern = regexp.MustCompile(`^[a-z0-9]{1,16}$`)

func segmentName(part string, seq int) string {
	if part == "" {
		return fmt.Sprintf("%s%06d.jsonl", manifestPrefix, seq)
	}
	return fmt.Sprintf("%s%s-%06d.jsonl", manifestPrefix, part, seq)
}

// allParts selects the segments of every part of a run (ReadManifest).
const allParts = "*"

// segmentSeq returns the sequence number of a segment of part (allParts:
// of any part), or false when name is not one.
func segmentSeq(name, part string) (int, bool) {
	rest, ok := strings.CutPrefix(name, manifestPrefix)
	if !ok {
		return 0, false
	}
	rest, ok = strings.CutSuffix(rest, ".jsonl")
	if !ok {
		return 0, false
	}
	got, num := "", rest
	if i := strings.LastIndexByte(rest, '-'); i >= 0 {
		got, num = rest[:i], rest[i+1:]
		if !partPattern.MatchString(got) {
			return 0, false
		}
	}
	if len(num) != 6 || (part != allParts && got != part) {
		return 0, false
	}
	seq, err := strconv.Atoi(num)
	return seq, err == nil && seq > 0
}

// loadManifest reads every segment of part in dir (missing dir: empty run)
// and returns the last record per path. Parts hold disjoint items, so with
// allParts the segments, in name order, still give each item's last record.
func loadManifest(ctx context.Context, fsys storage.FileSystem, dir, part string) (*manifest, map[string]Record, error) {
	m := &manifest{fs: fsys, dir: dir, part: part, next: 1}
	last := map[string]Record{}
	var segs []string
	var odd string
	err := fsys.List(ctx, dir, 0, func(batch []storage.FileInfo) error {
		for _, fi := range batch {
			if _, ok := segmentSeq(fi.Name, part); ok && !fi.IsDir {
				segs = append(segs, fi.Name)
			} else if _, any := segmentSeq(fi.Name, allParts); !any && strings.HasPrefix(fi.Name, manifestPrefix) && strings.HasSuffix(fi.Name, ".jsonl") {
				odd = fi.Name
			}
		}
		return nil
	})
	if errors.Is(err, storage.ErrNotFound) {
		return m, last, nil
	}
	if err != nil {
		return nil, nil, classify("list manifest", dir, err)
	}
	if odd != "" {
		// Not a segment this version writes: resuming without it could
		// redo or skip what it records.
		return nil, nil, &Error{Op: "load manifest", Path: dir + "/" + odd, Kind: ErrManifestCorrupt, Err: errors.New("not a manifest segment name (manifest-[<part>-]NNNNNN.jsonl)")}
	}
	sort.Strings(segs)
	for _, name := range segs {
		seq, _ := segmentSeq(name, part)
		if seq >= m.next {
			m.next = seq + 1
		}
		p := dir + "/" + name
		data, err := fsys.ReadFile(ctx, p, 0)
		if err != nil {
			return nil, nil, classify("read manifest", p, err)
		}
		lines := bytes.Split(data, []byte("\n"))
		for i, line := range lines {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var r Record
			if err := json.Unmarshal(line, &r); err != nil || r.Path == "" || r.Outcome == "" {
				if i == len(lines)-1 {
					// A cut last line is a crash mid-write; the items it
					// named are re-verified and redone or found done.
					continue
				}
				return nil, nil, &Error{Op: "load manifest", Path: p, Kind: ErrManifestCorrupt, Err: fmt.Errorf("line %d: not a record", i+1)}
			}
			last[r.Path] = r
		}
	}
	return m, last, nil
}

// append writes records as a new segment.
func (m *manifest) append(ctx context.Context, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	if err := writeRecords(ctx, m, segmentName(m.part, m.next), recs); err != nil {
		return err
	}
	m.next++
	return nil
}

func encodeRecords(recs []Record) ([]byte, error) {
	var buf bytes.Buffer
	for _, r := range recs {
		line, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("cleanup: encode manifest record: %w", err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

// ReadManifest returns the final state of every item of a run, of every
// part of a sharded one, sorted by path.
func ReadManifest(ctx context.Context, fsys storage.FileSystem, auditRoot, runID string) ([]Record, error) {
	return ReadManifestPart(ctx, fsys, auditRoot, runID, allParts)
}

// ReadManifestPart returns the final state of every item of one part of a
// sharded run (see ShardPart), sorted by path.
func ReadManifestPart(ctx context.Context, fsys storage.FileSystem, auditRoot, runID, part string) ([]Record, error) {
	if err := checkRunID(runID); err != nil {
		return nil, err
	}
	if part != allParts {
		if err := checkPart(part); err != nil {
			return nil, err
		}
	}
	_, last, err := loadManifest(ctx, fsys, strings.TrimSuffix(auditRoot, "/")+"/"+runID, part)
	if err != nil {
		return nil, err
	}
	out := make([]Record, 0, len(last))
	for _, r := range last {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func checkPart(part string) error {
	if part != "" && !partPattern.MatchString(part) {
		return &Error{Op: "configure", Kind: ErrInvalidConfig, Err: fmt.Errorf("manifest part %q: want 1-16 characters of a-z 0-9", part)}
	}
	return nil
}
