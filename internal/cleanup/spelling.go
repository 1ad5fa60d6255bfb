package cleanup

import (
	"fmt"
	"sort"
	"strings"
)

// Spellings names the file system a plan is made on and the other
// spellings known to name it, so that one file is one string however a
// job, a _metadata or the inventory wrote its path.
type Spellings struct {
	// Base is the scheme and authority the listing came from, e.g.
	// "hdfs://127.0.0.1:9000"; empty means the first root's.
	Base string `json:"base,omitempty"`
	// Aliases are other scheme://authority prefixes that name the same
	// file system: a hostname of the namenode, the default port spelled
	// out, a nameservice, "hdfs://" under an fs.defaultFS naming it.
	Aliases []string `json:"aliases,omitempty"`
	// Distinct are scheme://authority prefixes proven to name other file
	// systems; their paths never stand for the scanned one's.
	Distinct []string `json:"distinct,omitempty"`
}

// canon canonicalises paths: every alias becomes the base, and a path
// whose authority is not known to be the base but whose path part lies
// under a scanned root is an error, because it may name a file the plan
// would delete.
type canon struct {
	base     string
	aliases  map[string]bool
	distinct map[string]bool
	roots    []string // path parts of the scanned roots
}

func newCanon(sp Spellings, roots []string) (canon, error) {
	c := canon{aliases: map[string]bool{}, distinct: map[string]bool{}}
	if sp.Base != "" {
		b, err := normPath(strings.TrimSuffix(sp.Base, "/")+"/", "")
		if err != nil {
			return c, invalidInput("spellings base %q: %v", sp.Base, err)
		}
		c.base = prefixOf(b)
	}
	for _, r := range roots {
		n, err := normPath(r, c.base)
		if err != nil {
			return c, invalidInput("root %q: %v", r, err)
		}
		if c.base == "" {
			c.base = prefixOf(n)
		}
		c.roots = append(c.roots, stripScheme(n))
	}
	for _, a := range sp.Aliases {
		n, err := normPath(strings.TrimSuffix(a, "/")+"/", "")
		if err != nil {
			return c, invalidInput("spellings alias %q: %v", a, err)
		}
		c.aliases[prefixOf(n)] = true
	}
	for _, d := range sp.Distinct {
		n, err := normPath(strings.TrimSuffix(d, "/")+"/", "")
		if err != nil {
			return c, invalidInput("spellings distinct %q: %v", d, err)
		}
		if c.aliases[prefixOf(n)] || prefixOf(n) == c.base {
			return c, invalidInput("spellings: %s is both the scanned file system and a distinct one", d)
		}
		c.distinct[prefixOf(n)] = true
	}
	return c, nil
}

// errUnknownSpelling is returned by canon.path for a path that may be on
// the scanned file system under a name nobody vouched for.
type errUnknownSpelling struct {
	path, prefix, base, root string
}

func (e *errUnknownSpelling) Error() string {
	return fmt.Sprintf("%s names %s, which is not known to be the scanned file system %s, yet its path lies under the scanned root %s; "+
		"if both name one file system, list both authorities in one group of storage.authorityAliases (or fix the DNS name or Hadoop configuration that would tie them)",
		e.path, e.prefix, e.base, e.root)
}

// path returns p in its one spelling.
func (c canon) path(p string) (string, error) {
	n, err := normPath(p, c.base)
	if err != nil {
		return "", err
	}
	pre := prefixOf(n)
	switch {
	case pre == c.base || pre == "":
		return n, nil
	case c.aliases[pre]:
		return c.base + n[len(pre):], nil
	case c.distinct[pre]:
		return n, nil
	}
	rest := n[len(pre):]
	for _, r := range c.roots {
		if under(rest, r) || under(r, rest) {
			return "", &errUnknownSpelling{path: p, prefix: pre, base: c.base, root: c.base + r}
		}
	}
	return n, nil
}

// refs returns r with every path in its one spelling.
func (c canon) refs(r *References) (*References, error) {
	out := &References{CheckpointID: r.CheckpointID, Relocatable: r.Relocatable}
	var err error
	if out.Metadata, err = c.path(r.Metadata); err != nil {
		return nil, err
	}
	out.Dir = strings.TrimSuffix(out.Metadata[:strings.LastIndex(out.Metadata, "/")+1], "/")
	for _, list := range []struct{ in, out *[]string }{{&r.Files, &out.Files}, {&r.ManagedDirs, &out.ManagedDirs}} {
		for _, f := range *list.in {
			n, err := c.path(f)
			if err != nil {
				return nil, fmt.Errorf("referenced by %s: %w", r.Metadata, err)
			}
			*list.out = append(*list.out, n)
		}
		sort.Strings(*list.out)
	}
	return out, nil
}

// prefixOf returns "scheme://authority" of a normalised URI, "" for a
// plain path.
func prefixOf(n string) string {
	i := strings.Index(n, "://")
	if i < 0 {
		return ""
	}
	j := strings.IndexByte(n[i+3:], '/')
	if j < 0 {
		return n
	}
	return n[:i+3+j]
}

// ForeignPrefixes returns every scheme://authority, other than base, that
// a path of the listing's _metadata, of the live jobs or of the tenants
// names. The caller finds out which of them name the scanned file system
// (Spellings.Aliases); the planner refuses the rest where they could
// matter.
func ForeignPrefixes(base string, l Listing, live Live, tenants []string) []string {
	b := ""
	if n, err := normPath(strings.TrimSuffix(base, "/")+"/", ""); err == nil {
		b = prefixOf(n)
	}
	seen := map[string]bool{}
	add := func(p string) {
		if n, err := normPath(p, b); err == nil {
			if pre := prefixOf(n); pre != b && pre != "" {
				seen[pre] = true
			}
		}
	}
	addRefs := func(m map[string]MetadataResult) {
		for k, v := range m {
			add(k)
			if v.Refs == nil {
				continue
			}
			for _, f := range v.Refs.Files {
				add(f)
			}
			for _, d := range v.Refs.ManagedDirs {
				add(d)
			}
		}
	}
	addRefs(l.Metadata)
	addRefs(live.Metadata)
	for _, c := range live.Clusters {
		for _, j := range c.Jobs {
			for _, p := range []string{j.RestorePath, j.LatestCheckpoint} {
				if p != "" {
					add(p)
				}
			}
		}
		if c.HADir != "" {
			add(c.HADir)
		}
	}
	for _, r := range live.Records {
		add(r.Path)
	}
	for _, t := range tenants {
		add(t)
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
