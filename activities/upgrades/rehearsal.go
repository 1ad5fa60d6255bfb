package upgrades

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/catalog"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// PrepareRehearsalInput says what to rehearse.
type PrepareRehearsalInput struct {
	RunID string         `json:"runId"`
	N     int            `json:"n"`
	Job   core.JobTarget `json:"job"`
	// NewRecipe is the job's new version (an upgrade); nil rehearses the
	// inventory's build of the job for FlinkVersion (a migration).
	NewRecipe *inventory.RestartRecipe `json:"newRecipe,omitempty"`
	// FlinkVersion is the version to rehearse into, as major.minor; empty
	// is the version the job's cluster runs.
	FlinkVersion string `json:"flinkVersion,omitempty"`
	// ProgramArgs, when set, are the arguments the copy runs with: a new
	// version whose arguments changed is rehearsed only with them, since
	// production arguments may name production sinks and paths.
	ProgramArgs []string `json:"programArgs,omitempty"`
}

// PrepareRehearsalResult is where and how the rehearsal restores.
type PrepareRehearsalResult struct {
	// Target has the drill cluster, dir and recipe; its Snapshot is left
	// to the workflow. Nil when NotRehearsed says why nothing is tried.
	Target *core.DrillTarget `json:"target,omitempty"`
	// FlinkVersion is the version the drill cluster reports.
	FlinkVersion string `json:"flinkVersion,omitempty"`
	NotRehearsed string `json:"notRehearsed,omitempty"`
}

// PrepareRehearsal chooses the drill cluster of the target Flink version
// (checking it reports that version and is no inventory cluster) and
// builds the rehearsal's recipe from the job's drill recipe: the new
// build, its program arguments with the drill recipe's sandboxArgs in
// force, its configuration. What cannot be rehearsed is said, not raised.
func (a *Activities) PrepareRehearsal(ctx context.Context, in PrepareRehearsalInput) (PrepareRehearsalResult, error) {
	if a.Inventory == nil || a.Flink == nil || a.Storage == nil {
		return PrepareRehearsalResult{}, core.NonRetryable(core.ErrTypeInventory, "worker has no inventory source, Flink client or storage configured")
	}
	if in.FlinkVersion != "" && minorVersion(in.FlinkVersion) != in.FlinkVersion {
		return PrepareRehearsalResult{}, core.NonRetryable(core.ErrTypeInvalidInput, "flinkVersion %q: use major.minor, such as 2.3", in.FlinkVersion)
	}
	if a.Drill.Root == "" || len(a.Drill.RestURLs()) == 0 {
		return PrepareRehearsalResult{NotRehearsed: "no drill cluster is configured (drill.clusterRestUrl or drill.clusters, with drill.root)"}, nil
	}
	inv, err := core.Discover(ctx, a.Inventory)
	if err != nil {
		return PrepareRehearsalResult{}, err
	}
	if err := a.drillSite().CheckRootIsolation(ctx, inv); err != nil {
		return PrepareRehearsalResult{}, err
	}
	var spec *inventory.JobSpec
	for _, c := range inv.Clusters {
		if c.ClusterID != in.Job.ClusterID || c.KubeCluster != in.Job.KubeCluster {
			continue
		}
		for i := range c.Jobs {
			if c.Jobs[i].Name == in.Job.JobName {
				spec = &c.Jobs[i]
			}
		}
	}
	if spec == nil || spec.Drill == nil {
		return PrepareRehearsalResult{NotRehearsed: fmt.Sprintf("the inventory has no drill recipe for %s: a rehearsal runs the new version with the recipe's sandboxArgs, so that the copy writes to no production sink", in.Job.Key)}, nil
	}
	version := in.FlinkVersion
	if version == "" {
		client, err := core.FlinkFor(ctx, a.Flink, in.Job.RESTURL)
		if err != nil {
			return PrepareRehearsalResult{}, err
		}
		ov, err := client.ClusterOverview(ctx)
		if err != nil {
			return PrepareRehearsalResult{}, core.Classify("Flink version of cluster "+in.Job.ClusterID, err)
		}
		if version = minorVersion(ov.FlinkVersion); version == "" {
			return PrepareRehearsalResult{NotRehearsed: fmt.Sprintf("cluster %s reports Flink version %q, which names no major.minor", in.Job.ClusterID, ov.FlinkVersion)}, nil
		}
	}
	recipe, why := RehearsalRecipe(*spec, in.NewRecipe, version, in.ProgramArgs)
	if why != "" {
		return PrepareRehearsalResult{NotRehearsed: why}, nil
	}
	url, reported, why, err := a.drillClusterFor(ctx, version)
	if err != nil || why != "" {
		return PrepareRehearsalResult{NotRehearsed: why}, err
	}
	t := core.TargetOf(inventory.Cluster{ClusterID: in.Job.ClusterID, KubeCluster: in.Job.KubeCluster, Tenant: in.Job.Tenant}, in.Job.JobName, "", core.SnapshotSavepoint)
	t.JobID, t.Recipe = in.Job.JobID, &recipe
	t.DrillCluster = url
	t.DrillDir = strings.TrimRight(a.Drill.Root, "/") + "/" + core.PathSegment(in.RunID) + "/" + core.PathSegment(t.ClusterID) + "/" + core.PathSegment(t.JobName) + "-" + fmt.Sprint(in.N)
	return PrepareRehearsalResult{Target: &t, FlinkVersion: reported}, nil
}

