package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// JobUpgradeWorkflowType upgrades one job: savepoint, stop, start the new
// version from exactly that savepoint, health gate, commit; or roll back.
const JobUpgradeWorkflowType = "JobUpgrade"

// KindUpgrade is the SearchAttrKind of upgrades, KindUpgradeCheck of
// `upgrade check` runs.
const (
	KindUpgrade      = "upgrade"
	KindUpgradeCheck = "upgrade-check"
)

// JobUpgradeWorkflowID is the ID of an upgrade: one run per name.
func JobUpgradeWorkflowID(upgradeID string) string { return "upgrade-" + upgradeID }

// UpgradeCheckWorkflowID is the ID of `upgrade check` of an upgrade: apart
// from the upgrade's own, so a check never blocks the upgrade it checks.
func UpgradeCheckWorkflowID(upgradeID string) string { return "upgrade-check-" + upgradeID }

// Messages of JobUpgradeWorkflow. Names are public API.
const (
	// QueryUpgradeStatus returns the UpgradeState.
	QueryUpgradeStatus = "upgrade-status"
	// UpdateRollback asks for a rollback while the new version starts, is
	// gated, or is held after commit (UpgradeInput.HoldAfterCommit).
	UpdateRollback = "rollback"
	// The upgrade answers its decisions through UpdateDecide.
)

// Upgrade decision actions (DecideRequest.Action).
const (
	ActionRollback                = "rollback"                    // go back to the previous version
	ActionAllowNonRestoredState   = "allow-non-restored-state"    // start the new version dropping the unmatched state
	DecisionUnmatchedState        = "unmatched-state"             // the new version cannot map some operators' state
	DecisionUpgradeGateFailed     = "upgrade-gate-failed"         // the new version is not healthy (onGateFailure: pause)
	DecisionRollbackFailed        = "rollback-failed"             // the previous version did not come back
	DecisionUpgradeManifestFailed = "upgrade-manifest-unwritable" // nothing stops before the manifest is on storage
	DecisionRecipeUnrecorded      = "recipe-unrecorded"           // the new version runs but is not yet the recipe of record
	DecisionRetireFailed          = "retire-failed"               // mode parallel: the previous version could not be ended
	DecisionRehearsal             = "rehearsal"                   // the new version's rehearsal did not prove it compatible; nothing is stopped
)

// Values of UpgradeRehearsal.Mode.
const (
	// RehearseAuto rehearses when the worker has a drill cluster of the
	// job's Flink version and the job a drill recipe, and notes why not
	// otherwise.
	RehearseAuto = "auto"
	// RehearseAlways pauses for a decision when the upgrade cannot be
	// rehearsed.
	RehearseAlways = "always"
	// RehearseNever skips the rehearsal.
	RehearseNever = "never"
)

// UpgradeRehearsal says whether and how the new version is rehearsed
// before the job is stopped: a savepoint taken without stopping it is
// restored into the new version on a drill cluster and gated like the
// real start (see JobRehearsalWorkflow).
type UpgradeRehearsal struct {
	// Mode is auto (default), always or never.
	Mode string `json:"mode,omitempty"`
	// FlinkVersion (major.minor) rehearses into another Flink version than
	// the job's cluster runs; for checkOnly runs (`upgrade check
	// --flink-version`), since the upgrade itself restarts the job on its
	// own cluster.
	FlinkVersion string `json:"flinkVersion,omitempty"`
	// Savepoint is rehearsed instead of a fresh one.
	Savepoint string `json:"savepoint,omitempty"`
	// ProgramArgs are the arguments the drill copy of the new version runs
	// with (the drill recipe's sandboxArgs put in force). Required to
	// rehearse a new version whose arguments changed: production arguments
	// may name sinks and paths a copy must never write to.
	ProgramArgs []string `json:"programArgs,omitempty"`
}

// Values of UpgradeInput.Mode.
const (
	// UpgradeModeStop stops the job with a savepoint, then starts the new
	// version from it: one version runs at a time.
	UpgradeModeStop = "stop"
	// UpgradeModeParallel takes a savepoint and keeps the job running; the
	// new version starts from it beside the previous one, which is ended
	// (stopped with a savepoint) only once the new one is healthy. Both
	// write to their sinks meanwhile: only for jobs whose sinks tolerate
	// that (idempotent, or switched by argument).
	UpgradeModeParallel = "parallel"
)

