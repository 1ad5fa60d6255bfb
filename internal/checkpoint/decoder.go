package checkpoint

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// decoder reads Java DataOutputStream primitives (big-endian) from a byte
// slice. Every read checks the remaining length first; nothing is allocated
// from a length the input has not proven it can back.
type decoder struct {
	data []byte
	off  int
}

func (d *decoder) remaining() int { return len(d.data) - d.off }

func (d *decoder) fail(kind error, at int, expected, found string) error {
	return &FormatError{Kind: kind, Offset: int64(at), Expected: expected, Found: found}
}

func (d *decoder) truncated(what string, need int) error {
	return d.fail(ErrTruncated, d.off, fmt.Sprintf("%s (%d bytes)", what, need),
		fmt.Sprintf("end of input after %d bytes", d.remaining()))
}

func (d *decoder) u8(what string) (byte, error) {
	if d.remaining() < 1 {
		return 0, d.truncated(what, 1)
	}
	b := d.data[d.off]
	d.off++
	return b, nil
}

func (d *decoder) i32(what string) (int32, error) {
	if d.remaining() < 4 {
		return 0, d.truncated(what, 4)
	}
	v := int32(binary.BigEndian.Uint32(d.data[d.off:]))
	d.off += 4
	return v, nil
}

func (d *decoder) i64(what string) (int64, error) {
	if d.remaining() < 8 {
		return 0, d.truncated(what, 8)
	}
	v := int64(binary.BigEndian.Uint64(d.data[d.off:]))
	d.off += 8
	return v, nil
}

// skip consumes n bytes the reader has no use for (offsets, inline payloads).
func (d *decoder) skip(what string, n int) error {
	if n < 0 {
		return d.fail(ErrOutOfRange, d.off, what+" length >= 0", fmt.Sprint(n))
	}
	if d.remaining() < n {
		return d.truncated(what, n)
	}
	d.off += n
	return nil
}

// count reads an i32 element count and checks it is non-negative and that
// the remaining input can hold that many elements of at least minElem bytes
// each. This is what keeps a corrupt count from driving a huge allocation.
func (d *decoder) count(what string, minElem int) (int, error) {
	at := d.off
	n, err := d.i32(what)
	if err != nil {
		return 0, err
	}
	return d.checkCount(what, at, n, minElem)
}

func (d *decoder) checkCount(what string, at int, n int32, minElem int) (int, error) {
	if n < 0 {
		return 0, d.fail(ErrOutOfRange, at, what+" >= 0", fmt.Sprint(n))
	}
	if minElem > 0 && int64(n)*int64(minElem) > int64(d.remaining()) {
		return 0, d.fail(ErrOutOfRange, at,
			fmt.Sprintf("%s <= %d (remaining %d bytes, at least %d bytes each)", what, d.remaining()/minElem, d.remaining(), minElem),
			fmt.Sprint(n))
	}
	return int(n), nil
}

// utf reads a Java DataOutput.writeUTF string: an unsigned 16-bit byte
// length followed by modified UTF-8.
func (d *decoder) utf(what string) (string, error) {
	b, err := d.utfBytes(what)
	if err != nil {
		return "", err
	}
	if isASCII(b) {
		return string(b), nil
	}
	s, _ := decodeModifiedUTF8(b) // utfBytes checked it
	return s, nil
}

// skipUTF checks a writeUTF string the reader has no use for, without
// building it.
func (d *decoder) skipUTF(what string) error {
	_, err := d.utfBytes(what)
	return err
}

// maxInterned bounds the strings utfInterned remembers, so input with
// ever-new names costs no more than a fixed-size map.
const maxInterned = 4096

// utfInterned is utf for strings that repeat across subtasks (RocksDB
// local file names such as "MANIFEST-000004" or "000012.sst"): a string
// seen before is returned again instead of allocating a copy.
func (d *decoder) utfInterned(what string, seen *map[string]string) (string, error) {
	b, err := d.utfBytes(what)
	if err != nil {
		return "", err
	}
	if !isASCII(b) {
		s, _ := decodeModifiedUTF8(b)
		return s, nil
	}
	if s, ok := (*seen)[string(b)]; ok {
		return s, nil
	}
	s := string(b)
	if *seen == nil {
		*seen = make(map[string]string)
	}
	if len(*seen) < maxInterned {
		(*seen)[s] = s
	}
	return s, nil
}

// utfBytes reads a writeUTF string, checks it is modified UTF-8 and
// returns its undecoded bytes, which alias d.data.
func (d *decoder) utfBytes(what string) ([]byte, error) {
	if d.remaining() < 2 {
		return nil, d.truncated(what+" length", 2)
	}
	n := int(binary.BigEndian.Uint16(d.data[d.off:]))
	if d.remaining()-2 < n {
		return nil, d.truncated(what, 2+n)
	}
	start := d.off + 2
	b := d.data[start : start+n]
	if !isASCII(b) {
		if _, bad := decodeModifiedUTF8(b); bad >= 0 {
			return nil, d.fail(ErrInvalidString, start+bad, what+" in Java modified UTF-8",
				fmt.Sprintf("byte 0x%02x", d.data[start+bad]))
		}
	}
	d.off = start + n
	return b, nil
}

// isASCII reports whether b has no byte >= 0x80, eight bytes at a time.
// Nearly every string in _metadata (paths, names, ids) is ASCII, and ASCII
// is valid modified UTF-8 that decodes to itself.
func isASCII(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&0x8080808080808080 != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// decodeModifiedUTF8 decodes Java's modified UTF-8 exactly as
// DataInputStream.readUTF does: 1-, 2- and 3-byte forms only, NUL as C0 80
// (a raw 0 byte is also accepted, as Java does), supplementary characters as
// two 3-byte surrogates. Surrogate pairs are joined; a lone surrogate (legal
// in a Java string, not representable in UTF-8) becomes U+FFFD. It returns
// the index of the first malformed byte, or -1.
func decodeModifiedUTF8(b []byte) (string, int) {
	if isASCII(b) {
		return string(b), -1
	}
	units := make([]uint16, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		switch c >> 4 {
		case 0, 1, 2, 3, 4, 5, 6, 7:
			units = append(units, uint16(c))
			i++
		case 12, 13:
			if i+1 >= len(b) {
				return "", i
			}
			c2 := b[i+1]
			if c2&0xC0 != 0x80 {
				return "", i + 1
			}
			units = append(units, uint16(c&0x1F)<<6|uint16(c2&0x3F))
			i += 2
		case 14:
			if i+2 >= len(b) {
				return "", i
			}
			c2, c3 := b[i+1], b[i+2]
			if c2&0xC0 != 0x80 {
				return "", i + 1
			}
			if c3&0xC0 != 0x80 {
				return "", i + 2
			}
			units = append(units, uint16(c&0x0F)<<12|uint16(c2&0x3F)<<6|uint16(c3&0x3F))
			i += 3
		default: // 10xx xxxx continuation or 1111 xxxx: invalid as a lead byte
			return "", i
		}
	}
	var sb strings.Builder
	sb.Grow(len(b))
	for i := 0; i < len(units); i++ {
		u := rune(units[i])
		if utf16.IsSurrogate(u) {
			if u < 0xDC00 && i+1 < len(units) {
				if r := utf16.DecodeRune(u, rune(units[i+1])); r != utf8.RuneError {
					sb.WriteRune(r)
					i++
					continue
				}
			}
			sb.WriteRune(utf8.RuneError)
			continue
		}
		sb.WriteRune(u)
	}
	return sb.String(), -1
}