// drillClusterFor finds the drill cluster of a Flink version: the one
// drill.clusters names for it, else drill.clusterRestUrl if it runs it.
// A cluster configured for a version that reports another is an error: its
// verdicts would be about the wrong version.
func (a *Activities) drillClusterFor(ctx context.Context, version string) (url, reported, why string, err error) {
	type candidate struct{ url, configured string }
	var cands []candidate
	for _, c := range a.Drill.Clusters {
		if c.FlinkVersion == version {
			cands = append(cands, candidate{c.RESTURL, c.FlinkVersion})
		}
	}
	if a.Drill.ClusterRESTURL != "" {
		cands = append(cands, candidate{a.Drill.ClusterRESTURL, ""})
	}
	var seen []string
	for _, c := range cands {
		client, err := core.FlinkFor(ctx, a.Flink, c.url)
		if err != nil {
			return "", "", "", err
		}
		ov, err := client.ClusterOverview(ctx)
		if err != nil {
			return "", "", "", core.Classify("reach drill cluster "+c.url, err)
		}
		got := minorVersion(ov.FlinkVersion)
		if got == version {
			return c.url, ov.FlinkVersion, "", nil
		}
		if c.configured != "" {
			return "", "", "", core.NonRetryable(core.ErrTypeInvalidInput, "drill cluster %s is configured as Flink %s (drill.clusters) but reports Flink %s: correct its flinkVersion", c.url, c.configured, ov.FlinkVersion)
		}
		seen = append(seen, fmt.Sprintf("%s runs %s", c.url, ov.FlinkVersion))
	}
	return "", "", fmt.Sprintf("no drill cluster runs Flink %s (%s): add one to drill.clusters with flinkVersion %q", version, strings.Join(seen, ", "), version), nil
}

// minorVersion is a Flink version's major.minor ("2.3.0" → "2.3"), empty
// when it names none.
func minorVersion(v string) string {
	m := leadingMinor.FindStringSubmatch(v)
	if m == nil {
		return ""
	}
	return m[1]
}

var leadingMinor = regexp.MustCompile(`^([1-9][0-9]*\.[0-9]+)(?:[.-]|$)`)

