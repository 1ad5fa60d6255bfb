package cleanup

import (
	"errors"
	"strings"

	"github.com/flinkmaint/flinkmaint/internal/layout"
)

// need says why a snapshot dir is needed now.
type need struct {
	reason Reason
	by     string
}

// liveNeeds is what the live jobs and the records need, for the planner
// and for every execution batch alike: the references of each live job's
// restore point and latest checkpoint and of each snapshot on record (and
// those _metadata files themselves), plus whatever else the live inventory
// read, and the dirs of those snapshots with why each is needed.
// Snapshots are looked up in l.Metadata under any spelling, then in
// listed (the scan's _metadata). A snapshot that was not read or cannot
// be parsed makes the live state unknown: ErrSourceUnknown, naming it.
//
// released are the savepoint dirs whose records were released
// (releaseSnapshots): their _metadata, read for those records, is not
// retained on that account.
func liveNeeds(c canon, l Live, listed map[string]MetadataResult, released map[string][]SnapshotRef) ([]*References, map[string]need, error) {
	read := map[string]MetadataResult{}
	for k, v := range l.Metadata {
		n, err := c.path(k)
		if err != nil {
			return nil, nil, unknownSource("live metadata "+k, err)
		}
		read[n] = v
	}
	dirs := map[string]need{}
	attached := map[string]bool{}
	var refs []*References
	add := func(what string, m MetadataResult) error {
		if m.Refs == nil {
			return sourceUnknown("%s cannot be read: %s", what, m.Error)
		}
		r, err := c.refs(m.Refs)
		if err != nil {
			return unknownSource(what, err)
		}
		r.Files = append(r.Files, r.Metadata)
		refs = append(refs, r)
		return nil
	}
	type source struct {
		what, path string
		need       need
	}
	// Records first: a snapshot both on record and a live job's restore
	// point is reported by the record that names it.
	var sources []source
	for _, r := range l.Records {
		reason := KeepOperatorRecord
		switch {
		case r.Run != "":
			reason = KeepHeldByRun
		case r.FailedJob != "":
			reason = KeepFailedRestore
		}
		sources = append(sources, source{what: "snapshot on record in " + r.By + ": " + r.Path, path: r.Path, need: need{reason, r.By}})
	}
	for _, cl := range l.Clusters {
		for _, j := range cl.Jobs {
			for _, src := range []struct{ what, v string }{{"restore point", j.RestorePath}, {"latest checkpoint", j.LatestCheckpoint}} {
				if src.v != "" {
					sources = append(sources, source{what: "live job " + j.JobID + " on cluster " + cl.ClusterID + ": its " + src.what + " " + src.v, path: src.v,
						need: need{KeepRestorePoint, src.what + " of live job " + j.JobID + " on " + cl.ClusterID}})
				}
			}
		}
	}
	for _, src := range sources {
		dir, err := c.path(src.path)
		if err != nil {
			return nil, nil, unknownSource(src.what, err)
		}
		dir = strings.TrimSuffix(dir, "/"+layout.MetadataFileName)
		if _, ok := dirs[dir]; !ok {
			dirs[dir] = src.need
		}
		key := dir + "/" + layout.MetadataFileName
		m, ok := read[key]
		if !ok {
			m, ok = listed[key]
		}
		if !ok {
			return nil, nil, sourceUnknown("%s was not read; its references are unknown", src.what)
		}
		if attached[key] {
			continue // needed twice
		}
		attached[key] = true
		if err := add(src.what, m); err != nil {
			return nil, nil, err
		}
	}
	// Read but attached to no job: retained all the same.
	for k, m := range read {
		if attached[k] || released[strings.TrimSuffix(k, "/"+layout.MetadataFileName)] != nil {
			continue
		}
		if err := add("live metadata "+k, m); err != nil {
			return nil, nil, err
		}
	}
	return refs, dirs, nil
}

// unknownSource classifies a path error of a restore source: a spelling
// not known to name the scanned file system leaves the source unknown; a
// path that does not parse at all is invalid input.
func unknownSource(what string, err error) error {
	var us *errUnknownSpelling
	if errors.As(err, &us) {
		return sourceUnknown("%s: %v", what, err)
	}
	return invalidInput("%s: %v", what, err)
}

// releaseSnapshots splits the records into those that keep what they name
// and the FlinkStateSnapshot resources that may go with their savepoint:
// a releasable resource all of whose records name one dir that release
// accepts. It returns the records that keep, and the released resources
// by savepoint dir.
func releaseSnapshots(c canon, recs []LiveRecord, release func(dir string, r LiveRecord) bool) ([]LiveRecord, map[string][]SnapshotRef, error) {
	dirsOf := map[string]map[string]bool{} // uid -> dirs its records name
	for _, r := range recs {
		if !r.Snapshot.releasable() {
			continue
		}
		dir, err := c.path(r.Path)
		if err != nil {
			return nil, nil, unknownSource("snapshot on record in "+r.By+": "+r.Path, err)
		}
		dir = strings.TrimSuffix(dir, "/"+layout.MetadataFileName)
		if dirsOf[r.Snapshot.UID] == nil {
			dirsOf[r.Snapshot.UID] = map[string]bool{}
		}
		dirsOf[r.Snapshot.UID][dir] = true
	}
	var held []LiveRecord
	released := map[string][]SnapshotRef{}
	done := map[string]bool{}
	for _, r := range recs {
		if r.Snapshot.releasable() && len(dirsOf[r.Snapshot.UID]) == 1 {
			var dir string
			for d := range dirsOf[r.Snapshot.UID] {
				dir = d
			}
			if release(dir, r) {
				if !done[r.Snapshot.UID] {
					done[r.Snapshot.UID] = true
					released[dir] = append(released[dir], *r.Snapshot)
				}
				continue
			}
		}
		held = append(held, r)
	}
	return held, released, nil
}
