package core

import (
	"path"
	"strings"

	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// UnderDir reports whether p lies in dir, comparing path parts: Flink may
// spell the authority differently from the inventory.
func UnderDir(p, dir string) bool {
	pu, err1 := storage.ParseURI(p)
	du, err2 := storage.ParseURI(dir)
	if err1 != nil || err2 != nil {
		return false
	}
	return strings.HasPrefix(pu.Path, strings.TrimRight(du.Path, "/")+"/")
}

// SamePath compares savepoint locations, ignoring a trailing slash and the
// form Flink gives local paths (file:/p for file:///p). hdfs://nn/p and
// hdfs://nn:port/p are NOT treated as equal: they may be different clusters;
// nor a plain /p and file:/p, as a plain path means Flink's default file
// system.
func SamePath(a, b string) bool {
	norm := func(p string) string {
		p = strings.TrimRight(p, "/")
		if rest, ok := strings.CutPrefix(p, "file://"); ok && strings.HasPrefix(rest, "/") {
			return "file:" + rest
		}
		return p
	}
	return norm(a) == norm(b)
}

// BaseName is the last element of a path or URI.
func BaseName(p string) string { return path.Base(strings.TrimRight(p, "/")) }
