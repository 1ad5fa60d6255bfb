package layout

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// RootKind says what a configured root holds.
type RootKind int

// Root kinds.
const (
	CheckpointRoot RootKind = iota + 1 // execution.checkpointing.dir
	SavepointRoot                      // execution.checkpointing.savepoint-dir
	HARoot                             // high-availability.storageDir
)

func (k RootKind) String() string {
	switch k {
	case CheckpointRoot:
		return "checkpoint-root"
	case SavepointRoot:
		return "savepoint-root"
	case HARoot:
		return "ha-root"
	}
	return fmt.Sprintf("root-kind(%d)", int(k))
}

// Root is one configured storage directory.
type Root struct {
	Path string
	Kind RootKind
}

// Usage counts a subtree the way HDFS quotas do: Files and Dirs include
// the subtree's own directory, so usages of siblings add up to their
// parent's. Newest is the newest modification time of anything in it.
type Usage struct {
	Files  int64
	Dirs   int64
	Bytes  int64
	Newest time.Time
}

// Namespace is what the subtree costs against a namespace quota.
func (u Usage) Namespace() int64 { return u.Files + u.Dirs }

// Add counts one entry.
func (u *Usage) Add(fi storage.FileInfo) {
	if fi.IsDir {
		u.Dirs++
	} else {
		u.Files++
		u.Bytes += fi.Size
	}
	if fi.ModTime.After(u.Newest) {
		u.Newest = fi.ModTime
	}
}

// Merge adds another usage.
func (u *Usage) Merge(o Usage) {
	u.Files += o.Files
	u.Dirs += o.Dirs
	u.Bytes += o.Bytes
	if o.Newest.After(u.Newest) {
		u.Newest = o.Newest
	}
}

// Checkpoint is one chk-N directory. Completed means its _metadata exists.
type Checkpoint struct {
	ID        int64
	Path      string
	Completed bool
	// Written is its _metadata's modification time: the checkpoint's own
	// time, which files written into its dir later never move. Zero when
	// not completed.
	Written time.Time `json:",omitzero"`
	Usage   Usage
}

// JobCheckpoints is one <root>/<jobId>/ directory.
type JobCheckpoints struct {
	Root        string
	Path        string
	JobID       string
	Checkpoints []Checkpoint // by ID
	HasShared   bool
	Shared      Usage
	HasTaskOwn  bool
	TaskOwned   Usage
	Total       Usage // the whole job dir, including unknown entries
}

