package workflows

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/drills"
	"github.com/flinkmaint/flinkmaint/activities/windows"
)

// WindowPlanWorkflowType is the dry run of a maintenance window
// (`flinkmaint window plan`).
const WindowPlanWorkflowType = "WindowPlan"

// KindWindowPlan is the SearchAttrKind of a window plan; `window list`
// shows windows only.
const KindWindowPlan = "window-plan"

// WindowPlanWorkflowID names one plan of a window; nonce keeps plans of
// the same window file apart.
func WindowPlanWorkflowID(windowID, nonce string) string {
	return "window-plan/" + windowID + "/" + nonce
}

// WindowPlanInput asks what a window would do.
type WindowPlanInput struct {
	Window WindowInput `json:"window"`
}

// WindowPlan is what a window would do, read from the inventory, Flink and
// storage without changing anything: the jobs it would stop and restart,
// in which order, the quota projection and how long it may take.
type WindowPlan struct {
	WindowID string     `json:"windowId"`
	Reason   string     `json:"reason"`
	Ticket   string     `json:"ticket,omitempty"`
	Scope    core.Scope `json:"scope"`
	// Policy is the window's policy with its defaults applied.
	Policy  WindowPolicy      `json:"policy"`
	Tenants []PlanTenant      `json:"tenants"`
	Jobs    []PlanJob         `json:"jobs"`
	Skipped []core.SkippedJob `json:"skipped,omitempty"`
	// DrillCanary is the job stopped first and drilled on the drill
	// cluster before any other job stops (policy.drill.canary).
	DrillCanary string       `json:"drillCanary,omitempty"`
	Waves       []PlanWave   `json:"waves"`
	Quota       []PlanQuota  `json:"quota"`
	Duration    PlanDuration `json:"duration"`
	Notes       []string     `json:"notes,omitempty"`
}

// planRehearsal says what policy.rehearse would do with job j.
func planRehearsal(p RehearsePolicy, j core.JobTarget) string {
	switch {
	case !p.on():
		return ""
	case !j.Drillable:
		return "not rehearsed: no drill recipe"
	case !slices.Contains(j.DrillBuilds, p.FlinkVersion):
		return "not rehearsed: no build for Flink " + p.FlinkVersion
	}
	return "rehearsed on Flink " + p.FlinkVersion
}

// PlanTenant is one tenant in scope.
type PlanTenant struct {
	Name     string   `json:"name"`
	Root     string   `json:"root"`
	Clusters []string `json:"clusters"`
	Jobs     int      `json:"jobs"`
	Skipped  int      `json:"skipped"`
}

// PlanJob is one job the window would stop with a savepoint and restart.
type PlanJob struct {
	Key          string `json:"key"`
	Tenant       string `json:"tenant"`
	ClusterID    string `json:"clusterId"`
	KubeCluster  string `json:"kubeCluster,omitempty"`
	JobName      string `json:"jobName"`
	JobID        string `json:"jobId"`
	RestartKind  string `json:"restartKind"`
	SavepointDir string `json:"savepointDir,omitempty"`
	// Wave is the restart wave, assuming every savepoint succeeds (the
	// window assigns waves to the jobs whose savepoint it has).
	Wave        int  `json:"wave"`
	DrillCanary bool `json:"drillCanary,omitempty"`
	// Rehearsal says whether policy.rehearse would rehearse the job, and
	// why not.
	Rehearsal string `json:"rehearsal,omitempty"`
}

// PlanWave is one restart wave, in order; wave 0 is the canary when
// policy.restart.canarySize is set.
type PlanWave struct {
	Wave          int      `json:"wave"`
	Canary        bool     `json:"canary,omitempty"`
	Jobs          []string `json:"jobs"`
	Concurrency   int      `json:"concurrency"`
	FailureBudget int      `json:"failureBudget"`
}

