package checkpoint

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

const (
	// MetadataMagic starts every _metadata file (Checkpoints.HEADER_MAGIC_NUMBER).
	MetadataMagic = 0x4960672D
	// MinVersion and MaxVersion bound the metadata versions this reader accepts.
	MinVersion = 2
	MaxVersion = 6
	// MaxMetadataSize caps what ParseReader and ParseFile read into memory.
	// Real _metadata files with large inline state stay well below it.
	MaxMetadataSize = 1 << 30

	masterStateMagic = int32(-0x3694E96A) // 0xC96B1696
	// maxNesting bounds recursion through nested handles (changelog wrapping
	// keyed handles, key-group handles in stream positions). Flink nests at
	// most three levels; a crafted file must not exhaust the stack.
	maxNesting = 16
)

// ErrInternal is returned, wrapped, if the reader hits a bug it did not
// guard against; the input is then treated as unreadable.
var ErrInternal = errors.New("internal error while reading checkpoint metadata")

// ParseFile reads a local _metadata file. Relative handles resolve against
// the file's directory; the location recorded is the absolute local path.
func ParseFile(path string) (*Metadata, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint metadata %s: %w", path, err)
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("checkpoint metadata: %w", err)
	}
	defer f.Close()
	md, err := ParseReader(context.Background(), f, filepath.ToSlash(abs))
	if err != nil {
		return nil, fmt.Errorf("checkpoint metadata %s: %w", abs, err)
	}
	return md, nil
}

// ParseReader reads a whole _metadata stream (at most MaxMetadataSize bytes)
// and parses it; location is where that _metadata lives (see ParseBytes).
// ctx is checked between reads so a stalled remote read can be abandoned.
func ParseReader(ctx context.Context, r io.Reader, location string) (*Metadata, error) {
	data, err := readAll(ctx, r, MaxMetadataSize)
	if err != nil {
		return nil, err
	}
	return ParseBytes(data, location)
}

func readAll(ctx context.Context, r io.Reader, limit int) ([]byte, error) {
	buf := make([]byte, 0, 64<<10)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(cap(buf), limit+1-len(buf)))
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			return nil, &FormatError{Kind: ErrTooLarge, Offset: int64(limit),
				Expected: fmt.Sprintf("at most %d bytes", limit), Found: "more"}
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading checkpoint metadata: %w", err)
		}
	}
}

// ParseBytes parses a complete _metadata file. location is the location of
// the _metadata file itself, whose last element must be "_metadata" ("hdfs://nn:8020/flink/cp/<job>/chk-7/_metadata",
// "file:/tmp/sp/_metadata", "/data/sp/_metadata"); relative handles resolve
// against its directory. location may be empty only if the file holds no
// relative handles. On any error the result is nil: there is never a
// partial reference set.
func ParseBytes(data []byte, location string) (md *Metadata, err error) {
	defer func() {
		// Last line of defence only; every read is bounds-checked.
		if r := recover(); r != nil {
			md, err = nil, fmt.Errorf("%w: %v", ErrInternal, r)
		}
	}()
	return parseBytes(data, location)
}

func parseBytes(data []byte, location string) (*Metadata, error) {
	p := &parser{d: decoder{data: data}}
	if location != "" {
		loc, dir, err := metadataDir(location)
		if err != nil {
			return nil, err
		}
		p.md.Location, p.md.Dir = loc, dir
	}
	if err := p.parse(); err != nil {
		return nil, err
	}
	p.finish()
	md := p.md
	return &md, nil
}

type parser struct {
	d                decoder
	md               Metadata
	version          int
	counts           [4][256]int // stream, keyed, operator, channel tag counts
	untaggedChannels int
	joined           map[[2]string]string
	interned         map[string]string // see decoder.utfInterned
	opID             string
	subtask          int
	depth            int
}

const (
	famStream = iota
	famKeyed
	famOperator
	famChannel
)

var famNames = [4]string{"stream", "keyed", "operator", "channel"}

