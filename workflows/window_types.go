package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/capacity"
	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/activities/windows"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// WindowInput starts a maintenance window. It is recorded in history, so
// every behavioural setting lives here (with defaults applied by the
// workflow), not in the worker's config. Resume carries progress across
// continue-as-new.
type WindowInput struct {
	// WindowID names the window once and for all: its workflow ID is
	// window-<windowId>, never reused. No slashes or spaces, e.g.
	// 2026-12-01-dc-network. Required.
	WindowID string `json:"windowId"`
	// Reason says why the window runs; the report records it. Required.
	Reason string `json:"reason"`
	// Ticket is the change ticket the window belongs to, shown in its memo
	// and report.
	Ticket string `json:"ticket,omitempty"`
	// Scope selects the jobs the window stops and restarts.
	Scope core.Scope `json:"scope"`
	// Policy is how the window behaves.
	Policy WindowPolicy `json:"policy"`
	// OverrideFreeze lets the window start inside a freeze.
	OverrideFreeze *FreezeOverride `json:"overrideFreeze,omitempty"`
	Resume         *WindowState    `json:"resume,omitempty"`
}

// WindowPolicy is how a window behaves. Zero values get safe defaults.
type WindowPolicy struct {
	// ManifestDir is where the manifest and report are written (a URI the
	// worker can write, e.g. hdfs://nn/flinkmaint/windows). Required.
	ManifestDir string `json:"manifestDir"`

	Savepoint SavepointPolicy `json:"savepoint"`
	Network   NetworkPolicy   `json:"network"`
	Quota     QuotaPolicy     `json:"quota"`
	Restart   RestartPolicy   `json:"restart"`
	Cleanup   CleanupPolicy   `json:"cleanup"`
	History   HistoryPolicy   `json:"history"`
	Drill     DrillPolicy     `json:"drill"`
	Rehearse  RehearsePolicy  `json:"rehearse"`
}

// RehearsePolicy rehearses a migration before the window stops anything:
// a savepoint of every job in scope, taken without stopping it, restored
// with the job's build for the target Flink version (its drill recipe's
// flinkVersions) on a drill cluster of that version (see
// JobRehearsalWorkflow). Off unless flinkVersion is set.
type RehearsePolicy struct {
	// FlinkVersion is the version the fleet moves to, as major.minor
	// ("2.3").
	FlinkVersion string `json:"flinkVersion,omitempty"`
	// Concurrency bounds the rehearsals at once (default 2: each takes
	// slots on the drill cluster).
	Concurrency int `json:"concurrency,omitempty"`
	// RunningTimeout bounds the wait for a copy to be RUNNING; by default
	// policy.restart.runningTimeout.
	RunningTimeout Duration `json:"runningTimeout,omitempty"`
	// CheckpointTimeout bounds the wait for a copy's first completed
	// checkpoint; by default policy.restart.checkpointTimeout.
	CheckpointTimeout Duration `json:"checkpointTimeout,omitempty"`
	// Soak is how long a copy must run without a restart to be healthy; by
	// default policy.restart.soak.
	Soak Duration `json:"soak,omitempty"`
}

// on says the window rehearses.
func (p RehearsePolicy) on() bool { return p.FlinkVersion != "" }

