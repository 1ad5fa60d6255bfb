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
		if cleanSegments(p[1:]) {
			return p, nil
		}
		return path.Clean(p), nil
	}
	authority := ""
	switch {
	case strings.HasPrefix(rest, "//"):
		rest = rest[2:]
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			authority, rest = rest[:i], rest[i:]
			// Paths Flink writes are normally already in this form; then
			// p is the answer and nothing needs building.
			if isLower(scheme) && isLower(authority) && cleanSegments(rest[1:]) {
				return p, nil
			}
		} else {
			authority, rest = rest, "/"
		}
	case strings.HasPrefix(rest, "/"):
	default:
		return "", fmt.Errorf("%w: %q has scheme %q but no absolute path", ErrInvalidPath, p, scheme)
	}
	return strings.ToLower(scheme) + "://" + strings.ToLower(authority) + path.Clean(rest), nil
}

// cleanSegments reports whether "/"+s is its own path.Clean: no empty,
// "." or ".." segment and no trailing slash (the root, s == "", is clean).
func cleanSegments(s string) bool {
	for s != "" {
		seg := s
		if i := strings.IndexByte(s, '/'); i >= 0 {
			seg, s = s[:i], s[i+1:]
			if s == "" {
				return false // trailing slash
			}
		} else {
			s = ""
		}
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// isLower reports whether s has no ASCII upper-case letter and no
// non-ASCII byte, so strings.ToLower(s) == s without looking further.
func isLower(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return true
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
	// dir is normalised; a rel without empty, "." or ".." segments (a file
	// name, as Flink writes it) joins without cleaning.
	if cleanSegments(rel) {
		if p == "/" {
			return dir + rel, nil
		}
		return dir + "/" + rel, nil
	}
	return prefix + path.Join(p, rel), nil
}
