package doctor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"go.temporal.io/sdk/activity"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/flink"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
)

// describeClusterConcurrency bounds the clusters asked at once: a fleet of
// hundreds is described in seconds without a burst at every JobManager.
const describeClusterConcurrency = 8

// DescribeInventoryInput selects what DescribeInventory describes; an
// empty list selects everything.
type DescribeInventoryInput struct {
	Tenants  []string `json:",omitempty"`
	Clusters []string `json:",omitempty"`
}

// InventoryView is the fleet as the worker sees it: what discovery found,
// what each cluster runs and where each job would restore from. A problem
// is a finding, never a failure: Errors name what could not be seen.
type InventoryView struct {
	Tenants  []inventory.Tenant `json:"tenants"`
	Clusters []ClusterView      `json:"clusters"`
	// Retired are the cluster ids the inventory declares gone for good.
	Retired []string `json:"retiredClusters,omitempty"`
	// Errors are discovery's own (an inventory that cannot be read) and a
	// scope entry that selects nothing.
	Errors []string `json:"errors,omitempty"`
}

// Problems counts every error in the view: discovery's, each cluster's
// and each job's.
func (v InventoryView) Problems() int {
	n := len(v.Errors)
	for _, c := range v.Clusters {
		if c.Error != "" {
			n++
		}
		for _, j := range c.Jobs {
			if j.Error != "" {
				n++
			}
		}
	}
	return n
}

// ClusterView is one cluster: the inventory's record, the version its
// JobManager answers with, and its jobs.
type ClusterView struct {
	Tenant        string                   `json:"tenant"`
	ClusterID     string                   `json:"clusterId"`
	KubeCluster   string                   `json:"kubeCluster,omitempty"`
	Namespace     string                   `json:"namespace,omitempty"`
	Source        inventory.Source         `json:"source"`
	Mode          inventory.DeploymentMode `json:"mode"`
	RESTURL       string                   `json:"restUrl"`
	Resource      *inventory.ObjectRef     `json:"resource,omitempty"`
	CheckpointDir string                   `json:"checkpointDir,omitempty"`
	SavepointDir  string                   `json:"savepointDir,omitempty"`
	HAStorageDir  string                   `json:"haStorageDir,omitempty"`
	// FlinkVersion is what the JobManager says, else the inventory's.
	FlinkVersion string    `json:"flinkVersion,omitempty"`
	Jobs         []JobView `json:"jobs"`
	// Error says why the cluster's jobs could not be listed.
	Error string `json:"error,omitempty"`
}

// JobView is one job: a job the cluster lists, or a job the inventory
// knows that the cluster does not run (no ID, no state).
type JobView struct {
	Name  string `json:"name"`
	ID    string `json:"id,omitempty"`
	State string `json:"state,omitempty"`
	// Restart is the inventory's restart recipe kind; empty: the
	// inventory cannot bring the job back, so a window skips it.
	Restart inventory.RestartKind `json:"restart,omitempty"`
	// Restore points: the latest completed checkpoint and savepoint, and
	// what the job was started from.
	LatestCheckpoint string `json:"latestCheckpoint,omitempty"`
	LatestSavepoint  string `json:"latestSavepoint,omitempty"`
	RestoredFrom     string `json:"restoredFrom,omitempty"`
	// Note says what a window would make of the job when that is not
	// plain (no recipe, a name the cluster runs twice, not running).
	Note string `json:"note,omitempty"`
	// Error says why the job's checkpoints could not be read.
	Error string `json:"error,omitempty"`
}

