package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/colinmarc/hdfs/v2"

	"github.com/flinkmaint/flinkmaint/internal/flink"
)

// debris is what months of operation leave in a tenant's tree, made by
// real Flink jobs where Flink makes it and aged to look its age:
//
//   - a retired job whose newest checkpoint is older than its last
//     savepoint: the whole job dir is garbage;
//   - a retired job with no savepoint: its newest checkpoint is the only
//     way back and must be kept, its older ones are garbage;
//   - orphaned shared/ files beside a live job's checkpoints (uploads of
//     checkpoints that never completed);
//   - old savepoints of the live jobs, beyond the newest two;
//   - the HA dir of a cluster deleted long ago.
type debris struct {
	hc   *hdfs.Client
	fc   *flink.Client
	uri  string // hdfs://host:port
	root string // the tenant's root, a plain path
	jar  string
	main string
	now  time.Time
	log  func(format string, args ...interface{})
}

// debrisReport says where the debris is, for the demo's output and for
// the test that proves the planner sees each kind.
type debrisReport struct {
	RetiredWithSavepoint string   // job dir, garbage as a whole
	RetiredSavepoint     string   // its last savepoint, kept
	RetiredNoSavepoint   string   // job dir whose newest checkpoint is kept
	KeptCheckpoint       string   // that newest checkpoint
	OrphanDir            string   // shared/ dir of a live job
	Orphans              []string // the orphaned files in it
	// OldSavepoints are the live jobs' earlier savepoints by job name,
	// oldest first, aged as if taken before flinkmaint ran: only their
	// job's checkpoint history names them, and only while they are among
	// its latest entries; the demo adopts them.
	OldSavepoints    map[string][]string
	DeletedClusterHA string // HA dir of a cluster that no longer exists
}

// Ages of the debris.
const (
	ageRetiredNoSavepoint = 150 * 24 * time.Hour
	ageRetiredCheckpoints = 121 * 24 * time.Hour
	ageRetiredSavepoint   = 120 * 24 * time.Hour
	ageOrphans            = 45 * 24 * time.Hour
	ageDeletedClusterHA   = 200 * 24 * time.Hour
)

// oldSavepointAges are the ages of the live jobs' earlier savepoints.
var oldSavepointAges = []time.Duration{90 * 24 * time.Hour, 60 * 24 * time.Hour, 30 * 24 * time.Hour}

// liveJob is a running job that checkpoints under the tenant's root.
type liveJob struct{ name, id string }

// seed makes every kind of debris; orphans is how many orphaned shared
// files the first live job gets.
func (d *debris) seed(ctx context.Context, liveJobs []liveJob, orphans int) (debrisReport, error) {
	var rep debrisReport
	if len(liveJobs) == 0 {
		return rep, errors.New("debris needs at least one live job")
	}
	for _, dir := range []string{"checkpoints", "savepoints", "ha"} {
		if err := d.hc.MkdirAll(path.Join(d.root, dir), 0o755); err != nil {
			return rep, fmt.Errorf("create %s: %w", path.Join(d.root, dir), err)
		}
	}
	if err := d.retiredJobs(ctx, &rep); err != nil {
		return rep, err
	}
	if err := d.oldSavepoints(ctx, liveJobs, &rep); err != nil {
		return rep, err
	}
	if err := d.orphans(liveJobs[0].id, orphans, &rep); err != nil {
		return rep, err
	}
	if err := d.deletedClusterHA(&rep); err != nil {
		return rep, err
	}
	return rep, nil
}

