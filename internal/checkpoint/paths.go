package checkpoint

import (
	"fmt"
	"path"
	"strings"
)

// NormalizePath turns a Flink path string into the one canonical form the
// reader reports, so the same file always compares equal:
//
//   - scheme-qualified: "scheme://authority/p", with scheme and authority
//     lower-cased. "scheme:/p" (Flink's form for an empty authority, e.g.
//     "file:/tmp/x") and "scheme:///p" both become "scheme:///p"; an empty
//     authority means "the default file system" and is never filled in here.
//   - scheme-less: "/p" stays scheme-less (interpreted by whoever lists the
//     file system, e.g. the local FS for ParseFile, the default FS for HDFS).
//   - the path part is cleaned: "//" collapsed, "." and ".." resolved, no
//     trailing slash (except the root "/").
//
// A path that is empty, relative, or "scheme:" without a leading slash is
// rejected with ErrInvalidPath: the reader cannot say where such a file is.
func NormalizePath(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("%w: empty path", ErrInvalidPath)
	}
	scheme, rest, ok := splitScheme(p)
	if !ok {
		if !strings.HasPrefix(p, "/") {
			return "", fmt.Errorf("%w: %q is neither absolute nor scheme-qualified", ErrInvalidPath, p)
		}
		return path.Clean(p), nil
	}
	authority := ""
	switch {
	case strings.HasPrefix(rest, "//"):
		rest = rest[2:]
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			authority, rest = rest[:i], rest[i:]
		} else {
			authority, rest = rest, "/"
		}
	case strings.HasPrefix(rest, "/"):
	default:
		return "", fmt.Errorf("%w: %q has scheme %q but no absolute path", ErrInvalidPath, p, scheme)
	}
	return strings.ToLower(scheme) + "://" + strings.ToLower(authority) + path.Clean(rest), nil
}

// splitScheme recognises an RFC 3986 scheme ("hdfs:", "file:", "s3a:") at
// the start of p. A single letter is not taken as a scheme so "C:/x" style
// strings fall through to the relative-path check.
func splitScheme(p string) (scheme, rest string, ok bool) {
	i := strings.IndexByte(p, ':')
	if i < 2 {
		return "", "", false
	}
	for j := 0; j < i; j++ {
		c := p[j]
		isAlpha := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if j == 0 && !isAlpha {
			return "", "", false
		}
		if !isAlpha && !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '.' {
			return "", "", false
		}
	}
	return p[:i], p[i+1:], true
}

const metadataFileName = "_metadata"

// metadataDir returns the directory holding the _metadata file at location
// (both normalised); relative handles resolve against it.
func metadataDir(location string) (loc, dir string, err error) {
	loc, err = NormalizePath(location)
	if err != nil {
		return "", "", fmt.Errorf("metadata location: %w", err)
	}
	prefix, p := splitPathPart(loc)
	// Insist on the file itself: given a checkpoint directory by mistake, the
	// parent would be taken as the base and every relative reference would
	// point at a file that does not exist, making live state look unused.
	if path.Base(p) != metadataFileName {
		return "", "", fmt.Errorf("%w: metadata location %q must name the %s file itself", ErrInvalidPath, location, metadataFileName)
	}
	return loc, prefix + path.Dir(p), nil
}

// splitPathPart splits a normalised location into "scheme://authority" (or
// "") and its absolute path part.
func splitPathPart(loc string) (prefix, p string) {
	if i := strings.Index(loc, "://"); i >= 0 {
		j := strings.IndexByte(loc[i+3:], '/')
		return loc[:i+3+j], loc[i+3+j:]
	}
	return "", loc
}

// resolveRelative joins a RelativeFileStateHandle path onto the normalised
// metadata directory the way Flink's new Path(dir, relative) does.
func resolveRelative(dir, rel string) (string, error) {
	if rel == "" {
		return "", fmt.Errorf("%w: empty relative path", ErrInvalidPath)
	}
	if strings.HasPrefix(rel, "/") {
		return "", fmt.Errorf("%w: relative handle path %q is absolute", ErrInvalidPath, rel)
	}
	if _, _, ok := splitScheme(rel); ok {
		return "", fmt.Errorf("%w: relative handle path %q carries a scheme", ErrInvalidPath, rel)
	}
	if dir == "" {
		return "", fmt.Errorf("%w: relative handle %q but no metadata location was given to resolve it against", ErrInvalidPath, rel)
	}
	prefix, p := splitPathPart(dir)
	return prefix + path.Join(p, rel), nil
}