// PlanQuota is a tenant's quota now and after the restarts.
type PlanQuota struct {
	capacity.TenantQuota
	// ProjectedUsed is the namespace in use once the restarts wrote what
	// they are projected to write: used now plus ProjectedFiles.
	ProjectedUsed int64 `json:"projectedUsed"`
	// PreflightPause: the tenant is above the critical watermark now, or
	// its jobs' restart would not fit its quota, so the window's preflight
	// pauses for a decision before any job stops.
	PreflightPause bool `json:"preflightPause,omitempty"`
}

// Steps of a job whose time past windows measured (PlanPhase.Step).
const (
	PlanStepSavepoint = "savepoint" // a JobSavepoint child: stop with savepoint and verify
	PlanStepRestart   = "restart"   // a JobRestart child: restore and wait until healthy
)

// PlanPhase is one phase of the window in the duration estimate.
type PlanPhase struct {
	Phase string `json:"phase"`
	// Step is the per-job step whose time sets the phase's, if any.
	Step string `json:"step,omitempty"`
	// Rounds × Each is Bound: Rounds is how many jobs the phase's longest
	// path runs one after another (ceil(jobs / concurrency), summed over
	// waves), Each the most one job may take under the policy.
	Rounds int      `json:"rounds,omitempty"`
	Each   Duration `json:"each,omitempty"`
	Bound  Duration `json:"bound,omitempty"`
	Basis  string   `json:"basis"`
	// Wait is what the phase may wait for that no bound holds: a person;
	// Until says it in a word or two.
	Wait  string `json:"wait,omitempty"`
	Until string `json:"until,omitempty"`
	// Typical is Rounds × TypicalEach, the median time the step took in
	// past windows; zero when not measured.
	TypicalEach  Duration `json:"typicalEach,omitempty"`
	Typical      Duration `json:"typical,omitempty"`
	TypicalBasis string   `json:"typicalBasis,omitempty"`
}

// PlanDuration estimates how long the window takes.
type PlanDuration struct {
	Method string      `json:"method"`
	Phases []PlanPhase `json:"phases"`
	// Bound is the sum of the phases' bounds: the longest the window's own
	// work may take when every job takes its full timeout, the waits for
	// people not counted.
	Bound Duration `json:"bound"`
	// Typical is savepoint-all plus the restart at their typical times,
	// set only when both are measured.
	Typical Duration `json:"typical,omitempty"`
	// Waits are what the window waits for that no bound holds.
	Waits []string `json:"waits,omitempty"`
}

// planMethod says how PlanDuration is computed.
const planMethod = "bound: per phase, rounds × the longest one job may take under the policy " +
	"(savepoint: policy.savepoint.timeout, one attempt; restart: runningTimeout + checkpointTimeout + soak), " +
	"rounds = ceil(jobs / concurrency), summed over the restart waves; every job taking its full timeout is the worst case, not the expected one. " +
	"typical: the same rounds × the median time the step took for these jobs in past windows, when Temporal still records them. " +
	"Waits for people (the network change, decisions, the cleanup approval) are not bounded."

// SetTypical records the median time a step took per job in past windows,
// and what that median is of.
func (d *PlanDuration) SetTypical(step string, each time.Duration, basis string) {
	for i := range d.Phases {
		if p := &d.Phases[i]; p.Step == step {
			p.TypicalEach, p.Typical, p.TypicalBasis = Duration(each), Duration(time.Duration(p.Rounds)*each), basis
		}
	}
	d.Typical = 0
	for _, p := range d.Phases {
		if p.Step == "" {
			continue
		}
		if p.TypicalEach == 0 {
			d.Typical = 0
			return
		}
		d.Typical += p.Typical
	}
}

