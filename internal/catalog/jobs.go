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

// JobsFile records which full job id ran which logical job, one file per
// tenant: an application cluster's job history ends with the cluster, and
// its job id (JobID(hash(cluster-id), 0) with HA) names only its
// checkpoint dir after that.
const JobsFile = ".flinkmaint/jobs.json"

const jobsFormat = "flinkmaint-jobs/1"

// JobRecord is one job id seen running a logical job.
type JobRecord struct {
	JobID  string     `json:"jobId"`
	Job    LogicalJob `json:"job"`
	SeenAt time.Time  `json:"seenAt"`
}

type jobsDoc struct {
	Format string      `json:"format"`
	Jobs   []JobRecord `json:"jobs"`
}

// JobStore keeps the job records of one tenant under Root on FS.
type JobStore struct {
	FS   storage.FileSystem
	Root string
}

func (s JobStore) file() string { return strings.TrimRight(s.Root, "/") + "/" + JobsFile }

// List reads the records; none is empty, one that does not decode is
// ErrInvalid.
func (s JobStore) List(ctx context.Context) ([]JobRecord, error) {
	data, err := s.FS.ReadFile(ctx, s.file(), maxIndexBytes)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc jobsDoc
	if err := json.Unmarshal(data, &doc); err != nil || doc.Format != jobsFormat {
		return nil, fmt.Errorf("%w: %s: format %q, %v; want %s", ErrInvalid, s.file(), doc.Format, err, jobsFormat)
	}
	return doc.Jobs, nil
}

// Record adds the jobs seen and drops the records of job ids that keep
// no longer wants (their checkpoint dirs are gone), rewriting the file
// only when that changes it. A job id seen as another logical job than
// recorded is recorded twice: the reader takes two answers for none.
func (s JobStore) Record(ctx context.Context, seen []JobRecord, keep func(jobID string) bool) (bool, error) {
	old, err := s.List(ctx)
	if err != nil && !errors.Is(err, ErrInvalid) {
		return false, err
	}
	type key struct {
		id  string
		job LogicalJob
	}
	byKey := map[key]JobRecord{}
	for _, r := range old {
		if keep(r.JobID) {
			byKey[key{r.JobID, r.Job}] = r
		}
	}
	changed := len(byKey) != len(old) || err != nil // a file that did not decode is rewritten
	for _, r := range seen {
		if r.JobID == "" || !r.Job.Valid() {
			continue
		}
		if _, ok := byKey[key{r.JobID, r.Job}]; !ok {
			byKey[key{r.JobID, r.Job}] = r
			changed = true
		}
	}
	if !changed {
		return false, nil
	}
	doc := jobsDoc{Format: jobsFormat}
	for _, r := range byKey {
		doc.Jobs = append(doc.Jobs, r)
	}
	sort.Slice(doc.Jobs, func(i, j int) bool {
		if doc.Jobs[i].JobID != doc.Jobs[j].JobID {
			return doc.Jobs[i].JobID < doc.Jobs[j].JobID
		}
		return doc.Jobs[i].Job.String() < doc.Jobs[j].Job.String()
	})
	data, err := json.Marshal(doc)
	if err != nil {
		return false, err
	}
	dir, name := s.file()[:strings.LastIndex(s.file(), "/")], JobsFile[strings.LastIndex(JobsFile, "/")+1:]
	return true, replaceFile(ctx, s.FS, dir, name, data)
}
