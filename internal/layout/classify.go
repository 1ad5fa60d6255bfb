// Package layout classifies what lies under configured checkpoint,
// savepoint and HA roots, following what Flink writes (see
// FLINK_STORAGE_LAYOUT.md in the reference fixtures):
//
//	<checkpoint root>/<jobId 32 hex>/{chk-<N>, shared, taskowned}
//	<savepoint root>/savepoint-<6 hex>-<12 hex>/
//	<ha root>/<cluster-id>/{blob/, completedCheckpoint*, submittedJobGraph*,
//	                        submittedExecutionPlan*, submittedApplication*}
//	<ha root>/job-result-store/<cluster-id>/<jobId>[_DIRTY].json
//
// Flink 2.x's ForSt backend keeps a running job's working state on the DFS,
// one dir per operator subtask and attempt (ParseForStWorkingDir):
//
//	<checkpoint root>/<jobId>/shared/op_<operator>_<id>__<i>_<n>__attempt_<a>/db/…   (primary-dir default)
//	<primary-dir>/<jobId>/op_<operator>_<id>__<i>_<n>__attempt_<a>/db/…              (primary-dir set)
//
// The Classify* functions are pure and look at one directory level. Anything
// they do not recognise is KindUnknown with a reason; nothing is guessed.
package layout

import (
	"strconv"
	"strings"
)

// Kind is what a path is in Flink's storage layout.
type Kind int

// Kinds. The zero value is KindUnknown, so a forgotten case never passes
// for something known.
const (
	KindUnknown Kind = iota
	KindCheckpointJobDir
	KindCheckpoint // chk-<N>
	KindSharedDir
	KindTaskOwnedDir
	KindSavepoint
	KindHACluster
	KindHABlobDir
	KindHABlobJobDir // blob/job_<jobId> and blob/no_job
	KindHACompletedCheckpoint
	KindHASubmittedJob // submittedJobGraph, submittedExecutionPlan, submittedApplication
	KindJobResultStore
	KindJobResultStoreCluster
	KindJobResult
)

var kindNames = map[Kind]string{
	KindUnknown:               "unknown",
	KindCheckpointJobDir:      "checkpoint-job-dir",
	KindCheckpoint:            "checkpoint",
	KindSharedDir:             "shared-dir",
	KindTaskOwnedDir:          "taskowned-dir",
	KindSavepoint:             "savepoint",
	KindHACluster:             "ha-cluster",
	KindHABlobDir:             "ha-blob-dir",
	KindHABlobJobDir:          "ha-blob-job-dir",
	KindHACompletedCheckpoint: "ha-completed-checkpoint",
	KindHASubmittedJob:        "ha-submitted-job",
	KindJobResultStore:        "job-result-store",
	KindJobResultStoreCluster: "job-result-store-cluster",
	KindJobResult:             "job-result",
}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Class is the classification of one directory entry.
type Class struct {
	Kind Kind
	// JobID is the 32-hex job id of a job dir, blob job dir or job result.
	JobID string
	// JobIDPrefix is the first 6 hex chars of the job id in a savepoint name.
	JobIDPrefix string
	// CheckpointID is N of chk-N.
	CheckpointID int64
	// Variant names the sub-form: the submitted-job prefix, "dirty"/"clean"
	// for job results, "no_job" for the job-less blob dir.
	Variant string
	// Reason says why an entry is KindUnknown.
	Reason string
}

func unknown(reason string) Class { return Class{Kind: KindUnknown, Reason: reason} }

// Names Flink uses (AbstractFsCheckpointStorageAccess, ZooKeeperUtils,
// FileSystemBlobStore, FileSystemJobResultStore).
const (
	checkpointPrefix    = "chk-"
	sharedDirName       = "shared"
	taskOwnedDirName    = "taskowned"
	MetadataFileName    = "_metadata"
	savepointPrefix     = "savepoint-"
	blobDirName         = "blob"
	jobResultStoreName  = "job-result-store"
	completedCkptPrefix = "completedCheckpoint"
	dirtySuffix         = "_DIRTY.json"
	cleanSuffix         = ".json"
)

