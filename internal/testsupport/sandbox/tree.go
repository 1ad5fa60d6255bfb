package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/colinmarc/hdfs/v2"
)

// RetiredJobTree describes a synthetic tree of retired jobs' checkpoint
// dirs on the sandbox HDFS, the shape governance reclaims most of: Jobs
// job dirs <Dir>/<32 hex>/chk-1, each with FilesPerJob empty state files
// and no _metadata (an abandoned checkpoint: the whole job dir is one
// item).
type RetiredJobTree struct {
	// Dir is a plain HDFS path, e.g. /flinkmaint-test/x/checkpoints.
	Dir         string
	Jobs        int
	FilesPerJob int
	// Clients is how many HDFS connections create it at once (default 4).
	Clients int
	// ModTime, if set, is given to every file and dir of each job, so the
	// tree is as old as a policy needs it (a live job elsewhere on the
	// cluster forbids a grace shorter than its checkpoint timeout).
	ModTime time.Time
}

// JobDir is the plain path of job i (0-based) of the tree.
func (t RetiredJobTree) JobDir(i int) string { return fmt.Sprintf("%s/%032x", t.Dir, i+1) }

// Files is how many files the tree holds.
func (t RetiredJobTree) Files() int { return t.Jobs * t.FilesPerJob }

// Write creates the tree as the sandbox's HDFS user. progress, if set, is
// called with the number of jobs written so far, now and then.
func (t RetiredJobTree) Write(ctx context.Context, p *Peers, progress func(done int)) error {
	if t.Jobs < 1 || t.FilesPerJob < 1 || t.Dir == "" {
		return fmt.Errorf("retired job tree: dir %q, %d jobs, %d files per job: want a dir and at least 1 of each", t.Dir, t.Jobs, t.FilesPerJob)
	}
	err := forEachJob(ctx, p, t.Jobs, t.Clients, progress, func(hc *hdfs.Client, i int) error {
		chk := t.JobDir(i) + "/chk-1"
		if err := hc.MkdirAll(chk, 0o755); err != nil {
			return err
		}
		paths := make([]string, 0, t.FilesPerJob+2)
		for f := range t.FilesPerJob {
			path := fmt.Sprintf("%s/state-%04d", chk, f)
			if err := hc.CreateEmptyFile(path); err != nil {
				return err
			}
			paths = append(paths, path)
		}
		if t.ModTime.IsZero() {
			return nil
		}
		return chtimes(hc, append(paths, chk, t.JobDir(i)), t.ModTime)
	})
	if err != nil {
		return fmt.Errorf("retired job tree under %s: %w", t.Dir, err)
	}
	return nil
}

// FleetTree describes the checkpoint dirs of a fleet of incremental
// (RocksDB) jobs that are absent from the inventory but recent, the shape
// whose planning reads every retained _metadata: job i (0-based) is
// <Dir>/<i+1 as 32 hex digits> with SharedPerJob files shared/sst-NNNNN,
// and Checkpoints dirs chk-1.. each holding one private file, meta, and a
// _metadata. The shared files none of them references are what a plan
// deletes. The names are the ones the fleet _metadata of the checkpoint
// package's TestWriteFleetMetadata refer to.
type FleetTree struct {
	// Dir is a plain HDFS path, e.g. /flinkmaint-bench/x/checkpoints.
	Dir          string
	Jobs         int
	Checkpoints  int
	SharedPerJob int
	// Metadata returns the _metadata of checkpoint c (1-based) of job i.
	Metadata func(i, c int) ([]byte, error)
	// SharedModTime is given to every shared file, so they are older than
	// the policy's grace; the rest keeps the time it was written at, so
	// the jobs are recent.
	SharedModTime time.Time
	// Clients is how many HDFS connections create it at once (default 4).
	Clients int
}

// JobDir is the plain path of job i (0-based) of the tree.
func (t FleetTree) JobDir(i int) string { return fmt.Sprintf("%s/%032x", t.Dir, i+1) }

