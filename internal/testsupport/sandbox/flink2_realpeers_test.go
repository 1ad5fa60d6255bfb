//go:build realpeers

package sandbox

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
)

// The Flink 2.x line of the sandbox (cluster-c, tenant team-c): the sample job built for 2.x
// runs there with RocksDB incremental checkpoints and with ForSt, whose working files live on
// HDFS while the job runs.

func TestFlink2LineView(t *testing.T) {
	t.Parallel()
	p := RequirePeersLine(t, Line2)
	if len(p.Clusters) == 0 || len(p.Tenants) == 0 {
		t.Fatalf("line %s view has %d clusters and %d tenants", Line2, len(p.Clusters), len(p.Tenants))
	}
	for _, c := range p.Clusters {
		if c.Line() != Line2 || !strings.HasPrefix(c.FlinkVersion, "2.") {
			t.Fatalf("cluster %s runs Flink %s, want line %s", c.ClusterID, c.FlinkVersion, Line2)
		}
		var cfg struct {
			Version string `json:"flink-version"`
		}
		flinkJSON(t, http.MethodGet, c.RESTURL+"/config", nil, &cfg)
		if cfg.Version != c.FlinkVersion {
			t.Fatalf("cluster %s: /config flink-version %q, peers.json flinkVersion %q", c.ClusterID, cfg.Version, c.FlinkVersion)
		}
	}
	if p.SampleJob.Jar == RequirePeers(t).SampleJob.Jar {
		t.Fatalf("lines %s and %s share the sample jar %s; each needs its own build", Line2, LineDefault, p.SampleJob.Jar)
	}
	def := RequirePeers(t)
	for _, c := range def.Clusters {
		if c.Line() != LineDefault {
			t.Fatalf("default view holds cluster %s of Flink %s", c.ClusterID, c.FlinkVersion)
		}
	}
	if _, err := LoadPeersLine("1.19"); err == nil || !strings.Contains(err.Error(), `no cluster runs Flink line "1.19"`) {
		t.Fatalf("LoadPeersLine(1.19) = %v, want an error naming the line and the valid ones", err)
	}
}

// RocksDB incremental on 2.x: checkpoints share SST files, canonical and native savepoints,
// stop-with-savepoint, restores in NO_CLAIM and CLAIM, and the state check of the 2.x jar.
func TestFlink2RocksDBSnapshotsAndRestores(t *testing.T) {
	t.Parallel()
	p := RequirePeersLine(t, Line2)
	c := p.Clusters[0]
	fs := hdfsClient(t, p)
	dir := testDir(t, p, fs, c.Tenant)
	args := []string{"--checkpoint-dir", p.HDFS.URI + dir + "/checkpoints", "--keys", "2000", "--value-bytes", "256", "--rate", "500"}

	job := runSampleJob(t, c, args...)
	waitRunning(t, c, job)
	waitCompletedCheckpoints(t, c, job, 2)
	waitFor(t, time.Minute, "SST files in the job's shared/ dir", func() (bool, string) {
		n := countFiles(fs, dir+"/checkpoints/"+job+"/shared")
		return n > 0, fmt.Sprintf("%d files", n)
	})

	canonical := triggerSavepointFormat(t, c, job, p.HDFS.URI+dir+"/savepoints", "CANONICAL")
	native := triggerSavepointFormat(t, c, job, p.HDFS.URI+dir+"/savepoints", "NATIVE")
	for _, sp := range []string{canonical, native} {
		if _, err := fs.Stat(strings.TrimPrefix(sp, p.HDFS.URI) + "/_metadata"); err != nil {
			t.Fatalf("savepoint %s: %v", sp, err)
		}
	}
	verifyState(t, p, c, canonical, 1)
	verifyState(t, p, c, native, 1)

	stopped := stopWithSavepoint(t, c, job, p.HDFS.URI+dir+"/savepoints", "CANONICAL")
	waitFor(t, time.Minute, "job "+job+" FINISHED after stop-with-savepoint", func() (bool, string) {
		st := jobState(t, c, job)
		return st == "FINISHED", st
	})

	noClaim, err := submitSampleJobFrom(t, c, stopped, "NO_CLAIM", args...)
	if err != nil {
		t.Fatalf("restore NO_CLAIM from %s: %v", stopped, err)
	}
	waitRunning(t, c, noClaim)
	waitCompletedCheckpoints(t, c, noClaim, 1)
	cancelJob(t, c, noClaim)

	claim, err := submitSampleJobFrom(t, c, native, "CLAIM", args...)
	if err != nil {
		t.Fatalf("restore CLAIM from %s: %v", native, err)
	}
	waitRunning(t, c, claim)
	waitCompletedCheckpoints(t, c, claim, 1)
	t.Logf("job %s: canonical %s, native %s, stop-with-savepoint %s; restored NO_CLAIM as %s, CLAIM as %s",
		job, canonical, native, stopped, noClaim, claim)
}

