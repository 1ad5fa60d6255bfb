package checkpoint

import (
	"errors"
	"fmt"
)

// Sentinel kinds of format errors. Every *FormatError unwraps to exactly one
// of them, so callers can branch with errors.Is without parsing messages.
var (
	// ErrBadMagic: the file does not start with the checkpoint metadata magic number.
	ErrBadMagic = errors.New("not a Flink checkpoint metadata file")
	// ErrUnknownVersion: the metadata version is outside 2..6.
	ErrUnknownVersion = errors.New("unsupported metadata version")
	// ErrUnknownHandleTag: a state-handle tag byte this reader does not know.
	ErrUnknownHandleTag = errors.New("unknown state handle tag")
	// ErrUnexpectedHandle: a known handle kind in a position where Flink never writes it.
	ErrUnexpectedHandle = errors.New("state handle not allowed here")
	// ErrTruncated: the input ended before the structure was complete.
	ErrTruncated = errors.New("truncated metadata")
	// ErrOutOfRange: a count, length, index or enum value outside what the format allows
	// (or larger than the remaining input could hold).
	ErrOutOfRange = errors.New("value out of range")
	// ErrInvalidString: a string that is not valid Java modified UTF-8.
	ErrInvalidString = errors.New("invalid modified UTF-8 string")
	// ErrTrailingData: bytes left over where the format says the file ends.
	ErrTrailingData = errors.New("unexpected trailing data")
	// ErrBadTrailer: the V4+ CheckpointProperties trailer is not a well-formed
	// Java serialization stream of the expected shape.
	ErrBadTrailer = errors.New("malformed checkpoint properties trailer")
	// ErrInvalidPath: a file reference whose path cannot be turned into an
	// absolute location (empty, relative where an absolute path is required, ...).
	ErrInvalidPath = errors.New("invalid file path in state handle")
	// ErrTooDeep: handles nested deeper than any Flink writer produces.
	ErrTooDeep = errors.New("state handles nested too deeply")
	// ErrTooLarge: the input exceeds the configured size limit.
	ErrTooLarge = errors.New("metadata larger than the size limit")
)

// FormatError reports where and why a _metadata file could not be read.
// Offset is the byte offset (from the start of the file) of the value that
// failed; Expected says what the format requires there and Found what was
// read (or "end of input").
type FormatError struct {
	Kind     error // one of the Err* sentinels above
	Offset   int64
	Expected string
	Found    string
}

func (e *FormatError) Error() string {
	msg := fmt.Sprintf("checkpoint metadata: %v at offset %d: expected %s", e.Kind, e.Offset, e.Expected)
	if e.Found != "" {
		msg += ", found " + e.Found
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrTruncated) and friends work.
func (e *FormatError) Unwrap() error { return e.Kind }
