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

	"golang.org/x/sys/unix"
)

// Local is the file system of this machine, for file:// storage and tests.
type Local struct {
	guard *Guard
	// afterCheck, when set (by tests), runs between the checks of an
	// operation and its act, where a racing process could swap a
	// directory for a link or a file for a pipe.
	afterCheck func()
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
// resolved and must still lie strictly under the resolved root. It returns
// the path and its root. The check only gives a clear early answer: the
// act itself goes through openParent, which a link swapped in since cannot
// redirect.
func (l *Local) guarded(op, p string) (u, root URI, err error) {
	// The guard sees the path exactly as given, so every refusal, even of
	// a malformed path, is an OutsideRootsError naming the roots.
	u, err = l.guard.Check(localBase, p)
	if err != nil {
		return URI{}, URI{}, err
	}
	if u, err = l.path(op, u.String()); err != nil {
		return URI{}, URI{}, err
	}
	root, _ = l.guard.rootFor(localBase, u)
	realRoot, err := filepath.EvalSymlinks(root.Path)
	if err != nil {
		return URI{}, URI{}, mapLocalError(op, root.String(), err)
	}
	real, err := resolveExisting(u.Path)
	if err != nil {
		return URI{}, URI{}, mapLocalError(op, u.String(), err)
	}
	if !strings.HasPrefix(real, realRoot+string(filepath.Separator)) {
		return URI{}, URI{}, &OutsideRootsError{
			Path:   p,
			Reason: fmt.Sprintf("resolves through a symlink to %s", real),
			Roots:  l.guard.qualifiedRoots(localBase),
		}
	}
	return u, root, nil
}

// checked marks the end of the guard checks of one operation.
func (l *Local) checked() {
	if l.afterCheck != nil {
		l.afterCheck()
	}
}

// openParent opens the directory holding u, a path the guard allowed under
// root, and returns its descriptor (the caller closes it) and the last
// element of u. Every directory below the root is opened relative to its
// parent with O_NOFOLLOW, so a directory swapped for a symlink since the
// guard check is refused, not followed, and the act that uses the
// descriptor cannot land outside the root.
func (l *Local) openParent(op, p string, root, u URI) (int, string, error) {
	elems := strings.Split(strings.TrimPrefix(u.Path, root.Path+"/"), "/")
	fd, err := l.openBelow(op, p, root, elems[:len(elems)-1], false)
	return fd, elems[len(elems)-1], err
}

// openBelow opens root, then each of elems in turn without following a
// link, creating missing ones when create is set, and returns the last
// directory's descriptor. The root itself may be reached through links:
// it is configuration, not data.
func (l *Local) openBelow(op, p string, root URI, elems []string, create bool) (int, error) {
	fd, err := openDirAt(unix.AT_FDCWD, root.Path, false)
	if err != nil {
		return -1, mapLocalError(op, root.String(), &os.PathError{Op: "open", Path: root.Path, Err: err})
	}
	cur := root
	for _, name := range elems {
		cur = cur.Join(name)
		next, err := openDirAt(fd, name, true)
		if create && errors.Is(err, unix.ENOENT) {
			merr := ignoringEINTR(func() error { return unix.Mkdirat(fd, name, 0o755) })
			if merr != nil && !errors.Is(merr, unix.EEXIST) {
				_ = unix.Close(fd)
				return -1, mapLocalError(op, cur.String(), &os.PathError{Op: "mkdirat", Path: cur.Path, Err: merr})
			}
			next, err = openDirAt(fd, name, true)
		}
		if err != nil {
			err = l.elementError(op, p, fd, name, cur, err)
		}
		_ = unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// elementError explains why the directory name in dirfd (at cur) could not
// be opened: a symlink is refused as outside the roots.
func (l *Local) elementError(op, p string, dirfd int, name string, cur URI, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EMLINK) {
		var st unix.Stat_t
		serr := ignoringEINTR(func() error { return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
		if serr == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return &OutsideRootsError{
				Path:   p,
				Reason: fmt.Sprintf("%s is a symlink; nothing below a root is reached through a link", cur.Path),
				Roots:  l.guard.qualifiedRoots(localBase),
			}
		}
		if errors.Is(err, unix.ELOOP) {
			err = unix.ENOTDIR
		}
	}
	return mapLocalError(op, cur.String(), &os.PathError{Op: "openat", Path: cur.Path, Err: err})
}

// openDirAt opens the directory name relative to dirfd; with noFollow a
// symlink fails with ELOOP or ENOTDIR instead of being followed.
func openDirAt(dirfd int, name string, noFollow bool) (int, error) {
	flags := unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC
	if noFollow {
		flags |= unix.O_NOFOLLOW
	}
	var fd int
	err := ignoringEINTR(func() error {
		var err error
		fd, err = unix.Openat(dirfd, name, flags, 0)
		return err
	})
	return fd, err
}

// removeAt removes the file, symlink or empty directory name in dirfd.
func removeAt(dirfd int, name string) error {
	err := ignoringEINTR(func() error { return unix.Unlinkat(dirfd, name, 0) })
	if err == nil {
		return nil
	}
	rerr := ignoringEINTR(func() error { return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR) })
	if rerr == nil {
		return nil
	}
	// unlink of a directory fails with EISDIR or EPERM depending on the
	// system; rmdir of anything else fails with ENOTDIR on all of them.
	if errors.Is(rerr, unix.ENOTDIR) {
		return err
	}
	return rerr
}

// removeAllAt removes name in dirfd and everything below it; a directory
// is entered with O_NOFOLLOW, so a symlink is removed, never followed. A
// missing name is not an error. at is name's path, for errors.
func removeAllAt(dirfd int, name, at string) error {
	err := ignoringEINTR(func() error { return unix.Unlinkat(dirfd, name, 0) })
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	for first := true; ; first = false {
		fd, oerr := openDirAt(dirfd, name, true)
		switch {
		case errors.Is(oerr, unix.ENOENT):
			return nil
		case first && (errors.Is(oerr, unix.ENOTDIR) || errors.Is(oerr, unix.ELOOP) || errors.Is(oerr, unix.EMLINK)):
			// Not a directory: unlink's own error stands.
			return &os.PathError{Op: "unlinkat", Path: at, Err: err}
		case oerr != nil:
			return &os.PathError{Op: "openat", Path: at, Err: oerr}
		}
		dir := os.NewFile(uintptr(fd), at)
		// Removing entries may reorder the directory, so each batch is
		// read from a fresh descriptor, until one finds nothing.
		names, rerr := dir.Readdirnames(1024)
		for _, n := range names {
			if cerr := removeAllAt(fd, n, at+"/"+n); cerr != nil {
				_ = dir.Close()
				return cerr
			}
		}
		_ = dir.Close()
		if len(names) == 0 {
			if rerr != nil && rerr != io.EOF {
				return &os.PathError{Op: "readdirent", Path: at, Err: rerr}
			}
			break
		}
	}
	err = ignoringEINTR(func() error { return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR) })
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "unlinkat", Path: at, Err: err}
	}
	return nil
}