// DrillPolicy proves the window's savepoints before the window relies on
// them. Both checks are off by default.
type DrillPolicy struct {
	// ProveSavepoints runs tier 1 of the restore drill on every savepoint
	// the window took (every file its _metadata references exists and holds
	// the bytes its handles read), after the network change and before any
	// restart: a savepoint that lost files on the way pauses the window.
	ProveSavepoints bool `json:"proveSavepoints,omitempty"`
	// Canary stops one job first and restores a copy of it from its
	// savepoint on the drill cluster (tier 2, with the job's drill recipe)
	// before any other job is stopped.
	Canary bool `json:"canary,omitempty"`
	// CanaryJob names the canary (cluster/name); by default it is the first
	// job in scope, in key order, with a drill recipe.
	CanaryJob string `json:"canaryJob,omitempty"`
	// RunningTimeout bounds the wait for the canary's copy to be RUNNING;
	// by default policy.restart.runningTimeout.
	RunningTimeout Duration `json:"runningTimeout,omitempty"`
	// CheckpointTimeout bounds the wait for the copy's first completed
	// checkpoint; by default policy.restart.checkpointTimeout.
	CheckpointTimeout Duration `json:"checkpointTimeout,omitempty"`
	// Soak is how long the copy must run without a restart to be healthy;
	// by default policy.restart.soak.
	Soak Duration `json:"soak,omitempty"`
}

// HistoryPolicy bounds each run's event history: a run hands over to a
// fresh one (continue-as-new, carrying the window's state) when the server
// suggests it or when maxEventsPerRun is reached, whichever comes first.
type HistoryPolicy struct {
	// MaxEventsPerRun is the event count at which a run hands over (500
	// to 40000; Temporal's hard limit is 51200).
	MaxEventsPerRun int `json:"maxEventsPerRun"`
}

// CleanupPolicy governs the post-restart cleanup: a Governance child run
// over the window's tenants.
type CleanupPolicy struct {
	// Mode: plan-and-approve (default: the plan waits for
	// `flinkmaint governance approve`), plan (dry run only), auto, or skip.
	Mode string `json:"mode"`
	// Policy are the cleanup rules; zero values take Governance's defaults.
	Policy GovernancePolicy `json:"policy"`
	// ApprovalTimeout bounds the wait for approval; default 24h.
	ApprovalTimeout Duration `json:"approvalTimeout,omitempty"`
}

// SavepointPolicy governs the savepoint-all phase.
type SavepointPolicy struct {
	// Concurrency is how many jobs are stopped with a savepoint at once
	// (1 to 256).
	Concurrency int `json:"concurrency"`
	// Timeout bounds one job's stop with savepoint.
	Timeout Duration `json:"timeout"`
	// Format is the savepoint format: CANONICAL (portable across state
	// backends) or NATIVE (faster, the backend's own).
	Format string `json:"format"`
	// OnFailure: pause (default) waits for an operator decision; skip
	// leaves the job running and goes on. A job is never cancelled
	// without a savepoint.
	OnFailure string `json:"onFailure"`
	// Drain stops jobs with drain (default false): the sources end and
	// Flink emits MAX_WATERMARK before the savepoint, so every event-time
	// window and timer fires now, on incomplete data, and after the
	// restart the events of those windows arrive late. For jobs being
	// retired or moved whose results tolerate that; a job's drainOnStop in
	// the inventory overrides it.
	Drain bool `json:"drain,omitempty"`
}

// drains says whether the job is stopped with drain: its inventory
// setting, else the policy's.
func (p SavepointPolicy) drains(t core.JobTarget) bool {
	if t.DrainOnStop != nil {
		return *t.DrainOnStop
	}
	return p.Drain
}

// NetworkPolicy governs the wait for the infrastructure change.
type NetworkPolicy struct {
	// Skip goes straight on after savepoint-all (no change to wait for).
	Skip bool `json:"skip,omitempty"`
	// ReminderInterval is how often the people on call are reminded that
	// the window waits for the confirmation.
	ReminderInterval Duration `json:"reminderInterval"`
	// Deadline is how long the window waits for the confirmation before
	// onDeadline applies.
	Deadline Duration `json:"deadline"`
	// OnDeadline: wait (default) keeps waiting and says so; abort ends.
	OnDeadline string `json:"onDeadline"`
	// AutoConfirmAfter confirms by itself after this long, recording that
	// it did. For demos and rehearsals only; zero disables it.
	AutoConfirmAfter Duration `json:"autoConfirmAfter,omitempty"`
	// ProbeTimeout bounds the reachability probes after confirmation.
	ProbeTimeout Duration `json:"probeTimeout"`
	// ProbeKubernetes also probes the Kubernetes API after confirmation,
	// besides storage and the Flink clusters.
	ProbeKubernetes bool `json:"probeKubernetes,omitempty"`
}