// ForSt on 2.x: with the async state API its working files live on HDFS while the job runs,
// under <checkpoint-dir>/<job>/shared/ (primary-dir default) or <primary-dir>/<job>/ (explicit);
// with --forst-local (sync state API) on local disk. Every variant checkpoints and restores in
// NO_CLAIM and CLAIM. The local one also takes a native savepoint and a stop-with-savepoint
// and restores from them, and shows that a canonical savepoint fails the job over (Flink 2.3
// ForSt takes native savepoints only). The DFS-resident ones restore from the checkpoint their
// cancel retained: on 2.3.0 a DFS-resident ForSt snapshot under load fails inside ForSt now and
// then (FileNotFoundException for a working file that vanished under ForSt's own listing, cf.
// FLINK-37437), the job fails over, and a stop or cancel after that hung in CANCELLING for good
// (a slot held, the job "live" for every later run), 4 full runs out of 4.
func TestFlink2ForStOnHDFS(t *testing.T) {
	t.Parallel()
	p := RequirePeersLine(t, Line2)
	c := p.Clusters[0]
	for _, variant := range []string{"primary-dir-default", "primary-dir-explicit", "local"} {
		t.Run(variant, func(t *testing.T) {
			fs := hdfsClient(t, p)
			dir := testDir(t, p, fs, c.Tenant)
			args := []string{"--checkpoint-dir", p.HDFS.URI + dir + "/checkpoints", "--keys", "2000", "--value-bytes", "256",
				"--rate", "500", "--state-backend", "forst"}
			switch variant {
			case "primary-dir-explicit":
				args = append(args, "--forst-primary-dir", p.HDFS.URI+dir+"/forst")
			case "local":
				args = append(args, "--forst-local")
			}
			job := runSampleJob(t, c, args...)
			waitRunning(t, c, job)
			cps := waitCompletedCheckpoints(t, c, job, 3)

			working := map[string]string{
				"primary-dir-default":  dir + "/checkpoints/" + job + "/shared",
				"primary-dir-explicit": dir + "/forst/" + job,
			}[variant]
			if working != "" {
				waitFor(t, time.Minute, "ForSt working files under "+working, func() (bool, string) {
					n := 0
					for _, f := range listTree(fs, working) {
						if strings.Contains(f, "/db/") && !strings.HasSuffix(f, "/") {
							n++
						}
					}
					return n > 0, fmt.Sprintf("%d files in op_*/db/", n)
				})
			}

			if variant == "local" {
				// Not refused up front: the task throws, the job fails over (restarts from its
				// latest checkpoint) and the savepoint ends with "Checkpoint Coordinator is suspending".
				var trigger struct {
					RequestID string `json:"request-id"`
				}
				flinkJSON(t, http.MethodPost, c.RESTURL+"/jobs/"+job+"/savepoints",
					map[string]any{"target-directory": p.HDFS.URI + dir + "/savepoints", "cancel-job": false, "formatType": "CANONICAL"}, &trigger)
				if loc, failure := awaitSavepointResult(t, c, job, trigger.RequestID); failure == "" {
					t.Fatalf("canonical savepoint of ForSt job %s completed at %s; Flink 2.3 was seen to fail it", job, loc)
				}
				waitFor(t, time.Minute, "the failover of ForSt job "+job+" in /jobs/{id}/exceptions", func() (bool, string) {
					body := flinkRaw(t, http.MethodGet, c.RESTURL+"/jobs/"+job+"/exceptions", nil)
					return strings.Contains(body, "does not support CANONICAL savepoints"), lastLines(body, 2)
				})
				waitRunning(t, c, job)
			}
			if variant != "local" {
				// DFS-resident: restores from the checkpoint retained on cancel. Its savepoints
				// are parsed in internal/checkpoint (TestRealFlink2Metadata); a stop is not
				// taken here, see above.
				tree := listTree(fs, dir)
				cancelJob(t, c, job)
				var after checkpointStats
				flinkJSON(t, http.MethodGet, c.RESTURL+"/jobs/"+job+"/checkpoints", nil, &after)
				if after.Latest.Completed.ExternalPath == "" {
					t.Fatalf("ForSt job %s: no retained checkpoint after cancel", job)
				}
				retained := after.Latest.Completed.ExternalPath
				noClaim, err := submitSampleJobFrom(t, c, retained, "NO_CLAIM", args...)
				if err != nil {
					t.Fatalf("restore NO_CLAIM from %s: %v", retained, err)
				}
				waitRunning(t, c, noClaim)
				waitCompletedCheckpoints(t, c, noClaim, 1)
				cancelJob(t, c, noClaim)
				claim, err := submitSampleJobFrom(t, c, retained, "CLAIM", args...)
				if err != nil {
					t.Fatalf("restore CLAIM from %s: %v", retained, err)
				}
				waitRunning(t, c, claim)
				waitCompletedCheckpoints(t, c, claim, 1)
				t.Logf("ForSt job %s (%s): retained checkpoint %s restored NO_CLAIM as %s, CLAIM as %s; files while running:\n%s",
					job, variant, retained, noClaim, claim, strings.Join(tree, "\n"))
				return
			}
			native := forStSnapshot(t, c, job, p.HDFS.URI+dir+"/savepoints", false)
			if st := jobState(t, c, job); st != "RUNNING" {
				t.Fatalf("ForSt job %s is %s after its native savepoint, want RUNNING", job, st)
			}
			tree := listTree(fs, dir)
			stopped := forStSnapshot(t, c, job, p.HDFS.URI+dir+"/savepoints", true)
			waitFor(t, time.Minute, "job "+job+" FINISHED after stop-with-savepoint", func() (bool, string) {
				st := jobState(t, c, job)
				return st == "FINISHED", st
			})

			noClaim, err := submitSampleJobFrom(t, c, stopped, "NO_CLAIM", args...)
			if err != nil {
				t.Fatalf("restore NO_CLAIM from %s: %v", stopped, err)
			}
			waitRunning(t, c, noClaim)
			waitCompletedCheckpoints(t, c, noClaim, 1)
			cancelJob(t, c, noClaim)
			claim, err := submitSampleJobFrom(t, c, native, "CLAIM", args...)
			if err != nil {
				t.Fatalf("restore CLAIM from %s: %v", native, err)
			}
			waitRunning(t, c, claim)
			waitCompletedCheckpoints(t, c, claim, 1)
			t.Logf("ForSt job %s (%s): latest checkpoint %s; native savepoint %s, stop-with-savepoint %s; restored NO_CLAIM as %s, CLAIM as %s; files while running:\n%s",
				job, variant, cps.Latest.Completed.ExternalPath, native, stopped, noClaim, claim, strings.Join(tree, "\n"))
		})
	}
}

