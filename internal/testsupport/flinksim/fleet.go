package flinksim

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"sync"
	"time"
)

// Options configure a Fleet. The zero value is usable.
type Options struct {
	// SavepointDelay is how long a savepoint or stop-with-savepoint stays
	// IN_PROGRESS; default 50ms.
	SavepointDelay time.Duration
	// CheckpointDelay is how long after a (re)start a job reports its
	// first completed checkpoint; default 50ms.
	CheckpointDelay time.Duration
	// CheckpointInterval is the time between later checkpoints; default
	// one minute, so a large fleet does not write to disk all the time.
	CheckpointInterval time.Duration
	// FlinkVersion reported by /config and /overview; default 1.20.1.
	FlinkVersion string
	// Addr to listen on; default 127.0.0.1:0 (a free port).
	Addr string
}

// Defaults applied by Start when an option is zero.
const (
	DefaultSavepointDelay     = 50 * time.Millisecond
	DefaultCheckpointDelay    = 50 * time.Millisecond
	DefaultCheckpointInterval = time.Minute
	DefaultFlinkVersion       = "1.20.1"
)

// ClusterConfig is the Flink configuration of one session cluster that
// matters to the simulation.
type ClusterConfig struct {
	// CheckpointDir (execution.checkpointing.dir) for jobs that do not
	// set their own. Empty: the first checkpoint dir given to AddJob for
	// the cluster, and until then none (checkpoints are not written).
	CheckpointDir string
	// SavepointDir (execution.checkpointing.savepoint-dir) used when a
	// savepoint request names no target directory.
	SavepointDir string
}

// JobInfo is what a test can check about one job.
type JobInfo struct {
	ID    string
	Name  string
	State string // Flink's JobStatus, e.g. RUNNING, FINISHED, CANCELED
	// CheckpointDir is the job's checkpoint base dir as Flink qualifies it
	// (file:/...); its checkpoints go to <CheckpointDir>/<ID>/chk-N.
	CheckpointDir string
	// RestoredFrom is the snapshot the job was started from (qualified),
	// and RestoreMode the claim mode the submission asked for.
	RestoredFrom string
	RestoreMode  string
	// Submissions counts submissions of this job ID (AddJob counts as
	// one); more than one means a run request was repeated, and Flink
	// rejected the repeats as duplicates.
	Submissions int
	// StopRequests counts POST /stop requests for the job, repeats of a
	// trigger ID included; StopTriggers counts distinct trigger IDs among
	// them, and Stops the stop-with-savepoint operations that stopped it.
	StopRequests, StopTriggers, Stops int
	// Cancels counts cancel requests.
	Cancels int
	// Savepoints lists the savepoints written for the job, oldest first.
	Savepoints []string
	// LatestCheckpoint is the ID of the newest completed periodic
	// checkpoint, 0 if none.
	LatestCheckpoint int64
	Started, Ended   time.Time
	// DiskError is the last error writing the job's checkpoint files, or
	// why the checkpoint dir given to AddJob was not used.
	DiskError string
}

// Fleet is an HTTP server that simulates many Flink session clusters, each
// under its own path prefix. It is safe for concurrent use.
type Fleet struct {
	opts     Options
	srv      *http.Server
	base     string
	serveErr chan error
	close    sync.Once

	mu        sync.RWMutex
	clusters  map[string]*cluster // by ID
	bySegment map[string]*cluster // by URL path segment
}