func (p *parser) parse() error {
	d := &p.d
	at := d.off
	magic, err := d.i32("magic number")
	if err != nil {
		return err
	}
	if uint32(magic) != MetadataMagic {
		return d.fail(ErrBadMagic, at, fmt.Sprintf("magic 0x%08X", MetadataMagic), fmt.Sprintf("0x%08X", uint32(magic)))
	}
	at = d.off
	v, err := d.i32("metadata version")
	if err != nil {
		return err
	}
	if v < MinVersion || v > MaxVersion {
		return d.fail(ErrUnknownVersion, at, fmt.Sprintf("version %d..%d", MinVersion, MaxVersion), fmt.Sprint(v))
	}
	p.version = int(v)
	p.md.Version = int(v)

	at = d.off
	id, err := d.i64("checkpoint id")
	if err != nil {
		return err
	}
	if id < 0 {
		return d.fail(ErrOutOfRange, at, "checkpoint id >= 0", fmt.Sprint(id))
	}
	p.md.CheckpointID = id

	// A master state is at least magic + length + one byte of content.
	nMasters, err := d.count("master state count", 9)
	if err != nil {
		return err
	}
	for range nMasters {
		if err := p.masterState(); err != nil {
			return err
		}
	}
	// Smallest operator: V3 id(16) parallelism(4) maxParallelism(4) coordinator tag(1) count(4).
	nOps, err := d.count("operator count", 29)
	if err != nil {
		return err
	}
	p.md.Operators = make([]Operator, 0, nOps)
	for range nOps {
		if err := p.operatorState(); err != nil {
			return err
		}
	}
	if p.version <= 3 {
		if d.remaining() != 0 {
			return d.fail(ErrTrailingData, d.off, fmt.Sprintf("end of file after the last operator of a version %d file", p.version),
				fmt.Sprintf("%d more bytes", d.remaining()))
		}
		return nil
	}
	p.md.TrailerBytes = d.remaining()
	props, isNull, err := parseTrailer(d.data, d.off)
	if err != nil {
		return err
	}
	p.md.Properties, p.md.PropertiesNull = props, isNull
	return nil
}

func (p *parser) masterState() error {
	d := &p.d
	at := d.off
	magic, err := d.i32("master state magic")
	if err != nil {
		return err
	}
	if magic != masterStateMagic {
		return d.fail(ErrBadMagic, at, "master state magic 0xC96B1696", fmt.Sprintf("0x%08X", uint32(magic)))
	}
	at = d.off
	n, err := d.i32("master state length")
	if err != nil {
		return err
	}
	if n <= 0 || int(n) > d.remaining() {
		if n > 0 {
			return d.truncated("master state", int(n))
		}
		return d.fail(ErrOutOfRange, at, "master state length > 0", fmt.Sprint(n))
	}
	end := d.off + int(n)
	// Parse the content in a decoder bounded by the declared length, with
	// offsets still counted from the start of the file.
	sub := decoder{data: d.data[:end], off: d.off}
	var ms MasterState
	if ms.Version, err = sub.i32("master state version"); err != nil {
		return err
	}
	if ms.Name, err = sub.utf("master state name"); err != nil {
		return err
	}
	plen, err := sub.count("master state payload length", 1)
	if err != nil {
		return err
	}
	if err := sub.skip("master state payload", plen); err != nil {
		return err
	}
	if sub.remaining() != 0 {
		return sub.fail(ErrTrailingData, sub.off, "end of master state", fmt.Sprintf("%d more bytes", sub.remaining()))
	}
	ms.PayloadBytes = plen
	d.off = end
	p.md.MasterStates = append(p.md.MasterStates, ms)
	return nil
}

func (p *parser) operatorState() error {
	d := &p.d
	var op Operator
	var err error
	if p.version >= 5 {
		if op.Name, err = d.utf("operator name"); err != nil {
			return err
		}
		if op.UID, err = d.utf("operator uid"); err != nil {
			return err
		}
	}
	if d.remaining() < 16 {
		return d.truncated("operator id", 16)
	}
	op.ID = hex.EncodeToString(d.data[d.off : d.off+16])
	d.off += 16
	p.opID, p.subtask = op.ID, -1

	at := d.off
	par, err := d.i32("parallelism")
	if err != nil {
		return err
	}
	maxPar, err := d.i32("max parallelism")
	if err != nil {
		return err
	}
	if par < 1 || maxPar < par {
		return d.fail(ErrOutOfRange, at, "1 <= parallelism <= max parallelism",
			fmt.Sprintf("parallelism %d, max parallelism %d", par, maxPar))
	}
	op.Parallelism, op.MaxParallelism = int(par), int(maxPar)

	if p.version == 2 {
		if _, err := d.i32("chain length"); err != nil {
			return err
		}
	} else {
		tag, err := p.streamHandleOf("coordinator", ScopeExclusive, "NULL (0) or BYTE_STREAM (1) coordinator state", 0, 1)
		if err != nil {
			return err
		}
		op.CoordinatorState = tag == 1
	}

	at = d.off
	n, err := d.i32("subtask state count")
	if err != nil {
		return err
	}
	if n < 0 && p.version >= 3 {
		if op.CoordinatorState {
			return d.fail(ErrUnexpectedHandle, at, "no coordinator state for a fully finished operator", "coordinator state")
		}
		op.FullyFinished = true
		p.md.Operators = append(p.md.Operators, op)
		return nil
	}
	minEntry := 4 // V3+: a finished-subtask marker is just the index
	if p.version == 2 {
		minEntry = 4 + 8 + 4 + 4 + 4 + 1 + 1
	}
	count, err := d.checkCount("subtask state count", at, n, minEntry)
	if err != nil {
		return err
	}
	for range count {
		at := d.off
		idx, err := d.i32("subtask index")
		if err != nil {
			return err
		}
		finished := false
		sub := int64(idx)
		if idx < 0 && p.version >= 3 {
			finished, sub = true, -sub-1
		}
		if sub < 0 || sub >= int64(par) {
			return d.fail(ErrOutOfRange, at, fmt.Sprintf("subtask index in [0, %d)", par), fmt.Sprint(sub))
		}
		op.Subtasks++
		if finished {
			op.FinishedSubtasks++
			continue
		}
		p.subtask = int(sub)
		if err := p.subtaskState(); err != nil {
			return err
		}
	}
	p.subtask = -1
	p.md.Operators = append(p.md.Operators, op)
	return nil
}