// QuotaPolicy governs the preflight watermark check and the restart gate.
type QuotaPolicy struct {
	// WarningPercent is the namespace-quota use (files and directories)
	// at which preflight warns about a tenant.
	WarningPercent float64 `json:"warningPercent"`
	// CriticalPercent is the use at which preflight pauses the window
	// before it stops anything (see ignorePreflightWatermark).
	CriticalPercent float64 `json:"criticalPercent"`
	// IgnorePreflightWatermark starts stopping jobs even when a tenant is
	// already above the critical watermark.
	IgnorePreflightWatermark bool `json:"ignorePreflightWatermark,omitempty"`
	// SafetyMargin is added to the projected files of the restart: 0.2 is
	// +20%.
	SafetyMargin float64 `json:"safetyMargin"`
	// DefaultRetention is a job's retained checkpoints
	// (state.checkpoints.num-retained) when it cannot be read.
	DefaultRetention int `json:"defaultRetention"`
	// SkipGate restarts without checking that the restart fits each
	// tenant's namespace quota; the report notes it.
	SkipGate bool `json:"skipGate,omitempty"`
}

// RestartPolicy governs the staged restart.
type RestartPolicy struct {
	// CanarySize is how many jobs restart first, alone, as the canary
	// wave.
	CanarySize int `json:"canarySize"`
	// WaveSize is how many jobs each wave after the canary restarts; 0:
	// all the remaining jobs in one wave.
	WaveSize int `json:"waveSize"`
	// Concurrency is how many jobs of a wave restart at once (1 to 256).
	Concurrency int `json:"concurrency"`
	// FailureBudget is how many jobs of a wave may fail before the window
	// pauses for a decision; default 0.
	FailureBudget int `json:"failureBudget"`
	// RunningTimeout bounds the wait for a restarted job to be RUNNING.
	RunningTimeout Duration `json:"runningTimeout"`
	// CheckpointTimeout bounds the wait for a restarted job's first
	// checkpoint completed after its restore.
	CheckpointTimeout Duration `json:"checkpointTimeout"`
	// Soak is how long a restarted job must run without a restart to be
	// healthy.
	Soak Duration `json:"soak"`
	// Checks are metric thresholds read from Flink's REST API at the end
	// of the soak; each must pass for the job to count as healthy.
	Checks []windows.MetricCheck `json:"checks,omitempty"`
}

// checkProblems names what is wrong with the policy's checks.
func (p RestartPolicy) checkProblems(field string) []string {
	var out []string
	for i, c := range p.Checks {
		if err := c.Validate(fmt.Sprintf("%s.checks[%d]", field, i)); err != nil {
			out = append(out, err.Error())
		}
	}
	return out
}

// awaitHealthy is the health gate of one started job under the policy.
func (p RestartPolicy) awaitHealthy(restURL, jobID, savepoint string) windows.AwaitHealthyInput {
	return windows.AwaitHealthyInput{RESTURL: restURL, JobID: jobID, SavepointPath: savepoint,
		RunningTimeout: p.RunningTimeout.D(), CheckpointTimeout: p.CheckpointTimeout.D(), Soak: p.Soak.D(), Checks: p.Checks}
}

// Policy values.
const (
	OnFailurePause = "pause"
	OnFailureSkip  = "skip"

	// CleanupModeSkip leaves cleanup to scheduled governance.
	CleanupModeSkip = "skip"

	OnDeadlineWait  = "wait"
	OnDeadlineAbort = "abort"

	FormatCanonical = "CANONICAL"
	FormatNative    = "NATIVE"
)

