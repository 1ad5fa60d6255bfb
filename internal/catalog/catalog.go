// Package catalog records which logical job every savepoint belongs to.
// A job's id changes on every restart (each window, every operator
// upgrade), so the id prefix in savepoint-<jobid6>-<rand> cannot group one
// job's savepoints; the catalog can. It lives on the tenant's own storage,
// one small JSON file per savepoint under <tenant root>/.flinkmaint/catalog,
// written once and never appended to, so no database is needed and a
// crash leaves either the whole entry or none.
package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// Dir is the catalog's directory below a tenant root.
const Dir = ".flinkmaint/catalog"

// maxEntryBytes bounds one entry read back.
const maxEntryBytes = 64 << 10

// Triggers say how a savepoint came to the catalog.
const (
	TriggerWindow     = "window"     // taken by a maintenance window
	TriggerScheduled  = "scheduled"  // taken by a savepoint schedule
	TriggerRehearsal  = "rehearsal"  // taken to rehearse a job's new version
	TriggerOperator   = "operator"   // recorded by the Flink Kubernetes Operator
	TriggerDiscovered = "discovered" // found on storage, its job id known to the cluster
	TriggerAdopted    = "adopted"    // assigned by a person (savepoints adopt)
)

// LogicalJob is a job across restarts: its tenant, cluster and name.
type LogicalJob struct {
	Tenant  string `json:"tenant"`
	Cluster string `json:"cluster"`
	Job     string `json:"job"`
}

// String is tenant/cluster/job.
func (j LogicalJob) String() string { return j.Tenant + "/" + j.Cluster + "/" + j.Job }

// Valid says every part is set.
func (j LogicalJob) Valid() bool { return j.Tenant != "" && j.Cluster != "" && j.Job != "" }

// Entry is one savepoint and its logical job.
type Entry struct {
	// Path is the savepoint directory, fully qualified, without a trailing /.
	Path  string     `json:"path"`
	Job   LogicalJob `json:"job"`
	JobID string     `json:"jobId,omitempty"`
	// Trigger is one of the Trigger constants; RunID the window or
	// schedule run that took it.
	Trigger      string    `json:"trigger"`
	RunID        string    `json:"runId,omitempty"`
	FlinkVersion string    `json:"flinkVersion,omitempty"`
	Format       string    `json:"format,omitempty"` // CANONICAL or NATIVE, when known
	Files        int64     `json:"files,omitempty"`
	Bytes        int64     `json:"bytes,omitempty"`
	RecordedAt   time.Time `json:"recordedAt"`
	// Evidence says what proved the job of an entry flinkmaint found rather
	// than took (TriggerDiscovered, TriggerOperator): Flink's checkpoint
	// history naming this path for a full job id, or an operator record in
	// the tenant's namespace. A found entry without it is a guess by an
	// earlier release (from the job id prefix) and proves nothing.
	Evidence string `json:"evidence,omitempty"`
}

// Proves says whether the entry is evidence of its savepoint's job at all
// (before the checks of its tenant; see Claims): every entry flinkmaint
// wrote when it took or adopted the savepoint, and found ones that carry
// their evidence.
func (e Entry) Proves() bool {
	switch e.Trigger {
	case TriggerWindow, TriggerScheduled, TriggerAdopted:
		return true
	case TriggerDiscovered, TriggerOperator:
		return e.Evidence != ""
	}
	return false
}

// ErrConflict: the catalog already gives the savepoint another logical job.
var ErrConflict = errors.New("catalog: savepoint already catalogued for another job")

// ErrInvalid: an entry lacks its path or logical job.
var ErrInvalid = errors.New("catalog: invalid entry")

// entryName is the file of a savepoint: a hash of its path, so two
// savepoint roots never collide and the name needs no escaping.
func entryName(path string) string {
	sum := sha256.Sum256([]byte(path))
	return hex.EncodeToString(sum[:12]) + ".json"
}

// Store is the catalog of one tenant.
type Store struct {
	FS storage.FileSystem
	// Root is the tenant root on FS; the catalog is Root/.flinkmaint/catalog.
	Root string
}

func (s Store) dir() string { return strings.TrimRight(s.Root, "/") + "/" + Dir }