// Start validates opts and serves the fleet until Close.
func Start(opts Options) (*Fleet, error) {
	if opts.SavepointDelay < 0 || opts.CheckpointDelay < 0 || opts.CheckpointInterval < 0 {
		return nil, errors.New("flinksim: delays and intervals must not be negative")
	}
	if opts.SavepointDelay == 0 {
		opts.SavepointDelay = DefaultSavepointDelay
	}
	if opts.CheckpointDelay == 0 {
		opts.CheckpointDelay = DefaultCheckpointDelay
	}
	if opts.CheckpointInterval == 0 {
		opts.CheckpointInterval = DefaultCheckpointInterval
	}
	if opts.FlinkVersion == "" {
		opts.FlinkVersion = DefaultFlinkVersion
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("flinksim: listen on %s: %w", opts.Addr, err)
	}
	f := &Fleet{opts: opts, base: "http://" + ln.Addr().String(), clusters: map[string]*cluster{},
		bySegment: map[string]*cluster{}, serveErr: make(chan error, 1)}
	f.srv = &http.Server{Handler: f, ReadHeaderTimeout: 30 * time.Second}
	go func() { f.serveErr <- f.srv.Serve(ln) }()
	return f, nil
}

// URL is the server's base URL; each cluster lives under URL()/<clusterID>.
func (f *Fleet) URL() string { return f.base }

// Close stops the server and closes its connections.
func (f *Fleet) Close() {
	f.close.Do(func() {
		_ = f.srv.Close()
		<-f.serveErr // http.ErrServerClosed once Close returns
	})
}

// safeSegment is a cluster ID usable as a URL path segment as it is.
var safeSegment = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// AddCluster adds a session cluster without storage configuration (see
// AddClusterWith) and returns its REST base URL. Adding a cluster again
// returns the same URL.
func (f *Fleet) AddCluster(clusterID string) string {
	u, err := f.AddClusterWith(clusterID, ClusterConfig{})
	if err != nil {
		// Only a differing configuration fails, and the cluster exists.
		return f.base + "/" + f.cluster(clusterID).segment
	}
	return u
}

// AddClusterWith adds a session cluster with the given configuration and
// returns its REST base URL, <URL>/<clusterID>; an ID that is not a plain
// path segment (letters, digits, '.', '_', '-') is replaced in the URL by a
// hash of it. Adding a cluster again with the same configuration returns
// the same URL.
func (f *Fleet) AddClusterWith(clusterID string, cfg ClusterConfig) (string, error) {
	segment := clusterID
	if !safeSegment.MatchString(clusterID) {
		segment = fmt.Sprintf("cluster-%x", sha256.Sum256([]byte(clusterID)))[:40]
	}
	c := &cluster{id: clusterID, segment: segment, cfg: cfg, jobs: map[string]*job{}, jars: map[string]*jar{},
		orphanOps: map[string]*operation{}, uploadDir: "/tmp/flink-web-" + randomUUID() + "/flink-web-upload"}
	for _, d := range []struct {
		name, dir string
		out       *location
		set       *bool
	}{{"CheckpointDir", cfg.CheckpointDir, &c.ckDir, &c.hasCkDir}, {"SavepointDir", cfg.SavepointDir, &c.spDir, &c.hasSPDir}} {
		if d.dir == "" {
			continue
		}
		loc, err := parseLocation(d.dir)
		var unsupported errUnsupportedScheme
		if err != nil && !errors.As(err, &unsupported) {
			return "", fmt.Errorf("flinksim: cluster %s: %s: %w", clusterID, d.name, err)
		}
		*d.out, *d.set = loc, true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if old, ok := f.clusters[clusterID]; ok {
		if old.cfg != cfg {
			return "", fmt.Errorf("flinksim: cluster %s exists with configuration %+v", clusterID, old.cfg)
		}
		return f.base + "/" + old.segment, nil
	}
	f.clusters[clusterID] = c
	f.bySegment[segment] = c
	return f.base + "/" + segment, nil
}

func (f *Fleet) cluster(id string) *cluster {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.clusters[id]
}

func (f *Fleet) clusterAt(segment string) *cluster {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.bySegment[segment]
}

// AddJob starts a RUNNING job on a cluster (added if unknown), as if
// submitted just now, and returns its ID. Its checkpoints go under
// checkpointDir, or the cluster's checkpoint dir when empty. The first
// checkpointDir given for a cluster without one becomes the cluster's, as
// the jobs of a session cluster share its configuration; jobs restarted
// through the REST API then use it too. A checkpointDir that is not an
// absolute path or URI leaves the job without checkpoint storage and is
// reported in JobInfo.DiskError.
func (f *Fleet) AddJob(clusterID, name, checkpointDir string) string {
	c := f.cluster(clusterID)
	if c == nil {
		f.AddCluster(clusterID)
		c = f.cluster(clusterID)
	}
	var ck location
	var hasCk bool
	var bad error
	if checkpointDir == "" {
		ck, hasCk = c.checkpointDir()
	} else {
		var unsupported errUnsupportedScheme
		if ck, bad = parseLocation(checkpointDir); bad == nil || errors.As(bad, &unsupported) {
			hasCk, bad = true, nil
			c.adoptCheckpointDir(ck)
		}
	}
	j := newJob(f, randomHex(32), name, 1, ck, hasCk, time.Now())
	if bad != nil {
		j.diskErr = "checkpoint dir " + checkpointDir + ": " + bad.Error()
	}
	c.add(j)
	return j.id
}

// Jobs lists a cluster's jobs, archived ones included, in submission
// order; nil for an unknown cluster.
func (f *Fleet) Jobs(clusterID string) []JobInfo {
	c := f.cluster(clusterID)
	if c == nil {
		return nil
	}
	now := time.Now()
	jobs := c.list()
	out := make([]JobInfo, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, j.info(now))
	}
	return out
}

