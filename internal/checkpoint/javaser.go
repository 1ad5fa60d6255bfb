package checkpoint

import (
	"fmt"
	"strings"
)

// The V4+ trailer is a Java object-serialization stream holding one
// CheckpointProperties object (or null). It is read with a small grammar
// reader for the subset Flink writes (objects, class descriptors, strings,
// enums, back-references, null), so a truncated or altered trailer is an
// error instead of being silently accepted.

const (
	jStreamMagic   = 0xACED
	jStreamVersion = 5
	jBaseHandle    = 0x7E0000

	tcNull          = 0x70
	tcReference     = 0x71
	tcClassDesc     = 0x72
	tcObject        = 0x73
	tcString        = 0x74
	tcBlockData     = 0x77
	tcEndBlockData  = 0x78
	tcBlockDataLong = 0x7A
	tcLongString    = 0x7C
	tcEnum          = 0x7E

	scWriteMethod    = 0x01
	scSerializable   = 0x02
	scExternalizable = 0x04

	maxJavaDepth = 32

	checkpointPropertiesClass = "org.apache.flink.runtime.checkpoint.CheckpointProperties"
)

type jClass struct {
	name   string
	flags  byte
	fields []jFieldDesc
	super  *jClass
}

type jFieldDesc struct {
	typ  byte
	name string
}

type jValue struct {
	isString bool
	str      string // string value, or enum constant name
	class    *jClass
	isEnum   bool
	fields   map[string]any // bool for 'Z', int64 for other primitives, *jValue for objects (nil = null)
}

type javaReader struct {
	d       decoder
	handles []any // *jClass or *jValue
	depth   int
}

func (j *javaReader) bad(at int, expected, found string) error {
	return j.d.fail(ErrBadTrailer, at, expected, found)
}

func (j *javaReader) newHandle(v any) int {
	j.handles = append(j.handles, v)
	return len(j.handles) - 1
}

func (j *javaReader) reference() (any, error) {
	at := j.d.off
	h, err := j.d.i32("serialization back-reference")
	if err != nil {
		return nil, err
	}
	idx := int64(h) - jBaseHandle
	if idx < 0 || idx >= int64(len(j.handles)) || j.handles[idx] == nil {
		return nil, j.bad(at, fmt.Sprintf("back-reference to one of %d earlier objects", len(j.handles)), fmt.Sprintf("0x%X", h))
	}
	return j.handles[idx], nil
}

// content reads one object-position value; nil means Java null.
func (j *javaReader) content() (*jValue, error) {
	j.depth++
	defer func() { j.depth-- }()
	at := j.d.off
	if j.depth > maxJavaDepth {
		return nil, j.d.fail(ErrTooDeep, at, fmt.Sprintf("at most %d nested serialized objects", maxJavaDepth), "deeper nesting")
	}
	tc, err := j.d.u8("serialization type code")
	if err != nil {
		return nil, err
	}
	switch tc {
	case tcNull:
		return nil, nil
	case tcReference:
		v, err := j.reference()
		if err != nil {
			return nil, err
		}
		jv, ok := v.(*jValue)
		if !ok {
			return nil, j.bad(at, "back-reference to an object or string", "reference to a class descriptor")
		}
		return jv, nil
	case tcString:
		s, err := j.d.utf("serialized string")
		if err != nil {
			return nil, err
		}
		v := &jValue{isString: true, str: s}
		j.newHandle(v)
		return v, nil
	case tcLongString:
		lat := j.d.off
		n, err := j.d.i64("long string length")
		if err != nil {
			return nil, err
		}
		if n < 0 || n > int64(j.d.remaining()) {
			if n > 0 {
				return nil, j.d.truncated("long string", int(min(n, 1<<31-1)))
			}
			return nil, j.d.fail(ErrOutOfRange, lat, "long string length >= 0", fmt.Sprint(n))
		}
		start := j.d.off
		s, bad := decodeModifiedUTF8(j.d.data[start : start+int(n)])
		if bad >= 0 {
			return nil, j.d.fail(ErrInvalidString, start+bad, "long string in modified UTF-8", fmt.Sprintf("byte 0x%02x", j.d.data[start+bad]))
		}
		j.d.off += int(n)
		v := &jValue{isString: true, str: s}
		j.newHandle(v)
		return v, nil
	case tcEnum:
		cls, err := j.classDesc()
		if err != nil {
			return nil, err
		}
		if cls == nil {
			return nil, j.bad(at, "enum class descriptor", "null")
		}
		v := &jValue{isEnum: true, class: cls}
		j.newHandle(v)
		nameAt := j.d.off
		name, err := j.content()
		if err != nil {
			return nil, err
		}
		if name == nil || !name.isString {
			return nil, j.bad(nameAt, "enum constant name string", "another value")
		}
		v.str = name.str
		return v, nil
	case tcObject:
		cls, err := j.classDesc()
		if err != nil {
			return nil, err
		}
		if cls == nil {
			return nil, j.bad(at, "object class descriptor", "null")
		}
		v := &jValue{class: cls, fields: map[string]any{}}
		j.newHandle(v)
		var chain []*jClass
		for c := cls; c != nil; c = c.super {
			if len(chain) > maxJavaDepth {
				return nil, j.d.fail(ErrTooDeep, at, "a short class hierarchy", "a cycle or very deep hierarchy")
			}
			chain = append(chain, c)
		}
		for i := len(chain) - 1; i >= 0; i-- {
			if err := j.classData(chain[i], v); err != nil {
				return nil, err
			}
		}
		return v, nil
	default:
		return nil, j.bad(at, "object, string, enum, reference or null", fmt.Sprintf("type code 0x%02X", tc))
	}
}

