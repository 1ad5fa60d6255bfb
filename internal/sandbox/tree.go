package sandbox

import (
	"context"
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
	clients := t.Clients
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
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= t.Jobs {
					return
				}
				chk := t.JobDir(i) + "/chk-1"
				if err := hc.MkdirAll(chk, 0o755); err != nil {
					errs <- err
					return
				}
				for f := range t.FilesPerJob {
					if err := hc.CreateEmptyFile(fmt.Sprintf("%s/state-%04d", chk, f)); err != nil {
						errs <- err
						return
					}
				}
				if !t.ModTime.IsZero() {
					paths := make([]string, 0, t.FilesPerJob+2)
					for f := range t.FilesPerJob {
						paths = append(paths, fmt.Sprintf("%s/state-%04d", chk, f))
					}
					for _, p := range append(paths, chk, t.JobDir(i)) {
						if err := hc.Chtimes(p, t.ModTime, t.ModTime); err != nil {
							errs <- err
							return
						}
					}
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
		return fmt.Errorf("retired job tree under %s: %w", t.Dir, err)
	}
	return ctx.Err()
}
