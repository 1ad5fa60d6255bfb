package storage

import (
	"context"
	"fmt"
	"net"
	"strings"
)

// Sameness says whether two spellings name one file system.
type Sameness int

// Sameness values.
const (
	// SamenessUnknown: a name could not be resolved; nothing is proven.
	SamenessUnknown Sameness = iota
	// SameFileSystem: both name one file system.
	SameFileSystem
	// DifferentFileSystem: both resolve, to different file systems.
	DifferentFileSystem
)

// CompareFileSystems tells whether base and other ("hdfs://127.0.0.1:9000",
// "hdfs://localhost:9000", "hdfs://ns1", "hdfs://") name one file system:
// the same scheme and authority; authorities listed together in
// AuthorityAliases; an empty authority when DefaultFS names the other; or
// namenode addresses (a nameservice through the Hadoop configuration, a
// host on the default port 8020) that resolve to a common IP address and
// port. They differ when the schemes differ or both resolve to disjoint
// addresses; a name that does not resolve leaves it unknown, and the
// caller decides what an unknown spelling means.
func (r *Resolver) CompareFileSystems(ctx context.Context, base, other string) (Sameness, error) {
	a, err := ParseURI(strings.TrimSuffix(base, "/") + "/")
	if err != nil {
		return SamenessUnknown, err
	}
	b, err := ParseURI(strings.TrimSuffix(other, "/") + "/")
	if err != nil {
		return SamenessUnknown, err
	}
	a, b = r.withDefault(a), r.withDefault(b)
	if a.Scheme != b.Scheme {
		return DifferentFileSystem, nil
	}
	if a.Authority == b.Authority || a.Scheme == "file" {
		return SameFileSystem, nil
	}
	for _, group := range r.AuthorityAliases {
		if containsFold(group, a.Authority) && containsFold(group, b.Authority) {
			return SameFileSystem, nil
		}
	}
	if a.Scheme != "hdfs" {
		return SamenessUnknown, nil
	}
	conf, err := loadHadoopConf(r.HDFS.HadoopConfDir)
	if err != nil {
		return SamenessUnknown, err
	}
	ipsA, okA := resolveAddrs(ctx, conf, a.Authority)
	ipsB, okB := resolveAddrs(ctx, conf, b.Authority)
	for addr := range ipsB {
		if ipsA[addr] {
			return SameFileSystem, nil
		}
	}
	if okA && okB {
		return DifferentFileSystem, nil
	}
	return SamenessUnknown, nil
}

// withDefault fills an empty hdfs authority ("hdfs:///p") from DefaultFS.
func (r *Resolver) withDefault(u URI) URI {
	if u.Scheme == "" || (u.Scheme == "hdfs" && u.Authority == "") {
		d, err := ParseURI(r.DefaultFS)
		if err == nil && d.Scheme != "" && (u.Scheme == "" || d.Scheme == u.Scheme) {
			u.Scheme, u.Authority = d.Scheme, d.Authority
		}
		if u.Scheme == "" {
			u.Scheme = "file"
		}
	}
	return u
}

// resolveAddrs turns an hdfs authority into the IP:port pairs of its
// namenodes; complete is false when some name did not resolve.
func resolveAddrs(ctx context.Context, conf map[string]string, authority string) (addrs map[string]bool, complete bool) {
	out := map[string]bool{}
	nns, err := namenodeAddresses(conf, authority)
	if err != nil {
		return out, false
	}
	complete = true
	for _, hp := range nns {
		host, port, err := net.SplitHostPort(hp)
		if err != nil {
			complete = false
			continue
		}
		ips, err := net.DefaultResolver.LookupHost(ctx, host)
		if err != nil {
			complete = false
			continue
		}
		for _, ip := range ips {
			out[net.JoinHostPort(ip, port)] = true
		}
	}
	return out, complete && len(out) > 0
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// ValidateAuthorityAliases checks the alias groups of a configuration:
// each group names one file system by two or more authorities, and no
// authority is in two groups (that would join them).
func ValidateAuthorityAliases(groups [][]string) error {
	seen := map[string]int{}
	for i, g := range groups {
		if len(g) < 2 {
			return fmt.Errorf("group %d %v: list at least two authorities (host:port or nameservice) that name one file system", i, g)
		}
		for _, a := range g {
			if a == "" || strings.ContainsAny(a, "/ ") {
				return fmt.Errorf("group %d: %q is not an authority; want host:port or a nameservice, without scheme or path", i, a)
			}
			k := strings.ToLower(a)
			if j, ok := seen[k]; ok && j != i {
				return fmt.Errorf("authority %q is in groups %d and %d; merge them", a, j, i)
			}
			seen[k] = i
		}
	}
	return nil
}