// Job returns one job of a cluster.
func (f *Fleet) Job(clusterID, jobID string) (JobInfo, bool) {
	c := f.cluster(clusterID)
	if c == nil {
		return JobInfo{}, false
	}
	j := c.job(jobID)
	if j == nil {
		return JobInfo{}, false
	}
	return j.info(time.Now()), true
}

func (j *job) info(now time.Time) JobInfo {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.advance(now)
	in := JobInfo{ID: j.id, Name: j.name, State: j.state, RestoreMode: j.restoreMode, Submissions: j.submissions,
		StopRequests: j.stopRequests, StopTriggers: j.stopOps, Stops: j.stops, Cancels: j.cancels,
		Savepoints: append([]string(nil), j.savepoints...), Started: j.start, Ended: j.end, DiskError: j.diskErr}
	if j.hasCkDir {
		in.CheckpointDir = j.ckDir.qualified
	}
	if j.restored != nil {
		in.RestoredFrom = j.restored.path
	}
	if j.latest != nil {
		in.LatestCheckpoint = j.latest.id
	}
	return in
}

// cluster is one simulated session cluster: its jobs (running and
// archived) and uploaded jars.
type cluster struct {
	id, segment string
	cfg         ClusterConfig
	spDir       location
	hasSPDir    bool
	// uploadDir is where Flink would keep uploaded jars; only named.
	uploadDir string

	mu sync.RWMutex
	// ckDir is the cluster's checkpoint dir: configured, or adopted from
	// the first AddJob that names one.
	ckDir    location
	hasCkDir bool
	jobs     map[string]*job
	order    []*job
	jars     map[string]*jar
	// orphanOps are savepoint operations on job IDs the cluster does not
	// know: Flink registers them too, and reports them failed.
	orphanOps map[string]*operation
}

type jar struct {
	id, name string
	uploaded time.Time
}

func (c *cluster) add(j *job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.jobs[j.id] = j
	c.order = append(c.order, j)
}

func (c *cluster) checkpointDir() (location, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.ckDir, c.hasCkDir
}

func (c *cluster) adoptCheckpointDir(l location) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.hasCkDir {
		c.ckDir, c.hasCkDir = l, true
	}
}

func (c *cluster) job(id string) *job {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.jobs[id]
}

func (c *cluster) list() []*job {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([]*job(nil), c.order...)
}
