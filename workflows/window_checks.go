package workflows

import (
	"errors"
	"fmt"
	"strings"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// The checks a window and its plan (`flinkmaint window plan`) share: one
// home for each rule, so the plan refuses exactly what the window would.

// changeStrictWindow versions the checks windows gained with their plan:
// the scope's job patterns and the input of the post-restart cleanup run
// are validated at start, and preflight fails, before any job stops, when
// the scope selects nothing the inventory has (an unknown tenant or
// cluster, a pattern no running job matches) or no job at all. Windows
// started before keep the rules they started under.
const changeStrictWindow = "window-strict-scope-2026-12-01"

// maxSkippedListed bounds the skipped jobs a refusal lists.
const maxSkippedListed = 10

// handedOnProblems are the problems of what a window hands on: the
// scope's job patterns (DiscoverJobs) and the input of its post-restart
// Governance run, each named as window.yaml spells it.
func (in *WindowInput) handedOnProblems() []error {
	var errs []error
	for _, p := range in.Scope.GlobProblems() {
		errs = append(errs, errors.New(p))
	}
	g := in.cleanupInput(nil)
	g.ApplyDefaults()
	if err := g.validate(windowCleanupField); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// windowCleanupField names a field of the cleanup run's input as
// window.yaml spells it; "" for the fields the window checks itself
// (policy.cleanup.mode, policy.quota's watermarks).
func windowCleanupField(field string) string {
	switch {
	case field == "mode" || field == "warningPercent" || field == "criticalPercent":
		return ""
	case field == "runId":
		return "windowId (the cleanup run is named window-<windowId>)"
	case field == "approvalTimeout":
		return "policy.cleanup.approvalTimeout"
	case strings.HasPrefix(field, "policy."):
		return "policy.cleanup." + field
	}
	return field
}

// cleanupInput is the input of the window's post-restart Governance run
// over tenants.
func (in *WindowInput) cleanupInput(tenants []string) GovernanceInput {
	p := in.Policy
	return GovernanceInput{RunID: "window-" + in.WindowID, Reason: "post-restart cleanup of maintenance window " + in.WindowID,
		Scope: core.Scope{Tenants: tenants}, Mode: p.Cleanup.Mode, Policy: p.Cleanup.Policy, ApprovalTimeout: p.Cleanup.ApprovalTimeout,
		WarningPercent: p.Quota.WarningPercent, CriticalPercent: p.Quota.CriticalPercent}
}

// drainRefusal refuses a window that would drain a job the Flink
// Kubernetes Operator runs: such a job is suspended through its resource,
// which takes a savepoint without draining, so the drain asked for would
// silently not happen.
func drainRefusal(jobs []core.JobTarget, p SavepointPolicy) error {
	var keys []string
	for _, j := range jobs {
		if j.Restart.Kind == inventory.RestartOperatorResume && p.drains(j) {
			keys = append(keys, j.Key)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	return newInvalidInputError("drain is asked for (policy.savepoint.drain or drainOnStop) for jobs the Flink Kubernetes Operator runs, " +
		"which are suspended through their resource without draining, so no job is stopped: " + strings.Join(keys, ", ") +
		". Set drainOnStop: false on them in the inventory, or leave policy.savepoint.drain off")
}

// scopeRefusal is the non-retryable error a window, and its plan, fail
// with when the scope does not resolve (found.Unresolved names what) or
// selects no job the window could stop and bring back; nil otherwise.
func scopeRefusal(found core.DiscoverJobsResult) error {
	if len(found.Unresolved) > 0 {
		return newInvalidInputError("the scope does not resolve, so no job is stopped: " + strings.Join(found.Unresolved, "; "))
	}
	if len(found.Jobs) > 0 {
		return nil
	}
	msg := "the scope selects no job a window can stop and restart, so no job is stopped: "
	switch {
	case len(found.Skipped) > 0:
		parts := make([]string, 0, maxSkippedListed)
		for i, s := range found.Skipped {
			if i == maxSkippedListed {
				parts = append(parts, fmt.Sprintf("and %d more", len(found.Skipped)-maxSkippedListed))
				break
			}
			parts = append(parts, s.Key+": "+s.Reason)
		}
		msg += fmt.Sprintf("the %d running job(s) in scope are left alone (%s)", len(found.Skipped), strings.Join(parts, "; "))
	case len(found.Clusters) > 0:
		ids := make([]string, 0, len(found.Clusters))
		for _, c := range found.Clusters {
			ids = append(ids, c.ClusterID)
		}
		msg += "no job on the clusters in scope (" + strings.Join(ids, ", ") + ") both runs and passes scope.includeJobs and scope.excludeJobs"
	default:
		msg += "the inventory has no Flink cluster"
	}
	return newInvalidInputError(msg)
}

// restartWaves groups the keys into restart waves, in key order: the
// canary wave first (CanarySize jobs), then waves of WaveSize (all the
// remaining jobs when zero). keys must be sorted.
func restartWaves(keys []string, p RestartPolicy) [][]string {
	capacity := func(wave int) int {
		if wave == 0 && p.CanarySize > 0 {
			return p.CanarySize
		}
		return p.WaveSize
	}
	var waves [][]string
	for _, k := range keys {
		w := len(waves) - 1
		if w < 0 || capacity(w) > 0 && len(waves[w]) >= capacity(w) {
			waves = append(waves, nil)
			w++
		}
		waves[w] = append(waves[w], k)
	}
	return waves
}

// pickDrillCanary is the job whose savepoint a window drills before any
// other job stops (policy.drill.canary): the one policy.drill.canaryJob
// names, else the first in jobs' order with a drill recipe.
func pickDrillCanary(jobs []core.JobTarget, want string) (string, error) {
	for _, j := range jobs {
		if j.Drillable && (want == "" || j.Key == want) {
			return j.Key, nil
		}
	}
	if want != "" {
		return "", newInvalidInputError(fmt.Sprintf("policy.drill.canaryJob=%q is not a running job of this window with a drill recipe (inventory jobs[].drill); name one, or leave canaryJob empty to take the first", want))
	}
	return "", newInvalidInputError("policy.drill.canary is on, but no job in this window's scope has a drill recipe (inventory jobs[].drill): add one, or turn the canary drill off")
}

// restartFootprint is what the quota projection needs of a job to restart:
// its old job's checkpoint dir, measured, and its savepoint's files, when
// known.
func restartFootprint(t core.JobTarget, savepointFiles int64, measured *capacity.Footprint) capacity.RestartFootprintInput {
	dir := ""
	if t.CheckpointDir != "" {
		dir = strings.TrimRight(t.CheckpointDir, "/") + "/" + t.JobID
	}
	return capacity.RestartFootprintInput{Key: t.Key, Tenant: t.Tenant, CheckpointDir: dir, SavepointFiles: savepointFiles, Measured: measured}
}

// checkInput asks CheckQuota for the tenants' quota under the policy and,
// when restart lists jobs, whether their restart fits.
func (q QuotaPolicy) checkInput(tenants []inventory.Tenant, restart []capacity.RestartFootprintInput) capacity.CheckQuotaInput {
	return capacity.CheckQuotaInput{
		Tenants: tenants, WarningPercent: q.WarningPercent, CriticalPercent: q.CriticalPercent,
		Restart: restart, SafetyMargin: q.SafetyMargin, DefaultRetention: q.DefaultRetention,
	}
}
