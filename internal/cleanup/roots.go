package cleanup

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/layout"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// Resolver finds the file system serving a URI and the URI's path on it
// (the worker's storage port).
type Resolver func(ctx context.Context, uri string) (storage.FileSystem, string, error)

// ScanRoots returns the checkpoint, savepoint and HA roots of the clusters
// and the one file system they are on (nil without roots). A root that
// does not exist is left out with a note (a cluster that never took a
// savepoint); roots on a second file system are refused, since one plan
// covers one file system.
func ScanRoots(ctx context.Context, resolve Resolver, clusters []inventory.Cluster) (storage.FileSystem, []layout.Root, []string, error) {
	var fs storage.FileSystem
	var roots []layout.Root
	var notes []string
	seen := map[string]bool{}
	for _, c := range clusters {
		for _, r := range []struct {
			dir  string
			kind layout.RootKind
		}{{c.CheckpointDir, layout.CheckpointRoot}, {c.SavepointDir, layout.SavepointRoot}, {c.HAStorageDir, layout.HARoot}} {
			if r.dir == "" {
				continue
			}
			rfs, p, err := resolve(ctx, r.dir)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("cluster %s %s %s: %w", c.ClusterID, r.kind, r.dir, err)
			}
			p = strings.TrimRight(p, "/")
			if fs != nil && rfs.URI().String() != fs.URI().String() {
				return nil, nil, nil, invalidInput("scope spans two file systems (%s and %s, cluster %s): one plan covers one file system; narrow the scope with tenants or clusters",
					fs.URI(), rfs.URI(), c.ClusterID)
			}
			fs = rfs
			key := r.kind.String() + " " + p
			if seen[key] {
				continue
			}
			seen[key] = true
			if _, err := rfs.Stat(ctx, p); err != nil {
				if errors.Is(err, storage.ErrNotFound) {
					notes = append(notes, fmt.Sprintf("%s %s of cluster %s does not exist; nothing to plan there", r.kind, p, c.ClusterID))
					continue
				}
				return nil, nil, nil, fmt.Errorf("stat %s: %w", p, err)
			}
			roots = append(roots, layout.Root{Path: p, Kind: r.kind})
		}
	}
	sort.Slice(roots, func(i, j int) bool { return roots[i].Path < roots[j].Path })
	return fs, roots, notes, nil
}

// Destinations are where an execution writes: the file system of the
// plan's items, the trash and audit roots on it ("" when not configured;
// the manifest then goes to <Trash>/_audit), and the guard every
// destructive path must pass.
type Destinations struct {
	FS    storage.FileSystem
	Trash string
	Audit string
	Guard *storage.Guard
}

// ManifestRoot is where the audit manifest goes.
func (d Destinations) ManifestRoot() string {
	if d.Audit != "" {
		return d.Audit
	}
	return d.Trash + "/_audit"
}

// ResolveDestinations checks the worker's trash and audit roots against
// the plan: items and trash on one file system (trash moves are renames),
// a trash root for a plan that trashes, a home for the manifest. Every
// destructive path must then lie strictly under the plan's scanned roots
// or the trash and audit roots.
func ResolveDestinations(ctx context.Context, resolve Resolver, plan Plan, trashRoot, auditRoot string) (Destinations, error) {
	var d Destinations
	// The plan's paths decide the file system; a plan of Kubernetes
	// objects alone uses the trash (or audit) root's for the manifest.
	anchor := trashRoot
	if len(plan.Delete) > 0 {
		anchor = plan.Delete[0].Path
	} else if anchor == "" {
		anchor = auditRoot
	}
	if anchor == "" {
		return d, fmt.Errorf("%w: worker config has neither cleanup.trashRoot nor cleanup.auditRoot: the audit manifest needs a home", ErrInvalidConfig)
	}
	fs, _, err := resolve(ctx, anchor)
	if err != nil {
		return d, fmt.Errorf("resolve %s: %w", anchor, err)
	}
	d.FS = fs
	if trashRoot != "" {
		tfs, tp, err := resolve(ctx, trashRoot)
		if err != nil {
			return d, fmt.Errorf("resolve cleanup.trashRoot %s: %w", trashRoot, err)
		}
		if tfs.URI().String() != fs.URI().String() {
			return d, fmt.Errorf("%w: cleanup.trashRoot %s is on %s, the plan's items on %s: trash moves are renames and need one file system",
				ErrInvalidConfig, trashRoot, tfs.URI(), fs.URI())
		}
		d.Trash = strings.TrimRight(tp, "/")
	}
	if plan.Policy.Action == ActionTrash && d.Trash == "" {
		return d, fmt.Errorf("%w: the plan moves items to trash but worker config cleanup.trashRoot is empty", ErrInvalidConfig)
	}
	if auditRoot != "" {
		_, ap, err := resolve(ctx, auditRoot)
		if err != nil {
			return d, fmt.Errorf("resolve cleanup.auditRoot %s: %w", auditRoot, err)
		}
		d.Audit = strings.TrimRight(ap, "/")
	}
	if d.Trash == "" && d.Audit == "" {
		return d, fmt.Errorf("%w: worker config has neither cleanup.trashRoot nor cleanup.auditRoot: the audit manifest needs a home", ErrInvalidConfig)
	}
	guardRoots := []string{}
	for _, r := range plan.Roots {
		guardRoots = append(guardRoots, r.Path)
	}
	for _, r := range []string{d.Trash, d.Audit} {
		if r != "" {
			guardRoots = append(guardRoots, r)
		}
	}
	if d.Guard, err = storage.NewGuard(guardRoots...); err != nil {
		return d, invalidPlan("plan roots: %v", err)
	}
	return d, nil
}
