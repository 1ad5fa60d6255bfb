package checkpoint

import (
	"math/rand/v2"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The reader takes shortcuts for the common case (paths already clean,
// paths sharing long prefixes, ASCII strings). These tests check each
// shortcut against the plain computation on inputs built to hit the edges.

// filesByMap is the file-set construction of finish without its sort
// shortcut: a map by path, then a sort of the Files by path.
func filesByMap(refs []Reference) []File {
	files := map[string]int{}
	var out []File
	for _, r := range refs {
		i, ok := files[r.Path]
		if !ok {
			i = len(out)
			files[r.Path] = i
			out = append(out, File{Path: r.Path, Kind: r.Kind, Scope: r.Scope, Size: -1})
		}
		f := &out[i]
		f.References++
		if scopeRank(r.Scope) > scopeRank(f.Scope) {
			f.Scope = r.Scope
		}
		if r.Range != nil {
			f.Ranges = append(f.Ranges, *r.Range)
		} else if r.Size > f.Size {
			f.Size = r.Size
		}
	}
	for i := range out {
		slices.SortFunc(out[i].Ranges, func(a, b ByteRange) int {
			if a.Offset != b.Offset {
				return cmpInt64(a.Offset, b.Offset)
			}
			return cmpInt64(a.Length, b.Length)
		})
		out[i].Ranges = slices.Compact(out[i].Ranges)
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return out
}

func TestFinishMatchesMapAndSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Small alphabets, NUL and high bytes, prefixes of each other, lengths
	// around the 7-byte chunk and more keys than the small-sort cut-off.
	alphabet := []string{"", "a", "b", "\x00", "\xff", "/", "shared/", "abcdefg", "abcdefgh", "abcdef"}
	kinds := []HandleKind{KindAbsolute, KindRelative, KindSegment}
	scopes := []Scope{ScopeExclusive, ScopeShared, ScopePrivate, ScopeTaskOwned}
	for round := range 200 {
		prefix := strings.Repeat("hdfs://nn/job/", rng.IntN(3))
		n := rng.IntN(300)
		var pool []string
		for range 1 + rng.IntN(60) {
			var sb strings.Builder
			sb.WriteString(prefix)
			for range rng.IntN(6) {
				sb.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			pool = append(pool, sb.String())
		}
		refs := make([]Reference, n)
		for i := range refs {
			r := Reference{Path: pool[rng.IntN(len(pool))], Kind: kinds[rng.IntN(3)],
				Scope: scopes[rng.IntN(4)], Size: int64(rng.IntN(5)) - 1}
			r.Raw = r.Path
			if r.Kind == KindSegment {
				// A segment's size is its length (streamHandle).
				r.Size = int64(rng.IntN(3))
				r.Range = &ByteRange{Offset: int64(rng.IntN(4)), Length: r.Size}
			}
			refs[i] = r
		}
		var p parser
		for _, r := range refs {
			p.addRef(r)
		}
		p.finish()
		want := filesByMap(refs)
		if len(want) == 0 {
			want = []File{}
		}
		if !reflect.DeepEqual(p.md.Files, want) {
			t.Fatalf("round %d: finish gave\n%+v\nwant\n%+v", round, p.md.Files, want)
		}
		// A zero parser is at subtask 0 of operator "": the references
		// come back as given, in order.
		if n > 0 && !reflect.DeepEqual(slices.Collect(p.md.References()), refs) {
			t.Fatalf("round %d: references changed or reordered", round)
		}
	}
}

func TestCleanShortcutsMatchPathClean(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	parts := []string{"", "/", "//", ".", "..", "a", "b.", ".c", "...", "A", "ü"}
	for range 20000 {
		var sb strings.Builder
		for range rng.IntN(7) {
			sb.WriteString(parts[rng.IntN(len(parts))])
		}
		s := sb.String()
		if got, want := cleanSegments(s), path.Clean("/"+s) == "/"+s; got != want {
			t.Fatalf("cleanSegments(%q) = %v, path.Clean says %v", s, got, want)
		}
		for _, p := range []string{"/" + s, "hdfs://NN" + "/" + s, "hdfs://nn/" + s, "s3a:/" + s, "file:///" + s} {
			got, gotErr := NormalizePath(p)
			want, wantErr := normalizeSlow(p)
			if got != want || (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("NormalizePath(%q) = %q, %v; want %q, %v", p, got, gotErr, want, wantErr)
			}
		}
		if s != "" && !strings.HasPrefix(s, "/") {
			for _, dir := range []string{"/", "/d", "hdfs://nn/", "hdfs://nn/d/e"} {
				got, err := resolveRelative(dir, s)
				prefix, p := splitPathPart(dir)
				if want := prefix + path.Join(p, s); err != nil || got != want {
					t.Fatalf("resolveRelative(%q, %q) = %q, %v; want %q", dir, s, got, err, want)
				}
			}
		}
	}
}

// normalizeSlow is NormalizePath without the already-normal shortcut.
func normalizeSlow(p string) (string, error) {
	scheme, rest, ok := splitScheme(p)
	if !ok {
		if !strings.HasPrefix(p, "/") {
			return "", ErrInvalidPath
		}
		return path.Clean(p), nil
	}
	authority := ""
	switch {
	case strings.HasPrefix(rest, "//"):
		rest = rest[2:]
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			authority, rest = rest[:i], rest[i:]
		} else {
			authority, rest = rest, "/"
		}
	case strings.HasPrefix(rest, "/"):
	default:
		return "", ErrInvalidPath
	}
	return strings.ToLower(scheme) + "://" + strings.ToLower(authority) + path.Clean(rest), nil
}

func TestUTFShortcutsMatchDecoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		b := make([]byte, rng.IntN(20))
		for i := range b {
			if rng.IntN(4) == 0 {
				b[i] = byte(rng.IntN(256))
			} else {
				b[i] = byte(rng.IntN(128))
			}
		}
		wantStr, wantBad := decodeModifiedUTF8(b)
		data := append([]byte{byte(len(b) >> 8), byte(len(b))}, b...)
		interned := map[string]string{}
		for name, read := range map[string]func(d *decoder) (string, error){
			"utf":         func(d *decoder) (string, error) { return d.utf("s") },
			"utfInterned": func(d *decoder) (string, error) { return d.utfInterned("s", &interned) },
			"skipUTF":     func(d *decoder) (string, error) { return wantStr, d.skipUTF("s") },
		} {
			d := decoder{data: data}
			got, err := read(&d)
			if (err != nil) != (wantBad >= 0) || err == nil && (got != wantStr || d.off != len(data)) {
				t.Fatalf("%s(% x) = %q, %v; decoder says %q, bad at %d", name, b, got, err, wantStr, wantBad)
			}
			if fe, ok := err.(*FormatError); ok && fe.Offset != int64(2+wantBad) {
				t.Fatalf("%s(% x): error at %d, want %d", name, b, fe.Offset, 2+wantBad)
			}
		}
	}
}

func TestRefCapacityGrowsAndStaysBacked(t *testing.T) {
	cases := map[string]struct{ n, off, size, want int }{
		"small doubles":              {16, 2000, 10 << 20, 32},
		"even spread extrapolates":   {2000, 1 << 20, 10 << 20, 22500},
		"a quarter more, at least":   {4000, 1 << 20, 1<<20 + 1<<16, 5000},
		"never beyond what is left":  {2000, 24000, 1 << 30, 2000 + (1<<30-24000)/minRefBytes + 1},
		"near the end, what is left": {4000, 1 << 20, 1<<20 + 100, 4009},
		"end of input still grows 1": {2000, 1 << 20, 1 << 20, 2001},
	}
	for name, tc := range cases {
		if got := refCapacity(tc.n, tc.off, tc.size); got != tc.want {
			t.Errorf("%s: refCapacity(%d, %d, %d) = %d, want %d", name, tc.n, tc.off, tc.size, got, tc.want)
		}
	}
}
