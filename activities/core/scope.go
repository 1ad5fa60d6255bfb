package core

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// JobKey identifies a job across a window: cluster and job name.
func JobKey(clusterID, jobName string) string { return clusterID + "/" + jobName }

// InScope reports whether v is selected by a scope list; an empty list
// selects everything.
func InScope(list []string, v string) bool {
	if len(list) == 0 {
		return true
	}
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func MatchesAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// MatchJobs pairs a cluster's running jobs with the recipes the inventory
// knows, by job name; a job without one is skipped when needRecipe.
func MatchJobs(c inventory.Cluster, jobs []flink.JobOverview, scope Scope, needRecipe bool) ([]JobTarget, []SkippedJob) {
	recipes := map[string]inventory.RestartRecipe{}
	drain := map[string]*bool{}
	drillable := map[string]bool{}
	builds := map[string][]string{}
	for _, js := range c.Jobs {
		recipes[js.Name] = js.Restart
		drain[js.Name] = js.DrainOnStop
		drillable[js.Name] = js.Drill != nil
		if js.Drill != nil {
			for v := range js.Drill.FlinkVersions {
				builds[js.Name] = append(builds[js.Name], v)
			}
			sort.Strings(builds[js.Name])
		}
	}
	running := map[string][]flink.JobOverview{}
	for _, j := range jobs {
		if j.State.IsGloballyTerminal() {
			continue
		}
		if len(scope.IncludeJobs) > 0 && !MatchesAny(scope.IncludeJobs, j.Name) {
			continue
		}
		if MatchesAny(scope.ExcludeJobs, j.Name) {
			continue
		}
		running[j.Name] = append(running[j.Name], j)
	}
	var targets []JobTarget
	var skipped []SkippedJob
	for name, js := range running {
		key := JobKey(c.ClusterID, name)
		switch {
		case len(js) > 1:
			for _, j := range js {
				skipped = append(skipped, SkippedJob{Key: key, JobID: j.ID,
					Reason: fmt.Sprintf("%d jobs named %q run on %s; a window needs unique names to restore each from its own savepoint", len(js), name, c.ClusterID)})
			}
		case js[0].State != flink.JobRunning:
			skipped = append(skipped, SkippedJob{Key: key, JobID: js[0].ID,
				Reason: fmt.Sprintf("job is %s, not RUNNING: its state is unclear, so it is left alone", js[0].State)})
		default:
			recipe, ok := recipes[name]
			if !ok && needRecipe {
				skipped = append(skipped, SkippedJob{Key: key, JobID: js[0].ID,
					Reason: "the inventory has no restart recipe for this job name, so it could not be brought back; left running"})
				continue
			}
			targets = append(targets, JobTarget{
				Key: key, Tenant: c.Tenant, ClusterID: c.ClusterID, KubeCluster: c.KubeCluster, RESTURL: c.RESTURL,
				JobName: name, JobID: js[0].ID, CheckpointDir: c.CheckpointDir, SavepointDir: c.SavepointDir,
				Restart: recipe, Drillable: drillable[name], DrillBuilds: builds[name], DrainOnStop: drain[name],
			})
		}
	}
	return targets, skipped
}

// MaxNamesListed bounds the names a scope problem lists as what exists.
const MaxNamesListed = 20

// LiveJobNames are the names of the jobs that are not globally terminal:
// the jobs a scope's patterns select from.
func LiveJobNames(jobs []flink.JobOverview) []string {
	var out []string
	for _, j := range jobs {
		if !j.State.IsGloballyTerminal() {
			out = append(out, j.Name)
		}
	}
	return out
}

// UnresolvedScope names every entry of the scope that selects nothing, each
// with what the inventory has instead:
//
//   - a tenant the inventory lacks, one without a Flink cluster, or one
//     none of whose clusters scope.clusters names;
//   - a cluster the inventory lacks, or one of a tenant scope.tenants
//     leaves out;
//   - an includeJobs pattern that no live job on the clusters in scope
//     (running is their names) matches.
//
// An excludeJobs pattern that matches nothing is no problem: excluding is
// always safe.
func UnresolvedScope(inv inventory.Inventory, s Scope, running []string) []string {
	tenantClusters := map[string][]string{}
	clusterTenant := map[string]string{}
	var clusters []string
	for _, c := range inv.Clusters {
		tenantClusters[c.Tenant] = append(tenantClusters[c.Tenant], c.ClusterID)
		clusterTenant[c.ClusterID] = c.Tenant
		clusters = append(clusters, c.ClusterID)
	}
	known := map[string]bool{}
	var tenants []string
	for _, t := range inv.Tenants {
		known[t.Name] = true
		tenants = append(tenants, t.Name)
	}
	for t := range tenantClusters {
		if !known[t] {
			known[t] = true
			tenants = append(tenants, t)
		}
	}
	var out []string
	for _, n := range s.Tenants {
		own := tenantClusters[n]
		switch {
		case !known[n]:
			out = append(out, fmt.Sprintf("tenant %q is not in the inventory; its tenants are %s", n, NameList(tenants)))
		case len(own) == 0:
			out = append(out, fmt.Sprintf("tenant %q has no Flink cluster in the inventory", n))
		case !anyInScope(s.Clusters, own):
			out = append(out, fmt.Sprintf("tenant %q has none of its clusters (%s) among scope.clusters", n, NameList(own)))
		}
	}
	for _, c := range s.Clusters {
		t, ok := clusterTenant[c]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("cluster %q is not in the inventory; its clusters are %s", c, NameList(clusters)))
		case !InScope(s.Tenants, t):
			out = append(out, fmt.Sprintf("cluster %q belongs to tenant %q, which scope.tenants leaves out", c, t))
		}
	}
	for _, p := range s.IncludeJobs {
		matched := false
		for _, name := range running {
			matched = matched || MatchesAny([]string{p}, name)
		}
		if matched {
			continue
		}
		if len(running) == 0 {
			out = append(out, fmt.Sprintf("scope.includeJobs pattern %q matches no job: no job runs on the clusters in scope", p))
			continue
		}
		out = append(out, fmt.Sprintf("scope.includeJobs pattern %q matches no job running on the clusters in scope; they run %s", p, NameList(running)))
	}
	return out
}

