package flinksim

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// location is a storage path as Flink sees it: the qualified string Flink
// reports (file:/tmp/x for the local file system, as Hadoop's Path prints
// it) and, for local paths, the directory on this machine.
type location struct {
	qualified string
	local     string // "" when not on the local file system
}

// errUnsupportedScheme marks a URI whose file system the simulator does not
// have; Flink without the matching plugin fails the same way.
type errUnsupportedScheme struct{ scheme string }

func (e errUnsupportedScheme) Error() string {
	return fmt.Sprintf("Could not find a file system implementation for scheme '%s'. The scheme is not directly supported by Flink and no Hadoop file system to support this scheme could be loaded.", e.scheme)
}

// parseLocation qualifies a directory given as a plain absolute path,
// file:/p, file:///p or file://localhost/p. Other schemes keep their string
// (so REST answers stay realistic) but have no local directory.
func parseLocation(s string) (location, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return location{}, errors.New("empty path")
	}
	p := s
	if !strings.HasPrefix(s, "/") {
		i := strings.Index(s, ":")
		if i <= 0 {
			return location{}, fmt.Errorf("relative path %q: want an absolute path or a URI with a scheme", s)
		}
		scheme, rest := strings.ToLower(s[:i]), s[i+1:]
		if scheme != "file" {
			if !strings.HasPrefix(rest, "//") && !strings.HasPrefix(rest, "/") {
				return location{}, fmt.Errorf("URI %q has no absolute path", s)
			}
			return location{qualified: strings.TrimRight(s, "/")}, errUnsupportedScheme{scheme}
		}
		if strings.HasPrefix(rest, "//") {
			rest = rest[2:]
			j := strings.Index(rest, "/")
			if j < 0 {
				return location{}, fmt.Errorf("URI %q has no path", s)
			}
			if host := rest[:j]; host != "" && host != "localhost" {
				return location{}, fmt.Errorf("file URI %q names host %q; only local paths are supported", s, host)
			}
			rest = rest[j:]
		}
		p = rest
	}
	if !strings.HasPrefix(p, "/") {
		return location{}, fmt.Errorf("path %q is not absolute", s)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			// The simulator writes to the local disk: never let a path climb
			// out of the directory the caller named.
			return location{}, fmt.Errorf("path %q contains a \"..\" segment", s)
		}
	}
	clean := path.Clean(p)
	return location{qualified: "file:" + clean, local: filepath.FromSlash(clean)}, nil
}

// join appends one path element to a location.
func (l location) join(elem string) location {
	out := location{qualified: strings.TrimRight(l.qualified, "/") + "/" + elem}
	if l.local != "" {
		out.local = filepath.Join(l.local, elem)
	}
	return out
}

// randomHex returns n random lowercase hex characters (n even).
func randomHex(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// writeSnapshot writes dir/_metadata, creating dir and its parents.
func writeSnapshot(dir string, data []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "_metadata"), data, 0o644)
}

// createSavepointDir creates a fresh savepoint-<job6>-<12 hex> directory
// under target, retrying on a name clash as Flink does.
func createSavepointDir(target location, jobID string) (location, error) {
	if err := os.MkdirAll(target.local, 0o755); err != nil {
		return location{}, err
	}
	var err error
	for range 10 {
		dir := target.join("savepoint-" + jobID[:6] + "-" + randomHex(12))
		if err = os.Mkdir(dir.local, 0o755); err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return location{}, err
		}
	}
	return location{}, err
}

// snapshotHeader is what a restore needs from a _metadata file.
type snapshotHeader struct {
	checkpointID int64
	savepoint    bool
}

// maxMetadataRead bounds how much of a _metadata a restore reads; the
// header and the CheckpointProperties trailer of a small file are enough.
const maxMetadataRead = 16 << 20

// readSnapshotHeader reads the checkpoint ID and kind of the snapshot in
// dir. On failure it returns the exception text Flink reports when such a
// restore fails.
func readSnapshotHeader(dir location) (snapshotHeader, string) {
	f, err := os.Open(filepath.Join(dir.local, "_metadata"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return snapshotHeader{}, "java.io.FileNotFoundException: Cannot find meta data file '_metadata' in directory '" + dir.qualified +
				"'. Please try to load the checkpoint/savepoint directly from the metadata file instead of the directory."
		}
		return snapshotHeader{}, "java.io.IOException: " + err.Error()
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxMetadataRead))
	if err != nil {
		return snapshotHeader{}, "java.io.IOException: " + err.Error()
	}
	if len(data) < 16 || binary.BigEndian.Uint32(data) != metadataMagic {
		return snapshotHeader{}, "java.io.IOException: Unexpected magic number. This can have multiple reasons: (1) You are trying to load a Flink 1.0 savepoint, which is not supported by this version of Flink. (2) The file you were pointing to is not a savepoint at all. (3) The savepoint file has been corrupted."
	}
	v := binary.BigEndian.Uint32(data[4:])
	if v < 2 || v > metadataVersion {
		return snapshotHeader{}, fmt.Sprintf("java.lang.IllegalArgumentException: Unrecognized checkpoint version number: %d", v)
	}
	h := snapshotHeader{checkpointID: int64(binary.BigEndian.Uint64(data[8:]))}
	// Versions 2 and 3 carry no properties; Flink then treats the snapshot
	// as a savepoint. Version 4 names its SnapshotType class in the trailer.
	h.savepoint = v < 4 || bytes.Contains(data, []byte("org.apache.flink.runtime.checkpoint.SavepointType"))
	return h, ""
}

// snapshotDir turns a restore path into the snapshot directory: Flink
// accepts the directory or its _metadata file.
func snapshotDir(p string) (location, error) {
	loc, err := parseLocation(p)
	if err != nil {
		return loc, err
	}
	if path.Base(loc.qualified) == "_metadata" {
		loc.qualified = path.Dir(loc.qualified)
		loc.local = filepath.Dir(loc.local)
	}
	return loc, nil
}