// Values of UpgradeInput.OnGateFailure.
const (
	OnGateFailureRollback = "rollback"
	OnGateFailurePause    = "pause"
)

// Upgrade phases.
const (
	UpgradePhasePreflight  = "preflight"
	UpgradePhaseRehearse   = "rehearse"
	UpgradePhaseChecked    = "checked" // checkOnly: the rehearsal's verdict is in
	UpgradePhaseStop       = "stop"
	UpgradePhaseStart      = "start"
	UpgradePhaseCommit     = "commit"
	UpgradePhaseRetire     = "retire" // mode parallel: the previous version is ended
	UpgradePhaseHold       = "hold"
	UpgradePhaseCommitted  = "committed"
	UpgradePhaseRollback   = "rollback"
	UpgradePhaseRolledBack = "rolled-back"
	UpgradePhaseFailed     = "failed"
)

// ErrTypeUpgradeCheckFailed ends a checkOnly run whose rehearsal did not
// find the new version compatible; the state is in the error's details.
const ErrTypeUpgradeCheckFailed = "UpgradeCheckFailed"

// ErrTypeUpgradeRolledBack ends an upgrade that went back to the previous
// version; the report is in the error's details.
const ErrTypeUpgradeRolledBack = "UpgradeRolledBack"

// UpgradeInput starts an upgrade of one job to a new recipe.
type UpgradeInput struct {
	UpgradeID string `json:"upgradeId"`
	Reason    string `json:"reason"`
	Ticket    string `json:"ticket,omitempty"`
	// Job is cluster/name, as in a window's job list.
	Job string `json:"job"`
	// Recipe is the new version of a job run through Flink's REST API;
	// unset fields keep the running recipe's.
	Recipe UpgradeRecipe `json:"recipe"`
	// Spec is the new version of a job the Flink Kubernetes Operator runs:
	// the change to its resource's spec (image, jarURI, args, parallelism,
	// flinkConfiguration), applied while the job is suspended.
	Spec *inventory.JobSpecChange `json:"spec,omitempty"`
	// ManifestDir receives <upgradeId>/manifest.json, written before the
	// job is stopped: the previous recipe and the savepoint to roll back
	// to by hand if Temporal is gone. Required.
	ManifestDir string `json:"manifestDir"`
	// Mode is stop (default) or parallel (UpgradeModeParallel; REST jobs
	// only).
	Mode string `json:"mode,omitempty"`
	// Savepoint format (CANONICAL default) and timeout (default 15m).
	Format           string   `json:"format,omitempty"`
	SavepointTimeout Duration `json:"savepointTimeout,omitempty"`
	// Health is what healthy means for the new version, and for the old
	// one after a rollback (defaults 5m, 5m, 30s). Its checks are what the
	// new version must achieve; the previous version, coming back, passes
	// the gate without them.
	Health RestartPolicy `json:"health"`
	// OnGateFailure: rollback (default) goes back at once; pause waits for
	// a decision (rollback, or retry the gate).
	OnGateFailure string `json:"onGateFailure,omitempty"`
	// HoldAfterCommit keeps the run open this long after commit, so a
	// rollback is still one command; default 0.
	HoldAfterCommit Duration `json:"holdAfterCommit,omitempty"`
	// OverrideFreeze lets the upgrade run inside a freeze.
	OverrideFreeze *FreezeOverride `json:"overrideFreeze,omitempty"`
	// Rehearsal rehearses the new version before the job is stopped.
	Rehearsal UpgradeRehearsal `json:"rehearsal"`
	// CheckOnly ends after preflight and the rehearsal (`upgrade check`):
	// nothing is stopped, no manifest written, no tenant lock taken.
	CheckOnly bool `json:"checkOnly,omitempty"`
}