// WindowPlanWorkflow is the dry run of a window: it validates the window
// file as the window does, resolves its scope on the inventory (refusing
// what the window's preflight would refuse), projects the quota and lays
// out the savepoints, the canary and the waves. It stops nothing and
// writes nothing.
func WindowPlanWorkflow(ctx workflow.Context, in WindowPlanInput) (*WindowPlan, error) {
	w := in.Window
	if w.Resume != nil {
		return nil, newInvalidInputError("resume is internal state of a running window: remove it")
	}
	w.Policy.ApplyDefaults()
	if err := w.Validate(); err != nil {
		return nil, newInvalidInputError(err.Error())
	}
	var a *windows.Activities
	var drill *drills.Activities
	var capa *capacity.Activities
	actx := workflow.WithActivityOptions(ctx, planActivityOptions())
	var found core.DiscoverJobsResult
	if err := workflow.ExecuteActivity(actx, a.DiscoverJobs, core.DiscoverJobsInput{Scope: w.Scope}).Get(ctx, &found); err != nil {
		return nil, fmt.Errorf("inventory: %w", err)
	}
	if err := scopeRefusal(found); err != nil {
		return nil, err
	}
	if err := drainRefusal(found.Jobs, w.Policy.Savepoint); err != nil {
		return nil, err
	}
	plan := &WindowPlan{WindowID: w.WindowID, Reason: w.Reason, Ticket: w.Ticket, Scope: w.Scope, Policy: w.Policy, Skipped: found.Skipped}

	restart := make([]capacity.RestartFootprintInput, 0, len(found.Jobs))
	for _, j := range found.Jobs {
		restart = append(restart, restartFootprint(j, 0, nil))
	}
	var q capacity.CheckQuotaResult
	if err := workflow.ExecuteActivity(actx, capa.CheckQuota, w.Policy.Quota.checkInput(found.Tenants, restart)).Get(ctx, &q); err != nil {
		return nil, fmt.Errorf("quota check: %w", err)
	}
	for _, t := range q.Tenants {
		pq := PlanQuota{TenantQuota: t, ProjectedUsed: t.NamespaceUsed + t.ProjectedFiles,
			PreflightPause: (t.Level == "critical" || !t.RestartAllowed) && !w.Policy.Quota.IgnorePreflightWatermark}
		plan.Quota = append(plan.Quota, pq)
	}
	plan.Notes = append(plan.Notes, "the quota projection counts the files the restarted jobs write (policy.quota.safetyMargin included), "+
		"not the savepoints the window takes first: their size is known only once they are taken, and the quota gate counts them then")

	if w.Policy.Drill.Canary {
		key, err := pickDrillCanary(found.Jobs, w.Policy.Drill.CanaryJob)
		if err != nil {
			return nil, err
		}
		plan.DrillCanary = key
		if err := workflow.ExecuteActivity(actx, drill.CheckDrillCluster).Get(ctx, nil); err != nil {
			plan.Notes = append(plan.Notes, "the canary drill cannot run now: "+errorText(err)+
				"; the window would pause for a decision (canary-drill) before stopping any job")
		}
	}

	keys := make([]string, 0, len(found.Jobs))
	for _, j := range found.Jobs {
		keys = append(keys, j.Key)
	}
	sort.Strings(keys)
	waves := restartWaves(keys, w.Policy.Restart)
	wave := map[string]int{}
	for i, inWave := range waves {
		for _, k := range inWave {
			wave[k] = i
		}
		plan.Waves = append(plan.Waves, PlanWave{Wave: i, Canary: i == 0 && w.Policy.Restart.CanarySize > 0,
			Jobs: inWave, Concurrency: w.Policy.Restart.Concurrency, FailureBudget: w.Policy.Restart.FailureBudget})
	}
	for _, j := range found.Jobs {
		plan.Jobs = append(plan.Jobs, PlanJob{Key: j.Key, Tenant: j.Tenant, ClusterID: j.ClusterID, KubeCluster: j.KubeCluster, JobName: j.JobName,
			JobID: j.JobID, RestartKind: string(j.Restart.Kind), SavepointDir: j.SavepointDir, Wave: wave[j.Key], DrillCanary: j.Key == plan.DrillCanary,
			Rehearsal: planRehearsal(w.Policy.Rehearse, j)})
	}
	plan.Tenants = planTenants(found)
	plan.Duration = planDuration(&w, len(found.Jobs), waves, plan.DrillCanary != "", plan.Quota)
	return plan, nil
}

