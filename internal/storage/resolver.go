package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Resolver picks the file system for a URI by scheme and authority and keeps
// one HDFS client per cluster (see HDFS for why one).
type Resolver struct {
	// HDFS is the template for HDFS clusters; URI is set per authority.
	HDFS HDFSOptions
	// DefaultFS serves plain /paths: "file:///" (the default) or an hdfs URI
	// such as hdfs://ns1, like Flink's fs.default-scheme.
	DefaultFS string
	// Guard is used by every file system the resolver creates.
	Guard *Guard
	// AuthorityAliases are groups of authorities that each name one file
	// system (storage.authorityAliases), for names DNS and the Hadoop
	// configuration cannot tie together.
	AuthorityAliases [][]string

	mu    sync.Mutex
	local *Local
	hdfs  map[string]*HDFS
}

// Resolve returns the file system serving uri and uri's path qualified
// for it.
func (r *Resolver) Resolve(ctx context.Context, uri string) (FileSystem, string, error) {
	u, err := r.qualify(uri)
	if err != nil {
		return nil, "", err
	}
	switch u.Scheme {
	case "file":
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.local == nil {
			r.local = NewLocal(r.Guard)
		}
		return r.local, u.String(), nil
	default: // hdfs
		fs, err := r.hdfsFor(ctx, u.Authority)
		if err != nil {
			return nil, "", err
		}
		return fs, u.String(), nil
	}
}

// Check runs every check Resolve makes of uri without contacting
// anything: for HDFS what NewHDFS checks before it dials (CheckHDFS).
func (r *Resolver) Check(uri string) error {
	u, err := r.qualify(uri)
	if err != nil || u.Scheme != "hdfs" {
		return err
	}
	return CheckHDFS(r.hdfsOptions(u.Authority))
}

// qualify parses uri, gives a plain path the default file system's
// scheme and authority, and refuses a scheme no file system serves.
func (r *Resolver) qualify(uri string) (URI, error) {
	u, err := ParseURI(uri)
	if err != nil {
		return u, err
	}
	if u.Scheme == "" {
		def := r.DefaultFS
		if def == "" {
			def = "file:///"
		}
		d, err := ParseURI(def)
		if err != nil || d.Scheme == "" {
			return u, newError("resolve", uri, ErrInvalidPath, fmt.Errorf("DefaultFS %q: want file:/// or hdfs://<authority>", def))
		}
		u.Scheme, u.Authority = d.Scheme, d.Authority
	}
	switch u.Scheme {
	case "file":
		u.Authority = ""
		return u, nil
	case "hdfs":
		return u, nil
	}
	return u, newError("resolve", uri, ErrWrongFileSystem, fmt.Errorf("scheme %q is not supported; want hdfs://, file:// or a plain /path", u.Scheme))
}

// hdfsOptions are the options of the HDFS cluster of authority.
func (r *Resolver) hdfsOptions(authority string) HDFSOptions {
	opts := r.HDFS
	opts.URI = "hdfs://" + authority + "/"
	opts.Guard = r.Guard
	return opts
}

func (r *Resolver) hdfsFor(ctx context.Context, authority string) (*HDFS, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h, ok := r.hdfs[authority]; ok {
		return h, nil
	}
	h, err := NewHDFS(ctx, r.hdfsOptions(authority))
	if err != nil {
		return nil, err
	}
	if r.hdfs == nil {
		r.hdfs = map[string]*HDFS{}
	}
	r.hdfs[authority] = h
	return h, nil
}

// Close closes every HDFS client the resolver opened.
func (r *Resolver) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, h := range r.hdfs {
		errs = append(errs, h.Close())
	}
	r.hdfs = nil
	return errors.Join(errs...)
}