// retiredJobs runs two jobs until they have three retained checkpoints,
// takes a savepoint of one, and cancels both: Flink keeps their
// checkpoints (RETAIN_ON_CANCELLATION), as it does for every job a team
// retires without cleaning up.
func (d *debris) retiredJobs(ctx context.Context, rep *debrisReport) error {
	jarID, err := d.fc.UploadJar(ctx, d.jar)
	if err != nil {
		return err
	}
	defer func() { _ = d.fc.DeleteJar(context.Background(), jarID) }()
	ids := map[string]string{}
	for _, name := range []string{"demo-retired-ledger", "demo-retired-fraud-v1"} {
		res, err := d.fc.RunJar(ctx, jarID, flink.RunJarRequest{EntryClass: d.main, ProgramArgs: []string{
			"--job-name", name, "--checkpoint-dir", d.uri + path.Join(d.root, "checkpoints"), "--keys", "3000", "--value-bytes", "128", "--rate", "400"}})
		if err != nil {
			return fmt.Errorf("submit %s: %w", name, err)
		}
		ids[name] = res.JobID
	}
	for name, id := range ids {
		if err := awaitCheckpoints(ctx, d.fc, id, 3); err != nil {
			return fmt.Errorf("job %s: %w", name, err)
		}
	}
	ledger, fraud := ids["demo-retired-ledger"], ids["demo-retired-fraud-v1"]
	sp, err := d.savepoint(ctx, ledger)
	if err != nil {
		return fmt.Errorf("savepoint of demo-retired-ledger: %w", err)
	}
	for name, id := range ids {
		if err := d.fc.CancelJob(ctx, id); err != nil {
			return fmt.Errorf("cancel %s: %w", name, err)
		}
		if err := awaitState(ctx, d.fc, id, flink.JobCanceled); err != nil {
			return fmt.Errorf("cancel %s: %w", name, err)
		}
	}
	rep.RetiredWithSavepoint = path.Join(d.root, "checkpoints", ledger)
	rep.RetiredSavepoint = sp
	rep.RetiredNoSavepoint = path.Join(d.root, "checkpoints", fraud)
	if err := d.age(rep.RetiredWithSavepoint, ageRetiredCheckpoints); err != nil {
		return err
	}
	if err := d.age(sp, ageRetiredSavepoint); err != nil {
		return err
	}
	if err := d.age(rep.RetiredNoSavepoint, ageRetiredNoSavepoint); err != nil {
		return err
	}
	chks, err := d.hc.ReadDir(rep.RetiredNoSavepoint)
	if err != nil {
		return err
	}
	// The newest completed checkpoint: a cancel can leave the dir of one
	// in flight, without _metadata, which is no way back.
	var newest int64 = -1
	for _, c := range chks {
		var n int64
		if _, err := fmt.Sscanf(c.Name(), "chk-%d", &n); err != nil || n <= newest {
			continue
		}
		dir := path.Join(rep.RetiredNoSavepoint, c.Name())
		if _, err := d.hc.Stat(path.Join(dir, "_metadata")); err != nil {
			continue
		}
		newest, rep.KeptCheckpoint = n, dir
	}
	if rep.KeptCheckpoint == "" {
		return fmt.Errorf("retired job %s left no completed checkpoint in %s", fraud, rep.RetiredNoSavepoint)
	}
	d.log("retired jobs: %s (%s days ago, a newer savepoint exists), %s (%s days ago, no savepoint: its newest checkpoint %s must stay)",
		ledger, days(ageRetiredCheckpoints), fraud, days(ageRetiredNoSavepoint), path.Base(rep.KeptCheckpoint))
	return nil
}

// oldSavepoints takes three savepoints of each live job and ages them.
func (d *debris) oldSavepoints(ctx context.Context, liveJobs []liveJob, rep *debrisReport) error {
	rep.OldSavepoints = map[string][]string{}
	for _, j := range liveJobs {
		for _, age := range oldSavepointAges {
			sp, err := d.savepoint(ctx, j.id)
			if err != nil {
				return fmt.Errorf("savepoint of live job %s: %w", j.name, err)
			}
			if err := d.age(sp, age); err != nil {
				return err
			}
			rep.OldSavepoints[j.name] = append(rep.OldSavepoints[j.name], sp)
		}
	}
	d.log("%d old savepoints of each of %d live jobs, %s days old", len(oldSavepointAges), len(liveJobs), days(oldSavepointAges...))
	return nil
}