var submittedPrefixes = []string{"submittedJobGraph", "submittedExecutionPlan", "submittedApplication"}

// IsJobID reports whether s is a Flink job id: 32 lower-case hex characters.
func IsJobID(s string) bool { return len(s) == 32 && isLowerHex(s) }

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// isRandomSuffix matches FileUtils.getRandomFilename's 12 characters.
func isRandomSuffix(s string) bool { return len(s) == 12 && isLowerHex(s) }

// ClassifyCheckpointRootEntry classifies an entry directly under a
// checkpoint root: only a directory named by a job id is known.
func ClassifyCheckpointRootEntry(name string, isDir bool) Class {
	switch {
	case IsJobID(name) && isDir:
		return Class{Kind: KindCheckpointJobDir, JobID: name}
	case IsJobID(name):
		return unknown("a file named like a job id; job dirs are directories")
	case isDir && (name == sharedDirName || name == taskOwnedDirName || strings.HasPrefix(name, checkpointPrefix)):
		return unknown("checkpoint layout without a job-id level (create-subdir=false shares one dir between jobs)")
	default:
		return unknown("not a job id (want 32 lower-case hex characters)")
	}
}

// ClassifyJobDirEntry classifies an entry of <root>/<jobId>/.
func ClassifyJobDirEntry(name string, isDir bool) Class {
	if !isDir {
		return unknown("a file directly in a job dir; Flink writes only chk-N, shared and taskowned there")
	}
	if _, ok := ParseForStWorkingDir(name); ok {
		return unknown("a ForSt working dir directly in a job dir (state.backend.forst.primary-dir is this checkpoint root): the job's live state")
	}
	switch name {
	case sharedDirName:
		return Class{Kind: KindSharedDir}
	case taskOwnedDirName:
		return Class{Kind: KindTaskOwnedDir}
	}
	if n, ok := checkpointID(name); ok {
		return Class{Kind: KindCheckpoint, CheckpointID: n}
	}
	return unknown("not chk-<N>, shared or taskowned")
}

// ForStWorkingDir is the name of a ForSt working dir:
// op_<operator class>_<operator id>__<subtask>_<parallelism>__attempt_<attempt>.
type ForStWorkingDir struct {
	Operator    string // e.g. AsyncKeyedProcessOperator
	OperatorID  string // 32 hex
	Subtask     int    // as Flink writes it (1-based)
	Parallelism int
	Attempt     int
}

// ParseForStWorkingDir parses the name of a dir ForSt (Flink 2.x) creates for
// one operator subtask's working state, e.g.
// op_AsyncKeyedProcessOperator_fcfb2cd74328d289a0b17a4030f9cfdc__1_1__attempt_0.
// Everything under it belongs to that ForSt instance while the job runs.
func ParseForStWorkingDir(name string) (ForStWorkingDir, bool) {
	rest, ok := strings.CutPrefix(name, "op_")
	if !ok {
		return ForStWorkingDir{}, false
	}
	parts := strings.Split(rest, "__")
	if len(parts) != 3 {
		return ForStWorkingDir{}, false
	}
	cut := strings.LastIndexByte(parts[0], '_')
	if cut < 1 {
		return ForStWorkingDir{}, false
	}
	w := ForStWorkingDir{Operator: parts[0][:cut], OperatorID: parts[0][cut+1:]}
	if len(w.OperatorID) != 32 || !isLowerHex(w.OperatorID) {
		return ForStWorkingDir{}, false
	}
	sub, par, ok := strings.Cut(parts[1], "_")
	if !ok {
		return ForStWorkingDir{}, false
	}
	var okS, okP, okA bool
	w.Subtask, okS = decimal(sub)
	w.Parallelism, okP = decimal(par)
	attempt, ok := strings.CutPrefix(parts[2], "attempt_")
	if !ok {
		return ForStWorkingDir{}, false
	}
	w.Attempt, okA = decimal(attempt)
	if !okS || !okP || !okA {
		return ForStWorkingDir{}, false
	}
	return w, true
}