// UpgradeRecipe is the new version of a REST-run job. A field left unset
// keeps the running recipe's value; ProgramArgs, when given (even empty),
// replace the old arguments.
type UpgradeRecipe struct {
	// Jar is read from storage or the worker's disk and uploaded; JarID
	// names a jar already uploaded to the cluster. Either replaces both.
	Jar         string   `json:"jar,omitempty"`
	JarID       string   `json:"jarId,omitempty"`
	EntryClass  string   `json:"entryClass,omitempty"`
	ProgramArgs []string `json:"programArgs"`
	Parallelism int      `json:"parallelism,omitempty"`
	// FlinkConfiguration keys are set on the running recipe's; Unset
	// removes keys from it.
	FlinkConfiguration map[string]string `json:"flinkConfiguration,omitempty"`
	Unset              []string          `json:"unset,omitempty"`
}

// empty says the recipe changes nothing.
func (u UpgradeRecipe) empty() bool {
	return u.Jar == "" && u.JarID == "" && u.EntryClass == "" && u.ProgramArgs == nil && u.Parallelism == 0 &&
		len(u.FlinkConfiguration) == 0 && len(u.Unset) == 0
}

// apply returns the previous recipe changed by u; allowNonRestored is
// never taken from either: only an operator's decision sets it.
func (u UpgradeRecipe) apply(prev inventory.RestartRecipe) inventory.RestartRecipe {
	next := prev
	next.AllowNonRestoredState = false
	if u.Jar != "" || u.JarID != "" {
		next.Jar, next.JarID = u.Jar, u.JarID
	}
	if len(u.FlinkConfiguration) > 0 || len(u.Unset) > 0 {
		// Copying and overriding keys gives the same map in any order.
		conf := map[string]string{}
		for k, v := range prev.FlinkConfiguration {
			conf[k] = v
		}
		for _, k := range u.Unset {
			delete(conf, k)
		}
		for k, v := range u.FlinkConfiguration {
			conf[k] = v
		}
		next.FlinkConfiguration = conf
		if len(conf) == 0 {
			next.FlinkConfiguration = nil
		}
	}
	if u.EntryClass != "" {
		next.EntryClass = u.EntryClass
	}
	if u.ProgramArgs != nil {
		next.ProgramArgs = append([]string{}, u.ProgramArgs...)
	}
	if u.Parallelism != 0 {
		next.Parallelism = u.Parallelism
	}
	return next
}

// ApplyDefaults fills unset fields.
func (in *UpgradeInput) ApplyDefaults() {
	setStr(&in.Mode, UpgradeModeStop)
	setStr(&in.Format, FormatCanonical)
	setDur(&in.SavepointTimeout, 15*time.Minute)
	setStr(&in.OnGateFailure, OnGateFailureRollback)
	setDur(&in.Health.RunningTimeout, 5*time.Minute)
	setDur(&in.Health.CheckpointTimeout, 5*time.Minute)
	setDur(&in.Health.Soak, 30*time.Second)
	setStr(&in.Rehearsal.Mode, RehearseAuto)
}