func (p *parser) subtaskState() error {
	d := &p.d
	if p.version == 2 {
		if _, err := d.i64("subtask duration"); err != nil {
			return err
		}
		at := d.off
		legacy, err := d.i32("legacy task state count")
		if err != nil {
			return err
		}
		if legacy != 0 {
			return d.fail(ErrOutOfRange, at, "legacy task state count 0 (state of Flink <= 1.1 is not readable)", fmt.Sprint(legacy))
		}
	}
	for _, part := range [2]struct{ ctx, flag string }{
		{"managed-operator", "managed-operator state flag"},
		{"raw-operator", "raw-operator state flag"},
	} {
		ctx := part.ctx
		has, err := d.i32(part.flag)
		if err != nil {
			return err
		}
		if has != 0 {
			if err := p.operatorHandle(ctx); err != nil {
				return err
			}
		}
	}
	if err := p.keyedHandle("managed-keyed"); err != nil {
		return err
	}
	if err := p.keyedHandle("raw-keyed"); err != nil {
		return err
	}
	if p.version == 2 {
		return nil
	}
	if err := p.channelHandles(true); err != nil {
		return err
	}
	return p.channelHandles(false)
}

// tag reads a handle tag byte; the field is named ctx+what, built only for
// an error so the hot path allocates nothing.
func (p *parser) tag(fam int, ctx, what string) (byte, int, error) {
	at := p.d.off
	if p.d.remaining() < 1 {
		return 0, at, p.d.truncated(ctx+what, 1)
	}
	t := p.d.data[at]
	p.d.off++
	p.counts[fam][t]++
	return t, at, nil
}

// join returns a+b, the same string for every call with the same parts.
// Handle contexts are built from a few parts over and over and are kept in
// every Reference; joining them once saves an allocation per handle.
func (p *parser) join(a, b string) string {
	k := [2]string{a, b}
	if s, ok := p.joined[k]; ok {
		return s
	}
	if p.joined == nil {
		p.joined = make(map[[2]string]string)
	}
	s := a + b
	p.joined[k] = s
	return s
}

