package storage

import (
	"fmt"
	"path"
	"strings"
)

// URI is a parsed storage path. A plain absolute path has an empty Scheme
// and Authority and belongs to whichever file system it is handed to.
type URI struct {
	Scheme    string // lower case: "hdfs", "file", or "" for a plain path
	Authority string // "nn:8020", a nameservice, or ""
	Path      string // absolute and cleaned, never empty
}

// ParseURI parses hdfs://nn:port/path, hdfs://nameservice/path,
// file:///path, the Hadoop short form file:/path, and plain /path. The path
// is cleaned; a ".." segment, a relative or an empty path is an error
// wrapping ErrInvalidPath, because a cleaned ".." can silently land in
// another job's or tenant's directory.
func ParseURI(s string) (URI, error) {
	if s == "" {
		return URI{}, newError("parse", s, ErrInvalidPath, fmt.Errorf("empty path"))
	}
	var u URI
	rest := s
	if !strings.HasPrefix(s, "/") {
		i := strings.Index(s, ":")
		if i <= 0 || !validScheme(s[:i]) {
			return URI{}, newError("parse", s, ErrInvalidPath, fmt.Errorf("relative path; want an absolute path or a URI such as hdfs://nameservice/path or file:///path"))
		}
		u.Scheme = strings.ToLower(s[:i])
		rest = s[i+1:]
		if strings.HasPrefix(rest, "//") {
			rest = rest[2:]
			j := strings.Index(rest, "/")
			if j < 0 {
				u.Authority, rest = rest, "/"
			} else {
				u.Authority, rest = rest[:j], rest[j:]
			}
			u.Authority = strings.ToLower(u.Authority)
		}
		if !strings.HasPrefix(rest, "/") {
			return URI{}, newError("parse", s, ErrInvalidPath, fmt.Errorf("URI path %q is not absolute", rest))
		}
	}
	for _, seg := range strings.Split(rest, "/") {
		if seg == ".." {
			return URI{}, newError("parse", s, ErrInvalidPath, fmt.Errorf(`path contains a ".." segment`))
		}
	}
	u.Path = path.Clean(rest)
	return u, nil
}

func validScheme(s string) bool {
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// String renders the URI; a plain path stays plain, file URIs use file:///.
func (u URI) String() string {
	if u.Scheme == "" {
		return u.Path
	}
	return u.Scheme + "://" + u.Authority + u.Path
}

// Base returns the scheme and authority without a path, e.g. hdfs://ns1.
func (u URI) Base() URI { return URI{Scheme: u.Scheme, Authority: u.Authority} }

// Join appends a child name to the path.
func (u URI) Join(name string) URI {
	u.Path = path.Join(u.Path, name)
	return u
}

// ParentOf returns the parent of a path or URI string, keeping scheme and
// authority (path.Dir alone would fold the "//" after the scheme); a URI
// without a path is its own parent.
func ParentOf(p string) string {
	i := strings.Index(p, "://")
	if i < 0 {
		return path.Dir(p)
	}
	rest := p[i+3:]
	j := strings.IndexByte(rest, '/')
	if j < 0 {
		return p
	}
	return p[:i+3+j] + path.Dir(rest[j:])
}

// qualify gives a plain path the scheme and authority of base, and checks
// that an already qualified one matches base. Scheme and authority compare
// case-insensitively; hdfs://nn and hdfs://nn:8020 are different authorities
// because the default port is a client-side setting we cannot see.
func qualify(base URI, u URI) (URI, error) {
	if u.Scheme == "" {
		u.Scheme, u.Authority = base.Scheme, base.Authority
		return u, nil
	}
	if u.Scheme != base.Scheme || u.Authority != base.Authority {
		return u, fmt.Errorf("%s belongs to %s, this file system is %s", u, u.Base(), base)
	}
	return u, nil
}

// qualifyPath parses p and qualifies it against base.
func qualifyPath(op string, base URI, p string) (URI, error) {
	u, err := ParseURI(p)
	if err != nil {
		var se *Error
		if asError(err, &se) {
			se.Op = op
		}
		return URI{}, err
	}
	q, err := qualify(base, u)
	if err != nil {
		return URI{}, newError(op, p, ErrWrongFileSystem, err)
	}
	return q, nil
}