// Validate names every field that is wrong and what would be valid.
func (in *UpgradeInput) Validate() error {
	var problems []string
	if in.UpgradeID == "" || strings.ContainsAny(in.UpgradeID, "/ \t\n") {
		problems = append(problems, fmt.Sprintf("upgradeId %q: use a non-empty name without slashes or spaces, e.g. orders-2026-12-01", in.UpgradeID))
	}
	if strings.TrimSpace(in.Reason) == "" {
		problems = append(problems, "reason is empty: say why this upgrade runs (it is recorded in the manifest)")
	}
	if c, n, ok := strings.Cut(in.Job, "/"); !ok || c == "" || n == "" || strings.Contains(n, "/") {
		problems = append(problems, fmt.Sprintf("job %q: use cluster/name", in.Job))
	}
	r := in.Recipe
	noRecipe := r.empty()
	noSpec := in.Spec == nil || in.Spec.Empty()
	switch {
	case noRecipe && noSpec:
		problems = append(problems, "recipe is empty: give the new version's jar or jarId, entryClass, programArgs, parallelism or flinkConfiguration (or, for a job the Flink Kubernetes Operator runs, its spec change)")
	case !noRecipe && !noSpec:
		problems = append(problems, "recipe and spec are both given: recipe is for jobs run through Flink's REST API, spec for jobs the Flink Kubernetes Operator runs; give the one for this job")
	}
	if r.Jar != "" && r.JarID != "" {
		problems = append(problems, fmt.Sprintf("recipe.jarId=%q: leave it out when recipe.jar is given (%s); give the jar or the id of one uploaded to the cluster", r.JarID, r.Jar))
	}
	if err := (inventory.JobSpecChange{FlinkConfiguration: r.FlinkConfiguration, Unset: r.Unset}).Validate("recipe"); err != nil {
		problems = append(problems, fieldProblem(err))
	}
	if in.Spec != nil {
		if err := in.Spec.Validate("spec"); err != nil {
			problems = append(problems, fieldProblem(err))
		}
	}
	if in.Spec != nil && in.Spec.Parallelism < 0 {
		problems = append(problems, fmt.Sprintf("spec.parallelism=%d: use a positive number, or leave it out to keep the current one", in.Spec.Parallelism))
	}
	if r.Parallelism < 0 {
		problems = append(problems, fmt.Sprintf("recipe.parallelism=%d: use a positive number, or leave it out to keep the current one", r.Parallelism))
	}
	switch rh := in.Rehearsal; {
	case rh.Mode != RehearseAuto && rh.Mode != RehearseAlways && rh.Mode != RehearseNever:
		problems = append(problems, fmt.Sprintf("rehearsal.mode=%q: use auto (rehearse when a drill cluster and the job's drill recipe allow it), always or never", rh.Mode))
	case rh.FlinkVersion != "" && !in.CheckOnly:
		problems = append(problems, fmt.Sprintf("rehearsal.flinkVersion=%q: the upgrade restarts the job on its own cluster, so it rehearses that cluster's version; use `upgrade check --flink-version` to rehearse another", rh.FlinkVersion))
	case rh.FlinkVersion != "" && !inventory.IsFlinkMinorVersion(rh.FlinkVersion):
		problems = append(problems, fmt.Sprintf("rehearsal.flinkVersion=%q: use major.minor, such as 2.3", rh.FlinkVersion))
	case in.CheckOnly && rh.Mode == RehearseNever:
		problems = append(problems, "rehearsal.mode=never: a check is its rehearsal; use auto or always")
	}
	if in.ManifestDir == "" && !in.CheckOnly {
		problems = append(problems, "manifestDir is empty: set a directory URI under a writable root, e.g. hdfs://nn:8020/flinkmaint/upgrades")
	}
	if in.Format != FormatCanonical && in.Format != FormatNative {
		problems = append(problems, fmt.Sprintf("format=%q: use CANONICAL or NATIVE", in.Format))
	}
	if err := in.OverrideFreeze.validate("overrideFreeze"); err != nil {
		problems = append(problems, err.Error())
	}
	if in.Mode != UpgradeModeStop && in.Mode != UpgradeModeParallel {
		problems = append(problems, fmt.Sprintf("mode=%q: use stop (one version at a time) or parallel (the new version starts beside the running one)", in.Mode))
	}
	if in.Mode == UpgradeModeParallel && !noSpec {
		problems = append(problems, "mode=parallel with spec: the Flink Kubernetes Operator runs one job per resource, so its jobs upgrade in mode stop")
	}
	problems = append(problems, in.Health.checkProblems("health")...)
	if in.OnGateFailure != OnGateFailureRollback && in.OnGateFailure != OnGateFailurePause {
		problems = append(problems, fmt.Sprintf("onGateFailure=%q: use rollback or pause", in.OnGateFailure))
	}
	for _, d := range []struct {
		name string
		v    Duration
	}{{"savepointTimeout", in.SavepointTimeout}, {"health.runningTimeout", in.Health.RunningTimeout},
		{"health.checkpointTimeout", in.Health.CheckpointTimeout}, {"health.soak", in.Health.Soak}, {"holdAfterCommit", in.HoldAfterCommit}} {
		if d.v < 0 || d.v.D() > 7*24*time.Hour {
			problems = append(problems, fmt.Sprintf("%s=%s: use 0..168h", d.name, d.v.D()))
		}
	}
	// health shares its type with a window's restart policy; the fields
	// about waves of many jobs mean nothing for one job.
	var unused []string
	for _, f := range []struct {
		name string
		v    int
	}{{"canarySize", in.Health.CanarySize}, {"waveSize", in.Health.WaveSize}, {"concurrency", in.Health.Concurrency}, {"failureBudget", in.Health.FailureBudget}} {
		if f.v != 0 {
			unused = append(unused, "health."+f.name)
		}
	}
	if len(unused) > 0 {
		problems = append(problems, strings.Join(unused, ", ")+": window settings an upgrade of one job does not use; leave them out (health takes runningTimeout, checkpointTimeout and soak)")
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// fieldProblem words an inventory field error as one of an input's problems.
func fieldProblem(err error) string {
	var fe *inventory.FieldError
	if errors.As(err, &fe) {
		return fmt.Sprintf("%s=%q: %s", fe.Field, fe.Value, fe.Valid)
	}
	return err.Error()
}

// RollbackRequest asks an upgrade to go back to the previous version.
type RollbackRequest struct {
	By     string `json:"by"`
	Reason string `json:"reason"`
}

// UpgradeState is an upgrade's whole progress: the status query, the
// manifest and the report.
type UpgradeState struct {
	UpgradeID string `json:"upgradeId"`
	Phase     string `json:"phase"`
	// Job is the job as found in preflight, with the previous recipe.
	Job       core.JobTarget          `json:"job"`
	NewRecipe inventory.RestartRecipe `json:"newRecipe"`
	// SpecChange and SpecInverse are, for an operator job, the change to
	// its resource and what undoes it, read before the job is stopped.
	SpecChange  *inventory.JobSpecChange `json:"specChange,omitempty"`
	SpecInverse *inventory.JobSpecChange `json:"specInverse,omitempty"`
	Mode        string                   `json:"mode"`
	// Savepoint is the pre-upgrade savepoint: the new version starts from
	// it, and a rollback restores the previous version from it.
	Savepoint string `json:"savepoint,omitempty"`
	// Retired says the previous version was ended after the new one passed
	// its gate (mode parallel); RetiredSavepoint is the savepoint it
	// stopped with, from which a later rollback restores it.
	Retired          bool   `json:"retired,omitempty"`
	RetiredSavepoint string `json:"retiredSavepoint,omitempty"`
	// StartAttempts counts starts of the new version.
	StartAttempts int               `json:"startAttempts,omitempty"`
	NewJobID      string            `json:"newJobId,omitempty"`
	Healthy       *JobRestartResult `json:"healthy,omitempty"`
	GateError     string            `json:"gateError,omitempty"`
	// Rehearsal is the new version's rehearsal, before the job stopped.
	Rehearsal *RehearsalResult `json:"rehearsal,omitempty"`
	// Unmatched are the operator ids whose state the new version cannot
	// map, when a restore failed on them.
	Unmatched []string         `json:"unmatched,omitempty"`
	Rollback  *UpgradeRollback `json:"rollback,omitempty"`
	Pending   *PendingDecision `json:"pending,omitempty"`
	Decisions []DecisionRecord `json:"decisions,omitempty"`
	// WaitingFor names the runs holding the job's tenant while the upgrade
	// waits to stop it.
	WaitingFor string `json:"waitingFor,omitempty"`
	// RecipeRecorded says the new recipe is the recipe of record.
	RecipeRecorded bool      `json:"recipeRecorded,omitempty"`
	ManifestPath   string    `json:"manifestPath"`
	Notes          []string  `json:"notes,omitempty"`
	StartedAt      time.Time `json:"startedAt"`
	FinishedAt     time.Time `json:"finishedAt,omitempty"`
}

// UpgradeRollback is the way back to the previous version.
type UpgradeRollback struct {
	Reason string `json:"reason"`
	By     string `json:"by"`
	// NewVersionSavepoint is the new version's savepoint taken as it was
	// stopped, kept but not used; empty when it was not running.
	NewVersionSavepoint string            `json:"newVersionSavepoint,omitempty"`
	Attempts            int               `json:"attempts,omitempty"`
	JobID               string            `json:"jobId,omitempty"`
	Healthy             *JobRestartResult `json:"healthy,omitempty"`
	Error               string            `json:"error,omitempty"`
}
