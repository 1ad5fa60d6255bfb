package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// RehearsalDir holds the latest compatibility rehearsal of every snapshot
// rehearsed, one file per snapshot, beside the drill records.
const RehearsalDir = ".flinkmaint/rehearsals"

// Rehearsal verdicts: does the snapshot restore into the job's new version?
const (
	RehearsalCompatible   = "compatible"
	RehearsalIncompatible = "incompatible"
	// RehearsalInconclusive: the rehearsal could not run to a verdict (the
	// drill cluster had no slots, did not answer); it proves nothing.
	RehearsalInconclusive = "inconclusive"
	// RehearsalNotRehearsed: nothing was tried, and Why says why.
	RehearsalNotRehearsed = "not-rehearsed"
)

// RehearsalRecord is the latest rehearsal of one snapshot.
type RehearsalRecord struct {
	// Snapshot is the savepoint directory, fully qualified.
	Snapshot string     `json:"snapshot"`
	Job      LogicalJob `json:"job"`
	RunID    string     `json:"runId"`
	// FlinkVersion is the drill cluster's, the version rehearsed into; Jar
	// is the new version's.
	FlinkVersion string `json:"flinkVersion,omitempty"`
	Jar          string `json:"jar,omitempty"`
	Verdict      string `json:"verdict"`
	// Cause names why an incompatible or inconclusive one is so.
	Cause string    `json:"cause,omitempty"`
	At    time.Time `json:"at"`
}

// RehearsalStore keeps rehearsal records under Root/.flinkmaint/rehearsals.
type RehearsalStore struct {
	FS   storage.FileSystem
	Root string
}

func (s RehearsalStore) dir() string { return strings.TrimRight(s.Root, "/") + "/" + RehearsalDir }

// Put records r as the snapshot's latest rehearsal, replacing an older one.
func (s RehearsalStore) Put(ctx context.Context, r RehearsalRecord) error {
	r.Snapshot = strings.TrimRight(r.Snapshot, "/")
	if r.Snapshot == "" || r.RunID == "" || r.Verdict == "" {
		return fmt.Errorf("%w: rehearsal record of %q by run %q with verdict %q: all are required", ErrInvalid, r.Snapshot, r.RunID, r.Verdict)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return replaceFile(ctx, s.FS, s.dir(), entryName(r.Snapshot), data)
}

// List reads every record, sorted by snapshot; a missing directory is
// empty.
func (s RehearsalStore) List(ctx context.Context) ([]RehearsalRecord, error) {
	return listLatest(ctx, s.FS, s.dir(), rehearsalRecords)
}

// Compact folds the rehearsal records into their index and drops the
// records of snapshots that are gone; see compact.
func (s RehearsalStore) Compact(ctx context.Context, exists func(ctx context.Context, path string) (bool, error)) (CompactResult, error) {
	return compact(ctx, s.FS, s.dir(), rehearsalRecords, exists)
}