// orphans writes files that look like RocksDB uploads of checkpoints that
// never completed into a live job's shared/ dir.
func (d *debris) orphans(jobID string, n int, rep *debrisReport) error {
	rep.OrphanDir = path.Join(d.root, "checkpoints", jobID, "shared")
	if err := d.hc.MkdirAll(rep.OrphanDir, 0o755); err != nil {
		return err
	}
	when := d.now.Add(-ageOrphans)
	for i := 0; i < n; i++ {
		p := path.Join(rep.OrphanDir, randomUUID())
		if err := d.write(p, 512+i%7*256); err != nil {
			return err
		}
		if err := d.hc.Chtimes(p, when, when); err != nil {
			return err
		}
		rep.Orphans = append(rep.Orphans, p)
	}
	d.log("%d orphaned shared files in %s, %s days old", n, rep.OrphanDir, days(ageOrphans))
	return nil
}

// deletedClusterHA writes the HA dir a session cluster leaves behind when
// its deployment is deleted without cleaning up: blobs of its jobs and
// the pointers to its job graphs and checkpoints.
func (d *debris) deletedClusterHA(rep *debrisReport) error {
	rep.DeletedClusterHA = path.Join(d.root, "ha", "cluster-payments-2025")
	var files []string
	for i := 0; i < 2; i++ {
		job := randomHex(16)
		files = append(files,
			path.Join("blob", "job_"+job, "blob_p-"+randomHex(20)+"-"+randomHex(16)),
			"submittedJobGraph"+randomHex(6),
			"completedCheckpoint"+randomHex(6))
	}
	for i, f := range files {
		if err := d.write(path.Join(rep.DeletedClusterHA, f), 2048+i*1024); err != nil {
			return err
		}
	}
	d.log("HA dir of a cluster deleted %s days ago: %s", days(ageDeletedClusterHA), rep.DeletedClusterHA)
	return d.age(rep.DeletedClusterHA, ageDeletedClusterHA)
}

func (d *debris) savepoint(ctx context.Context, jobID string) (string, error) {
	tr, err := d.fc.TriggerSavepoint(ctx, jobID, flink.SavepointRequest{TargetDirectory: d.uri + path.Join(d.root, "savepoints")})
	if err != nil {
		return "", err
	}
	loc, err := d.fc.AwaitSavepoint(ctx, jobID, tr.TriggerID)
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(strings.TrimRight(loc, "/"), d.uri), nil
}

func (d *debris) write(p string, size int) error {
	if err := d.hc.MkdirAll(path.Dir(p), 0o755); err != nil {
		return err
	}
	w, err := d.hc.Create(p)
	if err != nil {
		return err
	}
	buf := make([]byte, size)
	_, _ = rand.Read(buf)
	if _, err := w.Write(buf); err != nil {
		_ = w.Close()
		return err
	}
	return closeReplicated(d.hc, w, p, int64(size))
}

// closeReplicated closes a file; a close that reports replication still
// in progress is fine once the NameNode has the file at its full size.
func closeReplicated(hc *hdfs.Client, w *hdfs.FileWriter, p string, size int64) error {
	err := w.Close()
	if err == nil {
		return nil
	}
	if fi, serr := hc.Stat(p); serr == nil && fi.Size() == size {
		return nil
	}
	return fmt.Errorf("write %s: %w", p, err)
}

// age sets the modification time of dir and everything under it, deepest
// first (touching a child touches its parent).
func (d *debris) age(dir string, age time.Duration) error {
	when := d.now.Add(-age)
	var all []string
	err := d.hc.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			all = append(all, p)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("age %s: %w", dir, err)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(all)))
	for _, p := range all {
		if err := d.hc.Chtimes(p, when, when); err != nil {
			return fmt.Errorf("age %s: %w", p, err)
		}
	}
	return nil
}

func awaitCheckpoints(ctx context.Context, c *flink.Client, jobID string, n int64) error {
	for {
		stats, err := c.Checkpoints(ctx, jobID)
		if err == nil && stats.Counts.Completed >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fewer than %d completed checkpoints: %w", n, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

func awaitState(ctx context.Context, c *flink.Client, jobID string, want flink.JobState) error {
	for {
		st, err := c.JobState(ctx, jobID)
		if err == nil && st == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not %s (last %s, %v): %w", want, st, err, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// days renders ages in days: "90, 60, 30".
func days(ages ...time.Duration) string {
	parts := make([]string, len(ages))
	for i, a := range ages {
		parts[i] = fmt.Sprint(int(a.Hours() / 24))
	}
	return strings.Join(parts, ", ")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func randomUUID() string {
	h := randomHex(16)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
