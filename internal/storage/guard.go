package storage

import (
	"errors"
	"fmt"
	"strings"
)

// Guard holds the roots under which writes, renames and deletes are allowed.
// A path is allowed only if, after cleaning, it has the same scheme and
// authority as a root and lies strictly below it: never the root itself,
// never a path with "..", never a relative or empty path. A nil Guard or
// one without roots refuses everything.
type Guard struct {
	roots []URI
}

// NewGuard validates the roots. A root must be absolute, free of "..", and
// not "/" (a root of "/" would allow every path and defeat the guard).
// Plain roots take the scheme and authority of the file system that checks
// against them, so a guard with plain roots fits one file system only; a
// guard that several file systems share (a Resolver's: one HDFS client per
// namenode and the local disk) must come from NewGuardOn.
func NewGuard(roots ...string) (*Guard, error) {
	g := &Guard{}
	for _, r := range roots {
		u, err := ParseURI(r)
		if err != nil {
			return nil, fmt.Errorf("storage: guard root %q: %w", r, err)
		}
		if u.Path == "/" {
			return nil, newError("guard", r, ErrInvalidPath, errors.New(`a root of "/" would allow every path; name a tenant or storage directory`))
		}
		g.roots = append(g.roots, u)
	}
	return g, nil
}

// NewGuardOn is NewGuard with plain roots bound to defaultFS, the file
// system plain paths resolve to (file:/// or hdfs://<authority>, as
// storage.defaultFS): a plain root then grants paths on that file system
// only, never on another namenode or the local disk that checks against it.
func NewGuardOn(defaultFS string, roots ...string) (*Guard, error) {
	def, err := defaultFileSystem(defaultFS)
	if err != nil {
		return nil, err
	}
	g, err := NewGuard(roots...)
	if err != nil {
		return nil, err
	}
	for i, r := range g.roots {
		if r.Scheme == "" {
			g.roots[i].Scheme, g.roots[i].Authority = def.Scheme, def.Authority
		}
	}
	return g, nil
}

// defaultFileSystem parses the scheme and authority plain roots are bound
// to; it must name one file system.
func defaultFileSystem(s string) (URI, error) {
	bad := func(why string) (URI, error) {
		return URI{}, newError("guard", s, ErrInvalidPath, fmt.Errorf("default file system for plain roots: %s; want file:/// or hdfs://<authority>", why))
	}
	if s == "" {
		return bad("empty")
	}
	u, err := ParseURI(s)
	if err != nil {
		return bad(err.Error())
	}
	switch {
	case u.Scheme == "":
		return bad("a plain path names no file system")
	case u.Scheme == "file" && (u.Authority == "" || u.Authority == "localhost"):
		return localBase, nil
	case u.Scheme == "file":
		return bad(fmt.Sprintf("authority %q is not this machine", u.Authority))
	case u.Scheme == "hdfs" && u.Authority == "":
		return bad("no namenode or nameservice")
	case u.Scheme == "hdfs":
		return u.Base(), nil
	}
	return bad(fmt.Sprintf("scheme %q is not supported", u.Scheme))
}

// Roots returns the configured roots as given (cleaned), plain roots
// qualified when NewGuardOn bound them.
func (g *Guard) Roots() []string {
	if g == nil {
		return nil
	}
	out := make([]string, len(g.roots))
	for i, r := range g.roots {
		out[i] = r.String()
	}
	return out
}

// Check qualifies target against base (the scheme and authority of the
// file system that will act on it) and returns it if it lies strictly under
// a root. The error is an *OutsideRootsError (errors.Is ErrOutsideRoots)
// naming the path, the reason and the roots.
func (g *Guard) Check(base URI, target string) (URI, error) {
	refuse := func(reason string) (URI, error) {
		return URI{}, &OutsideRootsError{Path: target, Reason: reason, Roots: g.qualifiedRoots(base)}
	}
	if g == nil || len(g.roots) == 0 {
		return refuse("no roots configured")
	}
	u, err := ParseURI(target)
	if err != nil {
		var se *Error
		if asError(err, &se) && se.Cause != nil {
			return refuse(se.Cause.Error())
		}
		return refuse(err.Error())
	}
	u, err = qualify(base, u)
	if err != nil {
		return refuse(err.Error())
	}
	sameFS := false
	for _, r := range g.roots {
		r, err := qualify(base, r)
		if err != nil || r.Scheme != u.Scheme || r.Authority != u.Authority {
			continue
		}
		sameFS = true
		if u.Path == r.Path {
			return refuse("is a root itself")
		}
		if strings.HasPrefix(u.Path, r.Path+"/") {
			return u, nil
		}
	}
	if !sameFS {
		return refuse(fmt.Sprintf("scheme and authority %s match no root", u.Base()))
	}
	return refuse("outside every root")
}

// rootFor returns the root that contains u (already checked by Check).
func (g *Guard) rootFor(base URI, u URI) (URI, bool) {
	if g == nil {
		return URI{}, false
	}
	for _, r := range g.roots {
		r, err := qualify(base, r)
		if err != nil || r.Scheme != u.Scheme || r.Authority != u.Authority {
			continue
		}
		if strings.HasPrefix(u.Path, r.Path+"/") {
			return r, true
		}
	}
	return URI{}, false
}

func (g *Guard) qualifiedRoots(base URI) []string {
	if g == nil {
		return nil
	}
	out := make([]string, 0, len(g.roots))
	for _, r := range g.roots {
		if r.Scheme == "" {
			r.Scheme, r.Authority = base.Scheme, base.Authority
		}
		out = append(out, r.String())
	}
	return out
}

func asError(err error, target **Error) bool { return errors.As(err, target) }
