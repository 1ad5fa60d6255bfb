package cleanup

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// PurgeConfig configures PurgeTrash.
type PurgeConfig struct {
	FS storage.FileSystem
	// TrashRoot is the root trash runs live under; nothing outside it is
	// ever removed by a purge, whatever FS's own guard allows.
	TrashRoot string
	// AuditRoot receives the purge manifest under _purge/ (default
	// <TrashRoot>/_audit).
	AuditRoot string
	// TTL: a run's trash is purged when nothing in it changed for this long.
	TTL time.Duration
	// Now is the purge time (the caller's clock).
	Now time.Time
	// Needed, when set, is read right before the runs are judged: every
	// path that something that could restore needs (a live job's restore
	// point and latest checkpoint and what their _metadata name, an
	// operator record, what the retained snapshots under the roots name:
	// TrashReferences), each with who needs it. A run holding a needed
	// path, or held by one, is refused, not purged. An error stops the
	// purge before anything is removed.
	Needed func(ctx context.Context) (map[string]string, error)
}

// PurgeResult lists what a purge did.
type PurgeResult struct {
	Manifest string   `json:"manifest,omitempty"`
	Purged   []Record `json:"purged"`
	Kept     []string `json:"kept"`
	// Refused are runs past the TTL that a restore source needs.
	Refused []Record `json:"refused,omitempty"`
}

// PurgeTrash removes trash runs (<TrashRoot>/<run-id>) older than the TTL
// and writes a manifest of what it removed. Entries starting with "_" (the
// audit root) are never purged.
func PurgeTrash(ctx context.Context, cfg PurgeConfig) (PurgeResult, error) {
	bad := func(format string, args ...any) error {
		return &Error{Op: "purge trash", Kind: ErrInvalidConfig, Err: fmt.Errorf(format, args...)}
	}
	if cfg.FS == nil {
		return PurgeResult{}, bad("FS is nil")
	}
	if cfg.TTL <= 0 {
		return PurgeResult{}, bad("TTL %v must be positive", cfg.TTL)
	}
	if cfg.Now.IsZero() {
		return PurgeResult{}, bad("Now is zero; pass the purge time")
	}
	base := cfg.FS.URI().String()
	root, err := normPath(cfg.TrashRoot, base)
	if err != nil || cfg.TrashRoot == "" {
		return PurgeResult{}, bad("TrashRoot %q: want an absolute path or URI", cfg.TrashRoot)
	}
	root = strings.TrimSuffix(root, "/")
	guard, err := storage.NewGuard(root)
	if err != nil {
		return PurgeResult{}, bad("TrashRoot %q: %v", cfg.TrashRoot, err)
	}
	audit := cfg.AuditRoot
	if audit == "" {
		audit = root + "/" + auditDirName
	}
	var runs []storage.FileInfo
	err = cfg.FS.List(ctx, root, 0, func(b []storage.FileInfo) error {
		for _, fi := range b {
			if !strings.HasPrefix(fi.Name, "_") {
				runs = append(runs, fi)
			}
		}
		return nil
	})
	if err != nil {
		return PurgeResult{}, classify("list trash", root, err)
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].Path < runs[j].Path })
	var needed map[string]string
	if cfg.Needed != nil {
		if needed, err = cfg.Needed(ctx); err != nil {
			return PurgeResult{}, &Error{Op: "read what restore sources need before a purge", Retryable: true, Err: err}
		}
	}
	var res PurgeResult
	for _, run := range runs {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		var newest time.Time
		var files, dirs, bytes int64
		err := cfg.FS.Walk(ctx, run.Path, func(fi storage.FileInfo) error {
			if fi.ModTime.After(newest) {
				newest = fi.ModTime
			}
			if fi.IsDir {
				dirs++
			} else {
				files++
				bytes += fi.Size
			}
			return nil
		})
		if err != nil {
			return res, classify("walk trash run", run.Path, err)
		}
		if cfg.Now.Sub(newest) < cfg.TTL {
			res.Kept = append(res.Kept, run.Path)
			continue
		}
		if by, ok := neededUnder(needed, run.Path); ok {
			res.Refused = append(res.Refused, Record{Path: run.Path, Files: files, Dirs: dirs, Bytes: bytes, Outcome: OutcomeRefused,
				Time: cfg.Now.UTC(), Detail: "a restore source needs it: " + by})
			continue
		}
		if _, err := guard.Check(cfg.FS.URI(), run.Path); err != nil {
			return res, &Error{Op: "purge trash", Path: run.Path, Kind: ErrOutsideRoots, Err: err}
		}
		if err := cfg.FS.RemoveAll(ctx, run.Path); err != nil {
			return res, classify("purge trash run", run.Path, err)
		}
		res.Purged = append(res.Purged, Record{Path: run.Path, Files: files, Dirs: dirs, Bytes: bytes, Outcome: OutcomePurged,
			Time: cfg.Now.UTC(), Detail: "unchanged since " + newest.UTC().Format(time.RFC3339)})
	}
	if len(res.Purged) > 0 || len(res.Refused) > 0 {
		m := &manifest{fs: cfg.FS, dir: audit + "/_purge"}
		name := fmt.Sprintf("purge-%s.jsonl", cfg.Now.UTC().Format("20060102T150405.000000000Z"))
		m.next = 0
		if err := writeRecords(ctx, m, name, append(append([]Record(nil), res.Purged...), res.Refused...)); err != nil {
			return res, err
		}
		res.Manifest = m.dir + "/" + name
	}
	return res, nil
}