// Put records e. The same savepoint and job again is a no-op (so the
// activity that took the savepoint may retry); another job is ErrConflict
// unless replace is set (savepoints adopt, by a person).
func (s Store) Put(ctx context.Context, e Entry, replace bool) error {
	e.Path = strings.TrimRight(e.Path, "/")
	if e.Path == "" || !e.Job.Valid() || e.Trigger == "" {
		return fmt.Errorf("%w: path %q, job %q, trigger %q: all are required", ErrInvalid, e.Path, e.Job, e.Trigger)
	}
	file := s.dir() + "/" + entryName(e.Path)
	prev, found, err := s.read(ctx, file)
	if err != nil {
		return err
	}
	if !found {
		// Compacted: the index holds it. A new file overrides the index.
		idx, err := s.readIndex(ctx)
		if err != nil {
			return err
		}
		if prev, found = idx[e.Path]; found && prev.Job == e.Job {
			return nil
		}
		if found && !replace {
			return fmt.Errorf("%w: %s is catalogued for %s, not %s", ErrConflict, e.Path, prev.Job, e.Job)
		}
		found = false
	}
	if found {
		if prev.Path == e.Path && prev.Job == e.Job {
			return nil
		}
		if !replace {
			return fmt.Errorf("%w: %s is catalogued for %s, not %s", ErrConflict, e.Path, prev.Job, e.Job)
		}
		if err := s.FS.Remove(ctx, file); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
	}
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := s.FS.MkdirAll(ctx, s.dir()); err != nil {
		return err
	}
	err = s.FS.WriteFile(ctx, file, data)
	if errors.Is(err, storage.ErrExist) {
		// A concurrent writer: fine if it wrote the same.
		prev, found, rerr := s.read(ctx, file)
		if rerr == nil && found && prev.Path == e.Path && prev.Job == e.Job {
			return nil
		}
		return fmt.Errorf("%w: %s was catalogued concurrently for %s", ErrConflict, e.Path, prev.Job)
	}
	return err
}

func (s Store) read(ctx context.Context, file string) (Entry, bool, error) {
	data, err := s.FS.ReadFile(ctx, file, maxEntryBytes)
	if errors.Is(err, storage.ErrNotFound) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, err
	}
	var e Entry
	if err := json.Unmarshal(data, &e); err != nil {
		return Entry{}, false, fmt.Errorf("%w: %s: %v", ErrInvalid, file, err)
	}
	return e, true, nil
}

// List reads every entry, sorted by path: the index, overridden by entry
// files. A missing catalog is empty; an unreadable entry is an error (its
// savepoint's lineage would be unknown).
func (s Store) List(ctx context.Context) ([]Entry, error) {
	byPath, err := s.readIndex(ctx)
	if err != nil {
		return nil, err
	}
	files, err := jsonFiles(ctx, s.FS, s.dir())
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		e, found, err := s.read(ctx, f)
		if err != nil {
			return nil, err
		}
		if found {
			byPath[e.Path] = e
		}
	}
	out := make([]Entry, 0, len(byPath))
	for _, e := range byPath {
		out = append(out, e)
	}
	sortEntries(out)
	return out, nil
}

func sortEntries(es []Entry) {
	sort.Slice(es, func(i, j int) bool { return es[i].Path < es[j].Path })
}

// Rejected is a catalog file that is no evidence, and why.
type Rejected struct {
	File   string
	Reason string
}

// Claims reads every entry that can stand as a claim, sorted by path: a
// file that does not decode, lacks its path or job, or is not the file its
// path names (entries are named by the hash of their path) is rejected and
// said, and the rest still count. Whether a claim holds for its tenant
// (its path under the tenant's root, its job the tenant's) is the
// caller's to check.
func (s Store) Claims(ctx context.Context) ([]Entry, []Rejected, error) {
	var rejected []Rejected
	byPath, err := s.readIndex(ctx)
	if errors.Is(err, ErrInvalid) {
		rejected = append(rejected, Rejected{File: s.dir() + "/" + IndexName, Reason: err.Error()})
		byPath = map[string]Entry{}
	} else if err != nil {
		return nil, nil, err
	}
	for p, e := range byPath {
		if p == "" || !e.Job.Valid() {
			rejected = append(rejected, Rejected{File: s.dir() + "/" + IndexName, Reason: fmt.Sprintf("an entry with path %q, job %q: both are required", p, e.Job)})
			delete(byPath, p)
		}
	}
	files, err := jsonFiles(ctx, s.FS, s.dir())
	if err != nil {
		return nil, nil, err
	}
	for _, f := range files {
		e, found, err := s.read(ctx, f)
		switch {
		case errors.Is(err, ErrInvalid):
			rejected = append(rejected, Rejected{File: f, Reason: err.Error()})
			continue
		case err != nil:
			return nil, nil, err
		case !found:
			continue // removed since the listing
		}
		switch name := f[strings.LastIndex(f, "/")+1:]; {
		case e.Path == "" || !e.Job.Valid():
			rejected = append(rejected, Rejected{File: f, Reason: fmt.Sprintf("path %q, job %q: both are required", e.Path, e.Job)})
		case name != entryName(strings.TrimRight(e.Path, "/")):
			rejected = append(rejected, Rejected{File: f, Reason: fmt.Sprintf("names savepoint %s, whose entry would be %s", e.Path, entryName(e.Path))})
		default:
			byPath[e.Path] = e // a file is newer than the index
		}
	}
	out := make([]Entry, 0, len(byPath))
	for _, e := range byPath {
		out = append(out, e)
	}
	sortEntries(out)
	return out, rejected, nil
}

// jsonFiles lists the .json files of dir; a missing dir has none.
func jsonFiles(ctx context.Context, fs storage.FileSystem, dir string) ([]string, error) {
	var files []string
	err := fs.List(ctx, dir, 0, func(b []storage.FileInfo) error {
		for _, fi := range b {
			if !fi.IsDir && strings.HasSuffix(fi.Name, ".json") && fi.Name != IndexName {
				files = append(files, fi.Path)
			}
		}
		return nil
	})
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	return files, err
}