// ApplyDefaults fills zero values with safe defaults.
func (p *WindowPolicy) ApplyDefaults() {
	s := &p.Savepoint
	setInt(&s.Concurrency, 4)
	setDur(&s.Timeout, 15*time.Minute)
	setStr(&s.Format, FormatCanonical)
	setStr(&s.OnFailure, OnFailurePause)
	n := &p.Network
	setDur(&n.ReminderInterval, 30*time.Minute)
	setDur(&n.Deadline, 24*time.Hour)
	setStr(&n.OnDeadline, OnDeadlineWait)
	setDur(&n.ProbeTimeout, 30*time.Minute)
	q := &p.Quota
	setFloat(&q.WarningPercent, 80)
	setFloat(&q.CriticalPercent, 90)
	setFloat(&q.SafetyMargin, 0.2)
	setInt(&q.DefaultRetention, 3)
	r := &p.Restart
	setInt(&r.CanarySize, 1)
	setInt(&r.Concurrency, 4)
	setDur(&r.RunningTimeout, 5*time.Minute)
	setDur(&r.CheckpointTimeout, 5*time.Minute)
	setDur(&r.Soak, 30*time.Second)
	setStr(&p.Cleanup.Mode, ModePlanAndApprove)
	setDur(&p.Cleanup.ApprovalTimeout, 24*time.Hour)
	setInt(&p.History.MaxEventsPerRun, 10000)
	if h := &p.Rehearse; h.on() {
		setInt(&h.Concurrency, 2)
		setDur(&h.RunningTimeout, r.RunningTimeout.D())
		setDur(&h.CheckpointTimeout, r.CheckpointTimeout.D())
		setDur(&h.Soak, r.Soak.D())
	}
	if d := &p.Drill; d.Canary {
		setDur(&d.RunningTimeout, r.RunningTimeout.D())
		setDur(&d.CheckpointTimeout, r.CheckpointTimeout.D())
		setDur(&d.Soak, r.Soak.D())
	}
}

// Validate returns every problem, each naming the field and what is valid:
// the rules of the window and of every policy it hands on (its cleanup
// run's), as the workflow applies them.
func (in *WindowInput) Validate() error { return in.validate(true) }