// neededUnder reports whether a needed path lies in dir, or holds it (a
// source that may name anything in the trash needs the trash root), and
// who needs it. Paths are compared without scheme and authority: a source
// that names the trash under another spelling of its file system still
// keeps it (and one on another file system with the same path keeps it
// too, which costs a purge, never a restore).
func neededUnder(needed map[string]string, dir string) (string, bool) {
	d := pathPart(dir)
	var hits []string
	for p, by := range needed {
		if pp := pathPart(p); under(pp, d) || under(d, pp) {
			hits = append(hits, p+" ("+by+")")
		}
	}
	if len(hits) == 0 {
		return "", false
	}
	sort.Strings(hits)
	if len(hits) > 3 {
		hits = append(hits[:3], fmt.Sprintf("and %d more", len(hits)-3))
	}
	return strings.Join(hits, "; "), true
}

// TrashReferences is what the _metadata in metas (the retained
// checkpoints and savepoints read under the roots) name in the trash:
// each path under trashRoot, with the _metadata that names it. Such a
// snapshot restored from the trash (a job started from a trash path in
// CLAIM mode that then stopped, its retained checkpoint naming the trashed
// snapshot's files), or restored from one that did: a purge keeps those
// files for as long as it is retained. A _metadata that cannot be read may
// name anything in the trash: it needs the trash root itself.
func TrashReferences(metas map[string]MetadataResult, trashRoot string) map[string]string {
	root := pathPart(trashRoot)
	out := map[string]string{}
	var unread []string
	for m, res := range metas {
		if res.Refs == nil {
			unread = append(unread, m+" cannot be read ("+res.Error+")")
			continue
		}
		for _, f := range append(append([]string(nil), res.Refs.Files...), res.Refs.ManagedDirs...) {
			if under(pathPart(f), root) {
				out[f] = "named by " + m + ", a retained snapshot restored from the trash"
			}
		}
	}
	if len(unread) > 0 {
		sort.Strings(unread)
		out[trashRoot] = listSome(unread, 3) + ": it may name anything in the trash"
	}
	return out
}

// pathPart is p cleaned as normPath does, without scheme and authority.
func pathPart(p string) string {
	if n, err := normPath(p, ""); err == nil {
		p = n
	}
	return stripScheme(p)
}

func writeRecords(ctx context.Context, m *manifest, name string, recs []Record) error {
	data, err := encodeRecords(recs)
	if err != nil {
		return err
	}
	if err := m.fs.MkdirAll(ctx, m.dir); err != nil {
		return classify("create audit dir", m.dir, err)
	}
	p := m.dir + "/" + name
	if err := m.fs.WriteFile(ctx, p, data); err != nil {
		// HDFS can report "replication in progress" on close after every
		// byte was acknowledged; the file is then complete, only its lease
		// is still open.
		if fi, serr := m.fs.Stat(ctx, p); serr == nil && !errors.Is(err, storage.ErrExist) && fi.Size == int64(len(data)) {
			return nil
		}
		if errors.Is(err, storage.ErrExist) {
			return &Error{Op: "write purge manifest", Path: p, Err: err}
		}
		return classify("write purge manifest", p, err)
	}
	return nil
}
