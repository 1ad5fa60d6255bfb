package checkpoint

import (
	"iter"
	"strings"
)

// refTable holds every file-referencing handle of a parse compactly: a big
// checkpoint has hundreds of thousands, and a Reference of eight strings
// and a pointer (176 bytes) made them most of the parse's heap. A record
// keeps the path it shares with its File, its numbers, and indexes into one
// table of the other strings, which repeat (contexts, operator ids, RocksDB
// local names) or are rare (a raw spelling that differs from the path, a
// segment's logical id).
type refTable struct {
	recs []refRecord
	strs []string          // strs[0] is ""
	segs []segment         // segs[0] is unused: refRecord.seg 0 is no segment
	seen map[string]uint32 // interned strings of strs while parsing
}

// refRecord is one handle in 56 bytes. MaxMetadataSize (1 GiB) keeps
// every offset and index within 32 bits.
type refRecord struct {
	path     string // resolved, normalised; the File of that path shares it
	size     int64
	offset   uint32 // of the handle's tag in _metadata
	raw      uint32 // strs index of the path as written; 0: the same as path
	local    uint32 // strs index of the RocksDB local name; 0: none
	context  uint32 // strs index
	operator uint32 // strs index
	seg      uint32 // segs index of a segment handle's range; 0: not a segment
	subtask  int32
	kind     HandleKind
	scope    Scope
}

// segment is what only segment handles (file merging) have: where the
// segment starts in its physical file (its length is the handle's size)
// and the logical file id.
type segment struct {
	start   int64
	logical string
}

// str stores s and returns its index; repeating strings (intern) are
// stored once, up to maxInterned distinct ones, so input with ever-new
// names costs no more than a fixed-size map.
func (t *refTable) str(s string, intern bool) uint32 {
	if s == "" {
		return 0
	}
	if len(t.strs) == 0 {
		t.strs = append(t.strs, "")
	}
	if intern {
		if i, ok := t.seen[s]; ok {
			return i
		}
	}
	i := uint32(len(t.strs))
	t.strs = append(t.strs, s)
	if intern && len(t.seen) < maxInterned {
		if t.seen == nil {
			t.seen = make(map[string]uint32)
		}
		t.seen[s] = i
	}
	return i
}

// record packs r; a segment's Range must be (offset, r.Size).
func (t *refTable) record(r Reference) refRecord {
	rec := refRecord{path: r.Path, size: r.Size, offset: uint32(r.Offset), subtask: int32(r.Subtask),
		local: t.str(r.LocalName, true), context: t.str(r.Context, true), operator: t.str(r.OperatorID, true),
		kind: r.Kind, scope: r.Scope}
	if raw := r.Raw; raw != r.Path {
		// A relative handle's name ends its resolved path: share those bytes.
		if strings.HasSuffix(r.Path, raw) {
			raw = r.Path[len(r.Path)-len(raw):]
		}
		rec.raw = t.str(raw, false)
	}
	if r.Range != nil {
		if len(t.segs) == 0 {
			t.segs = append(t.segs, segment{})
		}
		rec.seg = uint32(len(t.segs))
		t.segs = append(t.segs, segment{start: r.Range.Offset, logical: r.LogicalID})
	}
	return rec
}

// view is record i as a Reference.
func (t *refTable) view(i int) Reference {
	rec := &t.recs[i]
	r := Reference{Path: rec.path, Raw: rec.path, Kind: rec.kind, Scope: rec.scope,
		Size: rec.size, Offset: int64(rec.offset), Subtask: int(rec.subtask)}
	if rec.raw != 0 {
		r.Raw = t.strs[rec.raw]
	}
	if len(t.strs) > 0 {
		r.LocalName, r.Context, r.OperatorID = t.strs[rec.local], t.strs[rec.context], t.strs[rec.operator]
	}
	if rec.seg != 0 {
		s := t.segs[rec.seg]
		r.Range, r.LogicalID = &ByteRange{Offset: s.start, Length: rec.size}, s.logical
	}
	return r
}

// NumReferences is the number of file-referencing handles in the file.
func (m *Metadata) NumReferences() int { return len(m.refs.recs) }

// Reference is the i-th file-referencing handle, in file order.
func (m *Metadata) Reference(i int) Reference { return m.refs.view(i) }

// References yields every file-referencing handle in file order. Use it
// for diagnostics; Files is the de-duplicated set.
func (m *Metadata) References() iter.Seq[Reference] {
	return func(yield func(Reference) bool) {
		for i := range m.refs.recs {
			if !yield(m.refs.view(i)) {
				return
			}
		}
	}
}
