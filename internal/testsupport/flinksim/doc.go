// Package flinksim simulates a fleet of Apache Flink session clusters
// behind one HTTP server, speaking the part of Flink's REST API (v1, as
// Flink 1.20 serves it) that flinkmaint's Flink client and maintenance
// activities use: cluster and job inspection, checkpoint statistics,
// stop-with-savepoint and savepoints with client-chosen trigger IDs,
// cancel, and jar upload/run/delete with restore from a savepoint.
//
// It exists for scale tests: thousands of jobs across many clusters, so a
// maintenance window can be run end to end on a real Temporal server. It is
// not a substitute for real Flink: the tests that prove behaviour run
// against the real Flink and HDFS in sandbox/.
//
// Each cluster is served under its own path prefix (<URL>/<clusterID>),
// which the Flink client supports as a base URL. Savepoints are written to
// the local file system (plain absolute paths or file: URIs) as a
// savepoint-<job6>-<12 hex> directory holding a valid version 4 _metadata
// with no state files; the latest retained checkpoint of each job is kept
// on disk as <checkpoint dir>/<job ID>/chk-N/_metadata. Other schemes are
// reported as Flink reports a file system it has no plugin for.
//
// Time-based behaviour (savepoints IN_PROGRESS for Options.SavepointDelay,
// the first checkpoint Options.CheckpointDelay after a start) is computed
// from timestamps when a job is read; there is no goroutine per job and no
// handler sleeps.
//
// Jobs submitted by POST /jars/{jarid}/run behave like the project's sample
// job: --job-name names them (default "stateful-sample-job"),
// --checkpoint-dir sets their checkpoint dir and --fail-on-restore makes a
// restored job fail and restart forever. Jar contents are never read.
package flinksim