// decimal parses a non-negative int without sign or leading zeros.
func decimal(s string) (int, bool) {
	if s == "" || len(s) > 9 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// checkpointID parses chk-<N>: decimal, no sign, no leading zeros.
func checkpointID(name string) (int64, bool) {
	digits, ok := strings.CutPrefix(name, checkpointPrefix)
	if !ok || digits == "" || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil
}

// ClassifySavepointRootEntry classifies an entry of a savepoint root:
// savepoint-<first 6 chars of the job id>-<12 random hex chars>.
func ClassifySavepointRootEntry(name string, isDir bool) Class {
	rest, ok := strings.CutPrefix(name, savepointPrefix)
	if !ok {
		return unknown("not savepoint-<6 hex>-<12 hex>")
	}
	prefix, random, ok := strings.Cut(rest, "-")
	if !ok || len(prefix) != 6 || !isLowerHex(prefix) || !isRandomSuffix(random) {
		return unknown("not savepoint-<6 hex>-<12 hex>")
	}
	if !isDir {
		return unknown("a file named like a savepoint; savepoints are directories")
	}
	return Class{Kind: KindSavepoint, JobIDPrefix: prefix}
}

// ClassifyHARootEntry classifies an entry of high-availability.storageDir.
// Every directory is a cluster dir (cluster ids are free-form) except the
// default job-result-store.
func ClassifyHARootEntry(name string, isDir bool) Class {
	if !isDir {
		return unknown("a file directly in the HA storage dir; Flink writes into <cluster-id>/")
	}
	if name == jobResultStoreName {
		return Class{Kind: KindJobResultStore}
	}
	return Class{Kind: KindHACluster}
}

// ClassifyHAClusterEntry classifies an entry of <ha-root>/<cluster-id>/.
func ClassifyHAClusterEntry(name string, isDir bool) Class {
	if name == blobDirName {
		if isDir {
			return Class{Kind: KindHABlobDir}
		}
		return unknown("a file named blob; the blob store is a directory")
	}
	if rest, ok := strings.CutPrefix(name, completedCkptPrefix); ok {
		if !isDir && isRandomSuffix(rest) {
			return Class{Kind: KindHACompletedCheckpoint}
		}
		return unknown("not completedCheckpoint<12 hex>")
	}
	for _, p := range submittedPrefixes {
		if rest, ok := strings.CutPrefix(name, p); ok {
			if !isDir && isRandomSuffix(rest) {
				return Class{Kind: KindHASubmittedJob, Variant: p}
			}
			return unknown("not " + p + "<12 hex>")
		}
	}
	return unknown("not blob/, completedCheckpoint*, submittedJobGraph*, submittedExecutionPlan* or submittedApplication*")
}

// ClassifyBlobEntry classifies an entry of <cluster>/blob/.
func ClassifyBlobEntry(name string, isDir bool) Class {
	if !isDir {
		return unknown("a file directly in blob/; blobs live in job_<jobId>/ or no_job/")
	}
	if name == "no_job" {
		return Class{Kind: KindHABlobJobDir, Variant: "no_job"}
	}
	if id, ok := strings.CutPrefix(name, "job_"); ok && IsJobID(id) {
		return Class{Kind: KindHABlobJobDir, JobID: id}
	}
	return unknown("not job_<jobId> or no_job")
}

// ClassifyJobResultEntry classifies an entry of
// job-result-store/<cluster-id>/: <jobId>.json (cleaned up) or
// <jobId>_DIRTY.json (cleanup pending).
func ClassifyJobResultEntry(name string, isDir bool) Class {
	if isDir {
		return unknown("a directory in a job result store")
	}
	if id, ok := strings.CutSuffix(name, dirtySuffix); ok && IsJobID(id) {
		return Class{Kind: KindJobResult, JobID: id, Variant: "dirty"}
	}
	if id, ok := strings.CutSuffix(name, cleanSuffix); ok && IsJobID(id) {
		return Class{Kind: KindJobResult, JobID: id, Variant: "clean"}
	}
	return unknown("not <jobId>.json or <jobId>_DIRTY.json")
}