func (p *parser) enter(at int) error {
	p.depth++
	if p.depth > maxNesting {
		return p.d.fail(ErrTooDeep, at, fmt.Sprintf("at most %d nested state handles", maxNesting), "deeper nesting")
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// streamHandleOf reads a stream handle whose tag must be one of allowed.
func (p *parser) streamHandleOf(ctx string, scope Scope, expected string, allowed ...byte) (byte, error) {
	d := &p.d
	if d.remaining() < 1 {
		return 0, d.truncated(ctx+" stream handle tag", 1)
	}
	t := d.data[d.off]
	if !slices.Contains(allowed, t) {
		kind := ErrUnexpectedHandle
		if !knownStreamTag(t) {
			kind = ErrUnknownHandleTag
		}
		return 0, d.fail(kind, d.off, expected, fmt.Sprintf("stream handle tag %d", t))
	}
	return t, p.streamHandle(ctx, scope, "")
}

func knownStreamTag(t byte) bool {
	switch t {
	case 0, 1, 2, 3, 6, 15, 16:
		return true
	}
	return false
}

// streamHandle reads one StreamStateHandle. ctx names the field for
// diagnostics, scope is the ownership of a file it references (segment
// handles carry their own) and local the RocksDB file name, if any.
func (p *parser) streamHandle(ctx string, scope Scope, local string) error {
	d := &p.d
	t, at, err := p.tag(famStream, ctx, " stream handle tag")
	if err != nil {
		return err
	}
	switch t {
	case 0, 16: // NULL, EMPTY_SEGMENT_FILE_HANDLE: no data, no file
		return nil
	case 1: // ByteStreamStateHandle: inline; its name is not a file
		if err := d.skipUTF("inline handle name"); err != nil {
			return err
		}
		n, err := d.count("inline handle length", 1)
		if err != nil {
			return err
		}
		if err := d.skip("inline handle data", n); err != nil {
			return err
		}
		p.md.Inline.Handles++
		p.md.Inline.Bytes += int64(n)
		return nil
	case 2: // FileStateHandle: size, then absolute path
		size, err := d.i64("file handle state size")
		if err != nil {
			return err
		}
		pathAt := d.off
		raw, err := d.utf("file handle path")
		if err != nil {
			return err
		}
		abs, err := NormalizePath(raw)
		if err != nil {
			return d.fail(ErrInvalidPath, pathAt, "absolute or scheme-qualified path", strconv.Quote(raw))
		}
		p.addRef(Reference{Path: abs, Raw: raw, Kind: KindAbsolute, Scope: scope, Size: size, Context: ctx, LocalName: local, Offset: int64(at)})
		return nil
	case 3: // KeyGroupsStateHandle in a stream position
		if err := p.enter(at); err != nil {
			return err
		}
		defer p.leave()
		if err := p.keyGroupRangeWithOffsets(); err != nil {
			return err
		}
		return p.streamHandle(ctx, scope, local)
	case 6: // RelativeFileStateHandle: path, then size
		pathAt := d.off
		raw, err := d.utf("relative handle path")
		if err != nil {
			return err
		}
		size, err := d.i64("relative handle state size")
		if err != nil {
			return err
		}
		abs, err := resolveRelative(p.md.Dir, raw)
		if err != nil {
			return d.fail(ErrInvalidPath, pathAt, "relative file name resolvable against the metadata directory", fmt.Sprintf("%q (%v)", raw, err))
		}
		// Flink writes relative handles only for exclusive checkpoint files.
		p.addRef(Reference{Path: abs, Raw: raw, Kind: KindRelative, Scope: scope, Size: size, Context: ctx, LocalName: local, Offset: int64(at)})
		return nil
	case 15: // SegmentFileStateHandle
		fieldAt := d.off
		start, err := d.i64("segment start position")
		if err != nil {
			return err
		}
		size, err := d.i64("segment size")
		if err != nil {
			return err
		}
		if start < 0 || size < 0 || start > (1<<63-1)-size {
			return d.fail(ErrOutOfRange, fieldAt, "segment start >= 0 and size >= 0", fmt.Sprintf("start %d, size %d", start, size))
		}
		scopeAt := d.off
		sc, err := d.i32("segment scope")
		if err != nil {
			return err
		}
		var segScope Scope
		switch sc {
		case 0:
			segScope = ScopeTaskOwned
		case 1:
			segScope = ScopeShared
		default:
			return d.fail(ErrOutOfRange, scopeAt, "segment scope 0 (EXCLUSIVE) or 1 (SHARED)", fmt.Sprint(sc))
		}
		pathAt := d.off
		raw, err := d.utf("segment physical file path")
		if err != nil {
			return err
		}
		logical, err := d.utf("segment logical file id")
		if err != nil {
			return err
		}
		abs, err := NormalizePath(raw)
		if err != nil {
			return d.fail(ErrInvalidPath, pathAt, "absolute or scheme-qualified path", strconv.Quote(raw))
		}
		p.addRef(Reference{Path: abs, Raw: raw, Kind: KindSegment, Scope: segScope, Size: size,
			Range: &ByteRange{Offset: start, Length: size}, LogicalID: logical, Context: ctx, LocalName: local, Offset: int64(at)})
		return nil
	default:
		return d.fail(ErrUnknownHandleTag, at, "stream handle tag 0, 1, 2, 3, 6, 15 or 16", fmt.Sprint(t))
	}
}

// keyGroupRangeWithOffsets reads start, count and count i64 offsets.
func (p *parser) keyGroupRangeWithOffsets() error {
	d := &p.d
	n, err := p.keyGroupRange(8)
	if err != nil {
		return err
	}
	return d.skip("key-group offsets", n*8)
}

// keyGroupRange reads start:i32 count:i32 and checks the range is valid;
// perGroup is the number of bytes that follow per key group (offsets).
func (p *parser) keyGroupRange(perGroup int) (int, error) {
	d := &p.d
	at := d.off
	start, err := d.i32("key-group range start")
	if err != nil {
		return 0, err
	}
	countAt := d.off
	n, err := d.i32("key-group count")
	if err != nil {
		return 0, err
	}
	if start < 0 || n < 0 || int64(start)+int64(n)-1 > 1<<31-1 {
		return 0, d.fail(ErrOutOfRange, at, "key-group range start >= 0, count >= 0", fmt.Sprintf("start %d, count %d", start, n))
	}
	return d.checkCount("key-group count", countAt, n, perGroup)
}

func (p *parser) keyedHandle(ctx string) error {
	d := &p.d
	t, at, err := p.tag(famKeyed, ctx, " keyed handle tag")
	if err != nil {
		return err
	}
	if t == 0 {
		return nil
	}
	if err := p.enter(at); err != nil {
		return err
	}
	defer p.leave()
	switch t {
	case 3, 7, 12: // KeyGroupsStateHandle (old / V2), KeyGroupsSavepointStateHandle
		if err := p.keyGroupRangeWithOffsets(); err != nil {
			return err
		}
		sub := p.join(ctx, "-keygroups")
		if t == 7 {
			sub = p.join(ctx, "-savepoint-keygroups")
		}
		if err := p.streamHandle(sub, ScopeExclusive, ""); err != nil {
			return err
		}
		if t == 12 {
			err := d.skipUTF("state handle id")
			return err
		}
		return nil
	case 5, 11: // IncrementalRemoteKeyedStateHandle
		if _, err := d.i64("incremental checkpoint id"); err != nil {
			return err
		}
		if err := d.skipUTF("backend id"); err != nil {
			return err
		}
		if _, err := p.keyGroupRange(0); err != nil {
			return err
		}
		if t == 11 {
			if _, err := d.i64("checkpointed size"); err != nil {
				return err
			}
		}
		if err := p.streamHandle(p.join(ctx, "-incremental-meta"), ScopeExclusive, ""); err != nil {
			return err
		}
		if err := p.fileList(p.join(ctx, "-incremental-shared"), ScopeShared); err != nil {
			return err
		}
		if err := p.fileList(p.join(ctx, "-incremental-private"), ScopePrivate); err != nil {
			return err
		}
		if t == 11 {
			err := d.skipUTF("state handle id")
			return err
		}
		return nil
	case 8, 14: // ChangelogStateBackendHandle
		if _, err := p.keyGroupRange(0); err != nil {
			return err
		}
		if _, err := d.i64("checkpointed size"); err != nil {
			return err
		}
		for _, part := range [2]string{"materialized", "nonmaterialized"} {
			n, err := d.count(part+" handle count", 1)
			if err != nil {
				return err
			}
			for range n {
				if err := p.keyedHandle(p.join(ctx, "-changelog-"+part)); err != nil {
					return err
				}
			}
		}
		if _, err := d.i64("materialization id"); err != nil {
			return err
		}
		if t == 14 {
			if _, err := d.i64("changelog checkpoint id"); err != nil {
				return err
			}
		}
		err := d.skipUTF("state handle id")
		return err
	case 9: // InMemoryChangelogStateHandle: changes inline, no files
		if _, err := p.keyGroupRange(0); err != nil {
			return err
		}
		if _, err := d.i64("changelog from"); err != nil {
			return err
		}
		if _, err := d.i64("changelog to"); err != nil {
			return err
		}
		n, err := d.count("changelog change count", 8)
		if err != nil {
			return err
		}
		for range n {
			if _, err := d.i32("change key group"); err != nil {
				return err
			}
			ln, err := d.count("change length", 1)
			if err != nil {
				return err
			}
			if err := d.skip("change bytes", ln); err != nil {
				return err
			}
		}
		err = d.skipUTF("state handle id")
		return err
	case 10, 13: // ChangelogStateHandleStreamImpl: DSTL files, shared between checkpoints
		if _, err := p.keyGroupRange(0); err != nil {
			return err
		}
		n, err := d.count("changelog increment count", 9)
		if err != nil {
			return err
		}
		for range n {
			if _, err := d.i64("changelog increment offset"); err != nil {
				return err
			}
			if err := p.streamHandle(p.join(ctx, "-changelog-increment"), ScopeShared, ""); err != nil {
				return err
			}
		}
		if _, err := d.i64("changelog state size"); err != nil {
			return err
		}
		if _, err := d.i64("changelog checkpointed size"); err != nil {
			return err
		}
		if err := d.skipUTF("state handle id"); err != nil {
			return err
		}
		if t == 13 {
			err := d.skipUTF("changelog storage identifier")
			return err
		}
		return nil
	default:
		return d.fail(ErrUnknownHandleTag, at, "keyed handle tag 0, 3, 5, 7, 8, 9, 10, 11, 12, 13 or 14", fmt.Sprint(t))
	}
}

// fileList reads an incremental handle's map of RocksDB local file name to
// stream handle.
func (p *parser) fileList(ctx string, scope Scope) error {
	d := &p.d
	n, err := d.count(p.join(ctx, " file count"), 3)
	if err != nil {
		return err
	}
	for range n {
		local, err := d.utfInterned("RocksDB local file name", &p.interned)
		if err != nil {
			return err
		}
		if err := p.streamHandle(ctx, scope, local); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) operatorHandle(ctx string) error {
	d := &p.d
	t, at, err := p.tag(famOperator, ctx, " operator handle tag")
	if err != nil {
		return err
	}
	switch t {
	case 0:
		return nil
	case 4, 17:
	default:
		return d.fail(ErrUnknownHandleTag, at, "operator handle tag 0, 4 or 17", fmt.Sprint(t))
	}
	// name(2) mode(1) offset count(4) per state
	n, err := d.count("operator state count", 7)
	if err != nil {
		return err
	}
	for range n {
		if err := d.skipUTF("operator state name"); err != nil {
			return err
		}
		modeAt := d.off
		mode, err := d.u8("operator state distribution mode")
		if err != nil {
			return err
		}
		if mode > 2 {
			return d.fail(ErrOutOfRange, modeAt, "distribution mode 0 (SPLIT_DISTRIBUTE), 1 (UNION) or 2 (BROADCAST)", fmt.Sprint(mode))
		}
		k, err := d.count("operator state offset count", 8)
		if err != nil {
			return err
		}
		if err := d.skip("operator state offsets", k*8); err != nil {
			return err
		}
	}
	if t == 4 {
		return p.streamHandle(ctx, ScopeExclusive, "")
	}
	for _, dir := range [2]struct {
		what  string
		scope Scope
	}{{"file-merging task-owned directory", ScopeTaskOwned}, {"file-merging shared directory", ScopeShared}} {
		dirAt := d.off
		raw, err := d.utf(dir.what)
		if err != nil {
			return err
		}
		abs, err := NormalizePath(raw)
		if err != nil {
			return d.fail(ErrInvalidPath, dirAt, "absolute "+dir.what, strconv.Quote(raw))
		}
		p.md.ManagedDirs = append(p.md.ManagedDirs, ManagedDir{Path: abs, Scope: dir.scope})
	}
	if _, err := d.u8("file-merging isEmpty flag"); err != nil {
		return err
	}
	_, err = p.streamHandleOf(ctx, ScopeExclusive, "SEGMENT_FILE (15) or EMPTY_SEGMENT (16) delegate of a file-merging operator handle", 15, 16)
	return err
}

func (p *parser) channelHandles(input bool) error {
	d := &p.d
	what, ctx, countName := "result subpartition", "result-subpartition", "result subpartition state count"
	if input {
		what, ctx, countName = "input channel", "input-channel", "input channel state count"
	}
	minSize := 25 // V1: subtask(4) info(8) offsets count(4) size(8) delegate tag(1)
	if p.version >= 6 {
		minSize = 18 // merged: tag(1) subtask(4) size(8) delegate tag(1) length(4)
	}
	n, err := d.count(countName, minSize)
	if err != nil {
		return err
	}
	for range n {
		merged := false
		if p.version >= 6 {
			t, at, err := p.tag(famChannel, what, " handle tag")
			if err != nil {
				return err
			}
			plain, mergedTag := byte(2), byte(4)
			if input {
				plain, mergedTag = 1, 3
			}
			switch t {
			case plain:
			case mergedTag:
				merged = true
			case 1, 2, 3, 4:
				return d.fail(ErrUnexpectedHandle, at, fmt.Sprintf("%s handle tag %d or %d", what, plain, mergedTag), fmt.Sprint(t))
			default:
				return d.fail(ErrUnknownHandleTag, at, fmt.Sprintf("%s handle tag %d or %d", what, plain, mergedTag), fmt.Sprint(t))
			}
		} else {
			p.untaggedChannels++
		}
		if _, err := d.i32("channel state subtask index"); err != nil {
			return err
		}
		if merged {
			if _, err := d.i64("merged channel state size"); err != nil {
				return err
			}
			if err := p.streamHandle(ctx, ScopeExclusive, ""); err != nil {
				return err
			}
			k, err := d.count("merged channel state info length", 1)
			if err != nil {
				return err
			}
			if err := d.skip("merged channel state info", k); err != nil {
				return err
			}
			continue
		}
		if _, err := d.i32("channel info index"); err != nil {
			return err
		}
		if _, err := d.i32("channel info sub-index"); err != nil {
			return err
		}
		k, err := d.count("channel state offset count", 8)
		if err != nil {
			return err
		}
		if err := d.skip("channel state offsets", k*8); err != nil {
			return err
		}
		if _, err := d.i64("channel state size"); err != nil {
			return err
		}
		if err := p.streamHandle(ctx, ScopeExclusive, ""); err != nil {
			return err
		}
	}
	return nil
}

// addRef records one file reference.
func (p *parser) addRef(r Reference) {
	r.OperatorID, r.Subtask = p.opID, p.subtask
	t := &p.md.refs
	if len(t.recs) == cap(t.recs) {
		t.recs = slices.Grow(t.recs, refCapacity(len(t.recs), p.d.off, len(p.d.data))-len(t.recs))
	}
	t.recs = append(t.recs, t.record(r))
}

// refCapacity is the capacity to grow the reference records to when their
// n entries fill it at file offset off of size bytes. A big checkpoint has
// hundreds of thousands, about evenly spread through the file, so the
// total is extrapolated (with 1/8 to spare) rather than reached by
// append's many 1.25x steps, which allocate several times the final size
// and copy it as often. Like every count the reader trusts, the estimate
// is bounded by what the rest of the input could hold: a file reference
// takes at least minRefBytes.
func refCapacity(n, off, size int) int {
	if n < 1024 {
		return max(2*n, 16)
	}
	est := int(int64(n) * int64(size) / int64(max(off, 1)))
	est += est / 8
	return min(max(est, n+n/4), n+(size-off)/minRefBytes+1)
}

// minRefBytes is the smallest file-referencing handle: tag, 8-byte size
// and a one-byte path with its 2-byte length (tags 2 and 6).
const minRefBytes = 12

// trimRefs drops the records' spare capacity if an overestimate left
// much, and the interning map, which only parsing needs.
func (p *parser) trimRefs() {
	t := &p.md.refs
	if cap(t.recs)-len(t.recs) > max(len(t.recs)/4, 1024) {
		t.recs = slices.Clip(slices.Clone(t.recs))
	}
	t.seen = nil
}

// fileKey is one reference in the path sort of finish, in 16 bytes.
type fileKey struct {
	// chunk is the next 7 bytes of the path from the current depth,
	// zero-padded, followed by how many of them the path has: keys order
	// like the paths they come from, and a count below 7 means the path
	// ends there.
	chunk uint64
	// ref is the index of the reference record (MaxMetadataSize keeps it
	// below 1<<31) and, in bit keyDup, whether once sorted its path is the
	// same as the path of the key before it.
	ref uint32
}

const keyDup = 1 << 31

func (k fileKey) index() int { return int(k.ref &^ keyDup) }

// sortByPath sorts keys by the path of their reference, equal paths in
// file order, and marks each repeat of a path as a dup. keys must be in
// file order and every key's path must hold the same depth bytes first;
// tmp is scratch as long as keys. It is a most-significant-digit radix
// sort on 7-byte chunks: no string comparisons, and each path is read
// once per chunk. A large run first skips the prefix all its paths share
// (typically a job directory), after which "shared/" and a UUID, say,
// mostly differ within a chunk or two.
func sortByPath(refs []refRecord, keys, tmp []fileKey, depth int) {
	if len(keys) >= 32 {
		depth = sharedPrefixLen(refs, keys, depth)
	}
	for k := range keys {
		keys[k].chunk = pathChunk(refs[keys[k].index()].path, depth)
	}
	radixSort(keys, tmp)
	for start := 0; start < len(keys); {
		end := start + 1
		for end < len(keys) && keys[end].chunk == keys[start].chunk {
			end++
		}
		if end-start > 1 {
			if keys[start].chunk&0xFF < 7 {
				// The paths end in this chunk, so they are equal; the
				// stable sort left them in file order.
				for k := start + 1; k < end; k++ {
					keys[k].ref |= keyDup
				}
			} else {
				sortByPath(refs, keys[start:end], tmp[start:end], depth+7)
			}
		}
		start = end
	}
}

// pathChunk is 7 bytes of path s from depth, zero-padded, followed by how
// many s has.
func pathChunk(s string, depth int) uint64 {
	s = s[min(depth, len(s)):]
	n := min(len(s), 7)
	var c uint64
	for j := range n {
		c |= uint64(s[j]) << (56 - 8*j)
	}
	return c | uint64(n)
}

// radixSort sorts keys by chunk, stably, with tmp (as long as keys) as
// scratch: a least-significant-digit radix sort, one pass per byte,
// skipping the bytes all keys share.
func radixSort(keys, tmp []fileKey) {
	if len(keys) < 32 {
		for i := 1; i < len(keys); i++ {
			for j := i; j > 0 && keys[j].chunk < keys[j-1].chunk; j-- {
				keys[j-1], keys[j] = keys[j], keys[j-1]
			}
		}
		return
	}
	var counts [8][256]int
	for k := range keys {
		c := keys[k].chunk
		for b := range 8 {
			counts[b][byte(c>>(8*b))]++
		}
	}
	src, dst := keys, tmp
	for b := range counts {
		count := &counts[b]
		if count[byte(src[0].chunk>>(8*b))] == len(src) {
			continue
		}
		pos := 0
		for v, c := range count {
			count[v] = pos
			pos += c
		}
		for k := range src {
			v := byte(src[k].chunk >> (8 * b))
			dst[count[v]] = src[k]
			count[v]++
		}
		src, dst = dst, src
	}
	if &src[0] != &keys[0] {
		copy(keys, src)
	}
}

// finish builds the de-duplicated file set and the tag counts.
func (p *parser) finish() {
	p.trimRefs()
	refs := p.md.refs.recs
	// Sort the references by path, ties in file order, and build one File
	// per run of equal paths.
	keys := make([]fileKey, len(refs))
	for i := range keys {
		keys[i].ref = uint32(i)
	}
	sortByPath(refs, keys, make([]fileKey, len(keys)), 0)
	nFiles := 0
	for _, key := range keys {
		if key.ref&keyDup == 0 {
			nFiles++
		}
	}
	out := make([]File, 0, nFiles)
	for _, key := range keys {
		r := &refs[key.index()]
		if key.ref&keyDup == 0 {
			out = append(out, File{Path: r.path, Kind: r.kind, Scope: r.scope, Size: -1})
		}
		out[len(out)-1].absorb(r, p.md.refs.segs)
	}
	for i := range out {
		if rs := out[i].Ranges; len(rs) > 1 {
			slices.SortFunc(rs, func(a, b ByteRange) int {
				if a.Offset != b.Offset {
					return cmpInt64(a.Offset, b.Offset)
				}
				return cmpInt64(a.Length, b.Length)
			})
			out[i].Ranges = slices.Compact(rs)
		}
	}
	p.md.Files = out

	// Every subtask of a file-merging job names the same task-owned directory.
	if dirs := p.md.ManagedDirs; len(dirs) > 1 {
		slices.SortFunc(dirs, func(a, b ManagedDir) int {
			if c := strings.Compare(a.Path, b.Path); c != 0 {
				return c
			}
			return cmp.Compare(a.Scope, b.Scope)
		})
		p.md.ManagedDirs = slices.Compact(dirs)
	}

	p.md.HandleCounts = make(map[string]int)
	for fam, counts := range p.counts {
		for t, c := range counts {
			if c > 0 {
				p.md.HandleCounts[famNames[fam]+":"+strconv.Itoa(t)] = c
			}
		}
	}
	if p.untaggedChannels > 0 {
		p.md.HandleCounts["channel:untagged"] = p.untaggedChannels
	}
}

// absorb counts reference r in f, the file it names: the widest scope,
// every byte range, otherwise the largest size.
func (f *File) absorb(r *refRecord, segs []segment) {
	f.References++
	if scopeRank(r.scope) > scopeRank(f.Scope) {
		f.Scope = r.scope
	}
	if r.seg != 0 {
		f.Ranges = append(f.Ranges, ByteRange{Offset: segs[r.seg].start, Length: r.size})
	} else if r.size > f.Size {
		f.Size = r.size
	}
}

// sharedPrefixLen is the length of the longest prefix the paths of keys
// share, given that they share depth bytes.
func sharedPrefixLen(refs []refRecord, keys []fileKey, depth int) int {
	prefix := refs[keys[0].index()].path
	for _, k := range keys[1:] {
		s := refs[k.index()].path
		if strings.HasPrefix(s, prefix) {
			continue
		}
		n := depth
		for n < len(prefix) && n < len(s) && prefix[n] == s[n] {
			n++
		}
		if prefix = prefix[:n]; n == depth {
			break
		}
	}
	return len(prefix)
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