func (j *javaReader) classData(c *jClass, v *jValue) error {
	at := j.d.off
	if c.flags&scExternalizable != 0 || c.flags&scSerializable == 0 {
		return j.bad(at, "data of a Serializable class", fmt.Sprintf("class %s with flags 0x%02X", c.name, c.flags))
	}
	for _, f := range c.fields {
		var val any
		var err error
		switch f.typ {
		case 'Z':
			var b byte
			b, err = j.d.u8("boolean field " + f.name)
			val = b != 0
		case 'B':
			var b byte
			b, err = j.d.u8("byte field " + f.name)
			val = int64(int8(b))
		case 'C', 'S':
			err = j.d.skip("16-bit field "+f.name, 2)
		case 'I', 'F':
			var x int32
			x, err = j.d.i32("32-bit field " + f.name)
			val = int64(x)
		case 'J', 'D':
			val, err = j.d.i64("64-bit field " + f.name)
		default: // 'L', '['
			val, err = j.content()
		}
		if err != nil {
			return err
		}
		v.fields[f.name] = val
	}
	if c.flags&scWriteMethod != 0 {
		return j.annotation()
	}
	return nil
}

// annotation skips custom data up to TC_ENDBLOCKDATA.
func (j *javaReader) annotation() error {
	for {
		if j.d.remaining() < 1 {
			return j.d.truncated("end of class annotation", 1)
		}
		switch j.d.data[j.d.off] {
		case tcEndBlockData:
			j.d.off++
			return nil
		case tcBlockData:
			j.d.off++
			n, err := j.d.u8("block data length")
			if err != nil {
				return err
			}
			if err := j.d.skip("block data", int(n)); err != nil {
				return err
			}
		case tcBlockDataLong:
			j.d.off++
			n, err := j.d.count("long block data length", 1)
			if err != nil {
				return err
			}
			if err := j.d.skip("block data", n); err != nil {
				return err
			}
		default:
			if _, err := j.content(); err != nil {
				return err
			}
		}
	}
}

func (j *javaReader) classDesc() (*jClass, error) {
	j.depth++
	defer func() { j.depth-- }()
	at := j.d.off
	if j.depth > maxJavaDepth {
		return nil, j.d.fail(ErrTooDeep, at, fmt.Sprintf("at most %d nested class descriptors", maxJavaDepth), "deeper nesting")
	}
	tc, err := j.d.u8("class descriptor type code")
	if err != nil {
		return nil, err
	}
	switch tc {
	case tcNull:
		return nil, nil
	case tcReference:
		v, err := j.reference()
		if err != nil {
			return nil, err
		}
		c, ok := v.(*jClass)
		if !ok {
			return nil, j.bad(at, "back-reference to a class descriptor", "reference to an object")
		}
		return c, nil
	case tcClassDesc:
	default:
		return nil, j.bad(at, "class descriptor, reference or null", fmt.Sprintf("type code 0x%02X", tc))
	}
	c := &jClass{}
	// Java assigns the descriptor's handle before reading its fields.
	h := j.newHandle(nil)
	if c.name, err = j.d.utf("class name"); err != nil {
		return nil, err
	}
	if _, err := j.d.i64("serialVersionUID"); err != nil {
		return nil, err
	}
	if c.flags, err = j.d.u8("class flags"); err != nil {
		return nil, err
	}
	if j.d.remaining() < 2 {
		return nil, j.d.truncated("field count", 2)
	}
	n := int(j.d.data[j.d.off])<<8 | int(j.d.data[j.d.off+1])
	j.d.off += 2
	if n*3 > j.d.remaining() {
		return nil, j.d.truncated(fmt.Sprintf("%d field descriptors", n), n*3)
	}
	c.fields = make([]jFieldDesc, 0, n)
	for range n {
		fat := j.d.off
		typ, err := j.d.u8("field type code")
		if err != nil {
			return nil, err
		}
		name, err := j.d.utf("field name")
		if err != nil {
			return nil, err
		}
		switch typ {
		case 'B', 'C', 'D', 'F', 'I', 'J', 'S', 'Z':
		case 'L', '[':
			sat := j.d.off
			sig, err := j.content()
			if err != nil {
				return nil, err
			}
			if sig == nil || !sig.isString {
				return nil, j.bad(sat, "field type signature string", "another value")
			}
		default:
			return nil, j.bad(fat, "field type code one of BCDFIJSZL[", fmt.Sprintf("0x%02X", typ))
		}
		c.fields = append(c.fields, jFieldDesc{typ: typ, name: name})
	}
	j.handles[h] = c
	if err := j.annotation(); err != nil {
		return nil, err
	}
	if c.super, err = j.classDesc(); err != nil {
		return nil, err
	}
	return c, nil
}

