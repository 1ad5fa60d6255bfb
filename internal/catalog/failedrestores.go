package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// FailedRestoreDir holds, one file per snapshot, the jobs seen FAILED while
// restoring from a snapshot of the tenant: a session cluster forgets a
// FAILED job after jobstore.expiration-time and an application cluster
// shuts down, while the job's team still retries from that snapshot.
const FailedRestoreDir = ".flinkmaint/failed-restores"

// FailedRestoreRecord is the latest job seen FAILED restoring from one
// snapshot.
type FailedRestoreRecord struct {
	// Snapshot is the checkpoint or savepoint directory, fully qualified.
	Snapshot string `json:"snapshot"`
	// JobID is the full id of the failed job, Cluster the cluster id of
	// the cluster that listed it.
	JobID   string `json:"jobId"`
	Cluster string `json:"cluster"`
	// Job is the logical job, when the cluster is in the inventory.
	Job LogicalJob `json:"job"`
	// FirstSeen and LastSeen bound when a cluster listed a job FAILED
	// restoring from the snapshot.
	FirstSeen time.Time `json:"firstSeen"`
	LastSeen  time.Time `json:"lastSeen"`
	// Message is the line of Flink's that names the snapshot.
	Message string `json:"message,omitempty"`
}

// maxFailedRestoreMessage bounds the message a record keeps, well under
// what a record file may hold (maxEntryBytes).
const maxFailedRestoreMessage = 2048

// FailedRestoreStore keeps failed-restore records under
// Root/.flinkmaint/failed-restores on FS.
type FailedRestoreStore struct {
	FS   storage.FileSystem
	Root string
}

func (s FailedRestoreStore) dir() string {
	return strings.TrimRight(s.Root, "/") + "/" + FailedRestoreDir
}

// Seen records that r.JobID was seen FAILED restoring from r.Snapshot at
// r.LastSeen, and returns the record as stored. An earlier record of the
// snapshot keeps its FirstSeen, and a later sighting than r keeps its job
// and LastSeen. The same sighting again writes nothing, so a retry or a
// second plan in the same minute costs nothing. A record in the
// snapshot's file that does not decode is replaced: the file is this
// snapshot's, and this sighting says what it should hold. One that names
// another snapshot is left as it is, and this sighting not recorded.
func (s FailedRestoreStore) Seen(ctx context.Context, r FailedRestoreRecord) (FailedRestoreRecord, error) {
	r.Snapshot = strings.TrimRight(r.Snapshot, "/")
	if r.Snapshot == "" || r.JobID == "" || r.Cluster == "" || r.LastSeen.IsZero() {
		return r, fmt.Errorf("%w: failed-restore record of %q by job %q on %q at %v: all are required", ErrInvalid, r.Snapshot, r.JobID, r.Cluster, r.LastSeen)
	}
	if len(r.Message) > maxFailedRestoreMessage {
		// A record too large to read back would keep every snapshot.
		r.Message = strings.ToValidUTF8(r.Message[:maxFailedRestoreMessage], "") + "…"
	}
	if r.FirstSeen.IsZero() || r.FirstSeen.After(r.LastSeen) {
		r.FirstSeen = r.LastSeen
	}
	prev, found, err := s.current(ctx, r.Snapshot)
	if err != nil && !errors.Is(err, ErrInvalid) {
		return r, err
	}
	next := r
	if found {
		if prev.LastSeen.After(r.LastSeen) {
			next = prev
		}
		next.FirstSeen = r.FirstSeen
		if !prev.FirstSeen.IsZero() && prev.FirstSeen.Before(r.FirstSeen) {
			next.FirstSeen = prev.FirstSeen
		}
		if sameFailedRestore(next, prev) {
			return prev, nil
		}
	}
	data, err := json.Marshal(next)
	if err != nil {
		return r, err
	}
	return next, replaceFile(ctx, s.FS, s.dir(), entryName(next.Snapshot), data)
}

func sameFailedRestore(a, b FailedRestoreRecord) bool {
	return a.Snapshot == b.Snapshot && a.JobID == b.JobID && a.Cluster == b.Cluster && a.Job == b.Job &&
		a.FirstSeen.Equal(b.FirstSeen) && a.LastSeen.Equal(b.LastSeen) && a.Message == b.Message
}