func anyInScope(list, values []string) bool {
	for _, v := range values {
		if InScope(list, v) {
			return true
		}
	}
	return false
}

// NameList is the sorted, distinct names, at most maxNamesListed of them.
func NameList(names []string) string {
	seen := map[string]bool{}
	var uniq []string
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			uniq = append(uniq, n)
		}
	}
	if len(uniq) == 0 {
		return "none"
	}
	sort.Strings(uniq)
	if len(uniq) > MaxNamesListed {
		return strings.Join(uniq[:MaxNamesListed], ", ") + fmt.Sprintf(" and %d more", len(uniq)-MaxNamesListed)
	}
	return strings.Join(uniq, ", ")
}

// Scope selects what a maintenance window or governance run covers. Empty
// lists mean "all". Job patterns are path.Match globs on the job name.
type Scope struct {
	// Tenants are the tenants in scope; empty: every tenant.
	Tenants []string `json:"tenants,omitempty" yaml:"tenants,omitempty"`
	// Clusters are the Flink clusters (cluster ids) in scope; empty: every
	// cluster of those tenants.
	Clusters []string `json:"clusters,omitempty" yaml:"clusters,omitempty"`
	// IncludeJobs are globs on job names; when set, only matching jobs are
	// in scope.
	IncludeJobs []string `json:"includeJobs,omitempty" yaml:"includeJobs,omitempty"`
	// ExcludeJobs are globs on job names taken out of scope, even when
	// includeJobs matches them.
	ExcludeJobs []string `json:"excludeJobs,omitempty" yaml:"excludeJobs,omitempty"`
}

// GlobProblems names every job pattern of the scope that is not a valid
// path.Match glob.
func (s Scope) GlobProblems() []string {
	var out []string
	for _, p := range append(append([]string{}, s.IncludeJobs...), s.ExcludeJobs...) {
		if _, err := path.Match(p, ""); err != nil {
			out = append(out, fmt.Sprintf("scope job pattern %q is not a valid glob: %v", p, err))
		}
	}
	return out
}

// JobTarget is one running job a window stops and restarts. Key
// (cluster/job-name) identifies it across the window; the Flink job ID
// changes when it is restarted.
type JobTarget struct {
	Key       string `json:"key"`
	Tenant    string `json:"tenant"`
	ClusterID string `json:"clusterId"`
	// KubeCluster is the Kubernetes cluster the job runs in when the
	// inventory spans several.
	KubeCluster   string                  `json:"kubeCluster,omitempty"`
	RESTURL       string                  `json:"restUrl"`
	JobName       string                  `json:"jobName"`
	JobID         string                  `json:"jobId"`
	CheckpointDir string                  `json:"checkpointDir,omitempty"`
	SavepointDir  string                  `json:"savepointDir,omitempty"`
	Restart       inventory.RestartRecipe `json:"restart"`
	// Drillable says the inventory has a drill recipe for the job, so a
	// window can drill its savepoint as the canary.
	Drillable bool `json:"drillable,omitempty"`
	// DrillBuilds are the Flink versions (major.minor) the drill recipe
	// has a build of the job for, for a migration rehearsal.
	DrillBuilds []string `json:"drillBuilds,omitempty"`
	// DrainOnStop is the inventory's per-job drain setting, if any.
	DrainOnStop *bool `json:"drainOnStop,omitempty"`
}

// Label is the job's key, prefixed by its Kubernetes cluster when the
// inventory spans several.
func (t JobTarget) Label() string {
	if t.KubeCluster == "" {
		return t.Key
	}
	return t.KubeCluster + "/" + t.Key
}

// SkippedJob is a job in scope that the window leaves alone, and why.
type SkippedJob struct {
	Key    string `json:"key"`
	JobID  string `json:"jobId"`
	Reason string `json:"reason"`
}