// Files is how many files the tree holds.
func (t FleetTree) Files() int { return t.Jobs * (t.SharedPerJob + 2*t.Checkpoints) }

// Dirs is how many dirs the tree holds, Dir included.
func (t FleetTree) Dirs() int { return 1 + t.Jobs*(2+t.Checkpoints) }

// Write creates the tree as the sandbox's HDFS user; each _metadata is
// written last in its checkpoint dir, as Flink does. progress, if set, is
// called with the number of jobs written so far, now and then.
func (t FleetTree) Write(ctx context.Context, p *Peers, progress func(done int)) error {
	if t.Jobs < 1 || t.Checkpoints < 1 || t.SharedPerJob < 1 || t.Dir == "" || t.Metadata == nil || t.SharedModTime.IsZero() {
		return fmt.Errorf("fleet tree: dir %q, %d jobs, %d checkpoints and %d shared files per job: want a dir, at least 1 of each, a metadata source and a time for the shared files",
			t.Dir, t.Jobs, t.Checkpoints, t.SharedPerJob)
	}
	err := forEachJob(ctx, p, t.Jobs, t.Clients, progress, func(hc *hdfs.Client, i int) error {
		shared := t.JobDir(i) + "/shared"
		if err := hc.MkdirAll(shared, 0o755); err != nil {
			return err
		}
		paths := make([]string, 0, t.SharedPerJob)
		for k := range t.SharedPerJob {
			path := fmt.Sprintf("%s/sst-%05d", shared, k)
			if err := hc.CreateEmptyFile(path); err != nil {
				return err
			}
			paths = append(paths, path)
		}
		if err := chtimes(hc, paths, t.SharedModTime); err != nil {
			return err
		}
		for c := 1; c <= t.Checkpoints; c++ {
			chk := fmt.Sprintf("%s/chk-%d", t.JobDir(i), c)
			data, err := t.Metadata(i, c)
			if err != nil {
				return err
			}
			if err := hc.Mkdir(chk, 0o755); err != nil {
				return err
			}
			if err := hc.CreateEmptyFile(chk + "/meta"); err != nil {
				return err
			}
			if err := WriteFile(hc, chk+"/_metadata", data); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("fleet tree under %s: %w", t.Dir, err)
	}
	return nil
}

// WriteFile writes a new file. The NameNode answers "replication in
// progress" to the close until the DataNode has reported the block; the
// close is asked again, as the Java client does.
func WriteFile(hc *hdfs.Client, path string, data []byte) error {
	w, err := hc.Create(path)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		_ = w.Close()
		return err
	}
	err = w.Close()
	for wait := 50 * time.Millisecond; errors.Is(err, hdfs.ErrReplicating) && wait < 10*time.Second; wait *= 2 {
		time.Sleep(wait)
		err = w.Close()
	}
	return err
}

func chtimes(hc *hdfs.Client, paths []string, at time.Time) error {
	for _, p := range paths {
		if err := hc.Chtimes(p, at, at); err != nil {
			return err
		}
	}
	return nil
}

// forEachJob runs write for jobs 0..jobs-1 over clients HDFS connections
// (default 4) and stops at the first error.
func forEachJob(ctx context.Context, p *Peers, jobs, clients int, progress func(done int), write func(hc *hdfs.Client, i int) error) error {
	if clients <= 0 {
		clients = 4
	}
	var next, done atomic.Int64
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hc, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{p.HDFS.NameNode}, User: p.HDFS.User})
			if err != nil {
				errs <- err
				return
			}
			defer hc.Close()
			for ctx.Err() == nil && len(errs) == 0 {
				i := int(next.Add(1) - 1)
				if i >= jobs {
					return
				}
				if err := write(hc, i); err != nil {
					errs <- err
					return
				}
				if n := done.Add(1); progress != nil && n%100 == 0 {
					progress(int(n))
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}
