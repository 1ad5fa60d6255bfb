package cleanup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
}

const manifestPrefix = "manifest-"

// manifest is the audit log of one run: append-only segments
// manifest-000001.jsonl, manifest-000002.jsonl, ... The storage port
// creates files but never appends or overwrites, so each batch writes a new
// segment; a crash can at worst leave the last line of a segment cut.
type manifest struct {
	fs   storage.FileSystem
	dir  string
	next int
}

func segmentName(seq int) string { return fmt.Sprintf("%s%06d.jsonl", manifestPrefix, seq) }

// loadManifest reads every segment of dir (missing dir: empty run) and
// returns the last record per path.
func loadManifest(ctx context.Context, fsys storage.FileSystem, dir string) (*manifest, map[string]Record, error) {
	m := &manifest{fs: fsys, dir: dir, next: 1}
	last := map[string]Record{}
	var segs []string
	err := fsys.List(ctx, dir, 0, func(batch []storage.FileInfo) error {
		for _, fi := range batch {
			if !fi.IsDir && strings.HasPrefix(fi.Name, manifestPrefix) && strings.HasSuffix(fi.Name, ".jsonl") {
				segs = append(segs, fi.Name)
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
	sort.Strings(segs)
	for _, name := range segs {
		seq, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, manifestPrefix), ".jsonl"))
		if err != nil {
			return nil, nil, &Error{Op: "load manifest", Path: dir + "/" + name, Kind: ErrManifestCorrupt, Err: fmt.Errorf("segment name: %w", err)}
		}
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
	if err := writeRecords(ctx, m, segmentName(m.next), recs); err != nil {
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

// ReadManifest returns the final state of every item of a run, sorted by path.
func ReadManifest(ctx context.Context, fsys storage.FileSystem, auditRoot, runID string) ([]Record, error) {
	if err := checkRunID(runID); err != nil {
		return nil, err
	}
	_, last, err := loadManifest(ctx, fsys, strings.TrimSuffix(auditRoot, "/")+"/"+runID)
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
