package governance

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/cleanup"
	"github.com/flinkmaint/flinkmaint/internal/inventory"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// RestoreTrashInput names the governance run whose trash goes back.
type RestoreTrashInput struct {
	RunID string `json:"runId"`
	// Paths, when set, are globs of original paths: only matching items,
	// items under a matching dir and items holding a matching path go
	// back, each with what its _metadata name.
	Paths  []string `json:"paths,omitempty"`
	DryRun bool     `json:"dryRun,omitempty"`
}

// RestoreTrashResult is what a restore did, or (dry) would do, and the
// tenants whose roots the items go back into.
type RestoreTrashResult struct {
	cleanup.RestoreResult
	Tenants []string `json:"tenants,omitempty"`
}

// RestoreTrash moves the trashed items of a governance run back to their
// original paths (cleanup.Restore), each snapshot whole, with the files
// its _metadata names from this run's trash or an earlier run's: each
// only into a root of a tenant of the inventory and never into a job dir
// a live job of the inventory writes, each checked before anything moves.
// Dry, it says what would go back and what would be refused, and touches
// nothing. Retried, it goes on where it stopped.
func (a *Activities) RestoreTrash(ctx context.Context, in RestoreTrashInput) (RestoreTrashResult, error) {
	var out RestoreTrashResult
	if a.Storage == nil || a.Inventory == nil {
		return out, core.NonRetryable(core.ErrTypeInventory, "worker has no storage or inventory source configured")
	}
	if a.Cleanup.TrashRoot == "" {
		return out, core.NonRetryable(core.ErrTypeCleanupNotConfigured, "worker config cleanup.trashRoot is empty: this worker keeps no trash to restore from")
	}
	if err := CheckRunID(in.RunID); err != nil {
		return out, core.NonRetryable(core.ErrTypeInvalidInput, "%v", err)
	}
	fs, trash, err := a.Storage.Resolve(ctx, a.Cleanup.TrashRoot)
	if err != nil {
		return out, core.Classify("resolve cleanup.trashRoot "+a.Cleanup.TrashRoot, err)
	}
	trash = strings.TrimRight(trash, "/")
	audit := trash + "/_audit"
	if a.Cleanup.AuditRoot != "" {
		if _, audit, err = a.Storage.Resolve(ctx, a.Cleanup.AuditRoot); err != nil {
			return out, core.Classify("resolve cleanup.auditRoot "+a.Cleanup.AuditRoot, err)
		}
	}
	inv, err := core.Discover(ctx, a.Inventory)
	if err != nil {
		return out, err
	}
	// Items go back only into a tenant's root on the trash's file system.
	roots := []string{trash, audit}
	rootTenant := map[string]string{}
	for _, t := range inv.Tenants {
		if t.Root == "" {
			continue
		}
		tfs, tp, err := a.Storage.Resolve(ctx, t.Root)
		if err != nil {
			return out, core.Classify("resolve tenant root "+t.Root, err)
		}
		if tfs.URI().String() != fs.URI().String() {
			continue
		}
		tp = strings.TrimRight(tp, "/")
		roots = append(roots, tp)
		rootTenant[storagePathOf(tp)] = t.Name
	}
	guard, err := storage.NewGuardOn(fs.URI().String(), roots...)
	if err != nil {
		return out, core.NonRetryable(core.ErrTypeCleanupNotConfigured, "restore roots: %v", err)
	}
	cfg := cleanup.RestoreConfig{FS: fs, Guard: guard, TrashRoot: trash, AuditRoot: audit, RunID: in.RunID,
		Paths: in.Paths, DryRun: in.DryRun, Now: func() time.Time { return core.Now(a.Now) },
		Progress: func(done, total int) { activity.RecordHeartbeat(ctx, done) },
		// Nothing goes into a job dir a live job of the inventory writes.
		Live: func(ctx context.Context) (cleanup.Live, error) {
			if a.Flink == nil {
				return cleanup.Live{}, errors.New("this worker has no Flink client configured: whether a live job writes into the dir cannot be told")
			}
			live, _, err := a.sources().liveInventory(ctx, inv)
			return live, err
		},
	}
	if a.Orphans != nil {
		cfg.Objects = recreator{a.Orphans}
	}
	// Finding a snapshot's closure reads its _metadata and walks the
	// trash before anything moves: heartbeat through it.
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(core.PollInterval(a.PollInterval))
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				activity.RecordHeartbeat(ctx, "restore of run "+in.RunID)
			}
		}
	}()
	res, err := cleanup.Restore(ctx, cfg)
	close(stop)
	if err != nil {
		return out, core.Classify("restore the trash of run "+in.RunID, err)
	}
	out.RestoreResult = res
	type put struct{ files, bytes int64 }
	back := map[string]*put{}
	for _, it := range res.Items {
		p := storagePathOf(it.Path)
		for root, t := range rootTenant {
			if !strings.HasPrefix(p+"/", root+"/") {
				continue
			}
			if back[t] == nil {
				back[t] = &put{}
				out.Tenants = append(out.Tenants, t)
			}
			if !in.DryRun && it.Outcome == cleanup.OutcomeRestored && it.Detail != cleanup.AlreadyBack {
				back[t].files += it.Files
				back[t].bytes += it.Bytes
			}
		}
	}
	sort.Strings(out.Tenants)
	if a.Metrics != nil && !in.DryRun {
		for _, t := range out.Tenants {
			a.Metrics.CleanupRestored(t, back[t].files, back[t].bytes)
		}
		a.Metrics.Succeeded(OpRestoreTrash, core.Now(a.Now))
	}
	return out, nil
}

// recreator re-creates trashed objects through the worker's Kubernetes
// access (cleanup.ObjectRecreator).
type recreator struct{ o core.OrphanControl }

func (r recreator) Recreate(ctx context.Context, ref inventory.ObjectRef, json []byte, runID string) ([]string, error) {
	return r.o.RecreateObject(ctx, ref, json, runID)
}

// storagePathOf is a URI's path part, as storage parses it.
func storagePathOf(p string) string {
	if u, err := storage.ParseURI(p); err == nil {
		return u.Path
	}
	return p
}