// RehearsalRecipe is the drill recipe a rehearsal restores with: for an
// upgrade (next set) the new build, entry class, parallelism and
// configuration with the drill recipe's own program arguments; for a
// migration the inventory's build of the job for version. A new version
// whose program arguments changed is rehearsed only with args, the
// arguments its copy runs with, given by a person: production arguments may
// name sinks and paths that sandboxArgs does not cover, and a copy never
// writes to production. The drill recipe's sandboxArgs are in force either
// way. Why says what keeps it from being rehearsed.
func RehearsalRecipe(spec inventory.JobSpec, next *inventory.RestartRecipe, version string, args []string) (recipe inventory.DrillRecipe, why string) {
	base := *core.TargetOf(inventory.Cluster{Jobs: []inventory.JobSpec{spec}}, spec.Name, "", "").Recipe
	if next == nil {
		r, ok := base.ForFlinkVersion(version)
		if !ok {
			return r, fmt.Sprintf("the drill recipe of %s has no build for Flink %s (drill.flinkVersions)", spec.Name, version)
		}
		if args != nil {
			r.ProgramArgs = WithSandboxArgs(args, base.SandboxArgs)
		}
		if r.Verify != nil && r.Verify.Jar == base.Jar {
			v := *r.Verify
			v.Jar = r.Jar // the state check runs on the new version's cluster
			r.Verify = &v
		}
		return r, ""
	}
	if next.Kind != inventory.RestartRESTJarRun {
		return base, fmt.Sprintf("%s is restarted by %s: only a new jar run through Flink's REST API is rehearsed", spec.Name, next.Kind)
	}
	if next.Jar == "" {
		return base, fmt.Sprintf("the new version of %s names jar id %s, uploaded to its production cluster only: give it as recipe.jar to rehearse it", spec.Name, next.JarID)
	}
	r := base
	r.FlinkVersions = nil
	r.Jar, r.EntryClass, r.Parallelism = next.Jar, next.EntryClass, next.Parallelism
	r.FlinkConfiguration = next.FlinkConfiguration
	switch {
	case args != nil:
		r.ProgramArgs = WithSandboxArgs(args, base.SandboxArgs)
	case !slices.Equal(next.ProgramArgs, spec.Restart.ProgramArgs):
		return base, fmt.Sprintf("the new version of %s changes its program arguments, which may name production sinks or paths: "+
			"give rehearsal.programArgs, the arguments its drill copy runs with (the drill recipe's sandboxArgs %s are put in force)",
			spec.Name, strings.Join(base.SandboxArgs, " "))
	}
	if r.Verify != nil && r.Verify.Jar == base.Jar {
		v := *r.Verify
		v.Jar = r.Jar
		r.Verify = &v
	}
	return r, ""
}

// WithSandboxArgs is args with every option sandbox sets removed, together
// with the values sandbox gives it, and sandbox appended: the copy runs
// with the sandbox's sink settings whatever order its parser reads them in.
func WithSandboxArgs(args, sandbox []string) []string {
	values := map[string]int{} // option -> how many values follow it in sandbox
	for i, s := range sandbox {
		if !strings.HasPrefix(s, "-") {
			continue
		}
		n := 0
		for j := i + 1; j < len(sandbox) && !strings.HasPrefix(sandbox[j], "-"); j++ {
			n++
		}
		values[s] = n
	}
	out := make([]string, 0, len(args)+len(sandbox))
	for i := 0; i < len(args); i++ {
		if n, ok := values[args[i]]; ok {
			i += n
			continue
		}
		if k, _, ok := strings.Cut(args[i], "="); ok && strings.HasPrefix(k, "-") {
			if _, ok := values[k]; ok {
				continue
			}
		}
		out = append(out, args[i])
	}
	return append(out, sandbox...)
}

// Kinds of RehearsalCause: why a snapshot does not restore into the new
// version, as Flink's exceptions tell it.
const (
	CauseUnmatchedOperator = "unmatched-operator"      // an operator's state has no operator in the new program (uid changed or dropped)
	CauseSerializer        = "incompatible-serializer" // a state's serializer cannot read what the old one wrote
	CauseMissingClass      = "missing-class"           // the new version lacks a class the state or the program needs
	CauseMaxParallelism    = "max-parallelism"         // the new version's max parallelism differs from the state's
	CauseRestoreFailed     = "restore-failed"          // the state did not restore, for another reason Flink names
	CauseNotHealthy        = "not-healthy"             // the copy restored but did not pass the gate
	CauseNoSlots           = "no-slots"                // the drill cluster had no slots: proves nothing
	CauseOutsideDrillDir   = "outside-drill-dir"       // the copy checkpointed outside its drill dir, told so by its arguments: proves nothing
)

// RehearsalCause is why a rehearsal failed.
type RehearsalCause struct {
	Kind string `json:"kind"`
	// Text is one line for a person: what failed, in Flink's words.
	Text string `json:"text"`
	// Operators are the unmatched operators, named when the running job or
	// the snapshot says their names.
	Operators []string `json:"operators,omitempty"`
}

// Inconclusive says the failure was the drill's, not the version's.
func (c RehearsalCause) Inconclusive() bool {
	return c.Kind == CauseNoSlots || c.Kind == CauseOutsideDrillDir
}