// parseTrailer reads the V4+ CheckpointProperties trailer, which runs from
// off to the end of the file data. It returns (nil, true, nil) for a
// serialized null. Offsets in errors are file offsets.
func parseTrailer(data []byte, off int) (*Properties, bool, error) {
	j := &javaReader{d: decoder{data: data, off: off}}
	at := off
	if j.d.remaining() < 4 {
		return nil, false, j.d.fail(ErrTruncated, at, "CheckpointProperties trailer starting with AC ED 00 05",
			fmt.Sprintf("end of input after %d bytes", j.d.remaining()))
	}
	hdr := uint32(data[off])<<24 | uint32(data[off+1])<<16 | uint32(data[off+2])<<8 | uint32(data[off+3])
	if hdr != jStreamMagic<<16|jStreamVersion {
		return nil, false, j.bad(at, "Java serialization stream header AC ED 00 05", fmt.Sprintf("%08X", hdr))
	}
	j.d.off += 4
	v, err := j.content()
	if err != nil {
		return nil, false, err
	}
	if j.d.remaining() != 0 {
		return nil, false, j.d.fail(ErrTrailingData, j.d.off, "end of file after the CheckpointProperties object",
			fmt.Sprintf("%d more bytes", j.d.remaining()))
	}
	if v == nil {
		return nil, true, nil
	}
	if v.isString || v.isEnum || v.class.name != checkpointPropertiesClass {
		found := "a string or enum"
		if v.class != nil && !v.isEnum {
			found = v.class.name
		}
		return nil, false, j.bad(at+4, checkpointPropertiesClass+" object", found)
	}
	return propertiesFrom(v), false, nil
}

func propertiesFrom(v *jValue) *Properties {
	props := &Properties{}
	b := func(name string) bool { x, _ := v.fields[name].(bool); return x }
	props.DiscardCancelled = b("discardCancelled")
	props.DiscardFailed = b("discardFailed")
	props.DiscardFinished = b("discardFinished")
	props.DiscardSubsumed = b("discardSubsumed")
	props.DiscardSuspended = b("discardSuspended")
	props.Forced = b("forced")
	props.Unclaimed = b("unclaimed")
	ct, _ := v.fields["checkpointType"].(*jValue)
	switch {
	case ct == nil:
		props.SnapshotType = "unknown"
	case ct.isEnum: // Flink <= 1.15 had CheckpointType as an enum
		props.Name = ct.str
		props.SnapshotType = "checkpoint"
		if strings.Contains(ct.str, "SAVEPOINT") {
			props.SnapshotType = "savepoint"
		}
	default:
		str := func(name string) string {
			if s, ok := ct.fields[name].(*jValue); ok && s != nil {
				return s.str
			}
			return ""
		}
		props.Name = str("name")
		switch {
		case strings.HasSuffix(ct.class.name, ".SavepointType"):
			props.SnapshotType = "savepoint"
			props.FormatType = str("formatType")
			props.PostCheckpointAction = str("postCheckpointAction")
		case strings.HasSuffix(ct.class.name, ".CheckpointType"):
			props.SnapshotType = "checkpoint"
			props.SharingFilesStrategy = str("sharingFilesStrategy")
		default:
			props.SnapshotType = "unknown"
		}
	}
	return props
}