// planTenants counts the jobs and skipped jobs of each tenant in scope.
func planTenants(found core.DiscoverJobsResult) []PlanTenant {
	out := make([]PlanTenant, 0, len(found.Tenants))
	index := map[string]int{}
	for _, t := range found.Tenants {
		index[t.Name] = len(out)
		out = append(out, PlanTenant{Name: t.Name, Root: t.Root})
	}
	clusterTenant := map[string]string{}
	for _, c := range found.Clusters {
		clusterTenant[c.ClusterID] = c.Tenant
		if i, ok := index[c.Tenant]; ok {
			out[i].Clusters = append(out[i].Clusters, c.ClusterID)
		}
	}
	for _, j := range found.Jobs {
		if i, ok := index[j.Tenant]; ok {
			out[i].Jobs++
		}
	}
	for _, s := range found.Skipped {
		cluster, _, _ := strings.Cut(s.Key, "/")
		if i, ok := index[clusterTenant[cluster]]; ok {
			out[i].Skipped++
		}
	}
	return out
}

// planDuration bounds each phase of the window under its policy; see
// planMethod.
func planDuration(w *WindowInput, jobs int, waves [][]string, drillCanary bool, quota []PlanQuota) PlanDuration {
	p := w.Policy
	var phases []PlanPhase
	add := func(ph PlanPhase) {
		ph.Bound = Duration(time.Duration(ph.Rounds) * ph.Each.D())
		phases = append(phases, ph)
	}

	pre := PlanPhase{Phase: WindowPhasePreflight, Basis: "inventory, quota and the manifest: seconds"}
	var critical []string
	for _, q := range quota {
		if q.PreflightPause {
			critical = append(critical, q.Tenant)
		}
	}
	if len(critical) > 0 {
		pre.Wait = "a decision: tenants above the critical watermark or too full for the restart before any job stops (" + strings.Join(critical, ", ") +
			"); policy.quota.ignorePreflightWatermark goes on without one"
		pre.Until = "decided"
	}
	add(pre)

	stops := jobs
	if drillCanary {
		d := p.Drill
		add(PlanPhase{Phase: "canary-drill", Rounds: 1, Each: Duration(p.Savepoint.Timeout.D() + d.RunningTimeout.D() + d.CheckpointTimeout.D() + d.Soak.D()),
			Basis: fmt.Sprintf("the canary's savepoint (policy.savepoint.timeout %s) and its restore on the drill cluster (policy.drill.runningTimeout %s + checkpointTimeout %s + soak %s)",
				p.Savepoint.Timeout, d.RunningTimeout, d.CheckpointTimeout, d.Soak)})
		stops--
	}
	rounds := ceilDiv(stops, p.Savepoint.Concurrency)
	add(PlanPhase{Phase: WindowPhaseSavepointAll, Step: PlanStepSavepoint, Rounds: rounds, Each: p.Savepoint.Timeout,
		Basis: fmt.Sprintf("ceil(%d jobs / policy.savepoint.concurrency %d) = %d round(s) × policy.savepoint.timeout %s", stops, p.Savepoint.Concurrency, rounds, p.Savepoint.Timeout)})

	n := p.Network
	gate := PlanPhase{Phase: WindowPhaseNetworkGate}
	switch {
	case n.Skip:
		gate.Basis = "skipped (policy.network.skip)"
	case n.AutoConfirmAfter > 0:
		gate.Rounds, gate.Each = 1, n.AutoConfirmAfter
		gate.Basis = fmt.Sprintf("confirms itself after policy.network.autoConfirmAfter %s (demos and rehearsals only)", n.AutoConfirmAfter)
	default:
		then := "keeps waiting"
		if n.OnDeadline == OnDeadlineAbort {
			then = "the window aborts, leaving the jobs stopped"
		}
		gate.Basis = fmt.Sprintf("until confirmed; reminders every %s, deadline %s, then %s", n.ReminderInterval, n.Deadline, then)
		gate.Wait = fmt.Sprintf("the network change: flinkmaint window confirm-network-change %s", w.WindowID)
		gate.Until = "confirmed"
	}
	add(gate)
	probe := "storage and Flink"
	if n.ProbeKubernetes {
		probe = "storage, Flink and the Kubernetes API"
	}
	add(PlanPhase{Phase: "probe-endpoints", Rounds: 1, Each: n.ProbeTimeout,
		Basis: fmt.Sprintf("%s answer again: usually seconds; retried up to policy.network.probeTimeout %s, then it pauses for a decision", probe, n.ProbeTimeout)})

	if p.Drill.ProveSavepoints {
		add(PlanPhase{Phase: WindowPhaseProveSavepoints, Basis: fmt.Sprintf("not estimated: reads every file the %d savepoints reference, in batches of %d", jobs, proofBatch)})
	}

	qg := PlanPhase{Phase: WindowPhaseQuotaGate, Basis: "one quota check: seconds"}
	if p.Quota.SkipGate {
		qg.Basis = "skipped (policy.quota.skipGate)"
	} else {
		var short []string
		for _, q := range quota {
			if !q.RestartAllowed {
				short = append(short, q.Tenant)
			}
		}
		if len(short) > 0 {
			qg.Wait = "a decision: the restart does not fit the namespace quota of " + strings.Join(short, ", ") + " as projected now"
			qg.Until = "decided"
		}
	}
	add(qg)

	r := p.Restart
	rounds, sizes := 0, make([]string, 0, len(waves))
	for i, inWave := range waves {
		rounds += ceilDiv(len(inWave), r.Concurrency)
		label := fmt.Sprintf("wave %d: %d", i, len(inWave))
		if i == 0 && r.CanarySize > 0 {
			label = fmt.Sprintf("canary: %d", len(inWave))
		}
		sizes = append(sizes, label)
	}
	add(PlanPhase{Phase: WindowPhaseRestart, Step: PlanStepRestart, Rounds: rounds, Each: Duration(r.RunningTimeout.D() + r.CheckpointTimeout.D() + r.Soak.D()),
		Basis: fmt.Sprintf("%d wave(s) (%s), one after another; the sum of ceil(jobs in the wave / policy.restart.concurrency %d) = %d round(s) × (runningTimeout %s + checkpointTimeout %s + soak %s)",
			len(waves), strings.Join(sizes, ", "), r.Concurrency, rounds, r.RunningTimeout, r.CheckpointTimeout, r.Soak)})

	c := PlanPhase{Phase: WindowPhaseCleanup}
	switch p.Cleanup.Mode {
	case CleanupModeSkip:
		c.Basis = "skipped (policy.cleanup.mode skip)"
	case ModePlanAndApprove:
		c.Basis = fmt.Sprintf("not estimated: a governance plan lists the tenants' roots and reads every retained _metadata; then it waits up to policy.cleanup.approvalTimeout %s", p.Cleanup.ApprovalTimeout)
		c.Wait = fmt.Sprintf("the cleanup approval: flinkmaint governance status %s shows the plan and its sha256, then flinkmaint governance approve %s --plan-sha256 SHA (the window's jobs are back by then)", WindowCleanupWorkflowID(w.WindowID), WindowCleanupWorkflowID(w.WindowID))
		c.Until = "approved"
	default:
		c.Basis = fmt.Sprintf("not estimated: a governance run (mode %s) lists the tenants' roots and reads every retained _metadata; the jobs are back by then", p.Cleanup.Mode)
	}
	add(c)

	d := PlanDuration{Method: planMethod, Phases: phases}
	for _, ph := range phases {
		d.Bound += ph.Bound
		if ph.Wait != "" {
			d.Waits = append(d.Waits, ph.Phase+": "+ph.Wait)
		}
	}
	return d
}

func ceilDiv(n, d int) int {
	if n <= 0 || d <= 0 {
		return 0
	}
	return (n + d - 1) / d
}
