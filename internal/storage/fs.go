package storage

import (
	"context"
	"errors"
	"io/fs"
	"time"
)

// FileInfo describes one file or directory. Path is fully qualified
// (hdfs://ns1/a/b, file:///a/b).
type FileInfo struct {
	Path    string
	Name    string
	Size    int64
	IsDir   bool
	ModTime time.Time
	Mode    fs.FileMode
	Owner   string
	Group   string
}

// infoOf is what every file system reports the same way about fi at u.
func infoOf(u URI, fi fs.FileInfo) FileInfo {
	return FileInfo{Path: u.String(), Name: fi.Name(), Size: fi.Size(), IsDir: fi.IsDir(), ModTime: fi.ModTime(), Mode: fi.Mode()}
}

// ContentSummary is the namenode's view of a subtree, the same numbers
// `hdfs dfs -count -q` prints. Dirs counts the directory itself. A quota
// of -1 means none is set. Namespace usage against the quota is Files+Dirs;
// space usage is SpaceConsumed (bytes times replication).
type ContentSummary struct {
	Files          int64
	Dirs           int64
	Length         int64
	SpaceConsumed  int64
	NamespaceQuota int64
	SpaceQuota     int64
}

// Namespace returns the files and directories that count against the
// namespace quota.
func (c ContentSummary) Namespace() int64 { return c.Files + c.Dirs }

// ListFunc receives one batch of directory entries. The slice is reused
// after the call returns. Returning an error stops the listing and is
// returned by List; returning ErrStopListing stops it without an error.
type ListFunc func(batch []FileInfo) error

// WalkFunc is called for the walk root and every entry below it, parents
// before children. Returning SkipDir for a directory skips its contents;
// any other error stops the walk and is returned by Walk.
type WalkFunc func(info FileInfo) error

// SkipDir and ErrStopListing are control values for WalkFunc and ListFunc.
var (
	SkipDir        = fs.SkipDir
	ErrStopListing = errors.New("storage: stop listing")
)

// DefaultMaxReadBytes caps ReadFile when no other limit is given: the port
// reads _metadata and manifests, not state files.
const DefaultMaxReadBytes = 64 << 20

// FileSystem is the storage port. Implementations are safe for concurrent
// use; an HDFS implementation serialises its namenode calls (see HDFS).
// Paths are plain absolute paths or URIs matching URI(). Mkdir, MkdirAll,
// WriteFile, Rename, Remove and RemoveAll are checked by the Guard first.
type FileSystem interface {
	// URI is the scheme and authority this file system serves, e.g.
	// hdfs://ns1 or file://.
	URI() URI
	Stat(ctx context.Context, path string) (FileInfo, error)
	// List streams the entries of a directory in batches of at most
	// batchSize (<= 0 picks the implementation's default), so directories
	// with 100k+ entries never sit in memory at once.
	List(ctx context.Context, dir string, batchSize int, fn ListFunc) error
	// Walk visits root and everything below it without following symlinks.
	// Entries that vanish during the walk (Flink subsumes checkpoints while
	// we look) are skipped.
	Walk(ctx context.Context, root string, fn WalkFunc) error
	// ReadFile reads a whole file of at most maxBytes (<= 0 means
	// DefaultMaxReadBytes); a larger file fails with ErrTooLarge.
	ReadFile(ctx context.Context, path string, maxBytes int64) ([]byte, error)
	ContentSummary(ctx context.Context, path string) (ContentSummary, error)
	Mkdir(ctx context.Context, path string) error
	// MkdirAll creates path and missing parents below its root; the root
	// itself must exist (roots are provisioned with their quotas, not by us).
	MkdirAll(ctx context.Context, path string) error
	// WriteFile creates a new file; it fails with ErrExist if one is there.
	WriteFile(ctx context.Context, path string, data []byte) error
	// Rename moves oldPath to newPath; both must be under roots and newPath
	// must not exist (we never overwrite).
	Rename(ctx context.Context, oldPath, newPath string) error
	// Remove deletes a file or an empty directory.
	Remove(ctx context.Context, path string) error
	// RemoveAll deletes path recursively; a missing path is not an error.
	RemoveAll(ctx context.Context, path string) error
	Close() error
}