// forStSnapshot takes a native savepoint of a ForSt job (stop: a stop-with-savepoint). On
// 2.3.0 a DFS-resident ForSt job may fail one when ForSt re-enables file deletions and lists
// a working file that is gone (FileNotFoundException from ForStFlinkFileSystem.getFileStatus,
// cf. FLINK-37437); a savepoint's job keeps running, a stop's fails over, and taking another
// is what any operator (and flinkmaint's window retry) does. Any other failure fails the test.
func forStSnapshot(t *testing.T, c FlinkCluster, job, target string, stop bool) string {
	t.Helper()
	for attempt := 1; ; attempt++ {
		var trigger struct {
			RequestID string `json:"request-id"`
		}
		if stop {
			flinkJSON(t, http.MethodPost, c.RESTURL+"/jobs/"+job+"/stop",
				map[string]any{"targetDirectory": target, "drain": false, "formatType": "NATIVE"}, &trigger)
		} else {
			flinkJSON(t, http.MethodPost, c.RESTURL+"/jobs/"+job+"/savepoints",
				map[string]any{"target-directory": target, "cancel-job": false, "formatType": "NATIVE"}, &trigger)
		}
		loc, failure := awaitSavepointResult(t, c, job, trigger.RequestID)
		if failure == "" {
			return loc
		}
		if attempt == 3 || !strings.Contains(failure, "ForStFlinkFileSystem") {
			t.Fatalf("native savepoint (stop %v) of ForSt job %s failed (attempt %d): %s", stop, job, attempt, lastLines(failure, 15))
		}
		t.Logf("native savepoint (stop %v) of ForSt job %s failed inside ForSt (attempt %d), taking another: %s", stop, job, attempt, lastLines(failure, 3))
		// A failed stop fails the job over: once it has completed a checkpoint again, every
		// task runs and a new snapshot can be taken.
		var cps checkpointStats
		flinkJSON(t, http.MethodGet, c.RESTURL+"/jobs/"+job+"/checkpoints", nil, &cps)
		waitCompletedCheckpoints(t, c, job, int(cps.Counts.Completed)+1)
		waitRunning(t, c, job)
	}
}

