package cleanup

import (
	"fmt"
	"sort"
	"strings"

	"github.com/flinkmaint/flinkmaint/internal/checkpoint"
	"github.com/flinkmaint/flinkmaint/internal/storage"
)

// referencesFromMetadata is the one place that reads the checkpoint
// package's model, so its changes stay here. base ("hdfs://nn:8020") gives
// scheme-less paths the file system they were listed from.
func referencesFromMetadata(md *checkpoint.Metadata, metadataPath, base string) (*References, error) {
	if md == nil {
		return nil, fmt.Errorf("no metadata")
	}
	loc, err := normPath(metadataPath, base)
	if err != nil {
		return nil, err
	}
	r := &References{Metadata: loc, Dir: storage.ParentOf(loc), CheckpointID: md.CheckpointID, Relocatable: len(md.ManagedDirs) == 0}
	for i := range md.NumReferences() {
		// A relative handle resolves against the _metadata's dir wherever
		// it lies; an absolute or segment handle names one place only.
		if ref := md.Reference(i); ref.Kind != checkpoint.KindRelative || !under(ref.Path, strings.TrimSuffix(md.Dir, "/")) {
			r.Relocatable = false
			break
		}
	}
	for _, f := range md.Files {
		p, err := normPath(f.Path, base)
		if err != nil {
			return nil, fmt.Errorf("referenced file %q: %w", f.Path, err)
		}
		r.Files = append(r.Files, p)
	}
	for _, d := range md.ManagedDirs {
		p, err := normPath(d.Path, base)
		if err != nil {
			return nil, fmt.Errorf("managed dir %q: %w", d.Path, err)
		}
		r.ManagedDirs = append(r.ManagedDirs, p)
	}
	sort.Strings(r.Files)
	sort.Strings(r.ManagedDirs)
	return r, nil
}

// ParseReferences parses _metadata bytes found at metadataPath on the file
// system whose base URI is base.
func ParseReferences(data []byte, metadataPath, base string) (*References, error) {
	loc, err := normPath(metadataPath, base)
	if err != nil {
		return nil, err
	}
	md, err := checkpoint.ParseBytes(data, loc)
	if err != nil {
		return nil, err
	}
	return referencesFromMetadata(md, loc, base)
}

// normPath puts p in the one form paths are compared in: the checkpoint
// package's normal form, qualified with base when it has no scheme.
func normPath(p, base string) (string, error) {
	n, err := checkpoint.NormalizePath(p)
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(n, "/") && base != "" {
		b, err := checkpoint.NormalizePath(strings.TrimSuffix(base, "/") + "/")
		if err != nil {
			return "", fmt.Errorf("base %q: %w", base, err)
		}
		n = strings.TrimSuffix(b, "/") + n
	}
	return n, nil
}

// under reports whether p is dir or lies below it.
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// stripScheme returns the path part of a URI ("/a/b" of "hdfs://nn/a/b").
func stripScheme(p string) string {
	i := strings.Index(p, "://")
	if i < 0 {
		return p
	}
	rest := p[i+3:]
	j := strings.IndexByte(rest, '/')
	if j < 0 {
		return "/"
	}
	return rest[j:]
}

// refIndex answers "does any retained _metadata reference something at or
// below this path, and which one?".
type refIndex struct {
	files   []string // sorted, unique
	by      map[string]string
	managed []string
	mby     map[string]string
}

func newRefIndex(refs []*References) *refIndex {
	ix := &refIndex{by: map[string]string{}, mby: map[string]string{}}
	// Sorted by metadata path so "by" is deterministic.
	sorted := append([]*References(nil), refs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Metadata < sorted[j].Metadata })
	for _, r := range sorted {
		for _, f := range r.Files {
			if _, ok := ix.by[f]; !ok {
				ix.by[f] = r.Metadata
				ix.files = append(ix.files, f)
			}
		}
		for _, d := range r.ManagedDirs {
			if _, ok := ix.mby[d]; !ok {
				ix.mby[d] = r.Metadata
				ix.managed = append(ix.managed, d)
			}
		}
	}
	sort.Strings(ix.files)
	sort.Strings(ix.managed)
	return ix
}

// find returns the metadata referencing p or something below it.
func (ix *refIndex) find(p string) (string, bool) {
	if by, ok := ix.by[p]; ok {
		return by, true
	}
	prefix := strings.TrimSuffix(p, "/") + "/"
	i := sort.SearchStrings(ix.files, prefix)
	if i < len(ix.files) && strings.HasPrefix(ix.files[i], prefix) {
		return ix.by[ix.files[i]], true
	}
	for _, m := range ix.managed {
		if under(p, m) || under(m, p) {
			return ix.mby[m], true
		}
	}
	return "", false
}
