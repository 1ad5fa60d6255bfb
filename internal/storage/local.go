package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Local is the file system of this machine, for file:// storage and tests.
type Local struct {
	guard *Guard
}

var _ FileSystem = (*Local)(nil)

// NewLocal returns the local file system; guard decides where it may write.
func NewLocal(guard *Guard) *Local { return &Local{guard: guard} }

var localBase = URI{Scheme: "file"}

// URI returns file://.
func (l *Local) URI() URI { return localBase }

// Close does nothing; Local holds no connections.
func (l *Local) Close() error { return nil }

func (l *Local) path(op, p string) (URI, error) {
	u, err := qualifyPath(op, localBase, p)
	if err != nil {
		return URI{}, err
	}
	if u.Authority != "" && u.Authority != "localhost" {
		return URI{}, newError(op, p, ErrWrongFileSystem, fmt.Errorf("file URI authority %q is not this machine", u.Authority))
	}
	u.Authority = ""
	return u, nil
}

// guarded runs the lexical guard, then refuses paths that reach outside the
// root through a symlink: the deepest existing ancestor of the target is
// resolved and must still lie strictly under the resolved root.
func (l *Local) guarded(op, p string) (URI, error) {
	// The guard sees the path exactly as given, so every refusal, even of
	// a malformed path, is an OutsideRootsError naming the roots.
	u, err := l.guard.Check(localBase, p)
	if err != nil {
		return URI{}, err
	}
	if u, err = l.path(op, u.String()); err != nil {
		return URI{}, err
	}
	root, _ := l.guard.rootFor(localBase, u)
	realRoot, err := filepath.EvalSymlinks(root.Path)
	if err != nil {
		return URI{}, mapLocalError(op, root.String(), err)
	}
	real, err := resolveExisting(u.Path)
	if err != nil {
		return URI{}, mapLocalError(op, u.String(), err)
	}
	if !strings.HasPrefix(real, realRoot+string(filepath.Separator)) {
		return URI{}, &OutsideRootsError{
			Path:   p,
			Reason: fmt.Sprintf("resolves through a symlink to %s", real),
			Roots:  l.guard.qualifiedRoots(localBase),
		}
	}
	return u, nil
}

// resolveExisting resolves symlinks in the longest existing prefix of p and
// appends the components that do not exist yet.
func resolveExisting(p string) (string, error) {
	var rest []string
	cur := p
	for {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			for i := len(rest) - 1; i >= 0; i-- {
				real = filepath.Join(real, rest[i])
			}
			return real, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return "", err
		}
		rest = append(rest, filepath.Base(cur))
		cur = parent
	}
}

func localInfo(u URI, fi fs.FileInfo) FileInfo {
	info := infoOf(u, fi)
	if info.IsDir {
		info.Size = 0
	}
	if u.Path == "/" {
		info.Name = "/"
	}
	return info
}

// Stat describes path without following a final symlink.
func (l *Local) Stat(ctx context.Context, p string) (FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return FileInfo{}, err
	}
	u, err := l.path("stat", p)
	if err != nil {
		return FileInfo{}, err
	}
	fi, err := os.Lstat(u.Path)
	if err != nil {
		return FileInfo{}, mapLocalError("stat", u.String(), err)
	}
	return localInfo(u, fi), nil
}

// List streams a directory in batches, in directory order (not sorted:
// sorting would need the whole directory in memory).
func (l *Local) List(ctx context.Context, dir string, batchSize int, fn ListFunc) error {
	if batchSize <= 0 {
		batchSize = 1000
	}
	u, err := l.path("list", dir)
	if err != nil {
		return err
	}
	f, err := os.Open(u.Path)
	if err != nil {
		return mapLocalError("list", u.String(), err)
	}
	defer f.Close()
	batch := make([]FileInfo, 0, batchSize)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		entries, rerr := f.ReadDir(batchSize)
		batch = batch[:0]
		for _, e := range entries {
			fi, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed since the directory was read
			}
			if err != nil {
				return mapLocalError("list", u.Join(e.Name()).String(), err)
			}
			batch = append(batch, localInfo(u.Join(e.Name()), fi))
		}
		if len(batch) > 0 {
			if err := fn(batch); err != nil {
				if errors.Is(err, ErrStopListing) {
					return nil
				}
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return mapLocalError("list", u.String(), rerr)
		}
	}
}

// Walk visits root and everything below it; symlinks are reported, not
// followed.
func (l *Local) Walk(ctx context.Context, root string, fn WalkFunc) error {
	return walk(ctx, l, root, 1000, fn)
}

