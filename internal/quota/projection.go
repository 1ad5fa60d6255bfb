package quota

import (
	"fmt"
	"sort"
)

// JobFootprint is what one job writes per checkpoint, observed from its
// current checkpoint directory (internal/layout gives the counts).
type JobFootprint struct {
	JobID string
	// FilesPerCheckpoint is the namespace cost of one checkpoint: the chk-N
	// directory, its exclusive files (including _metadata) and the shared
	// files that checkpoint added. Measure it as the mean over the retained
	// checkpoints: (names in chk dirs + shared files newer than the oldest
	// retained checkpoint) / retained checkpoints.
	FilesPerCheckpoint int64
	// FullCheckpointFiles, if set, is the namespace cost of a full
	// checkpoint (all shared files the job's state needs, plus one chk dir's
	// worth). The first checkpoint after a NO_CLAIM restore re-uploads all
	// state, so it is used for that one checkpoint when it is larger.
	FullCheckpointFiles int64
	// NumRetained is execution.checkpointing.num-retained (>= 1).
	NumRetained int64
	// SavepointFiles is the namespace cost of the savepoints the window
	// will take for this job (a savepoint dir plus its files, times the
	// number of savepoints).
	SavepointFiles int64
}

// Projection is the namespace a restart will consume.
type Projection struct {
	PerJob map[string]int64 // files+dirs per job, margin not applied
	Raw    int64            // sum of PerJob
	Margin float64
	Total  int64 // ceil(Raw * (1 + Margin))
}

// NewJobDirs is what a restarted job creates before its first checkpoint:
// Flink writes into a new <jobId>/ with eager shared/ and taskowned/.
const NewJobDirs = 3

// ProjectRestart estimates how many files and directories restarting jobs
// will create in their tenant root, so the restart gate can refuse a wave
// the namespace quota cannot hold.
//
// Per job:
//
//	files = NewJobDirs
//	      + FilesPerCheckpoint × NumRetained
//	      + max(FilesPerCheckpoint, FullCheckpointFiles)
//	      + SavepointFiles
//
// FilesPerCheckpoint × (NumRetained + 1) is the steady state: Flink keeps
// NumRetained completed checkpoints and writes the next one before it
// subsumes the oldest. One of those checkpoints is the first after a
// NO_CLAIM restore, which is a full checkpoint: nothing of the restored
// snapshot is reused, so all shared state is uploaded again; it costs
// FullCheckpointFiles when that is known and larger. The old job's
// directory is not freed (Flink never deletes it; NO_CLAIM never deletes the
// restored snapshot), so nothing is subtracted. Total = ceil(sum × (1 +
// margin)) absorbs jitter in checkpoint sizes and in-flight uploads of
// aborted checkpoints.
func ProjectRestart(jobs []JobFootprint, margin float64) (Projection, error) {
	if margin < 0 || margin > 10 {
		return Projection{}, invalid("safety margin %v: want 0 <= margin <= 10 (0.2 = +20%%)", margin)
	}
	p := Projection{PerJob: make(map[string]int64, len(jobs)), Margin: margin}
	for i, j := range jobs {
		if j.JobID == "" {
			return Projection{}, invalid("job %d: empty JobID", i)
		}
		if _, dup := p.PerJob[j.JobID]; dup {
			return Projection{}, invalid("job %s listed twice", j.JobID)
		}
		if j.NumRetained < 1 {
			return Projection{}, invalid("job %s: NumRetained %d: want >= 1 (execution.checkpointing.num-retained)", j.JobID, j.NumRetained)
		}
		if j.FilesPerCheckpoint < 1 {
			return Projection{}, invalid("job %s: FilesPerCheckpoint %d: want >= 1 (a checkpoint has at least its chk-N dir)", j.JobID, j.FilesPerCheckpoint)
		}
		if j.FullCheckpointFiles < 0 || j.SavepointFiles < 0 {
			return Projection{}, invalid("job %s: negative FullCheckpointFiles %d or SavepointFiles %d", j.JobID, j.FullCheckpointFiles, j.SavepointFiles)
		}
		n := NewJobDirs + j.FilesPerCheckpoint*j.NumRetained + max(j.FilesPerCheckpoint, j.FullCheckpointFiles) + j.SavepointFiles
		p.PerJob[j.JobID] = n
		p.Raw += n
	}
	p.Total = ceilMul(p.Raw, margin)
	return p, nil
}

// GateDecision says whether a restart may go ahead.
type GateDecision struct {
	Allowed bool
	// Needed is the projected namespace; Headroom what the quota leaves.
	Needed   int64
	Headroom int64
	// After is the namespace percentage once the restart has written
	// everything it is projected to write.
	After  float64
	Reason string
}

// Gate decides whether a restart projected by p fits the namespace quota
// of s and keeps usage below the critical watermark. Without a quota the
// restart is allowed.
func Gate(s Status, p Projection, w Watermarks) (GateDecision, error) {
	if err := w.Validate(); err != nil {
		return GateDecision{}, err
	}
	ns := s.Namespace
	d := GateDecision{Needed: p.Total, Headroom: ns.Headroom}
	if !ns.Limited() {
		d.Allowed = true
		d.Reason = fmt.Sprintf("%s has no namespace quota; restart projected to add %d files and directories", s.Root, p.Total)
		return d, nil
	}
	after := ns.Used + p.Total
	if ns.Quota > 0 {
		d.After = 100 * float64(after) / float64(ns.Quota)
	} else {
		d.After = 100
	}
	switch {
	case p.Total > ns.Headroom:
		d.Reason = fmt.Sprintf("%s: restart needs %d files and directories (incl. %.0f%% margin), only %d of the namespace quota %d are free (%d used); free %d or raise the quota",
			s.Root, p.Total, p.Margin*100, ns.Headroom, ns.Quota, ns.Used, p.Total-ns.Headroom)
	case d.After >= w.Critical:
		d.Reason = fmt.Sprintf("%s: restart fits (%d needed, %d free) but would leave the namespace at %.1f%% of %d, at or above the critical watermark %.0f%%",
			s.Root, p.Total, ns.Headroom, d.After, ns.Quota, w.Critical)
	default:
		d.Allowed = true
		d.Reason = fmt.Sprintf("%s: restart needs %d of %d free; namespace afterwards %.1f%% of %d", s.Root, p.Total, ns.Headroom, d.After, ns.Quota)
	}
	return d, nil
}

// LargestJobs returns the job ids of p ordered by projected cost, largest
// first (ties by id), to tell operators where the namespace goes.
func (p Projection) LargestJobs() []string {
	ids := make([]string, 0, len(p.PerJob))
	for id := range p.PerJob {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool {
		if p.PerJob[ids[a]] != p.PerJob[ids[b]] {
			return p.PerJob[ids[a]] > p.PerJob[ids[b]]
		}
		return ids[a] < ids[b]
	})
	return ids
}