// verifyState runs the sample jar's VerifyState on a snapshot and waits for it to FINISH.
func verifyState(t *testing.T, p *Peers, c FlinkCluster, snapshot string, minKeys int) {
	t.Helper()
	name := fmt.Sprintf("verify-%d", time.Now().UnixNano())
	job, err := submitJar(t, p, c, "io.github.flinkmaint.sandbox.job.VerifyState", name, "", "",
		"--snapshot", snapshot, "--min-keys", fmt.Sprint(minKeys))
	if err != nil {
		t.Fatalf("state check of %s: %v", snapshot, err)
	}
	waitFor(t, 3*time.Minute, "state check "+job+" of "+snapshot+" to finish", func() (bool, string) {
		st := jobState(t, c, job)
		if st == "FAILED" {
			t.Fatalf("state check of %s failed: %s", snapshot,
				lastLines(flinkRaw(t, http.MethodGet, c.RESTURL+"/jobs/"+job+"/exceptions", nil), 20))
		}
		return st == "FINISHED", st
	})
}

// stopWithSavepoint stops a job with a savepoint in format (no drain) and returns its path.
func stopWithSavepoint(t *testing.T, c FlinkCluster, job, target, format string) string {
	t.Helper()
	var trigger struct {
		RequestID string `json:"request-id"`
	}
	flinkJSON(t, http.MethodPost, c.RESTURL+"/jobs/"+job+"/stop",
		map[string]any{"targetDirectory": target, "drain": false, "formatType": format}, &trigger)
	if trigger.RequestID == "" {
		t.Fatal("stop-with-savepoint returned no request-id")
	}
	return awaitSavepoint(t, c, job, trigger.RequestID)
}

func jobState(t *testing.T, c FlinkCluster, job string) string {
	t.Helper()
	var st struct {
		State string `json:"state"`
	}
	flinkJSON(t, http.MethodGet, c.RESTURL+"/jobs/"+job, nil, &st)
	return st.State
}

func countFiles(fs *hdfs.Client, dir string) int {
	entries, err := fs.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			n++
		}
	}
	return n
}

// listTree lists every path under dir (relative, dirs with a trailing slash), sorted.
func listTree(fs *hdfs.Client, dir string) []string {
	var out []string
	var walk func(string)
	walk = func(d string) {
		entries, err := fs.ReadDir(d)
		if err != nil {
			out = append(out, d+": "+err.Error())
			return
		}
		for _, e := range entries {
			rel := strings.TrimPrefix(d+"/"+e.Name(), dir+"/")
			if e.IsDir() {
				out = append(out, rel+"/")
				walk(d + "/" + e.Name())
			} else {
				out = append(out, fmt.Sprintf("%s (%d)", rel, e.Size()))
			}
		}
	}
	walk(dir)
	sort.Strings(out)
	return out
}
