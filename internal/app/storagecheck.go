package app

import (
	"context"
	"fmt"

	"github.com/flinkmaint/flinkmaint/activities"
	"github.com/flinkmaint/flinkmaint/internal/config"
)

// ConnectStorage connects to the file systems the worker writes to,
// storage.defaultFS and every storage.writableRoots entry, before the
// worker takes work. For HDFS that logs in (with storage.kerberos, from the
// keytab or the ticket cache) and asks the NameNode something, so
// credentials the KDC or the cluster refuses are found at start
// (storage.ErrAuthentication, naming principal and realm) rather than by
// the first activity. Local paths cost nothing. Each file system gets up
// to storage.rpcTimeout; the first error is returned, naming the setting
// it came from.
func ConnectStorage(ctx context.Context, cfg config.Config, fs activities.Storage) error {
	type target struct{ key, uri string }
	var targets []target
	if cfg.Storage.DefaultFS != "" {
		targets = append(targets, target{"storage.defaultFS", cfg.Storage.DefaultFS})
	}
	for i, r := range cfg.Storage.WritableRoots {
		targets = append(targets, target{fmt.Sprintf("storage.writableRoots[%d]", i), r})
	}
	for _, tg := range targets {
		cctx, cancel := context.WithTimeout(ctx, cfg.Storage.RPCTimeout.D())
		_, _, err := fs.Resolve(cctx, tg.uri)
		cancel()
		if err != nil {
			return fmt.Errorf("%s=%q: %w", tg.key, tg.uri, err)
		}
	}
	return nil
}
