package workflows

import (
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// What a window or an upgrade says of a job whose savepoint or restart
// failed: the state it was last seen in, and what a person checks. A job
// is said to keep running only when Flink was seen to leave it running;
// when its cluster did not answer, its state is unknown and the text says
// so.

// Names of the activities whose failure tells what became of a job; an
// activity's name is its method's, public API like its input.
const (
	activityVerifySavepoint = "VerifySavepoint"
	activityRestartJob      = "RestartJob"
	activityResumeJob       = "ResumeJob"
)

// seenAfterStop is what the error of a failed stop with savepoint (the
// JobSavepoint child) tells of the job: what the activity read after the
// failure (its details), else what the error's type implies. A savepoint
// that did not verify was taken as the job stopped: the job does not run.
func seenAfterStop(err error) core.JobSeen {
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch v := e.(type) {
		case *temporal.ActivityError:
			if v.ActivityType().GetName() == activityVerifySavepoint {
				return core.JobSeen{Seen: core.JobSeenStopped}
			}
		case *temporal.ApplicationError:
			var seen core.JobSeen
			if v.HasDetails() && v.Details(&seen) == nil && seen.Seen != "" {
				return seen
			}
			if s := core.JobAfterFailedStop(v.Type()); s != core.JobSeenUnknown {
				return core.JobSeen{Seen: s}
			}
		}
	}
	return core.JobSeen{Seen: core.JobSeenUnknown}
}

// seenAfterRestart is what the error of a failed restart (the JobRestart
// child) tells of the job: unanswered when its cluster did not answer,
// stopped when the restart did not start it, unknown when it was started
// and did not become healthy.
func seenAfterRestart(err error) core.JobSeen {
	started := true
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch v := e.(type) {
		case *temporal.ActivityError:
			if n := v.ActivityType().GetName(); n == activityRestartJob || n == activityResumeJob {
				started = false
			}
		case *temporal.ApplicationError:
			if core.JobAfterFailedStop(v.Type()) == core.JobSeenUnanswered {
				return core.JobSeen{Seen: core.JobSeenUnanswered}
			}
		}
	}
	if !started {
		return core.JobSeen{Seen: core.JobSeenStopped}
	}
	return core.JobSeen{Seen: core.JobSeenUnknown}
}

// jobSeen is what the window recorded of j when its step failed. State
// recorded before the window kept it knows only whether the job stopped.
func jobSeen(j *JobProgress) core.JobSeen {
	switch {
	case j.Seen != "":
		return core.JobSeen{Seen: j.Seen, State: j.SeenState}
	case j.StoppedWithoutSavepoint:
		return core.JobSeen{Seen: core.JobSeenStopped}
	}
	return core.JobSeen{Seen: core.JobSeenUnknown}
}

// afterStopText says what became of a job whose stop with savepoint
// failed, for a decision line or a skip reason.
func afterStopText(seen core.JobSeen, t core.JobTarget) string {
	switch seen.Seen {
	case core.JobSeenRunning:
		if seen.State != "" {
			return "the job keeps running: Flink reported it " + seen.State + " after the failure"
		}
		return "the job keeps running: Flink refused the stop before it began"
	case core.JobSeenStopped:
		s := "the job is no longer running and this window has no savepoint of it: restart it by hand from its latest savepoint or retained checkpoint"
		if seen.State != "" {
			s += " (Flink reported it " + seen.State + ")"
		}
		return s
	}
	return unknownStateText(seen, t)
}

// afterRestartText says what became of a job whose restart failed.
func afterRestartText(seen core.JobSeen, j *JobProgress) string {
	switch seen.Seen {
	case core.JobSeenStopped:
		return fmt.Sprintf("the job is not running: its restart from %s did not start it; the savepoint stays in the manifest", j.SavepointPath)
	case core.JobSeenUnanswered:
		return unknownStateText(seen, j.Target)
	}
	return fmt.Sprintf("the job was started from %s (job %s) and did not become healthy: %s; retry-job cancels it and starts it again",
		j.SavepointPath, j.NewJobID, checkText(j.Target))
}

// unknownStateText: the job's state is not known, and why.
func unknownStateText(seen core.JobSeen, t core.JobTarget) string {
	switch {
	case seen.Seen == core.JobSeenUnanswered:
		return "its state is unknown because its cluster did not answer: " + checkText(t)
	case seen.State != "":
		return "its state is unknown: Flink reported it " + seen.State + " after the failure; " + checkText(t)
	}
	return "its state is unknown: it was not read after the failure; " + checkText(t)
}

// checkText is where a person looks at the job and its cluster.
func checkText(t core.JobTarget) string {
	if r := t.Restart.Resource; t.Restart.Kind == inventory.RestartOperatorResume && r != nil {
		return fmt.Sprintf("check `kubectl -n %s get %s %s` and that the Kubernetes API and %s answer",
			r.Namespace, strings.ToLower(r.Kind), r.Name, orDash(t.RESTURL))
	}
	return fmt.Sprintf("check that the JobManager of %s runs and %s answers", t.ClusterID, orDash(t.RESTURL))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// failureLines are a decision's lines about failed jobs, one per job:
// its key, its state and the cause once. At most maxDetailItems; the
// status command lists the rest.
func failureLines(windowID string, keys []string, line func(key string) (state, cause string)) string {
	var b strings.Builder
	for i, k := range keys {
		if i == maxDetailItems {
			b.WriteString(fmt.Sprintf("\n- and %d more: `flinkmaint window status %s` lists every job", len(keys)-i, windowID))
			break
		}
		state, cause := line(k)
		b.WriteString(fmt.Sprintf("\n- %s: %s; cause: %s", k, state, cause))
	}
	return b.String()
}
