package app

import (
	"context"
	"fmt"

	"github.com/flinkmaint/flinkmaint/activities/core"
	"github.com/flinkmaint/flinkmaint/internal/config"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// storageTarget is a storage URI of the configuration and its key.
type storageTarget struct{ key, uri string }

// startTargets are the file systems the worker reaches at start, those
// it writes to: storage.defaultFS and every storage.writableRoots entry.
func startTargets(cfg config.Config) []storageTarget {
	var targets []storageTarget
	if cfg.Storage.DefaultFS != "" {
		targets = append(targets, storageTarget{"storage.defaultFS", cfg.Storage.DefaultFS})
	}
	for i, r := range cfg.Storage.WritableRoots {
		targets = append(targets, storageTarget{fmt.Sprintf("storage.writableRoots[%d]", i), r})
	}
	return targets
}

// ConnectStorage connects to the file systems of startTargets before the
// worker takes work. For HDFS that logs in (with storage.kerberos, from the
// keytab or the ticket cache) and asks the NameNode something, so
// credentials the KDC or the cluster refuses are found at start
// (storage.ErrAuthentication, naming principal and realm) rather than by
// the first activity. Local paths cost nothing. Each file system gets up
// to storage.rpcTimeout; the first error is returned, naming the setting
// it came from.
func ConnectStorage(ctx context.Context, cfg config.Config, fs core.Storage) error {
	for _, tg := range startTargets(cfg) {
		cctx, cancel := context.WithTimeout(ctx, cfg.Storage.RPCTimeout.D())
		_, _, err := fs.Resolve(cctx, tg.uri)
		cancel()
		if err != nil {
			return fmt.Errorf("%s=%q: %w", tg.key, tg.uri, err)
		}
	}
	return nil
}

// CheckStorage makes, for the file systems ConnectStorage reaches and
// those of the cleanup and drill directories runs reach later, every
// check of connecting that needs no network (storage.Resolver.Check): the
// Hadoop configuration and the namenodes it names, the Kerberos files,
// the namenode's principal. It returns every problem, each naming its key.
func CheckStorage(cfg config.Config, r *storage.Resolver) []error {
	targets := startTargets(cfg)
	c := cfg.Cleanup
	for _, tg := range []storageTarget{{"cleanup.trashRoot", c.TrashRoot}, {"cleanup.auditRoot", c.AuditRoot}, {"cleanup.planDir", c.PlanDir}, {"drill.root", cfg.Drill.Root}} {
		if tg.uri != "" {
			targets = append(targets, tg)
		}
	}
	for i, root := range c.ReferenceRoots {
		targets = append(targets, storageTarget{fmt.Sprintf("cleanup.referenceRoots[%d]", i), root})
	}
	var errs []error
	seen := map[string]bool{}
	for _, tg := range targets {
		if err := r.Check(tg.uri); err != nil {
			// One cluster's problem once, at the first key naming it.
			if msg := err.Error(); !seen[msg] {
				seen[msg] = true
				errs = append(errs, fmt.Errorf("%s=%q: %w", tg.key, tg.uri, err))
			}
		}
	}
	return errs
}