// current is the record of snapshot: its file, else its entry in the
// index.
func (s FailedRestoreStore) current(ctx context.Context, snapshot string) (FailedRestoreRecord, bool, error) {
	file := s.dir() + "/" + entryName(snapshot)
	data, err := s.FS.ReadFile(ctx, file, maxEntryBytes)
	switch {
	case err == nil:
		var r FailedRestoreRecord
		if err := json.Unmarshal(data, &r); err != nil {
			return r, false, fmt.Errorf("%w: %s: %v", ErrInvalid, file, err)
		}
		if r.Snapshot != snapshot {
			// Not this snapshot's record, though in its file: someone
			// else's to repair, and said by Claims until then.
			return r, false, fmt.Errorf("%s names snapshot %q, not %s: not replaced", file, r.Snapshot, snapshot)
		}
		return r, true, nil
	case !errors.Is(err, storage.ErrNotFound):
		return FailedRestoreRecord{}, false, err
	}
	idx, err := readIndex(ctx, s.FS, s.dir(), failedRestoreRecords)
	if err != nil {
		return FailedRestoreRecord{}, false, err
	}
	r, ok := idx[snapshot]
	return r, ok, nil
}

// Claims reads every record that can stand as a claim, sorted by
// snapshot: the index, overridden by record files. A file (or the index)
// that does not decode, or a record that lacks its snapshot, job id,
// cluster or time, or is not in the file its snapshot names, is rejected
// and said; the rest still count. Whether a record's snapshot lies under
// the tenant's root is the caller's to check, in its spelling of paths.
func (s FailedRestoreStore) Claims(ctx context.Context) ([]FailedRestoreRecord, []Rejected, error) {
	var rejected []Rejected
	valid := func(r FailedRestoreRecord) string {
		if r.Snapshot == "" || r.JobID == "" || r.Cluster == "" || r.LastSeen.IsZero() {
			return fmt.Sprintf("snapshot %q, job id %q, cluster %q, last seen %v: all are required", r.Snapshot, r.JobID, r.Cluster, r.LastSeen)
		}
		return ""
	}
	bySnapshot, err := readIndex(ctx, s.FS, s.dir(), failedRestoreRecords)
	if errors.Is(err, ErrInvalid) {
		rejected = append(rejected, Rejected{File: s.dir() + "/" + IndexName, Reason: err.Error()})
		bySnapshot = map[string]FailedRestoreRecord{}
	} else if err != nil {
		return nil, nil, err
	}
	for p, r := range bySnapshot {
		if why := valid(r); why != "" {
			rejected = append(rejected, Rejected{File: s.dir() + "/" + IndexName, Reason: "an entry with " + why})
			delete(bySnapshot, p)
		}
	}
	files, err := jsonFiles(ctx, s.FS, s.dir())
	if err != nil {
		return nil, nil, err
	}
	for _, f := range files {
		data, err := s.FS.ReadFile(ctx, f, maxEntryBytes)
		if errors.Is(err, storage.ErrNotFound) {
			continue // replaced meanwhile
		}
		if err != nil {
			return nil, nil, err
		}
		var r FailedRestoreRecord
		if err := json.Unmarshal(data, &r); err != nil {
			rejected = append(rejected, Rejected{File: f, Reason: fmt.Sprintf("%v: %v", ErrInvalid, err)})
			continue
		}
		switch name := f[strings.LastIndex(f, "/")+1:]; {
		case valid(r) != "":
			rejected = append(rejected, Rejected{File: f, Reason: valid(r)})
		case name != entryName(r.Snapshot):
			rejected = append(rejected, Rejected{File: f, Reason: fmt.Sprintf("names snapshot %s, whose record would be %s", r.Snapshot, entryName(r.Snapshot))})
		default:
			bySnapshot[r.Snapshot] = r // a file is newer than the index
		}
	}
	out := make([]FailedRestoreRecord, 0, len(bySnapshot))
	for _, r := range bySnapshot {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Snapshot < out[j].Snapshot })
	sort.Slice(rejected, func(i, j int) bool { return rejected[i].File < rejected[j].File })
	return out, rejected, nil
}

// Compact folds the failed-restore records into their index and drops the
// records of snapshots that are gone; see compact.
func (s FailedRestoreStore) Compact(ctx context.Context, exists func(ctx context.Context, path string) (bool, error)) (CompactResult, error) {
	return compact(ctx, s.FS, s.dir(), failedRestoreRecords, exists)
}
