package storage

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	gohdfs "github.com/colinmarc/hdfs/v2"
)

// remoteKinds maps Java exception classes a namenode sends back to our
// error kinds. The library itself maps only a few of them to os errors.
var remoteKinds = map[string]error{
	"org.apache.hadoop.hdfs.protocol.NSQuotaExceededException":            ErrNamespaceQuotaExceeded,
	"org.apache.hadoop.hdfs.protocol.DSQuotaExceededException":            ErrSpaceQuotaExceeded,
	"org.apache.hadoop.hdfs.protocol.QuotaByStorageTypeExceededException": ErrSpaceQuotaExceeded,
	"org.apache.hadoop.hdfs.protocol.QuotaExceededException":              ErrQuotaExceeded,
	"org.apache.hadoop.security.AccessControlException":                   ErrPermission,
	"org.apache.hadoop.security.authorize.AuthorizationException":         ErrPermission,
	"java.io.FileNotFoundException":                                       ErrNotFound,
	"org.apache.hadoop.fs.FileAlreadyExistsException":                     ErrExist,
	"org.apache.hadoop.fs.PathIsNotEmptyDirectoryException":               ErrNotEmpty,
	"org.apache.hadoop.fs.ParentNotDirectoryException":                    ErrNotDir,
	"org.apache.hadoop.fs.PathIsNotDirectoryException":                    ErrNotDir,
	"org.apache.hadoop.hdfs.server.namenode.SafeModeException":            ErrUnavailable,
	"org.apache.hadoop.ipc.StandbyException":                              ErrUnavailable,
	"org.apache.hadoop.ipc.RetriableException":                            ErrUnavailable,
	"org.apache.hadoop.ipc.RpcServerException":                            ErrUnavailable,
}

// remoteError keeps the library error (for errors.As to gohdfs.Error) and
// adds the first line of the Java message, which holds the useful part
// ("The NameSpace quota ... of directory /x is exceeded: quota=10 ...").
type remoteError struct {
	err    error
	detail string
}

func (r *remoteError) Error() string {
	if r.detail == "" {
		return r.err.Error()
	}
	return r.err.Error() + ": " + r.detail
}

func (r *remoteError) Unwrap() error { return r.err }

// mapHDFSError gives a library error its kind. Errors that already are
// *Error pass through.
func mapHDFSError(op, p string, err error) error {
	if err == nil {
		return nil
	}
	var se *Error
	if errors.As(err, &se) {
		return err
	}
	var remote gohdfs.Error
	if errors.As(err, &remote) {
		kind := remoteKinds[remote.Exception()]
		if kind == nil {
			// Subclasses we do not list still name their family.
			switch ex := remote.Exception(); {
			case strings.HasSuffix(ex, "QuotaExceededException"):
				kind = ErrQuotaExceeded
			case strings.HasSuffix(ex, "AccessControlException"):
				kind = ErrPermission
			}
		}
		return newError(op, p, kind, &remoteError{err: err, detail: firstLine(remote.Message())})
	}
	kind := osErrorKind(err)
	if kind == nil && unavailable(err) {
		kind = ErrUnavailable
	}
	return newError(op, p, kind, err)
}

// unavailable recognises a namenode or datanode we could not reach or that
// stopped answering.
func unavailable(err error) bool {
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &ne), errors.As(err, &oe):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, io.ErrClosedPipe):
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "no available namenodes") ||
		strings.Contains(msg, "unexpected sequence number") ||
		strings.Contains(msg, "no available datanodes") ||
		strings.Contains(msg, "use of closed network connection")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