func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
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

// ReadFile reads a whole regular file of at most maxBytes. Anything else
// is refused before it is read: a named pipe would block the read until a
// writer came, a device would feed it up to the limit. The type is checked
// before opening (so a device is not even opened) and again on the opened
// file (so a swap in between is caught); the open does not block.
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
	fi, err := os.Stat(u.Path)
	if err != nil {
		return nil, mapLocalError("read", u.String(), err)
	}
	if err := regularFile(u, fi); err != nil {
		return nil, err
	}
	l.checked()
	f, err := os.OpenFile(u.Path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, mapLocalError("read", u.String(), err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, mapLocalError("read", u.String(), err)
	}
	if err := regularFile(u, fi); err != nil {
		return nil, err
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

// regularFile refuses anything ReadFile must not read, naming what it is.
func regularFile(u URI, fi fs.FileInfo) error {
	m := fi.Mode()
	var what string
	switch {
	case m.IsRegular():
		return nil
	case m.IsDir():
		return newError("read", u.String(), ErrIsDir, nil)
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		what = "a character device"
	case m&fs.ModeDevice != 0:
		what = "a block device"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeSymlink != 0:
		what = "a symlink"
	default:
		what = fmt.Sprintf("of type %s", m.Type())
	}
	return newError("read", u.String(), nil, fmt.Errorf("is %s, not a regular file", what))
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
	u, root, err := l.guarded("mkdir", p)
	if err != nil {
		return err
	}
	l.checked()
	dir, name, err := l.openParent("mkdir", p, root, u)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	err = ignoringEINTR(func() error { return unix.Mkdirat(dir, name, 0o755) })
	return mapLocalError("mkdir", u.String(), pathError("mkdirat", u, err))
}

// MkdirAll creates p and missing parents below its existing root.
func (l *Local) MkdirAll(ctx context.Context, p string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	u, root, err := l.guarded("mkdir", p)
	if err != nil {
		return err
	}
	l.checked()
	fd, err := l.openBelow("mkdir", p, root, strings.Split(strings.TrimPrefix(u.Path, root.Path+"/"), "/"), true)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// WriteFile creates a new file with data; an existing file is an error.
func (l *Local) WriteFile(ctx context.Context, p string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	u, root, err := l.guarded("write", p)
	if err != nil {
		return err
	}
	l.checked()
	dir, name, err := l.openParent("write", p, root, u)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	var fd int
	err = ignoringEINTR(func() error {
		var err error
		fd, err = unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		return err
	})
	if err != nil {
		return mapLocalError("write", u.String(), pathError("openat", u, err))
	}
	f := os.NewFile(uintptr(fd), u.Path)
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
	from, fromRoot, err := l.guarded("rename", oldPath)
	if err != nil {
		return err
	}
	to, toRoot, err := l.guarded("rename", newPath)
	if err != nil {
		return err
	}
	l.checked()
	fromDir, fromName, err := l.openParent("rename", oldPath, fromRoot, from)
	if err != nil {
		return err
	}
	defer unix.Close(fromDir)
	toDir, toName, err := l.openParent("rename", newPath, toRoot, to)
	if err != nil {
		return err
	}
	defer unix.Close(toDir)
	var st unix.Stat_t
	if ignoringEINTR(func() error { return unix.Fstatat(toDir, toName, &st, unix.AT_SYMLINK_NOFOLLOW) }) == nil {
		return newError("rename", to.String(), ErrExist, fmt.Errorf("destination exists; refusing to overwrite"))
	}
	err = ignoringEINTR(func() error { return unix.Renameat(fromDir, fromName, toDir, toName) })
	if err != nil {
		return mapLocalError("rename", from.String(), &os.LinkError{Op: "renameat", Old: from.Path, New: to.Path, Err: err})
	}
	return nil
}

// Remove deletes a file or an empty directory.
func (l *Local) Remove(ctx context.Context, p string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	u, root, err := l.guarded("remove", p)
	if err != nil {
		return err
	}
	l.checked()
	dir, name, err := l.openParent("remove", p, root, u)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	return mapLocalError("remove", u.String(), pathError("remove", u, removeAt(dir, name)))
}

// RemoveAll deletes p recursively (symlinks inside are removed, never
// followed); a missing path is not an error.
func (l *Local) RemoveAll(ctx context.Context, p string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	u, root, err := l.guarded("remove", p)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		return err
	}
	l.checked()
	dir, name, err := l.openParent("remove", p, root, u)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		return err
	}
	defer unix.Close(dir)
	return mapLocalError("remove", u.String(), removeAllAt(dir, name, u.Path))
}

// pathError wraps a bare errno from a call on u's last element.
func pathError(op string, u URI, err error) error {
	if err == nil {
		return nil
	}
	return &os.PathError{Op: op, Path: u.Path, Err: err}
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
