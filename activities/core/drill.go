package core

import (
	"context"
	"strings"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// DrillSite is the drill cluster and root, and the storage they are on.
type DrillSite struct {
	Drill   DrillSettings
	Storage Storage
}

// PathSegment makes a name safe as one path element.
func PathSegment(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ':' || r == '\\' || r < ' ' {
			return '_'
		}
		return r
	}, s)
}

// TargetOf builds the target of a job of c, with its drill recipe.
func TargetOf(c inventory.Cluster, job, snapshot, kind string) DrillTarget {
	t := DrillTarget{Key: JobKey(c.ClusterID, job), Tenant: c.Tenant, ClusterID: c.ClusterID, KubeCluster: c.KubeCluster,
		JobName: job, Snapshot: snapshot, Kind: kind}
	for _, js := range c.Jobs {
		if js.Name == job && js.Drill != nil {
			r := *js.Drill
			if js.Restart.Kind == inventory.RestartRESTJarRun {
				if r.Jar == "" {
					r.Jar = js.Restart.Jar
				}
				if r.EntryClass == "" {
					r.EntryClass = js.Restart.EntryClass
				}
				if r.Parallelism == 0 {
					r.Parallelism = js.Restart.Parallelism
				}
			}
			if r.Verify != nil && r.Verify.Jar == "" {
				v := *r.Verify
				v.Jar = r.Jar
				r.Verify = &v
			}
			t.Recipe = &r
		}
	}
	return t
}

// CheckRootIsolation refuses drill clusters that are inventory
// clusters and a drill root inside or around production state.
func (site DrillSite) CheckRootIsolation(ctx context.Context, inv inventory.Inventory) error {
	d := site.Drill
	for _, c := range inv.Clusters {
		for _, u := range d.RestURLs() {
			if strings.TrimRight(c.RESTURL, "/") == strings.TrimRight(u, "/") {
				return NonRetryable(ErrTypeInvalidInput, "drill cluster %s is inventory cluster %s: drills never run on a production cluster; give them a session cluster of their own", u, c.ClusterID)
			}
		}
	}
	dfs, dpath, err := site.Storage.Resolve(ctx, d.Root)
	if err != nil {
		return Classify("resolve drill.root "+d.Root, err)
	}
	type dir struct{ what, uri string }
	var dirs []dir
	for _, t := range inv.Tenants {
		dirs = append(dirs, dir{"tenant " + t.Name + " root", t.Root})
	}
	for _, c := range inv.Clusters {
		for _, p := range []dir{{"checkpoint dir", c.CheckpointDir}, {"savepoint dir", c.SavepointDir}, {"HA storage dir", c.HAStorageDir}} {
			if p.uri != "" {
				dirs = append(dirs, dir{"cluster " + c.ClusterID + " " + p.what, p.uri})
			}
		}
	}
	for _, p := range dirs {
		fs, pp, err := site.Storage.Resolve(ctx, p.uri)
		if err != nil {
			return Classify("resolve "+p.what+" "+p.uri, err)
		}
		if !Nested(dpath, pp) {
			continue
		}
		same, err := site.Storage.CompareFileSystems(ctx, dfs.URI().String(), fs.URI().String())
		if err != nil || same != storage.DifferentFileSystem {
			return NonRetryable(ErrTypeInvalidInput, "drill.root %s overlaps the %s %s: a drill's checkpoints would land in, or its cleanup would reach into, production state; use a root outside every tenant tree", d.Root, p.what, p.uri)
		}
	}
	return nil
}

// StrictlyBelow says whether p lies below root, not at it.
func StrictlyBelow(p, root string) bool {
	return strings.HasPrefix(strings.TrimRight(p, "/")+"/", strings.TrimRight(root, "/")+"/") && strings.TrimRight(p, "/") != strings.TrimRight(root, "/")
}

// Nested says whether one path equals or lies below the other.
func Nested(a, b string) bool {
	a, b = strings.TrimRight(a, "/")+"/", strings.TrimRight(b, "/")+"/"
	return strings.HasPrefix(a, b) || strings.HasPrefix(b, a)
}

// Snapshot kinds.
const (
	SnapshotCheckpoint = "checkpoint"
	SnapshotSavepoint  = "savepoint"
)

// DrillTarget is one snapshot to prove.
type DrillTarget struct {
	Key         string `json:"key"`
	Tenant      string `json:"tenant"`
	ClusterID   string `json:"clusterId"`
	KubeCluster string `json:"kubeCluster,omitempty"`
	JobName     string `json:"jobName"`
	// JobID is the production job the snapshot belongs to, when known.
	JobID    string `json:"jobId,omitempty"`
	Snapshot string `json:"snapshot"`
	Kind     string `json:"kind"`
	// Recipe is the job's drill recipe with the restart recipe's defaults
	// filled in; nil when the inventory has none (tier 1 only).
	Recipe *inventory.DrillRecipe `json:"recipe,omitempty"`
	// DrillCluster and DrillDir are where the real restore runs and
	// checkpoints; empty without tier 2.
	DrillCluster string `json:"drillCluster,omitempty"`
	DrillDir     string `json:"drillDir,omitempty"`
}