// validate checks the input; strict adds the checks of the scope's
// patterns and of the cleanup run's input (changeStrictWindow), which
// windows started before them did not have.
func (in *WindowInput) validate(strict bool) error {
	var errs []error
	bad := func(format string, args ...interface{}) { errs = append(errs, fmt.Errorf(format, args...)) }
	if in.WindowID == "" || strings.ContainsAny(in.WindowID, "/ \t\n") {
		bad("windowId %q: use a non-empty name without slashes or spaces, e.g. 2026-12-01-dc-network", in.WindowID)
	}
	if strings.TrimSpace(in.Reason) == "" {
		bad("reason is empty: say why this window runs (it is recorded in the report)")
	}
	if err := in.OverrideFreeze.validate("overrideFreeze"); err != nil {
		bad("%v", err)
	}
	p := in.Policy
	if p.ManifestDir == "" {
		bad("policy.manifestDir is empty: set a directory URI for the manifest and report, e.g. hdfs://nn:8020/flinkmaint/windows")
	}
	if p.Savepoint.Concurrency < 1 || p.Savepoint.Concurrency > 256 {
		bad("policy.savepoint.concurrency=%d: use 1..256", p.Savepoint.Concurrency)
	}
	if p.Savepoint.Format != FormatCanonical && p.Savepoint.Format != FormatNative {
		bad("policy.savepoint.format=%q: use CANONICAL or NATIVE", p.Savepoint.Format)
	}
	if p.Savepoint.OnFailure != OnFailurePause && p.Savepoint.OnFailure != OnFailureSkip {
		bad("policy.savepoint.onFailure=%q: use pause or skip (a job is never cancelled without a savepoint)", p.Savepoint.OnFailure)
	}
	if p.Network.OnDeadline != OnDeadlineWait && p.Network.OnDeadline != OnDeadlineAbort {
		bad("policy.network.onDeadline=%q: use wait or abort", p.Network.OnDeadline)
	}
	for _, d := range []struct {
		name string
		v    Duration
	}{
		{"policy.savepoint.timeout", p.Savepoint.Timeout}, {"policy.network.reminderInterval", p.Network.ReminderInterval},
		{"policy.network.deadline", p.Network.Deadline}, {"policy.network.probeTimeout", p.Network.ProbeTimeout},
		{"policy.network.autoConfirmAfter", p.Network.AutoConfirmAfter}, {"policy.restart.runningTimeout", p.Restart.RunningTimeout},
		{"policy.restart.checkpointTimeout", p.Restart.CheckpointTimeout}, {"policy.restart.soak", p.Restart.Soak},
		{"policy.drill.runningTimeout", p.Drill.RunningTimeout}, {"policy.drill.checkpointTimeout", p.Drill.CheckpointTimeout},
		{"policy.drill.soak", p.Drill.Soak}, {"policy.rehearse.runningTimeout", p.Rehearse.RunningTimeout},
		{"policy.rehearse.checkpointTimeout", p.Rehearse.CheckpointTimeout}, {"policy.rehearse.soak", p.Rehearse.Soak},
	} {
		if d.v < 0 {
			bad("%s=%s: use a positive duration", d.name, d.v)
		}
	}
	q := p.Quota
	if !(q.WarningPercent > 0 && q.WarningPercent <= q.CriticalPercent && q.CriticalPercent <= 100) {
		bad("policy.quota.warningPercent=%v, criticalPercent=%v: want 0 < warning <= critical <= 100", q.WarningPercent, q.CriticalPercent)
	}
	if q.SafetyMargin < 0 || q.SafetyMargin > 10 {
		bad("policy.quota.safetyMargin=%v: use 0..10 (0.2 = +20%%)", q.SafetyMargin)
	}
	switch p.Cleanup.Mode {
	case ModePlan, ModePlanAndApprove, ModeAuto, CleanupModeSkip:
	default:
		bad("policy.cleanup.mode=%q: use %s (default), %s, %s or %s", p.Cleanup.Mode, ModePlanAndApprove, ModePlan, ModeAuto, CleanupModeSkip)
	}
	for _, m := range p.Restart.checkProblems("policy.restart") {
		bad("%s", m)
	}
	r := p.Restart
	if r.CanarySize < 0 || r.WaveSize < 0 || r.FailureBudget < 0 {
		bad("policy.restart: canarySize=%d, waveSize=%d, failureBudget=%d must not be negative", r.CanarySize, r.WaveSize, r.FailureBudget)
	}
	if r.Concurrency < 1 || r.Concurrency > 256 {
		bad("policy.restart.concurrency=%d: use 1..256", r.Concurrency)
	}
	if d := p.Drill; d.CanaryJob != "" && !d.Canary {
		bad("policy.drill.canaryJob=%q is set but policy.drill.canary is false: turn the canary drill on, or drop canaryJob", d.CanaryJob)
	} else if c, n, ok := strings.Cut(d.CanaryJob, "/"); d.CanaryJob != "" && (!ok || c == "" || n == "") {
		bad("policy.drill.canaryJob=%q: use cluster/name, as in the window's job list", d.CanaryJob)
	}
	if h := p.Rehearse; h.on() && !inventory.IsFlinkMinorVersion(h.FlinkVersion) {
		bad("policy.rehearse.flinkVersion=%q: use the Flink version the fleet moves to as major.minor, such as \"2.3\"", h.FlinkVersion)
	} else if h.on() && (h.Concurrency < 1 || h.Concurrency > 64) {
		bad("policy.rehearse.concurrency=%d: use 1..64", h.Concurrency)
	} else if !h.on() && (h.Concurrency != 0 || h.RunningTimeout != 0 || h.CheckpointTimeout != 0 || h.Soak != 0) {
		bad("policy.rehearse: set flinkVersion to rehearse; the other fields mean nothing without it")
	}
	if h := p.History.MaxEventsPerRun; h < minEventsPerRun || h > maxEventsPerRun {
		bad("policy.history.maxEventsPerRun=%d: use %d..%d (a run drains its running children before it hands over, so it needs headroom below Temporal's limit of 51200)",
			h, minEventsPerRun, maxEventsPerRun)
	}
	if strict {
		errs = append(errs, in.handedOnProblems()...)
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(errs...)
}

// Bounds of policy.history.maxEventsPerRun.
const (
	minEventsPerRun = 500
	maxEventsPerRun = 40000
)

func setInt(v *int, d int) {
	if *v == 0 {
		*v = d
	}
}

func setStr(v *string, d string) {
	if *v == "" {
		*v = d
	}
}

func setFloat(v *float64, d float64) {
	if *v == 0 {
		*v = d
	}
}

func setDur(v *Duration, d time.Duration) {
	if *v == 0 {
		*v = Duration(d)
	}
}

// Window phases, in order.
const (
	WindowPhasePreflight = "preflight"
	// WindowPhaseRehearse runs with policy.rehearse.flinkVersion.
	WindowPhaseRehearse     = "rehearse"
	WindowPhaseSavepointAll = "savepoint-all"
	WindowPhaseNetworkGate  = "network-gate"
	// WindowPhaseProveSavepoints runs with policy.drill.proveSavepoints.
	WindowPhaseProveSavepoints = "prove-savepoints"
	WindowPhaseQuotaGate       = "quota-gate"
	WindowPhaseRestart         = "restart"
	WindowPhaseCleanup         = "cleanup"
	WindowPhaseReport          = "report"
	WindowPhaseCompleted       = "completed"
	WindowPhaseAborted         = "aborted"
)

// Step states of a job's savepoint and restart.
const (
	StepPending = "pending"
	StepRunning = "running"
	StepDone    = "done"
	StepFailed  = "failed"
	StepSkipped = "skipped"
)

// JobProgress is one job's way through the window.
type JobProgress struct {
	Target core.JobTarget `json:"target"`

	SavepointState string `json:"savepointState"`
	SavepointPath  string `json:"savepointPath,omitempty"`
	SavepointFiles int64  `json:"savepointFiles,omitempty"`
	// Footprint is what the job's checkpoints cost, measured in preflight
	// while it ran; the restart gate projects from it.
	Footprint         *capacity.Footprint `json:"footprint,omitempty"`
	SavepointAttempts int                 `json:"savepointAttempts,omitempty"`
	SavepointError    string              `json:"savepointError,omitempty"`
	// StoppedWithoutSavepoint: the savepoint failed and the job is no longer
	// running (it finished or was cancelled without one this window knows).
	StoppedWithoutSavepoint bool `json:"stoppedWithoutSavepoint,omitempty"`
	// Seen is what the window last learned of the job when its savepoint
	// or restart failed: running, stopped, unanswered (its cluster did not
	// answer) or unknown (activities.JobSeen*); SeenState is Flink's job
	// state when it was read. Cleared when the step succeeds.
	Seen      string `json:"seen,omitempty"`
	SeenState string `json:"seenState,omitempty"`
	// SavepointRecovered says how the savepoint was found when Flink had
	// forgotten the stop operation.
	SavepointRecovered string `json:"savepointRecovered,omitempty"`
	// SavepointFormatNote says why the savepoint is not in the format the
	// policy asked for (a ForSt job takes NATIVE only).
	SavepointFormatNote string    `json:"savepointFormatNote,omitempty"`
	StoppedAt           time.Time `json:"stoppedAt,omitempty"`
	// ProofState is the storage proof of the savepoint
	// (policy.drill.proveSavepoints): done when it passed, failed with
	// ProofError saying which files fail, or waived by an operator.
	ProofState string `json:"proofState,omitempty"`
	ProofError string `json:"proofError,omitempty"`
	// Rehearsal is the job's migration rehearsal (policy.rehearse): its
	// verdict (catalog.Rehearsal*), cause or why, savepoint, and how often
	// it ran; RehearsalWaived says a person let the window go on despite it.
	Rehearsal          string `json:"rehearsal,omitempty"`
	RehearsalCause     string `json:"rehearsalCause,omitempty"`
	RehearsalSavepoint string `json:"rehearsalSavepoint,omitempty"`
	RehearsalAttempts  int    `json:"rehearsalAttempts,omitempty"`
	RehearsalWaived    bool   `json:"rehearsalWaived,omitempty"`

	RestartState    string    `json:"restartState"`
	RestartWave     int       `json:"restartWave"`
	RestartAttempts int       `json:"restartAttempts,omitempty"`
	NewJobID        string    `json:"newJobId,omitempty"`
	RestoredFrom    string    `json:"restoredFrom,omitempty"`
	CheckpointID    int64     `json:"checkpointAfterRestore,omitempty"`
	CheckpointPath  string    `json:"checkpointPath,omitempty"`
	RestartError    string    `json:"restartError,omitempty"`
	HealthyAt       time.Time `json:"healthyAt,omitempty"`

	SkipReason string `json:"skipReason,omitempty"`
}

// Kinds of decision a window waits for (PendingDecision.Kind). They are
// public API: scripts and alerts match them.
const (
	DecisionPreflightWatermark   = "preflight-watermark"   // a tenant is over a quota watermark before anything stops
	DecisionManifestUnwritable   = "manifest-unwritable"   // no job stops before its manifest is on storage
	DecisionSavepointFailures    = "savepoint-failures"    // some savepoints failed
	DecisionNetworkChange        = "network-change"        // the infrastructure change is to be confirmed
	DecisionEndpointsUnreachable = "endpoints-unreachable" // after the change, endpoints still do not answer
	DecisionQuota                = "quota"                 // the restart would not fit the namespace quota
	DecisionRestartFailures      = "restart-failures"      // some restarts failed
	DecisionCanaryDrill          = "canary-drill"          // the canary's savepoint did not pass its restore drill
	DecisionSavepointProof       = "savepoint-proof"       // savepoints fail the storage proof
)

// PendingDecision is what a paused window waits for.
type PendingDecision struct {
	Kind    string    `json:"kind"` // one of the Decision* kinds
	Reason  string    `json:"reason"`
	Jobs    []string  `json:"jobs,omitempty"`
	Allowed []string  `json:"allowed"`
	Since   time.Time `json:"since"`
}

// NetworkConfirmation records who confirmed the change and when.
type NetworkConfirmation struct {
	By        string    `json:"by"`
	Reason    string    `json:"reason"`
	At        time.Time `json:"at"`
	Auto      bool      `json:"auto,omitempty"`
	Reminders int       `json:"reminders"`
}

// WindowState is the window's whole progress: the status query returns a
// copy, the manifest and report are built from it, and continue-as-new
// carries it.
type WindowState struct {
	WindowID string `json:"windowId"`
	Phase    string `json:"phase"`
	// PhaseStarts is when each phase began, in order: how long each took.
	PhaseStarts []PhaseStart       `json:"phaseStarts,omitempty"`
	StartedAt   time.Time          `json:"startedAt"`
	FinishedAt  time.Time          `json:"finishedAt,omitempty"`
	Tenants     []inventory.Tenant `json:"tenants"`
	// TenantLockHeld says the window holds its tenants' lock (from
	// savepoint-all until the restart is done); WaitingFor names the runs
	// holding one of them while it waits.
	TenantLockHeld bool                   `json:"tenantLockHeld,omitempty"`
	WaitingFor     string                 `json:"waitingFor,omitempty"`
	Clusters       []inventory.Cluster    `json:"clusters"`
	Jobs           []JobProgress          `json:"jobs"`
	Skipped        []core.SkippedJob      `json:"skipped,omitempty"`
	QuotaBefore    []capacity.TenantQuota `json:"quotaBefore,omitempty"`
	QuotaGate      []capacity.TenantQuota `json:"quotaGate,omitempty"`
	QuotaAfter     []capacity.TenantQuota `json:"quotaAfter,omitempty"`
	Network        *NetworkConfirmation   `json:"network,omitempty"`
	Wave           int                    `json:"wave"`
	// Waves is the number of restart waves once they are assigned, so a
	// run that continues as new mid-restart keeps every job in its wave.
	Waves        int              `json:"waves,omitempty"`
	Paused       bool             `json:"paused"`
	PausedBy     string           `json:"pausedBy,omitempty"`
	Pending      *PendingDecision `json:"pending,omitempty"`
	Decisions    []DecisionRecord `json:"decisions,omitempty"`
	AbortReason  string           `json:"abortReason,omitempty"`
	Cleanup      *WindowCleanup   `json:"cleanup,omitempty"`
	Canary       *CanaryDrill     `json:"canary,omitempty"`
	ManifestPath string           `json:"manifestPath,omitempty"`
	ReportPath   string           `json:"reportPath,omitempty"`
	Notes        []string         `json:"notes,omitempty"`
}

// job returns the progress entry of key, or nil.
// PhaseStart is when a window entered a phase.
type PhaseStart struct {
	Phase string    `json:"phase"`
	At    time.Time `json:"at"`
}

func (s *WindowState) job(key string) *JobProgress {
	for i := range s.Jobs {
		if s.Jobs[i].Target.Key == key {
			return &s.Jobs[i]
		}
	}
	return nil
}

// counts returns total, done (healthy or skipped) and failed jobs.
func (s *WindowState) counts() (total, done, failed int) {
	for _, j := range s.Jobs {
		total++
		switch {
		case j.RestartState == StepDone || j.RestartState == StepSkipped || j.SavepointState == StepSkipped:
			done++
		case j.RestartState == StepFailed || j.SavepointState == StepFailed:
			failed++
		}
	}
	return total, done, failed
}

// WindowCleanup is the outcome of the post-restart Governance run.
type WindowCleanup struct {
	WorkflowID     string `json:"workflowId"`
	RunID          string `json:"runId"`
	Mode           string `json:"mode"`
	Outcome        string `json:"outcome,omitempty"`
	PlannedItems   int64  `json:"plannedItems,omitempty"`
	PlannedFiles   int64  `json:"plannedFiles,omitempty"`
	ReclaimedFiles int64  `json:"reclaimedFiles,omitempty"`
	ReclaimedBytes int64  `json:"reclaimedBytes,omitempty"`
	Error          string `json:"error,omitempty"`
	// Tenants is the cleanup's report per tenant: quota before and after
	// it, what its plan deleted by rule and kept by reason.
	Tenants []GovernanceTenantReport `json:"tenants,omitempty"`
}

// CanaryDrill is the restore drill of the canary's savepoint, run before
// any other job is stopped (policy.drill.canary).
type CanaryDrill struct {
	// Key is the canary job; it moves to the next job with a drill recipe
	// when the chosen one could not be stopped with a savepoint.
	Key        string `json:"key"`
	Snapshot   string `json:"snapshot,omitempty"`
	Attempts   int    `json:"attempts,omitempty"`
	WorkflowID string `json:"workflowId,omitempty"`
	// Outcome is passed, failed or inconclusive (catalog.Drill*), Error
	// what failed; Result is the drill's whole finding.
	Outcome string          `json:"outcome,omitempty"`
	Error   string          `json:"error,omitempty"`
	Result  *JobDrillResult `json:"result,omitempty"`
	// WaivedBy names who let the window go on without a passing drill.
	WaivedBy string `json:"waivedBy,omitempty"`
}