var (
	reUnmatched   = regexp.MustCompile(`Cannot map checkpoint/savepoint state for operator ([0-9a-fA-F]{32})`)
	reMissing     = regexp.MustCompile(`(ClassNotFoundException|NoClassDefFoundError): ?([A-Za-z0-9_$./]+)`)
	reMaxPar      = regexp.MustCompile(`(?i)[^\n]*max(imum)?[ -]?parallelism[^\n]*(chang|match|compatib|support|smaller|lower)[^\n]*`)
	reSerializer  = regexp.MustCompile(`(?i)[^\n]*(StateMigrationException|incompatible (state )?serializer|serializer[^\n]*incompatible|KryoException|InvalidClassException)[^\n]*`)
	reNoSlots     = regexp.MustCompile(`NoResourceAvailableException[^\n]*`)
	reOutside     = regexp.MustCompile(`checkpointed to \S+, outside [^\n]*`)
	reRestoreFail = regexp.MustCompile(`[^\n]*(Could not restore|Exception while creating StreamOperatorStateContext|Failed to rollback to checkpoint/savepoint|Failed to restore|Could not instantiate)[^\n]*`)
)

// ClassifyRestoreFailure reads Flink's exception chain (and the gate's
// error) for why a snapshot did not restore into a new version. The most
// specific cause wins: an unmatched operator, a missing class, a changed
// max parallelism, an incompatible serializer, then any restore failure;
// no slots on the drill cluster makes the rehearsal inconclusive; anything
// else is a copy that restored but failed the gate.
func ClassifyRestoreFailure(text string) RehearsalCause {
	if ms := reUnmatched.FindAllStringSubmatch(text, -1); len(ms) > 0 {
		var ops []string
		for _, m := range ms {
			if !slices.Contains(ops, m[1]) {
				ops = append(ops, m[1])
			}
		}
		return RehearsalCause{Kind: CauseUnmatchedOperator, Operators: ops,
			Text: "Flink cannot map the state of operator " + strings.Join(ops, ", ") + " to the new program: the operator is not available in it (its uid changed, or it was removed)"}
	}
	if m := reMissing.FindStringSubmatch(text); m != nil {
		return RehearsalCause{Kind: CauseMissingClass, Text: fmt.Sprintf("the new version lacks class %s (%s)", strings.ReplaceAll(m[2], "/", "."), m[1])}
	}
	if m := reMaxPar.FindString(text); m != "" {
		return RehearsalCause{Kind: CauseMaxParallelism, Text: "the max parallelism changed: " + flinkLine(m)}
	}
	if m := reSerializer.FindString(text); m != "" {
		return RehearsalCause{Kind: CauseSerializer, Text: "a state's serializer is incompatible with what the snapshot holds: " + flinkLine(m)}
	}
	if m := reOutside.FindString(text); m != "" {
		return RehearsalCause{Kind: CauseOutsideDrillDir, Text: "the copy " + flinkLine(m) + ": its program arguments point its checkpoints elsewhere; " +
			"give it arguments that leave them to the configuration (drill recipe or rehearsal.programArgs), so the rehearsal proves something"}
	}
	if m := reNoSlots.FindString(text); m != "" {
		return RehearsalCause{Kind: CauseNoSlots, Text: "the drill cluster had no free slots for the copy, so the rehearsal proves nothing: " + flinkLine(m)}
	}
	if m := reRestoreFail.FindString(text); m != "" {
		return RehearsalCause{Kind: CauseRestoreFailed, Text: "the state did not restore: " + flinkLine(m)}
	}
	return RehearsalCause{Kind: CauseNotHealthy, Text: "the copy did not pass the gate: " + flinkLine(strings.SplitN(strings.TrimSpace(text), "\n", 2)[0])}
}

// flinkLine trims one exception line for a status line.
func flinkLine(s string) string {
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "Caused by:"))
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}

// ExplainRehearsalInput names a failed rehearsal's copy and its job.
type ExplainRehearsalInput struct {
	DrillCluster string `json:"drillCluster"`
	// JobID is the copy's, empty when it was never submitted.
	JobID string `json:"jobId,omitempty"`
	// Job is the production job, whose running plan names its operators.
	Job core.JobTarget `json:"job"`
	// Failure is the error the rehearsal saw (the submission's or the
	// gate's), in full.
	Failure string `json:"failure"`
}

