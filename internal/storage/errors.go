package storage

import (
	"errors"
	"io/fs"
	"strings"
)

// kindError is a sentinel that may also match a broader sentinel, so that
// ErrNamespaceQuotaExceeded is also ErrQuotaExceeded, and ErrNotFound is also
// fs.ErrNotExist for callers that use the standard library's vocabulary.
type kindError struct {
	msg     string
	parents []error
}

func (k *kindError) Error() string { return k.msg }

func (k *kindError) Is(target error) bool {
	for _, p := range k.parents {
		if target == p {
			return true
		}
	}
	return false
}

// Error kinds. Match them with errors.Is.
var (
	ErrNotFound               error = &kindError{msg: "not found", parents: []error{fs.ErrNotExist}}
	ErrExist                  error = &kindError{msg: "already exists", parents: []error{fs.ErrExist}}
	ErrPermission             error = &kindError{msg: "permission denied", parents: []error{fs.ErrPermission}}
	ErrNotEmpty               error = &kindError{msg: "directory not empty"}
	ErrNotDir                 error = &kindError{msg: "not a directory"}
	ErrIsDir                  error = &kindError{msg: "is a directory"}
	ErrQuotaExceeded          error = &kindError{msg: "quota exceeded"}
	ErrNamespaceQuotaExceeded error = &kindError{msg: "namespace quota (files and directories) exceeded", parents: []error{ErrQuotaExceeded}}
	ErrSpaceQuotaExceeded     error = &kindError{msg: "space quota exceeded", parents: []error{ErrQuotaExceeded}}
	ErrUnavailable            error = &kindError{msg: "storage unavailable"}
	// ErrAuthentication: the cluster did not accept who we are (no or an
	// expired ticket, a keytab without the principal, a user the cluster
	// refuses). Retrying does not help; the credentials must change.
	ErrAuthentication  error = &kindError{msg: "authentication failed", parents: []error{fs.ErrPermission}}
	ErrOutsideRoots    error = &kindError{msg: "path is not strictly under a configured root"}
	ErrInvalidPath     error = &kindError{msg: "invalid path", parents: []error{fs.ErrInvalid}}
	ErrTooLarge        error = &kindError{msg: "file larger than the read limit"}
	ErrWrongFileSystem error = &kindError{msg: "path belongs to another file system"}
)

// Error describes a failed operation on one path. Kind is one of the Err*
// sentinels above; Cause is the underlying error (an hdfs.Error, an
// *os.PathError, a net.Error, a context error), kept for errors.As.
type Error struct {
	Op    string
	Path  string
	Kind  error
	Cause error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("storage: ")
	b.WriteString(e.Op)
	if e.Path != "" {
		b.WriteString(" ")
		b.WriteString(e.Path)
	}
	if e.Kind != nil {
		b.WriteString(": ")
		b.WriteString(e.Kind.Error())
	}
	if e.Cause != nil {
		b.WriteString(": ")
		b.WriteString(e.Cause.Error())
	}
	return b.String()
}

// Unwrap exposes both the kind and the cause to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	return errs
}

func newError(op, path string, kind, cause error) error {
	return &Error{Op: op, Path: path, Kind: kind, Cause: cause}
}

// OutsideRootsError is returned by the Guard. It names the refused path, why
// it was refused and the roots it was compared with.
type OutsideRootsError struct {
	Path   string
	Reason string
	Roots  []string
}

func (e *OutsideRootsError) Error() string {
	roots := "none configured"
	if len(e.Roots) > 0 {
		roots = strings.Join(e.Roots, ", ")
	}
	return "storage: refused " + quote(e.Path) + ": " + e.Reason + " (allowed: strictly under " + roots + ")"
}

// Is makes an OutsideRootsError match ErrOutsideRoots.
func (e *OutsideRootsError) Is(target error) bool { return target == ErrOutsideRoots }

func quote(s string) string {
	if s == "" {
		return `""`
	}
	return `"` + s + `"`
}

// IsRetryable reports whether err is worth retrying later: the storage was
// unreachable, timed out or is in safe mode. Quota, permission and
// not-found errors are not.
func IsRetryable(err error) bool {
	return errors.Is(err, ErrUnavailable)
}