// DescribeInventory lists the tenants and clusters discovery finds, the
// jobs each cluster lists with their state and restore points, and the
// jobs the inventory knows that no cluster runs. It reads only.
func (a *Activities) DescribeInventory(ctx context.Context, in DescribeInventoryInput) (InventoryView, error) {
	if a.Inventory == nil || a.Flink == nil {
		return InventoryView{}, core.NonRetryable(core.ErrTypeInventory, "worker has no inventory source or Flink client configured")
	}
	var view InventoryView
	inv, err := core.Discover(ctx, a.Inventory)
	if err != nil {
		view.Errors = append(view.Errors, "discovery: "+err.Error())
		return view, nil
	}
	view.Retired = inv.RetiredClusters
	for _, t := range inv.Tenants {
		if core.InScope(in.Tenants, t.Name) {
			view.Tenants = append(view.Tenants, t)
		}
	}
	var clusters []inventory.Cluster
	for _, c := range inv.Clusters {
		if core.InScope(in.Tenants, c.Tenant) && core.InScope(in.Clusters, c.ClusterID) {
			clusters = append(clusters, c)
		}
	}
	view.Errors = append(view.Errors, unknownNames("tenant", in.Tenants, inv.Tenants, func(t inventory.Tenant) string { return t.Name })...)
	view.Errors = append(view.Errors, unknownNames("cluster", in.Clusters, inv.Clusters, func(c inventory.Cluster) string { return c.ClusterID })...)

	view.Clusters = make([]ClusterView, len(clusters))
	sem := make(chan struct{}, describeClusterConcurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for i, c := range clusters {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			view.Clusters[i] = a.describeCluster(ctx, c)
			mu.Lock()
			done++
			activity.RecordHeartbeat(ctx, done)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Slice(view.Tenants, func(i, j int) bool { return view.Tenants[i].Name < view.Tenants[j].Name })
	sort.Slice(view.Clusters, func(i, j int) bool {
		if view.Clusters[i].Tenant != view.Clusters[j].Tenant {
			return view.Clusters[i].Tenant < view.Clusters[j].Tenant
		}
		return view.Clusters[i].ClusterID < view.Clusters[j].ClusterID
	})
	return view, ctx.Err()
}

// unknownNames names each wanted entry the inventory does not have.
func unknownNames[T any](what string, wanted []string, have []T, name func(T) string) []string {
	var known []string
	for _, h := range have {
		known = append(known, name(h))
	}
	sort.Strings(known)
	has := strings.Join(known, ", ")
	if has == "" {
		has = "none"
	}
	var out []string
	for _, w := range wanted {
		if !slices.Contains(known, w) {
			out = append(out, fmt.Sprintf("%s %q is not in the inventory; it has %s", what, w, has))
		}
	}
	return out
}

// describeCluster lists one cluster's jobs and reads each one's restore
// points; an unreachable cluster or job is said in the view.
func (a *Activities) describeCluster(ctx context.Context, c inventory.Cluster) ClusterView {
	v := ClusterView{Tenant: c.Tenant, ClusterID: c.ClusterID, KubeCluster: c.KubeCluster, Namespace: c.Namespace,
		Source: c.Source, Mode: c.Mode, RESTURL: c.RESTURL, Resource: c.Resource, CheckpointDir: c.CheckpointDir,
		SavepointDir: c.SavepointDir, HAStorageDir: c.HAStorageDir, FlinkVersion: c.FlinkVersion, Jobs: []JobView{}}
	recipes := map[string]inventory.RestartKind{}
	for _, s := range c.Jobs {
		recipes[s.Name] = s.Restart.Kind
	}
	client, err := a.Flink.For(ctx, c.RESTURL)
	if err != nil {
		v.Error = fmt.Sprintf("REST endpoint %q: %v", c.RESTURL, err)
		return v
	}
	if o, err := client.ClusterOverview(ctx); err == nil && o.FlinkVersion != "" {
		v.FlinkVersion = o.FlinkVersion
	}
	jobs, err := client.ListJobs(ctx)
	if err != nil {
		v.Error = fmt.Sprintf("list jobs at %s: %v", c.RESTURL, err)
		for _, s := range c.Jobs {
			v.Jobs = append(v.Jobs, JobView{Name: s.Name, Restart: s.Restart.Kind, Note: "in the inventory; the cluster's jobs are unknown"})
		}
		return v
	}
	// What a window would do with each job, decided where a window decides.
	_, skipped := core.MatchJobs(c, jobs, core.Scope{}, true)
	skips := map[string]string{}
	for _, sk := range skipped {
		skips[sk.JobID] = "a window skips it: " + sk.Reason
	}
	listed := map[string]bool{}
	for _, j := range jobs {
		listed[j.Name] = true
		jv := JobView{Name: j.Name, ID: j.ID, State: string(j.State), Restart: recipes[j.Name], Note: skips[j.ID]}
		stats, err := client.Checkpoints(ctx, j.ID)
		switch {
		case errors.Is(err, flink.ErrJobNotFound):
			// Ended and dropped from the cluster's history since listed.
			jv.Note = joinNotes(jv.Note, "the cluster no longer knows this job")
		case errors.Is(err, flink.ErrCheckpointingDisabled):
			// Checkpointing off, or a job that ended (a failed restore)
			// before its execution graph, and its statistics, existed.
			jv.Note = joinNotes(jv.Note, "no checkpoint statistics: checkpointing is off, or the job never started running")
		case err != nil && (j.State == flink.JobInitializing || j.State == flink.JobCreated) && errors.Is(err, flink.ErrServerError):
			// Flink answers 500 "not available while the JobManager is
			// initializing" until the job's JobMaster runs.
			jv.Note = joinNotes(jv.Note, "no checkpoint statistics yet: the job is "+string(j.State))
		case err != nil:
			jv.Error = fmt.Sprintf("checkpoints: %v", err)
		default:
			if l := stats.Latest.Completed; l != nil {
				jv.LatestCheckpoint = l.ExternalPath
			}
			if l := stats.Latest.Savepoint; l != nil {
				jv.LatestSavepoint = l.ExternalPath
			}
			if r := stats.Latest.Restored; r != nil {
				jv.RestoredFrom = r.ExternalPath
			}
		}
		v.Jobs = append(v.Jobs, jv)
	}
	for _, s := range c.Jobs {
		if !listed[s.Name] {
			v.Jobs = append(v.Jobs, JobView{Name: s.Name, Restart: s.Restart.Kind, Note: "in the inventory; the cluster does not list it"})
		}
	}
	sort.SliceStable(v.Jobs, func(i, j int) bool { return v.Jobs[i].Name < v.Jobs[j].Name })
	return v
}

// joinNotes adds note to notes.
func joinNotes(notes, note string) string {
	if notes == "" {
		return note
	}
	return notes + "; " + note
}