// ExplainRehearsal reads the copy's exception history from the drill
// cluster, classifies the failure and names unmatched operators by the
// production job's vertices (an operator that heads a chain has the
// vertex's id), so a person reads "keyed-payload-state", not a hash.
func (a *Activities) ExplainRehearsal(ctx context.Context, in ExplainRehearsalInput) (RehearsalCause, error) {
	text := in.Failure
	if in.DrillCluster != "" && in.JobID != "" {
		client, err := core.FlinkFor(ctx, a.Flink, in.DrillCluster)
		if err != nil {
			return RehearsalCause{}, err
		}
		ex, err := client.JobExceptions(ctx, in.JobID, 20)
		switch {
		case flink.Reason(err) == flink.ErrorReasonJobNotFound:
		case err != nil:
			return RehearsalCause{}, core.Classify("exceptions of rehearsal copy "+in.JobID, err)
		default:
			for _, e := range ex.History.Entries {
				text += "\n" + e.ExceptionName + "\n" + e.Stacktrace
				for _, c := range e.ConcurrentExceptions {
					text += "\n" + c.ExceptionName + "\n" + c.Stacktrace
				}
			}
		}
	}
	cause := ClassifyRestoreFailure(text)
	if cause.Kind != CauseUnmatchedOperator || in.Job.JobID == "" || in.Job.RESTURL == "" {
		return cause, nil
	}
	names := map[string]string{}
	if client, err := core.FlinkFor(ctx, a.Flink, in.Job.RESTURL); err == nil {
		if d, err := client.JobDetails(ctx, in.Job.JobID); err == nil {
			for _, v := range d.Vertices {
				head, _, _ := strings.Cut(v.Name, " -> ")
				names[strings.ToLower(v.ID)] = strings.TrimPrefix(head, "Source: ")
			}
		}
	}
	named := make([]string, len(cause.Operators))
	for i, id := range cause.Operators {
		named[i] = id
		if n := names[strings.ToLower(id)]; n != "" {
			named[i] = fmt.Sprintf("%s (%s in the running job)", n, id)
		}
	}
	cause.Operators = named
	cause.Text = "Flink cannot map the state of operator " + strings.Join(named, ", ") + " to the new program: the operator is not available in it (its uid changed, or it was removed)"
	return cause, nil
}

// RecordRehearsalInput is one rehearsal's outcome.
type RecordRehearsalInput struct {
	RunID        string         `json:"runId"`
	Job          core.JobTarget `json:"job"`
	Snapshot     string         `json:"snapshot"`
	FlinkVersion string         `json:"flinkVersion,omitempty"`
	Jar          string         `json:"jar,omitempty"`
	Verdict      string         `json:"verdict"`
	Cause        string         `json:"cause,omitempty"`
}

// RecordRehearsal writes the outcome beside the snapshot, in its tenant's
// rehearsal records (what `savepoints list` shows), and counts it.
func (a *Activities) RecordRehearsal(ctx context.Context, in RecordRehearsalInput) error {
	if in.Snapshot == "" {
		a.countRehearsal(in) // nothing was taken: the verdict is counted only
		return nil
	}
	if a.Storage == nil || a.Inventory == nil {
		return core.NonRetryable(core.ErrTypeStorage, "worker has no storage or inventory configured")
	}
	inv, err := core.Discover(ctx, a.Inventory)
	if err != nil {
		return err
	}
	for _, t := range inv.Tenants {
		if t.Name != in.Job.Tenant {
			continue
		}
		fs, root, err := a.Storage.Resolve(ctx, t.Root)
		if err != nil {
			return core.Classify("resolve "+t.Root, err)
		}
		rec := catalog.RehearsalRecord{Snapshot: core.FullPath(fs, in.Snapshot), RunID: in.RunID, FlinkVersion: in.FlinkVersion, Jar: in.Jar,
			Job:     catalog.LogicalJob{Tenant: t.Name, Cluster: in.Job.ClusterID, Job: in.Job.JobName},
			Verdict: in.Verdict, Cause: in.Cause, At: core.Now(a.Now).UTC()}
		if err := (catalog.RehearsalStore{FS: fs, Root: root}).Put(ctx, rec); err != nil {
			return core.Classify("record rehearsal of "+in.Snapshot, err)
		}
	}
	a.countRehearsal(in)
	return nil
}

func (a *Activities) countRehearsal(in RecordRehearsalInput) {
	if a.Metrics != nil {
		a.Metrics.Rehearsed(in.Job.Tenant, minorVersion(in.FlinkVersion), in.Verdict)
	}
}