// ReadFile reads a whole regular file of at most maxBytes.
func (l *Local) ReadFile(ctx context.Context, p string, maxBytes int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxReadBytes
	}
	u, err := l.path("read", p)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(u.Path)
	if err != nil {
		return nil, mapLocalError("read", u.String(), err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, mapLocalError("read", u.String(), err)
	}
	if fi.IsDir() {
		return nil, newError("read", u.String(), ErrIsDir, nil)
	}
	if fi.Size() > maxBytes {
		return nil, newError("read", u.String(), ErrTooLarge, fmt.Errorf("size %d bytes, limit %d", fi.Size(), maxBytes))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, mapLocalError("read", u.String(), err)
	}
	if int64(len(data)) > maxBytes {
		return nil, newError("read", u.String(), ErrTooLarge, fmt.Errorf("grew past the limit of %d bytes while reading", maxBytes))
	}
	return data, nil
}

// ContentSummary walks the subtree and counts it; local directories have no
// quotas, so both quotas are -1.
func (l *Local) ContentSummary(ctx context.Context, p string) (ContentSummary, error) {
	cs := ContentSummary{NamespaceQuota: -1, SpaceQuota: -1}
	err := l.Walk(ctx, p, func(fi FileInfo) error {
		if fi.IsDir {
			cs.Dirs++
		} else {
			cs.Files++
			cs.Length += fi.Size
		}
		return nil
	})
	cs.SpaceConsumed = cs.Length
	return cs, err
}

// Mkdir creates one directory; its parent must exist.
func (l *Local) Mkdir(ctx context.Context, p string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	u, err := l.guarded("mkdir", p)
	if err != nil {
		return err
	}
	return mapLocalError("mkdir", u.String(), os.Mkdir(u.Path, 0o755))
}

// MkdirAll creates p and missing parents below its existing root.
func (l *Local) MkdirAll(ctx context.Context, p string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	u, err := l.guarded("mkdir", p)
	if err != nil {
		return err
	}
	return mapLocalError("mkdir", u.String(), os.MkdirAll(u.Path, 0o755))
}

// WriteFile creates a new file with data; an existing file is an error.
func (l *Local) WriteFile(ctx context.Context, p string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	u, err := l.guarded("write", p)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(u.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return mapLocalError("write", u.String(), err)
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil {
		return mapLocalError("write", u.String(), werr)
	}
	return mapLocalError("write", u.String(), cerr)
}

// Rename moves oldPath to newPath, refusing to overwrite.
func (l *Local) Rename(ctx context.Context, oldPath, newPath string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	from, err := l.guarded("rename", oldPath)
	if err != nil {
		return err
	}
	to, err := l.guarded("rename", newPath)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(to.Path); err == nil {
		return newError("rename", to.String(), ErrExist, fmt.Errorf("destination exists; refusing to overwrite"))
	}
	return mapLocalError("rename", from.String(), os.Rename(from.Path, to.Path))
}

// Remove deletes a file or an empty directory.
func (l *Local) Remove(ctx context.Context, p string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	u, err := l.guarded("remove", p)
	if err != nil {
		return err
	}
	return mapLocalError("remove", u.String(), os.Remove(u.Path))
}

// RemoveAll deletes p recursively (symlinks inside are removed, never
// followed); a missing path is not an error.
func (l *Local) RemoveAll(ctx context.Context, p string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	u, err := l.guarded("remove", p)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		return err
	}
	return mapLocalError("remove", u.String(), os.RemoveAll(u.Path))
}

func mapLocalError(op, p string, err error) error {
	if err == nil {
		return nil
	}
	return newError(op, p, osErrorKind(err), err)
}

// osErrorKind maps the standard library's file-system errors to the port's
// kinds; nil when none applies. Both implementations use it.
func osErrorKind(err error) error {
	switch {
	// ENOTEMPTY also matches fs.ErrExist, so it is checked first.
	case errors.Is(err, syscall.ENOTEMPTY):
		return ErrNotEmpty
	case errors.Is(err, fs.ErrNotExist):
		return ErrNotFound
	case errors.Is(err, fs.ErrExist):
		return ErrExist
	case errors.Is(err, fs.ErrPermission):
		return ErrPermission
	case errors.Is(err, syscall.ENOTDIR):
		return ErrNotDir
	case errors.Is(err, syscall.EISDIR):
		return ErrIsDir
	case errors.Is(err, syscall.EDQUOT):
		return ErrSpaceQuotaExceeded
	}
	return nil
}