// CompletedCheckpoints returns the IDs of checkpoints with _metadata.
func (j JobCheckpoints) CompletedCheckpoints() []int64 {
	var ids []int64
	for _, c := range j.Checkpoints {
		if c.Completed {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// Savepoint is one savepoint-<6>-<12> directory.
type Savepoint struct {
	Root        string
	Path        string
	JobIDPrefix string
	Completed   bool
	// Written is its _metadata's modification time: the savepoint's own
	// time. A pin marker or any other file written into its dir later
	// moves Usage.Newest, never this. Zero when not completed.
	Written time.Time `json:",omitzero"`
	Usage   Usage
}

// HACluster is one <ha-root>/<cluster-id>/ directory.
type HACluster struct {
	Root                 string
	Path                 string
	ClusterID            string
	Blob                 Usage
	BlobJobs             []string // job ids with a blob/job_<id>/ dir
	CompletedCheckpoints int
	SubmittedJobs        int
	Total                Usage
}

// JobResult is one entry of the default job result store.
type JobResult struct {
	Path      string
	ClusterID string
	JobID     string
	Dirty     bool
	ModTime   time.Time
}

// Unknown is an entry the layout does not explain, with its usage.
type Unknown struct {
	Path   string
	IsDir  bool
	Reason string
	Usage  Usage
}

// Report is what a scan found, sorted by path.
type Report struct {
	Jobs       []JobCheckpoints
	Savepoints []Savepoint
	HAClusters []HACluster
	JobResults []JobResult
	Unknown    []Unknown
}

// Scanner lists roots through the storage port and classifies them.
type Scanner struct {
	FS storage.FileSystem
	// BatchSize is passed to List; <= 0 uses the file system's default.
	BatchSize int
	// Part, if set, restricts the scan to the entries of each root whose
	// name it accepts: scans with parts that together accept every name
	// once merge (MergeReports) into the report of one whole scan.
	Part func(name string) bool
}

// Scan classifies everything under the roots. A missing root is an error
// (storage.ErrNotFound): an empty report would read as "nothing stored".
func (s *Scanner) Scan(ctx context.Context, roots []Root) (Report, error) {
	var r Report
	for _, root := range roots {
		var err error
		switch root.Kind {
		case CheckpointRoot:
			err = s.scanCheckpointRoot(ctx, root.Path, &r)
		case SavepointRoot:
			err = s.scanSavepointRoot(ctx, root.Path, &r)
		case HARoot:
			err = s.scanHARoot(ctx, root.Path, &r)
		default:
			err = fmt.Errorf("layout: root %s has kind %v; want CheckpointRoot, SavepointRoot or HARoot", root.Path, root.Kind)
		}
		if err != nil {
			return Report{}, fmt.Errorf("layout: scan %s %s: %w", root.Kind, root.Path, err)
		}
	}
	r.sort()
	return r, nil
}

// list calls fn for every entry of dir, copying each batch.
func (s *Scanner) list(ctx context.Context, dir string, fn func(storage.FileInfo) error) error {
	return s.FS.List(ctx, dir, s.BatchSize, func(batch []storage.FileInfo) error {
		entries := append([]storage.FileInfo(nil), batch...)
		for _, e := range entries {
			if err := fn(e); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *Scanner) usage(ctx context.Context, fi storage.FileInfo) (Usage, error) {
	var u Usage
	err := storage.WalkFrom(ctx, s.FS, fi, func(e storage.FileInfo) error {
		u.Add(e)
		return nil
	})
	return u, err
}

func (s *Scanner) unknown(ctx context.Context, r *Report, fi storage.FileInfo, c Class) (Usage, error) {
	u, err := s.usage(ctx, fi)
	if err != nil {
		return Usage{}, err
	}
	r.Unknown = append(r.Unknown, Unknown{Path: fi.Path, IsDir: fi.IsDir, Reason: c.Reason, Usage: u})
	return u, nil
}

func (s *Scanner) scanCheckpointRoot(ctx context.Context, root string, r *Report) error {
	return s.list(ctx, root, func(fi storage.FileInfo) error {
		if s.Part != nil && !s.Part(fi.Name) {
			return nil
		}
		c := ClassifyCheckpointRootEntry(fi.Name, fi.IsDir)
		if c.Kind != KindCheckpointJobDir {
			_, err := s.unknown(ctx, r, fi, c)
			return err
		}
		job, err := s.scanJobDir(ctx, r, fi, c.JobID)
		if err != nil {
			return err
		}
		job.Root = root
		r.Jobs = append(r.Jobs, job)
		return nil
	})
}

func (s *Scanner) scanJobDir(ctx context.Context, r *Report, dir storage.FileInfo, jobID string) (JobCheckpoints, error) {
	job := JobCheckpoints{Path: dir.Path, JobID: jobID}
	job.Total.Add(dir)
	err := s.list(ctx, dir.Path, func(fi storage.FileInfo) error {
		c := ClassifyJobDirEntry(fi.Name, fi.IsDir)
		switch c.Kind {
		case KindCheckpoint:
			chk := Checkpoint{ID: c.CheckpointID, Path: fi.Path}
			metadata := strings.TrimSuffix(fi.Path, "/") + "/" + MetadataFileName
			err := storage.WalkFrom(ctx, s.FS, fi, func(e storage.FileInfo) error {
				chk.Usage.Add(e)
				if e.Path == metadata && !e.IsDir {
					chk.Completed, chk.Written = true, e.ModTime
				}
				return nil
			})
			if err != nil {
				return err
			}
			job.Checkpoints = append(job.Checkpoints, chk)
			job.Total.Merge(chk.Usage)
		case KindSharedDir, KindTaskOwnedDir:
			u, err := s.usage(ctx, fi)
			if err != nil {
				return err
			}
			if c.Kind == KindSharedDir {
				job.HasShared, job.Shared = true, u
			} else {
				job.HasTaskOwn, job.TaskOwned = true, u
			}
			job.Total.Merge(u)
		default:
			u, err := s.unknown(ctx, r, fi, c)
			if err != nil {
				return err
			}
			job.Total.Merge(u)
		}
		return nil
	})
	sort.Slice(job.Checkpoints, func(i, j int) bool { return job.Checkpoints[i].ID < job.Checkpoints[j].ID })
	return job, err
}

func (s *Scanner) scanSavepointRoot(ctx context.Context, root string, r *Report) error {
	return s.list(ctx, root, func(fi storage.FileInfo) error {
		if s.Part != nil && !s.Part(fi.Name) {
			return nil
		}
		c := ClassifySavepointRootEntry(fi.Name, fi.IsDir)
		if c.Kind != KindSavepoint {
			_, err := s.unknown(ctx, r, fi, c)
			return err
		}
		sp := Savepoint{Root: root, Path: fi.Path, JobIDPrefix: c.JobIDPrefix}
		metadata := strings.TrimSuffix(fi.Path, "/") + "/" + MetadataFileName
		err := storage.WalkFrom(ctx, s.FS, fi, func(e storage.FileInfo) error {
			sp.Usage.Add(e)
			if e.Path == metadata && !e.IsDir {
				sp.Completed, sp.Written = true, e.ModTime
			}
			return nil
		})
		if err != nil {
			return err
		}
		r.Savepoints = append(r.Savepoints, sp)
		return nil
	})
}

func (s *Scanner) scanHARoot(ctx context.Context, root string, r *Report) error {
	return s.list(ctx, root, func(fi storage.FileInfo) error {
		if s.Part != nil && !s.Part(fi.Name) {
			return nil
		}
		c := ClassifyHARootEntry(fi.Name, fi.IsDir)
		switch c.Kind {
		case KindHACluster:
			cl, err := s.scanHACluster(ctx, r, fi)
			if err != nil {
				return err
			}
			cl.Root = root
			r.HAClusters = append(r.HAClusters, cl)
			return nil
		case KindJobResultStore:
			return s.scanJobResultStore(ctx, r, fi)
		default:
			_, err := s.unknown(ctx, r, fi, c)
			return err
		}
	})
}

func (s *Scanner) scanHACluster(ctx context.Context, r *Report, dir storage.FileInfo) (HACluster, error) {
	cl := HACluster{Path: dir.Path, ClusterID: dir.Name}
	cl.Total.Add(dir)
	err := s.list(ctx, dir.Path, func(fi storage.FileInfo) error {
		c := ClassifyHAClusterEntry(fi.Name, fi.IsDir)
		switch c.Kind {
		case KindHACompletedCheckpoint:
			cl.CompletedCheckpoints++
			cl.Total.Add(fi)
		case KindHASubmittedJob:
			cl.SubmittedJobs++
			cl.Total.Add(fi)
		case KindHABlobDir:
			cl.Blob.Add(fi)
			err := s.list(ctx, fi.Path, func(b storage.FileInfo) error {
				bc := ClassifyBlobEntry(b.Name, b.IsDir)
				var u Usage
				var err error
				if bc.Kind == KindHABlobJobDir {
					u, err = s.usage(ctx, b)
					if bc.JobID != "" {
						cl.BlobJobs = append(cl.BlobJobs, bc.JobID)
					}
				} else {
					u, err = s.unknown(ctx, r, b, bc)
				}
				cl.Blob.Merge(u)
				return err
			})
			if err != nil {
				return err
			}
			cl.Total.Merge(cl.Blob)
		default:
			u, err := s.unknown(ctx, r, fi, c)
			if err != nil {
				return err
			}
			cl.Total.Merge(u)
		}
		return nil
	})
	sort.Strings(cl.BlobJobs)
	return cl, err
}

func (s *Scanner) scanJobResultStore(ctx context.Context, r *Report, dir storage.FileInfo) error {
	return s.list(ctx, dir.Path, func(cluster storage.FileInfo) error {
		if !cluster.IsDir {
			_, err := s.unknown(ctx, r, cluster, unknown("a file in job-result-store/; want <cluster-id>/ directories"))
			return err
		}
		return s.list(ctx, cluster.Path, func(fi storage.FileInfo) error {
			c := ClassifyJobResultEntry(fi.Name, fi.IsDir)
			if c.Kind != KindJobResult {
				_, err := s.unknown(ctx, r, fi, c)
				return err
			}
			r.JobResults = append(r.JobResults, JobResult{
				Path: fi.Path, ClusterID: path.Base(cluster.Path), JobID: c.JobID,
				Dirty: c.Variant == "dirty", ModTime: fi.ModTime,
			})
			return nil
		})
	})
}

// MergeReports merges the reports of scans of disjoint parts (see
// Scanner.Part) into the report of the whole.
func MergeReports(parts ...Report) Report {
	var r Report
	for _, p := range parts {
		r.Jobs = append(r.Jobs, p.Jobs...)
		r.Savepoints = append(r.Savepoints, p.Savepoints...)
		r.HAClusters = append(r.HAClusters, p.HAClusters...)
		r.JobResults = append(r.JobResults, p.JobResults...)
		r.Unknown = append(r.Unknown, p.Unknown...)
	}
	r.sort()
	return r
}

func (r *Report) sort() {
	sort.Slice(r.Jobs, func(i, j int) bool { return r.Jobs[i].Path < r.Jobs[j].Path })
	sort.Slice(r.Savepoints, func(i, j int) bool { return r.Savepoints[i].Path < r.Savepoints[j].Path })
	sort.Slice(r.HAClusters, func(i, j int) bool { return r.HAClusters[i].Path < r.HAClusters[j].Path })
	sort.Slice(r.JobResults, func(i, j int) bool { return r.JobResults[i].Path < r.JobResults[j].Path })
	sort.Slice(r.Unknown, func(i, j int) bool { return r.Unknown[i].Path < r.Unknown[j].Path })
}
